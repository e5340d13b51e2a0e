"""Errors that reach the user. Each maps to an exit status at the top (``cli.py``) only."""

from __future__ import annotations

from hwadvisor.exitcodes import ExitStatus


class HwAdvisorError(Exception):
    """An error with a one-line message that says what happened and what to do."""

    exit_status: ExitStatus = ExitStatus.ERROR


class OutputError(HwAdvisorError):
    """An output file or folder could not be written."""

    exit_status = ExitStatus.IO_ERROR


class InputError(HwAdvisorError):
    """An input file (a saved profile, an import) is unreadable or invalid."""

    exit_status = ExitStatus.INPUT_ERROR


class UsageError(HwAdvisorError):
    """The command line asks for something that cannot be done."""

    exit_status = ExitStatus.USAGE


class Interrupted(HwAdvisorError):
    """Ctrl-C: children were stopped and no partial file was written."""

    exit_status = ExitStatus.INTERRUPTED
