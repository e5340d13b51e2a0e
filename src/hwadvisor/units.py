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


def format_rate(value: float | None, unit: str) -> str:
    """A figure with its unit, scaled for reading (12345 GFLOP/s → "12.3 TFLOP/s")."""
    if value is None:
        return "—"
    if unit == "GFLOP/s" and value >= 1000:
        return f"{value / 1000:,.1f} TFLOP/s"
    if unit == "GB/s" and value >= 1000:
        return f"{value / 1000:,.2f} TB/s"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:,.3g} {unit}"


def human_duration(seconds: float | None) -> str:
    """3600 → "1.0 h"; days past 48 hours, years past two years."""
    if seconds is None:
        return "—"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    hours = seconds / 3600
    if hours < 48:
        return f"{hours:.1f} h"
    days = hours / 24
    return f"{days:,.0f} days" if days < 730 else f"{days / 365:,.1f} years"


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
