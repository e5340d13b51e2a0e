"""Memory, storage, platform and host identity.

Each reader is guarded on its own: one missing file or failing call makes one fact null with its
reason, never the whole section.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil

from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import HostIdentity, MemoryInfo, PciDevice, PlatformInfo, StorageInfo

from . import cgroup
from ._common import PSUTIL_ERRORS
from .cpu import read_sysctl
from .roots import HOST_ROOT_ENV, Roots

_LIVE_ROOTS = Roots()


#: Environment variables that decide which GPUs a framework sees, in report order.
VISIBILITY_VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "ZE_AFFINITY_MASK",
    "ONEAPI_DEVICE_SELECTOR",
)

_PCI_VENDORS = {"0x10de": "nvidia", "0x1002": "amd", "0x8086": "intel"}

#: PCI base classes worth listing: display controllers and processing accelerators.
_PCI_CLASSES = ("0x03", "0x12")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------------------------
# Memory


def parse_meminfo(text: str) -> dict[str, int]:
    """``/proc/meminfo`` as ``{key: bytes}`` (the kernel writes kB, meaning KiB)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or not fields:
            continue
        try:
            number = int(fields[0])
        except ValueError:
            continue
        values[key.strip()] = number * 1024 if fields[1:2] == ["kB"] else number
    return values


def probe_memory(roots: Roots = _LIVE_ROOTS, psutil_module: Any = None) -> MemoryInfo:
    """RAM and swap from psutil, else ``/proc/meminfo``; the cgroup limit from the cgroup fs."""
    ps = psutil_module if psutil_module is not None else psutil
    meminfo_text = None
    meminfo: dict[str, int] | None = None

    def procfs(key: str, why: str) -> Fact[int]:
        nonlocal meminfo_text, meminfo
        if meminfo is None:
            meminfo_text = _read(roots.proc / "meminfo")
            meminfo = parse_meminfo(meminfo_text) if meminfo_text else {}
        if key in meminfo:
            return fact(meminfo[key], Source.PROCFS)
        where = "no /proc/meminfo" if meminfo_text is None else f"no {key} in /proc/meminfo"
        return unknown(f"{why}; {where}", Source.PSUTIL)

    try:
        virtual = ps.virtual_memory()
        total: Fact[int] = fact(int(virtual.total), Source.PSUTIL)
        available: Fact[int] = fact(int(virtual.available), Source.PSUTIL)
    except (*PSUTIL_ERRORS, TypeError) as exc:
        why = f"psutil.virtual_memory() failed: {exc}"
        total, available = procfs("MemTotal", why), procfs("MemAvailable", why)
    try:
        swap = ps.swap_memory()
        swap_total: Fact[int] = fact(int(swap.total), Source.PSUTIL)
        swap_free: Fact[int] = fact(int(swap.free), Source.PSUTIL)
    except (*PSUTIL_ERRORS, TypeError) as exc:
        why = f"psutil.swap_memory() failed: {exc}"
        swap_total, swap_free = procfs("SwapTotal", why), procfs("SwapFree", why)
    return MemoryInfo(
        total_bytes=total,
        available_bytes=available,
        swap_total_bytes=swap_total,
        swap_free_bytes=swap_free,
        cgroup_limit_bytes=cgroup.memory_limit(roots),
    )


# --------------------------------------------------------------------------------------------
# Storage


def probe_storage(path: Path) -> StorageInfo:
    """Free and total space where reports will be written (or its nearest existing parent)."""
    target = Path(os.path.abspath(path.expanduser()))
    measured = target
    while not measured.exists() and measured.parent != measured:
        measured = measured.parent
    try:
        usage = shutil.disk_usage(measured)
    except OSError as exc:
        reason = f"disk usage unreadable at {measured}: {exc}"
        return StorageInfo(
            path=fact(str(target), Source.OS),
            free_bytes=unknown(reason, Source.OS),
            total_bytes=unknown(reason, Source.OS),
        )
    path_fact: Fact[str] = fact(str(target), Source.OS)
    if measured != target:
        # The folder is created later; it will live on the same filesystem as this parent.
        path_fact = Fact[str](
            value=str(target), source=Source.OS, reason=f"measured at existing parent {measured}"
        )
    return StorageInfo(
        path=path_fact,
        free_bytes=fact(usage.free, Source.OS),
        total_bytes=fact(usage.total, Source.OS),
    )


