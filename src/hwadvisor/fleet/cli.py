"""The ``hwadvisor fleet`` commands: option parsing only; the work is in :mod:`hwadvisor.fleet`.

Every command but ``ingest`` and ``diff`` reads either the database (``--db``, by default
``fleet.duckdb`` here) or, when folders are named, those folders read into memory now (and into
``--db`` as well when it is given).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hwadvisor.cliopts import (
    ContextOpt,
    DeadlineOpt,
    EngineOpt,
    KvCacheOpt,
    MaxTtftOpt,
    PromptTokensOpt,
    QuantOpt,
    QuietOpt,
    ReplyTokensOpt,
    TargetTokOpt,
    UsersOpt,
    refuse_serve_options,
    serve_options,
)
from hwadvisor.exitcodes import ExitStatus, epilog
from hwadvisor.fleet.linesize import DEFAULT_LINE_BYTES, MAX_LINE_BYTES, MIN_LINE_BYTES

if TYPE_CHECKING:
    from hwadvisor.fleet.store import Fleet, IngestResult

fleet_app = typer.Typer(
    name="fleet",
    help="Roll up many machines' profiles in one database.\n\nIngest profiles, then summarise, "
    "export, rank for a workload, report, and compare two moments.",
    epilog=epilog(
        [
            "hwadvisor fleet ingest profiles/       # into ./fleet.duckdb",
            "hwadvisor fleet summary                # counts; what needs attention",
            "hwadvisor fleet summary profiles/ --json",
            "hwadvisor fleet show gpu-node-07       # one host: why it is flagged",
            "hwadvisor fleet COMMAND --help         # each command's options",
        ],
        [ExitStatus.USAGE, ExitStatus.IO_ERROR, ExitStatus.INPUT_ERROR],
    ),
    no_args_is_help=True,
)

# The exit codes of the commands that only read: a bad option, a database or folder that cannot
# be read (or no DuckDB installed: exit 5).
_READS = [ExitStatus.USAGE, ExitStatus.INPUT_ERROR]
_WRITES = [ExitStatus.USAGE, ExitStatus.IO_ERROR, ExitStatus.INPUT_ERROR]

DEFAULT_DB = Path("fleet.duckdb")

Sources = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="PATH...",
        help="Folders (read recursively) or files of profiles; none: the database.",
        show_default=False,
    ),
]
Db = Annotated[
    Path | None,
    typer.Option(
        "--db",
        metavar="FILE",
        help="The fleet database (default fleet.duckdb; with folders named and no --db, "
        "they are read into memory only).",
        show_default=False,
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
StaleDays = Annotated[
    int,
    typer.Option(
        "--stale-days", metavar="DAYS", min=1, help="A host not scanned for this long is stale."
    ),
]


RedactOpt = Annotated[
    bool | None,
    typer.Option(
        "--redact/--no-redact",
        help="Show host names, machine ids and UUIDs as stable tokens (the same as in one "
        "host's redacted report). Default: only the PDF is redacted.",
    ),
]


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def _open(sources: list[Path] | None, db: Path | None) -> tuple[Fleet, IngestResult | None]:
    from hwadvisor.fleet.store import open_sources

    if not sources:
        return open_sources([], db or DEFAULT_DB)
    return open_sources(sources, db)


def _console() -> Any:
    from hwadvisor.render.terminal import console

    return console()


def escape_text(text: str) -> str:
    """Profile strings are shown, never read as rich markup (a host named ``[red]x``)."""
    from rich.markup import escape

    return escape(text)


#: Hosts named in one line of *Needs attention*; the rest are counted (--json lists them all).
NAMED_HOSTS = 5


def _named(names: list[Any], count: int) -> str:
    """ "node-1, node-7 and 12 more": the hosts a finding is on, by name."""
    shown = [str(n) for n in names[:NAMED_HOSTS]]
    more = count - len(shown)
    return ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")


def _err(text: str) -> None:
    typer.echo(text, err=True)


def _ingest_lines(result: IngestResult, where: str) -> list[str]:
    lines = [
        f"{where}: {result.files:,} files, {result.new_scans:,} new scans, "
        f"{result.unchanged:,} unchanged, {result.known_scans:,} already known, "
        f"{len(result.skipped):,} skipped"
    ]
    for path, reason in result.skipped[:10]:
        lines.append(f"  skipped {path}: {reason}")
    if len(result.skipped) > 10:
        lines.append(f"  … and {len(result.skipped) - 10:,} more (fleet summary counts them)")
    if result.clock_skewed:
        lines.append(
            f"  {result.clock_skewed:,} scans have a wrong clock: ordered by file time instead"
        )
    if result.forgotten_scans:
        lines.append(
            f"  {result.forgotten_scans:,} scans of forgotten hosts left out (fleet forget, "
            "retention): only a newer scan brings a host back"
        )
    if result.retired:
        lines.append(
            f"  {len(result.retired):,} hosts dropped by the retention setting: "
            + ", ".join(result.retired[:5])
            + (f" and {len(result.retired) - 5:,} more" if len(result.retired) > 5 else "")
        )
    return lines


@fleet_app.command(
    epilog=epilog(
        [
            "hwadvisor fleet ingest profiles/       # again later: reads only new files",
            "hwadvisor fleet ingest --db /srv/fleet.duckdb /srv/profiles/ --json",
            "kubectl -n hwadvisor logs -l app.kubernetes.io/name=hwadvisor --prefix \\",
            "    --tail=-1 | hwadvisor fleet ingest -   # the profiles in every pod's log",
        ],
        _WRITES,
    )
)
def ingest(
    sources: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATH...",
            help="Folders or files of profiles, or log streams (- for standard input).",
        ),
    ],
    db: Annotated[
        Path,
        typer.Option("--db", metavar="FILE", help="The fleet database, created if missing."),
    ] = DEFAULT_DB,
    as_json: AsJson = False,
    quiet: QuietOpt = False,
    retention_days: Annotated[
        int | None,
        typer.Option(
            "--retention-days",
            metavar="DAYS",
            min=0,
            help="Keep this setting in the database: from now on every ingest forgets the "
            "hosts not scanned for DAYS days (their scans deleted; a newer scan brings one "
            "back). 0 turns it off (the default: hosts are kept forever).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Add profiles to the fleet database.

    Reads new and changed files only; the latest scan of each machine wins and its history is
    kept. Files that are not profiles are skipped with a reason; the whole ingest is one
    transaction. A log stream (kubectl logs, a pod's log file) gives every profile in it
    (see fleet emit)."""
    from hwadvisor.fleet.logstream import stdin_sources
    from hwadvisor.fleet.store import ingest as run_ingest
    from hwadvisor.fleet.store import open_fleet

    with open_fleet(db, create=True) as fleet, stdin_sources(sources) as paths:
        result = run_ingest(fleet, paths, retention_days=retention_days)
        hosts = fleet.scalar("SELECT count(*) FROM hosts")
    if as_json:
        out = {
            "db": str(db),
            "files": result.files,
            "new_scans": result.new_scans,
            "unchanged": result.unchanged,
            "already_known": result.known_scans,
            "clock_skewed": result.clock_skewed,
            "forgotten_scans": result.forgotten_scans,
            "retired": result.retired,
            "skipped": [{"path": p, "reason": r} for p, r in result.skipped],
            "hosts": hosts,
        }
        typer.echo(json.dumps(out, indent=2))
        return
    if quiet:
        return
    for line in _ingest_lines(result, str(db)):
        typer.echo(line)
    typer.echo(f"{db}: {hosts:,} hosts")


