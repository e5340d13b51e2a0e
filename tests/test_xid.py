"""Xid errors from the kernel log: the parser on real NVRM lines, the bounded non-blocking read,
attribution to GPUs by PCI bus id, and the scan putting them in the profile with findings."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import GpuInfo, ProbeStatus
from hwadvisor.pipeline import ScanOptions, run_scan
from hwadvisor.probes import xid
from hwadvisor.probes.roots import Roots
from hwadvisor.probes.xid import (
    NOT_READABLE,
    KernelLog,
    XidEvent,
    attribute,
    bus_key,
    parse_xid_lines,
    read_kernel_log,
)

KMSG = Path(__file__).parent / "fixtures" / "system" / "kmsg-xid"
T = "tests.helpers.child_targets"


def gpu(index: int, bus: str | None, vendor: str = "nvidia") -> GpuInfo:
    return GpuInfo(
        index=index,
        vendor=vendor,
        backend="cuda" if vendor == "nvidia" else "rocm",
        pci_bus_id=fact(bus, Source.NVML, "no bus id"),
    )


# --------------------------------------------------------------------------------------------
# Parsing


@pytest.mark.parametrize(
    ("line", "bus", "code"),
    [
        # dmesg, with its timestamp
        (
            "[171112.300125] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
            "0000:3b:00",
            79,
        ),
        # /dev/kmsg, with its record prefix
        (
            "4,1988,86102234512,-;NVRM: Xid (PCI:0000:b1:00): 94, pid='<unknown>', "
            "name=<unknown>, Contained ECC error.",
            "0000:b1:00",
            94,
        ),
        # journalctl -k
        (
            "Nov 21 10:02:03 node17 kernel: NVRM: Xid (PCI:0000:b1:00): 95, pid=..., "
            "Uncontained ECC error.",
            "0000:b1:00",
            95,
        ),
        # Older drivers: no pid, and a bus id without the PCI: prefix
        (
            "NVRM: Xid (0000:03:00): 13, 0001 00000000 0000a1c0 00000e00 00000001 00000000",
            "0000:03:00",
            13,
        ),
        # An upper-case bus id with a function, as some drivers print it
        (
            "NVRM: Xid (PCI:0000:B1:00.0): 48, An uncorrectable double bit error (DBE) has been "
            "detected on GPU in the framebuffer at partition 2, subpartition 1.",
            "0000:b1:00",
            48,
        ),
        # A domain other than 0 (Azure VMs)
        ("NVRM: Xid (PCI:3e3f:00:00): 79, pid=77, GPU has fallen off the bus.", "3e3f:00:00", 79),
    ],
)
def test_parse_real_lines(line: str, bus: str, code: int) -> None:
    assert parse_xid_lines([line]) == [XidEvent(bus=bus, code=code)]


@pytest.mark.parametrize(
    "line",
    [
        "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
        "NVRM: Xid (PCI:0000:3b:00): not-a-number",
        "user wrote: Xid 79 somewhere",
        "",
    ],
)
def test_other_lines_are_no_xid(line: str) -> None:
    assert parse_xid_lines([line]) == []


@pytest.mark.parametrize(
    ("bus", "key"),
    [
        ("00000000:3B:00.0", "0000:3b:00"),
        ("0000:3b:00", "0000:3b:00"),
        ("3b:00.0", "0000:3b:00"),
        ("00003E3F:00:00.0", "3e3f:00:00"),
        ("not a bus", None),
    ],
)
def test_bus_key(bus: str, key: str | None) -> None:
    assert bus_key(bus) == key


# --------------------------------------------------------------------------------------------
# Reading the kernel log


def test_reads_the_recorded_kernel_log() -> None:
    log = read_kernel_log(Roots(dev=KMSG / "dev"))
    assert log.readable and log.reason is None
    assert log.lines == 17
    assert [(e.bus, e.code) for e in log.events] == [
        ("0000:b1:00", 94),
        ("0000:b1:00", 63),
        ("0000:b1:00", 94),
        ("0000:3b:00", 79),
        ("0000:5e:00", 13),
        ("0000:5e:00", 13),
        ("0000:5e:00", 43),
    ]


def test_the_read_is_cut_after_max_lines() -> None:
    log = read_kernel_log(Roots(dev=KMSG / "dev"), max_lines=3)
    assert log.readable
    assert log.reason == "read cut after 3 lines"
    assert log.events == []  # the Xid lines come after the first chunk's lines


def test_the_read_is_cut_after_max_seconds() -> None:
    log = read_kernel_log(Roots(dev=KMSG / "dev"), max_seconds=-1.0)
    assert log.readable and log.lines == 0
    assert log.reason == "read cut after -1 s"


def test_dmesg_restrict(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_open = os.open

    def refuse(path: Any, flags: int, *args: Any) -> int:
        if str(path).endswith("kmsg"):
            raise PermissionError(errno.EPERM, "Operation not permitted", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(xid.os, "open", refuse)
    log = read_kernel_log(Roots(dev=KMSG / "dev"))
    assert not log.readable
    assert log.reason == NOT_READABLE
    assert NOT_READABLE.startswith(f"{xid.UNREADABLE}: permission denied")


def test_no_kmsg(tmp_path: Path) -> None:
    log = read_kernel_log(Roots(dev=tmp_path))
    assert not log.readable
    assert log.reason is not None
    assert log.reason.startswith(f"{xid.UNREADABLE}: no {tmp_path / 'kmsg'}")


def test_a_read_error_before_anything_was_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int, n: int) -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(xid.os, "read", fail)
    log = read_kernel_log(Roots(dev=KMSG / "dev"))
    assert not log.readable
    assert log.reason == f"kernel log not readable ({KMSG / 'dev' / 'kmsg'}: Input/output error)"


def test_an_overwritten_record_is_skipped_and_the_read_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_read = os.read
    calls = {"n": 0}

    def flaky(fd: int, n: int) -> bytes:
        calls["n"] += 1
        if calls["n"] == 1:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")  # /dev/kmsg: record overwritten
        return real_read(fd, n)

    monkeypatch.setattr(xid.os, "read", flaky)
    log = read_kernel_log(Roots(dev=KMSG / "dev"))
    assert log.readable and len(log.events) == 7


def test_kmsg_records_one_read_each_until_eagain(monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/kmsg gives one record a read and EAGAIN when nothing more is buffered."""
    records = [
        b"6,1,1,-;unrelated\n",
        b"4,2,2,-;NVRM: Xid (PCI:0000:17:00): 48, pid=5, Double Bit ECC Error\n",
    ]

    def kmsg_read(fd: int, n: int) -> bytes:
        if records:
            return records.pop(0)
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(xid.os, "read", kmsg_read)
    log = read_kernel_log(Roots(dev=KMSG / "dev"))
    assert log.readable and log.lines == 2
    assert log.events == [XidEvent(bus="0000:17:00", code=48)]


