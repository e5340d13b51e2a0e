"""The scan: run every probe (concurrently, the risky ones isolated), assemble the profile.

The pipeline never prints. It reports progress through a callback, and returns a
:class:`~hwadvisor.model.profile.Profile` with a diagnostics entry for every probe.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hwadvisor import __version__
from hwadvisor.catalog.identify import identify_gpus
from hwadvisor.isolation import ChildResult, kill_all_children, run_isolated
from hwadvisor.model.bench import Benchmarks, BenchStatus
from hwadvisor.model.profile import (
    CpuInfo,
    Diagnostics,
    HostIdentity,
    MemoryInfo,
    NetworkInfo,
    NvmlInfo,
    NvmlStatus,
    PlatformInfo,
    ProbeRun,
    ProbeStatus,
    Profile,
    StorageInfo,
    SystemInfo,
    ToolInfo,
)
from hwadvisor.probes import cpu as cpu_probe
from hwadvisor.probes import dmi as dmi_probe
from hwadvisor.probes import network as network_probe
from hwadvisor.probes import system as system_probe
from hwadvisor.probes import torch_stack
from hwadvisor.probes import xid as xid_probe
from hwadvisor.probes.amd import AmdReport
from hwadvisor.probes.nvml import NvmlReport
from hwadvisor.probes.roots import Roots
from hwadvisor.probes.torch_stack import TorchReport
from hwadvisor.readiness import assess

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ProbeSpec:
    """A probe as the progress display knows it."""

    name: str
    title: str


PROBES: tuple[ProbeSpec, ...] = (
    ProbeSpec("platform", "Platform, container, PCI devices"),
    ProbeSpec("host", "Host identity"),
    ProbeSpec("system", "System board: vendor, product, BIOS (DMI)"),
    ProbeSpec("memory", "Memory"),
    ProbeSpec("storage", "Disk space"),
    ProbeSpec("network", "Network: interfaces, InfiniBand/RoCE ports"),
    ProbeSpec("cpu", "CPU: cores, ISA, caches, quota"),
    ProbeSpec("cpuinfo", "CPU details (py-cpuinfo)"),
    ProbeSpec("nvml", "NVIDIA GPUs (NVML)"),
    ProbeSpec("amdsmi", "AMD GPUs (amdsmi)"),
    ProbeSpec("xid", "GPU Xid errors (kernel log)"),
    ProbeSpec("torch", "PyTorch and CUDA readiness"),
    ProbeSpec("benchmarks", "Microbenchmarks"),
)


@dataclass(frozen=True)
class ProbeEvent:
    """Progress: a probe started (``status`` None) or finished."""

    name: str
    title: str
    status: ProbeStatus | None = None
    seconds: float = 0.0
    message: str | None = None


ProgressCallback = Callable[[ProbeEvent], None]


@dataclass
class ScanOptions:
    out_dir: Path = Path("reports")
    bench: bool = True
    """Run the microbenchmarks after detection."""
    budget_s: float | None = None
    """Total measurement budget in seconds; None: the default per CPU and per GPU."""
    bench_target: str | None = None
    """The benchmark child's entry point, replaceable by tests."""
    roots: Roots = field(default_factory=lambda: Roots.live(os.environ))
    """Where the filesystem probes look; live, with ``HWADVISOR_HOST_ROOT`` as the node's root."""
    env: Mapping[str, str] | None = None
    torch_python: str | None = None
    """Another interpreter (a command line) whose torch the torch probe reads (``scan
    --torch-python``); None: hwadvisor's own, in a spawned child."""
    #: Per isolated probe. Importing torch from a cold disk can take tens of seconds.
    timeouts_s: dict[str, float] = field(
        default_factory=lambda: {"cpuinfo": 10.0, "nvml": 15.0, "amdsmi": 15.0, "torch": 60.0}
    )
    #: Child targets, replaceable by tests (e.g. with one that hangs).
    targets: dict[str, str] = field(
        default_factory=lambda: {
            "cpuinfo": "hwadvisor.probes.cpu:cpuinfo_child",
            "nvml": "hwadvisor.probes.nvml:nvml_child",
            "amdsmi": "hwadvisor.probes.amd:amdsmi_child",
            "torch": "hwadvisor.probes.torch_stack:torch_child",
        }
    )


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Runner:
    """Runs probes, times them, and records one ProbeRun each."""

    def __init__(self, progress: ProgressCallback) -> None:
        self.progress = progress
        self.runs: dict[str, ProbeRun] = {}
        self._titles = {spec.name: spec.title for spec in PROBES}

    def started(self, name: str) -> float:
        self.progress(ProbeEvent(name, self._titles.get(name, name)))
        return time.monotonic()

    def finished(self, name: str, start: float, status: ProbeStatus, message: str | None) -> None:
        run = ProbeRun(
            name=name, status=status, seconds=round(time.monotonic() - start, 3), message=message
        )
        self.runs[name] = run
        self.progress(ProbeEvent(name, self._titles.get(name, name), status, run.seconds, message))

    def skipped(self, name: str, why: str) -> None:
        self.finished(name, time.monotonic(), ProbeStatus.SKIPPED, why)

    def in_process(self, name: str, func: Callable[[], M], fallback: M) -> M:
        """Run a fast probe here. Probes do not raise for what the machine does; a bug in one
        is recorded against that probe and the scan goes on with its section unknown."""
        start = self.started(name)
        try:
            result = func()
        except Exception as exc:  # noqa: BLE001 - one broken probe must not end the scan
            self.finished(name, start, ProbeStatus.FAILED, f"{type(exc).__name__}: {exc}")
            return fallback
        self.finished(name, start, ProbeStatus.OK, None)
        return result

    def isolated(
        self, name: str, target: str, timeout_s: float, python: str | None = None
    ) -> ChildResult:
        start = self.started(name)
        if python is None:
            result = run_isolated(target, timeout_s=timeout_s)
        else:
            result = torch_stack.run_torch_python(python, timeout_s)
        if result.status == "ok":
            self.finished(name, start, ProbeStatus.OK, python and f"read with {python!r}")
        elif result.status == "timeout":
            self.finished(name, start, ProbeStatus.TIMEOUT, result.error)
        else:
            self.finished(name, start, ProbeStatus.FAILED, result.error)
        return result

    def partial(self, name: str, message: str) -> None:
        """The probe ran, but part of what it looks at could not be read."""
        run = self.runs[name]
        run.status = ProbeStatus.PARTIAL
        run.message = message

    def parse(self, name: str, result: ChildResult, model: type[M]) -> M | None:
        """Validate a child's JSON as ``model``; a malformed answer marks the probe failed."""
        if result.status != "ok":
            return None
        try:
            return model.model_validate(result.value)
        except ValidationError as exc:
            run = self.runs[name]
            run.status = ProbeStatus.FAILED
            run.message = f"malformed result: {exc.error_count()} validation errors"
            return None


