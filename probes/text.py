"""Reading numbers and keyed values from tool output: shared by the probes, which read the
machine's own files, and the importers, which read the same text pasted (no psutil here)."""

from __future__ import annotations

from collections.abc import Iterable


def to_int(text: str | None, base: int = 10) -> int | None:
    """``text`` as an integer in ``base``, or None when absent or not a number."""
    if text is None:
        return None
    try:
        return int(text.strip(), base)
    except ValueError:
        return None


def first_value(blocks: Iterable[dict[str, str]], *keys: str) -> str | None:
    """The first non-empty value of any of ``keys``, block by block (``/proc/cpuinfo``
    entries: the model is in every entry, read from the first that has it)."""
    for block in blocks:
        for key in keys:
            value = block.get(key)
            if value:
                return value
    return None
