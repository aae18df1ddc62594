"""Errors a person using ``gptcourse`` is meant to read."""


class UsageError(ValueError):
    """A mistake in how a command was called (unknown stage, missing file): exit status 2."""
