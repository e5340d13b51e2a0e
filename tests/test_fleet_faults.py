"""Faults outside any one profile: a full disk, a damaged database, a full temporary folder,
standard output that takes nothing. Each is the real cause in one line and a documented exit
status (4: cannot write, 5: cannot read), never "internal error", and what was stored stays."""

from __future__ import annotations

import contextlib
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


# -- B7: a stop signal while the fleet PDF is laid out ---------------------------------------

#: Loaded at start-up (``sitecustomize``) by the command under test: the fleet page's layout
#: takes a minute and, like WeasyPrint's, holds stop signals until it returns.
_SLOW_LAYOUT = """
import os, time
mark = os.environ.get("HWADVISOR_TEST_SLOW_PDF")
if mark:
    from hwadvisor.render import pdf as _pdf
    from hwadvisor.signals import deferred

    _real = _pdf.render_pdf

    def render_pdf(html, refused=None):
        if "<h1>Fleet: " not in html:  # the helper's warm-up page
            return _real(html, refused)
        with open(mark + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.replace(mark + ".tmp", mark)
        with deferred():
            time.sleep(60)
        return _real(html, refused)

    _pdf.render_pdf = render_pdf
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the helper is forked on Linux")
@pytest.mark.parametrize(("how", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_stop_signal_during_the_fleet_pdf_layout_stops_it_at_once(
    tmp_path: Path, how: str, code: int
) -> None:
    import signal
    import time

    from hwadvisor.render.pdf import pdf_available

    if not pdf_available()[0]:
        pytest.skip("no WeasyPrint here")
    db = _database(tmp_path, ["a", "b"])
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_SLOW_LAYOUT)
    mark = tmp_path / "laying-out"
    out = tmp_path / "r"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hook), str(ROOT / "src")]),
        "HWADVISOR_TEST_SLOW_PDF": str(mark),
        "HWADVISOR_REDACT_SALT": "s" * 32,
    }
    env.pop("HWADVISOR_PDF_IN_PROCESS", None)
    command = [sys.executable, "-m", "hwadvisor", "fleet", "report", "--db", str(db)]
    proc = subprocess.Popen(
        [*command, "--format", "pdf", "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), proc.communicate(timeout=30)
        layout = int(mark.read_text())
        sent = time.monotonic()
        if how == "SIGINT":  # Ctrl-C in a terminal: the whole process group
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=40)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code, err
    assert took < 3.0, f"stopped {took:.1f} s after {how}"
    assert "internal error" not in err and "Traceback" not in err
    assert not (out / "fleet.pdf").exists()
    assert not [p for p in out.iterdir() if p.suffix in (".pdf", ".tmp")]
    assert not _alive(layout), "the layout helper outlived the command"


# -- B4: free text in findings, redacted like one host's report ------------------------------

_SECRETS = ("gpu-node-17", "corp.example.net", "example.net", "10.1.2.3", "00:1a:2b", "SN13210200")


def _telling_profile(folder: Path) -> dict[str, Any]:
    doc = json.loads((FIXTURES / "reports" / "single-gpu.json").read_text())
    doc["host"] = {
        "hostname": {"value": "gpu-node-17.corp.example.net", "source": "os", "reason": None},
        "machine_id": {"value": "m-17", "source": "os", "reason": None},
    }
    doc["system"]["serial"] = {"value": "SN1321020012345", "source": "sysfs", "reason": None}
    doc["findings"] = [
        {
            "id": "gpu-xid",
            "severity": "error",
            "title": "Xid 79 on gpu-node-17 (10.1.2.3, 00:1a:2b:3c:4d:5e) at corp.example.net, "
            "board SN1321020012345",
            "detail": "d",
            "fix": "f",
        }
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gpu-node-17.corp.example.net.json").write_text(json.dumps(doc))
    return doc


def _shown(page: str) -> str:
    """The page's text and its charts' SVG, decoded: chart labels are base64 data URIs."""
    import base64
    import html
    import re

    charts = re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", page)
    decoded = [base64.b64decode(c).decode("utf-8") for c in charts]
    assert decoded, "no chart on the page"
    return html.unescape(page + "\n".join(decoded))


def test_the_fleet_report_redacts_free_text_and_charts_as_the_host_report(tmp_path: Path) -> None:
    from hwadvisor.fleet.queries import summary
    from hwadvisor.fleet.report import render_fleet_html
    from hwadvisor.fleet.store import ingest, open_fleet
    from hwadvisor.model.profile import Profile
    from hwadvisor.redact import redact_profile

    doc = _telling_profile(tmp_path / "p")
    salt = "s" * 32
    host_title = redact_profile(Profile.model_validate(doc), salt).findings[0].title
    assert not any(secret in host_title for secret in _SECRETS)  # the host report: right
    from datetime import datetime

    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [tmp_path / "p"])
        data = summary(fleet, datetime(2026, 11, 27))
        plain = _shown(render_fleet_html(fleet, data))
        redacted = _shown(render_fleet_html(fleet, data, salt=salt))
    assert all(secret in plain for secret in _SECRETS[:2])
    leaks = [secret for secret in _SECRETS if secret in redacted]
    assert leaks == []
    assert host_title in redacted  # the same tokens as the host's own redacted report


def test_the_fleet_pdf_and_redacted_html_show_no_identifying_text(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from pypdf import PdfReader

    from hwadvisor.render.pdf import pdf_available

    monkeypatch.setenv("HWADVISOR_REDACT_SALT", "s" * 32)
    _telling_profile(tmp_path / "p")
    db = tmp_path / "f.duckdb"
    assert main(["fleet", "ingest", str(tmp_path / "p"), "--db", str(db)]) == 0
    out = tmp_path / "r"
    formats = "html,pdf" if pdf_available()[0] else "html"
    assert (
        main(
            ["fleet", "report", "--db", str(db), "--format", formats, "--out", str(out), "--redact"]
        )
        == 0
    )
    capsys.readouterr()
    page = _shown((out / "fleet.html").read_text(encoding="utf-8"))
    assert [s for s in _SECRETS if s in page] == []
    if "pdf" in formats:
        reader = PdfReader(io.BytesIO((out / "fleet.pdf").read_bytes()))
        text = " ".join((p.extract_text() or "") for p in reader.pages).replace("\n", " ")
        assert "Xid 79" in text
        assert [s for s in _SECRETS if s in text] == []


def test_a_signal_duckdb_swallowed_is_still_its_exit_status(
    monkeypatch: pytest.MonkeyPatch, capsys: Any, tmp_path: Path
) -> None:
    """DuckDB may answer a stop signal that arrives inside a statement with a bare
    RuntimeError("Query interrupted"), the handler's exception dropped: SIGTERM is still 143."""
    import signal

    from hwadvisor import signals
    from hwadvisor.fleet import cli as fleet_cli

    monkeypatch.setattr(signals, "last_stop", None)
    # No child of this test process is refused from now on, as after a real signal.
    monkeypatch.setattr(signals, "kill_all_children", lambda: None)

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(signals.Stopped):
            signals._stop(signal.SIGTERM, None)  # the handler, as the signal runs it
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(fleet_cli, "_open", interrupted)
    assert main(["fleet", "summary", "--db", str(tmp_path / "f.duckdb")]) == 143
    err = capsys.readouterr().err
    assert "stopped by SIGTERM" in err and "internal error" not in err


