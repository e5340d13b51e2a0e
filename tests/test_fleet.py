"""``hwadvisor fleet``: ingest (incremental, transactional, hostile input), the roll-up, outliers,
export, advise, diff and the report, on fleets made from the recorded fixtures."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.cli import main
from hwadvisor.errors import InputError, OutputError
from hwadvisor.fleet import store
from hwadvisor.fleet.compare import compare
from hwadvisor.fleet.queries import outliers, summary
from hwadvisor.fleet.store import FLEET_SCHEMA, ingest, open_fleet
from tests.helpers import fleet_synth as fs

FIXTURES = Path(__file__).parent / "fixtures"
NOW = datetime(2026, 11, 23)

pytest.importorskip("duckdb")


def _write(folder: Path, docs: list[dict[str, Any]]) -> None:
    fs.write(folder, iter(docs))


def _hosts(n: int, kind: str = "single-gpu", seed: int = 1, **kw: Any) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    base = fs.template(kind)
    return [fs.make_host(base, i, rng, **kw) for i in range(n)]


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    folder = tmp_path / "profiles"
    _write(folder, list(fs.mixed_fleet(12)))
    (folder / "cut.json").write_text('{"schema_version": 5, "tool": {"name": "hwadvisor"')
    (folder / "future.json").write_text(
        json.dumps({"schema_version": 999, "tool": {"name": "hwadvisor"}, "created_utc": "x"})
    )
    (folder / "foreign.json").write_text('{"schema_version": 2, "something": "else"}')
    (folder / "notes.txt").write_text("nothing to see here\n")
    (folder / "fleet.html").write_text("<html>an output, never offered</html>")
    xml = sorted((FIXTURES / "nvidia-smi").glob("*.xml"))[0]
    shutil.copy(xml, folder / "gpu-node-99.xml")
    return folder


def test_ingest_reads_profiles_and_imports_and_skips_the_rest_with_reasons(mixed: Path) -> None:
    with open_fleet(None, create=True) as fleet:
        result = ingest(fleet, [mixed], now=NOW)
        reasons = dict((Path(p).name, r) for p, r in result.skipped)
        assert result.files == 17  # the .html is not offered
        assert result.new_scans == 13
        assert set(reasons) == {"cut.json", "future.json", "foreign.json", "notes.txt"}
        assert "cut off" in reasons["cut.json"]
        assert "newer hwadvisor" in reasons["future.json"]
        assert "not an hwadvisor profile" in reasons["foreign.json"]
        assert "neither an hwadvisor profile" in reasons["notes.txt"]
        imported = fleet.query("SELECT origin, gpu_count FROM hosts WHERE origin <> 'scan'")
        assert imported == [
            {"origin": "nvidia-smi -q -x XML", "gpu_count": imported[0]["gpu_count"]}
        ]
        assert imported[0]["gpu_count"] >= 1
        data = summary(fleet, NOW)
    assert data["hosts"] == 13
    assert data["skipped_files"] == 4
    assert dict(data["by_capability"])["4"] == 4  # the 8-GPU nodes


def test_reingest_of_an_unchanged_folder_reads_nothing_and_a_changed_file_is_read(
    tmp_path: Path, mixed: Path
) -> None:
    db = tmp_path / "fleet.duckdb"
    with open_fleet(db, create=True) as fleet:
        ingest(fleet, [mixed], now=NOW)
    with open_fleet(db, create=False) as fleet:
        again = ingest(fleet, [mixed], now=NOW)
        assert (again.unchanged, again.new_scans, again.skipped) == (17, 0, [])
        doc = json.loads((mixed / "node-00001.json").read_text())
        doc["created_utc"] = "2026-11-22T00:00:00Z"
        doc["nvml"]["driver_version"]["value"] = "580.65.06"
        (mixed / "node-00001.json").write_text(json.dumps(doc))
        third = ingest(fleet, [mixed], now=NOW)
        assert third.new_scans == 1 and third.unchanged == 16
        latest = fleet.query("SELECT driver_version FROM hosts WHERE hostname = 'node-00001'")
        history = fleet.scalar("SELECT count(*) FROM host_scans WHERE hostname = 'node-00001'")
    assert latest == [{"driver_version": "580.65.06"}]
    assert history == 2  # the earlier scan is kept


def test_the_latest_scan_per_machine_wins_and_a_wrong_clock_does_not(tmp_path: Path) -> None:
    old, new, skewed = _hosts(1, seed=1) * 3
    old = json.loads(json.dumps(old))
    new = json.loads(json.dumps(old))
    skewed = json.loads(json.dumps(old))
    old["created_utc"] = "2026-11-01T00:00:00Z"
    new["created_utc"] = "2026-11-20T00:00:00Z"
    new["frameworks"]["torch"]["version"]["value"] = "2.5.1+cu124"
    skewed["created_utc"] = "2031-01-01T00:00:00Z"  # the host's clock is years ahead
    skewed["frameworks"]["torch"]["version"]["value"] = "2.1.0"
    folder = tmp_path / "p"
    folder.mkdir()
    for name, doc in (("old", old), ("new", new), ("skewed", skewed)):
        (folder / f"{name}.json").write_text(json.dumps(doc))
    os.utime(folder / "skewed.json", (1_700_000_000, 1_700_000_000))  # written in 2023
    with open_fleet(None, create=True) as fleet:
        result = ingest(fleet, [folder], now=NOW)
        hosts = fleet.query("SELECT torch_version, clock_note FROM hosts")
        notes = fleet.query("SELECT clock_note FROM scans WHERE clock_note IS NOT NULL")
    assert result.clock_skewed == 1
    assert hosts == [{"torch_version": "2.5.1+cu124", "clock_note": None}]
    assert "in the future" in notes[0]["clock_note"]


def test_a_machine_id_two_hosts_report_at_once_is_two_hosts_and_flagged(tmp_path: Path) -> None:
    a, b, c = (json.loads(json.dumps(d)) for d in _hosts(3))
    for doc in (a, b, c):
        doc["host"]["machine_id"]["value"] = "sha256:0123456789abcdef"
    a["host"]["hostname"]["value"], a["created_utc"] = "clone-a", "2026-11-20T00:00:00Z"
    b["host"]["hostname"]["value"], b["created_utc"] = "clone-b", "2026-11-21T00:00:00Z"
    # A rename long ago: the same machine (the same GPUs as clone-a), not a clone.
    c["host"]["hostname"]["value"], c["created_utc"] = "old-name", "2026-09-01T00:00:00Z"
    c["gpus"] = a["gpus"]
    folder = tmp_path / "p"
    _write(folder, [a, b, c])
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [folder], now=NOW)
        data = summary(fleet, NOW)
    assert data["hosts"] == 2
    assert data["duplicate_machine_ids"] == [
        {"machine_id": "sha256:0123456789abcdef", "hostnames": ["clone-a", "clone-b"]}
    ]


def test_hostile_strings_are_stored_visible_and_never_act(tmp_path: Path, capsys: Any) -> None:
    doc = _hosts(1)[0]
    doc["host"]["hostname"]["value"] = "\x1b]0;owned\x07[red]x</td><script>alert(1)</script>"
    doc["gpus"][0]["name"]["value"] = "GPU \u202e evil \ud800"
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "h.json").write_text(json.dumps(doc))
    assert main(["fleet", "summary", str(folder), "--json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    data = json.loads(out)
    assert data["hosts"] == 1
    assert main(["fleet", "report", str(folder), "--format", "html", "--out", str(tmp_path)]) == 0
    html = (tmp_path / "fleet.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "\x1b" not in html


def test_an_ingest_that_fails_half_way_leaves_the_database_as_it_was(
    tmp_path: Path, mixed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "fleet.duckdb"
    first = tmp_path / "first"
    _write(first, _hosts(3))
    with open_fleet(db, create=True) as fleet:
        ingest(fleet, [first], now=NOW)
    calls = {"n": 0}
    real = store._merge

    def merge_then_fail(*args: Any) -> None:
        calls["n"] += 1
        real(*args)
        raise KeyboardInterrupt  # Ctrl-C after the first chunk went in

    monkeypatch.setattr(store, "_merge", merge_then_fail)
    with open_fleet(db, create=False) as fleet, pytest.raises(KeyboardInterrupt):
        ingest(fleet, [mixed], now=NOW)
    assert calls["n"] == 1
    with open_fleet(db, create=False) as fleet:
        assert fleet.scalar("SELECT count(*) FROM scans") == 3
        assert fleet.scalar("SELECT count(*) FROM files") == 3


def test_a_planted_slow_gpu_is_flagged_and_identical_hosts_are_not() -> None:
    docs = _hosts(64, gpu_model=fs.GPU_MODELS[0], seed=5)
    fs.slow_down(docs[17], "cuda:0", 0.8)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _write(Path(tmp), docs)
        with open_fleet(None, create=True) as fleet:
            ingest(fleet, [Path(tmp)], now=NOW)
            found = outliers(fleet)
    assert [(o.hostname, o.device) for o in found] == [("node-00017", "cuda:0")]
    assert 0.15 < found[0].worst_drop < 0.3
    with tempfile.TemporaryDirectory() as tmp:
        _write(Path(tmp), _hosts(150, "eight-gpu", gpu_model=fs.GPU_MODELS[2], seed=9))
        with open_fleet(None, create=True) as fleet:
            ingest(fleet, [Path(tmp)], now=NOW)
            assert outliers(fleet) == []  # 1,200 identical GPUs with a 2.5 % spread


def test_too_few_identical_devices_say_nothing(tmp_path: Path) -> None:
    docs = _hosts(4, gpu_model=fs.GPU_MODELS[0])
    fs.slow_down(docs[0], "cuda:0", 0.5)
    _write(tmp_path / "p", docs)
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [tmp_path / "p"], now=NOW)
        assert outliers(fleet) == []


def test_export_is_flat_and_null_safe_in_every_format(tmp_path: Path, mixed: Path) -> None:
    db = tmp_path / "fleet.duckdb"
    assert main(["fleet", "ingest", str(mixed), "--db", str(db)]) == 0
    out = tmp_path / "hosts.csv"
    assert main(["fleet", "export", "--db", str(db), "--out", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 13
    assert "memory_total_bytes" in rows[0] and "gpu_vram_total_bytes" in rows[0]
    cpu_only = [r for r in rows if r["gpu_count"] == "0"]
    assert cpu_only and all(r["driver_version"] == "" for r in cpu_only)  # null: empty cell
    # Never over an existing file without --force (exit 4), and nothing lost.
    assert main(["fleet", "export", "--db", str(db), "--out", str(out)]) == 4
    assert len(list(csv.DictReader(io.StringIO(out.read_text())))) == 13
    parquet = tmp_path / "gpus.parquet"
    assert main(
        ["fleet", "export", "--db", str(db), "--table", "gpus", "--format", "parquet",
         "--out", str(parquet)]
    ) == 0  # fmt: skip
    import duckdb

    gpus = duckdb.sql(f"SELECT count(*), count(vram_total_bytes) FROM '{parquet}'").fetchall()[0]
    assert gpus is not None and gpus[0] >= 4 * 8 and gpus[1] == gpus[0]
    nd = tmp_path / "f.ndjson"
    assert main(
        ["fleet", "export", "--db", str(db), "--table", "findings", "--format", "ndjson",
         "--out", str(nd)]
    ) == 0  # fmt: skip
    lines = [json.loads(line) for line in nd.read_text().splitlines()]
    assert lines and {"host_key", "id", "severity", "title"} <= set(lines[0])


def test_advise_ranks_hosts_by_time_to_train(tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "p"
    _write(folder, list(fs.mixed_fleet(9)))
    assert main(["fleet", "advise", str(folder), "--workload", "resnet50-imagenet", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ranking = doc["ranking"]
    assert doc["hosts"] == 9 and len(ranking) == 9
    assert doc["configurations"] < 9  # identical hardware shares one estimate
    seconds = [r["seconds"] for r in ranking if r["sufficient"]]
    assert seconds == sorted(seconds)
    eight = [r for r in ranking if "8×" in r["hardware"]]
    cpu = [r for r in ranking if r["hostname"] in ("node-00000", "node-00003", "node-00006")]
    assert eight and cpu and max(r["seconds"] for r in eight) < min(r["seconds"] for r in cpu)
    assert doc["deadline_hours"] == 24
    assert all(r["verdict"] in ("enough", "not enough", "not confirmed") for r in ranking)
    assert all((r["verdict"] == "enough") == r["sufficient"] for r in ranking)
    # A longer deadline lets more hosts meet it, never fewer.
    args = ["fleet", "advise", str(folder), "-w", "resnet50-imagenet", "--json"]
    assert main([*args, "--deadline", "30d"]) == 0
    month = json.loads(capsys.readouterr().out)
    assert month["deadline_hours"] == 720 and month["meets"] >= doc["meets"]
    assert main(["fleet", "advise", str(folder), "--workload", "no-such-thing"]) == 2


def test_diff_reports_upgrades_lost_gpus_new_findings_and_hosts(tmp_path: Path) -> None:
    docs = _hosts(5, "eight-gpu", gpu_model=fs.GPU_MODELS[0])
    before, after = tmp_path / "before", tmp_path / "after"
    _write(before, docs)
    later = [json.loads(json.dumps(d)) for d in docs[1:]]  # node-00000 is gone
    for doc in later:
        doc["created_utc"] = "2026-11-22T00:00:00Z"
        doc["nvml"]["driver_version"]["value"] = "570.86.15"
    later[0]["gpus"] = later[0]["gpus"][:7]
    later[1]["findings"].append(
        {"id": "ecc-uncorrected", "severity": "warning", "title": "t", "detail": "d", "fix": "f"}
    )
    extra = _hosts(6, "eight-gpu", gpu_model=fs.GPU_MODELS[0])[5]
    _write(after, [*later, extra])
    with open_fleet(None, create=True) as old, open_fleet(None, create=True) as new:
        ingest(old, [before], now=NOW)
        ingest(new, [after], now=NOW)
        data = compare(old, new)
    assert data["gone"] == ["node-00000"] and data["added"] == ["node-00005"]
    upgrades = [c for c in data["changes_by_kind"] if c["fact"] == "driver"]
    assert {c["new"] for c in upgrades} == {"570.86.15"}
    assert sum(c["hosts"] for c in upgrades) == 4
    assert data["gpus_lost"] == [{"host": "node-00001", "old": 8, "new": 7}]
    assert data["new_findings"] == [
        {"id": "ecc-uncorrected", "hosts": 1, "host_names": ["node-00002"]}
    ]
    assert data["changed"] == ["node-00001", "node-00002", "node-00003", "node-00004"]
    assert {n for c in upgrades for n in c["host_names"]} == set(data["changed"])


def test_diff_names_the_hosts_capped_and_json_lists_them_all(tmp_path: Path, capsys: Any) -> None:
    """Eight hosts upgraded, three gone, two added: the terminal names five of each and counts
    the rest ("and 3 more"); --json lists every one."""
    docs = _hosts(11, "eight-gpu", gpu_model=fs.GPU_MODELS[0])
    before, after = tmp_path / "before", tmp_path / "after"
    _write(before, docs)
    later = [json.loads(json.dumps(d)) for d in docs[3:]]
    for doc in later:
        doc["created_utc"] = "2026-11-22T00:00:00Z"
        doc["nvml"]["driver_version"]["value"] = "570.86.15"
    extra = _hosts(13, "eight-gpu", gpu_model=fs.GPU_MODELS[0])[11:]
    _write(after, [*later, *extra])
    assert main(["fleet", "diff", str(before), str(after)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "11 → 10 hosts: 2 added, 3 gone, 8 changed" in out
    assert "added: node-00011, node-00012" in out
    assert "gone: node-00000, node-00001, node-00002" in out
    assert "changed: node-00003, node-00004, node-00005, node-00006, node-00007 and 3 more" in out
    assert "driver: 535.183.01 → 570.86.15 on 3 hosts: node-00003, node-00006, node-00009" in out
    assert main(["fleet", "diff", str(before), str(after), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["changed"] == [f"node-{i:05d}" for i in range(3, 11)]
    assert sum(len(c["host_names"]) for c in data["changes_by_kind"]) == 8


def test_cli_errors_are_one_line_with_documented_codes(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["fleet", "summary"]) == 5  # no fleet.duckdb here
    assert "fleet ingest" in capsys.readouterr().err
    not_db = tmp_path / "x.duckdb"
    not_db.write_text("not a database")
    assert main(["fleet", "summary", "--db", str(not_db)]) == 5
    err = capsys.readouterr().err
    assert "not a fleet database" in err and "Traceback" not in err
    assert main(["fleet", "ingest", str(tmp_path / "missing")]) == 5
    # A database from a newer hwadvisor is refused, not misread.
    import duckdb

    newer = tmp_path / "newer.duckdb"
    con = duckdb.connect(str(newer))
    con.execute("CREATE TABLE fleet_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO fleet_meta VALUES ('schema', ?)", [str(FLEET_SCHEMA + 1)])
    con.close()
    assert main(["fleet", "summary", "--db", str(newer)]) == 5
    assert "newer hwadvisor" in capsys.readouterr().err


def test_without_duckdb_fleet_says_which_extra_to_install(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)
    assert main(["fleet", "summary", str(tmp_path)]) == 5
    assert "hwadvisor[fleet]" in capsys.readouterr().err


def test_open_refuses_a_folder_as_database(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        open_fleet(tmp_path, create=False)
    with pytest.raises(OutputError):
        open_fleet(tmp_path / "no" / "such" / "f.duckdb", create=True)


@pytest.mark.slow
def test_worker_processes_give_what_one_process_gives(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    _write(folder, list(fs.mixed_fleet(300)))
    results = []
    for workers in (1, 2):
        with open_fleet(None, create=True) as fleet:
            ingest(fleet, [folder], workers=workers, now=NOW)
            results.append(
                fleet.query(
                    "SELECT host_key, gpu_models, driver_version, bench_gpu_matmul_best_gflops "
                    "FROM hosts ORDER BY host_key"
                )
            )
    assert len(results[0]) == 300 and results[0] == results[1]


def test_every_column_is_read_with_its_type_from_a_real_scan() -> None:
    from hwadvisor.fleet.rows import GPU_COLUMNS, HOST_COLUMNS, flatten

    doc = json.loads((FIXTURES / "reports" / "cpu-only.json").read_text())
    rows = flatten(doc, "scan")
    assert list(rows.host) and set(rows.host) == {name for name, _ in HOST_COLUMNS}
    assert rows.host["memory_total_bytes"] == doc["memory"]["total_bytes"]["value"]
    assert rows.host["cpu_usable_cpus"] == doc["cpu"]["usable_cpus"]["value"]
    doc["memory"]["total_bytes"]["value"] = "lots"  # a hand-edited profile: wrong type
    assert flatten(doc, "scan").host["memory_total_bytes"] is None
    gpu = flatten(fs.template("eight-gpu"), "scan").gpus[0]
    assert set(gpu) == {name for name, _ in GPU_COLUMNS}
    assert isinstance(gpu["vram_total_bytes"], int) and gpu["gpu_index"] == 0


def test_a_profile_without_catalog_names_counts_its_gpus_under_the_catalog_name(
    tmp_path: Path,
) -> None:
    new, old = (json.loads(json.dumps(d)) for d in _hosts(2, gpu_model=fs.GPU_MODELS[5]))
    for gpu in old["gpus"]:
        gpu.pop("catalog_name", None)  # written before the catalog named cards
    unknown = json.loads(json.dumps(_hosts(1, seed=2)[0]))
    unknown["host"]["machine_id"]["value"] = "sha256:feedfeedfeedfeed"
    unknown["host"]["hostname"]["value"] = "odd-one"
    for gpu in unknown["gpus"]:
        gpu.pop("catalog_name", None)
        gpu["name"]["value"] = "Frobnitz Accelerator 9"
    folder = tmp_path / "p"
    _write(folder, [new, old, unknown])
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [folder], now=NOW)
        data = summary(fleet, NOW)
    counts = dict((k, n) for k, n in data["by_gpu_model"])
    assert counts["GeForce RTX 4090"] == 2 * len(new["gpus"])
    assert "NVIDIA GeForce RTX 4090" not in counts
    assert counts["Frobnitz Accelerator 9"] == len(unknown["gpus"])  # the raw name, kept


def test_the_fleet_pdf_is_redacted_by_default_and_the_html_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.fleet.report import render_fleet_html, write_fleet_report
    from hwadvisor.redact import token

    monkeypatch.setenv("HWADVISOR_REDACT_SALT", "pepper")
    docs = _hosts(6, gpu_model=fs.GPU_MODELS[0])
    fs.slow_down(docs[3], "cuda:0", 0.7)
    docs[4]["host"]["hostname"]["value"] = "gpu7.lab.example.org"
    folder = tmp_path / "p"
    _write(folder, docs)
    seen: dict[str, str] = {}

    def keep(html: str) -> bytes:
        seen["pdf"] = html
        return b"%PDF-1.7 stand-in"

    monkeypatch.setattr("hwadvisor.render.pdf.render_pdf", keep)
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [folder], now=NOW)
        data = summary(fleet, NOW)
        assert [o["hostname"] for o in data["outliers"]] == ["node-00003"]
        write_fleet_report(fleet, data, ["html", "pdf"], tmp_path / "out")
        redacted_html = render_fleet_html(fleet, data, salt="pepper")
    html = (tmp_path / "out" / "fleet.html").read_text()
    assert "node-00003" in html and "gpu7.lab.example.org" in html
    pdf = seen["pdf"]
    for name in ("node-00003", "gpu7.lab.example.org", docs[0]["host"]["machine_id"]["value"]):
        assert name not in pdf and name not in redacted_html
    # The same token one host's redacted report gives the same name.
    assert token("pepper", "hostname", "gpu7.lab.example.org") in pdf
    assert token("pepper", "hostname", "node-00003") in pdf  # the outlier, still findable
    assert "A100 40GB" in pdf  # models are not identifying
    assert "stable tokens" in pdf and "stable tokens" not in html


def test_fleet_report_no_redact_keeps_names_in_the_pdf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, str] = {}

    def keep(html: str) -> bytes:
        seen["pdf"] = html
        return b"%PDF-1.7 stand-in"

    monkeypatch.setattr("hwadvisor.render.pdf.render_pdf", keep)
    # The page is laid out here, not in the helper process, so that `seen` is this process's.
    monkeypatch.setenv("HWADVISOR_PDF_IN_PROCESS", "1")
    folder = tmp_path / "p"
    _write(folder, _hosts(2))
    args = ["fleet", "report", str(folder), "--format", "pdf", "--out", str(tmp_path / "o")]
    assert main([*args, "--no-redact"]) == 0
    assert "node-00001" in seen["pdf"]


def test_fleet_report_without_a_pdf_is_degraded_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from hwadvisor.render.pdf import PdfUnavailable

    def no_pdf(html: str) -> bytes:
        raise PdfUnavailable("WeasyPrint is not installed")

    monkeypatch.setattr("hwadvisor.render.pdf.render_pdf", no_pdf)
    folder = tmp_path / "p"
    _write(folder, _hosts(2))
    out = tmp_path / "o"
    assert main(["fleet", "report", str(folder), "--out", str(out)]) == 3
    assert (out / "fleet.html").exists() and not (out / "fleet.pdf").exists()
    assert "no PDF: WeasyPrint is not installed" in capsys.readouterr().err


def test_quiet_ingest_and_report_print_nothing_but_still_work(
    tmp_path: Path, mixed: Path, capsys: Any
) -> None:
    db = tmp_path / "fleet.duckdb"
    assert main(["fleet", "ingest", str(mixed), "--db", str(db), "--quiet"]) == 0
    said = capsys.readouterr()
    assert said.out == "" and said.err == ""
    assert main(["fleet", "summary", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hosts"] == 13  # the ingest did happen
    out = tmp_path / "out"
    args = ["fleet", "report", "--db", str(db), "--format", "html", "--out", str(out), "-q"]
    assert main(args) == 0
    said = capsys.readouterr()
    assert said.out == "" and said.err == ""
    assert (out / "fleet.html").is_file()
    # Without --quiet the same commands say what they did.
    assert main(["fleet", "report", "--db", str(db), "--format", "html", "--out", str(out)]) == 0
    assert "wrote " in capsys.readouterr().out


def test_fleet_show_gives_one_hosts_why(tmp_path: Path, capsys: Any) -> None:
    """`fleet show HOST`: the findings with their fixes, whether fleet advise holds the host
    back and why, stale or not, the last scan and its file; a name that is not there is a
    usage error naming the nearest; nothing from the profile reaches the terminal raw."""
    from datetime import timedelta, timezone

    now = datetime.now(timezone.utc)
    doc = json.loads((FIXTURES / "reports" / "single-gpu.json").read_text())
    folder = tmp_path / "p"
    folder.mkdir()
    for i, (name, days) in enumerate((("gpu-node-1.lab", 1), ("gpu-node-2", 2), ("old-7", 60))):
        d = json.loads(json.dumps(doc))
        d["host"] = {
            "hostname": {"value": name, "source": "os", "reason": None},
            "machine_id": {"value": f"m{i}", "source": "os", "reason": None},
        }
        d["created_utc"] = (now - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
        d["findings"] = []
        if i == 0:
            d["findings"] = [
                {
                    "id": "gpu-xid-79",
                    "severity": "error",
                    "title": "GPU 0 fell off the bus \x1b]0;owned\x07",
                    "detail": "Xid 79 seen 3 times",
                    "fix": "reseat the GPU",
                },
                {"id": "note", "severity": "info", "title": "A note", "detail": "d", "fix": "f"},
            ]
        (folder / f"{name}.json").write_text(json.dumps(d))
    db = tmp_path / "f.duckdb"
    assert main(["fleet", "ingest", str(folder), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["fleet", "show", "gpu-node-1", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "fell off the bus \\u001b]0;owned\\u0007" in out
    text = " ".join(out.split())
    assert "fleet advise holds it back" in text and "fix: reseat the GPU" in text
    assert f"from {folder / 'gpu-node-1.lab.json'}" in text
    assert text.index("error: GPU 0 fell off") < text.index("info: A note")
    assert main(["fleet", "show", "GPU-NODE-2", "--db", str(db), "--json"]) == 0
    healthy = json.loads(capsys.readouterr().out)
    assert healthy["hostname"] == "gpu-node-2" and healthy["advise"]["held_back"] is False
    assert healthy["stale"] is False and healthy["age_days"] == 2 and healthy["findings"] == []
    assert main(["fleet", "show", "old-7", "--db", str(db), "--json"]) == 0
    stale = json.loads(capsys.readouterr().out)
    assert stale["stale"] is True and stale["advise"]["why"] == ["last scanned 60 days ago"]
    assert main(["fleet", "show", "gpu-node-3", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "no host named 'gpu-node-3'" in err and "gpu-node-2" in err