@fleet_app.command(
    epilog=epilog(
        [
            'hwadvisor fleet emit "$out/profile.json"   # a DaemonSet, after each scan',
            "hwadvisor scan --json - --no-bench | hwadvisor fleet emit -",
            "hwadvisor fleet emit profile.json --line-bytes 4000 --full",
        ],
        [ExitStatus.USAGE, ExitStatus.IO_ERROR, ExitStatus.INPUT_ERROR],
    )
)
def emit(
    profile: Annotated[
        str, typer.Argument(metavar="PROFILE", help="A profile file, or - for standard input.")
    ] = "-",
    line_bytes: Annotated[
        int,
        typer.Option(
            "--line-bytes",
            metavar="BYTES",
            min=MIN_LINE_BYTES,
            max=MAX_LINE_BYTES,
            help="The longest line, newline included.",
        ),
    ] = DEFAULT_LINE_BYTES,
    full: Annotated[
        bool,
        typer.Option(
            "--full", help="Keep serial numbers and MAC and IP addresses (left out by default)."
        ),
    ] = False,
) -> None:
    """Print a profile as log lines that log pipelines keep whole.

    A few lines of at most --line-bytes, each with a checksum, for `fleet ingest` to join
    again from kubectl logs or a pod's log file. Host name, machine id and GPU UUIDs are kept;
    serial numbers and MAC and IP addresses are left out unless --full."""
    import errno
    import sys

    from hwadvisor.errors import OutputError
    from hwadvisor.fleet.logstream import emit_lines

    lines = emit_lines(profile, line_bytes=line_bytes, full=full)
    try:
        sys.stdout.write("".join(lines))
        sys.stdout.flush()
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
            raise
        raise OutputError(f"standard output cannot be written: {exc.strerror or exc}") from exc