# --------------------------------------------------------------------------------------------
# Platform


def _parse_os_release(text: str | None) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip("\"'")
    return values


def _os_name(text: str | None) -> str | None:
    release = _parse_os_release(text)
    name = release.get("PRETTY_NAME") or " ".join(
        part for part in (release.get("NAME"), release.get("VERSION")) if part
    )
    return name or None


def _from_host(
    roots: Roots, paths: tuple[str, ...], read: Callable[[str | None], str | None], what: str
) -> tuple[str | None, str | None]:
    """``read`` of the first of ``paths`` under the host root that gives a value, and the note
    the fact carries: where it came from, or why the container's own is used instead."""
    if roots.host is None:
        return None, None
    for relative in paths:
        value = read(_read(roots.host / relative))
        if value:
            return value, f"read from the host root {roots.host}/{relative} ({HOST_ROOT_ENV})"
    shown = " or ".join(paths)
    return None, (
        f"{HOST_ROOT_ENV}={roots.host} has no readable {shown}: {what} is the container's own"
    )


def _distribution(roots: Roots, system: str) -> Fact[str]:
    if system == "Linux":
        name, note = _from_host(roots, ("etc/os-release", "usr/lib/os-release"), _os_name, "the OS")
        if name:
            return Fact[str](value=name, source=Source.OS, reason=note)
        text = _read(roots.etc / "os-release") or _read(roots.root / "usr" / "lib" / "os-release")
        name = _os_name(text)
        if name:
            return Fact[str](value=name, source=Source.OS, reason=note)
        return unknown("no /etc/os-release" + (f"; {note}" if note else ""), Source.OS)
    if system == "Darwin":
        version = platform.mac_ver()[0]
        return fact(f"macOS {version}" if version else None, Source.PLATFORM, "no macOS version")
    if system == "Windows":
        win_release, version, _, _ = platform.win32_ver()
        if win_release:
            return fact(
                f"Windows {win_release} ({version})" if version else f"Windows {win_release}",
                Source.PLATFORM,
            )
        return unknown("platform.win32_ver() returned nothing", Source.PLATFORM)
    return unknown(f"no distribution name on {system}", Source.PLATFORM)


def _container(roots: Roots, env: Mapping[str, str], system: str) -> Fact[str]:
    if system != "Linux":
        return fact("none", Source.PLATFORM)
    cgroups = " ".join(_read(roots.proc / pid / "cgroup") or "" for pid in ("1", "self"))
    # Kubernetes first: its pods may also carry docker's marker.
    if "KUBERNETES_SERVICE_HOST" in env:
        return fact("kubernetes", Source.ENV)
    if "kubepods" in cgroups:
        return fact("kubernetes", Source.PROCFS)
    if (roots.root / "run" / ".containerenv").exists():
        return fact("podman", Source.OS)
    if (roots.root / ".dockerenv").exists():
        return fact("docker", Source.OS)
    if "docker" in cgroups:
        return fact("docker", Source.PROCFS)
    if env.get("container") == "lxc":
        return fact("lxc", Source.ENV)
    if "/lxc/" in cgroups or "lxc.payload" in cgroups:
        return fact("lxc", Source.PROCFS)
    return fact("none", Source.OS)


def _wsl(roots: Roots, env: Mapping[str, str], system: str) -> Fact[bool]:
    if system != "Linux":
        return fact(False, Source.PLATFORM)
    if env.get("WSL_DISTRO_NAME"):
        return fact(True, Source.ENV)
    osrelease = _read(roots.proc / "sys" / "kernel" / "osrelease")
    if osrelease is None:
        return unknown(
            "/proc/sys/kernel/osrelease unreadable and WSL_DISTRO_NAME unset", Source.ENV
        )
    return fact("microsoft" in osrelease.lower(), Source.PROCFS)


def _rosetta(system: str) -> Fact[bool]:
    if system != "Darwin":
        return fact(False, Source.PLATFORM)
    values = read_sysctl("sysctl.proc_translated", "hw.optional.arm64")
    if not values:
        return unknown("sysctl gave no answer", Source.SYSCTL)
    # Intel Macs have no sysctl.proc_translated: nothing is translated there.
    return fact(values.get("sysctl.proc_translated") == "1", Source.SYSCTL)


