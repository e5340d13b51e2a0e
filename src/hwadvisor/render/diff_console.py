"""The terminal view of a profile diff: summary, changed facts, benchmark ratios, verdict.

Fits 80 columns without splitting a value or a field name: the facts are grouped under their
section, identical GPUs are folded ("GPU 1–7"), each benchmark is one row with its unit.
Benchmark changes with a disturbed or unsteady figure are not in the table: they are listed apart,
each with its reason, under "Not counted".
Probed strings (GPU names, labels, versions) go to rich as ``Text``, never as markup.
"""

from __future__ import annotations

import re

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hwadvisor.diff import BenchmarkRatio, FieldChange, ProfileDiff, format_ratio
from hwadvisor.render.console import Flow, _named, _scenario_titles, _span
from hwadvisor.units import format_rate


def _table(title: str) -> Table:
    return Table(
        title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, pad_edge=False
    )


def _value(v: str | None) -> Flow | Text:
    return Text("absent", style="dim") if v is None else Flow(Text(v))


def _ratio_text(r: BenchmarkRatio) -> Text:
    style = "dim" if r.better is None else ("green" if r.better else "red")
    word = "same" if r.better is None else ("better" if r.better else "worse")
    return Text(f"{format_ratio(r.ratio)} {word}", style=style)


_GPU = re.compile(r"^GPU (\d+)$")


def _sections(changes: list[FieldChange]) -> list[tuple[str, list[FieldChange]]]:
    """Changes by section in their order; GPUs with the very same changes folded into one
    section ("GPU 1–7")."""
    order: list[str] = []
    by: dict[str, list[FieldChange]] = {}
    for c in changes:
        if c.section not in by:
            order.append(c.section)
            by[c.section] = []
        by[c.section].append(c)
    out: list[tuple[str, list[FieldChange]]] = []
    folded: dict[tuple[tuple[str, str | None, str | None], ...], list[int]] = {}
    for section in order:
        found = _GPU.match(section)
        if found is None:
            out.append((section, by[section]))
            continue
        key = tuple((c.field, c.before, c.after) for c in by[section])
        if key in folded:
            folded[key].append(int(found.group(1)))
            continue
        folded[key] = [int(found.group(1))]
        out.append((section, by[section]))
    for i, (section, rows) in enumerate(out):
        key = tuple((c.field, c.before, c.after) for c in rows)
        indices = folded.get(key) if _GPU.match(section) else None
        if indices and len(indices) > 1:
            out[i] = (f"GPU {_span(indices)}", rows)
    return out


def _only_in(cases: list[str]) -> str:
    """ "fp32 matmul on cuda:1", … "on cuda:7" → "fp32 matmul on cuda:1–7"."""
    groups: dict[tuple[str, str], list[int]] = {}
    order: list[tuple[str, str] | str] = []
    for case in cases:
        found = re.match(r"^(.*) on cuda:(\d+)(.*)$", case)
        if found is None:
            order.append(case)
            continue
        key = (found.group(1), found.group(3))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(found.group(2)))
    return ", ".join(
        item if isinstance(item, str) else f"{item[0]} on cuda:{_span(groups[item])}{item[1]}"
        for item in order
    )


def _scenario(n: int) -> str:
    return f"{n} ({_scenario_titles().get(n, '?')})"


def render_diff(diff: ProfileDiff, console: Console) -> None:
    console.print(
        Flow(
            Text.assemble(
                ("Profile diff: ", "bold"),
                diff.a_label,
                (f" ({diff.a_created})", "dim"),
                " → ",
                diff.b_label,
                (f" ({diff.b_created})", "dim"),
            ),
            indent=2,
        )
    )
    for sentence in diff.summary:
        console.print(Flow(Text("• " + _named(sentence)), indent=2))
    console.print()

    if diff.changes:
        changes = _table("Changed facts")
        changes.add_column("fact", no_wrap=True)
        changes.add_column("before")
        changes.add_column("after")
        for section, rows in _sections(diff.changes):
            changes.add_row(Text(section, style="bold"), "", "")
            for c in rows:
                changes.add_row(Text("  " + c.field), _value(c.before), _value(c.after))
        console.print(changes)
    else:
        console.print(Text("No hardware or software fact changed.", style="dim"))

    counted = [r for r in diff.benchmarks if r.counted]
    if counted:
        bench = _table("Benchmarks (after / before)")
        bench.add_column("case", no_wrap=True)
        bench.add_column("device", no_wrap=True)
        bench.add_column("before", no_wrap=True, justify="right")
        bench.add_column("after", no_wrap=True, justify="right")
        bench.add_column("ratio", no_wrap=True)
        for r in counted:
            case = " ".join(x for x in (r.precision, r.case.replace("_", " "), r.variant) if x)
            bench.add_row(
                Text(case),
                Text(r.device),
                Text(format_rate(r.before, r.unit)),
                Text(format_rate(r.after, r.unit)),
                _ratio_text(r),
            )
        console.print(bench)
        console.print(
            Text("ratio: after / before; for times, lower is better.", style="dim"),
        )
        console.print()
    if diff.not_counted:
        console.print(Text("Not counted: a figure was disturbed or unsteady", style="bold"))
        for sentence in diff.not_counted:
            console.print(Flow(Text("• " + sentence), indent=2))
        console.print()
    for label, cases in ((diff.a_label, diff.only_in_a), (diff.b_label, diff.only_in_b)):
        if cases:
            console.print(
                Flow(
                    Text.assemble(("Only in ", "bold"), (label, "bold"), ": ", _only_in(cases)),
                    indent=2,
                )
            )

    s = diff.scenario
    if s is not None:
        console.print()
        console.print(Text(f"Verdict for {s.workload}", style="bold"))
        same = s.before_scenario == s.after_scenario
        needs = (
            f"scenario {_scenario(s.after_scenario)}, unchanged"
            if same
            else f"scenario {_scenario(s.before_scenario)} → {_scenario(s.after_scenario)}"
        )
        console.print(Flow(Text("  needs: " + needs), indent=4))
        before = "enough" if s.before_sufficient else "not enough"
        after = "enough" if s.after_sufficient else "not enough"
        console.print(
            Flow(
                Text.assemble(
                    "  this machine: ",
                    (f"{before} → {after}", "yellow" if s.changed else ""),
                    " (changed)" if s.changed else " (unchanged)",
                ),
                indent=4,
            )
        )
