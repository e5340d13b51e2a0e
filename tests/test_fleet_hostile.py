"""One bad file never stops a fleet ingest: each is skipped with its reason, the good files are
stored, nothing is printed raw, and a file that could not be read is tried again next time."""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.cli import main
from hwadvisor.fleet.store import db_path, ingest, open_fleet

pytest.importorskip("duckdb")

FIXTURES = Path(__file__).parent / "fixtures"
NOW = datetime(2026, 11, 23)


def _good(folder: Path, name: str = "good.json") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "reports" / "single-gpu.json", folder / name)


def _huge_number(folder: Path) -> Path:
    """A profile whose memory size is a 5,000-digit number (json refuses over 4,300)."""
    doc = json.loads((FIXTURES / "reports" / "cpu-only.json").read_text())
    doc["memory"]["total_bytes"]["value"] = 123456789
    path = folder / "huge.json"
    path.write_text(json.dumps(doc).replace("123456789", "9" * 5000, 1))
    return path


def _gpustat_overflow(folder: Path) -> Path:
    doc = json.loads((FIXTURES / "import" / "gpustat-json-2x-rtx3090-constructed.json").read_text())
    text = json.dumps(doc)
    total = doc["gpus"][0]["memory.total"]
    text = text.replace(f'"memory.total": {total}', '"memory.total": 1' + "0" * 400, 1)
    path = folder / "gpustat.json"
    path.write_text(text)
    return path


def test_a_number_of_thousands_of_digits_is_refused_in_one_line(
    tmp_path: Path, capsys: Any
) -> None:
    path = _huge_number(tmp_path)
    report = ["report", str(path), "-o", str(tmp_path / "o")]
    for command in (report, ["advise", "-p", str(path), "-w", "tabular"]):
        assert main(command) == 5
        err = capsys.readouterr().err
        assert "a number of thousands of digits" in err and "internal error" not in err


def test_an_importer_overflow_is_an_input_error(tmp_path: Path, capsys: Any) -> None:
    path = _gpustat_overflow(tmp_path)
    assert main(["import", str(path), "-o", str(tmp_path / "o")]) == 5
    err = capsys.readouterr().err
    assert "a number out of any real range" in err and "internal error" not in err


