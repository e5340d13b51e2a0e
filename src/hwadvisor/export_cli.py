"""The ``hwadvisor export`` commands: profiles in the formats monitoring systems read.

Option parsing only: the metrics are made in :mod:`hwadvisor.render.prometheus`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from hwadvisor.exitcodes import ExitStatus, epilog

export_app = typer.Typer(
    name="export",
    help="Write profiles for monitoring systems (Prometheus).",
    epilog=epilog(
        [
            "hwadvisor export prometheus reports/*.json",
            "hwadvisor export prometheus box.json -o TEXTFILE_DIR/hwadvisor.prom",
        ],
        [ExitStatus.USAGE, ExitStatus.DEGRADED, ExitStatus.IO_ERROR, ExitStatus.INPUT_ERROR],
    ),
    no_args_is_help=True,
)


@export_app.command(
    "prometheus",
    epilog=epilog(
        [
            "hwadvisor export prometheus reports/*.json > hwadvisor.prom",
            "hwadvisor export prometheus box.json -o TEXTFILE_DIR/hwadvisor.prom",
            "hwadvisor export prometheus --redact reports/*.json",
        ],
        [ExitStatus.USAGE, ExitStatus.DEGRADED, ExitStatus.IO_ERROR, ExitStatus.INPUT_ERROR],
    ),
)
def prometheus(
    profiles: Annotated[
        list[Path],
        typer.Argument(
            metavar="PROFILE...",
            help="Saved profiles (any schema version). Several machines' profiles make one "
            "file, every sample labelled with its hostname and machine_id; of several profiles "
            "of one machine the newest is written.",
        ),
    ],
    out: Annotated[
        Optional[Path],  # noqa: UP045 - typer reads the annotation at run time (Python 3.10)
        typer.Option(
            "--out",
            "-o",
            metavar="FILE",
            dir_okay=False,
            help="Write to FILE (e.g. TEXTFILE_DIR/hwadvisor.prom), replacing it atomically: "
            "node_exporter sees the old file or the new one, never half of one. Default: stdout.",
        ),
    ] = None,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact/--no-redact",
            help="Replace hostnames, machine ids and GPU UUIDs with stable hashes (as the "
            "reports' --redact). Default: not redacted, for monitoring inside the organisation.",
        ),
    ] = False,
) -> None:
    """Write profiles as Prometheus metrics, for node_exporter's textfile collector.

    Facts become info metrics, beside the measured figures and the findings (text format
    0.0.4). Prints nothing else when all is well, so cron mails only problems."""
    from rich.markup import escape

    from hwadvisor.model.load import load_profile
    from hwadvisor.render.jsonio import replace_file
    from hwadvisor.render.prometheus import (
        identity,
        latest_per_machine,
        render_prometheus,
    )
    from hwadvisor.render.terminal import console as terminal_console

    err = terminal_console(stderr=True, soft_wrap=True)
    # Every input is read before anything is written: one bad file fails the whole command.
    loaded = [load_profile(path) for path in profiles]
    warning = None
    if redact:
        from hwadvisor.redact import default_salt, redact_profiles, salt_warning

        loaded = redact_profiles(loaded, default_salt())
        warning = salt_warning()
    dropped = latest_per_machine(loaded)[1]
    anonymous = [i for i in dropped if identity(loaded[i]) == ("", "")]
    if anonymous:
        # Profiles of one machine are expected (a folder of scans: the newest counts); profiles
        # that name no machine at all may be different ones, and only one of them is written.
        names = ", ".join(str(profiles[i]) for i in anonymous)
        err.print(
            f"[yellow]left out: {escape(names)}: no hostname or machine id to tell it from a "
            "newer profile without them (only the newest such profile is written)[/yellow]"
        )
    text = render_prometheus(loaded)
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        replace_file(out, text)
    if warning:
        err.print(f"[yellow]{escape(warning)}[/yellow]")
        raise typer.Exit(ExitStatus.DEGRADED)
