"""Small pieces the probes share."""

from __future__ import annotations

from dataclasses import dataclass

import psutil

#: Longest error text kept in a fact's reason.
MAX_REASON = 300

#: What psutil raises on platforms where a call is missing or broken (giampaolo/psutil#1939, #2382).
PSUTIL_ERRORS = (
    psutil.Error,
    OSError,
    RuntimeError,
    NotImplementedError,
    ValueError,
    AttributeError,
)


@dataclass(frozen=True)
class Failed:
    """A guarded call that failed, and why (kept apart from any value the call could return)."""

    reason: str


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line, cut to :data:`MAX_REASON` characters."""
    text = " ".join(str(exc).split()) or "no message"
    text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."
