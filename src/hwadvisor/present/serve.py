"""The inference answer in words, for every output: the verdict lines (what to buy or rent, and
whether this machine serves the model), the options every rendering shows with their figures
as printed, and the report page's content. The terminal (render.serve_console) and the report
(templates/report.html.j2) lay these out; neither computes its own."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from hwadvisor.model.serve import InferenceAdvice, InferenceEstimate

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


def _speed(e: InferenceEstimate, users: int = 1) -> str:
    """Decode (one user) with its range and prefill; with several users, what they get together
    (replies' tokens per second, each request's prompt counted) and each."""
    if e.decode_tok_s is None:
        return "speed unknown"
    low, high = e.decode_low_tok_s, e.decode_high_tok_s
    span = f" ({_tok(low)}–{_tok(high)})" if low is not None and high is not None else ""
    full = e.decode_full_context_tok_s
    out = (
        f"decode {_tok(e.decode_tok_s)} tok/s{span}"
        + (f", {_tok(full)} with the context full" if full is not None else "")
        + f", prefill {_tok(e.prefill_tok_s)} tok/s"
    )
    if users > 1 and e.throughput_tok_s and e.per_user_tok_s:
        out += (
            f"; {users} users: {_tok(e.throughput_tok_s)} tok/s of replies together, "
            f"{_tok(e.per_user_tok_s)} each"
        )
    return out


def verdict_lines(a: InferenceAdvice) -> list[str]:
    """The first lines: what is served, the class it needs, what to buy, this machine."""
    users = f"{a.users} user{'s' if a.users != 1 else ''}"
    lines = [
        f"Serving {a.model} ({a.params_total / 1e9:,.1f} B parameters"
        + (f", {a.params_active / 1e9:,.1f} B active" if a.params_active < a.params_total else "")
        + f"), {a.quant} ({a.bits_per_weight:g} bits), {a.context:,} tokens of context, "
        f"{a.engine}, {users} at ≥ {a.target_tok_s:g} tok/s, first token ≤ {a.max_ttft_s:g} s",
    ]
    if a.scenario_class is None and not any(e.origin == "catalog" for e in a.estimates):
        lines.append(f"No option in the price catalog runs {a.engine}: see the note below.")
    elif a.scenario_class is None:
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
            + (
                f" {_buys_more(r)} with a computer to hold them"
                if _buys_more(r)
                else " with a computer to hold it"
                if r.gpus and not r.bought_whole
                else ""
            )
            if r.purchase_cost is not None
            else "no purchase price in the catalog"
        )
        rent = (
            f", or {_money(r.hourly_cost, a.currency)}/h to rent as {r.rent_as}"
            if r.rent_as
            else ""
        )
        per_m = r.cost_per_million_tokens_rented
        option = f"{r.hardware} — {buy}{rent}; {_speed(r, a.users)}" + (
            f"; {_money(per_m, a.currency)} per million tokens rented" if per_m else ""
        )
    if h is None:
        machine = f"This machine: {a.this_machine_note or 'not sized'}."
    else:
        ok = "serves it, nothing to buy" if here_serves else "is not enough"
        label = f"This machine ({h.hardware.removeprefix('this machine: ')})"
        machine = _own_line(label, ok, h, a)
    # the GPUs the user asked about (--assume-gpu) get their answer before what to buy
    assumed = [
        _own_line(e.hardware, "serves it" if e.meets_target else "is not enough", e, a)
        for e in a.estimates
        if e.origin == "assumed"
    ]
    lines += assumed
    rent_line = None
    c = a.cheapest_to_rent
    if c is not None and c is not r and c.hourly_cost is not None:
        per_m = c.cost_per_million_tokens_rented
        rent_line = (
            f"Cheapest to rent: {c.hardware} at {_money(c.hourly_cost, a.currency)}/h"
            + (f" as {c.rent_as}" if c.rent_as else "")
            + (f" ({_CLASS[c.scenario_class]})" if c.scenario_class != a.scenario_class else "")
            + f"; {_speed(c, a.users)}"
            + (f"; {_money(per_m, a.currency)} per million tokens" if per_m else "")
        )
    if here_serves:
        # Nothing to buy: this machine first, the cheapest option as the alternative.
        lines.append(machine)
        if option is not None:
            lines.append(f"Cheapest other option that serves it: {option}")
        if rent_line:
            lines.append(rent_line)
    else:
        if option is not None:
            lines.append(f"Recommended: {option}")
        if rent_line:
            lines.append(rent_line)
        lines.append(machine)
        if h is not None:
            lines += [f"  - {s}" for s in h.suggestions[:3]]
    return lines


def _own_line(label: str, ok: str, e: InferenceEstimate, a: InferenceAdvice) -> str:
    """A machine the user has or named: whether it serves the model, its fit and speed, and
    where it is fast enough but its first token comes too late, that it does."""
    fit = (
        f"fits ({_gib(e.memory_needed_bytes)} of {_gib(e.memory_available_bytes)})"
        if e.fits_memory
        else f"does not fit ({_gib(e.memory_needed_bytes)} needed, "
        f"{_gib(e.memory_available_bytes)} usable)"
    )
    late = (
        e.fits_memory
        and not e.meets_target
        and e.time_to_first_token_s is not None
        and e.time_to_first_token_s > a.max_ttft_s
    )
    return (
        f"{label} {ok}: {fit}"
        + (f", {_speed(e, a.users)}" if e.fits_memory else "")
        + (
            f"; a {a.prompt_tokens:,}-token prompt waits {e.time_to_first_token_s:.0f} s for "
            f"its first token (more than {a.max_ttft_s:g})"
            if late and e.time_to_first_token_s is not None
            else ""
        )
    )


_ROWS = 8


def _price(e: InferenceEstimate) -> tuple[float, float]:
    inf = float("inf")
    return (
        e.purchase_cost if e.purchase_cost is not None else inf,
        e.hourly_cost if e.hourly_cost is not None else inf,
    )


def shown_options(a: InferenceAdvice) -> list[InferenceEstimate]:
    """The rows every rendering shows, in order: this machine and assumed GPUs, then the
    cheapest catalog options that serve it by class (what a buyer compares), the
    recommendation among them."""
    own = [e for e in a.estimates if e.origin != "catalog"]
    # an assumed GPU is shown once, among the user's own, not again as a catalog option
    mine = {(e.hardware, e.gpus) for e in own}
    fewest: dict[str, InferenceEstimate] = {}
    for e in sorted(a.estimates, key=lambda e: e.gpus):
        if e.origin == "catalog" and e.meets_target and (e.hardware, e.gpus) not in mine:
            fewest.setdefault(e.hardware.split("× ")[-1], e)
    options = sorted(fewest.values(), key=lambda e: (e.scenario_class, *_price(e)))[:_ROWS]
    for chosen in (a.cheapest_to_rent, a.recommendation):
        if (
            chosen is not None
            and chosen not in options
            and (chosen.hardware, chosen.gpus) not in mine
        ):
            options.insert(0, chosen)
    return [*own, *options]


def option_cells(a: InferenceAdvice, e: InferenceEstimate) -> dict[str, str]:
    """One option's figures as the terminal and the report print them."""
    fits = e.fits_memory
    return {
        "option": e.hardware.replace("this machine: ", "here: "),
        # the mark before the figure: right-aligned figures stay aligned
        "memory": ("" if fits else "✗ ") + _gib(e.memory_needed_bytes),
        "decode": _tok(e.decode_tok_s) if fits else "-",
        "prefill": _tok(e.prefill_tok_s) if fits else "-",
        "users": str(e.users_at_target) if fits and e.users_at_target is not None else "-",
        "per_m": _money(e.cost_per_million_tokens_rented, a.currency) if fits else "-",
        "buy": _buy(a, e),
        "rent": _rent(a, e),
    }