def run_scan(options: ScanOptions, progress: ProgressCallback | None = None) -> Profile:
    """Detect everything hwadvisor knows how to detect on this machine."""
    started = time.monotonic()
    runner = _Runner(progress or (lambda _event: None))
    roots = options.roots
    created = utc_now()

    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="probe")
    try:
        # Slow children first, so that they run while the quick probes do.
        children: dict[str, Future[ChildResult]] = {}
        for name in ("torch", "nvml"):
            python = options.torch_python if name == "torch" else None
            children[name] = pool.submit(
                runner.isolated, name, options.targets[name], options.timeouts_s[name], python
            )
        if cpu_probe.needs_cpuinfo(roots):
            children["cpuinfo"] = pool.submit(
                runner.isolated,
                "cpuinfo",
                options.targets["cpuinfo"],
                options.timeouts_s["cpuinfo"],
            )
        else:
            runner.skipped("cpuinfo", "not needed: /proc/cpuinfo and sysfs answered")

        platform = runner.in_process(
            "platform",
            lambda: system_probe.probe_platform(roots, env=options.env),
            PlatformInfo(),
        )
        if any(dev.vendor == "amd" for dev in platform.pci_display_devices):
            children["amdsmi"] = pool.submit(
                runner.isolated,
                "amdsmi",
                options.targets["amdsmi"],
                options.timeouts_s["amdsmi"],
            )
        else:
            runner.skipped("amdsmi", "no AMD GPU on the PCI bus")
        host = runner.in_process("host", lambda: system_probe.probe_host(roots), HostIdentity())
        system = runner.in_process("system", lambda: dmi_probe.probe_dmi(roots), SystemInfo())
        memory = runner.in_process("memory", lambda: system_probe.probe_memory(roots), MemoryInfo())
        storage = runner.in_process(
            "storage", lambda: system_probe.probe_storage(options.out_dir), StorageInfo()
        )
        network = runner.in_process(
            "network", lambda: network_probe.probe_network(roots), NetworkInfo()
        )
        if network.reason and runner.runs["network"].status is ProbeStatus.OK:
            runner.partial("network", network.reason)

        cpuinfo_raw: dict[str, Any] | None = None
        cpuinfo_error: str | None = None
        if "cpuinfo" in children:
            cpu_result = children["cpuinfo"].result()
            if cpu_result.status == "ok" and isinstance(cpu_result.value, dict):
                cpuinfo_raw = cpu_result.value
            else:
                cpuinfo_error = f"py-cpuinfo {cpu_result.status}: {cpu_result.error}"
        cpu = runner.in_process(
            "cpu",
            lambda: cpu_probe.probe_cpu(
                roots, cpuinfo_raw=cpuinfo_raw, cpuinfo_error=cpuinfo_error
            ),
            CpuInfo(),
        )
        results = {name: future.result() for name, future in children.items()}
    except BaseException:
        # Ctrl-C (or anything else) while children run: they live in their own session and
        # would not see the terminal's SIGINT. Kill them first, then let the pool go without
        # waiting: its threads end as soon as their child is dead, not at the probe's limit.
        kill_all_children()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)

    profile = Profile(
        tool=ToolInfo(version=__version__),
        created_utc=created,
        host=host,
        system=system,
        cpu=cpu,
        memory=memory,
        storage=storage,
        platform=platform,
        network=network,
    )
    # Vendor libraries first: their records are fuller than torch's view of the same device.
    _merge_nvml(profile, runner, results["nvml"])
    if "amdsmi" in results:
        _merge_amd(profile, runner, results["amdsmi"])
    _merge_torch(profile, runner, results["torch"], options.torch_python)
    _xid_errors(profile, runner, roots)
    identify_gpus(profile)
    profile.findings = assess(profile)
    if options.bench:
        _benchmark(profile, options, runner)
    profile.diagnostics = Diagnostics(
        probes=[runner.runs[spec.name] for spec in PROBES if spec.name in runner.runs],
        duration_seconds=round(time.monotonic() - started, 3),
    )
    return profile


