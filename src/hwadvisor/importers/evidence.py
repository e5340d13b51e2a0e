"""Weighing how much of a text looks like a format: the keys of its ``Key: value`` lines.

A real paste often starts part-way (its first line cut inside a key: ``rchitecture:``), loses a
letter on the way, or comes from a fork of a tool that prints most of the same keys. A key is
found when a line's key is a known one, the known one with one letter lost, or (on the text's
first line only) its end. What each format makes of the keys found is its own ``score``
(:class:`hwadvisor.importers.registry.Format`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["KeyIndex", "keys_found", "line_keys"]

#: The key of a ``Key: value`` (or ``Key = value``) line: text before the first colon.
_KEY = re.compile(r"^\s*([A-Za-z_][^:=\n]{0,60}?)\s*[:=]")
#: Lines looked at: every format shows what it is near its start.
MAX_LINES = 600


class KeyIndex:
    """The keys a format prints (each with a weight), indexed for the lookups above."""

    def __init__(
        self,
        weights: Mapping[str, float],
        *,
        aliases: Mapping[str, str] | None = None,
        case: bool = True,
    ) -> None:
        self.case = case
        self.weights = {self._fold(k): w for k, w in weights.items()}
        #: What a fork of the tool calls a key ("Total CPU(s)" for "CPU(s)").
        self.aliases = {self._fold(k): self._fold(v) for k, v in (aliases or {}).items()}
        self.dropped: dict[str, str] = {}
        for key in self.weights:
            if len(key) >= 6:
                for i in range(len(key)):
                    self.dropped.setdefault(key[:i] + key[i + 1 :], key)

    def _fold(self, key: str) -> str:
        return " ".join(key.split()) if self.case else " ".join(key.lower().split())

    def match(self, key: str, *, first: bool = False) -> str | None:
        """The known key ``key`` is (exactly, with one letter lost, or — for the text's first
        line — its end), or None."""
        key = self._fold(key)
        if key in self.weights:
            return key
        if key in self.aliases:
            return self.aliases[key]
        if len(key) >= 5 and key in self.dropped:
            return self.dropped[key]
        if first and len(key) >= 4:
            ends = [k for k in self.weights if k.endswith(key)]
            if len(ends) == 1:
                return ends[0]
        return None


def line_keys(text: str) -> list[tuple[int, str]]:
    """(line number, key) of the ``Key: value`` lines among the first :data:`MAX_LINES`."""
    out = []
    for number, line in enumerate(text.split("\n", MAX_LINES)[:MAX_LINES]):
        match = _KEY.match(line)
        if match:
            out.append((number, match.group(1)))
    return out


def _first_line(text: str) -> int:
    for number, line in enumerate(text.split("\n", 50)[:50]):
        if line.strip():
            return number
    return -1


def keys_found(
    text: str, index: KeyIndex, keys: Iterable[tuple[int, str]] | None = None
) -> dict[str, float]:
    """The known keys of ``index`` that lines of ``text`` start with, and each one's weight."""
    first = _first_line(text)
    found: dict[str, float] = {}
    for number, key in keys if keys is not None else line_keys(text):
        known = index.match(key, first=number == first)
        if known is not None:
            found[known] = index.weights[known]
    return found
