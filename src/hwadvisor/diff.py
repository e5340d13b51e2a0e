"""Comparing two profiles of a machine: what changed in its hardware and stack, how its benchmark
figures moved, and whether the verdict for a workload changed.

Volatile facts (available memory, free disk, temperatures, current clocks, utilisation, the time a
profile was made, probe timings) are left out: they differ between any two scans.

A benchmark change is counted (among the speed-ups and slow-downs of the summary) only where both
figures are trusted (:attr:`Measurement.trusted`): a figure measured while other processes used the
CPU or the GPU, on throttled clocks, on a slice of a GPU, or with runs that disagreed is not the
machine's capability, and a busy scan against a quiet one of the same machine would otherwise
headline a speed-up that is noise. Such a change is listed apart (``not_counted``) with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import Field

from hwadvisor.model.bench import BenchStatus, Confidence, Disturbance, Measurement
from hwadvisor.model.facts import Fact, StrictModel, unknown
from hwadvisor.model.profile import GpuInfo, Profile
from hwadvisor.units import format_rate, format_value

if TYPE_CHECKING:
    from jinja2 import Environment

#: Benchmark ratios within this fraction of 1 are reported as "about the same" (``better`` null).
NOISE = 0.02

_TEMPLATE = "diff.html.j2"


class FieldChange(StrictModel):
    """One fact that differs. ``before``/``after`` are null where the thing is absent (a GPU)."""

    section: str
    field: str
    before: str | None = None
    after: str | None = None


class BenchmarkRatio(StrictModel):
    """One benchmark case measured (ok) in both profiles."""

    case: str
    device: str
    precision: str | None = None
    variant: str | None = None
    unit: str = ""
    higher_is_better: bool = True
    before: float
    after: float
    ratio: float | None = None
    """after / before; null where ``before`` is zero or the units differ."""
    better: bool | None = None
    """True if ``after`` is better (accounting for ``higher_is_better``); null within the noise
    (±2 %) or where there is no ratio. Says which way the figures moved even where the change is
    not ``counted``."""
    counted: bool = True
    """Both figures are trusted, so the change may count among the speed-ups and slow-downs.
    False where either was disturbed or unsteady: then the change is never in the summary's
    speed-ups or slow-downs, only in ``not_counted``."""
    not_counted_reason: str | None = None
    """Why the change is not counted, in words ("the older scan's figure was measured while other
    processes used the CPU (cpu contended)"); null where it is counted."""
    before_disturbances: list[Disturbance] = Field(default_factory=list)
    """The disturbances of the ``before`` figure (cpu_contended, gpu_busy, ...)."""
    after_disturbances: list[Disturbance] = Field(default_factory=list)
    before_confidence: Confidence = Confidence.HIGH
    after_confidence: Confidence = Confidence.HIGH
    before_disturbance_note: str | None = None
    """The ``before`` figure's disturbances with the figures behind them, as the scan wrote them."""
    after_disturbance_note: str | None = None


class ScenarioChange(StrictModel):
    workload: str
    before_scenario: int
    after_scenario: int
    before_sufficient: bool
    after_sufficient: bool
    changed: bool
    """The scenario or the "this machine is enough" answer differs."""


class ProfileDiff(StrictModel):
    a_label: str
    b_label: str
    a_created: str
    b_created: str
    changes: list[FieldChange]
    benchmarks: list[BenchmarkRatio]
    only_in_a: list[str]
    """Benchmark cases measured (ok) only in profile a."""
    only_in_b: list[str]
    scenario: ScenarioChange | None = None
    not_counted: list[str] = Field(default_factory=list)
    """The benchmark changes set aside because a figure was disturbed or unsteady, one sentence
    each, largest first ("triad on cpu: 6.2× faster (7.74 GB/s → 48.0 GB/s), not counted: ...")."""
    summary: list[str]


# --------------------------------------------------------------------------------------------
# Formatting of fact values


def _fmt(value: Any, field: str) -> str:
    """The shared value formatter (GiB, MHz, W, durations): the diff says what the reports say."""
    return format_value(value, field)


def _not_probed(value: Any) -> bool:
    return isinstance(value, Fact) and value.value is None and value.reason == "not probed"


def _fact_changes(
    section: str, fields: Iterable[tuple[str, Any, Any]], *, newer_facts: bool = False
) -> list[FieldChange]:
    """Compare (name, a, b) where a and b are facts or plain values; values only, not sources.

    With ``newer_facts``, a fact one side never probed (a profile from a version before the
    fact existed) is no change: the machine did not change, the tool did."""
    out: list[FieldChange] = []
    for name, before, after in fields:
        if newer_facts and (_not_probed(before) or _not_probed(after)):
            continue
        va = before.value if isinstance(before, Fact) else before
        vb = after.value if isinstance(after, Fact) else after
        if isinstance(va, list) and isinstance(vb, list):
            same = sorted(map(str, va)) == sorted(map(str, vb))
        else:
            same = va == vb
        if not same:
            out.append(
                FieldChange(
                    section=section, field=name, before=_fmt(va, name), after=_fmt(vb, name)
                )
            )
    return out


def _pairs(a: Any, b: Any, names: Iterable[str]) -> list[tuple[str, Any, Any]]:
    return [(n, getattr(a, n), getattr(b, n)) for n in names]


_CPU_FIELDS = (
    "vendor",
    "model_name",
    "architecture",
    "microarchitecture",
    "sockets",
    "physical_cores",
    "logical_cores",
    "performance_cores",
    "efficiency_cores",
    "affinity_cpus",
    "cgroup_cpu_quota",
    "usable_cpus",
    "base_frequency_mhz",
    "max_frequency_mhz",
    "isa_features",
    "l1d_cache_bytes",
    "l2_cache_bytes",
    "l3_cache_bytes",
    "numa_nodes",
    "virtualized",
    "hypervisor",
)
_MEMORY_FIELDS = ("total_bytes", "swap_total_bytes", "cgroup_limit_bytes")
_PLATFORM_FIELDS = (
    "os",
    "distribution",
    "kernel",
    "python_version",
    "python_implementation",
    "container",
    "wsl",
    "rosetta",
)
_NVML_FIELDS = ("driver_version", "cuda_driver_version")
_GPU_FIELDS = (
    "name",
    "architecture",
    "compute_capability",
    "vram_total_bytes",
    "multiprocessor_count",
    "power_limit_watts",
    "pcie_generation_max",
    "pcie_width_max",
    "ecc_enabled",
    "mig_enabled",
)
#: Facts new in schema 6: a profile written before them has them "not probed".
_GPU_HEALTH_FIELDS = (
    "vbios_version",
    "ecc_errors_uncorrected_volatile",
    "retired_pages",
    "remapped_rows_uncorrectable",
    "remapped_rows_pending",
    "remapped_rows_failed",
    "xid_errors_recent",
)
_SYSTEM_FIELDS = ("vendor", "product", "bios_vendor", "bios_version", "bios_date")
_TORCH_FIELDS = (
    "version",
    "build",
    "cuda_runtime_version",
    "hip_version",
    "cudnn_version",
    "cuda_available",
    "mps_available",
)


def _probed_network(p: Profile) -> bool:
    return p.network.reason != "not probed"


def _rdma_ports(p: Profile) -> Any:
    """The RDMA ports as ``mlx5_0/1 InfiniBand 400 Gb/s active``: a port down or slower after a
    cable or switch change is what a multi-node run notices."""
    if not _probed_network(p):
        return unknown("not probed")
    out = []
    for port in p.network.rdma:
        rate = port.rate_gbps.value
        parts = [f"{port.device}/{port.port}", port.link_layer.value or "?"]
        parts += [f"{rate:g} Gb/s" if rate is not None else "? Gb/s", port.state.value or "?"]
        out.append(" ".join(parts))
    return sorted(out)


def _links(p: Profile) -> Any:
    """The physical interfaces that are up, with their speed (``eth0 25000 Mb/s``)."""
    if not _probed_network(p):
        return unknown("not probed")
    out = []
    for interface in p.network.interfaces:
        if interface.state.value != "up":
            continue
        speed = interface.speed_mbps.value
        out.append(f"{interface.name} {speed} Mb/s" if speed else interface.name)
    return sorted(out)


# --------------------------------------------------------------------------------------------
# GPUs


def _bus_key(gpu: GpuInfo) -> str | None:
    """The PCI bus id, normalised (NVML writes an 8-digit domain, torch and sysfs 4)."""
    raw = gpu.pci_bus_id.value
    if not raw:
        return None
    text = raw.strip().lower()
    parts = text.split(":")
    if len(parts) == 3:
        try:
            return f"{int(parts[0], 16):04x}:{parts[1]}:{parts[2]}"
        except ValueError:
            return text
    return text


def _match_gpus(
    a: list[GpuInfo], b: list[GpuInfo]
) -> tuple[list[tuple[GpuInfo, GpuInfo]], list[GpuInfo], list[GpuInfo]]:
    """Pairs by PCI bus id, then by index among the rest; then removed (a) and added (b)."""
    pairs: list[tuple[GpuInfo, GpuInfo]] = []
    rest_a = list(a)
    rest_b = list(b)
    by_bus = {k: g for g in rest_b if (k := _bus_key(g)) is not None}
    for ga in list(rest_a):
        key = _bus_key(ga)
        gb = by_bus.get(key) if key is not None else None
        if gb is not None and gb in rest_b:
            pairs.append((ga, gb))
            rest_a.remove(ga)
            rest_b.remove(gb)
    for ga in list(rest_a):
        key_a = _bus_key(ga)
        for gb in rest_b:
            key_b = _bus_key(gb)
            # Two different known bus ids are two different boards, whatever their index.
            if gb.index == ga.index and (key_a is None or key_b is None):
                pairs.append((ga, gb))
                rest_a.remove(ga)
                rest_b.remove(gb)
                break
    return pairs, rest_a, rest_b


def _gpu_label(g: GpuInfo) -> str:
    return g.name.value or f"{g.vendor} GPU"


def _gpu_changes(a: list[GpuInfo], b: list[GpuInfo]) -> list[FieldChange]:
    pairs, removed, added = _match_gpus(a, b)
    out: list[FieldChange] = []
    for ga, gb in sorted(pairs, key=lambda p: p[1].index):
        section = f"GPU {gb.index}"
        if ga.index != gb.index:
            out.append(
                FieldChange(
                    section=section, field="index", before=str(ga.index), after=str(gb.index)
                )
            )
        out += _fact_changes(
            section, [("vendor", ga.vendor, gb.vendor), ("backend", ga.backend, gb.backend)]
        )
        out += _fact_changes(section, _pairs(ga, gb, _GPU_FIELDS))
        out += _fact_changes(section, _pairs(ga, gb, _GPU_HEALTH_FIELDS), newer_facts=True)
    for g in sorted(removed, key=lambda g: g.index):
        out.append(
            FieldChange(section=f"GPU {g.index}", field="gpu", before=_gpu_label(g), after=None)
        )
    for g in sorted(added, key=lambda g: g.index):
        out.append(
            FieldChange(section=f"GPU {g.index}", field="gpu", before=None, after=_gpu_label(g))
        )
    return out


# --------------------------------------------------------------------------------------------
# Benchmarks

_Key = tuple[str, str, "str | None", "str | None"]


def bench_label(case: str, device: str, precision: str | None, variant: str | None) -> str:
    """ "bf16 matmul on cuda:0", "h2d on cuda:0 (pinned)"."""
    text = f"{precision} {case}" if precision else case
    text += f" on {device}"
    return f"{text} ({variant})" if variant else text


def _ok_measurements(p: Profile) -> dict[_Key, Measurement]:
    out: dict[_Key, Measurement] = {}
    if p.benchmarks is None:
        return out
    for m in p.benchmarks.measurements:
        if m.status == BenchStatus.OK and m.best is not None:
            out.setdefault((m.case, m.device, m.precision, m.variant), m)
    return out


#: How a disturbed figure was measured, after "was measured".
_MEASURED = {
    Disturbance.CPU_CONTENDED: "while other processes used the CPU",
    Disturbance.FEWER_THREADS: (
        "with fewer threads than the machine has, as other processes held the rest of the CPUs"
    ),
    Disturbance.GPU_BUSY: "while other processes had work on the GPU",
    Disturbance.GPU_THROTTLED: "while the GPU slowed its clocks for heat or power",
    Disturbance.GPU_SHARED: "on a slice of the GPU (MIG or MPS), not the whole card",
}
_LOW_CONFIDENCE = "low confidence"


def _trusted(disturbances: list[Disturbance], confidence: Confidence) -> bool:
    """:attr:`Measurement.trusted` for a figure that was measured (ok, with a figure)."""
    return not disturbances and confidence == Confidence.HIGH


def _codes(disturbances: list[Disturbance], confidence: Confidence) -> list[str]:
    """ "cpu contended", "gpu busy", "low confidence": the flags in words, in a fixed order."""
    out = [d.value.replace("_", " ") for d in Disturbance if d in disturbances]
    if confidence != Confidence.HIGH:
        out.append(_LOW_CONFIDENCE)
    return out


def _distrust(disturbances: list[Disturbance], confidence: Confidence) -> str:
    """What is wrong with an untrusted figure, to follow "the older scan's figure"."""
    kinds = [d for d in Disturbance if d in disturbances]
    if kinds:
        text = "was measured " + " and ".join(_MEASURED[d] for d in kinds)
        if confidence != Confidence.HIGH:
            text += ", and its runs varied too much to trust"
    else:
        text = "varied too much between runs to trust"
    return f"{text} ({', '.join(_codes(disturbances, confidence))})"


def _not_counted_reason(ma: Measurement, mb: Measurement, older: str, newer: str) -> str | None:
    if ma.trusted and mb.trusted:
        return None
    if not mb.trusted and not ma.trusted:
        da = _distrust(ma.disturbances, ma.confidence)
        db = _distrust(mb.disturbances, mb.confidence)
        if da == db:
            return f"each scan's figure {da}"
        return f"the {older} scan's figure {da}; the {newer} scan's figure {db}"
    if not ma.trusted:
        return f"the {older} scan's figure {_distrust(ma.disturbances, ma.confidence)}"
    return f"the {newer} scan's figure {_distrust(mb.disturbances, mb.confidence)}"


def _ratio(ma: Measurement, mb: Measurement, older: str, newer: str) -> BenchmarkRatio:
    assert ma.best is not None and mb.best is not None
    ratio: float | None = None
    better: bool | None = None
    if ma.best > 0 and ma.unit == mb.unit:
        ratio = mb.best / ma.best
        if abs(ratio - 1.0) > NOISE:
            better = (ratio > 1.0) == mb.higher_is_better
    reason = _not_counted_reason(ma, mb, older, newer)
    return BenchmarkRatio(
        case=mb.case,
        device=mb.device,
        precision=mb.precision,
        variant=mb.variant,
        unit=mb.unit,
        higher_is_better=mb.higher_is_better,
        before=ma.best,
        after=mb.best,
        ratio=ratio,
        better=better,
        counted=reason is None,
        not_counted_reason=reason,
        before_disturbances=list(ma.disturbances),
        after_disturbances=list(mb.disturbances),
        before_confidence=ma.confidence,
        after_confidence=mb.confidence,
        before_disturbance_note=ma.disturbance_note,
        after_disturbance_note=mb.disturbance_note,
    )


def _speed_factor(r: BenchmarkRatio) -> float | None:
    """How many times better (>1) or worse (<1) ``after`` is, whichever way the unit goes."""
    if r.ratio is None or r.ratio <= 0:
        return None
    return r.ratio if r.higher_is_better else 1.0 / r.ratio


def _move(r: BenchmarkRatio) -> str:
    """ "2.4× faster", "1.2× slower", "about the same", "not comparable"."""
    factor = _speed_factor(r)
    if factor is None:
        return "not comparable"
    if r.better is None:
        return "about the same"
    if r.better:
        return f"{factor:.1f}× faster"
    return f"{1.0 / factor:.1f}× slower"


def _bench_sentence(r: BenchmarkRatio) -> str:
    return f"{bench_label(r.case, r.device, r.precision, r.variant)}: {_move(r)}"


def not_counted_sentence(r: BenchmarkRatio) -> str:
    """ "triad on cpu: 6.2× faster (7.74 GB/s → 48.0 GB/s), not counted: the older scan's figure
    was measured while other processes used the CPU (cpu contended)"."""
    label = bench_label(r.case, r.device, r.precision, r.variant)
    figures = f"{format_rate(r.before, r.unit)} → {format_rate(r.after, r.unit)}"
    return f"{label}: {_move(r)} ({figures}), not counted: {r.not_counted_reason}"


def _scan_words(a: Profile, b: Profile) -> tuple[str, str]:
    """How the sentences name the two scans: "older"/"newer" where a was made first (as
    ``diff A B`` means), "first"/"second" where the files were given the other way round."""
    if a.created_utc and b.created_utc and a.created_utc > b.created_utc:
        return "first", "second"
    return "older", "newer"


def _set_aside_sentence(
    set_aside: list[BenchmarkRatio], compared: int, older: str, newer: str
) -> str:
    """ "3 benchmark comparisons not counted: the older scan was disturbed (cpu contended); scan
    both on an idle machine to compare them."."""
    bad_a = [not _trusted(r.before_disturbances, r.before_confidence) for r in set_aside]
    bad_b = [not _trusted(r.after_disturbances, r.after_confidence) for r in set_aside]
    found = {
        code
        for r in set_aside
        for code in _codes(r.before_disturbances, r.before_confidence)
        + _codes(r.after_disturbances, r.after_confidence)
    }
    order = [d.value.replace("_", " ") for d in Disturbance] + [_LOW_CONFIDENCE]
    codes = [c for c in order if c in found]
    disturbed = any(c != _LOW_CONFIDENCE for c in codes)
    both = [x and y for x, y in zip(bad_a, bad_b, strict=True)]
    if all(both):
        who, verb = "both scans", "were"
    elif not any(bad_b):
        who, verb = f"the {older} scan", "was"
    elif not any(bad_a):
        who, verb = f"the {newer} scan", "was"
    elif any(both):
        who, verb = "one or both scans", "were"
    else:
        who, verb = "one of the two scans", "was"
    state = "disturbed" if disturbed else "unsteady"
    why = f"{who} {verb} {state} ({', '.join(codes)})"
    n = len(set_aside)
    if n == compared and n > 1:
        head = f"None of the {n} benchmark comparisons counted"
    else:
        head = f"{n} benchmark comparison{'s' if n != 1 else ''} not counted"
    return f"{head}: {why}; scan both on an idle machine to compare them."


# --------------------------------------------------------------------------------------------
# Summary


def _priority(c: FieldChange) -> int:
    if c.section.startswith("GPU"):
        return 0 if c.field in ("gpu", "name") else 2
    if c.section == "frameworks.torch":
        return 1
    if c.section == "nvml":
        return 3
    if c.section == "cpu" and c.field == "model_name":
        return 1
    return 4


def _change_sentence(c: FieldChange) -> str:
    if c.section.startswith("GPU") and c.field == "gpu":
        return (
            f"{c.section} added: {c.after}"
            if c.before is None
            else f"{c.section} removed: {c.before}"
        )
    if c.section.startswith("GPU") and c.field == "name":
        return f"{c.section} changed: {c.before} → {c.after}"
    return f"{c.section}.{c.field}: {c.before} → {c.after}"


def _top_change_sentences(ranked: list[FieldChange], limit: int) -> list[str]:
    """The first ``limit`` changes in words; GPUs of one model added or removed together are one
    sentence ("GPUs 1–7 added: 7 × NVIDIA A100-SXM4-40GB"), not seven."""
    items: list[FieldChange | tuple[str, str]] = []
    gpus: dict[tuple[str, str], list[int]] = {}
    for c in ranked:
        index = c.section.split()[-1]
        if c.section.startswith("GPU ") and c.field == "gpu" and index.isdigit():
            key = ("added", c.after or "") if c.before is None else ("removed", c.before)
            if key not in gpus:
                gpus[key] = []
                items.append(key)
            gpus[key].append(int(index))
        else:
            items.append(c)
    out = []
    for item in items[:limit]:
        if isinstance(item, FieldChange):
            out.append(_change_sentence(item))
            continue
        indices = sorted(gpus[item])
        if len(indices) == 1:
            out.append(f"GPU {indices[0]} {item[0]}: {item[1]}")
        else:
            runs = indices == list(range(indices[0], indices[-1] + 1))
            which = f"{indices[0]}–{indices[-1]}" if runs else ", ".join(map(str, indices))
            out.append(f"GPUs {which} {item[0]}: {len(indices)} × {item[1]}")
    return out


def _summary(
    a: Profile,
    b: Profile,
    a_label: str,
    b_label: str,
    changes: list[FieldChange],
    ratios: list[BenchmarkRatio],
    only_a: list[str],
    only_b: list[str],
    scenario: ScenarioChange | None,
    scans: tuple[str, str] = ("older", "newer"),
) -> list[str]:
    out: list[str] = []
    if changes:
        out.append(
            f"{len(changes)} hardware or software fact(s) differ between {a_label} and {b_label}."
        )
        out += _top_change_sentences(sorted(changes, key=_priority), 2)
    else:
        out.append(f"No hardware or software change between {a_label} and {b_label}.")

    if a.benchmarks is None and b.benchmarks is None:
        out.append("Neither profile has benchmarks.")
    elif not ratios:
        out.append("No benchmark case was measured in both profiles.")
    else:
        # Only changes between two trusted figures are headlined; the others are counted apart,
        # in one sentence that always fits (so at most one change is named beside it when the
        # facts take three lines).
        counted = [r for r in ratios if r.counted]
        set_aside = [r for r in ratios if not r.counted]
        moved = [r for r in counted if r.better is not None]
        moved.sort(key=lambda r: -abs(_log_factor(r)))
        if counted and not moved:
            out.append(f"{len(counted)} benchmark case(s) compared; all within ±{NOISE:.0%}.")
        elif moved:
            room = max(1, min(2, 5 - len(out) - (1 if set_aside else 0)))
            out += [_bench_sentence(r) for r in moved[:room]]
        if set_aside:
            out.append(_set_aside_sentence(set_aside, len(ratios), *scans))
    if only_a or only_b:
        extra = (
            f"{len(only_a)} benchmark case(s) only in {a_label}, {len(only_b)} only in {b_label}."
        )
        if len(out) < 5:
            out.append(extra)

    out.append(_scenario_sentence(a, b, a_label, b_label, scenario))
    return out[:6]


def _log_factor(r: BenchmarkRatio) -> float:
    f = _speed_factor(r)
    return math.log(f) if f else 0.0


def _enough(flag: bool) -> str:
    return "enough" if flag else "not enough"


def _scenario_sentence(
    a: Profile, b: Profile, a_label: str, b_label: str, s: ScenarioChange | None
) -> str:
    if s is not None:
        if s.before_scenario == s.after_scenario:
            head = f"Verdict for {s.workload} unchanged: scenario {s.after_scenario}"
            if s.changed:
                head = f"Verdict for {s.workload} changed: still scenario {s.after_scenario}"
        else:
            moved = f"{s.before_scenario} → {s.after_scenario}"
            head = f"Verdict for {s.workload} changed: scenario {moved}"
        if s.before_sufficient == s.after_sufficient:
            tail = f"this machine still {_enough(s.after_sufficient)}"
        else:
            tail = f"this machine now {_enough(s.after_sufficient)}"
        return f"{head}, {tail}."
    if a.advice is not None and b.advice is not None:
        return (
            f"Advice is for different workloads ({a_label}: {a.advice.workload.name}, "
            f"{b_label}: {b.advice.workload.name}); verdicts not compared."
        )
    if a.advice is not None or b.advice is not None:
        label, adv = (a_label, a.advice) if a.advice is not None else (b_label, b.advice)
        assert adv is not None
        return f"Only {label} has advice (for {adv.workload.name}); verdicts not compared."
    return "Neither profile has advice; no verdict to compare."


# --------------------------------------------------------------------------------------------
# The entry points


def diff_profiles(a: Profile, b: Profile, *, a_label: str, b_label: str) -> ProfileDiff:
    """What differs from profile ``a`` (before) to profile ``b`` (after)."""
    changes: list[FieldChange] = []
    changes += _fact_changes("cpu", _pairs(a.cpu, b.cpu, _CPU_FIELDS))
    changes += _fact_changes("memory", _pairs(a.memory, b.memory, _MEMORY_FIELDS))
    changes += _fact_changes("platform", _pairs(a.platform, b.platform, _PLATFORM_FIELDS))
    changes += _fact_changes("system", _pairs(a.system, b.system, _SYSTEM_FIELDS), newer_facts=True)
    changes += _fact_changes(
        "network",
        [("rdma_ports", _rdma_ports(a), _rdma_ports(b)), ("links", _links(a), _links(b))],
        newer_facts=True,
    )
    changes += _fact_changes("nvml", [("status", a.nvml.status.value, b.nvml.status.value)])
    changes += _fact_changes("nvml", _pairs(a.nvml, b.nvml, _NVML_FIELDS))
    changes += _gpu_changes(a.gpus, b.gpus)
    ta, tb = a.frameworks.torch, b.frameworks.torch
    changes += _fact_changes("frameworks.torch", [("installed", ta.installed, tb.installed)])
    changes += _fact_changes("frameworks.torch", _pairs(ta, tb, _TORCH_FIELDS))

    ma, mb = _ok_measurements(a), _ok_measurements(b)
    scans = _scan_words(a, b)
    ratios = [_ratio(ma[k], mb[k], *scans) for k in ma if k in mb]
    set_aside = sorted((r for r in ratios if not r.counted), key=lambda r: -abs(_log_factor(r)))
    only_a = [bench_label(*k) for k in ma if k not in mb]
    only_b = [bench_label(*k) for k in mb if k not in ma]

    scenario: ScenarioChange | None = None
    if (
        a.advice is not None
        and b.advice is not None
        and a.advice.workload.name == b.advice.workload.name
    ):
        sa, sb = a.advice, b.advice
        scenario = ScenarioChange(
            workload=sb.workload.name,
            before_scenario=sa.scenario.id,
            after_scenario=sb.scenario.id,
            before_sufficient=sa.this_machine.sufficient,
            after_sufficient=sb.this_machine.sufficient,
            changed=(sa.scenario.id != sb.scenario.id)
            or (sa.this_machine.sufficient != sb.this_machine.sufficient),
        )

    return ProfileDiff(
        a_label=a_label,
        b_label=b_label,
        a_created=a.created_utc,
        b_created=b.created_utc,
        changes=changes,
        benchmarks=ratios,
        only_in_a=only_a,
        only_in_b=only_b,
        scenario=scenario,
        not_counted=[not_counted_sentence(r) for r in set_aside],
        summary=_summary(a, b, a_label, b_label, changes, ratios, only_a, only_b, scenario, scans),
    )


def format_ratio(ratio: float | None) -> str:
    """2.4 → "×2.40"; "n/a" where there is no ratio."""
    return "n/a" if ratio is None else f"×{ratio:.2f}"


def _autoescapes(env: Environment, name: str) -> bool:
    setting = env.autoescape
    return bool(setting(name)) if callable(setting) else bool(setting)


def render_diff_html(diff: ProfileDiff, env: Environment) -> str:
    """The diff as an HTML page (``diff.html.j2``, which extends ``base.html.j2``).

    ``env`` must autoescape ``.j2`` templates: the diff carries probed strings (GPU names ...).
    """
    if not _autoescapes(env, _TEMPLATE):
        raise ValueError("render_diff_html needs a jinja2 Environment with autoescape on")
    from hwadvisor.render.html import render_template

    context = {
        "diff": diff,
        "format_ratio": format_ratio,
        "format_rate": format_rate,
        "bench_label": bench_label,
        "not_counted_sentence": not_counted_sentence,
        "bench_move": _move,
    }
    return render_template(env, _TEMPLATE, context)
