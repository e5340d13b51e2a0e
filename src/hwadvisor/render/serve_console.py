"""The inference answer in the terminal: the verdict first (what to buy or rent, and whether this
machine serves the model), then the options, at 80 columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwadvisor.model.serve import InferenceAdvice, InferenceEstimate

if TYPE_CHECKING:
    from rich.console import Console

_CLASS = {1: "a CPU is enough", 2: "one GPU", 3: "one multi-GPU machine", 4: "several machines"}


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def _tok(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def _money(x: float | None, currency: str | None) -> str:
    if x is None:
        return "-"
    sign = "$" if (currency or "USD") == "USD" else f"{currency} "
    return f"{sign}{x:,.2f}" if x < 100 else f"{sign}{x:,.0f}"


def _speed(e: InferenceEstimate) -> str:
    if e.decode_tok_s is None:
        return "speed unknown"
    low, high = e.decode_low_tok_s, e.decode_high_tok_s
    span = f" ({_tok(low)}–{_tok(high)})" if low is not None and high is not None else ""
    return f"decode {_tok(e.decode_tok_s)} tok/s{span}, prefill {_tok(e.prefill_tok_s)} tok/s"


def verdict_lines(a: InferenceAdvice) -> list[str]:
    """The first lines: what is served, the class it needs, what to buy, this machine."""
    users = f"{a.users} user{'s' if a.users != 1 else ''}"
    lines = [
        f"Serving {a.model} ({a.params_total / 1e9:,.1f} B parameters"
        + (f", {a.params_active / 1e9:,.1f} B active" if a.params_active < a.params_total else "")
        + f"), {a.quant} ({a.bits_per_weight:g} bits), {a.context:,} tokens of context, "
        f"{a.engine}, {users} at ≥ {a.target_tok_s:g} tok/s each",
    ]
    if a.scenario_class is None:
        lines.append(
            "No option in the catalog serves it at that speed: lower the target, the "
            "context or the number of users, or use a smaller quant."
        )
    else:
        lines.append(f"Scenario {a.scenario_class}: {_CLASS[a.scenario_class]}.")
    h = a.this_machine
    here_serves = h is not None and h.meets_target
    r = a.recommendation
    option = None
    if r is not None:
        buy = (
            f"{_money(r.purchase_cost, a.currency)} to buy"
            if r.purchase_cost is not None
            else "no purchase price in the catalog"
        )
        rent = (
            f", rent as {r.rent_as} at {_money(r.hourly_cost, a.currency)}/h" if r.rent_as else ""
        )
        per_m = r.cost_per_million_tokens_rented
        option = f"{r.hardware} — {buy}{rent}; {_speed(r)}" + (
            f"; {_money(per_m, a.currency)} per million tokens rented" if per_m else ""
        )
    if h is None:
        machine = (
            "This machine: not sized — its profile has no trusted measurement of its memory "
            "bandwidth (none, or taken while it was busy): `hwadvisor scan` on an idle machine "
            "measures it."
        )
    else:
        fit = (
            f"fits ({_gib(h.memory_needed_bytes)} of {_gib(h.memory_available_bytes)})"
            if h.fits_memory
            else f"does not fit ({_gib(h.memory_needed_bytes)} needed, "
            f"{_gib(h.memory_available_bytes)} usable)"
        )
        ok = "serves it, nothing to buy" if here_serves else "is not enough"
        machine = f"This machine ({h.hardware.removeprefix('this machine: ')}) {ok}: {fit}" + (
            f", {_speed(h)}" if h.fits_memory else ""
        )
    if here_serves:
        # Nothing to buy: this machine first, the cheapest option as the alternative.
        lines.append(machine)
        if option is not None:
            lines.append(f"Cheapest other option that serves it: {option}")
    else:
        if option is not None:
            lines.append(f"Recommended: {option}")
        lines.append(machine)
        if h is not None:
            lines += [f"  - {s}" for s in h.suggestions[:3]]
    return lines


_ROWS = 8


def _price(e: InferenceEstimate) -> tuple[float, float]:
    inf = float("inf")
    return (
        e.purchase_cost if e.purchase_cost is not None else inf,
        e.hourly_cost if e.hourly_cost is not None else inf,
    )


def render_serve(a: InferenceAdvice, console: Console) -> None:
    from rich.table import Table

    for line in verdict_lines(a):
        console.print(line, markup=False, highlight=False)
    own = [e for e in a.estimates if e.origin != "catalog"]
    fewest: dict[str, InferenceEstimate] = {}
    for e in sorted(a.estimates, key=lambda e: e.gpus):
        if e.origin == "catalog" and e.meets_target:
            fewest.setdefault(e.hardware.split("× ")[-1], e)
    # The cheapest options that serve it, by class: what a buyer compares.
    options = sorted(fewest.values(), key=lambda e: (e.scenario_class, *_price(e)))[:_ROWS]
    if a.recommendation is not None and a.recommendation not in options:
        options.insert(0, a.recommendation)
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for title, justify in (
        ("option", "left"),
        ("memory", "right"),
        ("decode", "right"),
        ("prefill", "right"),
        ("users", "right"),
        ("$/M tok", "right"),
    ):
        table.add_column(title, justify=justify)  # type: ignore[arg-type]
    for e in [*own, *options]:
        fits = e.fits_memory
        memory = _gib(e.memory_needed_bytes) + ("" if fits else " ✗")
        table.add_row(
            e.hardware.replace("this machine: ", "here: "),
            memory,
            _tok(e.decode_tok_s) if fits else "-",
            _tok(e.prefill_tok_s) if fits else "-",
            str(e.users_at_target) if fits and e.users_at_target is not None else "-",
            _money(e.cost_per_million_tokens_rented, a.currency) if fits else "-",
        )
    console.print()
    console.print(table)
    console.print(
        f"decode and prefill in tokens/s; users: how many get {a.target_tok_s:g} tok/s each; "
        "$/M tok: rented, per million tokens at that load.",
        markup=False,
        highlight=False,
    )
    for caveat in a.caveats:
        console.print(f"Note: {caveat}", markup=False, highlight=False)
