"""The ``hwadvisor fleet`` commands: option parsing only; the work is in :mod:`hwadvisor.fleet`."""

from __future__ import annotations

import typer

fleet_app = typer.Typer(
    name="fleet",
    help="Many machines' profiles: ingest, summary, export, report, advise, diff.",
    no_args_is_help=True,
)
