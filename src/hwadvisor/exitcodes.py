"""Exit codes of the ``hwadvisor`` command. Documented in the README; part of the contract."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0
    """Everything ran; the profile is complete as far as the machine allows."""
    ERROR = 1
    """Unexpected internal error (a bug): rerun with ``--debug`` and report the traceback."""
    USAGE = 2
    """Bad command line: unknown option, bad value."""
    DEGRADED = 3
    """The scan completed and its output was written, but a probe failed or timed out."""
    IO_ERROR = 4
    """Output could not be written: folder not writable, disk full, file already exists."""
    INPUT_ERROR = 5
    """An input file (a saved profile) is missing, unreadable, invalid or from a newer version."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C (SIGINT); no partial file is left behind."""
