"""What a profile's figures may be trusted for: plausibility of facts, which measurements
calibrate an estimate, and which benchmark device measured which GPU."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hwadvisor.model.bench import BenchStatus, Measurement
from hwadvisor.model.facts import Fact
from hwadvisor.model.profile import GpuInfo, Profile

# --------------------------------------------------------------------------------------------
# Plausibility: what a profile says is checked before anything rests on it

#: Bounds outside which a profile's figure is not believed (hand-edited or corrupted files,
#: broken sensors). Wide on purpose: they catch nonsense, never a real machine.
_BYTES_RANGE = (64 * 1024**2, 2**60)  # 64 MiB … 1 EiB of RAM
_VRAM_RANGE = (64 * 1024**2, 16 * 1024**4)  # 64 MiB … 16 TiB on one device
_CPU_RANGE = (1, 100_000)
#: Largest believable benchmark figure per unit, on one device.
_RATE_CAPS = {"GFLOP/s": 1e8, "GB/s": 1e6, "samples/s": 1e9, "us": 1e9}


def _implausible(value: float | int | None, low: float, high: float) -> bool:
    if value is None:
        return False
    return not (math.isfinite(value) and low <= value <= high)


def plausible(profile: Profile) -> tuple[Profile, list[str]]:
    """A copy of ``profile`` without figures no machine has (negative or absurd memory, 10²⁷
    CPUs, a measured rate of 0, infinity or 10³⁰⁰), and one line for each one set aside."""
    out = profile.model_copy(deep=True)
    notes: list[str] = []

    def drop(what: str, value: Any) -> str:
        return f"ignored an implausible {what} in the profile ({value!r})"

    for key in ("total_bytes", "cgroup_limit_bytes", "available_bytes"):
        fact = getattr(out.memory, key)
        if _implausible(fact.value, *_BYTES_RANGE):
            notes.append(drop(f"memory figure ({key})", fact.value))
            setattr(out.memory, key, Fact(value=None, source=fact.source, reason=notes[-1]))
    for key in ("usable_cpus", "logical_cores", "physical_cores"):
        fact = getattr(out.cpu, key)
        if _implausible(fact.value, *_CPU_RANGE):
            notes.append(drop(f"CPU count ({key})", fact.value))
            setattr(out.cpu, key, Fact(value=None, source=fact.source, reason=notes[-1]))
    for gpu in out.gpus:
        fact = gpu.vram_total_bytes
        if _implausible(fact.value, *_VRAM_RANGE):
            notes.append(drop(f"GPU memory ({gpu.name.value or 'GPU'})", fact.value))
            gpu.vram_total_bytes = Fact(value=None, source=fact.source, reason=notes[-1])
    if out.benchmarks is not None:
        bad = []
        for m in out.benchmarks.measurements:
            cap = _RATE_CAPS.get(m.unit, 1e12)
            if m.best is not None and _implausible(m.best, 1e-9, cap):
                bad.append(f"{m.device} {m.case} {m.best:g} {m.unit}")
                m.best = None
                m.median = None
        if bad:
            more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
            notes.append(
                f"ignored {len(bad)} implausible benchmark figure(s) in the profile "
                f"({bad[0]}{more})"
            )
    return out, notes


def _measured(
    bench: Any, device: str | None, case: str, precision: str | None = None
) -> Measurement | None:
    """The measurement of ``case`` on ``device`` that has a figure, trusted or not."""
    if bench is None or device is None:
        return None
    return next(
        (
            m
            for m in bench.measurements
            if m.device == device
            and m.case == case
            and m.status == BenchStatus.OK
            and m.best
            and (precision is None or m.precision == precision)
        ),
        None,
    )


def _ok(
    bench: Any, device: str | None, case: str, precision: str | None = None
) -> Measurement | None:
    """The measurement, if it may stand for this machine: figures taken on a busy machine,
    disturbed GPUs or inconsistent blocks never calibrate an estimate."""
    m = _measured(bench, device, case, precision)
    return m if m is not None and m.trusted else None


#: A figure measured on fewer threads (others held the rest of the CPUs) is scaled to the
#: usable CPUs only from at least this share of them (or on machines of 4 CPUs or fewer): a
#: longer extrapolation would hide memory-bandwidth limits.
MIN_SCALED_SHARE = 0.5


@dataclass(frozen=True)
class _Found:
    m: Measurement
    scale: float

    @property
    def gflops(self) -> float:
        return (self.m.best or 0.0) * self.scale


def _per_core(bench: Any, case: str, precision: str | None, usable: int) -> _Found | None:
    """A CPU figure the estimate may rest on: a trusted one as it is, or a clean one taken on
    fewer threads because others held the rest of the CPUs, scaled to the usable CPUs. Figures
    from contended cores (someone else's process in the timing) are never used."""
    m = _measured(bench, "cpu", case, precision)
    if m is None:
        return None
    if m.trusted:
        return _Found(m, 1.0)
    clean = m.free_cores_only and m.threads is not None and 0 < m.threads < usable
    if clean and m.threads is not None and (m.threads >= MIN_SCALED_SHARE * usable or usable <= 4):
        return _Found(m, usable / m.threads)
    return None


def _emulated(m: Measurement) -> bool:
    return m.settings.get("native", "").startswith("no")


def _distrust_note(ms: list[Measurement | None]) -> str | None:
    """Why measured figures were set aside, or None if none was."""
    bad = [m for m in ms if m is not None and not m.trusted]
    if not bad:
        return None
    why = sorted({d.value.replace("_", " ") for m in bad for d in m.disturbances})
    if not why:
        why = ["its repeated runs disagreed too much to trust"]
    return (
        f"measured figures set aside ({', '.join(why)}): scan again on an idle machine for an "
        "estimate calibrated to it"
    )


def bench_device(profile: Profile, gpu: GpuInfo) -> str | None:
    """The benchmark device (``cuda:N``) that measured ``gpu``: by UUID or PCI bus id, as the
    benchmark child recorded them; by torch's bus ids for older profiles; ``cuda:0`` only
    where the machine has a single GPU. None for a GPU the benchmarks never run on (an Intel
    XPU, an Apple MPS GPU): a CUDA GPU's figures beside it must not be taken for its own."""
    if gpu.backend not in ("cuda", "rocm"):
        return None
    bench = profile.benchmarks
    uuid, bus = gpu.uuid.value, _bus(gpu.pci_bus_id.value)
    if bench is not None:
        for d in bench.devices:
            if (uuid and d.uuid == uuid) or (bus and _bus(d.pci_bus_id) == bus):
                return d.device
    for t in profile.frameworks.torch.devices:
        if bus and _bus(t.pci_bus_id.value) == bus:
            return f"cuda:{t.index}"
    usable = [g for g in profile.gpus if not g.lost and g.backend in ("cuda", "rocm")]
    return "cuda:0" if len(usable) == 1 else None


def _bus(bus_id: str | None) -> str | None:
    return bus_id.lower()[-12:] if bus_id else None
