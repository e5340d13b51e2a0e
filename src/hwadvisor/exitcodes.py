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


# One line each, for the "Exit codes:" list at the end of every command's --help.
SHORT: dict[int, str] = {
    ExitStatus.OK: "success",
    ExitStatus.ERROR: "internal error (a bug): rerun with --debug and report it",
    ExitStatus.USAGE: "bad command line: unknown option, bad value",
    ExitStatus.DEGRADED: "written, but degraded: stderr says what failed",
    ExitStatus.IO_ERROR: "output could not be written",
    ExitStatus.INPUT_ERROR: "an input file is missing, unreadable, invalid or too new",
    ExitStatus.INTERRUPTED: "interrupted (Ctrl-C; 143 SIGTERM, 129 SIGHUP): no partial file",
}


def epilog(examples: list[str], codes: list[ExitStatus]) -> str:
    """The end of a command's ``--help``: examples, then the exit codes the command can return
    (with 0, 1 (a bug) and 130 (an interruption), which every command can). ``\\b`` keeps a
    paragraph's lines as they are where the help is wrapped to the terminal."""
    shown = sorted({ExitStatus.OK, *codes, ExitStatus.ERROR, ExitStatus.INTERRUPTED})
    lines = ["\b", "Examples:", *(f"  {example}" for example in examples), ""]
    lines += ["\b", 'Exit codes (all of them: the README\'s "Exit codes"):']
    lines += [f"  {int(code):<4} {SHORT[code]}" for code in shown]
    return "\n".join(lines)
