"""Container limits from the cgroup filesystem: CPU quota and memory limit.

``os.cpu_count()`` and psutil report the host's CPUs and memory, not what a container may use
(python/cpython#80235, joblib/loky#355). The limits live in the process's own cgroup and in its
ancestors (the effective limit is the smallest along the path); inside a container without a
cgroup namespace the process's host path is not visible and its cgroup is mounted at the root.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from hwadvisor.model.facts import Fact, Source, fact, unknown

from .roots import Roots

#: cgroup v1 writes "unlimited" as a huge page-aligned number near 2**63.
_V1_UNLIMITED = 2**62

#: Where cgroup v1 mounts the CPU controller, depending on the distribution.
_V1_CPU_DIRS = ("cpu,cpuacct", "cpu", "cpuacct,cpu")
_V1_MEMORY_DIRS = ("memory",)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except (OSError, ValueError):
        return None


def own_cgroup_paths(roots: Roots) -> dict[str, str]:
    """Controller name -> this process's cgroup path, from ``<proc>/self/cgroup``.

    The cgroup v2 path is under the key ``""``; an unreadable file gives ``{}``.
    """
    text = _read(roots.proc / "self" / "cgroup")
    paths: dict[str, str] = {}
    for line in (text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            paths[""] = path
        for name in controllers.split(","):
            if name:
                paths[name] = path
    return paths


def _candidates(mount: Path, own: str | None) -> list[Path]:
    """The process's cgroup and its ancestors under ``mount``, deepest first, then the root."""
    found: list[Path] = []
    if own:
        # The path is data from the kernel; never let it climb out of the mount.
        parts = [p for p in PurePosixPath(own.strip()).parts if p not in ("/", ".", "..")]
        for depth in range(len(parts), 0, -1):
            directory = mount.joinpath(*parts[:depth])
            if directory.is_dir():
                found.append(directory)
    found.append(mount)
    return found


@dataclass(frozen=True)
class _Hierarchy:
    version: int
    mount: Path
    own: str | None


def _hierarchies(roots: Roots, v1_dirs: tuple[str, ...], v1_key: str) -> Iterator[_Hierarchy]:
    """The mounted hierarchies that can hold the controller: v2 (pure or hybrid), then v1."""
    paths = own_cgroup_paths(roots)
    base = roots.cgroup
    for mount in (base, base / "unified"):
        if (mount / "cgroup.controllers").is_file():
            yield _Hierarchy(2, mount, paths.get(""))
    for name in v1_dirs:
        mount = base / name
        if mount.is_dir():
            yield _Hierarchy(1, mount, paths.get(v1_key))
            break


def _no_limit_reason(what: str, unlimited: list[str], any_fs: bool) -> str:
    if unlimited:
        return f"no {what} ({unlimited[0]})"
    if any_fs:
        return f"no {what} (the cgroup sets none)"
    return "no cgroup filesystem"


def cpu_quota(roots: Roots) -> Fact[float]:
    """CPUs' worth of time this process's cgroup allows (quota / period); null when unlimited."""
    quotas: list[float] = []
    unlimited: list[str] = []
    any_fs = False
    for hierarchy in _hierarchies(roots, _V1_CPU_DIRS, "cpu"):
        any_fs = True
        for directory in _candidates(hierarchy.mount, hierarchy.own):
            try:
                if hierarchy.version == 2:
                    text = _read(directory / "cpu.max")
                    if text is None:
                        continue
                    quota_text, _, period_text = text.partition(" ")
                    if quota_text == "max":
                        unlimited.append("cpu.max = max")
                        continue
                    quota, period = int(quota_text), int(period_text or "100000")
                else:
                    quota_raw = _read(directory / "cpu.cfs_quota_us")
                    period_raw = _read(directory / "cpu.cfs_period_us")
                    if quota_raw is None or period_raw is None:
                        continue
                    quota, period = int(quota_raw), int(period_raw)
                    if quota < 0:
                        unlimited.append(f"cpu.cfs_quota_us = {quota}")
                        continue
            except ValueError:
                continue
            if quota > 0 and period > 0:
                quotas.append(quota / period)
    if quotas:
        return fact(min(quotas), Source.CGROUP)
    return unknown(_no_limit_reason("CPU quota", unlimited, any_fs), Source.CGROUP)


def memory_limit(roots: Roots) -> Fact[int]:
    """Bytes of memory this process's cgroup may use; null when unlimited."""
    limits: list[int] = []
    unlimited: list[str] = []
    any_fs = False
    for hierarchy in _hierarchies(roots, _V1_MEMORY_DIRS, "memory"):
        any_fs = True
        name = "memory.max" if hierarchy.version == 2 else "memory.limit_in_bytes"
        for directory in _candidates(hierarchy.mount, hierarchy.own):
            text = _read(directory / name)
            if text is None:
                continue
            if text == "max":
                unlimited.append(f"{name} = max")
                continue
            try:
                limit = int(text)
            except ValueError:
                continue
            if limit >= _V1_UNLIMITED or limit < 0:
                unlimited.append(f"{name} = {limit}, i.e. unlimited")
            elif limit > 0:
                limits.append(limit)
    if limits:
        return fact(min(limits), Source.CGROUP)
    return unknown(_no_limit_reason("memory limit", unlimited, any_fs), Source.CGROUP)
