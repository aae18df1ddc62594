"""What grading tells people: each student's feedback, the class gradebook, the class report."""
