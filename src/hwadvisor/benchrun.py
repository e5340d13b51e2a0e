"""The benchmark phase: plan the cases from the profile, run them in a child, attach the peaks.

Cases run one after another in one child process (torch is imported once). Results stream back
as each case finishes; a case that hangs or runs far past its share is stopped with the child,
recorded as ``timeout``, and a new child runs the cases left. The whole phase never prints.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import psutil
from pydantic import ValidationError

from hwadvisor.catalog.peaks import (
    GpuPeak,
    cpu_peak_from_profile,
    efficiency,
    find_gpu_peak,
    peak_for,
)
from hwadvisor.isolation import run_isolated
from hwadvisor.model.bench import (
    AllReduce,
    BenchDevice,
    Benchmarks,
    BenchStatus,
    CpuLoad,
    Crossover,
    CrossoverPoint,
    Disturbance,
    Measurement,
    PeerCopy,
    TelemetrySample,
    TrainingSpeedup,
)
from hwadvisor.model.profile import GpuInfo, Profile
from hwadvisor.probes.bench.gpu import crossover_n
from hwadvisor.probes.bench.harness import LoadMonitor, own_cpu_seconds
from hwadvisor.probes.bench.plan import BenchPlan, CaseDef, CaseSpec, declared, failed
from hwadvisor.probes.bench.timing import split_budget

#: Share of the CPUs other processes may use while we measure before the figures are flagged.
BUSY_THRESHOLD = 0.10

#: Time to start a child and import torch before the first case (cold disks are slow).
STARTUP_LIMIT_S = 90.0
#: A GPU's first case also pays CUDA context creation, library loading and PTX JIT.
FIRST_CUDA_CASE_GRACE_S = 120.0

TARGET = "hwadvisor.probes.bench.plan:run_plan"

#: Share of the CPU cases' time that second runs after a passing load may take (enough for
#: the longest case, the training step, to run twice).
RETRY_SHARE = 0.35

_PRECISION_TITLE = {
    "fp32": "FP32",
    "tf32": "TF32",
    "fp16": "FP16",
    "bf16": "BF16",
    "fp8": "FP8",
    "amp": "AMP",
}


@dataclass(frozen=True)
class CaseEvent:
    """Progress: a case started (``status`` None) or finished."""

    id: str
    title: str
    status: BenchStatus | None = None
    seconds: float = 0.0


def _title(device: str, case: str, precision: str | None, variant: str | None) -> str:
    where = {"cpu": "CPU", "mps": "Apple GPU"}.get(device, f"GPU {device.split(':')[-1]}")
    parts = [where, case.replace("_", " ")]
    if precision:
        parts.append(_PRECISION_TITLE.get(precision, precision))
    if variant:
        parts.append(variant)
    return " ".join(parts)


def _native(isa: list[str]) -> dict[str, bool]:
    return {
        "bf16": bool({"avx512_bf16", "amx_bf16", "bf16"} & set(isa)),
        "fp16": bool({"avx512_fp16", "amx_fp16", "asimdhp"} & set(isa)),
    }


def gpu_devices(profile: Profile) -> list[str]:
    """The GPUs torch can drive (CUDA or ROCm), as ``cuda:N``."""
    torch = profile.frameworks.torch
    if not torch.cuda_available.value:
        return []
    return [f"cuda:{i}" for i in range(torch.device_count.value or 0)]


def _planned(defs: list[CaseDef], profile: Profile, gpus: list[str], mps: bool) -> list[CaseDef]:
    """The declared cases this machine runs, with the CPU's native precisions filled in."""
    native = _native(profile.cpu.isa_features.value or [])
    chosen: list[CaseDef] = []
    for d in defs:
        if (d.device == "gpu" and not gpus) or (d.device == "mps" and not mps):
            continue
        if d.needs_gpu and not gpus:
            continue
        if d.device == "cpu" and d.precision in native:
            has = native[d.precision]
            share = d.share if has or d.emulated_share is None else d.emulated_share
            d = replace(d, share=share, params={**d.params, "native": has})
        chosen.append(d)
    return chosen


