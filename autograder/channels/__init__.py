"""The ways a course is delivered and graded: ``gptcourse grade`` on a folder (``local``), Gradescope, nbgrader
and otter-grader."""
