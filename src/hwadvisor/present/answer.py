"""One answer, worded once: the verdict, the scenario, the recommendation with its costs, why,
what would change it, and the rows of the time-and-cost table, for every output."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwadvisor.advise.figures import machine_figures
from hwadvisor.model.advice import Advice, HardwareEstimate, Recommendation
from hwadvisor.units import (
    NONE,
    count_text,
    duration_range,
    duration_with_range,
    hours_text,
    human_duration,
    money,
    short_plan,
)

__all__ = [
    "Answer",
    "EstimateRow",
    "Tile",
    "answer",
    "deadline_text",
    "estimate_rows",
    "machine_figures",
    "recommendation_label",
    "recommendation_text",
    "scenario_name",
    "scenario_titles",
    "verdict_of",
]

#: The verdict's words and tone.
VERDICTS = {
    "enough": ("enough", "good"),
    "not enough": ("not enough", "bad"),
    "not confirmed": ("not confirmed to be enough", "unknown"),
}


def scenario_titles() -> dict[int, str]:
    """The four classes' titles (the built-in rules file)."""
    from hwadvisor.advise.files import load_rules

    return dict(load_rules().scenarios)


def scenario_name(scenario_id: int, title: str) -> str:
    """ "scenario 2 of 4 (One GPU)": never a bare number."""
    return f"scenario {scenario_id} of 4 ({title})"


def verdict_of(advice: Advice) -> str:
    """``enough``, ``not enough`` or ``not confirmed`` (older profiles: from ``sufficient``)."""
    me = advice.this_machine
    if me.verdict in VERDICTS:
        return me.verdict
    return "enough" if me.sufficient else "not enough"


def deadline_text(advice: Advice) -> str:
    hours = advice.deadline_hours or advice.this_machine.limit_hours
    return hours_text(hours)


def recommendation_label(advice: Advice) -> str:
    """What the recommendation is to the reader: the hardware to get when this machine is not
    enough; when it is (or may be), only the smallest class that would also do: a machine that
    is enough is never told to buy something."""
    if verdict_of(advice) != "not enough":
        return "Smallest class that also meets it"
    return "Recommended"


def time_text(r: Recommendation | HardwareEstimate) -> str:
    return duration_with_range(r.seconds, r.low_seconds, r.high_seconds)


def recommendation_text(advice: Advice) -> str:
    """ "24 GB high-end GPU (RTX 4090 class), about 8.3 h (5–13.3 h)"; what is needed at scale;
    or that nothing meets the deadline."""
    rec = advice.recommendation
    if rec is not None:
        return f"{rec.hardware}, about {time_text(rec)}"
    if advice.scale_out is not None:
        return advice.scale_out.summary
    return f"nothing meets {deadline_text(advice)}; see the time to train on each option"


def cost_text(advice: Advice, rec: Recommendation | None = None) -> str | None:
    """Buy and rent, one run each way, the break-even and the price date, in one line:
    "buy $3,200 or rent $0.69/h (RunPod …); this run: $5.70 rented, $0.65 of electricity owned;
    buying pays off after 560 runs (prices of 2025-06-01)"."""
    rec = rec or advice.recommendation
    if rec is None:
        return None
    cur = advice.currency
    parts: list[str] = []
    offers = []
    if rec.purchase_cost is not None:
        offers.append(f"buy {money(rec.purchase_cost, cur)}")
    if rec.hourly_cost is not None:
        offers.append(f"rent {money(rec.hourly_cost, cur)}/h")
    if not offers:
        return f"no price in the price catalog{f': {rec.price_note}' if rec.price_note else ''}"
    parts.append(" or ".join(offers))
    run = []
    if rec.run_cost is not None:
        run.append(f"{money(rec.run_cost, cur)} rented")
    if rec.energy_cost is not None:
        run.append(f"{money(rec.energy_cost, cur)} of power owned")
    if run:
        parts.append("this run: " + ", ".join(run))
    if rec.break_even_runs is not None:
        parts.append(f"buying pays off after {count_text(rec.break_even_runs, 'run')}")
    if rec.price_date:
        parts.append(f"prices from {rec.price_date[:7]}")
    return "; ".join(parts)


