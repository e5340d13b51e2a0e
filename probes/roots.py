"""Where filesystem probes look. Tests point these at recorded trees under ``tests/fixtures``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Roots:
    """Filesystem roots the probes read; the defaults are the live machine's."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    dev: Path = Path("/dev")
    etc: Path = Path("/etc")
    root: Path = Path("/")
    """For marker files such as ``/.dockerenv`` and ``/run/.containerenv``."""

    @property
    def cgroup(self) -> Path:
        return self.sys / "fs" / "cgroup"

    @classmethod
    def under(cls, base: Path) -> Roots:
        """All roots inside one recorded tree (``base/proc``, ``base/sys``, ...)."""
        return cls(
            proc=base / "proc", sys=base / "sys", dev=base / "dev", etc=base / "etc", root=base
        )