def _hosts(n: int) -> str:
    return f"{n:,} host" if n == 1 else f"{n:,} hosts"


def _top(rows: list[list[Any]], limit: int = 8) -> str:
    shown = [f"{k} ({n:,})" for k, n in rows[:limit]]
    if len(rows) > limit:
        shown.append(f"… {len(rows) - limit} more")
    return ", ".join(shown) if shown else "—"


_SCENARIOS = {
    "1": "1 CPU is enough",
    "2": "2 one GPU",
    "3": "3 workstation",
    "4": "4 multi-GPU / cluster node",
}


def print_summary(data: dict[str, Any]) -> None:
    """The roll-up as a person reads it: counts first, then what needs attention."""
    from rich.table import Table

    con = _console()
    con.print(
        f"[bold]{data['hosts']:,} hosts[/bold], {data['gpus']:,} GPUs "
        f"({data['scans']:,} scans from {data['files']:,} files; "
        f"{data['skipped_files']:,} files skipped)"
    )
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    capability = [[_SCENARIOS.get(k, k), n] for k, n in data["by_capability"]]
    for label, rows in (
        ("Capability", capability),
        ("GPU models", data["by_gpu_model"]),
        ("Per host", data["by_gpu_config"]),
        ("CPU models", data["by_cpu_model"]),
        ("Drivers", data["by_driver"]),
        ("CUDA", data["by_cuda_driver"]),
        ("torch", data["by_torch"]),
    ):
        table.add_row(label, escape_text(_top(rows)))
    con.print(table)
    attention: list[str] = []
    for f in data["findings"][:8]:
        attention.append(
            f"{f['severity']}: {f['title']} ({f['id']}) on {_named(f['host_names'], f['hosts'])}"
        )
    for o in data["outliers"][:8]:
        worst = max(o["figures"], key=lambda f: f["drop"])
        attention.append(
            f"outlier: {o['hostname'] or o['host_key']} {o['device']} ({o['model']}) "
            f"{worst['case']} {worst['precision'] or ''} {worst['drop']:.0%} below the median "
            f"of {worst['group']:,}"
        )
    if len(data["outliers"]) > 8:
        attention.append(f"… {len(data['outliers']) - 8} more outliers (--json lists them)")
    if data["stale"]:
        attention.append(
            f"stale: {_hosts(len(data['stale']))} not scanned in {data['stale_days']} days"
        )
    if data["clock_skewed"]:
        attention.append(f"clock: {len(data['clock_skewed']):,} hosts report a wrong scan time")
    for r in data["skipped_reasons"][:5]:
        attention.append(f"skipped {r['files']:,} files: {r['reason']}")
    if attention:
        con.print("[bold]Needs attention[/bold]")
        import textwrap

        from rich.text import Text

        for line in attention:
            # A finding's wrapped lines hang under it: "  warning: …" then "    …".
            wrapped = textwrap.fill(
                line,
                width=max(40, con.width),
                initial_indent="  ",
                subsequent_indent="    ",
                break_on_hyphens=False,  # ids and host names stay whole
                break_long_words=False,
            )
            con.print(Text(wrapped), soft_wrap=True)
    else:
        con.print("Nothing needs attention.")


@fleet_app.command(
    epilog=epilog(
        [
            "hwadvisor fleet summary                # from ./fleet.duckdb",
            "hwadvisor fleet summary profiles/ --json | jq .by_gpu_model",
        ],
        _READS,
    )
)
def summary(
    sources: Sources = None,
    db: Db = None,
    stale_days: StaleDays = 30,
    as_json: AsJson = False,
) -> None:
    """Count the fleet's hardware and list what needs attention.

    Counts by CPU and GPU model, VRAM, driver, CUDA, torch and capability by scenario; then the
    findings, outlier devices, stale hosts and duplicate machine ids."""
    from hwadvisor.fleet.queries import summary as roll_up

    fleet, result = _open(sources, db)
    with fleet:
        if result is not None and not as_json:
            for line in _ingest_lines(result, str(db or "folders")):
                _err(line)
        data = roll_up(fleet, _now(), stale_days)
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=str))
    else:
        print_summary(data)