def _benchmark(profile: Profile, options: ScanOptions, runner: _Runner) -> None:
    """Measure, after detection, so that the probes do not disturb the figures."""
    from hwadvisor import benchrun

    start = runner.started("benchmarks")
    if options.torch_python is not None and importlib.util.find_spec("torch") is None:
        # The torch facts came from another interpreter; the benchmarks run in this one.
        why = "this Python has no torch (the PyTorch facts came from --torch-python)"
        profile.benchmarks = Benchmarks(
            status=BenchStatus.SKIPPED,
            message=f"{why}: the benchmarks run with hwadvisor's own Python only",
        )
        runner.finished("benchmarks", start, ProbeStatus.SKIPPED, why)
        return
    if not profile.frameworks.torch.installed or profile.frameworks.torch.import_error:
        why = profile.frameworks.torch.import_error or "torch is not installed"
        profile.benchmarks = Benchmarks(
            status=BenchStatus.SKIPPED,
            message=f"{why}: nothing to measure with (install PyTorch, then scan again)",
        )
        runner.finished("benchmarks", start, ProbeStatus.SKIPPED, why)
        return

    def on_case(event: benchrun.CaseEvent) -> None:
        status = None if event.status is None else ProbeStatus(event.status.value)
        runner.progress(ProbeEvent(event.id, event.title, status, event.seconds))

    plan = benchrun.plan_cases(profile, options.budget_s)
    bench = benchrun.run_plan(plan, on_case, target=options.bench_target or benchrun.TARGET)
    benchrun.judge(bench, profile)
    profile.benchmarks = bench
    bad = [m for m in bench.measurements if m.status in (BenchStatus.FAILED, BenchStatus.TIMEOUT)]
    if bad:
        names = ", ".join(f"{m.device} {m.case} {m.precision or ''}".strip() for m in bad)
        runner.finished("benchmarks", start, ProbeStatus.PARTIAL, f"did not complete: {names}")
    else:
        runner.finished("benchmarks", start, ProbeStatus.OK, None)


