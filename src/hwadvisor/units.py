"""Formatting of quantities for people: the one set of formatters the terminal, the HTML and
PDF reports and the diff share, so that they all say the same thing the same way.

- memory (RAM, VRAM, caches, training memory): binary units, written ``GiB``;
- durations: ``45 s``, ``20 min``, ``8.3 h``, ``24 h``, ``3.1 days``, ``74 days``, ``3.1 years``
  (never ``24.0 hours`` beside ``≤ 24 h``), and ranges ``16.1–41.7 h``;
- rates: ``12.3 TFLOP/s``, ``1.32 TB/s`` (a bandwidth is a rate, decimal as vendors give it);
- facts: the value, or a brief ``unknown`` with its reason said once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from hwadvisor.model.facts import Fact

#: What an absent figure reads as in a table cell.
NONE = "—"


def human_bytes(n: float) -> str:
    """1536 → "1.5 KiB"; binary units, as memory sizes are (RAM and VRAM alike)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - loop always returns


def format_rate(value: float | None, unit: str) -> str:
    """A figure with its unit, scaled for reading (12345 GFLOP/s → "12.3 TFLOP/s")."""
    if value is None:
        return NONE
    if unit == "GFLOP/s" and value >= 1000:
        return f"{value / 1000:,.1f} TFLOP/s"
    if unit == "GB/s" and value >= 1000:
        return f"{value / 1000:,.2f} TB/s"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:,.3g} {unit}"


def _figure(value: float, below: float = 10) -> str:
    """One decimal below ``below`` and none above it, without a trailing ".0": 8.3, 24, 167."""
    if round(value, 1) < below:
        text = f"{value:.1f}"
        return text[:-2] if text.endswith(".0") else text
    return f"{value:,.0f}"


def _split_duration(seconds: float) -> tuple[str, str]:
    """The figure and the unit of a duration, chosen for reading."""
    seconds = max(0.0, float(seconds))
    if seconds < 90:
        return f"{max(1, round(seconds)) if seconds > 0 else 0:.0f}", "s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}", "min"
    hours = seconds / 3600
    if hours < 48:
        return _figure(hours, below=48), "h"  # 23.9 h and 24.4 h stay apart from 24 h
    days = hours / 24
    if days < 730:
        return _figure(days), "days"
    return _figure(days / 365), "years"


def human_duration(seconds: float | None) -> str:
    """3600 → "60 min"; minutes below 90 min, hours below 48 h ("8.3 h", "24 h", "26.7 h"),
    days below two years ("3.1 days", "74 days"), then years; no trailing ".0"."""
    if seconds is None:
        return NONE
    figure, unit = _split_duration(seconds)
    return f"{figure} {unit}"


def hours_text(hours: float | None) -> str:
    """A duration given in hours, in the same style: 24 → "24 h", 168 → "7 days"."""
    return human_duration(None if hours is None else hours * 3600)


def duration_range(low: float | None, high: float | None) -> str:
    """A range of durations with the unit said once where both ends share it: "16.1–41.7 h",
    "671 days–5.1 years"; "—" when an end is unknown."""
    if low is None or high is None:
        return NONE
    (a, unit_a), (b, unit_b) = _split_duration(low), _split_duration(high)
    if unit_a == unit_b:
        return f"{a}–{b} {unit_a}"
    return f"{a} {unit_a}–{b} {unit_b}"


def duration_with_range(
    seconds: float | None, low: float | None = None, high: float | None = None
) -> str:
    """ "26.7 h (16.1–41.7 h)"; the figure alone without a range; "—" without a figure."""
    if seconds is None:
        return NONE
    if low is None or high is None:
        return human_duration(seconds)
    return f"{human_duration(seconds)} ({duration_range(low, high)})"


_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}


def money(value: float | None, currency: str | None = "USD") -> str:
    """An amount rounded to what it is worth, never "0": "$0.27", "$4.80", "$312", "$1,999",
    "$38,000", "$312,000"; under a cent, "under $0.01"; another currency as "1,999 CHF"."""
    if value is None or not math.isfinite(value):
        return NONE  # a hand-edited profile's inf or nan says nothing of a price
    cur = currency or "USD"
    sign = _SYMBOLS.get(cur)

    def shown(text: str) -> str:
        return f"{sign}{text}" if sign else f"{text} {cur}"

    if value < 0.005:
        return f"under {shown('0.01')}"
    if value < 10:
        return shown(f"{value:.2f}")
    if value < 10_000:
        return shown(f"{value:,.0f}")
    if value >= 1e15:
        return shown(f"{value:.2e}")  # no price, but a file can say anything: never a crash
    magnitude = 10 ** (len(str(int(value))) - 3)
    return shown(f"{round(value / magnitude) * magnitude:,.0f}")


def size_text(n: float) -> str:
    """1.2B, 350M, 12k, 800: how people write model and data sizes."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return f"{n:,.0f}"


def count_text(value: float | None, unit: str) -> str:
    """A count of runs or hours for people: "0.4 runs", "3.2 runs", "27 runs", "1,300 runs"."""
    if value is None:
        return NONE
    if value < 10:
        text = f"{value:.1f}".removesuffix(".0")
    elif value < 10_000:
        text = f"{value:,.0f}"
    else:
        magnitude = 10 ** (len(str(int(value))) - 2)
        text = f"{round(value / magnitude) * magnitude:,.0f}"
    return f"{text} {unit}" + ("" if text == "1" else "s")


def format_value(value: Any, name: str = "") -> str:
    """A fact's value for people, its unit told by the field's name: ``*_bytes`` in GiB,
    ``*_mhz``, ``*_watts``, ``*_seconds`` as a duration, ``*_gbps``; yes/no; lists joined."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    if isinstance(value, (int, float)):
        if name.endswith("_bytes"):
            return human_bytes(value)
        if name.endswith("_mhz"):
            return f"{float(value):,.0f} MHz"
        if name.endswith("_watts"):
            return f"{float(value):g} W"
        if name.endswith("_seconds"):
            return human_duration(float(value))
        if name.endswith("_gbps"):
            return f"{float(value):g} Gb/s"
        if isinstance(value, float):
            return f"{value:g}"
    return str(value)


def fact_text(f: Fact[Any], fmt: Callable[[Any], str] = str, *, why: bool = False) -> str:
    """A fact as text: its value (``fmt`` applied; yes/no for a flag, a list joined), or
    "unknown", with the reason in brackets when ``why`` (where the reason is said once)."""
    if f.value is None:
        return f"unknown ({f.reason})" if why and f.reason else "unknown"
    if isinstance(f.value, bool):
        return "yes" if f.value else "no"
    if isinstance(f.value, list):
        return ", ".join(str(v) for v in f.value) or "none"
    return fmt(f.value)


def unknown_note(names: list[str], reason: str | None) -> str:
    """Unknowns said once: "not known: OS, Python, memory (not in collect_env output)"."""
    listed = ", ".join(names)
    return f"not known: {listed}" + (f" ({reason})" if reason else "")


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
