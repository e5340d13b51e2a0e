"""Faults outside any one profile: a full disk, a damaged database, a full temporary folder,
standard output that takes nothing. Each is the real cause in one line and a documented exit
status (4: cannot write, 5: cannot read), never "internal error", and what was stored stays."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.cli import main

duckdb = pytest.importorskip("duckdb")

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[1]


def _profiles(folder: Path, names: list[str]) -> Path:
    doc = json.loads((FIXTURES / "reports" / "single-gpu.json").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names):
        doc["host"] = {
            "hostname": {"value": name, "source": "os", "reason": None},
            "machine_id": {"value": f"m-{name}", "source": "os", "reason": None},
        }
        doc["created_utc"] = f"2026-11-2{i % 10}T00:00:00Z"
        (folder / f"{name}.json").write_text(json.dumps(doc))
    return folder


def _database(tmp_path: Path, names: list[str]) -> Path:
    db = tmp_path / "fleet.duckdb"
    assert main(["fleet", "ingest", str(_profiles(tmp_path / "p0", names)), "--db", str(db)]) == 0
    return db


def _hosts(db: Path) -> set[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {row[0] for row in con.execute("SELECT hostname FROM hosts").fetchall()}
    finally:
        con.close()


class _Faulty:
    """A DuckDB connection whose ``execute`` first asks ``fault`` (which may raise) about each
    statement: the failure is DuckDB's own exception at the statement it would come from."""

    def __init__(self, con: Any, fault: Callable[[Any, str], None]) -> None:
        self._con = con
        self._fault = fault

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self._fault(self._con, sql)
        return self._con.execute(sql, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _inject(monkeypatch: pytest.MonkeyPatch, fault: Callable[[Any, str], None]) -> None:
    from hwadvisor.fleet import store

    real = store.open_fleet

    def opened(*args: Any, **kwargs: Any) -> Any:
        fleet = real(*args, **kwargs)
        fleet.con = _Faulty(fleet.con, fault)
        return fleet

    monkeypatch.setattr(store, "open_fleet", opened)


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "internal error" not in err and "Traceback" not in err
    return lines[0]


# -- B11: the disk fills up during an ingest -------------------------------------------------


def test_a_disk_full_at_commit_says_so_and_leaves_the_database_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """DuckDB ends the transaction itself when its commit cannot be written: the ROLLBACK that
    follows fails ("cannot rollback - no transaction is active") and used to hide the cause."""
    db = _database(tmp_path, ["a", "b"])
    capsys.readouterr()
    wal = f"{db}.wal"

    def full_at_commit(con: Any, sql: str) -> None:
        if sql.strip().upper() == "COMMIT":
            con.execute("ROLLBACK")  # what a failed commit does to the transaction
            raise duckdb.TransactionException(
                f'TransactionContext Error: Failed to commit: Could not write file "{wal}": '
                "No space left on device"
            )

    _inject(monkeypatch, full_at_commit)
    more = _profiles(tmp_path / "p1", ["c", "d"])
    assert main(["fleet", "ingest", str(more), "--db", str(db)]) == 4
    line = _one_line(capsys.readouterr().err)
    assert f"cannot write {wal}: no space left on the device" in line
    assert f"free some space in {tmp_path}" in line and "nothing was changed" in line
    monkeypatch.undo()
    assert _hosts(db) == {"a", "b"}
    # Once there is room, the same ingest goes in: nothing was marked as read.
    assert main(["fleet", "ingest", str(more), "--db", str(db)]) == 0
    assert _hosts(db) == {"a", "b", "c", "d"}


def test_a_disk_full_inside_the_transaction_is_an_io_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    db = _database(tmp_path, ["a"])
    capsys.readouterr()

    def full_on_insert(con: Any, sql: str) -> None:
        if sql.lstrip().upper().startswith("INSERT INTO SCANS"):
            raise duckdb.IOException(
                f'IO Error: Could not write file "{db}": No space left on device'
            )

    _inject(monkeypatch, full_on_insert)
    assert main(["fleet", "ingest", str(_profiles(tmp_path / "p1", ["b"])), "--db", str(db)]) == 4
    assert "no space left on the device" in _one_line(capsys.readouterr().err)
    monkeypatch.undo()
    assert _hosts(db) == {"a"}


# -- B12: damaged blocks ---------------------------------------------------------------------


def _damage(db: Path) -> None:
    """Scribble over every storage block but the first (DuckDB: a 12 KiB header, then blocks
    of 256 KiB, each with its checksum): the file opens, its tables cannot be read."""
    size = db.stat().st_size
    with db.open("r+b") as handle:
        offset = 12288 + 262144
        while offset < size:
            handle.seek(offset + 100)
            handle.write(b"\xde\xad" * 64)
            offset += 262144


@pytest.mark.parametrize(
    "command",
    [
        ["fleet", "summary"],
        ["fleet", "summary", "--json"],
        ["fleet", "export", "--format", "ndjson"],
        ["fleet", "advise", "-w", "tabular"],
        ["fleet", "report", "--format", "html"],
        ["fleet", "ingest", "NEW"],
    ],
)
def test_a_damaged_database_is_an_input_error(
    tmp_path: Path, capsys: Any, command: list[str]
) -> None:
    db = _database(tmp_path, ["a", "b", "c"])
    assert db.stat().st_size > 12288 + 262144, "too small to damage a second block"
    _damage(db)
    capsys.readouterr()
    args = [str(_profiles(tmp_path / "new", ["z"])) if a == "NEW" else a for a in command]
    if "report" in command:
        args += ["--out", str(tmp_path / "r")]
    assert main([*args, "--db", str(db)]) == 5
    line = _one_line(capsys.readouterr().err)
    assert f"{db}: the fleet database is damaged" in line
    assert "restore it from a backup" in line


def test_damage_met_by_a_query_is_named_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    db = _database(tmp_path, ["a"])
    capsys.readouterr()

    def damaged(con: Any, sql: str) -> None:
        if "findings" in sql:
            raise duckdb.Error(
                "Corrupt database file: computed checksum 1 does not match stored checksum 2 "
                "in block at location 274432"
            )

    _inject(monkeypatch, damaged)
    assert main(["fleet", "summary", "--db", str(db)]) == 5
    assert "the fleet database is damaged" in _one_line(capsys.readouterr().err)


# -- B13: a full temporary folder ------------------------------------------------------------


def test_a_full_tmpdir_during_an_ingest_names_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from hwadvisor.fleet import store

    db = _database(tmp_path, ["a"])
    capsys.readouterr()

    def full(job: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device", f"{job[1]}-scans.jsonl")

    monkeypatch.setattr(store, "load_chunk", full)
    assert main(["fleet", "ingest", str(_profiles(tmp_path / "p1", ["b"])), "--db", str(db)]) == 4
    line = _one_line(capsys.readouterr().err)
    assert "no space left on the device for the temporary files" in line
    assert "set TMPDIR to a folder with room" in line and f"{db} was not changed" in line
    monkeypatch.undo()
    assert _hosts(db) == {"a"}


def test_a_full_tmpdir_under_an_export_to_stdout_names_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    db = _database(tmp_path, ["a"])
    capsys.readouterr()
    spill = Path(tempfile.gettempdir()) / "tmpab12cd34" / "out.csv"

    def full(con: Any, sql: str) -> None:
        if sql.startswith("COPY"):
            raise duckdb.IOException(
                f'IO Error: Could not write file "{spill}": No space left on device'
            )

    _inject(monkeypatch, full)
    assert main(["fleet", "export", "--db", str(db)]) == 4
    line = _one_line(capsys.readouterr().err)
    assert f"cannot write {spill}: no space left on the device" in line
    assert "set TMPDIR to a folder with room" in line


# -- B14: a full disk where --out points -----------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "parquet", "ndjson"])
def test_a_full_disk_under_export_out_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, fmt: str
) -> None:
    db = _database(tmp_path, ["a"])
    capsys.readouterr()
    folder = tmp_path / "out"
    folder.mkdir()

    def full(con: Any, sql: str) -> None:
        if sql.startswith("COPY"):
            target = sql.split(" TO '", 1)[1].split("'", 1)[0]
            Path(target).write_bytes(b"half a fi")  # DuckDB had started the file
            raise duckdb.IOException(
                'IO Error: Async write failed for range [offset=0, size=1]: {"exception_type":'
                f'"IO","exception_message":"Could not write file \\"{target}\\": No space left '
                'on device"}'
            )

    _inject(monkeypatch, full)
    out = folder / f"hosts.{fmt}"
    assert main(["fleet", "export", "--db", str(db), "--format", fmt, "--out", str(out)]) == 4
    line = _one_line(capsys.readouterr().err)
    assert "no space left on the device" in line and f"free some space in {folder}" in line
    assert list(folder.iterdir()) == []  # no partial file, no temporary file


def test_a_full_disk_under_report_out_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from hwadvisor.render import jsonio

    db = _database(tmp_path, ["a"])
    capsys.readouterr()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(jsonio.os, "fsync", full)
    out = tmp_path / "r"
    assert main(["fleet", "report", "--db", str(db), "--format", "html", "--out", str(out)]) == 4
    assert "No space left on device" in _one_line(capsys.readouterr().err)
    assert list(out.iterdir()) == []


# -- B15: standard output that takes nothing -------------------------------------------------


def _dev_full() -> bool:
    try:
        info = os.stat("/dev/full")
    except OSError:
        return False
    return stat.S_ISCHR(info.st_mode)


@pytest.mark.skipif(not _dev_full(), reason="no /dev/full here")
@pytest.mark.parametrize(
    "command",
    [
        ["fleet", "summary", "--db", "DB"],
        ["fleet", "summary", "--db", "DB", "--json"],
        ["fleet", "export", "--db", "DB"],
        ["fleet", "diff", "DB", "DB", "--json"],
        ["schema"],
    ],
)
def test_stdout_to_dev_full_is_exit_4_in_one_line(tmp_path: Path, command: list[str]) -> None:
    db = _database(tmp_path, ["a"])
    args = [str(db) if a == "DB" else a for a in command]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "hwadvisor", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert done.returncode == 4, done.stderr
    line = _one_line(done.stderr)
    assert line.startswith("hwadvisor: error: cannot write to standard output: No space left")
    assert "Exception ignored" not in done.stderr


def test_a_write_error_nobody_wrapped_is_exit_4_not_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: Any, tmp_path: Path
) -> None:
    """A full disk reached the top as a bare OSError (the stdout of an in-process run is not a
    file here): still the disk's fault, exit 4."""
    from hwadvisor.fleet import cli as fleet_cli

    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fleet_cli, "_open", full)
    assert main(["fleet", "summary", "--db", str(tmp_path / "f.duckdb")]) == 4
    line = _one_line(capsys.readouterr().err)
    assert "No space left on device" in line
