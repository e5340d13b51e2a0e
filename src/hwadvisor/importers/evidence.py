"""Weighing how much of a text looks like a format: the keys of its ``Key: value`` lines.

A real paste often starts part-way (its first line cut inside a key: ``rchitecture:``), loses a
letter on the way, or comes from a fork of a tool that prints most of the same keys. A key is
found when a line's key is a known one, the known one with one letter lost, or (on the text's
first line only) its end. What each format makes of the keys found is its own ``score``
(:class:`hwadvisor.importers.registry.Format`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

__all__ = ["KeyIndex", "keys_found", "line_keys"]

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


@lru_cache(maxsize=8)
def line_keys(text: str) -> tuple[tuple[int, str], ...]:
    """(line number, key) of the ``Key: value`` lines among the first :data:`MAX_LINES`: the
    text before a line's first colon (or equals sign) within its first 64 characters. Kept for
    the last few texts: every format that weighs keys asks for the same sample's."""
    out = []
    for number, line in enumerate(text.split("\n", MAX_LINES)[:MAX_LINES]):
        colon, equals = line.find(":", 0, 64), line.find("=", 0, 64)
        cut = min(i for i in (colon, equals, 64) if i >= 0)
        if cut == 64 or cut == 0:
            continue
        key = line[:cut].strip()
        if key and (key[0].isalpha() or key[0] == "_") and "\t" not in key:
            out.append((number, key))
    return tuple(out)


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