def test_a_fifo_with_a_silent_writer_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "kmsg"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # holds the FIFO open, writes little
    try:
        os.write(writer, b"NVRM: Xid (PCI:0000:17:00): 79, pid=1, GPU has fallen off the bus.\n")
        result: list[KernelLog] = []
        thread = threading.Thread(
            target=lambda: result.append(read_kernel_log(Roots(dev=tmp_path)))
        )
        started = time.monotonic()
        thread.start()
        thread.join(timeout=5)
        assert not thread.is_alive(), "the kernel-log read blocked"
        assert time.monotonic() - started < 2.5
    finally:
        os.close(writer)
    (log,) = result
    assert log.events == [XidEvent(bus="0000:17:00", code=79)]


def test_this_machine_never_raises_and_stays_bounded() -> None:
    started = time.monotonic()
    log = read_kernel_log()
    assert time.monotonic() - started < xid.MAX_SECONDS + 1.0
    assert log.readable or log.reason


# --------------------------------------------------------------------------------------------
# Attribution


def test_attribution_by_bus_id() -> None:
    log = read_kernel_log(Roots(dev=KMSG / "dev"))
    gpus = [
        gpu(0, "00000000:17:00.0"),
        gpu(1, "00000000:3B:00.0"),
        gpu(2, "00000000:B1:00.0"),
        gpu(3, None),
        gpu(4, "0000:5e:00.0", vendor="amd"),
    ]
    unmatched = attribute(gpus, log)
    assert gpus[0].xid_errors_recent.value == []  # read, nothing logged for it
    assert gpus[1].xid_errors_recent.value == [79]
    assert gpus[2].xid_errors_recent.value == [63, 94]  # each code once, sorted
    assert gpus[2].xid_errors_recent.source == Source.DEVFS
    assert gpus[3].xid_errors_recent.value is None
    assert gpus[3].xid_errors_recent.reason == (
        "no PCI bus id to match the kernel log's Xid lines with"
    )
    assert gpus[4].xid_errors_recent.reason == "not probed"  # not an NVIDIA GPU
    # The 5e:00 GPU is no NVIDIA GPU of this profile: its Xids are handed back.
    assert {(e.bus, e.code) for e in unmatched} == {("0000:5e:00", 13), ("0000:5e:00", 43)}