def _rent(a: InferenceAdvice, e: InferenceEstimate) -> str:
    """The hourly price, with the GPUs it is for where the smallest instance on offer holds
    more than the option ("$48.00/h for 8": not one MI300X's price)."""
    if e.hourly_cost is None:
        return "-"
    return f"{_money(e.hourly_cost, a.currency)}/h" + _for(_rents_more(e))


def _buy(a: InferenceAdvice, e: InferenceEstimate) -> str:
    """The purchase price, with the GPUs it buys where the GPU is sold only so many at a time
    ("$130,000 for 8")."""
    return _money(e.purchase_cost, a.currency) + _for(_buys_more(e))


def _for(lot: int | None) -> str:
    return f" for {lot}" if lot else ""


def _rents_more(e: InferenceEstimate) -> int | None:
    """The GPUs the option's rental holds, where more than the option (its price is that
    instance's)."""
    return _larger(e.hourly_cost, e.rented_gpus, e.gpus)


def _buys_more(e: InferenceEstimate) -> int | None:
    """The GPUs the option's purchase buys, where more than the option (a module sold on its
    baseboard)."""
    return _larger(e.purchase_cost, e.bought_gpus, e.gpus)


def _larger(price: float | None, lot: int | None, gpus: int) -> int | None:
    return lot if price is not None and lot and gpus and lot > gpus else None


