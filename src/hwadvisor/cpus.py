"""How many CPUs this process may run on: its affinity mask where the OS has one (a container
pinned with ``--cpuset-cpus``, ``taskset``), else the machine's count. Light: imported at start."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


__all__ = ["usable_cpus"]