def test_unreadable_log_gives_every_nvidia_gpu_the_reason() -> None:
    gpus = [gpu(0, "00000000:17:00.0"), gpu(1, "00000000:3B:00.0")]
    assert attribute(gpus, KernelLog(readable=False, reason=NOT_READABLE)) == []
    for g in gpus:
        assert g.xid_errors_recent.value is None
        assert g.xid_errors_recent.reason == NOT_READABLE


# --------------------------------------------------------------------------------------------
# The scan


def _kmsg(tmp_path: Path, lines: list[str]) -> Roots:
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "kmsg").write_text("".join(f"{line}\n" for line in lines))
    return Roots(dev=dev)


def test_scan_puts_xids_on_the_gpus_with_findings(tmp_path: Path) -> None:
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.roots = _kmsg(
        tmp_path,
        [
            "4,1,1,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.",
            "4,2,2,-;NVRM: Xid (PCI:0000:18:00): 31, pid=99, name=python, Ch 00000008",
        ],
    )
    options.targets["nvml"] = f"{T}:nvml_two_h100"  # bus ids 17:00.0 and 18:00.0
    profile = run_scan(options)
    runs = {r.name: r for r in profile.diagnostics.probes}
    assert runs["nvml"].status == ProbeStatus.OK, runs["nvml"].message
    assert runs["xid"].status == ProbeStatus.OK
    assert [g.xid_errors_recent.value for g in profile.gpus[:2]] == [[], [31, 79]]
    findings = {f.id: f for f in profile.findings}
    assert findings["gpu-xid-79"].severity == "error"
    assert "GPU 1" in findings["gpu-xid-79"].detail
    assert "fallen off the bus" in findings["gpu-xid-79"].title
    assert findings["gpu-xid-31"].severity == "info"


def test_scan_with_an_unreadable_log_marks_the_probe_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        xid, "read_kernel_log", lambda *_a, **_k: KernelLog(readable=False, reason=NOT_READABLE)
    )
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.targets["nvml"] = f"{T}:nvml_two_h100"
    profile = run_scan(options)
    run = {r.name: r for r in profile.diagnostics.probes}["xid"]
    assert run.status == ProbeStatus.PARTIAL and run.message == NOT_READABLE
    assert [g.xid_errors_recent.reason for g in profile.gpus[:2]] == [NOT_READABLE] * 2
    # The profile says so in a finding too: information, never named gpu-xid-* (the fleet
    # holds back hosts with gpu-xid-* findings above info; this one says nothing of health).
    (finding,) = [f for f in profile.findings if "xid" in f.id]
    assert finding.id == "xid-log-unreadable" and finding.severity == "info"
    assert finding.title == "Xid errors could not be read here"
    assert "GPU 0, GPU 1" in finding.detail and "permission denied" in finding.detail


