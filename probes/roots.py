"""Where filesystem probes look. Tests point these at recorded trees under ``tests/fixtures``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

#: The environment variable naming where the node's root filesystem is mounted in a container
#: (the Kubernetes DaemonSet mounts it at ``/host``).
HOST_ROOT_ENV = "HWADVISOR_HOST_ROOT"


@dataclass(frozen=True)
class Roots:
    """Filesystem roots the probes read; the defaults are the live machine's."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    dev: Path = Path("/dev")
    etc: Path = Path("/etc")
    root: Path = Path("/")
    """For marker files such as ``/.dockerenv`` and ``/run/.containerenv``."""
    host: Path | None = None
    """The node's root filesystem as mounted in this container (``HWADVISOR_HOST_ROOT``), or
    None: the OS name and machine-id are then read there first, falling back on this
    container's own (the profile says which)."""

    @property
    def cgroup(self) -> Path:
        return self.sys / "fs" / "cgroup"

    @classmethod
    def under(cls, base: Path) -> Roots:
        """All roots inside one recorded tree (``base/proc``, ``base/sys``, ...)."""
        return cls(
            proc=base / "proc", sys=base / "sys", dev=base / "dev", etc=base / "etc", root=base
        )

    @classmethod
    def live(cls, env: Mapping[str, str]) -> Roots:
        """The live machine's roots, with the host root ``env`` names (``HWADVISOR_HOST_ROOT``;
        unset or empty: none)."""
        host = env.get(HOST_ROOT_ENV, "").strip()
        return replace(cls(), host=Path(host) if host else None)