def _merge_nvml(profile: Profile, runner: _Runner, result: ChildResult) -> None:
    report = runner.parse("nvml", result, NvmlReport)
    if report is None:
        status = NvmlStatus.TIMEOUT if result.status == "timeout" else NvmlStatus.ERROR
        hint = (
            "the NVIDIA driver did not answer in time (a hung GPU or driver): check `nvidia-smi`"
            " and the kernel log; continuing without NVIDIA GPU details"
            if status is NvmlStatus.TIMEOUT
            else f"NVML probe failed ({runner.runs['nvml'].message}); continuing without it"
        )
        profile.nvml = NvmlInfo(status=status, message=hint)
        return
    profile.nvml = report.nvml
    profile.gpus.extend(report.gpus)
    profile.gpu_topology = report.topology
    lost = [str(gpu.index) for gpu in report.gpus if gpu.lost]
    if lost:
        runner.partial("nvml", f"GPU {', '.join(lost)} lost (fell off the bus)")


def _xid_errors(profile: Profile, runner: _Runner, roots: Roots) -> None:
    """The Xid errors the kernel log holds for each NVIDIA GPU (quick: a bounded read)."""
    if not any(gpu.vendor == "nvidia" for gpu in profile.gpus):
        runner.skipped("xid", "no NVIDIA GPU")
        return
    log = runner.in_process("xid", lambda: xid_probe.read_kernel_log(roots), xid_probe.KernelLog())
    if runner.runs["xid"].status is not ProbeStatus.OK:
        return  # the probe broke: the GPUs' Xid facts stay "not probed"
    unmatched = xid_probe.attribute(profile.gpus, log)
    if not log.readable:
        runner.partial("xid", log.reason or "kernel log not read")
    elif unmatched:
        seen = sorted({f"Xid {e.code} at PCI {e.bus}" for e in unmatched})
        runner.partial("xid", f"{', '.join(seen[:8])}: no GPU in this profile has that bus id")
    elif log.reason:
        runner.partial("xid", log.reason)


def _merge_torch(
    profile: Profile, runner: _Runner, result: ChildResult, python: str | None = None
) -> None:
    report = runner.parse("torch", result, TorchReport)
    if report is None:
        if python is not None:
            # The other interpreter did not answer: torch is neither there nor absent.
            why = runner.runs["torch"].message or f"torch probe {result.status}"
            profile.frameworks.torch = torch_stack.unknown_torch(why)
        return
    profile.frameworks.torch = report.torch
    if report.torch.import_error:
        runner.partial("torch", f"import torch failed: {report.torch.import_error}")
    _add_accelerators(profile, report.accelerators)


def _merge_amd(profile: Profile, runner: _Runner, result: ChildResult) -> None:
    report = runner.parse("amdsmi", result, AmdReport)
    if report is not None:
        _add_accelerators(profile, report.gpus)


def _add_accelerators(profile: Profile, gpus: list[Any]) -> None:
    """Add GPUs another source did not already report (matched by PCI bus id, else name+index)."""

    def key(gpu: Any) -> tuple[str, str]:
        bus = gpu.pci_bus_id.value
        return (gpu.vendor, bus.lower()[-12:] if bus else f"{gpu.backend}:{gpu.index}")

    seen = {key(gpu) for gpu in profile.gpus}
    for gpu in gpus:
        if key(gpu) not in seen:
            profile.gpus.append(gpu)
            seen.add(key(gpu))


def is_degraded(profile: Profile) -> bool:
    """A probe or a benchmark case failed or timed out: the scan finished, but the profile is
    less than it could be."""
    bad_probe = any(
        run.status in (ProbeStatus.FAILED, ProbeStatus.TIMEOUT)
        for run in profile.diagnostics.probes
    )
    bench = profile.benchmarks
    bad_case = bench is not None and any(
        m.status in (BenchStatus.FAILED, BenchStatus.TIMEOUT) for m in bench.measurements
    )
    return bad_probe or bad_case
