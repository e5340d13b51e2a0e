"""Process checks the tests share."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie is dead for our purposes (its parent reaps it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
