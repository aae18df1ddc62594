"""The ways a course is delivered and graded besides ``gptcourse grade``: Gradescope and nbgrader."""
