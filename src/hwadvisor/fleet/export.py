"""``fleet export``: the hosts (or GPUs, findings, measurements) as CSV, Parquet or NDJSON.

Flat and null-safe: one column per fact, units in the names, unknown as an empty cell (CSV) or
``null``; the files are written by DuckDB (no Python loop per row), atomically.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hwadvisor.errors import OutputError, UsageError
from hwadvisor.fleet.rows import FINDING_COLUMNS, GPU_COLUMNS, HOST_COLUMNS, MEASUREMENT_COLUMNS
from hwadvisor.fleet.store import Fleet

FORMATS = {"csv": "csv", "parquet": "parquet", "ndjson": "json"}
_IDENTITY = (
    "host_key, hostname, machine_id, strftime(effective_utc, '%Y-%m-%dT%H:%M:%SZ') AS scan_utc, "
    "duplicate_id AS machine_id_shared, clock_note, origin, schema_version, tool_version, path"
)


def _columns(names: tuple[tuple[str, str], ...], prefix: str = "") -> str:
    return ", ".join(f"{prefix}{name}" for name, _ in names)


TABLES = {
    "hosts": f"SELECT {_IDENTITY}, {_columns(HOST_COLUMNS)} FROM hosts ORDER BY host_key",
    "gpus": (
        "SELECT h.host_key, h.hostname, "
        f"{_columns(GPU_COLUMNS, 'g.')} FROM hosts h JOIN gpus g USING (scan_id) "
        "ORDER BY h.host_key, g.gpu_index"
    ),
    "findings": (
        f"SELECT h.host_key, h.hostname, {_columns(FINDING_COLUMNS, 'f.')} "
        "FROM hosts h JOIN findings f USING (scan_id) ORDER BY h.host_key, f.id"
    ),
    "measurements": (
        f"SELECT h.host_key, h.hostname, {_columns(MEASUREMENT_COLUMNS, 'm.')} "
        "FROM hosts h JOIN measurements m USING (scan_id) ORDER BY h.host_key, m.device"
    ),
    "history": (
        "SELECT host_key, hostname, machine_id, "
        "strftime(effective_utc, '%Y-%m-%dT%H:%M:%SZ') AS scan_utc, clock_note, path, "
        f"{_columns(HOST_COLUMNS)} FROM host_scans ORDER BY host_key, effective_utc"
    ),
}


#: A spreadsheet takes a cell starting with one of these as a formula (=HYPERLINK(…), +cmd…,
#: @SUM…, -2+3): text cells that do are written with a leading apostrophe (OWASP's advice on
#: CSV injection), which spreadsheets show as text and never evaluate.
FORMULA_PATTERN = r"^[=+\-@\t\r]"


def _defused(fleet: Fleet, sql: str) -> str:
    """``sql`` with every text column's formula-like cells prefixed by an apostrophe."""
    columns = fleet.con.execute(f"DESCRIBE ({sql})").fetchall()
    parts = []
    for name, kind, *_ in columns:
        quoted = '"' + str(name).replace('"', '""') + '"'
        if str(kind).upper() == "VARCHAR":
            parts.append(
                f"CASE WHEN regexp_matches({quoted}, '{FORMULA_PATTERN}') "
                f"THEN chr(39) || {quoted} ELSE {quoted} END AS {quoted}"
            )
        else:
            parts.append(quoted)
    return f"SELECT {', '.join(parts)} FROM ({sql})"


def export(fleet: Fleet, table: str, fmt: str, out: Path | None, *, force: bool = False) -> int:
    """Write ``table`` as ``fmt`` to ``out`` (``None``: stdout, CSV/NDJSON only); the row count."""
    if table not in TABLES:
        raise UsageError(f"--table is one of {', '.join(TABLES)}, not {table!r}")
    if fmt not in FORMATS:
        raise UsageError(f"--format is one of {', '.join(FORMATS)}, not {fmt!r}")
    sql = TABLES[table]
    count = int(fleet.scalar(f"SELECT count(*) FROM ({sql})") or 0)
    if fmt == "csv":
        sql = _defused(fleet, sql)
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
    if out.exists() and not force:
        raise OutputError(
            f"{out}: already exists (hwadvisor never overwrites: --force replaces it)"
        )
    if not out.parent.is_dir():
        raise OutputError(f"{out.parent}: no such folder")
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