def plan_cases(profile: Profile, budget_s: float | None = None) -> BenchPlan:
    """The cases for this machine (as the case modules declare them), each with its share of
    the budget.

    ``budget_s`` is the total measurement budget; by default about 5.5 s for the CPU and 15 s
    per GPU. An explicit budget is divided in the same proportions.
    """
    cpu = profile.cpu
    threads = cpu.usable_cpus.value or cpu.logical_cores.value or os.cpu_count() or 1
    gpus = gpu_devices(profile)
    mps = bool(profile.frameworks.torch.mps_available.value)
    defs = _planned(declared(), profile, gpus, mps)
    by_device = {kind: [d for d in defs if d.device == kind] for kind in ("cpu", "gpu", "mps")}
    totals = {kind: sum(d.share for d in found) for kind, found in by_device.items()}
    default_total = totals["cpu"] + totals["gpu"] * len(gpus) + totals["mps"]
    scale = (budget_s / default_total) if budget_s else 1.0
    cases: list[CaseSpec] = []

    def add(device: str, spec: list[CaseDef], budget: float) -> None:
        keys = [f"{device}.{d.case}.{d.precision or '-'}.{d.variant or '-'}" for d in spec]
        shares = split_budget(budget, dict(zip(keys, (d.share for d in spec), strict=True)))
        for key, d in zip(keys, spec, strict=True):
            cases.append(
                CaseSpec(
                    id=key.replace(".-", ""),
                    title=_title(device, d.case, d.precision, d.variant),
                    kind=d.kind,
                    case=d.case,
                    device=device,
                    precision=d.precision,
                    variant=d.variant,
                    seconds=round(shares[key], 3),
                    params=dict(d.params),
                )
            )

    add("cpu", by_device["cpu"], totals["cpu"] * scale)
    for device in gpus:
        add(device, by_device["gpu"], totals["gpu"] * scale)
    if mps:
        add("mps", by_device["mps"], totals["mps"] * scale)
    if len(gpus) >= 2:
        cases.append(
            CaseSpec(
                id="gpus.p2p",
                title="GPU peer-to-peer copies",
                kind="gpu_p2p",
                case="p2p",
                device="cuda:0",
                seconds=2.0 * scale,
            )
        )
        cases.append(
            CaseSpec(
                id="gpus.all_reduce",
                title="NCCL all-reduce",
                kind="all_reduce",
                case="all_reduce",
                device="cuda:0",
                seconds=10.0 * scale,
                params={"backend": "nccl", "world_size": len(gpus)},
            )
        )
    retry = round(RETRY_SHARE * totals["cpu"] * scale, 3)
    return BenchPlan(threads=threads, cases=cases, retry_budget_s=retry)


def peak_kind(m: Measurement) -> str | None:
    """Which peak a measurement is compared with, as its case declares (None: no peak)."""
    device = "cpu" if m.device == "cpu" else "mps" if m.device == "mps" else "gpu"
    for d in declared():
        if (d.device, d.case, d.precision, d.variant) == (device, m.case, m.precision, m.variant):
            return d.peak
    return None


def child_env(threads: int) -> dict[str, str]:
    """The benchmark child's environment: thread pools sized to the usable CPUs, and glibc's
    allocator told to keep large blocks (page faults on fresh conv outputs cost ±30 %)."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    env.setdefault("MALLOC_MMAP_THRESHOLD_", str(32 * 1024 * 1024))
    env.setdefault("MALLOC_TRIM_THRESHOLD_", str(1024 * 1024 * 1024))
    return env


@dataclass
class _Collected:
    measurements: list[Measurement] = field(default_factory=list)
    telemetry: list[TelemetrySample] = field(default_factory=list)
    crossovers: list[Crossover] = field(default_factory=list)
    peer_copies: list[PeerCopy] = field(default_factory=list)
    all_reduce: AllReduce | None = None
    load: CpuLoad | None = None
    """The current child's load report."""
    earlier_load: CpuLoad | None = None
    """What the children before it reported (a hung case restarts the child)."""
    devices: dict[str, BenchDevice] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def add(self, kind: str, data: Any) -> None:
        try:
            if kind == "measurement":
                self.measurements.append(Measurement.model_validate(data))
            elif kind == "telemetry":
                self.telemetry.append(TelemetrySample.model_validate(data))
            elif kind == "crossover":
                self.crossovers.append(Crossover.model_validate(data))
            elif kind == "peer_copy":
                self.peer_copies.append(PeerCopy.model_validate(data))
            elif kind == "all_reduce":
                self.all_reduce = AllReduce.model_validate(data)
            elif kind == "cpu_load":
                self.load = CpuLoad.model_validate(data)  # cumulative within one child
            elif kind == "device":
                device = BenchDevice.model_validate(data)
                self.devices.setdefault(device.device, device)
        except ValidationError as exc:
            self.errors.append(f"malformed {kind} result: {exc.error_count()} problem(s)")

    def next_child(self) -> None:
        if self.load is not None:
            self.earlier_load = _merge_load(self.earlier_load, self.load)
        self.load = None

    def cpu_load(self) -> CpuLoad | None:
        if self.load is None:
            return self.earlier_load
        return _merge_load(self.earlier_load, self.load)


