"""Xid errors: what the NVIDIA driver writes to the kernel log when a GPU misbehaves.

NVML reports Xids only as events from the moment a program registers for them, so a scan reads
the ones the kernel still holds in its log buffer instead::

    NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.

``/dev/kmsg`` is read without blocking (what is buffered, then stop), bounded in lines, bytes and
time. Where ``kernel.dmesg_restrict`` is set only root (CAP_SYSLOG) may read it, and a container
sees it only when it is mounted in: the GPUs' Xid facts then say so, each reason starting with
:data:`UNREADABLE` (the readiness finding ``xid-log-unreadable`` looks for that prefix). Each
line names the GPU by PCI bus id; :func:`attribute` gives each GPU its codes.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field

from hwadvisor.model.facts import Source, StrictModel, fact, unknown
from hwadvisor.model.profile import GpuInfo

from .roots import Roots

_LIVE_ROOTS = Roots()
SRC = Source.DEVFS

#: Bounds of one read of the kernel log: it is a ring buffer (usually 256 KiB to a few MiB).
MAX_LINES = 200_000
MAX_BYTES = 32 * 1024 * 1024
MAX_SECONDS = 1.0
_CHUNK = 8192

#: How every reason for an unreadable kernel log starts.
UNREADABLE = "kernel log not readable"
NOT_READABLE = (
    f"{UNREADABLE}: permission denied (kernel.dmesg_restrict, or a container without CAP_SYSLOG)"
)

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>(?:[0-9A-Fa-f]{1,8}:)?[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2})"
    r"(?:\.[0-7])?\): (?P<code>\d{1,5})\b"
)
_BUS = re.compile(r"^(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.[0-7])?$")


class XidEvent(StrictModel):
    bus: str
    """``0000:3b:00``: domain, bus and device (the kernel names no function)."""
    code: int


class KernelLog(StrictModel):
    """The Xid lines of the kernel log, or why it could not be read."""

    readable: bool = False
    reason: str | None = None
    """Why it could not be read; or, when readable, where the read was cut short."""
    lines: int = 0
    events: list[XidEvent] = Field(default_factory=list)


def bus_key(bus_id: str) -> str | None:
    """A PCI address in any spelling (``00000000:3B:00.0``, ``0000:3b:00``, ``3b:00.0``) as the
    key Xid lines and GPUs are matched on: ``0000:3b:00``."""
    match = _BUS.match(bus_id.strip())
    if match is None:
        return None
    domain, bus, device = match.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(device, 16):02x}"


def parse_xid_lines(lines: Iterable[str]) -> list[XidEvent]:
    """Every ``NVRM: Xid (PCI:...): N`` in ``lines`` (dmesg, journal or ``/dev/kmsg`` format)."""
    events: list[XidEvent] = []
    for line in lines:
        if "Xid" not in line:
            continue
        match = _XID.search(line)
        if match is None:
            continue
        key = bus_key(match.group("bus"))
        if key is not None:
            events.append(XidEvent(bus=key, code=int(match.group("code"))))
    return events


def read_kernel_log(
    roots: Roots = _LIVE_ROOTS,
    *,
    max_lines: int = MAX_LINES,
    max_bytes: int = MAX_BYTES,
    max_seconds: float = MAX_SECONDS,
) -> KernelLog:
    """The Xid lines of ``<dev>/kmsg``: what is buffered now, never waiting for more."""
    path = roots.dev / "kmsg"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return KernelLog(reason=_why_not(exc, path))
    lines: list[str] = []
    count = 0
    total = 0
    cut: str | None = None
    pending = b""
    deadline = time.monotonic() + max_seconds
    try:
        while True:
            if time.monotonic() > deadline:
                cut = f"read cut after {max_seconds:g} s"
                break
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                break  # /dev/kmsg: everything buffered has been read
            except BrokenPipeError:
                continue  # /dev/kmsg: the record was overwritten while we read; go on
            except OSError as exc:
                if count == 0:
                    return KernelLog(reason=_why_not(exc, path))
                cut = f"read stopped: {exc.strerror or exc}"
                break
            if not chunk:
                break  # a regular file (a test's recording) at its end
            total += len(chunk)
            *complete, pending = (pending + chunk).split(b"\n")
            for raw in complete:
                if count >= max_lines:
                    break
                count += 1
                if b"Xid" in raw:
                    lines.append(raw.decode("utf-8", errors="replace"))
            if count >= max_lines or total >= max_bytes:
                cut = f"read cut after {count:,} lines"
                pending = b""
                break
    finally:
        os.close(fd)
    if pending and b"Xid" in pending:
        lines.append(pending.decode("utf-8", errors="replace"))
    return KernelLog(readable=True, reason=cut, lines=count, events=parse_xid_lines(lines))


def _why_not(exc: OSError, path: Path) -> str:
    if exc.errno in (errno.EPERM, errno.EACCES):
        return NOT_READABLE
    if exc.errno == errno.ENOENT:
        return f"{UNREADABLE}: no {path} (a container without the node's /dev/kmsg, or not Linux)"
    return f"{UNREADABLE} ({path}: {exc.strerror or exc})"


def attribute(gpus: list[GpuInfo], log: KernelLog) -> list[XidEvent]:
    """Give each NVIDIA GPU the Xid codes logged for its bus id (sorted, each once); return the
    events that match none of them (a GPU NVML no longer lists)."""
    codes: dict[str, set[int]] = {}
    for event in log.events:
        codes.setdefault(event.bus, set()).add(event.code)
    matched: set[str] = set()
    for gpu in gpus:
        if gpu.vendor != "nvidia":
            continue
        if not log.readable:
            gpu.xid_errors_recent = unknown(log.reason or UNREADABLE, SRC)
            continue
        key = bus_key(gpu.pci_bus_id.value) if gpu.pci_bus_id.value else None
        if key is None:
            gpu.xid_errors_recent = unknown(
                "no PCI bus id to match the kernel log's Xid lines with", SRC
            )
            continue
        matched.add(key)
        gpu.xid_errors_recent = fact(sorted(codes.get(key, ())), SRC)
    return [event for event in log.events if event.bus not in matched]
