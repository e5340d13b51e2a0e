"""``fleet export``: the hosts (or GPUs, findings, measurements) as CSV, Parquet or NDJSON.

Flat and null-safe: one column per fact, units in the names, unknown as an empty cell (CSV) or
``null``; the files are written by DuckDB (no Python loop per row), atomically. Times are
``2026-11-23T10:02:03Z`` text in CSV and NDJSON, and timestamps (UTC) in Parquet. A Parquet
export can be a folder of files partitioned Hive-style (``date=2026-11-23/site=a/hosts_0.parquet``)
by scan date and labels, for object storage and DuckDB's ``read_parquet(..., hive_partitioning
= true)``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hwadvisor.errors import OutputError, UsageError
from hwadvisor.fleet.rows import FINDING_COLUMNS, GPU_COLUMNS, HOST_COLUMNS, MEASUREMENT_COLUMNS
from hwadvisor.fleet.store import Fleet

FORMATS = {"csv": "csv", "parquet": "parquet", "ndjson": "json"}
#: What a Parquet export can be partitioned by: the scan's date (UTC) and three labels.
PARTITIONS = ("date", "site", "rack", "group")
#: The labels every table carries, for filtering and partitioning.
_LABELS = ("site", "rack", "group")


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(names: tuple[tuple[str, str], ...], prefix: str = "") -> str:
    return ", ".join(f"{prefix}{_q(name)}" for name, _ in names)


def _time(column: str, alias: str, fmt: str) -> str:
    """A naive UTC timestamp column as the format wants it: a timestamp with time zone (UTC)
    in Parquet, ISO 8601 text with ``Z`` elsewhere."""
    if fmt == "parquet":
        return f"timezone('UTC', {column}) AS {alias}"
    return f"strftime({column}, '%Y-%m-%dT%H:%M:%SZ') AS {alias}"


def _labels(prefix: str = "") -> str:
    """``site``, ``rack``, ``group`` and the whole label map (a map in Parquet and NDJSON,
    JSON text in CSV)."""
    return ", ".join(f"{prefix}{_q(name)}" for name in _LABELS) + f", {prefix}labels"


def table_sql(table: str, fmt: str, *, date: bool = False) -> str:
    """The query of one export table in one format (``date``: with the scan's UTC date)."""
    when = _time("effective_utc", "scan_utc", fmt)
    ingested = _time("ingested_utc", "ingested_utc", fmt)
    day = ", CAST(effective_utc AS DATE) AS date" if date else ""
    if table in ("hosts", "history"):
        source, order = (
            ("hosts", "host_key") if table == "hosts" else ("host_scans", "host_key, effective_utc")
        )
        return (
            f"SELECT host_key, hostname, machine_id, {when}, {ingested}, "
            "duplicate_id AS machine_id_shared, identity_note, clock_note, origin, "
            f"schema_version, tool_version, path, system_serial, {_labels()}, "
            f"{_columns(HOST_COLUMNS)}{day} FROM {source} ORDER BY {order}"
        )
    hday = day.replace("effective_utc", "h.effective_utc")
    hwhen = _time("h.effective_utc", "scan_utc", fmt)
    rows, spec, alias, order = {
        "gpus": ("gpus", GPU_COLUMNS, "g", "g.gpu_index"),
        "findings": ("findings", FINDING_COLUMNS, "f", "f.id"),
        "measurements": ("measurements", MEASUREMENT_COLUMNS, "m", "m.device"),
    }[table]
    return (
        f"SELECT h.host_key, h.hostname, {hwhen}, {_labels('h.')}, "
        f"{_columns(spec, alias + '.')}{hday} FROM hosts h JOIN {rows} {alias} USING (scan_id) "
        f"ORDER BY h.host_key, {order}"
    )


TABLES = ("hosts", "gpus", "findings", "measurements", "history")


#: A spreadsheet takes a cell starting with one of these as a formula (=HYPERLINK(…), +cmd…,
#: @SUM…, -2+3): text cells that do are written with a leading apostrophe (OWASP's advice on
#: CSV injection), which spreadsheets show as text and never evaluate.
FORMULA_PATTERN = r"^[=+\-@\t\r]"


def _defused(fleet: Fleet, sql: str) -> str:
    """``sql`` with every text column's formula-like cells prefixed by an apostrophe."""
    columns = fleet.con.execute(f"DESCRIBE ({sql})").fetchall()
    parts = []
    for name, kind, *_ in columns:
        quoted = _q(str(name))
        if str(kind).upper() == "VARCHAR":
            parts.append(
                f"CASE WHEN regexp_matches({quoted}, '{FORMULA_PATTERN}') "
                f"THEN chr(39) || {quoted} ELSE {quoted} END AS {quoted}"
            )
        else:
            parts.append(quoted)
    return f"SELECT {', '.join(parts)} FROM ({sql})"


def _as_map(sql: str) -> str:
    """``labels`` (JSON text in the database) as a map of text to text."""
    return (
        "SELECT * REPLACE (CAST(CAST(labels AS JSON) AS MAP(VARCHAR, VARCHAR)) AS labels) "
        f"FROM ({sql})"
    )


def parse_partitions(text: str | None) -> list[str]:
    """``date,site`` as a list of :data:`PARTITIONS`; a usage error otherwise."""
    if not text:
        return []
    parts = [p.strip().lower() for p in text.split(",") if p.strip()]
    bad = [p for p in parts if p not in PARTITIONS]
    if bad or len(set(parts)) != len(parts) or not parts:
        raise UsageError(
            f"--partition-by takes some of {', '.join(PARTITIONS)}, comma-separated, each "
            f"once; not {text!r}"
        )
    return parts


def export(
    fleet: Fleet,
    table: str,
    fmt: str,
    out: Path | None,
    *,
    force: bool = False,
    partition_by: list[str] | None = None,
) -> int:
    """Write ``table`` as ``fmt`` to ``out`` (``None``: stdout, CSV/NDJSON only); the row count.
    With ``partition_by`` (Parquet only), ``out`` is a folder of Hive-style partitions."""
    if table not in TABLES:
        raise UsageError(f"--table is one of {', '.join(TABLES)}, not {table!r}")
    if fmt not in FORMATS:
        raise UsageError(f"--format is one of {', '.join(FORMATS)}, not {fmt!r}")
    if partition_by and fmt != "parquet":
        raise UsageError("--partition-by writes Parquet: add --format parquet")
    if partition_by and out is None:
        raise UsageError("--partition-by writes a folder: name it with --out")
    sql = table_sql(table, fmt, date="date" in (partition_by or []))
    count = int(fleet.scalar(f"SELECT count(*) FROM ({sql})") or 0)
    # CSV: formula-like text defused, the label map as JSON text; else the labels as a map.
    sql = _defused(fleet, sql) if fmt == "csv" else _as_map(sql)
    options = {"csv": "FORMAT csv, HEADER true", "parquet": "FORMAT parquet", "json": "FORMAT json"}
    if out is None:
        if fmt == "parquet":
            raise UsageError("Parquet is binary: name a file with --out")
        import sys

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"out.{fmt}"
            fleet.con.execute(f"COPY ({sql}) TO '{path}' ({options[FORMATS[fmt]]})")
            sys.stdout.write(path.read_text(encoding="utf-8"))
            sys.stdout.flush()
        return count
    if (out.exists() or out.is_symlink()) and not force:
        raise OutputError(
            f"{out}: already exists (hwadvisor never overwrites: --force replaces it)"
        )
    if not out.parent.is_dir():
        raise OutputError(f"{out.parent}: no such folder")
    if partition_by:
        _write_partitioned(fleet, sql, table, partition_by, out)
        return count
    if out.is_dir():
        raise OutputError(f"{out}: is a folder; --out names the file (or add --partition-by)")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp_path = Path(tmp_name)
    try:
        literal = str(tmp_path).replace("'", "''")
        fleet.con.execute(f"COPY ({sql}) TO '{literal}' ({options[FORMATS[fmt]]})")
        os.replace(tmp_path, out)
    except OSError as exc:
        raise OutputError(f"{out}: cannot be written: {exc.strerror or exc}") from exc
    finally:
        tmp_path.unlink(missing_ok=True)
    return count


def _write_partitioned(
    fleet: Fleet, sql: str, table: str, partition_by: list[str], out: Path
) -> None:
    """``out/date=…/site=…/<table>_0.parquet``, written into a new folder beside ``out`` and
    moved into place whole (an existing ``out`` is replaced only when all was written)."""
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    old: Path | None = None
    try:
        target = staging / "export"
        literal = str(target).replace("'", "''")
        by = ", ".join(_q(p) for p in partition_by)
        fleet.con.execute(
            f"COPY ({sql}) TO '{literal}' (FORMAT parquet, PARTITION_BY ({by}), "
            f"FILENAME_PATTERN '{table}_{{i}}')"
        )
        if not target.exists():  # no rows: an empty folder, not nothing
            target.mkdir()
        if out.exists() or out.is_symlink():
            old = staging / "previous"
            os.replace(out, old)
        os.replace(target, out)
    except OSError as exc:
        if old is not None and not out.exists():
            os.replace(old, out)
        raise OutputError(f"{out}: cannot be written: {exc.strerror or exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
