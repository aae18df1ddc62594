"""What grading tells people: each student's feedback and the class report (the local
channel, ``autograder.channels.local``, writes the graded folders and the gradebook they read)."""
