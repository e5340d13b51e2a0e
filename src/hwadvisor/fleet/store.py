"""The fleet database: profiles of many machines in one embedded DuckDB file.

Tables: ``files`` (every file ever offered, with its size and mtime so an unchanged folder is
re-ingested from ``stat`` alone, and the reason a file was skipped), ``scans`` (one row per
distinct profile, history kept, the profile itself compressed in ``doc``), and per scan ``gpus``,
``findings`` and ``measurements``; ``scan_hosts`` (which host each scan belongs to:
:mod:`hwadvisor.fleet.identity`) and ``forgotten`` (the tombstones of ``fleet forget`` and the
retention setting). Views: ``host_scans`` (every scan with the host it belongs to) and
``hosts`` (the latest scan of each host). An ingest is one transaction: a failure or Ctrl-C
leaves the database as it was.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import re
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwadvisor.errors import HwAdvisorError, InputError, OutputError, UsageError
from hwadvisor.fleet import logstream
from hwadvisor.fleet.identity import resolve
from hwadvisor.fleet.rows import (
    FINDING_COLUMNS,
    GPU_COLUMNS,
    HOST_COLUMNS,
    IDENTITY_COLUMNS,
    MEASUREMENT_COLUMNS,
    Rows,
    flatten,
)
from hwadvisor.inputfile import read_input
from hwadvisor.model import fastjson

if TYPE_CHECKING:
    pass

#: Bumped when the tables change shape; a database from a newer hwadvisor is refused.
#: 2: serials, labels and GPU serials; hosts told apart by GPU UUIDs and serials
#: (``scan_hosts``); ``forgotten``.
FLEET_SCHEMA = 2

#: Files a folder walk never offers as profiles: outputs of hwadvisor and of other tools.
_NOT_INPUT = (
    ".html", ".pdf", ".png", ".svg", ".jpg", ".duckdb", ".wal", ".parquet", ".prom", ".tmp",
    ".gz", ".zip", ".tar", ".whl", ".csv.gz", ".pyc",
)  # fmt: skip

#: A profile dated this far past the ingest is from a host with a wrong clock.
_FUTURE = timedelta(days=1)
#: hwadvisor did not exist before this: an earlier date is a clock reset to its epoch.
_EPOCH = datetime(2020, 1, 1)

#: Above this many files to read, parsing runs in worker processes (one per usable CPU).
_PARALLEL_FROM = 256

#: The database's own memory (``HWADVISOR_FLEET_MEMORY``, in DuckDB's units, e.g. ``2GB``, sets
#: another) for a database file; what it needs beyond spills to disk, beside the file.
_MEMORY_LIMIT = "512MB"
_AMOUNT = re.compile(r"\d+(\.\d+)?\s*([KMGT]i?B|B)", re.IGNORECASE)


def _memory_limit() -> str:
    value = os.environ.get("HWADVISOR_FLEET_MEMORY", "").strip() or _MEMORY_LIMIT
    if not _AMOUNT.fullmatch(value):
        raise UsageError(
            f"HWADVISOR_FLEET_MEMORY={value!r} is not an amount of memory: give one such as "
            "512MB or 2GB, or leave it unset"
        )
    return value


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError as exc:  # the slim install
        raise InputError(
            "hwadvisor fleet needs DuckDB: pip install 'hwadvisor[fleet]' (bash setup.sh "
            "installs it)"
        ) from exc
    return duckdb


# --------------------------------------------------------------------------------------------
# Opening


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _schema_sql(upgrade: bool = False) -> list[str]:
    """The tables and views; with ``upgrade``, the columns added since an older fleet schema
    too (null in its old rows)."""

    def cols(spec: Iterable[tuple[str, str]]) -> str:
        return ", ".join(f"{_quoted(name)} {kind}" for name, kind in spec)

    return [
        "CREATE TABLE IF NOT EXISTS fleet_meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
        "CREATE TABLE IF NOT EXISTS files (path VARCHAR PRIMARY KEY, size_bytes BIGINT, "
        "mtime_ns BIGINT, scan_id VARCHAR, status VARCHAR, reason VARCHAR, "
        "ingested_utc TIMESTAMP)",
        f"CREATE TABLE IF NOT EXISTS scans ({cols(_SCAN_SPEC)}, PRIMARY KEY (scan_id))",
        f"CREATE TABLE IF NOT EXISTS gpus (scan_id VARCHAR, {cols(GPU_COLUMNS)})",
        f"CREATE TABLE IF NOT EXISTS findings (scan_id VARCHAR, {cols(FINDING_COLUMNS)})",
        f"CREATE TABLE IF NOT EXISTS measurements (scan_id VARCHAR, {cols(MEASUREMENT_COLUMNS)})",
        *(
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {_quoted(name)} {kind}"
            for table, spec in (_TABLES.items() if upgrade else ())
            for name, kind in spec
        ),
        # Which host each scan belongs to (hwadvisor.fleet.identity), rewritten on each change.
        "CREATE TABLE IF NOT EXISTS scan_hosts (scan_id VARCHAR, host_key VARCHAR, "
        "latest BOOLEAN, shown BOOLEAN, duplicate_id BOOLEAN, display_name VARCHAR, "
        "identity_note VARCHAR)",
        # Hosts forgotten (fleet forget, the retention setting): their scans stay out until a
        # newer one arrives.
        "CREATE TABLE IF NOT EXISTS forgotten (host_key VARCHAR, hostname VARCHAR, "
        "forgotten_utc TIMESTAMP, upto_utc TIMESTAMP, reason VARCHAR, tokens VARCHAR)",
        """CREATE OR REPLACE VIEW host_scans AS
        SELECT s.* EXCLUDE (doc), i.host_key, i.duplicate_id, i.display_name, i.identity_note,
               i.latest, i.shown
        FROM scans s JOIN scan_hosts i USING (scan_id)""",
        # The latest scan of each host; a rename's old name, under a shared machine id, is
        # history only (not shown).
        """CREATE OR REPLACE VIEW hosts AS
        SELECT * EXCLUDE (latest, shown) FROM host_scans WHERE latest AND shown""",
    ]


@dataclass
class Fleet:
    """An open fleet database (a file, or in memory for a folder read once)."""

    con: Any
    path: Path | None

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        self.close()
        # A full disk or damaged blocks met by any command's statement: the cause in one line.
        mapped = storage_error(exc, self.path) if exc is not None else None
        if mapped is not None:
            raise mapped from exc

    def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """Rows as dicts (column name → value)."""
        cur = self.con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def scalar(self, sql: str, params: list[Any] | None = None) -> Any:
        row = self.con.execute(sql, params or []).fetchone()
        return row[0] if row else None


def open_fleet(path: Path | None, *, create: bool, read_only: bool = False) -> Fleet:
    """Open (or with ``create``, make) the database at ``path``; ``None`` is in memory.
    ``read_only`` for the commands that only read (a backup, a snapshot, a 0444 file)."""
    duckdb = _duckdb()
    if path is not None:
        if not create and not path.exists():
            raise InputError(
                f"{path}: no fleet database here: run `hwadvisor fleet ingest FOLDER --db "
                f"{path}` first, or name the folders of profiles"
            )
        if path.exists() and not path.is_file():
            raise InputError(f"{path}: is not a file: --db names the database file")
        if create and not path.parent.is_dir():
            raise OutputError(f"{path.parent}: no such folder for the fleet database")
    # A reader opens read-only (a backup, a snapshot, a 0444 file); no extension is ever
    # fetched or loaded behind the user's back (a SQLite file given as --db stays an error).
    read_only = read_only and path is not None and not create
    config: dict[str, object] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    }
    if path is not None:
        # A database file spills to its own temporary folder beside it: an ingest of 100,000
        # profiles (one transaction) then stays within about 1 GB instead of holding every row
        # in memory until the commit (2.9 GB measured).
        config["memory_limit"] = _memory_limit()
    try:
        con = duckdb.connect(str(path) if path else ":memory:", read_only=read_only, config=config)
    except duckdb.IOException as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise OutputError(
                f"{path}: the fleet database is in use by another process (an ingest still "
                "running?): try again when it has finished"
            ) from exc
        raise InputError(f"{path}: not a fleet database ({_first_line(text)})") from exc
    except duckdb.Error as exc:
        raise InputError(f"{path}: not a fleet database ({_first_line(str(exc))})") from exc
    fleet = Fleet(con, path)
    try:
        current = _check_schema(fleet, create, read_only=read_only)
    except BaseException as exc:
        con.close()
        if (mapped := storage_error(exc, path)) is not None:
            raise mapped from exc
        raise
    if not current:
        # An older fleet schema opened to read: upgraded once, in place.
        con.close()
        return open_fleet(path, create=True)
    return fleet


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "unknown error"


#: How DuckDB (and the OS) say a disk or a quota is full, and that a database file is damaged.
_FULL_ERRNOS = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG") if hasattr(errno, name)
)
_FULL_WORDS = ("no space left on device", "disk quota exceeded", "file too large")
_DAMAGED_WORDS = (
    "corrupt database file",
    "does not match stored checksum",
    "not a valid duckdb database file",
    "invalid block",
)


def storage_error(exc: BaseException, where: object) -> HwAdvisorError | None:
    """The one-line error for a full disk (exit 4) or damaged database blocks (exit 5) that
    DuckDB met, behind ``exc`` anywhere in its chain; None for any other error (a bug stays a
    bug, Ctrl-C stays an interruption, a failed write of stdout is the top level's to say)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, HwAdvisorError):
            return None  # already said in its own words
        text = str(seen).lower()
        if _is_duckdb_error(seen) and any(w in text for w in _FULL_WORDS):
            return OutputError(_full_message(seen, where))
        if _is_duckdb_error(seen) and any(w in text for w in _DAMAGED_WORDS):
            return InputError(
                f"{where or 'the fleet'}: the fleet database is damaged "
                f"({_first_line(str(seen))}): restore it from a backup, or ingest the "
                "profiles again into a new --db"
            )
        seen = seen.__cause__ or seen.__context__
    return None


#: The file DuckDB names where a write failed (its message may wrap it in JSON).
_WRITING_RE = re.compile(r'Could not write file \\?"(.+?)\\?"')


def _full_message(exc: BaseException, where: object) -> str:
    """ "cannot write FILE: no space left on the device: free some space in FOLDER …": the file
    that could not be written, which is not always the database (an export's --out, a
    temporary file)."""
    match = _WRITING_RE.search(str(exc))
    target = Path(match.group(1)) if match else None
    what = f"cannot write {target}" if target else f"{where or 'the fleet'}"
    folder = target.parent if target else None
    hint = f"free some space in {folder}" if folder else "free some space"
    temporary = folder is not None and folder.parent == Path(tempfile.gettempdir())
    if temporary and folder is not None and folder.name.startswith(("tmp", "hwadvisor-")):
        hint += " or set TMPDIR to a folder with room"  # a temporary folder of ours
    return f"{what}: no space left on the device: {hint}, and run it again; nothing was changed"


def _is_duckdb_error(exc: BaseException) -> bool:
    return type(exc).__module__.partition(".")[0].lstrip("_") == "duckdb"


def _check_schema(fleet: Fleet, create: bool, *, read_only: bool = False) -> bool:
    """Check the database is a fleet this version reads, and bring its schema up to date;
    False where it is read-only and needs an upgrade (the caller reopens it to write)."""
    duckdb = _duckdb()
    where = fleet.path or "the fleet"
    tables = {row[0] for row in fleet.con.execute("SHOW TABLES").fetchall()}
    version = 0
    if "fleet_meta" in tables:
        value = fleet.scalar("SELECT value FROM fleet_meta WHERE key = 'schema'")
        version = int(value) if value and str(value).isdigit() else 0
        if version > FLEET_SCHEMA:
            raise InputError(
                f"{where}: written by a newer hwadvisor (fleet schema {version}; this one "
                f"reads up to {FLEET_SCHEMA}): upgrade hwadvisor"
            )
        if version < 1:
            raise InputError(f"{where}: not a fleet database (no schema version)")
    elif tables:
        raise InputError(f"{where}: a DuckDB database, but not an hwadvisor fleet database")
    elif not create:
        raise InputError(f"{where}: an empty database: run `hwadvisor fleet ingest` first")
    if read_only:
        return version == FLEET_SCHEMA
    try:
        fleet.con.execute("BEGIN TRANSACTION")
        for sql in _schema_sql(upgrade=0 < version < FLEET_SCHEMA):
            fleet.con.execute(sql)
        fleet.con.execute(
            "INSERT OR REPLACE INTO fleet_meta VALUES ('schema', ?)", [str(FLEET_SCHEMA)]
        )
        if 0 < version < 2:
            # Hosts of an older fleet, told apart by the GPU UUIDs it already holds.
            resolve(fleet, _now())
        fleet.con.execute("COMMIT")
    except duckdb.Error as exc:
        fleet.con.execute("ROLLBACK")
        raise OutputError(f"{where}: cannot be written ({_first_line(str(exc))})") from exc
    return True


# --------------------------------------------------------------------------------------------
# Reading one file


@dataclass
class Loaded:
    """What one file gave: rows to store, or the reason it was skipped."""

    path: str
    size: int
    mtime_ns: int
    scan_id: str | None = None
    rows: Rows | None = None
    doc: bytes | None = None
    reason: str | None = None
    stream: str | None = None
    """A log stream's own row (what it held); its profiles come as rows of their own."""


def _reason(exc: HwAdvisorError, path: str) -> str:
    text = str(exc)
    return text[len(path) + 2 :] if text.startswith(f"{path}: ") else text


def load_file(item: tuple[str, int, int]) -> Loaded:
    """Read, check and flatten one file (runs in a worker process for large ingests)."""
    path, size, mtime_ns = item
    out = Loaded(path, size, mtime_ns)
    try:
        text = read_input(Path(path))
    except InputError as exc:
        out.reason = _reason(exc, path)
        # Not read (permissions, an I/O error): recorded without its size and time, so that
        # the next ingest tries it again even if the file has not changed.
        out.size, out.mtime_ns = -1, -1
        return out
    return load_text(out, text)


def load_text(out: Loaded, text: str) -> Loaded:
    """Check and flatten the text of one profile: a file's, or one found in a log stream."""
    path = out.path
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    out.scan_id = digest[:32]
    try:
        doc, origin, native = _document(text, path)
        out.rows = flatten(doc, origin)
        # A profile is stored as written; another tool's output as the profile it was read into.
        stored = text if native else json.dumps(doc, separators=(",", ":"))
        out.doc = zlib.compress(stored.encode("utf-8", "surrogatepass"), 1)
    except InputError as exc:
        out.rows, out.doc = None, None
        out.reason = _reason(exc, path)
    except (Exception, RecursionError) as exc:  # noqa: BLE001 - one file's failure is its own
        # One odd file never stops a batch: it is skipped, with what went wrong.
        out.rows, out.doc = None, None
        out.reason = f"could not be read ({type(exc).__name__}: {_first_line(str(exc))[:100]})"
    return out


def load_items(item: tuple[str, int, int]) -> Iterator[Loaded]:
    """What one file gave: its profile, or for a log stream (:mod:`.logstream`) each profile
    in it under the name of where it was, then the stream's own row (for its size and time)."""
    stream = logstream.open_stream(item[0])
    if stream is None:
        loaded = load_file(item)
        loaded.path = logstream.display_name(loaded.path)
        yield loaded
        return
    for part in stream.parts():
        out = Loaded(part.where, len(part.text or ""), item[2], reason=part.reason)
        yield out if part.text is None else load_text(out, part.text)
    if stream.error:  # not read to its end: read again next time
        yield Loaded(stream.name, -1, -1, reason=stream.error)
    else:
        yield Loaded(stream.name, item[1], item[2], stream=stream.stats.summary())


def _document(text: str, path: str) -> tuple[dict[str, Any], str, bool]:
    """The profile document in ``text``: an hwadvisor profile (checked for its version), or
    another tool's output turned into one by the importers."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("{") and '"schema_version"' in stripped[:4096]:
        from hwadvisor.model.load import profile_document

        data, _ = profile_document(stripped)
        if _tool(data) != "hwadvisor" or not isinstance(data.get("created_utc"), str):
            raise InputError("not an hwadvisor profile (no tool name or created_utc)")
        return data, "import" if isinstance(data.get("imported"), dict) else "scan", True
    from hwadvisor.importers.detect import import_text

    try:
        profile = import_text(text, path)
    except InputError as exc:
        why = _reason(exc, path)
        if why.startswith("not a recognised format"):
            why = "neither an hwadvisor profile nor a tool output hwadvisor import reads"
        raise InputError(why) from exc
    fmt = profile.imported.files[0].format if profile.imported and profile.imported.files else None
    return profile.model_dump(mode="json"), fmt or "import", False


def _tool(data: dict[str, Any]) -> Any:
    tool = data.get("tool")
    return tool.get("name") if isinstance(tool, dict) else None


# --------------------------------------------------------------------------------------------
# Finding the files


def walk(sources: Iterable[Path]) -> Iterator[tuple[str, int, int]]:
    """Every candidate file under ``sources`` (files as given; folders recursively, hidden
    entries and hwadvisor's own outputs left out) as (absolute path, size, mtime_ns)."""
    seen: set[str] = set()
    for source in sources:
        if not source.exists():
            raise InputError(f"{source}: no such file or folder")
        if source.is_dir():
            for root, dirs, files in os.walk(source):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if name.startswith(".") or name.lower().endswith(_NOT_INPUT):
                        continue
                    item = _stat(Path(root) / name)
                    if item and item[0] not in seen:
                        seen.add(item[0])
                        yield item
        else:
            item = _stat(source)
            if item and item[0] not in seen:
                seen.add(item[0])
                yield item


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def db_path(path: str) -> str:
    """A file's path as the database keeps it and people see it: bytes that are not UTF-8 as
    ``\\xff`` escapes, control characters (a terminal's escape sequences) as ``\\x1b``. The
    file itself is still read by its real name."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _stat(path: Path) -> tuple[str, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return (str(path.absolute()), -1, -1)  # read (and skipped with the reason) later
    return (str(path.absolute()), info.st_size, info.st_mtime_ns)


# --------------------------------------------------------------------------------------------
# Ingest


@dataclass
class IngestResult:
    files: int = 0
    """Files offered (after the walk's filters)."""
    unchanged: int = 0
    """Files whose size and mtime matched the database: not read again."""
    new_scans: int = 0
    known_scans: int = 0
    """Files read whose profile the database already had (a copy, or touched)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(path, reason) for each file that is not a profile this hwadvisor reads."""
    clock_skewed: int = 0
    forgotten_scans: int = 0
    """Scans read of hosts forgotten (``fleet forget``, retention) and left out again."""
    retired: list[str] = field(default_factory=list)
    """Host keys the retention setting dropped in this ingest."""


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def _effective(rows: Rows, mtime_ns: int, now: datetime) -> tuple[datetime, str | None]:
    """When the scan is taken to have run: its own time, unless the host's clock was wrong
    (then the file's modification time, and a note)."""
    mtime = datetime.fromtimestamp(max(mtime_ns, 0) / 1e9, timezone.utc).replace(tzinfo=None)
    when = rows.created_utc
    if when is None:
        return min(mtime, now), "no scan time in the profile: the file's time is used"
    if when > now + _FUTURE:
        return min(mtime, now), f"scan time {when:%Y-%m-%d %H:%M} is in the future (host clock)"
    if when < _EPOCH:
        return min(mtime, now), f"scan time {when:%Y-%m-%d} is before 2020 (host clock reset)"
    return when, None


def _machine_key(rows: Rows, path: str) -> str:
    """The software identity: the machine id, else the host name, else the file (the hardware
    identity, GPU UUIDs and serials, is added by :func:`hwadvisor.fleet.identity.resolve`)."""
    if rows.machine_id:
        return rows.machine_id
    if rows.hostname:
        return f"host:{rows.hostname}"
    return f"file:{path}"


def ingest(
    fleet: Fleet,
    sources: Iterable[Path],
    *,
    workers: int | None = None,
    now: datetime | None = None,
    retention_days: int | None = None,
) -> IngestResult:
    """Add the profiles under ``sources`` to ``fleet``, in one transaction; with
    ``retention_days``, store that setting first (0: keep hosts forever)."""
    from hwadvisor.fleet.identity import retention_days as stored_retention
    from hwadvisor.fleet.identity import set_retention_days

    now = now or _now()
    result = IngestResult()
    stored = stored_retention(fleet)
    # A retention setting is applied by every ingest, even of nothing new.
    changed = retention_days is not None and retention_days != stored
    retain = bool(retention_days if retention_days is not None else stored)
    known = {
        row[0]: (row[1], row[2])
        for row in fleet.con.execute("SELECT path, size_bytes, mtime_ns FROM files").fetchall()
    }
    todo: list[tuple[str, int, int]] = []
    for item in walk(sources):
        result.files += 1
        if item[1] >= 0 and known.get(db_path(item[0])) == (item[1], item[2]):
            result.unchanged += 1
        else:
            todo.append(item)
    if not todo and not changed and not retain:
        return result
    duckdb = _duckdb()
    con = fleet.con
    where = fleet.path or "the fleet"
    tmp = ""
    try:
        with tempfile.TemporaryDirectory(prefix="hwadvisor-fleet-") as tmp:
            con.execute("BEGIN TRANSACTION")
            try:
                if retention_days is not None:
                    set_retention_days(fleet, retention_days)
                seen = _Seen(
                    {r[0] for r in con.execute("SELECT scan_id FROM scans").fetchall()},
                    set(known),
                )
                for chunk in _chunks(todo, workers, Path(tmp), now):
                    _merge(fleet, chunk, result, seen)
                resolved = resolve(fleet, now)
                result.forgotten_scans = resolved.forgotten_scans
                result.new_scans -= resolved.forgotten_scans
                result.retired = [g.key for g in resolved.retired]
                con.execute("COMMIT")
            except BaseException:
                # A failed COMMIT (a full disk) has ended the transaction already: the ROLLBACK
                # then fails too, and must not hide why.
                with contextlib.suppress(duckdb.Error):
                    con.execute("ROLLBACK")
                raise
    except OSError as exc:
        # Not the database (its errors are DuckDB's) and not a profile (each is read on its
        # own): the temporary folder the rows pass through, or removing it.
        if exc.errno in _FULL_ERRNOS:
            raise OutputError(
                f"{tmp or tempfile.gettempdir()}: no space left on the device for the "
                f"temporary files of the ingest ({exc.strerror or exc}): set TMPDIR to a "
                f"folder with room, or free some, and run it again; {where} was not changed"
            ) from exc
        raise
    except duckdb.InterruptException:
        raise  # Ctrl-C or SIGTERM inside a statement: 130/143 at the top
    except duckdb.Error as exc:
        if (mapped := storage_error(exc, where)) is not None:
            raise mapped from exc
        raise OutputError(
            f"{where}: ingest failed, nothing was changed ({_first_line(str(exc))})"
        ) from exc
    return result


#: Files per unit of work: read, flattened and written as Parquet by one worker.
_CHUNK = 250


@dataclass
class Chunk:
    """What a worker made of some files: the ``files`` rows, and one newline-delimited JSON
    file per table holding their scans' rows (the database parses JSON in bulk, far faster
    than it converts Python values one by one)."""

    files: list[tuple[Any, ...]]
    tables: dict[str, str]
    clock_skewed: int = 0
    scan_ids: list[str] = field(default_factory=list)
    """The scans in ``tables``: the database picks the new ones without reading the rows."""


def _chunks(
    todo: list[tuple[str, int, int]], workers: int | None, tmp: Path, now: datetime
) -> Iterator[Chunk]:
    jobs = [(todo[i : i + _CHUNK], str(tmp / f"c{i}"), now) for i in range(0, len(todo), _CHUNK)]
    if workers is None:
        from hwadvisor.cpus import usable_cpus

        workers = usable_cpus()
    if workers <= 1 or len(todo) < _PARALLEL_FROM:
        yield from map(load_chunk, jobs)
        return
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    # spawn, not fork: the open database has threads, and a forked copy of their locks can hang.
    context = multiprocessing.get_context("spawn")
    done = 0
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            for chunk in pool.map(load_chunk, jobs):
                done += 1
                yield chunk
    except (BrokenProcessPool, OSError):
        # No worker processes here (a sandbox, a frozen program): the rest in this one.
        yield from map(load_chunk, jobs[done:])


_SCAN_SPEC: tuple[tuple[str, str], ...] = (
    ("scan_id", "VARCHAR"),
    ("machine_id", "VARCHAR"),
    ("hostname", "VARCHAR"),
    ("machine_key", "VARCHAR"),
    ("created_utc", "TIMESTAMP"),
    ("effective_utc", "TIMESTAMP"),
    ("clock_note", "VARCHAR"),
    ("schema_version", "INTEGER"),
    ("tool_version", "VARCHAR"),
    ("origin", "VARCHAR"),
    ("path", "VARCHAR"),
    ("ingested_utc", "TIMESTAMP"),
    *HOST_COLUMNS,
    ("doc", "BLOB"),
    *IDENTITY_COLUMNS,
)
_FILE_SPEC: tuple[tuple[str, str], ...] = (
    ("path", "VARCHAR"),
    ("size_bytes", "BIGINT"),
    ("mtime_ns", "BIGINT"),
    ("scan_id", "VARCHAR"),
    ("status", "VARCHAR"),
    ("reason", "VARCHAR"),
    ("ingested_utc", "TIMESTAMP"),
)
_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "scans": _SCAN_SPEC,
    "gpus": (("scan_id", "VARCHAR"), *GPU_COLUMNS),
    "findings": (("scan_id", "VARCHAR"), *FINDING_COLUMNS),
    "measurements": (("scan_id", "VARCHAR"), *MEASUREMENT_COLUMNS),
}


def _insert(
    con: Any, table: str, spec: tuple[tuple[str, str], ...], rows: list[tuple[Any, ...]]
) -> None:
    """Insert a few rows at once: one list per column, unnested together."""
    if not rows:
        return
    columns = [list(col) for col in zip(*rows, strict=True)]
    select = ", ".join(f"unnest(${i + 1})::{kind}" for i, (_, kind) in enumerate(spec))
    con.execute(f"INSERT INTO {table} SELECT {select}", columns)


def _when(value: datetime | None) -> str | None:
    return value.isoformat(sep=" ") if value is not None else None


def load_chunk(job: tuple[list[tuple[str, int, int]], str, datetime]) -> Chunk:
    """Read some files and write their rows as JSON lines (runs in a worker process)."""
    items, stem, now = job
    chunk = Chunk(files=[], tables={})
    lines: dict[str, list[str]] = {name: [] for name in _TABLES}
    seen: set[str] = set()
    dumps = fastjson.dumps_line
    for loaded in (one for item in items for one in load_items(item)):
        path = db_path(loaded.path)
        if loaded.stream is not None:
            chunk.files.append((path, loaded.size, loaded.mtime_ns, None, "stream", loaded.stream))
            continue
        rows, sid = loaded.rows, loaded.scan_id
        if rows is None or sid is None:
            reason = loaded.reason or "unreadable"
            chunk.files.append((path, loaded.size, loaded.mtime_ns, None, "skipped", reason))
            continue
        chunk.files.append((path, loaded.size, loaded.mtime_ns, sid, "ok", None))
        if sid in seen:
            continue
        seen.add(sid)
        effective, note = _effective(rows, loaded.mtime_ns, now)
        chunk.clock_skewed += note is not None and rows.created_utc is not None
        scan = {
            "scan_id": sid,
            "machine_id": rows.machine_id,
            "hostname": rows.hostname,
            "machine_key": _machine_key(rows, path),
            "created_utc": _when(rows.created_utc),
            "effective_utc": _when(effective),
            "clock_note": note,
            "schema_version": rows.schema_version,
            "tool_version": rows.tool_version,
            "origin": rows.origin,
            "path": path,
            "ingested_utc": _when(now),
            **rows.host,
            "doc": base64.b64encode(loaded.doc or b"").decode("ascii"),
            **rows.identity,
        }
        lines["scans"].append(dumps(scan))
        chunk.scan_ids.append(sid)
        for table, entries in (
            ("gpus", rows.gpus),
            ("findings", rows.findings),
            ("measurements", rows.measurements),
        ):
            lines[table].extend(dumps({"scan_id": sid, **entry}) for entry in entries)
        if len(lines["scans"]) >= _CHUNK:  # a log stream's thousands: written as they come
            _write_lines(lines, stem, chunk)
    _write_lines(lines, stem, chunk)
    return chunk


def _write_lines(lines: dict[str, list[str]], stem: str, chunk: Chunk) -> None:
    """Add the rows held in ``lines`` to the chunk's JSON-lines files, and forget them."""
    for name, table_lines in lines.items():
        if table_lines:
            path = f"{stem}-{name}.jsonl"
            with open(path, "a", encoding="utf-8") as out:
                out.write("\n".join(table_lines) + "\n")
            chunk.tables[name] = path
            table_lines.clear()


def _reader(table: str) -> str:
    """SQL reading one table's JSON lines with its exact columns (the document as base64)."""
    spec = ", ".join(
        f"'{name}': '{'VARCHAR' if name == 'doc' else kind}'" for name, kind in _TABLES[table]
    )
    select = "* REPLACE (from_base64(doc) AS doc)" if table == "scans" else "*"
    return (
        f"SELECT {select} FROM read_json(?, format = 'newline_delimited', "
        f"columns = {{{spec}}}, maximum_object_size = 67108864)"
    )


@dataclass
class _Seen:
    """What the database holds, kept beside it during one ingest: the new scans of a chunk and
    the files to replace are found without a query over every row (which grows with the fleet:
    100,000 profiles spent 6 s on it)."""

    scan_ids: set[str]
    paths: set[str]


def _merge(fleet: Fleet, chunk: Chunk, result: IngestResult, seen: _Seen | None = None) -> None:
    """Add a worker's chunk: scans the database does not have yet, with their rows."""
    con = fleet.con
    if seen is None:
        seen = _Seen(
            {r[0] for r in con.execute("SELECT scan_id FROM scans").fetchall()},
            {r[0] for r in con.execute("SELECT path FROM files").fetchall()},
        )
    for path, _size, _mtime, _sid, status, reason in chunk.files:
        if status == "skipped":
            result.skipped.append((path, reason or "unreadable"))
    new_ids = list(dict.fromkeys(s for s in chunk.scan_ids if s not in seen.scan_ids))
    new = len(new_ids)
    if new_ids and "scans" in chunk.tables:
        seen.scan_ids.update(new_ids)
        for table, path in chunk.tables.items():
            con.execute(
                f"INSERT INTO {table} BY NAME SELECT * FROM ({_reader(table)}) "
                "WHERE scan_id IN (SELECT unnest($2::VARCHAR[]))",
                [path, new_ids],
            )
    ok = sum(1 for f in chunk.files if f[4] == "ok")
    result.new_scans += new
    result.known_scans += ok - new
    result.clock_skewed += chunk.clock_skewed
    now = _now()
    files = [(*f, now) for f in chunk.files]
    again = [f[0] for f in files if f[0] in seen.paths]
    if again:
        con.execute("DELETE FROM files WHERE path IN (SELECT unnest($1))", [again])
    seen.paths.update(f[0] for f in files)
    _insert(con, "files", _FILE_SPEC, files)


def open_sources(sources: list[Path], db: Path | None) -> tuple[Fleet, IngestResult | None]:
    """The fleet to query: the database ``db`` (ingesting ``sources`` into it first, if any),
    or, with folders and no database, an in-memory one read from them now."""
    if sources:
        fleet = open_fleet(db, create=True)
        try:
            return fleet, ingest(fleet, sources)
        except BaseException:
            fleet.close()
            raise
    return open_fleet(db, create=False, read_only=True), None