# -- The report: what needs attention first; every flagged host in the PDF --------------------


def test_the_report_opens_with_problems_and_the_pdf_keeps_every_flagged_host(
    tmp_path: Path,
) -> None:
    """Twelve hosts: "zz-err-*" with errors, "zz-warn-*" with warnings (named to sort last),
    the rest healthy with an information finding. With a cap of three rows, the PDF's page
    lists all five flagged hosts, errors first, then three healthy ones and a line saying how
    many healthy hosts were left out; the page starts with what needs attention."""
    import re
    from datetime import datetime

    from hwadvisor.fleet.queries import summary
    from hwadvisor.fleet.report import render_fleet_html
    from hwadvisor.fleet.store import ingest, open_fleet

    doc = json.loads((FIXTURES / "reports" / "cpu-only.json").read_text())
    folder = tmp_path / "p"
    folder.mkdir()
    names = [f"a-ok-{i}" for i in range(7)] + ["zz-warn-1", "zz-warn-2", "zz-warn-3"]
    names += ["zz-err-1", "zz-err-2"]
    for i, name in enumerate(names):
        d = json.loads(json.dumps(doc))
        d["host"] = {
            "hostname": {"value": name, "source": "os", "reason": None},
            "machine_id": {"value": f"m{i}", "source": "os", "reason": None},
        }
        severity = "error" if "err" in name else "warning" if "warn" in name else "info"
        d["findings"] = [
            {
                "id": f"x-{severity}",
                "severity": severity,
                "title": f"T {severity}",
                "detail": "d",
                "fix": "f",
            }
        ]
        (folder / f"{name}.json").write_text(json.dumps(d))
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [folder])
        data = summary(fleet, datetime(2026, 11, 27))
        page = render_fleet_html(fleet, data, host_limit=3)
        whole = render_fleet_html(fleet, data)
    body = page[page.index("<body") :]
    assert body.index("Needs attention") < body.index("<figure")
    findings = re.findall(r'class="sev-(\w+)">\1</td>', body)
    assert findings == ["error", "warning", "info"]
    table = body[body.index("<h2>Hosts</h2>") :]
    rows = re.findall(r"<tr><td>([\w-]+)</td>", table)
    flagged = ["zz-err-1", "zz-err-2", "zz-warn-1", "zz-warn-2", "zz-warn-3"]
    assert rows == [*flagged, "a-ok-0", "a-ok-1", "a-ok-2"]
    assert "4 healthy hosts (no error, warning, outlier or stale scan) are left out" in table
    whole_rows = re.findall(r"<tr><td>([\w-]+)</td>", whole[whole.index("<h2>Hosts</h2>") :])
    assert len(whole_rows) == 12 and "left out" not in whole


def test_the_database_memory_is_bounded_and_settable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from hwadvisor.fleet.store import open_fleet

    db = tmp_path / "f.duckdb"
    with open_fleet(db, create=True) as fleet:
        limit = fleet.scalar("SELECT current_setting('memory_limit')")
    assert limit.endswith("MiB") and float(limit.split()[0]) <= 512
    monkeypatch.setenv("HWADVISOR_FLEET_MEMORY", "2GB")
    with open_fleet(db, create=False, read_only=True) as fleet:
        assert fleet.scalar("SELECT current_setting('memory_limit')").startswith("1.8 GiB")
    monkeypatch.setenv("HWADVISOR_FLEET_MEMORY", "lots")
    assert main(["fleet", "summary", "--db", str(db)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "HWADVISOR_FLEET_MEMORY='lots' is not an amount of memory" in line