def _nvidia_nodes(roots: Roots, system: str) -> Fact[list[str]]:
    if system != "Linux":
        return unknown(f"/dev/nvidia* nodes exist on Linux only, not on {system}", Source.DEVFS)
    try:
        names = sorted(p.name for p in roots.dev.iterdir() if p.name.startswith("nvidia"))
    except OSError as exc:
        return unknown(f"/dev unreadable: {exc}", Source.DEVFS)
    return fact(names, Source.DEVFS)


def pci_display_devices(roots: Roots) -> list[PciDevice]:
    """GPUs and accelerators on the PCI bus, from sysfs, whatever their drivers say."""
    base = roots.sys / "bus" / "pci" / "devices"
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return []
    devices: list[PciDevice] = []
    for entry in entries:
        class_id = (_read(entry / "class") or "").lower()
        if not class_id.startswith(_PCI_CLASSES):
            continue
        vendor_id = (_read(entry / "vendor") or "").lower()
        driver: str | None = None
        try:
            driver = os.path.basename(os.readlink(entry / "driver"))
        except OSError:
            driver = None
        devices.append(
            PciDevice(
                bus_id=entry.name,
                vendor=_PCI_VENDORS.get(vendor_id, vendor_id or "unknown"),
                vendor_id=vendor_id,
                device_id=(_read(entry / "device") or "").lower(),
                driver=driver or None,
                class_id=class_id,
            )
        )
    return devices


def probe_platform(
    roots: Roots = _LIVE_ROOTS,
    env: Mapping[str, str] | None = None,
    system: str | None = None,
) -> PlatformInfo:
    """OS, distribution, kernel, Python, container/WSL/Rosetta, GPU visibility and PCI GPUs."""
    env = os.environ if env is None else env
    system = system or platform.system()
    return PlatformInfo(
        os=fact(system or None, Source.PLATFORM, "platform.system() returned nothing"),
        distribution=_distribution(roots, system),
        kernel=fact(platform.release() or None, Source.PLATFORM, "no kernel release"),
        python_version=fact(platform.python_version(), Source.PLATFORM),
        python_implementation=fact(platform.python_implementation(), Source.PLATFORM),
        container=_container(roots, env, system),
        wsl=_wsl(roots, env, system),
        rosetta=_rosetta(system),
        visibility_env={name: env[name] for name in VISIBILITY_VARIABLES if name in env},
        nvidia_device_nodes=_nvidia_nodes(roots, system),
        pci_display_devices=pci_display_devices(roots) if system == "Linux" else [],
    )


# --------------------------------------------------------------------------------------------
# Host


def _hashed_id(text: str | None) -> str | None:
    if not text:
        return None
    digest = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()
    return f"sha256:{digest[:16]}"


def probe_host(roots: Roots = _LIVE_ROOTS) -> HostIdentity:
    """Hostname and a stable, hashed machine id (the raw id never leaves the machine).

    With a host root (:attr:`Roots.host`), the machine-id is the node's. The hostname stays the
    one this process sees: in a container that is the node's only when it shares the node's
    network namespace (Kubernetes ``hostNetwork``), which the note says."""
    try:
        hostname: Fact[str] = fact(socket.gethostname() or None, Source.OS, "empty hostname")
    except OSError as exc:
        hostname = unknown(f"socket.gethostname() failed: {exc}", Source.OS)
    if roots.host is not None and hostname.value is not None:
        hostname = Fact[str](
            value=hostname.value,
            source=Source.OS,
            reason="this container's hostname (the node's where it shares the node's network, "
            "as with hostNetwork)",
        )
    machine_id: Fact[str] = unknown(
        "no machine-id (/etc/machine-id or /var/lib/dbus/machine-id)", Source.OS
    )
    node_id, note = _from_host(
        roots, ("etc/machine-id", "var/lib/dbus/machine-id"), _hashed_id, "the machine-id"
    )
    if node_id:
        return HostIdentity(
            hostname=hostname, machine_id=Fact[str](value=node_id, source=Source.OS, reason=note)
        )
    for path in (roots.etc / "machine-id", roots.root / "var" / "lib" / "dbus" / "machine-id"):
        own = _hashed_id(_read(path))
        if own:
            machine_id = Fact[str](value=own, source=Source.OS, reason=note)
            break
    else:
        if note:
            machine_id = unknown(f"{machine_id.reason}; {note}", Source.OS)
    return HostIdentity(hostname=hostname, machine_id=machine_id)