#: Each class in a few words, for "Why one GPU: …".
CLASS_WORDS = {1: "a CPU", 2: "one GPU", 3: "one multi-GPU machine", 4: "several machines"}


def why_text(advice: Advice) -> str:
    """ "Why one GPU: …" with the class below and what it failed."""
    s = advice.scenario
    return f"Why {CLASS_WORDS.get(s.id, f'class {s.id}')}: {s.because}"


def verdict_line(advice: Advice) -> str:
    words, _ = VERDICTS[verdict_of(advice)]
    return f"This machine is {words} for {advice.workload.name} within {deadline_text(advice)}."


def assumed_lines(advice: Advice) -> list[str]:
    """ "With 2× GeForce RTX 4090 (assumed): enough — about 6 h (3.6–9.6 h)"."""
    out = []
    for a in advice.assumed:
        if a.seconds is None:
            row = next((e for e in advice.estimates if e.hardware == a.hardware), None)
            why = f" ({row.basis})" if row is not None and row.basis else ""
            out.append(f"With {a.hardware}: no estimate for this workload{why}")
            continue
        verdict = "enough" if a.sufficient else "not enough"
        why = "" if a.fits_memory is not False else ", does not hold it in memory"
        note = f" ({a.note})" if a.note else ""
        out.append(
            f"With {a.hardware}: {verdict} — about "
            f"{duration_with_range(a.seconds, a.low_seconds, a.high_seconds)}{why}{note}"
        )
    return out


def recap(advice: Advice) -> str:
    """The answer in one line, for the end of the terminal output."""
    words, _ = VERDICTS[verdict_of(advice)]
    head = f"Answer: this machine is {words} for {advice.workload.name} within " + (
        f"{deadline_text(advice)}"
    )
    rec = advice.recommendation
    if rec is None:
        return f"{head}; {recommendation_text(advice)}."
    what = "get" if verdict_of(advice) == "not enough" else "the smallest class that also does"
    costs = []
    if rec.purchase_cost is not None:
        costs.append(f"{money(rec.purchase_cost, advice.currency)} to buy")
    if rec.hourly_cost is not None:
        costs.append(f"{money(rec.hourly_cost, advice.currency)}/h to rent")
    cost = f", {' or '.join(costs)}" if costs else ""
    return (
        f"{head}; {what}: {rec.hardware} ({CLASS_WORDS.get(rec.scenario_class, 'its class')}), "
        f"about {human_duration(rec.seconds)}{cost}."
    )


@dataclass(frozen=True)
class Tile:
    label: str
    value: str
    detail: str
    tone: str = ""


def tiles(advice: Advice) -> list[Tile]:
    """Page one's figures: the time here against the deadline, the time and cost of the
    recommendation, and the memory that decides (the key figure's own words)."""
    me = advice.this_machine
    verdict = verdict_of(advice)
    out = [
        Tile(
            "Time to train on this machine",
            human_duration(me.seconds),
            f"your deadline: {deadline_text(advice)}",
            {"enough": "good", "not enough": "bad"}.get(verdict, ""),
        )
    ]
    rec = advice.recommendation
    if rec is not None:
        out.append(
            Tile(
                "On the recommendation" if verdict == "not enough" else "On the smallest class",
                human_duration(rec.seconds),
                duration_range(rec.low_seconds, rec.high_seconds),
                "good",
            )
        )
        cur = advice.currency
        if rec.purchase_cost is not None or rec.hourly_cost is not None:
            value = (
                money(rec.purchase_cost, cur)
                if rec.purchase_cost is not None
                else (f"{money(rec.hourly_cost, cur)}/h")
            )
            detail = []
            if rec.purchase_cost is not None and rec.hourly_cost is not None:
                detail.append(f"or {money(rec.hourly_cost, cur)}/h rented")
            if rec.run_cost is not None:
                detail.append(f"{money(rec.run_cost, cur)} a run rented")
            out.append(
                Tile(
                    "To buy" if rec.purchase_cost is not None else "To rent",
                    value,
                    "; ".join(detail) or (f"prices of {rec.price_date}" if rec.price_date else ""),
                )
            )
    elif advice.scale_out is not None:
        so = advice.scale_out
        out.append(
            Tile(
                f"At scale ({so.hardware})",
                human_duration(so.seconds),
                f"{so.nodes} node(s), {so.gpus} GPUs",
            )
        )
    memory = next((f for f in advice.key_figures if f.label.startswith("training memory")), None)
    if memory is not None:
        tone = {"fits": "good", "does not fit": "bad"}.get(memory.detail, "")
        out.append(Tile("Training memory here", memory.detail or NONE, memory.text, tone))
    return out