def test_one_bad_file_never_stops_an_ingest(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    _good(folder)
    _huge_number(folder)
    _gpustat_overflow(folder)
    weird = os.fsdecode(b"bad-\xff-name.json")
    _good(folder, "other.json")
    (folder / "other.json").rename(folder / weird)
    (folder / "esc-\x1b]0;owned\x07.json").write_text("{}")
    with open_fleet(None, create=True) as fleet:
        result = ingest(fleet, [folder], now=NOW)
        assert result.new_scans >= 1
        reasons = dict(result.skipped)
        assert any("thousands of digits" in r for r in reasons.values())
        assert any("out of any real range" in r for r in reasons.values())
        paths = [r[0] for r in fleet.con.execute("SELECT path FROM files").fetchall()]
    # Stored and shown escaped: no byte that is not UTF-8, no control character.
    assert any(p.endswith("bad-\\xff-name.json") for p in paths)
    assert any("esc-\\x1b]0;owned\\x07.json" in p for p in paths)
    assert not any("\x1b" in p or "\udcff" in p for p in paths)


def test_the_cli_prints_no_escape_sequence(tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "p"
    _good(folder)
    (folder / "esc-\x1b]0;owned\x07.json").write_text("{}")
    assert main(["fleet", "ingest", str(folder), "--db", str(tmp_path / "f.duckdb")]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err
    assert "esc-\\x1b]0;owned\\x07.json" in out.out + out.err


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads anything")
def test_a_file_unreadable_once_is_tried_again(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    _good(folder)
    locked = folder / "locked.json"
    shutil.copy(folder / "good.json", locked)
    doc = json.loads(locked.read_text())
    doc["host"]["hostname"]["value"] = "locked-host"
    locked.write_text(json.dumps(doc))
    locked.chmod(0)
    with open_fleet(tmp_path / "f.duckdb", create=True) as fleet:
        first = ingest(fleet, [folder], now=NOW)
        assert any(p.endswith("locked.json") for p, _ in first.skipped)
        locked.chmod(0o644)
        second = ingest(fleet, [folder], now=NOW)
        assert second.new_scans == 1 and not second.skipped


def test_an_unreadable_file_is_recorded_to_be_retried(tmp_path: Path) -> None:
    """Whoever runs the suite (root reads anything): a read error leaves no size or time."""
    from hwadvisor.fleet import store

    item = (str(tmp_path / "gone.json"), 10, 20)
    loaded = store.load_file(item)
    assert loaded.rows is None and loaded.reason
    assert (loaded.size, loaded.mtime_ns) == (-1, -1)


def test_db_path_escapes_what_a_terminal_would_obey() -> None:
    assert db_path("/a/b.json") == "/a/b.json"
    assert db_path(os.fsdecode(b"/a/\xff.json")) == "/a/\\xff.json"
    assert db_path("/a/\x1b[2J\x07.json") == "/a/\\x1b[2J\\x07.json"
    assert db_path("/a/é.json") == "/a/é.json"


def _named_hosts(folder: Path, names: list[str]) -> None:
    doc = json.loads((FIXTURES / "reports" / "single-gpu.json").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names):
        doc["host"] = {
            "hostname": {"value": name, "source": "os", "reason": None},
            "machine_id": {"value": f"m{i}", "source": "os", "reason": None},
        }
        doc["created_utc"] = f"2026-11-2{i}T00:00:00Z"
        (folder / f"h{i}.json").write_text(json.dumps(doc))


def test_csv_cells_a_spreadsheet_would_run_are_written_as_text(tmp_path: Path, capsys: Any) -> None:
    names = ['=HYPERLINK("http://x","c")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "node-1"]
    _named_hosts(tmp_path / "p", names)
    out = tmp_path / "hosts.csv"
    assert main(["fleet", "export", str(tmp_path / "p"), "--format", "csv", "--out", str(out)]) == 0
    import csv

    cells = {row["hostname"] for row in csv.DictReader(out.open(encoding="utf-8"))}
    assert cells == {"'" + n for n in names[:4]} | {"node-1"}
    # Numbers stay numbers: only text cells are touched.
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert all(not r["gpu_count"].startswith("'") for r in rows)


def test_a_fleet_database_is_known_by_its_content_not_its_name(tmp_path: Path, capsys: Any) -> None:
    _named_hosts(tmp_path / "p", ["a", "b"])
    db = tmp_path / "old.db"
    assert main(["fleet", "ingest", str(tmp_path / "p"), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["fleet", "diff", str(db), str(tmp_path / "p")]) == 0
    assert "0 added, 0 gone" in capsys.readouterr().out


def test_ctrl_c_inside_a_database_statement_is_an_interruption(
    monkeypatch: pytest.MonkeyPatch, capsys: Any, tmp_path: Path
) -> None:
    import duckdb

    from hwadvisor.fleet import cli as fleet_cli

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")

    monkeypatch.setattr(fleet_cli, "_open", interrupted)
    assert main(["fleet", "summary", "--db", str(tmp_path / "f.duckdb")]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "internal error" not in err


def test_needs_attention_names_the_hosts_worst_first(tmp_path: Path, capsys: Any) -> None:
    """Errors before warnings before information, whatever their counts; each with its hosts
    by name (five, then "and N more"); --json lists them all."""
    doc = json.loads((FIXTURES / "reports" / "cpu-only.json").read_text())
    folder = tmp_path / "p"
    folder.mkdir()
    for i in range(9):
        d = json.loads(json.dumps(doc))
        d["host"] = {
            "hostname": {"value": f"node-{i}", "source": "os", "reason": None},
            "machine_id": {"value": f"m{i}", "source": "os", "reason": None},
        }
        d["findings"] = [
            {"id": "no-gpu", "severity": "info", "title": "No GPU", "detail": "d", "fix": "f"}
        ]
        if i in (2, 5):
            d["findings"].append(
                {
                    "id": "gpu-lost",
                    "severity": "error",
                    "title": "GPU lost",
                    "detail": "d",
                    "fix": "f",
                }
            )
        (folder / f"n{i}.json").write_text(json.dumps(d))
    assert main(["fleet", "summary", str(folder)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    error = out.index("error: GPU lost (gpu-lost) on node-2, node-5")
    info = out.index("info: No GPU (no-gpu) on node-0, node-1, node-2, node-3, node-4 and 4 more")
    assert error < info
    assert main(["fleet", "summary", str(folder), "--json"]) == 0
    rows = {f["id"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert rows["no-gpu"]["host_names"] == [f"node-{i}" for i in range(9)]


def test_the_redacted_fleet_report_names_hosts_only_by_token(tmp_path: Path) -> None:
    from hwadvisor.fleet.queries import summary
    from hwadvisor.fleet.report import render_fleet_html

    doc = json.loads((FIXTURES / "reports" / "cpu-only.json").read_text())
    doc["host"] = {
        "hostname": {"value": "secret-db-07", "source": "os", "reason": None},
        "machine_id": {"value": "m-secret", "source": "os", "reason": None},
    }
    doc["findings"] = [
        {"id": "gpu-lost", "severity": "error", "title": "GPU lost", "detail": "d", "fix": "f"}
    ]
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(doc))
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [folder], now=NOW)
        data = summary(fleet, NOW)
        assert data["findings"][0]["host_names"] == ["secret-db-07"]
        plain = render_fleet_html(fleet, data)
        redacted = render_fleet_html(fleet, data, salt="s" * 32)
    assert "secret-db-07" in plain
    assert "secret-db-07" not in redacted and "GPU lost" in redacted


def test_outliers_hold_at_ordinary_noise_and_find_what_was_planted(tmp_path: Path) -> None:
    """1,000 healthy single-GPU hosts with a 2.5 % spread in every figure, three degraded GPUs
    (every figure 20 % down) and one healthy host with one figure dipped 12 %: the three are
    found, the dip is not, and at most one healthy host in 1,000 is flagged."""
    import random

    from hwadvisor.fleet.queries import outliers
    from tests.helpers import fleet_synth as fs

    rng = random.Random(11)
    base = fs.template("single-gpu")
    docs = [fs.make_host(base, i, rng, gpu_model=fs.GPU_MODELS[5]) for i in range(1003)]
    planted = {"node-00100", "node-00500", "node-00900"}
    for doc in docs:
        if doc["host"]["hostname"]["value"] in planted:
            fs.slow_down(doc, "cuda:0", 0.8)
    dipped = docs[700]
    gpu_figures = [m for m in dipped["benchmarks"]["measurements"] if m["device"] == "cuda:0"]
    gpu_figures[0]["best"] = round(gpu_figures[0]["best"] * 0.88, 3)
    fs.write(tmp_path / "p", iter(docs))
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [tmp_path / "p"], now=NOW)
        flagged = {o.hostname for o in outliers(fleet)}
    assert planted <= flagged
    assert "node-00700" not in flagged
    assert len(flagged - planted) <= 1


def test_readers_never_write_the_database(tmp_path: Path, capsys: Any) -> None:
    """summary, export, advise and diff open the database read-only: a backup, a snapshot or a
    0444 file is read as it is, byte for byte unchanged."""
    import hashlib

    _named_hosts(tmp_path / "p", ["a", "b"])
    db = tmp_path / "snap.duckdb"
    assert main(["fleet", "ingest", str(tmp_path / "p"), "--db", str(db)]) == 0
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    db.chmod(0o444)
    for command in (
        ["fleet", "summary", "--db", str(db)],
        ["fleet", "export", "--db", str(db), "--format", "ndjson"],
        ["fleet", "advise", "--db", str(db), "-w", "tabular"],
        ["fleet", "diff", str(db), str(db)],
    ):
        assert main(command) == 0, command
    capsys.readouterr()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    from hwadvisor.fleet.store import open_fleet as _open

    with (
        _open(db, create=False, read_only=True) as fleet,
        pytest.raises(Exception, match="read-only"),
    ):
        fleet.con.execute("CREATE TABLE t (x INTEGER)")


def test_any_failure_reading_one_file_skips_that_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: the flattener fails on one file with an error nobody planned for; that
    file is skipped with the error's name, the others are stored."""
    from hwadvisor.fleet import store

    folder = tmp_path / "p"
    _named_hosts(folder, ["a", "b", "c"])
    real = store.flatten

    def flaky(doc: Any, origin: str) -> Any:
        if doc["host"]["hostname"]["value"] == "b":
            raise ZeroDivisionError("a bug in one file's path")
        return real(doc, origin)

    monkeypatch.setattr(store, "flatten", flaky)
    with open_fleet(None, create=True) as fleet:
        result = ingest(fleet, [folder], now=NOW, workers=1)
        hosts = {r[0] for r in fleet.con.execute("SELECT hostname FROM hosts").fetchall()}
    assert hosts == {"a", "c"}
    assert [r for _, r in result.skipped] == [
        "could not be read (ZeroDivisionError: a bug in one file's path)"
    ]


def test_the_database_never_loads_an_extension_on_its_own(tmp_path: Path) -> None:
    with open_fleet(tmp_path / "f.duckdb", create=True) as fleet:
        for setting in ("autoinstall_known_extensions", "autoload_known_extensions"):
            assert fleet.scalar(f"SELECT current_setting('{setting}')") is False


def test_sigterm_inside_a_database_statement_exits_143(
    monkeypatch: pytest.MonkeyPatch, capsys: Any, tmp_path: Path
) -> None:
    import signal

    import duckdb

    from hwadvisor.fleet import cli as fleet_cli
    from hwadvisor.signals import Stopped

    def stopped(*args: Any, **kwargs: Any) -> Any:
        try:
            raise Stopped(signal.SIGTERM)
        except Stopped as exc:
            raise duckdb.InterruptException("INTERRUPT Error: Interrupted!") from exc

    monkeypatch.setattr(fleet_cli, "_open", stopped)
    assert main(["fleet", "summary", "--db", str(tmp_path / "f.duckdb")]) == 143
    err = capsys.readouterr().err
    assert "stopped by SIGTERM" in err and "internal error" not in err


def test_a_hostile_folder_ingests_every_good_profile(tmp_path: Path) -> None:
    """Everything at once: huge numbers, an importer overflow, names that are not UTF-8 or hold
    escape sequences, a FIFO, a file unreadable to this user, a cut-off and a corrupt file, one
    from a future schema, 100,000-deep nesting, a log stream with a damaged chunk — beside ten
    good profiles, which are all stored."""
    from tests.helpers import fleet_synth

    folder = tmp_path / "p"
    folder.mkdir()
    rng = __import__("random").Random(5)
    base = fleet_synth.template("single-gpu")
    good = [fleet_synth.make_host(base, i, rng, salt="hostile") for i in range(10)]
    names = ["a.json", os.fsdecode(b"b-\xff.json"), "c-\x1b]0;x\x07.json", "d e.json"]
    for i, doc in enumerate(good):
        (folder / (names[i] if i < len(names) else f"g{i}.json")).write_text(json.dumps(doc))
    _huge_number(folder)
    _gpustat_overflow(folder)
    os.mkfifo(folder / "pipe.json")
    locked = folder / "locked.json"
    locked.write_text(json.dumps(good[0]))
    locked.chmod(0)
    text = json.dumps(good[1])
    (folder / "cut.json").write_text(text[: len(text) // 2])
    (folder / "corrupt.json").write_bytes(os.urandom(4096))
    (folder / "future.json").write_text(
        json.dumps({**good[2], "schema_version": 999}).replace("node-", "future-")
    )
    (folder / "deep.json").write_text(
        json.dumps({"schema_version": 4, "x": 0})[:-1]
        + ', "y": '
        + "[" * 100_000
        + "]" * 100_000
        + "}"
    )
    (folder / "pods.log").write_text(
        "[pod/p/c] hwadvisor-profile v1 0123456789abcdef 1/2 00000000 AAAA\n[pod/p/c] hello\n"
    )
    with open_fleet(None, create=True) as fleet:
        result = ingest(fleet, [folder], now=NOW)
        hosts = {r[0] for r in fleet.con.execute("SELECT hostname FROM hosts").fetchall()}
    assert {d["host"]["hostname"]["value"] for d in good} <= hosts
    assert not any(h and h.startswith("future-") for h in hosts)
    reasons = dict(result.skipped)
    for name in ("huge.json", "gpustat.json", "pipe.json", "cut.json", "corrupt.json"):
        assert any(p.endswith(name) for p in reasons), (name, sorted(reasons))
    assert any(p.endswith("future.json") and "newer hwadvisor" in r for p, r in reasons.items())
    assert any(p.endswith("deep.json") and "nested too deeply" in r for p, r in reasons.items())
    if os.geteuid() != 0:
        assert any(p.endswith("locked.json") for p in reasons)
