"""Formatting of quantities for people (shared by the terminal, the reports and the diff)."""

from __future__ import annotations

import re


def human_bytes(n: float) -> str:
    """1536 → "1.5 KiB"; binary units, as memory sizes are."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - loop always returns


_PLANS = (
    (re.compile(r"^fits as given"), ""),
    (
        re.compile(
            r"^fits only with gradient checkpointing, at batch (\d+) \(gradient accumulation ×(\d+)"
        ),
        r"with checkpointing, batch \1 ×\2",
    ),
    (re.compile(r"^fits only with gradient checkpointing"), "with checkpointing"),
    (re.compile(r"^fits at batch (\d+) \(gradient accumulation ×(\d+)"), r"at batch \1 ×\2"),
    (re.compile(r"^does not fit even at batch 1"), "not even at batch 1"),
)


def short_plan(text: str | None) -> str:
    """A memory plan in a few words for a table cell: "at batch 64 ×4" (gradient accumulation),
    "with checkpointing", "not even at batch 1"; nothing when it fits as given."""
    if not text:
        return ""
    for pattern, short in _PLANS:
        found = pattern.search(text)
        if found:
            return found.expand(short)
    return ""
