"""Formatting of quantities for people (shared by the terminal, the reports and the diff)."""

from __future__ import annotations


def human_bytes(n: float) -> str:
    """1536 → "1.5 KiB"; binary units, as memory sizes are."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - loop always returns
