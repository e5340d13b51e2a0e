"""The ``hwadvisor`` command: parse options, call the pipeline, print. Exit codes are set here only.

Heavy modules (pydantic models, the pipeline, rich tables) are imported inside the commands so
that ``hwadvisor --help`` stays instant.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from hwadvisor import __version__
from hwadvisor.errors import HwAdvisorError, Interrupted
from hwadvisor.exitcodes import ExitStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console, RenderableType
    from rich.progress import Progress, Task

    from hwadvisor.model.profile import Profile
    from hwadvisor.pipeline import ProbeEvent

app = typer.Typer(
    name="hwadvisor",
    help="Is this machine enough for my deep-learning work? Detect, measure, advise.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hwadvisor {__version__}")
        raise typer.Exit(ExitStatus.OK)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks for unexpected errors.")
    ] = False,
) -> None:
    """hwadvisor: detect this machine's hardware and deep-learning stack, and say what it can do."""


def _stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _progress_callback(console: Console) -> tuple[Progress, Callable[[ProbeEvent], None]]:
    """A live display of the probes on stderr: the display and the pipeline's callback."""
    from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class StatusColumn(SpinnerColumn):
        """A spinner while the probe runs, then its mark."""

        def render(self, task: Task) -> RenderableType:
            if task.finished:
                return Text.from_markup(task.fields.get("mark", "[green]✓"))
            return super().render(task)

    progress = Progress(
        StatusColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    tasks: dict[str, TaskID] = {}
    marks = {  # status -> (mark, suffix)
        "ok": ("[green]✓", ""),
        "partial": ("[yellow]✓", " [yellow](partial)"),
        "skipped": ("[dim]–", " [dim](skipped)"),
        "failed": ("[red]✗", " [red](failed)"),
        "timeout": ("[red]✗", " [red](timed out)"),
    }

    def on_event(event: ProbeEvent) -> None:
        from rich.markup import escape

        # Benchmark cases (ids like "cpu.matmul.fp32") sit under "Microbenchmarks".
        title = ("  " if "." in event.name else "") + escape(event.title)
        if event.status is None:
            tasks[event.name] = progress.add_task(title, total=1)
            return
        task = tasks.get(event.name)
        if task is None:  # skipped probes never start
            if event.status.value != "skipped":
                return
            task = progress.add_task(title, total=1)
        mark, suffix = marks.get(event.status.value, ("?", ""))
        progress.update(task, completed=1, mark=mark, description=f"{title}{suffix}")

    return progress, on_event


def _file_stem(profile: Profile) -> str:
    host = profile.host.hostname.value or "host"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", host).strip("._") or "host"
    stamp = profile.created_utc.replace("-", "").replace(":", "")
    return f"{safe[:64]}-{stamp}"


@app.command()
def scan(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for the report files.", file_okay=False)
    ] = Path("reports"),
    json_out: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on Python 3.10
        typer.Option(
            "--json",
            metavar="PATH|-",
            help="Write the JSON profile to PATH (never overwritten), or '-' for stdout "
            "only: no summary, no file; progress and messages go to stderr.",
        ),
    ] = None,
    probe_timeout: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--probe-timeout",
            min=1.0,
            max=3600.0,
            metavar="SECONDS",
            help="Time limit for each isolated probe (default: 10-60 s by probe).",
        ),
    ] = None,
    no_bench: Annotated[
        bool, typer.Option("--no-bench", help="Detect only; skip the microbenchmarks.")
    ] = False,
    budget: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--budget",
            min=0.5,
            max=3600.0,
            metavar="SECONDS",
            help="Measurement time to share among the benchmark cases "
            "(default: about 5.5 s for the CPU + 15 s per GPU).",
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress display and no summary.")
    ] = False,
) -> None:
    """Detect CPU, memory, GPUs, drivers and the PyTorch stack, measure what the machine does,
    and write a JSON profile."""
    from rich.console import Console

    from hwadvisor.pipeline import ScanOptions, is_degraded, run_scan
    from hwadvisor.render.jsonio import to_json, write_new_file, write_unique

    to_stdout = json_out == "-"
    err = _stderr()
    options = ScanOptions(out_dir=out, bench=not no_bench, budget_s=budget)
    if probe_timeout is not None:
        options.timeouts_s = dict.fromkeys(options.timeouts_s, probe_timeout)

    show_progress = not quiet and err.is_terminal
    try:
        if show_progress:
            progress, on_event = _progress_callback(err)
            with progress:
                profile = run_scan(options, on_event)
        else:
            profile = run_scan(options)
    except KeyboardInterrupt as exc:
        raise Interrupted("interrupted; no partial file was written") from exc

    text = to_json(profile)
    if to_stdout:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        if json_out is not None:
            written = write_new_file(Path(json_out), text)
        else:
            written = write_unique(out, _file_stem(profile), ".json", text)
        if not quiet:
            from hwadvisor.render.console import render_summary

            render_summary(profile, Console(highlight=False))
        err.print(f"Profile written to [bold]{_escape(str(written))}[/bold]")
    if is_degraded(profile):
        err.print(
            "[yellow]Some probes failed or timed out; the profile says which "
            "(diagnostics.probes).[/yellow]"
        )
        raise typer.Exit(ExitStatus.DEGRADED)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the profile that `scan` writes."""
    from hwadvisor.model.profile import SCHEMA_VERSION, Profile

    doc = Profile.model_json_schema()
    doc = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "hwadvisor profile",
        "description": f"hwadvisor profile, schema_version {SCHEMA_VERSION}",
        **{k: v for k, v in doc.items() if k not in ("title", "description")},
    }
    typer.echo(json.dumps(doc, indent=2))


def _error(message: str) -> None:
    typer.echo(f"hwadvisor: error: {message}", err=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the command and turn every outcome into a documented exit status.

    Usage errors are reported by typer itself (exit 2). Our own errors carry their exit status;
    anything else is a bug: one line, and the traceback only with ``--debug``.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in args
    try:
        app(args=args, prog_name="hwadvisor", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return int(ExitStatus.OK)
        return code if isinstance(code, int) else int(ExitStatus.ERROR)
    except KeyboardInterrupt:
        return _interrupted()
    except HwAdvisorError as exc:
        if debug:
            traceback.print_exc()
        _error(str(exc))
        return int(exc.exit_status)
    except BrokenPipeError:
        # `hwadvisor scan --json - | head`: the reader left; not an error of ours.
        return int(ExitStatus.OK)
    except Exception as exc:  # noqa: BLE001 - the one place where a bug becomes a message
        if debug:
            traceback.print_exc()
        _error(f"internal error ({type(exc).__name__}: {exc}); rerun with --debug and report it")
        return int(ExitStatus.ERROR)
    return int(ExitStatus.OK)


def _interrupted() -> int:
    from hwadvisor.isolation import kill_all_children

    kill_all_children()
    _error("interrupted")
    return int(ExitStatus.INTERRUPTED)


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


__all__ = ["app", "main", "run"]