def _limit(case: CaseSpec, first_on_device: bool) -> float:
    limit = max(4.0 * case.seconds, case.seconds + 10.0)
    if case.device.startswith("cuda") and first_on_device:
        limit += FIRST_CUDA_CASE_GRACE_S
    return limit


#: Which status a case shows when its results disagree (a failed pair among ok ones: failed).
_SEVERITY = {
    BenchStatus.OK: 0,
    BenchStatus.SKIPPED: 1,
    BenchStatus.FAILED: 2,
    BenchStatus.TIMEOUT: 3,
}
_STATUS_VALUES = {status.value for status in BenchStatus}


class _Follower:
    """Follows one child's event stream: progress, results, and the limit of the case running."""

    def __init__(
        self,
        by_id: dict[str, CaseSpec],
        got: _Collected,
        report: Callable[[CaseEvent], None],
        idle_limit_s: float,
    ) -> None:
        self.by_id, self.got, self.report = by_id, got, report
        self.idle_limit_s = idle_limit_s
        self.current: CaseSpec | None = None
        self.since = 0.0
        self.worst: dict[str, BenchStatus] = {}
        self.seen_devices: set[str] = set()  # CUDA is initialised once per child

    def __call__(self, item: Any) -> float | None:
        if not isinstance(item, dict):
            return None
        case = self.by_id.get(str(item.get("id")))
        event = item.get("event")
        if case is None:
            return None
        if event == "start":
            self.current, self.since = case, time.monotonic()
            self.report(CaseEvent(case.id, case.title))
            first = case.device not in self.seen_devices
            self.seen_devices.add(case.device)
            return _limit(case, first)
        if event == "result":
            data = item.get("data")
            self.got.add(str(item.get("kind")), data)
            if isinstance(data, dict) and data.get("status") in _STATUS_VALUES:
                status = BenchStatus(data["status"])
                if _SEVERITY[status] > _SEVERITY[self.worst.get(case.id, BenchStatus.OK)]:
                    self.worst[case.id] = status
            return None
        if event == "end":
            self.got.ended.add(case.id)
            mine = [
                m
                for m in self.got.measurements
                if (m.case, m.device, m.precision, m.variant)
                == (case.case, case.device, case.precision, case.variant)
            ]
            status = mine[-1].status if mine else BenchStatus.OK
            self.report(CaseEvent(case.id, case.title, status, time.monotonic() - self.since))
            self.current = None
            return self.idle_limit_s  # until the next case starts
        return None


