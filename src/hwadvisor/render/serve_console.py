"""The inference answer in the terminal: the verdict first (what to buy or rent, and whether this
machine serves the model), then the options, at 80 columns. The words and figures come from
hwadvisor.present.serve, as the report's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwadvisor.model.serve import InferenceAdvice
from hwadvisor.present.serve import footnote, option_cells, shown_options, verdict_lines

if TYPE_CHECKING:
    from rich.console import Console


def render_serve(a: InferenceAdvice, console: Console) -> None:
    from rich.table import Table

    for line in verdict_lines(a):
        console.print(line, markup=False, highlight=False)
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
    shown = shown_options(a)
    for e in shown:
        c = option_cells(a, e)
        table.add_row(c["option"], c["memory"], c["decode"], c["prefill"], c["users"], c["per_m"])
    console.print()
    if shown:  # no option at all: no empty table
        console.print(table)
        console.print(footnote(a), markup=False, highlight=False)
    for caveat in a.caveats:
        console.print(f"Note: {caveat}", markup=False, highlight=False)
