"""Command-line options shared by the top-level commands and the command groups (which cannot
import :mod:`hwadvisor.cli`: it imports them)."""

from __future__ import annotations

from typing import Annotated

import typer

QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Print nothing unless something goes wrong: no summary or file names; a failure, "
        "or what made the output degraded (exit 3), goes to stderr.",
    ),
]

__all__ = ["QuietOpt"]
