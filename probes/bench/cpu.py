"""Benchmark cases (placeholder: being written)."""

from __future__ import annotations

from typing import Any

CASES: dict[str, Any] = {}