def run_plan(
    plan: BenchPlan,
    progress: Callable[[CaseEvent], None] | None = None,
    *,
    target: str = TARGET,
    startup_limit_s: float = STARTUP_LIMIT_S,
) -> Benchmarks:
    """Run ``plan`` in child processes and collect the results; a hung case costs only itself."""
    report = progress or (lambda _event: None)
    started = time.monotonic()
    by_id = {case.id: case for case in plan.cases}
    got = _Collected()
    remaining = list(plan.cases)
    env = child_env(plan.threads)
    load = phase_load()
    while remaining:
        follower = _Follower(by_id, got, report, idle_limit_s=startup_limit_s / 3)
        sub = BenchPlan(threads=plan.threads, seed=plan.seed, cases=remaining)
        result = run_isolated(
            target,
            {"plan": sub.model_dump(mode="json")},
            timeout_s=startup_limit_s,
            env=env,
            on_item=follower,
        )
        left = [case for case in remaining if case.id not in got.ended]
        hung = follower.current
        if result.status == "timeout" and hung is not None:
            message = (
                f"stopped after {time.monotonic() - follower.since:.0f} s (share "
                f"{hung.seconds:g} s): the case hung or ran far too long"
            )
            got.measurements.append(failed(hung, message, BenchStatus.TIMEOUT))
            report(CaseEvent(hung.id, hung.title, BenchStatus.TIMEOUT))
            got.ended.add(hung.id)
            remaining = [case for case in left if case.id != hung.id]
            got.next_child()
            continue  # a fresh child for the cases left
        if result.status != "ok":
            status = BenchStatus.TIMEOUT if result.status == "timeout" else BenchStatus.FAILED
            for case in left:
                message = f"benchmark child {status.value}: {result.error}"
                got.measurements.append(failed(case, message, status))
                report(CaseEvent(case.id, case.title, status))
        break
    bench = Benchmarks(
        budget_seconds=round(sum(case.seconds for case in plan.cases), 3),
        duration_seconds=round(time.monotonic() - started, 3),
        threads=plan.threads,
        measurements=got.measurements,
        telemetry=got.telemetry,
        peer_copies=got.peer_copies,
        all_reduce=got.all_reduce,
        crossover=_merge_crossovers(got.crossovers),
        training_speedup=_speedups(got.measurements),
        load=got.cpu_load(),
        devices=[got.devices[d] for d in sorted(got.devices)],
    )
    bench.other_cpu_load = _share(load.others())
    notes = list(got.errors)
    busy = bench.other_cpu_load is not None and bench.other_cpu_load > BUSY_THRESHOLD
    for m in bench.measurements:
        if m.device == "cpu" and m.status == BenchStatus.OK and m.other_cpus is None and busy:
            # No load figure of its own (the child could not read the CPU times): the phase's.
            m.disturbances.append(Disturbance.CPU_CONTENDED)
            m.disturbance_note = (
                f"other processes used {bench.other_cpu_load:.0%} of the CPUs during the "
                "benchmarks: the figure is likely low"
            )
    if notes:
        bench.message = "; ".join(notes)
    return bench


def judge(bench: Benchmarks, profile: Profile, env: dict[str, str] | None = None) -> None:
    """After the run: peaks and efficiencies, the GPU figures' disturbances (other processes,
    throttling, a shared GPU), and one sentence on every figure that is not this machine's."""
    from hwadvisor.benchflags import flag_gpu_measurements

    attach_peaks(bench, profile)
    flag_gpu_measurements(bench, profile, env)
    summary = disturbance_summary(bench)
    if summary:
        bench.message = f"{bench.message}; {summary}" if bench.message else summary


def _merge_load(old: CpuLoad | None, new: CpuLoad) -> CpuLoad:
    """The child's latest load report; a restarted child's keeps the first child's start."""
    if old is None:
        return new
    return new.model_copy(
        update={
            "other_cpus_before": old.other_cpus_before,
            "threads_chosen": old.threads_chosen,
            "note": old.note,
            "waited_seconds": round(old.waited_seconds + new.waited_seconds, 3),
            "retried": [*old.retried, *(r for r in new.retried if r not in old.retried)],
        }
    )


def disturbance_summary(bench: Benchmarks) -> str | None:
    """One sentence on the figures that are not this machine's capability, and what to do."""
    cpu = [m for m in bench.measurements if m.device == "cpu" and m.disturbances]
    gpu = [m for m in bench.measurements if m.device != "cpu" and m.disturbances]
    parts = []
    usable = bench.load.usable_cpus if bench.load else None
    if cpu:
        threads = min((m.threads for m in cpu if m.threads), default=None)
        if all(m.free_cores_only for m in cpu) and threads and usable:
            parts.append(
                f"other processes held some of the CPUs: {len(cpu)} CPU figure(s) were measured "
                f"with {threads} of {usable} threads on the free cores, and the advice scales "
                f"them to {usable}"
            )
        else:
            parts.append(
                f"other processes were using the CPUs: {len(cpu)} CPU figure(s) are not this "
                "machine's capability, and the advice does not use the disturbed ones"
            )
    if gpu:
        kinds = sorted({d.value.replace("_", " ") for m in gpu for d in m.disturbances})
        parts.append(
            f"{len(gpu)} GPU figure(s) were disturbed ({', '.join(kinds)}) and the advice does "
            "not use them"
        )
    if not parts:
        return None
    check = "top and nvidia-smi" if gpu else "top"
    return (
        "; ".join(parts)
        + f". For figures of this machine's own, scan again when it is idle (check with {check})"
    )


