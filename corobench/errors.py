"""How corobench ends: its exit codes, and the errors the CLI turns into them.

0 everything ran and verified; 1 some runs FAILED (stored with their reasons); 2 bad input (a
flag, a file, a name, a corrupt or newer results database): one line, never a traceback;
70 a bug in corobench (the session is marked `crashed`, the traceback goes to a log file);
74 the results could not be stored (disk full, I/O error): what was stored is kept;
128+N stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP): the session is `interrupted`.
"""

EXIT_OK = 0
EXIT_RUNS_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_HARNESS_BUG = 70  # sysexits' EX_SOFTWARE
EXIT_STORE_FAILED = 74  # sysexits' EX_IOERR


class UsageError(Exception):
    """Bad input from the user: a flag, a file, a name. Exit 2, one line, no traceback."""


class StoreError(Exception):
    """The results database could not be written (disk full, I/O error) after it was opened."""


class Interrupted(BaseException):
    """A signal (SIGINT, SIGTERM, SIGHUP) asked corobench to stop; raised in the main thread.

    A BaseException, like KeyboardInterrupt, so that no `except Exception` swallows it.
    """

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum
