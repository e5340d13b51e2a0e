"""The advice engine: from a profile, a workload and a deadline to the whole answer.

Every hardware option — this machine, the ladder of the rules file, the GPUs the user asks about
(``--assume-gpu``) and, where no single machine will do, the scale-out — carries its class of
hardware (1 a CPU, 2 one GPU, 3 one machine of 2–8 GPUs, 4 several machines), its time with a
range, whether it holds the job in memory, and its costs. The scenario is the smallest class
with an option that holds the job and meets the deadline; the recommendation is the cheapest
such option of that class (ties by time); this machine is enough exactly when its best option
does. A CPU within the deadline is still not called enough where one GPU is over
``gpu_far_faster`` times faster on a run of over ``cpu_short_run_hours`` (the rules file).
Nothing here imports torch or touches hardware: it works on saved and imported profiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from hwadvisor.advise.figures import key_figures
from hwadvisor.advise.files import Candidate, Rules, load_rules
from hwadvisor.advise.names import ResolvedGpu, varying_memory
from hwadvisor.advise.pricing import Costs, Prices, builtin_prices, option_costs, stale_note
from hwadvisor.advise.rates import (
    Rate,
    _device_class,
    _fits,
    candidate_rate,
    memory_needed,
    memory_plan,
    startup_seconds,
    this_machine_rates,
)
from hwadvisor.advise.serve.memory import apple_working_set
from hwadvisor.advise.trust import plausible
from hwadvisor.catalog.peaks import GpuPeak, find_gpu_peak
from hwadvisor.errors import UsageError
from hwadvisor.memory import FitVerdict
from hwadvisor.methods import describe as describe_training
from hwadvisor.model.advice import (
    Advice,
    AssumedVerdict,
    ClassBelow,
    HardwareEstimate,
    Recommendation,
    ScaleOut,
    ScenarioInfo,
    ThisMachine,
    TraceEntry,
    WorkloadSummary,
)
from hwadvisor.model.profile import Profile
from hwadvisor.units import hours_text, human_bytes, human_duration, money
from hwadvisor.workloads import Workload, WorkloadError, shape_note, total_training_flops

#: The most GPUs a scale-out answer considers (beyond, "not even N GPUs" is the answer).
MAX_SCALE_OUT_GPUS = 65_536
#: "If you can wait", "a deadline of … would do": said up to this many hours.
WAIT_HOURS = 30 * 24.0
#: "A deadline under …" is said where the recommendation takes at least this long.
TIGHTER_FROM_S = 3600.0

Times = Callable[["Option"], "float | None"]


@dataclass
class Option:
    """One piece of hardware weighed for the workload."""

    rate: Rate
    row: HardwareEstimate
    costs: Costs
    cls: int
    role: str | None = None
    nodes: int = 1
    scale_out: ScaleOut | None = None

    @property
    def origin(self) -> str:
        return self.row.origin

    @property
    def seconds(self) -> float | None:
        return self.row.seconds

    @property
    def fits(self) -> bool | None:
        return self.row.fits_memory


def _mid(o: Option) -> float | None:
    return o.row.seconds


def _low(o: Option) -> float | None:
    return o.row.low_seconds


def _high(o: Option) -> float | None:
    return o.row.high_seconds


# --------------------------------------------------------------------------------------------
# Deciding


@dataclass
class Decision:
    scenario: int
    rule: str
    meeting: list[Option]
    """The options that hold the job and meet the deadline (after the far-faster rule)."""
    far_faster: tuple[Option, Option] | None = None
    """(the CPU within the deadline, the GPU over ``gpu_far_faster`` × faster)."""


def _speedup(slow: Option, fast: Option) -> float:
    """How many times faster ``fast`` trains it than ``slow``."""
    return (slow.seconds or 0.0) / max(fast.seconds or 1e-9, 1e-9)


def _price_key(o: Option) -> tuple[bool, float, float]:
    """Cheapest first: by purchase price (an option without one after those with one), then by
    time."""
    purchase = o.costs.purchase
    return (purchase is None, purchase or 0.0, o.seconds if o.seconds is not None else math.inf)


def _within(o: Option, deadline_s: float, t: Times) -> bool:
    s = t(o)
    return s is not None and s <= deadline_s and o.fits is True


def decide(
    options: list[Option], w: Workload, rules: Rules, deadline_s: float, t: Times = _mid
) -> Decision:
    """The smallest class with an option that holds the job and meets the deadline."""
    if w.kind == "classical":
        cpus = [o for o in options if o.cls == 1 and _within(o, deadline_s, t)]
        return Decision(1, "classical-on-cpu", cpus)
    meeting = [o for o in options if _within(o, deadline_s, t)]
    far = None
    cpus = [o for o in meeting if o.cls == 1]
    gpus = sorted((o for o in options if o.cls == 2 and o.fits is True and t(o)), key=_price_key)
    if cpus and gpus:
        cpu = min(cpus, key=lambda o: t(o) or math.inf)
        gpu = gpus[0]
        cpu_s, gpu_s = t(cpu) or 0.0, t(gpu) or math.inf
        if cpu_s > rules.cpu_short_run_hours * 3600 and cpu_s > rules.gpu_far_faster * gpu_s:
            far = (cpu, gpu)
            meeting = [o for o in meeting if o.cls != 1]
            if gpu not in meeting:
                meeting.append(gpu)  # within the deadline: the CPU is, and it is far faster
    if not meeting:
        return Decision(4, "nothing-meets", [])
    scenario = min(o.cls for o in meeting)
    rule = (
        "gpu-far-faster"
        if far is not None and scenario == 2
        else ("smallest-class-meeting-deadline")
    )
    return Decision(scenario, rule, [o for o in meeting if o.cls == scenario], far)


def recommend(decision: Decision) -> Option | None:
    """The cheapest option of the scenario's class that meets it; what this machine has only
    where nothing one can buy or rent does."""
    pool = [o for o in decision.meeting if o.origin != "this-machine"] or decision.meeting
    return min(pool, key=_price_key, default=None)


# --------------------------------------------------------------------------------------------
# Options


def _plan_text(plan: FitVerdict | None, gpus: int) -> str | None:
    """The memory plan in words; a CPU's memory is its RAM, not a GPU's."""
    if plan is None:
        return None
    if gpus:
        return plan.message
    return plan.message.replace(" usable per GPU", " of RAM usable").replace(" per GPU", "")


def _option(
    rate: Rate,
    w: Workload,
    rules: Rules,
    deadline_s: float,
    prices: Prices,
    role: str | None = None,
) -> Option:
    est = rate.estimate
    fits = _fits(w, rate.per_gpu_memory, rate.gpus, rules)
    plan = memory_plan(w, rate.per_gpu_memory, rate.gpus, rules)
    seconds = est.seconds if est else None
    # no cloud rents a Mac, and no cloud GPU stands in for one (its unified memory)
    peak = find_gpu_peak(rate.gpu, fallback=False) if rate.gpu else None
    mac = peak is not None and peak.vendor == "apple"
    costs = option_costs(
        prices,
        gpu=rate.gpu,
        gpus=rate.gpus,
        cores=rate.cores,
        seconds=seconds,
        names=(rate.hardware,) + ((role,) if role else ()),
        stand_in_ok=(lambda gpu: False) if mac else None,
    )
    row = HardwareEstimate(
        hardware=rate.hardware,
        origin=rate.origin,
        gpus=rate.gpus,
        seconds=seconds,
        low_seconds=est.low_seconds if est else None,
        high_seconds=est.high_seconds if est else None,
        fits_memory=fits,
        memory_needed_bytes=memory_needed(w, rules),
        memory_available_bytes=rate.memory_available,
        memory_plan=_plan_text(plan, rate.gpus),
        plan_kind=plan.kind if plan else None,
        plan_batch=plan.batch_size if plan else None,
        plan_accumulation=plan.accumulation if plan else 1,
        plan_checkpointing=plan.checkpointing if plan else False,
        plan_bytes=plan.breakdown.total if plan else None,
        usable_bytes=plan.usable_bytes if plan else None,
        meets_scenario=est is not None and fits is True and est.seconds <= deadline_s,
        scenario_class=rate.scenario_class,
        memory_from_catalog=rate.memory_from_catalog,
        calibrated=rate.calibrated,
        basis="; ".join(([est.basis] if est else []) + rate.notes),
    )
    _price_row(row, costs)
    return Option(rate, row, costs, rate.scenario_class, role)


def _price_row(row: HardwareEstimate | Recommendation | ScaleOut, c: Costs) -> None:
    row.purchase_cost = _cents(c.purchase)
    row.hourly_cost = _cents(c.hourly)
    row.run_cost = _cents(c.run)
    if isinstance(row, ScaleOut):
        return
    row.energy_cost = _cents(c.energy)
    row.break_even_hours = None if c.break_even_hours is None else round(c.break_even_hours, 1)
    row.break_even_runs = None if c.break_even_runs is None else round(c.break_even_runs, 2)
    row.rent_as, row.price_date = c.rent_as, c.date
    row.price_source, row.price_note = c.source, c.note


def _cents(value: float | None) -> float | None:
    return None if value is None else round(value, 4 if value < 1 else 2)


def assumed_memory(resolved: ResolvedGpu) -> tuple[GpuPeak, str | None]:
    """An assumed GPU's row with the memory it trains in, and what was assumed of it: a row
    whose memory varies takes :func:`varying_memory`'s size; an Apple chip's GPU gets Metal's
    working set of it (about 2/3 up to 36 GB, 3/4 above), a GPU sharing the computer's RAM
    nine tenths of it."""
    peak = resolved.peak
    gb, said = varying_memory(resolved)
    if gb is None:
        return peak, said
    if peak.vendor == "apple" or peak.unified_memory:
        working = apple_working_set(gb * 1e9) / 1e9 if peak.vendor == "apple" else gb * 0.9
        part = "Metal's working set" if peak.vendor == "apple" else "less the OS's share"
        said = (said + "; " if said else f"{peak.name}: ") + (
            f"{working:.0f} of its {gb:g} GB of unified memory for the GPU ({part})"
        )
        gb = working
    return replace(peak, memory_gb=gb), said


def _assumed_options(
    w: Workload,
    assume: list[tuple[ResolvedGpu, int]],
    rules: Rules,
    deadline_s: float,
    prices: Prices,
) -> list[Option]:
    out = []
    for resolved, count in assume:
        peak, said = assumed_memory(resolved)
        c = Candidate(
            role="assumed",
            title=f"{count}× {peak.name} (assumed)" if count > 1 else f"{peak.name} (assumed)",
            gpu=peak.name,
            gpus=count,
            device_class=_device_class(peak),
            peak=peak,
        )
        rate = candidate_rate(w, c, rules, origin="assumed")
        if said:
            rate.notes.append(said)
        if count > 8:
            rate.notes.append(
                f"{count} GPUs are more than one machine holds: counted as "
                f"{math.ceil(count / 8)} machines of up to 8"
            )
        out.append(_option(rate, w, rules, deadline_s, prices))
    return out


def scale_out(
    w: Workload, rules: Rules, limit_hours: float, prices: Prices | None = None
) -> ScaleOut | None:
    """The fewest nodes of the ladder's node rung that train ``w`` within ``limit_hours`` and
    hold it in memory (states sharded across all GPUs), with costs.

    Several nodes scale as the rules' multi-GPU scaling says, across nodes too (an optimistic
    assumption for data parallelism over a cluster network; the answer says so).
    """
    node = next((c for c in rules.candidates if c.role == "node"), None)
    if node is None or node.gpu is None or node.gpus < 1 or w.kind == "classical":
        return None
    prices = prices or builtin_prices()

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
                meets=False,
                summary=(
                    f"not even {high * per_node:,} × {node.gpu} ({high:,} nodes of {per_node}) "
                    f"meet the {hours_text(limit_hours)} deadline"
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
    costs = option_costs(
        prices,
        gpu=rate.gpu,
        gpus=per_node,
        nodes=high,
        seconds=est.seconds if est else None,
        names=(node.title, node.role),
    )
    when = f" in about {human_duration(est.seconds)}" if est is not None else ""
    out = ScaleOut(
        hardware=node.title,
        gpu=node.gpu,
        gpus=gpus,
        nodes=high,
        seconds=est.seconds if est else None,
        low_seconds=est.low_seconds if est else None,
        high_seconds=est.high_seconds if est else None,
        fits_memory=_fits(w, rate.per_gpu_memory, gpus, rules),
        summary=(
            f"{gpus:,} × {node.gpu} ({high:,} node{'s' if high != 1 else ''} of {per_node}) "
            f"meet it{when}, with {rules.multi_gpu_scaling:.0%} per added GPU and "
            f"{rules.network_gbs_per_gpu:g} GB/s per GPU between servers"
        ),
    )
    _price_row(out, costs)
    return out


def _scale_option(w: Workload, rules: Rules, deadline_s: float, prices: Prices) -> Option | None:
    so = scale_out(w, rules, deadline_s / 3600, prices)
    if so is None:
        return None
    node = next(c for c in rules.candidates if c.role == "node")
    c = replace(node, gpus=so.gpus)
    rate = candidate_rate(w, c, rules, origin="scale-out")
    rate.hardware = f"{so.gpus:,} × {so.gpu} ({so.nodes:,} nodes of {node.gpus})"
    option = _option(rate, w, rules, deadline_s, prices)
    costs = option_costs(
        prices,
        gpu=rate.gpu,
        gpus=node.gpus,
        nodes=so.nodes,
        seconds=option.seconds,
        names=(node.title, node.role),
    )
    _price_row(option.row, costs)
    option.row.scenario_class = 4
    option.row.meets_scenario = so.meets and option.row.meets_scenario
    return Option(rate, option.row, costs, 4, "scale-out", so.nodes, so)


# --------------------------------------------------------------------------------------------
# The answer in words


#: What an option of each class is, in a sentence ("the fastest CPU that holds it").
_KIND = {1: "CPU", 2: "single GPU", 3: "single machine", 4: "cluster"}


def _title(rules: Rules, cls: int) -> str:
    return rules.scenarios.get(cls, f"class {cls}")


def _dur(seconds: float | None) -> str:
    return human_duration(max(seconds or 0.0, 1.0)) if seconds is not None else "no estimate"


def _class_below(
    options: list[Option], decision: Decision, rules: Rules, deadline_s: float
) -> ClassBelow | None:
    k = decision.scenario
    if k <= 1:
        return None
    below = k - 1
    title = _title(rules, below)
    deadline = hours_text(deadline_s / 3600)
    if decision.far_faster is not None and k == 2:
        cpu, gpu = decision.far_faster
        ratio = _speedup(cpu, gpu)
        return ClassBelow(
            scenario_class=1,
            title=title,
            hardware=cpu.row.hardware,
            failed="gpu-far-faster",
            seconds=cpu.seconds,
            text=(
                f"{cpu.row.hardware} takes about {_dur(cpu.seconds)}, within your {deadline}, "
                f"but {gpu.row.hardware} does it in {_dur(gpu.seconds)}, {ratio:,.0f}× faster: "
                f"a CPU is called enough only for runs under "
                f"{hours_text(rules.cpu_short_run_hours)} or where no GPU is "
                f"{rules.gpu_far_faster:g}× faster"
            ),
        )
    pool = [o for o in options if o.cls == below and o.origin != "scale-out"]
    holding = [o for o in pool if o.fits is True and o.seconds is not None]
    if holding:
        o = min(holding, key=lambda o: o.seconds or math.inf)
        return ClassBelow(
            scenario_class=below,
            title=title,
            hardware=o.row.hardware,
            failed="deadline",
            seconds=o.seconds,
            text=(
                f"the fastest {_KIND[below]} that holds it, {o.row.hardware}, needs about "
                f"{_dur(o.seconds)}, over your {deadline}"
            ),
        )
    refused = [o for o in pool if o.fits is False]
    if refused:
        o = max(refused, key=lambda o: o.row.memory_available_bytes or 0)
        need, have = o.row.memory_needed_bytes, o.row.memory_available_bytes
        where = "per GPU" if o.rate.gpus else "of RAM"
        plan = o.row.memory_plan or ""
        return ClassBelow(
            scenario_class=below,
            title=title,
            hardware=o.row.hardware,
            failed="memory",
            memory_needed_bytes=need,
            memory_available_bytes=have,
            text=(
                f"no {_KIND[below]} holds it: the largest, {o.row.hardware}, has "
                f"{human_bytes(have) if have else 'unknown memory'} {where}"
                + (f" ({plan})" if plan.startswith("does not fit") else "")
            ),
        )
    return ClassBelow(
        scenario_class=below,
        title=title,
        hardware=None,
        failed="unknown",
        text=f"no {_KIND[below]} has an estimate for this workload",
    )


def _because(
    decision: Decision,
    rec: Option | None,
    below: ClassBelow | None,
    deadline_s: float,
    so: ScaleOut | None,
) -> str:
    deadline = hours_text(deadline_s / 3600)
    if decision.rule == "nothing-meets":
        return (
            f"Nothing meets your {deadline}: {so.summary}"
            if so is not None
            else f"No option meets your {deadline}"
        )
    if decision.scenario == 1:
        if rec is None:
            return f"No CPU meets your {deadline}; classical ML stays on the CPU"
        return f"{rec.row.hardware} trains it in about {_dur(rec.seconds)}, within your {deadline}"
    assert below is not None
    return below.text[0].upper() + below.text[1:]


def relaxed(
    options: list[Option], w: Workload, rules: Rules, deadline_s: float, rec: Option | None
) -> tuple[float, Option] | None:
    """The shortest longer deadline (up to a month) at which the recommendation changes, and
    what it changes to: the cheaper option a user who can wait would get."""
    if rec is None:
        return None
    times = sorted(
        {
            o.seconds
            for o in options
            if o.seconds is not None and deadline_s < o.seconds <= WAIT_HOURS * 3600
        }
    )
    for seconds in times:
        other = recommend(decide(options, w, rules, seconds))
        if other is not None and other.row.hardware != rec.row.hardware:
            return seconds, other
    return None


def _bought(o: Option, currency: str) -> str:
    return f", {money(o.costs.purchase, currency)} to buy" if o.costs.purchase is not None else ""


def _what_ifs(
    options: list[Option],
    decision: Decision,
    rec: Option | None,
    below: ClassBelow | None,
    mine_best: Option | None,
    enough: bool,
    w: Workload,
    rules: Rules,
    deadline_s: float,
    currency: str,
) -> list[str]:
    """Only what changes the answer."""
    out: list[str] = []
    later = relaxed(options, w, rules, deadline_s, rec)
    if later is not None:
        seconds, other = later
        out.append(
            f"A deadline of {_dur(seconds)} or more: {other.row.hardware} would do "
            f"(scenario {other.cls}{_bought(other, currency)})"
        )
    if (
        rec is not None
        and rec.seconds
        and rec.seconds >= TIGHTER_FROM_S
        and rec.origin != "scale-out"
        and w.kind != "classical"
    ):
        tighter = rec.seconds * 0.999
        changed = recommend(decide(options, w, rules, tighter))
        if changed is None or changed.row.hardware != rec.row.hardware:
            then = (
                f"{changed.row.hardware} (class {changed.cls}, about {_dur(changed.seconds)})"
                if changed is not None
                else "more than one machine"
            )
            out.append(
                f"A deadline under {_dur(rec.seconds)}: {rec.row.hardware} no longer meets it; "
                f"then {then}"
            )
    if below is not None and below.failed == "memory" and below.hardware is not None:
        unfit = next(o for o in options if o.row.hardware == below.hardware)
        if unfit.seconds is not None and unfit.seconds <= deadline_s:
            out.append(
                f"More memory per GPU: with enough to hold it, {below.hardware} would do it in "
                f"about {_dur(unfit.seconds)}"
            )
    if (
        not enough
        and mine_best is not None
        and mine_best.fits
        and mine_best.seconds
        and deadline_s < mine_best.seconds <= WAIT_HOURS * 3600
    ):
        out.append(
            f"A deadline of {_dur(mine_best.seconds)}: this machine would be enough "
            f"({mine_best.row.hardware})"
        )
    return out


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


def _this_machine(
    mine: list[Option], w: Workload, deadline_s: float, decision: Decision, doubts: list[str]
) -> tuple[ThisMachine, Option | None]:
    deadline_h = deadline_s / 3600
    meeting = [o for o in mine if o in decision.meeting or _within(o, deadline_s, _mid)]
    if decision.far_faster is not None:
        meeting = [o for o in meeting if o.cls != 1]
    if w.kind == "classical":
        meeting = [o for o in meeting if o.cls == 1]
    timed = [o for o in mine if o.seconds is not None]
    best = (
        min(meeting, key=lambda o: o.seconds or math.inf)
        if meeting
        else min(timed, key=lambda o: (o.fits is not True, o.seconds or math.inf), default=None)
    )
    if best is None:
        reasons = ["no estimate for this machine (unknown hardware and no measurements)", *doubts]
        notes = [n for o in mine for n in o.rate.notes]
        return (
            ThisMachine(
                sufficient=False,
                verdict="not confirmed",
                checks=notes or ["the profile names no CPU or GPU the catalog knows"],
                hardware="this machine",
                limit_hours=deadline_h,
                reasons=reasons,
            ),
            None,
        )
    enough = bool(meeting)
    hours = (best.seconds or 0) / 3600
    reasons = [f"{best.row.hardware}: about {_dur(best.seconds)}"]
    checks: list[str] = []
    verdict = "enough" if enough else "not enough"
    if not enough and best.fits is None and best.seconds is not None and hours <= deadline_h:
        verdict = "not confirmed"
        where = "GPU memory" if best.rate.gpus else "memory (RAM)"
        checks.append(
            f"its {where} is not in the profile: the job needs "
            f"{human_bytes(best.row.memory_needed_bytes or 0)}"
            + (" per GPU" if best.rate.gpus else "")
            + "; check that it has that much"
        )
        reasons.append(
            f"its {where} is unknown (not in this profile): whether the workload fits cannot "
            "be confirmed"
        )
    if decision.far_faster is not None and best.cls == 1:
        _cpu, gpu = decision.far_faster
        reasons.append(
            f"one GPU ({gpu.row.hardware}) would take {_dur(gpu.seconds)}: "
            f"{_speedup(best, gpu):,.0f}× faster"
        )
    reasons.extend(_memory_reasons(best.row, w))
    reasons.extend(best.rate.notes)
    reasons.extend(doubts)
    return (
        ThisMachine(
            sufficient=enough,
            verdict=verdict,
            checks=checks,
            scenario_class=best.cls,
            hardware=best.row.hardware,
            seconds=best.seconds,
            low_seconds=best.row.low_seconds,
            high_seconds=best.row.high_seconds,
            limit_hours=deadline_h,
            fits_memory=best.fits,
            reasons=reasons,
        ),
        best,
    )


def _trace(
    options: list[Option], decision: Decision, rules: Rules, deadline_s: float
) -> list[TraceEntry]:
    out = []
    for k in (1, 2, 3, 4):
        pool = [o for o in options if o.cls == k]
        meets = (
            [o for o in decision.meeting if o.cls == k]
            if k == decision.scenario
            else [o for o in pool if _within(o, deadline_s, _mid)]
        )
        if decision.far_faster is not None and k == 1:
            meets = []
        best = min(pool, key=lambda o: (o.fits is not True, o.seconds or math.inf), default=None)
        evidence: dict[str, str | float | bool | None] = {"deadline_hours": deadline_s / 3600}
        if best is not None:
            evidence.update(
                {
                    "option": best.row.hardware,
                    "hours": None if best.seconds is None else round(best.seconds / 3600, 3),
                    "fits": best.fits,
                    "options": len(pool),
                }
            )
        evidence["meeting"] = len(meets)
        if not pool:
            because = "no option of this class for this workload"
        elif k == decision.scenario:
            because = "the scenario: the smallest class that holds it in time"
        elif meets:
            because = f"{len(meets)} of {len(pool)} options meet it too"
        else:
            because = f"none of its {len(pool)} options meets it"
        out.append(
            TraceEntry(
                rule=f"class-{k}",
                scenario=k,
                matched=k == decision.scenario,
                evidence=evidence,
                because=because,
            )
        )
    return out


def _recommendation(o: Option) -> Recommendation:
    rec = Recommendation(
        hardware=o.row.hardware,
        origin=o.origin,
        scenario_class=o.cls,
        gpus=o.rate.gpus,
        nodes=o.nodes,
        seconds=o.seconds,
        low_seconds=o.row.low_seconds,
        high_seconds=o.row.high_seconds,
        fits_memory=o.fits,
        memory_plan=o.row.memory_plan,
    )
    _price_row(rec, o.costs)
    return rec


def _caveats(
    mine: list[Option],
    assumed: list[Option],
    assume: list[tuple[ResolvedGpu, int]],
    rec: Option | None,
    w: Workload,
) -> list[str]:
    out: list[str] = []
    if (shape := shape_note(w)) is not None:
        out.append(shape[0].upper() + shape[1:])
    notes = [n for o in mine for n in o.rate.notes]
    for n in notes:
        if "set aside" in n:
            out.append(n[0].upper() + n[1:])
        elif "scaled to" in n:
            out.append("Figures " + n)
    for o in mine:
        if o.rate.memory_from_catalog:
            out.append(next(n for n in o.rate.notes if n.startswith("GPU memory from the catalog")))
    for o, (resolved, _count) in zip(assumed, assume, strict=True):
        said = f"{o.row.hardware}: from the GPU catalog, not measured"
        if resolved.note:
            said += f" ({resolved.note})"
        out.append(said)
        if (memory := assumed_memory(resolved)[1]) is not None:
            out.append(memory)  # what was assumed of a chip or board whose memory varies
    if rec is not None and (stale := stale_note(rec.costs.date)):
        out.append(stale[0].upper() + stale[1:])
    out.extend(_missing_activations(w))
    return list(dict.fromkeys(out))


def times_note(w: Workload, rules: Rules) -> str:
    """What every time of this answer includes, and what its range means."""
    if w.kind == "classical":
        return (
            "Times are the work's core-seconds over the cores at the stated parallel efficiency; "
            "each range is ×0.5–×2 (tree and linear-model costs vary more than FLOPs)."
        )
    share = w.eval_fraction if w.eval_fraction is not None else rules.eval_fraction
    parts = ["the training steps"]
    if share:
        parts.append(f"{share:.0%} more for evaluation and checkpoints")
    if rules.startup_seconds:
        parts.append(f"{human_duration(startup_seconds(w, rules))} of start-up")
    return (
        f"Times are whole runs: {', '.join(parts)}. Each range is the 10th to 90th percentile "
        "of the time model's errors against published measurements of the same kind of work "
        "on the same class of device, each publisher's rows scored by rules fitted without "
        "them (see docs/estimation.md)."
    )


def _confidence(
    options: list[Option], w: Workload, rules: Rules, deadline_s: float, scenario: int
) -> str:
    """high when the estimates' whole band leads to the same class, medium otherwise."""
    same = all(decide(options, w, rules, deadline_s, t).scenario == scenario for t in (_low, _high))
    return "high" if same else "medium"


