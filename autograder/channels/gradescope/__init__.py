"""Gradescope: the entry point ``run_autograder`` calls, per-stage settings, rate limits.

Shipped in every Gradescope zip together with ``autograder.kit`` and ``autograder.engine``;
it imports nothing else of the package (``tests/test_layers.py``).
"""