@pytest.mark.parametrize(
    ("error", "container", "expected_reason", "expected_fix"),
    [
        (errno.EPERM, "kubernetes", "permission denied", "mount the node's /dev/kmsg"),
        (errno.EACCES, "none", "permission denied", "scan as root"),
        (errno.ENOENT, "docker", "no ", "CAP_SYSLOG"),
        (errno.EIO, "none", "Input/output error", "kernel.dmesg_restrict=0"),
    ],
)
def test_every_unreadable_log_gives_one_info_finding(
    error: int, container: str, expected_reason: str, expected_fix: str
) -> None:
    from hwadvisor.model.profile import PlatformInfo, Profile, ToolInfo
    from hwadvisor.readiness import assess

    reason = xid._why_not(OSError(error, os.strerror(error)), Path("/dev/kmsg"))
    gpus = [gpu(0, "00000000:17:00.0"), gpu(1, "00000000:3B:00.0")]
    attribute(gpus, KernelLog(readable=False, reason=reason))
    profile = Profile(
        tool=ToolInfo(version="t"),
        created_utc="2026-01-01T00:00:00Z",
        gpus=gpus,
        platform=PlatformInfo(container=fact(container, Source.ENV)),
    )
    findings = [f for f in assess(profile) if "xid" in f.id]
    assert [(f.id, f.severity) for f in findings] == [("xid-log-unreadable", "info")]
    assert expected_reason in findings[0].detail
    assert expected_fix in findings[0].fix


def test_no_unreadable_finding_when_the_log_was_read_or_never_asked() -> None:
    from hwadvisor.model.profile import Profile, ToolInfo
    from hwadvisor.readiness import assess

    def ids(gpus: list[GpuInfo]) -> list[str]:
        profile = Profile(tool=ToolInfo(version="t"), created_utc="2026-01-01T00:00:00Z", gpus=gpus)
        return [f.id for f in assess(profile) if "xid" in f.id]

    read = [gpu(0, "00000000:17:00.0"), gpu(1, None)]  # one read, one without a bus id
    attribute(read, read_kernel_log(Roots(dev=KMSG / "dev")))
    assert ids(read) == []
    assert ids([gpu(0, "00000000:17:00.0")]) == []  # the probe never ran: "not probed"
    smi = gpu(0, "00000000:17:00.0")  # an nvidia-smi import: Xid unknown from another source
    smi.xid_errors_recent = fact(None, Source.NVIDIA_SMI, "nvidia-smi does not show Xid errors")
    assert ids([smi]) == []


def test_scan_with_xids_for_a_gpu_nvml_does_not_list(tmp_path: Path) -> None:
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.roots = _kmsg(tmp_path, ["NVRM: Xid (PCI:0000:c1:00): 79, pid=1, GPU has fallen off"])
    options.targets["nvml"] = f"{T}:nvml_two_h100"
    profile = run_scan(options)
    run = {r.name: r for r in profile.diagnostics.probes}["xid"]
    assert run.status == ProbeStatus.PARTIAL
    assert run.message == "Xid 79 at PCI 0000:c1:00: no GPU in this profile has that bus id"


def test_a_broken_xid_probe_is_recorded_and_the_scan_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_a: Any, **_k: Any) -> KernelLog:
        raise RuntimeError("kmsg exploded")

    monkeypatch.setattr(xid, "read_kernel_log", broken)
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.targets["nvml"] = f"{T}:nvml_two_h100"
    profile = run_scan(options)
    run = {r.name: r for r in profile.diagnostics.probes}["xid"]
    assert run.status == ProbeStatus.FAILED and "kmsg exploded" in (run.message or "")
    assert profile.gpus[0].xid_errors_recent.reason == "not probed"
    assert profile.gpus[0].name.value == "NVIDIA H100 80GB HBM3"


def test_no_nvidia_gpu_skips_the_kernel_log(tmp_path: Path) -> None:
    options = ScanOptions(out_dir=tmp_path, bench=False)
    options.targets["nvml"] = f"{T}:garbage"
    profile = run_scan(options)
    if any(g.vendor == "nvidia" for g in profile.gpus):
        pytest.skip("torch reports an NVIDIA GPU on this machine")
    run = {r.name: r for r in profile.diagnostics.probes}["xid"]
    assert run.status == ProbeStatus.SKIPPED and run.message == "no NVIDIA GPU"