def footnote(a: InferenceAdvice) -> str:
    depth = (
        f", decode at {a.decode_depth_tokens:,} tokens of context (a reply's middle)"
        if a.decode_depth_tokens is not None
        else ""
    )
    larger = []
    for e in shown_options(a):
        buys, rents = _buys_more(e), _rents_more(e)
        if buys and buys == rents:
            larger.append(f"{e.hardware} is sold and rented only {buys} at a time")
        else:
            larger += [f"{e.hardware} is sold only {buys} at a time"] if buys else []
            larger += [f"{e.hardware} is rented only {rents} at a time"] if rents else []
    whole = (
        f" {'; '.join(larger)}: the prices and cost per token shown are for all of them."
        if larger
        else ""
    )
    return (
        f"decode and prefill in tokens/s{depth}; users: how many get {a.target_tok_s:g} tok/s "
        "each; "
        f"$/M tok: rented, per million reply tokens at that load ({a.prompt_tokens:,}-token "
        f"prompts, {a.reply_tokens:,}-token replies).{whole}"
    )


def _source(source: str) -> str:
    """Where the model's shape came from; a local file by its name alone (a path can carry a
    user's name, and the report is sent to others)."""
    if "/" in source or "\\" in source:
        if source.startswith(("http://", "https://")):
            return source
        return PurePath(source.replace("\\", "/")).name
    return source


def _memory(e: InferenceEstimate) -> dict[str, Any]:
    m = e.memory
    rows = [
        ("weights", _gib(m.weights_bytes)),
        ("KV cache", _gib(m.kv_bytes)),
        ("compute buffers", _gib(m.buffers_bytes)),
        ("runtime", _gib(m.runtime_bytes)),
        ("needed", _gib(m.total_bytes)),
        ("usable", _gib(m.usable_bytes)),
        ("headroom" if m.headroom_bytes >= 0 else "short by", _gib(abs(m.headroom_bytes))),
    ]
    return {
        "title": e.hardware.removeprefix("this machine: "),
        "rows": rows,
        "note": m.usable_note,
        "max_context": m.max_context_that_fits,
    }


def _rental_source(a: InferenceAdvice, said: str) -> str:
    """The cheapest rental's price source, where the recommendation's does not cover it."""
    c = a.cheapest_to_rent
    if c is None or c is a.recommendation or not c.price_source or c.price_source in said:
        return ""
    return f"; the cheapest rental: {c.price_source}" + (
        f", {c.price_date}" if c.price_date else ""
    )


def serve_context(a: InferenceAdvice) -> dict[str, Any]:
    """What the template's serving section shows, all of it text."""
    lines = verdict_lines(a)
    shown = shown_options(a)
    rows = []
    for e in shown:
        cells: dict[str, Any] = dict(option_cells(a, e))
        cells["recommended"] = e is a.recommendation
        cells["here"] = e.origin == "this machine"
        cells["meets"] = e.meets_target
        rows.append(cells)
    memory = [
        _memory(e) for e in (a.this_machine, a.recommendation) if e is not None
    ]  # this machine first, then what to buy
    basis = [
        (e.hardware.removeprefix("this machine: "), e.basis)
        for e in (a.this_machine, a.recommendation)
        if e is not None and e.basis
    ]
    price = a.recommendation
    return {
        "title": f"Can this machine serve {a.model}?",
        "request": lines[0],
        # the suggestions get their own list on the page
        "verdict": [line for line in lines[1:] if not line.startswith("  - ")],
        "rows": rows,
        "footnote": footnote(a),
        "memory": memory,
        "basis": basis,
        "source": _source(a.model_source),
        "prices": (
            f"Prices ({a.currency or 'USD'}): {price.price_source}"
            + (f", {price.price_date}" if price.price_date else "")
            + _rental_source(a, price.price_source)
            if price is not None and price.price_source
            else None
        ),
        "caveats": list(a.caveats),
        "suggestions": list(a.this_machine.suggestions[:3]) if a.this_machine else [],
    }