def print_host(data: dict[str, Any]) -> None:
    """One host as a person reads it: what is wrong and what to do first, then the facts."""
    from hwadvisor.units import human_bytes

    con = _console()
    name = data["hostname"] or data["host_key"]
    scanned = data["scan_utc"] or "unknown"
    days = data["age_days"]
    age = "" if days is None else f", {days:,} day{'' if days == 1 else 's'} ago"
    stale = f" [red]stale (over {data['stale_days']} days)[/red]" if data["stale"] else ""
    con.print(f"[bold]{escape_text(name)}[/bold] ({escape_text(data['host_key'])})")
    kept = "1 scan" if data["scans"] == 1 else f"{data['scans']:,} scans"
    con.print(f"  last scan {escape_text(scanned)}{age}{stale}; {kept} kept")
    source = f"{data['path']} ({data['origin']})"
    con.print(f"  from {escape_text(source)}", soft_wrap=True)
    if data["clock_note"]:
        con.print(f"  clock: {escape_text(data['clock_note'])}")
    if data["duplicate_machine_id"]:
        con.print("  [yellow]its machine id is shared with another host (a cloned image?)[/yellow]")
    advise = data["advise"]
    if advise["held_back"]:
        con.print("[bold]fleet advise holds it back[/bold] (never counted as meeting a workload):")
        for why in advise["why"]:
            con.print(f"  {escape_text(why)}")
    else:
        con.print("fleet advise counts it (no error, GPU health warning or stale scan)")
    for o in data["outliers"]:
        worst = max(o["figures"], key=lambda f: f["drop"])
        con.print(
            escape_text(
                f"outlier: {o['device']} ({o['model']}) {worst['case']} "
                f"{worst['precision'] or ''} {worst['drop']:.0%} below the median of "
                f"{worst['group']:,} identical devices"
            )
        )
    con.print("[bold]Findings[/bold]" if data["findings"] else "No findings.")
    colour = {"error": "red", "warning": "yellow"}
    for f in data["findings"]:
        sev = f["severity"] or "?"
        tint = colour.get(sev)
        label = f"[{tint}]{sev}[/{tint}]" if tint else sev
        title = escape_text(f"{f['title']} ({f['id']})")
        con.print(f"  {label}: {title}", soft_wrap=True)
        if f["detail"]:
            con.print(f"    {escape_text(f['detail'])}", soft_wrap=True)
        if f["fix"]:
            con.print(f"    fix: {escape_text(f['fix'])}", soft_wrap=True)
    con.print("[bold]Configuration[/bold]")
    for key, value in data["configuration"].items():
        if value is None:
            continue
        shown = human_bytes(value) if key.endswith("_bytes") else str(value)
        con.print(f"  {key}: {escape_text(shown)}")
    for g in data["gpus"]:
        vram = human_bytes(g["vram_total_bytes"]) if g["vram_total_bytes"] else "?"
        lost = " [red]lost[/red]" if g["lost"] else ""
        con.print(
            f"  gpu {g['gpu_index']}: {escape_text(str(g['catalog_name'] or g['name']))} "
            f"{vram} {escape_text(str(g['pci_bus_id'] or ''))}{lost}"
        )


@fleet_app.command(
    epilog=epilog(
        [
            "hwadvisor fleet show gpu-node-07       # from ./fleet.duckdb",
            "hwadvisor fleet show gpu-node-07 --db /srv/fleet.duckdb --json",
        ],
        _READS,
    )
)
def show(
    host: Annotated[
        str,
        typer.Argument(metavar="HOST", help="A host name (or short name), or a machine id."),
    ],
    db: Db = None,
    stale_days: StaleDays = 30,
    as_json: AsJson = False,
) -> None:
    """Show one host's why: findings with fixes, advice, staleness, configuration.

    Says whether `fleet advise` holds the host back and why (error findings, GPU health
    warnings, a stale scan), whether a device is an outlier, when it was last scanned and
    from which file, then its configuration and GPUs."""
    from hwadvisor.fleet.show import host_detail
    from hwadvisor.fleet.store import open_fleet

    with open_fleet(db or DEFAULT_DB, create=False, read_only=True) as fleet:
        data = host_detail(fleet, host, _now(), stale_days)
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=str))
    else:
        print_host(data)


