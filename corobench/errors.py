"""Errors the CLI turns into exit code 2 and one line on stderr."""


class UsageError(Exception):
    """Bad input from the user: a flag, a file, a name. Exit 2, one line, no traceback."""
