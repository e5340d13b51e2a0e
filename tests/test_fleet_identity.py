"""Fleet identity: clones told apart, re-imaged nodes linked, ``fleet forget`` and retention,
labels from ``scan --label`` to the export, serials and the Hive-partitioned Parquet export."""

from __future__ import annotations

import copy
import csv
import json
import os
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hwadvisor import pipeline
from hwadvisor.cli import main
from hwadvisor.fleet.identity import CLONE_FINDING, Scan, group_scans, name_groups
from hwadvisor.fleet.queries import summary
from hwadvisor.fleet.store import ingest, open_fleet
from hwadvisor.model.labels import LabelError, parse_labels
from hwadvisor.model.profile import Profile
from tests.helpers import fleet_synth as fs

pytest.importorskip("duckdb")

NOW = datetime(2026, 11, 23)


def _fact(value: Any, source: str = "os") -> dict[str, Any]:
    return {"value": value, "source": source, "reason": None}


def _host(
    i: int,
    *,
    kind: str = "single-gpu",
    machine_id: str | None = None,
    hostname: str | None = None,
    when: str = "2026-11-20T10:00:00Z",
    serial: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    doc = fs.make_host(fs.template(kind), i, random.Random(i), hostname=hostname)
    if machine_id is not None:
        doc["host"]["machine_id"]["value"] = machine_id
    if labels is not None:
        doc["host"]["labels"] = labels
    doc["created_utc"] = when
    if serial is not None:
        doc["system"]["serial"] = _fact(serial, "sysfs")
    return doc


def _write(folder: Path, docs: list[dict[str, Any]], names: list[str] | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n, doc in enumerate(docs):
        name = names[n] if names else f"p{n}"
        (folder / f"{name}.json").write_text(json.dumps(doc))


# --------------------------------------------------------------------------------------------
# Clones and re-imaged nodes


def test_three_clones_sharing_machine_id_and_hostname_are_three_hosts_and_a_finding(
    tmp_path: Path, capsys: Any
) -> None:
    clone = "sha256:c10ec10ec10ec10e"
    docs = [
        _host(i, machine_id=clone, hostname="gpu-07", when=f"2026-11-20T10:0{i}:00Z")
        for i in range(3)
    ]
    docs.append(_host(9, hostname="gpu-09"))  # an ordinary host beside them
    _write(tmp_path / "p", docs)
    db = tmp_path / "fleet.duckdb"
    with open_fleet(db, create=True) as fleet:
        ingest(fleet, [tmp_path / "p"], now=NOW)
        hosts = fleet.query("SELECT host_key, duplicate_id, display_name FROM hosts")
        data = summary(fleet, NOW)
    assert len(hosts) == 4
    clones = [h for h in hosts if h["duplicate_id"]]
    assert len(clones) == 3 and len({h["host_key"] for h in clones}) == 3
    assert all(h["host_key"].startswith(f"{clone}@gpu-07~") for h in clones)
    finding = next(f for f in data["findings"] if f["id"] == CLONE_FINDING)
    assert finding["severity"] == "warning" and finding["hosts"] == 3
    # Named one by one: the host name they share, and each one's key.
    assert sorted(finding["host_names"]) == sorted(h["display_name"] for h in clones)
    assert all(n.startswith("gpu-07 (") for n in finding["host_names"])
    assert data["duplicate_machine_ids"][0]["machine_id"] == clone
    assert main(["fleet", "summary", "--db", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # as read, whatever the wrapping
    assert (
        CLONE_FINDING in out and "gpu-07 (" in out and "gpu-09" not in out.split(CLONE_FINDING)[1]
    )


def test_cpu_only_clones_are_told_apart_by_serial_and_by_name_at_once(tmp_path: Path) -> None:
    clone = "sha256:0123456789abcdef"
    docs = [
        _host(0, kind="cpu-only", machine_id=clone, hostname="c", serial="SN-A1"),
        _host(1, kind="cpu-only", machine_id=clone, hostname="c", serial="SN-B2"),
        # No serial (not root): told apart by host name, as before.
        _host(2, kind="cpu-only", machine_id="sha256:1111222233334444", hostname="x"),
        _host(3, kind="cpu-only", machine_id="sha256:1111222233334444", hostname="y"),
    ]
    _write(tmp_path / "p", docs)
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [tmp_path / "p"], now=NOW)
        data = summary(fleet, NOW)
    assert data["hosts"] == 4
    finding = next(f for f in data["findings"] if f["id"] == CLONE_FINDING)
    assert finding["hosts"] == 4
    assert {d["machine_id"] for d in data["duplicate_machine_ids"]} == {
        clone,
        "sha256:1111222233334444",
    }


def test_a_reimaged_node_is_one_host_with_its_history_and_nothing_stale(tmp_path: Path) -> None:
    old = _host(5, machine_id="sha256:0000000000000001", when="2026-10-01T08:00:00Z")
    new = copy.deepcopy(old)  # the same GPUs, a new machine id after the re-install
    new["host"]["machine_id"]["value"] = "sha256:0000000000000002"
    new["created_utc"] = "2026-11-20T08:00:00Z"
    new["nvml"]["driver_version"]["value"] = "560.35.03"
    cpu_old = _host(6, kind="cpu-only", serial="CZ1234ABCD", when="2026-10-01T08:00:00Z")
    cpu_new = copy.deepcopy(cpu_old)  # CPU-only: the same system serial
    cpu_new["host"]["machine_id"]["value"] = "sha256:00000000000000ff"
    cpu_new["created_utc"] = "2026-11-21T08:00:00Z"
    _write(tmp_path / "p", [old, new, cpu_old, cpu_new])
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [tmp_path / "p"], now=NOW)
        hosts = fleet.query(
            "SELECT host_key, machine_id, driver_version, identity_note FROM hosts "
            "ORDER BY host_key"
        )
        history = fleet.scalar("SELECT count(*) FROM host_scans")
        data = summary(fleet, NOW, stale_days=30)
    assert [h["host_key"] for h in hosts] == [
        "sha256:0000000000000001",
        cpu_old["host"]["machine_id"]["value"],
    ] or len(hosts) == 2
    gpu = next(h for h in hosts if h["host_key"] == "sha256:0000000000000001")
    assert gpu["machine_id"] == "sha256:0000000000000002"  # shown as it is now
    assert gpu["driver_version"] == "560.35.03"
    assert "GPU UUIDs" in gpu["identity_note"] and "sha256:0000000000000001" in gpu["identity_note"]
    cpu = next(h for h in hosts if h["host_key"] != "sha256:0000000000000001")
    assert cpu["machine_id"] == "sha256:00000000000000ff" and "serial" in cpu["identity_note"]
    assert history == 4  # both histories kept
    assert data["hosts"] == 2 and data["stale"] == []  # the old identities are not stale
    assert not any(f["id"] == CLONE_FINDING for f in data["findings"])


def test_a_renamed_host_and_a_gpu_that_fell_off_stay_one_host(tmp_path: Path) -> None:
    first = _host(8, kind="eight-gpu", hostname="old-name", when="2026-11-01T00:00:00Z")
    for n, gpu in enumerate(first["gpus"]):
        gpu["uuid"] = _fact(f"GPU-8{n:07d}-0000-0000-0000-000000000000", "nvml")
    later = copy.deepcopy(first)
    later["host"]["hostname"]["value"] = "new-name"
    later["created_utc"] = "2026-11-20T00:00:00Z"
    later["gpus"] = later["gpus"][:3]  # five GPUs lost from the bus
    _write(tmp_path / "p", [first, later])
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [tmp_path / "p"], now=NOW)
        hosts = fleet.query("SELECT hostname, gpu_count FROM hosts")
    assert hosts == [{"hostname": "new-name", "gpu_count": 3}]


def _scan(n: int, machine: int, key: str, name: str, uuids: frozenset[str], serial: str | None,
          when: datetime) -> Scan:  # fmt: skip
    return Scan(f"{machine}-{n}", key, name, serial, uuids, when, when)


@pytest.mark.parametrize("seed", range(40))
def test_distinct_physical_machines_never_fold_into_one_host(seed: int) -> None:
    """Generated fleets full of clones (a few machine ids and host names for many machines),
    renames, re-installs, GPUs that fall off, serials or none: every host holds the scans of
    one machine only, and every host key is distinct."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 1)
    scans: list[Scan] = []
    owner: dict[str, int] = {}
    for machine in range(rng.randint(5, 40)):
        gpus = frozenset(f"gpu-{machine}-{g}" for g in range(rng.choice((1, 2, 4, 8))))
        serial = f"sn{machine:05d}" if rng.random() < 0.5 else None
        key = f"sha256:{rng.randint(0, 3):016x}"  # four machine ids for the whole fleet
        name = f"node-{rng.randint(0, 5)}"
        when = start + timedelta(hours=rng.randint(0, 48))
        for n in range(rng.randint(1, 6)):
            if rng.random() < 0.2:
                key = f"sha256:{rng.randint(0, 7):016x}"  # re-installed (maybe as a clone)
            if rng.random() < 0.2:
                name = f"node-{rng.randint(0, 5)}"
            seen = gpus
            if len(gpus) > 1 and rng.random() < 0.2:
                seen = frozenset(rng.sample(sorted(gpus), rng.randint(1, len(gpus))))
            scan = _scan(n, machine, key, name, seen, serial, when)
            scans.append(scan)
            owner[scan.scan_id] = machine
            when += timedelta(hours=rng.randint(1, 72))
    groups = group_scans(scans)
    name_groups(groups)
    for group in groups:
        assert len({owner[s.scan_id] for s in group.scans}) == 1, group.key
    assert sorted(owner) == sorted(s.scan_id for g in groups for s in g.scans)
    keys = [g.key for g in groups]
    assert len(keys) == len(set(keys))


def test_a_reimaged_machine_is_found_in_generated_fleets() -> None:
    """The other way round: each machine re-installed once (a new machine id, the same GPUs
    and host name) is one host."""
    rng = random.Random(5)
    scans = []
    for machine in range(50):
        gpus = frozenset(f"gpu-{machine}-{g}" for g in range(rng.choice((1, 8))))
        when = datetime(2026, 11, 1) + timedelta(hours=rng.randint(0, 24))
        for n, key in enumerate((f"old-{machine}", f"new-{machine}")):
            scans.append(_scan(n, machine, key, f"n{machine}", gpus, None, when))
            when += timedelta(days=3)
    groups = group_scans(scans)
    assert len(groups) == 50


# --------------------------------------------------------------------------------------------
# fleet forget, retention


def test_forget_removes_a_host_until_a_newer_scan_arrives(tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "p"
    docs = [_host(i, when="2026-11-20T10:00:00Z") for i in range(3)]
    _write(folder, docs, [f"node-{i}" for i in range(3)])
    db = tmp_path / "fleet.duckdb"
    assert main(["fleet", "ingest", str(folder), "--db", str(db), "-q"]) == 0

    def hostnames() -> list[str]:
        with open_fleet(db, create=False, read_only=True) as fleet:
            return [r["hostname"] for r in fleet.query("SELECT hostname FROM hosts ORDER BY 1")]

    # Unknown: exit 5, nothing forgotten (all or nothing).
    assert main(["fleet", "forget", "node-00001", "no-such-host", "--db", str(db)]) == 5
    assert "no-such-host" in capsys.readouterr().err
    assert main(["fleet", "forget", "node-00001", "--db", str(db), "--dry-run"]) == 0
    assert "would forget 1 host (1 scans): node-00001" in capsys.readouterr().out
    assert hostnames() == ["node-00000", "node-00001", "node-00002"]
    machine = docs[2]["host"]["machine_id"]["value"]
    assert main(["fleet", "forget", "node-00001", machine, "--db", str(db)]) == 0
    assert "forgot 2 hosts (2 scans)" in capsys.readouterr().out
    assert hostnames() == ["node-00000"]
    with open_fleet(db, create=False) as fleet:
        assert fleet.scalar("SELECT count(*) FROM scans") == 1  # their scans deleted

    # The same old file, read again (touched): it stays out.
    os.utime(folder / "node-1.json", (1_800_000_000, 1_800_000_000))
    with open_fleet(db, create=False) as fleet:
        again = ingest(fleet, [folder], now=NOW)
    assert again.forgotten_scans == 1 and again.new_scans == 0
    assert hostnames() == ["node-00000"]
    # A copy of the old scan under another name: out too.
    (folder / "backup.json").write_text((folder / "node-1.json").read_text())
    with open_fleet(db, create=False) as fleet:
        ingest(fleet, [folder], now=NOW)
    assert hostnames() == ["node-00000"]
    # A newer scan brings it back.
    newer = copy.deepcopy(docs[1])
    newer["created_utc"] = "2026-11-22T10:00:00Z"
    (folder / "node-1-new.json").write_text(json.dumps(newer))
    with open_fleet(db, create=False) as fleet:
        ingest(fleet, [folder], now=NOW)
    assert hostnames() == ["node-00000", "node-00001"]


def test_forget_names_an_ambiguous_host_and_forgets_nothing(tmp_path: Path, capsys: Any) -> None:
    clone = "sha256:c10ec10ec10ec10e"
    docs = [_host(i, machine_id=clone, hostname="gpu-07") for i in range(2)]
    _write(tmp_path / "p", docs)
    db = tmp_path / "fleet.duckdb"
    assert main(["fleet", "ingest", str(tmp_path / "p"), "--db", str(db), "-q"]) == 0
    assert main(["fleet", "forget", "gpu-07", "--db", str(db)]) == 5
    err = capsys.readouterr().err
    assert "names 2 hosts" in err and f"{clone}@gpu-07~" in err and "Traceback" not in err
    with open_fleet(db, create=False, read_only=True) as fleet:
        key = fleet.scalar("SELECT min(host_key) FROM hosts")
    assert main(["fleet", "forget", key, "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [g["host_key"] for g in doc["forgotten"]] == [key]
    with open_fleet(db, create=False, read_only=True) as fleet:
        # One clone left: no longer a clone.
        assert fleet.query("SELECT duplicate_id FROM hosts") == [{"duplicate_id": False}]
        assert fleet.scalar("SELECT count(*) FROM findings WHERE id = ?", [CLONE_FINDING]) == 0
    assert main(["fleet", "forget", "--db", str(db)]) == 2  # nothing named


def test_retention_drops_hosts_not_scanned_for_days_and_keeps_them_out(
    tmp_path: Path, capsys: Any
) -> None:
    folder = tmp_path / "p"
    docs = [
        _host(0, when="2026-11-20T00:00:00Z"),
        _host(1, when="2026-10-01T00:00:00Z"),  # decommissioned in October
        _host(2, kind="cpu-only", when="2026-11-22T00:00:00Z"),
    ]
    _write(folder, docs)
    db = tmp_path / "fleet.duckdb"
    with open_fleet(db, create=True) as fleet:
        ingest(fleet, [folder], now=NOW)
        assert fleet.scalar("SELECT count(*) FROM hosts") == 3
        # The setting alone (no new file) applies it, and is kept.
        result = ingest(fleet, [folder], now=NOW, retention_days=30)
        assert result.retired == [docs[1]["host"]["machine_id"]["value"]]
        assert fleet.scalar("SELECT count(*) FROM hosts") == 2
        assert fleet.scalar("SELECT count(*) FROM scans") == 2
        assert fleet.scalar("SELECT value FROM fleet_meta WHERE key = 'retention_days'") == "30"
        # Later ingests go on applying it: the first host ages out in its turn.
        later = ingest(fleet, [folder], now=NOW + timedelta(days=28))
        assert later.retired == [docs[0]["host"]["machine_id"]["value"]]
        assert fleet.scalar("SELECT count(*) FROM hosts") == 1
        off = ingest(fleet, [folder], now=NOW, retention_days=0)
        assert off.retired == [] and fleet.scalar("SELECT count(*) FROM hosts") == 1
    assert main(["fleet", "ingest", str(folder), "--db", str(db), "--retention-days", "-1"]) == 2
    capsys.readouterr()
    assert (
        main(["fleet", "ingest", str(folder), "--db", str(db), "--retention-days", "1", "--json"])
        == 0
    )
    # The command uses the clock: every scan here is older than a day by now.
    doc = json.loads(capsys.readouterr().out)
    assert doc["hosts"] == 0 and len(doc["retired"]) == 1
    assert main(["fleet", "forget", "--older-than", "1", "--db", str(db), "--dry-run"]) == 0


# --------------------------------------------------------------------------------------------
# Labels


def test_labels_parse_from_options_and_environment() -> None:
    env = {"HWADVISOR_LABELS": "site=b, group=gpu-a100 ,"}
    assert parse_labels(["site=a", "rack=r12"], env) == {
        "group": "gpu-a100",
        "rack": "r12",
        "site": "a",
    }
    assert parse_labels([], {}) == {}
    for bad in ("site", "Site=a", "=a", "site=a b", "site=" + "x" * 64, "k" * 64 + "=v", "s=ä"):
        with pytest.raises(LabelError):
            parse_labels([bad], {})
    with pytest.raises(LabelError, match="HWADVISOR_LABELS"):
        parse_labels([], {"HWADVISOR_LABELS": "site=a,rack"})
    # A profile that carries odd labels keeps the well-formed ones only.
    host = Profile.model_validate(
        {
            **fs.template("cpu-only"),
            "host": {"labels": {"site": "a", "BAD": "x", "rack": "r 1", "n": 3}},
        }
    ).host
    assert host.labels == {"site": "a"}


def test_labels_go_from_scan_to_profile_to_fleet_to_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    base = Profile.model_validate(fs.template("single-gpu"))
    calls: list[int] = []

    def run_scan(options: pipeline.ScanOptions, progress: object = None) -> Profile:
        calls.append(1)
        return base.model_copy(deep=True)

    monkeypatch.setattr(pipeline, "run_scan", run_scan)
    monkeypatch.setenv("HWADVISOR_LABELS", "site=b,group=train")
    out = tmp_path / "profiles" / "node.json"
    out.parent.mkdir()
    # A bad label is a usage error before the scan runs.
    assert main(["scan", "--no-bench", "--label", "rack=r 12", "--json", str(out)]) == 2
    assert "label" in capsys.readouterr().err and not calls and not out.exists()
    monkeypatch.setenv("HWADVISOR_LABELS", "site=b,Group=train")
    assert main(["scan", "--no-bench", "--label", "rack=r12", "--json", str(out)]) == 2
    assert "HWADVISOR_LABELS" in capsys.readouterr().err and not calls
    monkeypatch.setenv("HWADVISOR_LABELS", "site=b,group=train")
    code = main(
        ["scan", "--no-bench", "--label", "site=a", "--label", "rack=r12", "--json", str(out)]
    )
    assert code in (0, 3) and calls
    doc = json.loads(out.read_text())
    assert doc["host"]["labels"] == {"group": "train", "rack": "r12", "site": "a"}
    db = tmp_path / "fleet.duckdb"
    assert main(["fleet", "ingest", str(out.parent), "--db", str(db), "-q"]) == 0
    csv_out = tmp_path / "hosts.csv"
    assert main(["fleet", "export", "--db", str(db), "--out", str(csv_out)]) == 0
    row = next(csv.DictReader(csv_out.open(encoding="utf-8")))
    assert (row["site"], row["rack"], row["group"]) == ("a", "r12", "train")
    assert json.loads(row["labels"]) == {"group": "train", "rack": "r12", "site": "a"}
    nd = tmp_path / "hosts.ndjson"
    assert main(["fleet", "export", "--db", str(db), "--format", "ndjson", "--out", str(nd)]) == 0
    line = json.loads(nd.read_text().splitlines()[0])
    assert line["labels"] == {"group": "train", "rack": "r12", "site": "a"}
    assert line["scan_utc"].endswith("Z")


def test_csv_defuses_formula_like_serials_and_labels(tmp_path: Path) -> None:
    doc = _host(0, serial="=HYPERLINK(1)")
    doc["gpus"][0]["serial"] = _fact("+GPU-serial", "nvml")
    _write(tmp_path / "p", [doc])
    for table, column, want in (
        ("hosts", "system_serial", "'=HYPERLINK(1)"),
        ("gpus", "serial", "'+GPU-serial"),
    ):
        out = tmp_path / f"{table}.csv"
        argv = ["fleet", "export", str(tmp_path / "p"), "--table", table, "--out", str(out)]
        assert main(argv) == 0
        assert next(csv.DictReader(out.open(encoding="utf-8")))[column] == want


# --------------------------------------------------------------------------------------------
# Export: serials, timestamps, the Hive layout


def test_parquet_has_timestamps_serials_and_a_hive_layout_read_back(
    tmp_path: Path, capsys: Any
) -> None:
    import duckdb

    docs = [
        _host(0, serial="SN-0001", labels={"site": "a", "rack": "r1"}, when="2026-11-20T10:00:00Z"),
        _host(1, serial="SN-0002", labels={"site": "a"}, when="2026-11-21T11:30:00Z"),
        _host(2, labels={"site": "b", "group": "x"}, when="2026-11-21T12:00:00Z"),
        _host(3, kind="cpu-only", when="2026-11-21T13:00:00Z"),  # no labels at all
    ]
    docs[0]["gpus"][0]["serial"] = _fact("1650000000001", "nvml")
    _write(tmp_path / "p", docs)
    db = tmp_path / "fleet.duckdb"
    assert main(["fleet", "ingest", str(tmp_path / "p"), "--db", str(db), "-q"]) == 0
    single = tmp_path / "hosts.parquet"
    assert (
        main(["fleet", "export", "--db", str(db), "--format", "parquet", "--out", str(single)]) == 0
    )
    types = dict((r[0], r[1]) for r in duckdb.sql(f"DESCRIBE SELECT * FROM '{single}'").fetchall())
    assert types["scan_utc"] == types["ingested_utc"] == "TIMESTAMP WITH TIME ZONE"
    assert types["labels"] == "MAP(VARCHAR, VARCHAR)"
    serials = duckdb.sql(f"SELECT system_serial FROM '{single}' ORDER BY 1 NULLS LAST").fetchall()
    assert serials[:2] == [("SN-0001",), ("SN-0002",)]
    gpus = tmp_path / "gpus.parquet"
    argv = ["fleet", "export", "--db", str(db), "--table", "gpus", "--format", "parquet"]
    assert main([*argv, "--out", str(gpus)]) == 0
    got = duckdb.sql(
        f"SELECT serial, uuid, site FROM '{gpus}' WHERE serial IS NOT NULL ORDER BY 1"
    ).fetchall()
    assert got[0] == ("1650000000001", docs[0]["gpus"][0]["uuid"]["value"], "a")

    out = tmp_path / "inventory"
    hive = ["fleet", "export", "--db", str(db), "--format", "parquet", "--partition-by"]
    assert main([*hive, "date,site", "--out", str(out)]) == 0
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet"))
    assert "date=2026-11-20/site=a/hosts_0.parquet" in files
    assert "date=2026-11-21/site=b/hosts_0.parquet" in files
    assert len(files) == 4  # 20/a, 21/a, 21/b, 21/(no site)
    rows = duckdb.sql(
        f"SELECT date, site, hostname, scan_utc FROM read_parquet('{out}/**/*.parquet', "
        "hive_partitioning = true) ORDER BY hostname"
    ).fetchall()
    assert [(str(r[0]), r[1], r[2]) for r in rows] == [
        ("2026-11-20", "a", "node-00000"),
        ("2026-11-21", "a", "node-00001"),
        ("2026-11-21", "b", "node-00002"),
        ("2026-11-21", None, "node-00003"),
    ]
    assert rows[1][3].isoformat() == "2026-11-21T11:30:00+00:00"
    described = duckdb.sql(
        f"DESCRIBE SELECT scan_utc FROM read_parquet('{out}/**/*.parquet', "
        "hive_partitioning = true)"
    ).fetchall()
    assert described[0][1] == "TIMESTAMP WITH TIME ZONE"
    # Never over an existing output without --force; with it, replaced whole.
    assert main([*hive, "date,site", "--out", str(out)]) == 4
    assert "already exists" in capsys.readouterr().err
    assert main([*hive, "site", "--out", str(out), "--force"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["site=__HIVE_DEFAULT_PARTITION__", "site=a",
                                                     "site=b"]  # fmt: skip
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".inventory")]
    assert main([*hive, "date,shoe", "--out", str(tmp_path / "x")]) == 2
    assert main(["fleet", "export", "--db", str(db), "--partition-by", "site", "--out", "y"]) == 2
    pyarrow_dataset = pytest.importorskip("pyarrow.dataset")
    table = pyarrow_dataset.dataset(str(out), format="parquet", partitioning="hive").to_table()
    assert str(table.schema.field("scan_utc").type) == "timestamp[us, tz=UTC]"
    assert table.num_rows == 4


def test_a_fleet_of_schema_1_is_upgraded_and_its_clones_told_apart(tmp_path: Path) -> None:
    clone = "sha256:c10ec10ec10ec10e"
    docs = [_host(i, machine_id=clone, hostname="gpu-07") for i in range(2)]
    _write(tmp_path / "p", docs)
    db = tmp_path / "fleet.duckdb"
    with open_fleet(db, create=True) as fleet:
        ingest(fleet, [tmp_path / "p"], now=NOW)
        # Back to what hwadvisor wrote before fleet schema 2.
        con = fleet.con
        for sql in (
            "DROP VIEW hosts",
            "DROP VIEW host_scans",
            "DROP TABLE scan_hosts",
            "DROP TABLE forgotten",
            'ALTER TABLE scans DROP COLUMN "group"',
            "ALTER TABLE scans DROP COLUMN labels",
            "ALTER TABLE gpus DROP COLUMN serial",
            "UPDATE fleet_meta SET value = '1' WHERE key = 'schema'",
        ):
            con.execute(sql)
    with open_fleet(db, create=False, read_only=True) as fleet:  # a reader upgrades it once
        assert fleet.scalar("SELECT value FROM fleet_meta WHERE key = 'schema'") == "2"
        assert fleet.scalar("SELECT count(*) FROM hosts WHERE duplicate_id") == 2
    with open_fleet(db, create=False) as fleet:
        again = ingest(fleet, [tmp_path / "p"], now=NOW)
        assert again.unchanged == 2
        assert "group" in {r[0] for r in fleet.con.execute("DESCRIBE scans").fetchall()}


def test_a_firmware_default_serial_folds_nothing() -> None:
    """Many CPU-only machines whose firmware gives them all one serial, scanned days apart
    (so never "at the same time"): each is its own host."""
    start = datetime(2026, 11, 1)
    scans = [
        _scan(0, m, f"sha256:{m:016x}", f"n{m}", frozenset(), "12345678", start + timedelta(days=m))
        for m in range(20)
    ]
    assert len(group_scans(scans)) == 20