@fleet_app.command(
    epilog=epilog(
        [
            "hwadvisor fleet export --format csv --out hosts.csv",
            "hwadvisor fleet export --table gpus --format parquet --out gpus.parquet",
            "hwadvisor fleet export --format parquet --partition-by date,site --out inv/",
            "hwadvisor fleet export profiles/ --table findings --format ndjson",
        ],
        _WRITES,
    )
)
def export(
    sources: Sources = None,
    db: Db = None,
    table: Annotated[
        str,
        typer.Option(
            "--table",
            metavar="TABLE",
            help="hosts (latest scan each), gpus, findings, measurements or history.",
        ),
    ] = "hosts",
    fmt: Annotated[
        str, typer.Option("--format", metavar="FORMAT", help="csv, parquet or ndjson.")
    ] = "csv",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="PATH",
            help="The file (default: stdout; not Parquet); with --partition-by, the folder.",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace --out if it exists.")] = False,
    partition_by: Annotated[
        str | None,
        typer.Option(
            "--partition-by",
            metavar="LIST",
            help="Parquet only: a folder of Hive-style partitions by some of date (the scan's, "
            "UTC), site, rack, group: OUT/date=2026-11-23/site=a/hosts_0.parquet.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write the fleet as flat rows, for spreadsheets and CMDBs.

    Columns are null-safe, with units in their names (memory_total_bytes): unknown is an empty
    CSV cell or null, never 0. Serial numbers and the site, rack and group labels are
    columns; times are UTC timestamps in Parquet."""
    from hwadvisor.fleet.export import export as run_export
    from hwadvisor.fleet.export import parse_partitions

    partitions = parse_partitions(partition_by)
    fleet, _ = _open(sources, db)
    with fleet:
        count = run_export(fleet, table, fmt.lower(), out, force=force, partition_by=partitions)
    if out is not None:
        _err(f"wrote {out} ({count:,} rows)")


@fleet_app.command(
    epilog=epilog(
        [
            "hwadvisor fleet forget node17 node18   # decommissioned",
            "hwadvisor fleet forget sha256:0035969ec53f6e7f --dry-run",
            "hwadvisor fleet forget --older-than 90 # every host not scanned in 90 days",
        ],
        _WRITES,
    )
)
def forget(
    hosts: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="HOST...",
            help="Host names, machine ids or host keys (as fleet export shows them).",
            show_default=False,
        ),
    ] = None,
    db: Annotated[
        Path, typer.Option("--db", metavar="FILE", help="The fleet database.")
    ] = DEFAULT_DB,
    older_than: Annotated[
        int | None,
        typer.Option(
            "--older-than",
            metavar="DAYS",
            min=1,
            help="Also every host whose latest scan is older than DAYS days.",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be forgotten; change nothing.")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Remove hosts from the fleet: decommissioned, renamed away, or test machines.

    Their scans are deleted and a tombstone is kept, so that an old profile of theirs read
    again (the same file, a backup) stays out; a scan newer than the last one forgotten brings
    the host back. A name that matches no host is an error (exit 5) and nothing is removed."""
    from hwadvisor.errors import InputError, UsageError
    from hwadvisor.fleet.identity import forget as run_forget
    from hwadvisor.fleet.store import open_fleet

    if not hosts and older_than is None:
        raise UsageError("name the hosts to forget, or give --older-than DAYS")
    with open_fleet(db, create=False) as fleet:
        try:
            gone, unknown = run_forget(
                fleet, _now(), names=hosts or [], older_than_days=older_than, dry_run=dry_run
            )
        except ValueError as exc:
            raise InputError(f"{db}: {exc}") from exc
    if unknown:
        raise InputError(
            f"{db}: no host {', '.join(repr(n) for n in unknown)} (a host name, machine id or "
            "host key of `fleet export`); nothing was forgotten"
        )
    if as_json:
        doc = {
            "db": str(db),
            "dry_run": dry_run,
            "forgotten": [
                {
                    "host_key": g.host_key,
                    "hostname": g.hostname,
                    "scans": g.scans,
                    "last_scan_utc": g.last_scan_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
                for g in gone
            ],
        }
        typer.echo(json.dumps(doc, indent=2))
        return
    verb = "would forget" if dry_run else "forgot"
    names = ", ".join(g.hostname or g.host_key for g in gone[:10])
    more = f" and {len(gone) - 10:,} more" if len(gone) > 10 else ""
    scans = sum(g.scans for g in gone)
    # Stored names are already made visible (no escape sequence reaches the terminal).
    typer.echo(
        f"{db}: {verb} {_hosts(len(gone))} ({scans:,} scans)" + (f": {names}{more}" if gone else "")
    )


@fleet_app.command(
    epilog=epilog(
        [
            "hwadvisor fleet advise --workload llm-7b-lora",
            "hwadvisor fleet advise profiles/ -w resnet50-imagenet --limit 10",
            "hwadvisor fleet advise --serve llama-3.1-8b --quant Q4_K_M",
            "hwadvisor fleet advise --serve llama-3.1-70b --engine vllm --users 32",
        ],
        _READS,
    )
)
def advise(
    workload: Annotated[
        str | None,
        typer.Option(
            "--workload", "-w", metavar="NAME", help="A preset (see `hwadvisor workloads`)."
        ),
    ] = None,
    sources: Sources = None,
    db: Db = None,
    deadline: DeadlineOpt = None,
    limit: Annotated[int, typer.Option("--limit", metavar="N", min=1, help="Rows to print.")] = 30,
    as_json: AsJson = False,
    serve: Annotated[
        str | None,
        typer.Option(
            "--serve",
            metavar="MODEL",
            help="Rank for serving a model instead of training (as `hwadvisor advise --serve`): "
            "a catalog model, a local config.json/GGUF/safetensors file or a preset.",
        ),
    ] = None,
    quant: QuantOpt = None,
    context: ContextOpt = None,
    engine: EngineOpt = None,
    users: UsersOpt = None,
    target_tok_s: TargetTokOpt = None,
    max_ttft: MaxTtftOpt = None,
    prompt_tokens: PromptTokensOpt = None,
    reply_tokens: ReplyTokensOpt = None,
    kv_cache: KvCacheOpt = None,
) -> None:
    """Rank the machines by how well they serve a workload, or a model (--serve).

    Says which machines meet the workload, ranked by time-to-train; with --serve MODEL, which
    machines serve the model at the target speed per user, ranked by decode speed. Hosts of
    identical hardware share one estimate; a host measured as a degraded outlier is named."""
    from hwadvisor.errors import UsageError

    given = serve_options(
        quant=quant,
        context=context,
        engine=engine,
        users=users,
        target_tok_s=target_tok_s,
        max_ttft_s=max_ttft,
        prompt_tokens=prompt_tokens,
        reply_tokens=reply_tokens,
        kv_cache=kv_cache,
    )
    if serve is not None:
        if workload is not None:
            raise UsageError("--serve and --workload: give one (serving a model, or training)")
        if deadline is not None:
            raise UsageError("--deadline is for training (--workload), not --serve")
        _advise_serve(serve, given, sources, db, limit, as_json)
        return
    refuse_serve_options(given)
    if workload is None:
        raise UsageError("give --workload NAME (training) or --serve MODEL (inference)")
    from hwadvisor.advise import load_rules
    from hwadvisor.fleet.advise import rank
    from hwadvisor.units import human_duration
    from hwadvisor.workloads import WorkloadError, get_workload

    try:
        chosen = get_workload(workload)
    except WorkloadError as exc:
        raise UsageError(str(exc)) from exc
    fleet, _ = _open(sources, db)
    rules = load_rules(None)
    hours = deadline if deadline is not None else rules.deadline_hours
    with fleet:
        ranked, configs = rank(fleet, chosen, rules=rules, deadline_hours=hours, now=_now())
    meeting = sum(r.sufficient for r in ranked)
    if as_json:
        doc = {
            "workload": chosen.name,
            "deadline_hours": hours,
            "hosts": len(ranked),
            "meets": meeting,
            "configurations": configs,
            "ranking": [r.as_dict() for r in ranked],
        }
        typer.echo(json.dumps(doc, indent=2))
        return
    from rich.table import Table

    con = _console()
    con.print(
        f"[bold]{escape_text(chosen.name)}[/bold]: {meeting:,} of {len(ranked):,} hosts meet it "
        f"within {human_duration(hours * 3600)} ({configs:,} hardware configurations estimated)"
    )
    table = Table("host", "hardware", "time to train", "fits", "meets", box=None)
    for r in ranked[:limit]:
        when = human_duration(r.seconds) if r.seconds is not None else "—"
        fits = {True: "yes", False: "no", None: "?"}[r.fits_memory]
        name = escape_text(r.hostname or r.host_key)
        if r.outlier:
            name += f" [yellow](outlier: {escape_text(r.outlier)})[/yellow]"
        hardware = r.hardware.removeprefix("this machine's ")
        meets = "[green]yes[/green]" if r.sufficient else "no"
        if r.held_back:
            meets = f"[red]{r.verdict}[/red]: {escape_text('; '.join(r.held_back))}"
        table.add_row(name, escape_text(hardware), when, fits, meets)
    con.print(table)
    if len(ranked) > limit:
        con.print(f"… {len(ranked) - limit:,} more hosts (--limit, or --json for all)")


def _tok(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _advise_serve(
    model: str,
    given: dict[str, Any],
    sources: list[Path] | None,
    db: Path | None,
    limit: int,
    as_json: bool,
) -> None:
    """``fleet advise --serve MODEL``: every host's answer for serving the model."""
    from hwadvisor.fleet.advise import rank_serve, serve_request

    request, name, quant = serve_request(model, **given)
    fleet, _ = _open(sources, db)
    with fleet:
        ranked, configs = rank_serve(fleet, request, now=_now())
    serving = sum(r.serves for r in ranked)
    if as_json:
        doc = {
            "model": name,
            "quant": quant,
            "context": request.context,
            "engine": request.engine,
            "users": request.users,
            "target_tok_s": request.target_tok_s,
            "max_ttft_s": request.max_ttft_s,
            "hosts": len(ranked),
            "serve": serving,
            "configurations": configs,
            "ranking": [r.as_dict() for r in ranked],
        }
        typer.echo(json.dumps(doc, indent=2, allow_nan=False))
        return
    from rich.table import Table

    con = _console()
    con.print(
        f"[bold]{escape_text(name)}[/bold]: {serving:,} of {len(ranked):,} hosts serve it at "
        f"≥ {request.target_tok_s:g} tok/s per user ({configs:,} configurations estimated)"
    )
    con.print(
        f"[dim]{escape_text(quant)}, {request.context:,}-token context, "
        f"{escape_text(request.engine)}, {request.users:,} "
        f"{'user' if request.users == 1 else 'users'} at once[/dim]"
    )
    table = Table(
        "host", "hardware", "fits", "decode\ntok/s", "users at\ntarget", "verdict", box=None
    )
    gb = 1e9
    for r in ranked[:limit]:
        host = escape_text(r.hostname or r.host_key)
        if r.outlier:
            host += " [yellow](outlier)[/yellow]"
        fits = {True: "yes", False: "no", None: "?"}[r.fits_memory]
        verdict = escape_text(r.verdict)
        if r.serves:
            verdict = f"[green]{verdict}[/green]"
        elif r.held_back:
            verdict = f"[red]{verdict}[/red]: {escape_text('; '.join(r.held_back))}"
        elif r.fits_memory is False and r.memory_needed_bytes and r.memory_usable_bytes:
            needed, usable = r.memory_needed_bytes / gb, r.memory_usable_bytes / gb
            verdict = f"needs {_tok(needed)} GB, {_tok(usable)} usable"
        elif r.verdict == "too few users":
            verdict = f"{r.users_at_target} of {request.users} users"
        elif r.fits_memory is None and r.reasons:
            verdict += f": {escape_text(r.reasons[0])}"
        users_cell = "—"
        if r.fits_memory and r.users_at_target is not None:
            users_cell = f"{r.users_at_target:,}"
        hardware = r.hardware.replace("NVIDIA ", "").replace("GeForce ", "")
        table.add_row(host, escape_text(hardware), fits, _tok(r.decode_tok_s), users_cell, verdict)
    con.print(table)
    if len(ranked) > limit:
        con.print(f"… {len(ranked) - limit:,} more hosts (--limit, or --json for all)")


@fleet_app.command(
    epilog=epilog(
        [
            "hwadvisor fleet diff last-month.duckdb fleet.duckdb",
            "hwadvisor fleet diff profiles-may/ profiles-june/ --json",
        ],
        _READS,
    )
)
def diff(
    old: Annotated[
        Path, typer.Argument(metavar="OLD", help="The earlier fleet: a database or a folder.")
    ],
    new: Annotated[
        Path, typer.Argument(metavar="NEW", help="The later fleet: a database or a folder.")
    ],
    as_json: AsJson = False,
) -> None:
    """Show what changed across the fleet between two moments.

    Names the hosts added, gone and changed, then each change (drivers upgraded, GPUs lost,
    new and cleared findings) with its hosts: five by name and a count of the rest; --json
    lists every host."""
    from hwadvisor.fleet.compare import compare

    with _side(old) as before, _side(new) as after:
        data = compare(before, after)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    con = _console()
    con.print(
        f"[bold]{data['hosts_before']:,} → {data['hosts_after']:,} hosts[/bold]: "
        f"{len(data['added']):,} added, {len(data['gone']):,} gone, "
        f"{data['changed_hosts']:,} changed"
    )
    lines: list[str] = []
    for label in ("added", "gone", "changed"):
        if data[label]:
            lines.append(f"  {label}: {_named(data[label], len(data[label]))}")
    for c in data["changes_by_kind"][:15]:
        lines.append(
            f"  {c['fact']}: {c['old']} → {c['new']} on {_hosts(c['hosts'])}: "
            f"{_named(c['host_names'], c['hosts'])}"
        )
    if len(data["changes_by_kind"]) > 15:
        lines.append(f"  … {len(data['changes_by_kind']) - 15:,} more changes (--json lists them)")
    for g in data["gpus_lost"][:10]:
        lines.append(f"  GPUs lost: {g['host']} {g['old']} → {g['new']}")
    if len(data["gpus_lost"]) > 10:
        lines.append(f"  … GPUs lost on {len(data['gpus_lost']) - 10:,} more hosts (--json)")
    for label, key in (("new finding", "new_findings"), ("cleared", "cleared_findings")):
        for f in data[key][:10]:
            names = _named(f["host_names"], f["hosts"])
            lines.append(f"  {label} {f['id']} on {_hosts(f['hosts'])}: {names}")
        if len(data[key]) > 10:
            lines.append(f"  … {len(data[key]) - 10:,} more ({label}; --json lists them)")
    for line in lines:
        con.print(escape_text(line), soft_wrap=True)


def _is_database(path: Path) -> bool:
    """Whether ``path`` is a DuckDB file, whatever its name (its header says "DUCK" at byte
    8): ``old.db`` is a fleet, not a folder of one unreadable file."""
    try:
        with path.open("rb") as handle:
            return handle.read(16)[8:12] == b"DUCK"
    except OSError:
        return False


def _side(path: Path) -> Fleet:
    from hwadvisor.fleet.store import ingest as run_ingest
    from hwadvisor.fleet.store import open_fleet

    if path.is_file() and (path.suffix == ".duckdb" or _is_database(path)):
        return open_fleet(path, create=False, read_only=True)
    fleet = open_fleet(None, create=True)
    try:
        run_ingest(fleet, [path])
    except BaseException:
        fleet.close()
        raise
    return fleet


@fleet_app.command(
    epilog=epilog(
        [
            "hwadvisor fleet report                 # reports/fleet.html and .pdf",
            "hwadvisor fleet report profiles/ --format html --out /srv/www/",
        ],
        [ExitStatus.USAGE, ExitStatus.DEGRADED, ExitStatus.IO_ERROR, ExitStatus.INPUT_ERROR],
    )
)
def report(
    sources: Sources = None,
    db: Db = None,
    fmt: Annotated[
        str, typer.Option("--format", metavar="LIST", help="html, pdf or both (html,pdf).")
    ] = "html,pdf",
    out_dir: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="Folder the report is written to.")
    ] = Path("reports"),
    stale_days: StaleDays = 30,
    redact: RedactOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Write the fleet report, as HTML and PDF.

    Page one shows the fleet (GPU models, capability by scenario, findings, outliers), then
    comes a row per host. The PDF shows host names as stable tokens unless --no-redact."""
    import contextlib

    from hwadvisor.fleet.queries import summary as roll_up
    from hwadvisor.fleet.report import pdf_helper, write_fleet_report
    from hwadvisor.render.report import parse_formats

    formats = parse_formats(fmt, ("html", "pdf"))
    # The PDF's helper process first, before the database has threads: stopped on the way out.
    with contextlib.ExitStack() as stack:
        worker = pdf_helper(formats)
        if worker is not None:
            stack.enter_context(worker)
        fleet, _ = _open(sources, db)
        with fleet:
            data = roll_up(fleet, _now(), stale_days)
            written = write_fleet_report(
                fleet, data, formats, out_dir, redact=redact, worker=worker
            )
    for path in written.files if not quiet else ():
        typer.echo(f"wrote {path}")
    for warning in written.warnings:
        _err(warning)
    if written.warnings:  # no PDF, or a one-off redaction salt: as for one host's report
        raise typer.Exit(ExitStatus.DEGRADED)