def advise(
    profile: Profile,
    w: Workload,
    *,
    rules: Rules | None = None,
    prices: Prices | None = None,
    assume: list[tuple[ResolvedGpu, int]] | None = None,
    deadline_hours: float | None = None,
) -> Advice:
    """The whole answer for training ``w`` within the deadline, given what ``profile`` says
    about this machine."""
    rules = rules or load_rules()
    prices = prices or builtin_prices()
    assume = assume or []
    deadline_h = deadline_hours if deadline_hours is not None else rules.deadline_hours
    deadline_s = deadline_h * 3600
    try:
        total = None if w.kind == "classical" else total_training_flops(w)
    except WorkloadError as exc:
        raise UsageError(str(exc)) from exc

    profile, doubts = plausible(profile)
    mine = [_option(r, w, rules, deadline_s, prices) for r in this_machine_rates(w, profile, rules)]
    ladder = [
        _option(candidate_rate(w, c, rules), w, rules, deadline_s, prices, c.role)
        for c in rules.candidates
    ]
    assumed = _assumed_options(w, assume, rules, deadline_s, prices)
    options = mine + ladder + assumed
    decision = decide(options, w, rules, deadline_s)
    so_option = None
    if decision.scenario == 4 and w.kind != "classical" and not decision.meeting:
        so_option = _scale_option(w, rules, deadline_s, prices)
        if so_option is not None:
            options.append(so_option)
            decision = decide(options, w, rules, deadline_s)
    so = so_option.scale_out if so_option is not None else None
    if decision.far_faster is not None:
        cpu, gpu = decision.far_faster
        ratio = _speedup(cpu, gpu)
        for o in options:
            if o.cls == 1 and o.row.meets_scenario:
                o.row.meets_scenario = False
                o.row.basis += (
                    f"; within the deadline, but one GPU ({gpu.row.hardware}) is {ratio:,.0f}× "
                    "faster: not called enough"
                )
    rec_option = recommend(decision)
    if decision.rule == "classical-on-cpu" and rec_option is None:
        cpus = [o for o in options if o.cls == 1 and o.seconds is not None]
        rec_option = min(cpus, key=lambda o: o.seconds or math.inf, default=None)
    below = _class_below(options, decision, rules, deadline_s)
    this, mine_best = _this_machine(mine, w, deadline_s, decision, doubts)
    wait = None
    if (later := relaxed(options, w, rules, deadline_s, rec_option)) is not None:
        _seconds, other = later
        cost = (
            f", {money(other.costs.purchase, prices.currency)}"
            if other.costs.purchase is not None
            else ""
        )
        wait = f"If you can wait: {other.row.hardware}, about {_dur(other.seconds)}{cost}"
    verdicts = [
        AssumedVerdict(
            hardware=o.row.hardware,
            scenario_class=o.cls,
            sufficient=_within(o, deadline_s, _mid),
            seconds=o.seconds,
            low_seconds=o.row.low_seconds,
            high_seconds=o.row.high_seconds,
            fits_memory=o.fits,
            note=resolved.note,
        )
        for o, (resolved, _n) in zip(assumed, assume, strict=True)
    ]
    here = mine_best.row if mine_best is not None else (mine[-1].row if mine else None)
    advice = Advice(
        workload=WorkloadSummary(
            name=w.name,
            description=w.description,
            kind=w.kind,
            precision=w.precision,
            total_flops=total,
            memory_bytes=memory_needed(w, rules),
            source=w.source,
            notes=w.notes,
            training=describe_training(w),
            shape_assumed=shape_note(w),
            times=times_note(w, rules),
        ),
        deadline_hours=deadline_h,
        scenario=ScenarioInfo(
            id=decision.scenario,
            title=_title(rules, decision.scenario),
            confidence=_confidence(options, w, rules, deadline_s, decision.scenario),
            rule=decision.rule,
            because=_because(decision, rec_option, below, deadline_s, so),
        ),
        this_machine=this,
        recommendation=_recommendation(rec_option) if rec_option is not None else None,
        class_below=below,
        if_you_can_wait=wait,
        assumed=verdicts,
        estimates=[o.row for o in options],
        trace=_trace(options, decision, rules, deadline_s),
        what_ifs=_what_ifs(
            options,
            decision,
            rec_option,
            below,
            mine_best,
            this.sufficient,
            w,
            rules,
            deadline_s,
            prices.currency,
        ),
        key_figures=key_figures(profile, here),
        caveats=_caveats(mine, assumed, assume, rec_option, w),
        scale_out=so,
        assumptions=_assumptions(rules),
        rules_source=rules.source,
        prices_source=prices.source,
        prices_date=rec_option.costs.date if rec_option is not None else None,
        currency=prices.currency,
        kwh_price=prices.kwh_price,
    )
    return advice


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
        "costs: purchase from the price catalog (a whole system where listed, else the cards "
        "and a host for them), rent from the cheapest on-demand cloud instance with that GPU "
        "and at least that many of them; energy of owned hardware = board power × hours × the "
        "price of a kWh; buying beats renting after purchase ÷ (rent − energy) hours",
    ]
