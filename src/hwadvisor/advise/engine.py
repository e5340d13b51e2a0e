"""The advice engine: from a profile and a workload to a scenario, estimates and a rule trace.

The rules, thresholds and the hardware ladder are data (``catalog/rules.toml``, or an
organization's own file). The engine computes a fixed set of metrics for the workload (hours on
each ladder rung, memory, fits), tries the rules in order and keeps the trace of what it looked at.
Nothing here imports torch or touches hardware: it works on saved and imported profiles."""

from __future__ import annotations

import math
import operator
from dataclasses import replace
from typing import Any

from hwadvisor.advise.files import GB, Candidate, Prices, Rule, Rules, RulesError, load_rules
from hwadvisor.advise.rates import (
    Rate,
    _device_class,
    _fits,
    candidate_rate,
    memory_needed,
    memory_plan,
    this_machine_rates,
)
from hwadvisor.advise.trust import plausible
from hwadvisor.catalog.peaks import GpuPeak
from hwadvisor.errors import UsageError
from hwadvisor.memory import FitVerdict
from hwadvisor.model.advice import (
    Advice,
    HardwareEstimate,
    ScaleOut,
    ScenarioInfo,
    ThisMachine,
    TraceEntry,
    WorkloadSummary,
)
from hwadvisor.model.profile import Profile
from hwadvisor.units import hours_text, human_bytes
from hwadvisor.workloads import (
    Estimate,
    Workload,
    WorkloadError,
    total_training_flops,
)

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


def _plan_text(plan: FitVerdict | None, gpus: int) -> str | None:
    """The memory plan in words; a CPU's memory is its RAM, not a GPU's."""
    if plan is None:
        return None
    if gpus:
        return plan.message
    return plan.message.replace(" usable per GPU", " of RAM usable").replace(" per GPU", "")


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
        memory_plan=_plan_text(plan, rate.gpus),
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
        within = "within" if hours <= limit_hours else "over"
        reasons.append(
            f"{best.hardware}: about {_fmt_hours(hours)} "
            f"({within} the scenario's limit of {_fmt_hours(limit_hours)})"
        )
        if needs_gpu and not best.gpus and best.meets_scenario:
            reasons.append(
                f"“{title}” calls for GPU hardware and this machine has none that PyTorch "
                "can use: its CPU would be busy for all of that time"
            )
        if best.fits_memory is None:
            reasons.append(
                "its memory is unknown (not in this profile): whether the workload fits "
                "cannot be confirmed"
            )
        reasons.extend(_memory_reasons(best, w))
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
        what_ifs=_missing_activations(w) + _what_ifs(w, rules, ladder, metrics, rule),
        assumptions=_assumptions(rules),
        rules_source=rules.source,
        prices_source=prices.source if prices else None,
        currency=prices.currency if prices else None,
    )


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
            f"meet it{when}{cost}, with {rules.multi_gpu_scaling:.0%} per added GPU and "
            f"{rules.network_gbs_per_gpu:g} GB/s per GPU between servers"
        ),
    )


def _fmt_hours(hours: float) -> str:
    """Hours in the shared duration style ("8.3 h", "74 days"); never "0 s"."""
    return hours_text(max(hours, 1 / 3600))


def _memory_reasons(best: HardwareEstimate, w: Workload) -> list[str]:
    """This machine's memory in one sentence: the plan that decides where there is one (it may
    be at a smaller batch or with checkpointing), else the need at the workload's batch."""
    plan = best.memory_plan
    if plan:
        if plan.startswith("fits as given"):
            return []
        return [f"memory: {plan}"]
    if best.fits_memory is False and best.memory_needed_bytes is not None:
        available = (
            human_bytes(best.memory_available_bytes)
            if best.memory_available_bytes is not None
            else "an unknown amount"
        )
        return [
            f"memory: needs {human_bytes(best.memory_needed_bytes)} for training at batch "
            f"{w.batch_size}; {available} available"
        ]
    return []


def _missing_activations(w: Workload) -> list[str]:
    """Say so when the memory estimate cannot count activations (a custom workload without a
    shape or an activation figure): it is then a floor, not an estimate."""
    if w.kind == "classical" or w.has_shape:
        return []
    if w.activation_bytes_per_sample is not None or w.activation_bytes_per_token is not None:
        return []
    how = (
        "--seq-len with --layers, --hidden and --heads"
        if w.kind == "transformer"
        else "--activation-bytes (per sample)"
    )
    return [
        "activations are not counted (the workload gives neither a model shape nor an "
        "activation figure): the memory needed is a floor, and the real job needs more; "
        f"give {how}"
    ]


def _what_ifs(
    w: Workload, rules: Rules, ladder: dict[str, Rate], metrics: dict[str, Any], rule: Rule
) -> list[str]:
    """Which change of hardware would change the answer."""
    out = []
    for role in ("single_gpu", "workstation", "node"):
        rate = ladder.get(role)
        if rate is None or metrics.get(f"{role}_fits") is not False:
            continue
        how = (
            f" (it needs {human_bytes(memory_needed(w, rules))})"
            if w.kind == "classical"
            else ", not even at batch 1"
        )
        out.append(
            f"{rate.hardware} cannot hold it{how}: more memory per GPU, or sharding across "
            "more GPUs, is needed"
        )
    if rule.scenario > 1 and w.kind != "classical":
        cpu_hours = metrics.get("cpu_hours")
        if cpu_hours is not None:
            out.append(f"on a desktop CPU it would take about {_fmt_hours(cpu_hours)}")
    if rule.scenario >= 3:
        hours = metrics.get("single_gpu_hours")
        if hours is not None:
            fits = "fits" if metrics.get("single_gpu_fits") else "does not fit"
            rung = ladder.get("single_gpu")
            name = rung.hardware if rung is not None else "high-end GPU"
            out.append(f"on one {name}: about {_fmt_hours(hours)}, and it {fits} in memory")
    return out


def _assumptions(rules: Rules) -> list[str]:
    return [
        "training FLOPs: 6·N·D for transformers plus 12·layers·hidden·sequence per token "
        "for the attention where the shape is known, 3× forward for conv nets (2 FLOPs per "
        "multiply-add); classical ML in core-seconds",
        "time ≈ FLOPs / (peak × efficiency), or the step's memory traffic / bandwidth, or the "
        "host's kernel launches, whichever is slowest; efficiencies are measured on this "
        "machine where its benchmarks allow, documented defaults otherwise; the band is "
        "×0.6–×1.6",
        "memory: weights + gradients + Adam states (16–18 bytes/parameter; LoRA's frozen base "
        "at its own bits) + activations from the model's shape + the CUDA context and "
        f"workspace (≈1.3 GiB); {rules.usable_memory_fraction:.0%} of device memory usable; "
        "a batch that does not fit is split with gradient accumulation, then gradient "
        "checkpointing is tried (transformers)"
        + (
            "; several GPUs use plain data parallel where the states fit, FSDP sharding where "
            "they do not"
            if rules.shard_states
            else ""
        ),
        f"several GPUs: each adds {rules.multi_gpu_scaling:.0%} of one GPU's throughput, less "
        "the gradient exchange the step cannot hide (NVLink/Infinity Fabric or PCIe from the "
        f"catalog; {rules.network_gbs_per_gpu:g} GB/s per GPU between servers)",
    ]
