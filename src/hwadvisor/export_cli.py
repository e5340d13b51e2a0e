"""The ``hwadvisor export`` commands: profiles in the formats monitoring systems read."""

from __future__ import annotations

import typer

export_app = typer.Typer(
    name="export",
    help="Write profiles for other systems (Prometheus node_exporter textfile).",
    no_args_is_help=True,
)
