"""The ways a course is delivered and graded: ``gptcourse grade`` on a folder (``local``), Gradescope and nbgrader."""
