"""The one way the command line makes a rich console: the same settings for every command, and
no trailing spaces when the output goes to a pipe or a file (rich pads table cells to the
table's width, which a terminal hides and ``grep``, ``diff`` or an e-mail do not)."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


class _StripTrailingSpaces:
    """A text stream that writes each whole line without its trailing blanks."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self._stream.write("".join(line.rstrip(" \t") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._pending:  # a line without its end yet: written as it is, never lost
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"


def console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A console on standard output (or error): highlighting off (numbers in profile strings
    are not coloured as if they meant something), and trailing blanks stripped when it is not
    a terminal."""
    from rich.console import Console

    stream: Any = sys.stderr if stderr else sys.stdout
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()):
        stream = _StripTrailingSpaces(stream)
    return Console(file=stream, highlight=False, soft_wrap=soft_wrap)