def phase_load() -> LoadMonitor:
    """Watches what other processes take of the whole machine while the benchmarks run: its
    busy time less ours and our children's (the benchmark children are reaped by the time it is
    read)."""
    monitor = LoadMonitor(cpus=None, own=lambda: own_cpu_seconds(children=True))
    monitor.start()
    return monitor


def _share(others: float | None) -> float | None:
    """Others' CPUs as a share of all of the machine's CPUs."""
    if others is None:
        return None
    return round(min(1.0, others / (psutil.cpu_count() or 1)), 3)


def _merge_crossovers(found: list[Crossover]) -> list[Crossover]:
    """Join the CPU sweep with each GPU's sweep by n, and find where the GPU starts to win."""
    cpu_points = {p.n: p.cpu_gflops for c in found if c.device == "cpu" for p in c.points}
    merged = []
    for gpu in (c for c in found if c.device != "cpu"):
        points = [
            CrossoverPoint(
                n=p.n,
                cpu_gflops=cpu_points.get(p.n),
                gpu_gflops=p.gpu_gflops,
                gpu_with_transfer_gflops=p.gpu_with_transfer_gflops,
            )
            for p in sorted(gpu.points, key=lambda p: p.n)
        ]
        merged.append(
            Crossover(
                device=gpu.device,
                points=points,
                cpu_faster_below_n=crossover_n(points, "gpu_gflops"),
                cpu_faster_below_n_with_transfer=crossover_n(points, "gpu_with_transfer_gflops"),
                note=gpu.note,
            )
        )
    return merged


def _speedups(measurements: list[Measurement]) -> list[TrainingSpeedup]:
    steps = [m for m in measurements if m.case == "train_step" and m.best and m.status == "ok"]
    cpu = next((m for m in steps if m.device == "cpu"), None)
    if cpu is None or not cpu.best:
        return []
    return [
        TrainingSpeedup(
            device=m.device,
            cpu_samples_per_s=cpu.best,
            gpu_samples_per_s=m.best,
            speedup=round(m.best / cpu.best, 2),
        )
        for m in steps
        if m.device != "cpu" and m.best
    ]


# ------------------------------------------------------------------------------------------
# Peaks and efficiency


_PCIE_GBS_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def attach_peaks(bench: Benchmarks, profile: Profile) -> None:
    """Fill ``peak``, ``efficiency`` and their notes on every measurement, by the peak its case
    declares (:attr:`CaseDef.peak`)."""
    cpu_peak, cpu_basis = cpu_peak_from_profile(profile.cpu)
    nominal_clock = profile.cpu.max_frequency_mhz.value is None
    catalog: dict[str, GpuPeak | None] = {}
    for m in bench.measurements:
        if m.status != BenchStatus.OK or m.best is None:
            continue
        kind = peak_kind(m)
        if m.device == "cpu":
            if kind == "cpu_fp32":
                peak, basis = cpu_peak, cpu_basis
                usable = profile.cpu.usable_cpus.value
                if peak and m.threads and usable and m.threads < usable:
                    # Measured on the free cores only: compared with what those cores can do.
                    peak = peak * m.threads / usable
                    basis = f"{basis}; for the {m.threads} of {usable} CPUs it ran on"
                _set_peak(m, peak, basis, nominal=nominal_clock)
            elif m.case == "train_step":
                m.efficiency_note = "compare samples/s across devices; see the training speedup"
            elif m.case == "triad":
                m.efficiency_note = "no peak: the memory configuration (channels, speed) is unknown"
            else:
                m.efficiency_note = "no peak figure for this precision on CPUs"
            continue
        if kind is None:
            continue
        name, memory, gpu = device_identity(profile, m.device, bench)
        if name is None:
            m.efficiency_note = "no peak: GPU model unknown"
            continue
        if m.device not in catalog:
            catalog[m.device] = find_gpu_peak(name, memory)
        _gpu_peak(m, kind, catalog[m.device], name, gpu)