@dataclass(frozen=True)
class EstimateRow:
    hardware: str
    origin: str
    scenario_class: str
    time: str
    time_range: str
    fits: str
    plan: str
    meets: bool | None
    buy: str
    rent: str
    run: str
    energy: str
    pays_off: str
    price_date: str
    recommended: bool = False


def estimate_rows(advice: Advice) -> list[EstimateRow]:
    """The time-and-cost table: every option, this machine first, the recommendation marked."""
    cur = advice.currency
    rec = advice.recommendation
    out = []
    for e in advice.estimates:
        fits = {True: "yes", False: "no", None: "?"}[e.fits_memory]
        plan = e.memory_plan or ""
        out.append(
            EstimateRow(
                hardware=e.hardware,
                origin=e.origin,
                scenario_class=str(e.scenario_class) if e.scenario_class else NONE,
                time=human_duration(e.seconds),
                time_range=duration_range(e.low_seconds, e.high_seconds),
                fits=fits,
                plan="" if plan.startswith("fits as given") else plan,
                meets=e.meets_scenario,
                buy=money(e.purchase_cost, cur),
                rent=f"{money(e.hourly_cost, cur)}/h" if e.hourly_cost is not None else NONE,
                run=money(e.run_cost, cur),
                energy=money(e.energy_cost, cur),
                pays_off=count_text(e.break_even_runs, "run"),
                price_date=e.price_date or "",
                recommended=rec is not None
                and e.hardware == rec.hardware
                and e.origin == rec.origin,
            )
        )
    return out


def short_fit(e: HardwareEstimate) -> str:
    """ "yes", "yes, at batch 64 ×4", "no", "?"."""
    base = {True: "yes", False: "no", None: "?"}[e.fits_memory]
    plan = short_plan(e.memory_plan)
    return f"{base}, {plan}" if plan and e.fits_memory else base


def _not_in(lines: list[str], said: list[str]) -> list[str]:
    """``lines`` less those said already among ``said`` (case aside)."""
    known = {s.lower() for s in said}
    return [line for line in lines if line.lower() not in known]


@dataclass(frozen=True)
class Answer:
    """Everything page one and the terminal's first screen say, in words."""

    verdict: str
    tone: str
    assumed: list[str]
    workload: str
    description: str
    """The workload in a line, with how it is trained where not plain full training."""
    scenario: str
    recommendation_label: str
    recommendation: str
    costs: str | None
    why: str
    wait: str | None
    reasons: list[str]
    checks: list[str]
    caveats: list[str]
    what_ifs: list[str]
    recap: str
    tiles: list[Tile] = field(default_factory=list)


def answer(advice: Advice) -> Answer:
    s = advice.scenario
    _, tone = VERDICTS[verdict_of(advice)]
    return Answer(
        verdict=verdict_line(advice),
        tone=tone,
        assumed=assumed_lines(advice),
        workload=f"{advice.workload.name}: {advice.workload.description}",
        description="; ".join(
            x for x in (advice.workload.description, advice.workload.training) if x
        ),
        scenario=(
            f"Needs: {scenario_name(s.id, s.title)}, within {deadline_text(advice)} "
            f"({s.confidence} confidence)"
        ),
        recommendation_label=recommendation_label(advice),
        recommendation=recommendation_text(advice),
        costs=cost_text(advice),
        why=why_text(advice),
        wait=advice.if_you_can_wait,
        reasons=_not_in(advice.this_machine.reasons, advice.caveats),
        checks=list(advice.this_machine.checks),
        caveats=list(advice.caveats),
        what_ifs=list(advice.what_ifs),
        recap=recap(advice),
        tiles=tiles(advice),
    )
