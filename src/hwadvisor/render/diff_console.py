"""The terminal view of a profile diff: summary, changed facts, benchmark ratios, verdict.

Probed strings (GPU names, labels, versions) go to rich as ``Text``, never as markup.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hwadvisor.diff import BenchmarkRatio, ProfileDiff, format_ratio


def _table(title: str) -> Table:
    return Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)


def _value(v: str | None) -> Text:
    return Text("absent", style="dim") if v is None else Text(v)


def _num(x: float) -> str:
    return f"{x:,.3g}" if abs(x) < 100 else f"{x:,.0f}"


def _ratio_text(r: BenchmarkRatio) -> Text:
    style = "dim" if r.better is None else ("green" if r.better else "red")
    return Text(format_ratio(r.ratio), style=style)


def render_diff(diff: ProfileDiff, console: Console) -> None:
    console.print(
        Text.assemble(
            ("Profile diff: ", "bold"),
            diff.a_label,
            (f" ({diff.a_created})", "dim"),
            " → ",
            diff.b_label,
            (f" ({diff.b_created})", "dim"),
        )
    )
    for sentence in diff.summary:
        console.print(Text.assemble("• ", Text(sentence)))
    console.print()

    if diff.changes:
        changes = _table("Changed facts")
        for name in ("section", "field", "before", "after"):
            changes.add_column(name, overflow="fold")
        for c in diff.changes:
            changes.add_row(Text(c.section), Text(c.field), _value(c.before), _value(c.after))
        console.print(changes)
    else:
        console.print(Text("No hardware or software fact changed.", style="dim"))

    if diff.benchmarks:
        bench = _table("Benchmarks (after / before)")
        for name in ("case", "device", "precision", "variant", "before", "after", "unit"):
            bench.add_column(name, overflow="fold")
        bench.add_column("ratio", justify="right", no_wrap=True)
        for r in diff.benchmarks:
            unit = f"{r.unit} ({'higher' if r.higher_is_better else 'lower'} is better)"
            bench.add_row(
                Text(r.case),
                Text(r.device),
                Text(r.precision or "–"),
                Text(r.variant or "–"),
                Text(_num(r.before)),
                Text(_num(r.after)),
                Text(unit),
                _ratio_text(r),
            )
        console.print(bench)
    for label, cases in ((diff.a_label, diff.only_in_a), (diff.b_label, diff.only_in_b)):
        if cases:
            console.print(
                Text.assemble(("Only in ", "bold"), (label, "bold"), ": ", ", ".join(cases))
            )

    s = diff.scenario
    if s is not None:
        verdict = _table("Verdict")
        for name in ("workload", "scenario", "this machine", "changed"):
            verdict.add_column(name)
        verdict.add_row(
            Text(s.workload),
            Text(f"{s.before_scenario} → {s.after_scenario}"),
            Text(
                f"{'enough' if s.before_sufficient else 'not enough'} → "
                f"{'enough' if s.after_sufficient else 'not enough'}"
            ),
            Text("yes" if s.changed else "no", style="yellow" if s.changed else ""),
        )
        console.print(verdict)