def _bus(bus_id: str | None) -> str | None:
    return bus_id.lower()[-12:] if bus_id else None


def device_identity(
    profile: Profile, device: str, bench: Benchmarks | None = None
) -> tuple[str | None, int | None, GpuInfo | None]:
    """Name, memory and vendor record of torch's ``cuda:N``: by the UUID or PCI bus id the
    benchmark child recorded, else torch's bus id (torch's numbering follows
    CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, NVML's does not)."""
    index = int(device.split(":")[-1]) if ":" in device else 0
    torch_devices = profile.frameworks.torch.devices
    tdev = next((d for d in torch_devices if d.index == index), None)
    gpu = None
    known = next((d for d in (bench.devices if bench else []) if d.device == device), None)
    if known is not None:
        gpu = next(
            (
                g
                for g in profile.gpus
                if (known.uuid and g.uuid.value == known.uuid)
                or (known.pci_bus_id and _bus(g.pci_bus_id.value) == _bus(known.pci_bus_id))
            ),
            None,
        )
    if gpu is None and tdev is not None and tdev.pci_bus_id.value:
        gpu = next(
            (g for g in profile.gpus if _bus(g.pci_bus_id.value) == _bus(tdev.pci_bus_id.value)),
            None,
        )
    if gpu is None and tdev is None and known is None:
        candidates = [g for g in profile.gpus if not g.lost and g.backend in ("cuda", "rocm")]
        gpu = candidates[index] if index < len(candidates) else None
    name = (
        (gpu.name.value if gpu else None)
        or (known.name if known else None)
        or (tdev.name.value if tdev else None)
    )
    memory = (gpu.vram_total_bytes.value if gpu else None) or (
        tdev.total_memory_bytes.value if tdev else None
    )
    return name, memory, gpu


def _set_peak(m: Measurement, peak: float | None, basis: str, *, nominal: bool) -> None:
    m.peak = round(peak, 1) if peak else None
    m.peak_basis = basis
    if m.case == "train_step":
        # samples/s has no peak of its own; the training FLOP rate is compared in the advice.
        m.peak = None
        m.efficiency_note = "compare samples/s across devices; see the training speedup"
        return
    m.efficiency, m.efficiency_note = efficiency(m.best or 0.0, m.peak, clock_is_nominal=nominal)


def _gpu_peak(
    m: Measurement, kind: str, peak: GpuPeak | None, name: str, gpu: GpuInfo | None
) -> None:
    if kind == "pcie":
        gen = gpu.pcie_generation_max.value if gpu else None
        width = gpu.pcie_width_max.value if gpu else None
        if gen in _PCIE_GBS_PER_LANE and width:
            m.peak = round(_PCIE_GBS_PER_LANE[gen] * width, 1)
            m.peak_basis = f"PCIe gen {gen} x{width}, one direction"
            m.efficiency, m.efficiency_note = efficiency(
                m.best or 0.0, m.peak, clock_is_nominal=False
            )
        else:
            m.efficiency_note = "no peak: PCIe link unknown"
        return
    if peak is None:
        m.efficiency_note = f"no peak: {name!r} is not in the catalog"
        return
    if kind == "gpu_bandwidth":
        value = peak.bandwidth_gbs
    elif kind == "gpu_compute" and m.precision:
        precision = "fp16" if m.precision == "amp" else m.precision
        tflops = peak_for(peak, precision)
        value = tflops * 1000 if tflops else None
    else:
        return
    m.peak = round(value, 1) if value else None
    m.peak_basis = f"{peak.name} ({peak.origin}: {peak.source})"
    m.efficiency, m.efficiency_note = efficiency(m.best or 0.0, m.peak, clock_is_nominal=False)
