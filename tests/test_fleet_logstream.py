"""Profiles through log streams: ``fleet emit`` lines, and ``fleet ingest`` of kubectl logs, CRI
log files and standard input, with damaged, repeated and foreign lines among them."""

from __future__ import annotations

import io
import json
import random
import re
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.cli import main
from hwadvisor.fleet import logstream, store
from hwadvisor.fleet.logstream import StreamReader, encode
from hwadvisor.fleet.store import ingest, open_fleet
from hwadvisor.redact import LOG_REASON, log_copy
from tests.helpers import fleet_synth as fs

pytest.importorskip("duckdb")

FIXTURES = Path(__file__).parent / "fixtures" / "reports"
LINE_RE = re.compile(
    r"^hwadvisor-profile v1 ([0-9a-f]{16}) (\d+)/(\d+) ([0-9a-f]{8}) ([A-Za-z0-9+/=]+)$"
)


def _hosts(n: int, seed: int = 5) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    bases = {name: fs.template(name) for name in fs.TEMPLATES}
    return [
        fs.make_host(bases[fs.TEMPLATES[i % 3]], i, rng, day=i % 20, salt=f"s{seed}")
        for i in range(n)
    ]


def _emit(doc: dict[str, Any], **kw: Any) -> list[str]:
    return [line.rstrip("\n") for line in encode(log_copy(doc), **kw)]


def _hostnames(fleet: Any) -> set[str]:
    return {r[0] for r in fleet.con.execute("SELECT hostname FROM scans").fetchall()}


def _docs(fleet: Any) -> list[dict[str, Any]]:
    rows = fleet.con.execute("SELECT doc FROM scans").fetchall()
    return [json.loads(zlib.decompress(r[0])) for r in rows]


def _ingest(tmp_path: Path, *sources: Path) -> tuple[store.IngestResult, Any]:
    fleet = open_fleet(None, create=True)
    return ingest(fleet, list(sources), workers=1), fleet


# --------------------------------------------------------------------------------------------
# fleet emit


def test_a_realistic_profile_is_one_or_two_lines_that_fit(tmp_path: Path, capsys: Any) -> None:
    for name in ("cpu-only", "single-gpu", "eight-gpu"):
        assert main(["fleet", "emit", str(FIXTURES / f"{name}.json")]) == 0
        out = capsys.readouterr().out
        lines = out.splitlines(keepends=True)
        assert 1 <= len(lines) <= 2, (name, len(lines))
        assert all(len(line.encode()) <= 8000 for line in lines)
        matches = [LINE_RE.match(line.rstrip("\n")) for line in lines]
        assert all(matches)
        assert {m.group(1) for m in matches if m} == {matches[0].group(1) if matches[0] else ""}
        assert [m.group(2) for m in matches if m] == [str(i + 1) for i in range(len(lines))]


def test_line_bytes_bounds_every_line_and_is_checked(tmp_path: Path, capsys: Any) -> None:
    profile = str(FIXTURES / "eight-gpu.json")
    assert main(["fleet", "emit", profile, "--line-bytes", "256"]) == 0
    lines = capsys.readouterr().out.splitlines(keepends=True)
    assert len(lines) > 40 and max(len(line.encode()) for line in lines) <= 256
    assert main(["fleet", "emit", profile, "--line-bytes", "1048576"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    for bad in ("255", "1048577", "0", "-5", "lots"):
        assert main(["fleet", "emit", profile, "--line-bytes", bad]) == 2
        assert "--line-bytes" in capsys.readouterr().err
    with pytest.raises(ValueError):
        encode({"schema_version": 1}, line_bytes=100)


def test_every_line_size_round_trips(tmp_path: Path) -> None:
    doc = _hosts(3)[2]
    for size in (256, 257, 1000, 4096, 8000, 65536):
        lines = _emit(doc, line_bytes=size)
        assert all(len(line) + 1 <= size for line in lines)
        parts = list(
            StreamReader("x").parts(
                (i, line.encode(), len(line)) for i, line in enumerate(lines, 1)
            )
        )
        assert [p.reason for p in parts] == [None]
        assert json.loads(parts[0].text or "") == log_copy(doc)


@pytest.mark.parametrize(
    "content",
    ["not json at all\n", '{"schema_version": 99, "tool": {"name": "hwadvisor"}}', ""],
)
def test_a_bad_profile_is_one_line_and_exit_5(tmp_path: Path, capsys: Any, content: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["fleet", "emit", str(bad)]) == 5
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err
    assert main(["fleet", "emit", str(tmp_path / "missing.json")]) == 5
    assert main(["fleet", "emit", str(tmp_path)]) == 5


def test_emit_reads_standard_input(monkeypatch: Any, capsys: Any) -> None:
    raw = (FIXTURES / "single-gpu.json").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    assert main(["fleet", "emit", "-"]) == 0
    assert all(LINE_RE.match(line) for line in capsys.readouterr().out.splitlines())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff\xfe\x00garbage")))
    assert main(["fleet", "emit"]) == 5

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    assert main(["fleet", "emit"]) == 2  # nothing piped in: never waits on a terminal


def test_emit_to_a_full_disk_is_exit_4(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(sys, "stdout", Full())
    assert main(["fleet", "emit", str(FIXTURES / "cpu-only.json")]) == 4
    assert "No space left" in capsys.readouterr().err


def _secret_profile() -> dict[str, Any]:
    doc = _hosts(2)[1]  # one GPU
    doc["system"]["serial"] = {"value": "SYS-SN-4711", "source": "sysfs", "reason": None}
    doc["system"]["board_serial"] = {"value": "BRD-SN-0815", "source": "sysfs", "reason": None}
    doc["gpus"][0]["serial"] = {"value": "1320219012345", "source": "nvml", "reason": None}
    doc["network"]["interfaces"] = [
        {
            "name": "eth0",
            "kind": "ethernet",
            "mac": {"value": "0c:42:a1:00:11:22", "source": "sysfs", "reason": None},
        }
    ]
    doc["findings"] = [
        {
            "id": "net",
            "severity": "info",
            "title": "Address",
            "detail": "eth0 has 10.20.30.40 and fe80::1c42:a1ff:fe00:1122, mac 0c:42:a1:00:11:22",
            "fix": "none",
        }
    ]
    return doc


def test_secrets_are_left_out_of_logs_unless_full(tmp_path: Path, capsys: Any) -> None:
    doc = _secret_profile()
    secrets = ("SYS-SN-4711", "1320219012345", "0c:42:a1:00:11:22", "10.20.30.40", "fe80::1c42")
    uuid = doc["gpus"][0]["uuid"]["value"]
    keep = (doc["host"]["hostname"]["value"], doc["host"]["machine_id"]["value"], uuid)
    stripped = json.dumps(log_copy(doc))
    assert not any(s in stripped for s in secrets) and "BRD-SN-0815" not in stripped
    assert all(k in stripped for k in keep)
    assert log_copy(doc)["system"]["serial"] == {
        "value": None,
        "source": "sysfs",
        "reason": LOG_REASON,
    }

    profile = tmp_path / "p.json"
    # A board serial is not a field of this schema (yet): a profile with it would be refused.
    del doc["system"]["board_serial"]
    profile.write_text(json.dumps(doc))
    for args, present in (([], False), (["--full"], True)):
        assert main(["fleet", "emit", str(profile), *args]) == 0
        log = tmp_path / f"log{len(args)}.log"
        log.write_text(capsys.readouterr().out)
        result, fleet = _ingest(tmp_path, log)
        with fleet:
            assert result.new_scans == 1 and not result.skipped
            text = json.dumps(_docs(fleet)[0])
        assert all(k in text for k in keep)
        assert all((s in text) == present for s in secrets), args


# --------------------------------------------------------------------------------------------
# fleet ingest of log streams


def _interleave(streams: dict[str, list[str]], rng: random.Random) -> list[tuple[str, str]]:
    """(pod, line) pairs: every pod's lines in their order, pods mixed at random."""
    queues = {pod: list(lines) for pod, lines in streams.items()}
    out: list[tuple[str, str]] = []
    while queues:
        pod = rng.choice(sorted(queues))
        out.append((pod, queues[pod].pop(0)))
        if not queues[pod]:
            del queues[pod]
    return out


def test_round_trip_across_many_pods_with_prefixes_and_time_stamps(tmp_path: Path) -> None:
    docs = _hosts(36)
    rng = random.Random(9)
    streams: dict[str, list[str]] = {}
    for i, doc in enumerate(docs):
        pod = f"hwadvisor-{i % 12:05x}"
        streams.setdefault(pod, []).extend(_emit(doc, line_bytes=3000))
        streams[pod].append(f"hwadvisor scan finished on {pod}; sleeping 21600 s")
    lines = []
    for n, (pod, line) in enumerate(_interleave(streams, rng)):
        stamp = f"2026-11-27T08:{n // 60 % 60:02d}:{n % 60:02d}.{n:09d}Z "
        lines.append((f"[pod/{pod}/hwadvisor] " if n % 3 else "") + (stamp if n % 2 else "") + line)
    log = tmp_path / "kubectl-logs.txt"
    log.write_text("\n".join(lines) + "\n")
    result, fleet = _ingest(tmp_path, log)
    with fleet:
        assert result.new_scans == 36 and not result.skipped and result.files == 1
        assert _hostnames(fleet) == {d["host"]["hostname"]["value"] for d in docs}
        paths = [r[0] for r in fleet.con.execute("SELECT path FROM scans").fetchall()]
        assert all(
            re.fullmatch(rf"{re.escape(str(log))}#(pod/hwadvisor-\w+/hwadvisor )?line \d+", p)
            for p in paths
        )
        row = fleet.con.execute(
            "SELECT status, reason, size_bytes FROM files WHERE path = ?", [str(log)]
        ).fetchone()
        assert row[0] == "stream" and row[2] == log.stat().st_size
        assert row[1].startswith("log stream: 36 profiles, 0 skipped, 0 repeated, 36 other lines")


def _cri(stream: str, tag: str, text: str, n: int) -> str:
    return f"2026-11-27T08:00:{n % 60:02d}.{n:09d}Z {stream} {tag} {text}"


def test_cri_log_files_with_partial_lines_are_joined(tmp_path: Path) -> None:
    docs = _hosts(4)
    lines: list[str] = []
    # A profile printed whole on one line, cut by containerd into 16 KiB partial lines.
    whole = json.dumps(docs[2], separators=(",", ":"))  # an 8-GPU node
    pieces = [whole[i : i + 16384] for i in range(0, len(whole), 16384)]
    assert len(pieces) >= 3
    for n, piece in enumerate(pieces):
        lines.append(_cri("stdout", "P" if n < len(pieces) - 1 else "F", piece, n))
        lines.append(_cri("stderr", "F", f"warning {n} from the other stream", n))
    # emit lines longer than containerd's limit: cut too, and joined again.
    for line in _emit(docs[1], line_bytes=40000):
        cut = [line[i : i + 16384] for i in range(0, len(line), 16384)]
        lines += [_cri("stdout", "P", c, 1) for c in cut[:-1]] + [_cri("stdout", "F", cut[-1], 2)]
    lines += [_cri("stdout", "F", line, 3) for line in _emit(docs[0])]
    lines.append(_cri("stdout", "F", json.dumps(docs[3]), 4))  # default separators, one line
    folder = tmp_path / "var" / "log" / "pods" / "hwadvisor_hwadvisor-x7k2p_0b5c" / "hwadvisor"
    folder.mkdir(parents=True)
    (folder / "0.log").write_text("\n".join(lines) + "\n")
    result, fleet = _ingest(tmp_path, tmp_path / "var")
    with fleet:
        assert result.new_scans == 4 and not result.skipped
        assert _hostnames(fleet) == {d["host"]["hostname"]["value"] for d in docs}


def test_damaged_lines_are_skipped_with_reasons_and_the_rest_ingested(tmp_path: Path) -> None:
    docs = _hosts(12)
    emitted = [_emit(doc, line_bytes=2000) for doc in docs]
    assert all(len(lines) >= 3 for lines in emitted)
    raw: list[bytes] = [b"starting hwadvisor collector", b"\xff\xfe\xfd not UTF-8 at all \x80"]
    good = {0, 1, 2, 3, 4, 5, 11}

    def put(lines: list[str], pod: str) -> None:
        raw.extend(f"[pod/{pod}/hwadvisor] {line}".encode() for line in lines)

    for i in sorted(good - {11}):
        put(emitted[i], f"good-{i}")
    cut = list(emitted[6])
    cut[1] = cut[1][: len(cut[1]) // 2]  # a line cut in the middle
    put(cut, "cut")
    missing = list(emitted[7])
    del missing[1]  # a lost line
    put(missing, "missing")
    bad_crc = list(emitted[8])
    fields = bad_crc[2].split(" ")
    fields[4] = f"{int(fields[4], 16) ^ 1:08x}"
    bad_crc[2] = " ".join(fields)
    put(bad_crc, "crc")
    newer = [line.replace("hwadvisor-profile v1 ", "hwadvisor-profile v2 ") for line in emitted[9]]
    put(newer, "newer")
    flipped = list(emitted[10])
    flipped[0] = flipped[0][:-10] + ("A" if flipped[0][-10] != "A" else "B") + flipped[0][-9:]
    put(flipped, "flipped")
    raw.append(b"x" * 10_000_000)  # a 10 MB line of junk
    raw.append(b'{"schema_version": 6, "tool": {"name": "hwadvisor"}, "cut here')
    raw.append(b'[pod/bytes/hwadvisor] {"schema_version":6,"host":"\xff\xfe"}')
    raw.append(b"hwadvisor-profile v1 garbage after the marker")
    raw.append(json.dumps(docs[11]).encode())  # the old collectors' one-line JSON
    raw.append(b"\x00\x01\x02 binary noise \x1b[2J")
    log = tmp_path / "mixed.log"
    log.write_bytes(b"\n".join(raw) + b"\n")

    result, fleet = _ingest(tmp_path, log)
    with fleet:
        assert result.new_scans == len(good)
        assert _hostnames(fleet) == {docs[i]["host"]["hostname"]["value"] for i in good}
    reasons = {path.split("#", 1)[1].split(" line")[0]: why for path, why in result.skipped}
    n = [len(lines) for lines in emitted]
    checksum = "the checksum (cut or damaged on the way)"
    assert reasons["pod/cut/hwadvisor"] == f"line 2 of its {n[6]} fails {checksum}"
    assert reasons["pod/missing/hwadvisor"] == (
        f"line 2 of its {n[7]} is missing (lost, or still to be written)"
    )
    assert reasons["pod/crc/hwadvisor"] == f"line 3 of its {n[8]} fails {checksum}"
    assert reasons["pod/flipped/hwadvisor"] == f"line 1 of its {n[10]} fails {checksum}"
    assert "format 2: this hwadvisor reads format 1" in reasons["pod/newer/hwadvisor"]
    assert sum("format 2" in why for _, why in result.skipped) == 1  # once, not per line
    by_line = {path.rsplit(" ", 1)[-1]: why for path, why in result.skipped}
    junk = str(len(raw) - 5)
    assert "a line of 10.0 MB" in by_line[junk]
    assert "cut off in its line" in by_line[str(len(raw) - 4)]
    assert "not UTF-8" in by_line[str(len(raw) - 3)]
    assert "cannot be read" in by_line[str(len(raw) - 2)]
    assert len(result.skipped) == 9


def test_the_summary_counts_what_was_skipped(tmp_path: Path, capsys: Any) -> None:
    lines = _emit(_hosts(1)[0], line_bytes=1000)
    del lines[2]
    log = tmp_path / "s.log"
    log.write_text("\n".join(lines) + "\n")
    db = tmp_path / "f.duckdb"
    assert main(["fleet", "ingest", str(log), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "1 files, 0 new scans" in out and "1 skipped" in out
    assert f"skipped {log}#line 1: line 3 of its" in out
    assert main(["fleet", "summary", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["skipped_files"] == 1
    assert data["skipped_reasons"][0]["reason"].endswith(
        "is missing (lost, or still to be written)"
    )


def test_standard_input(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    docs = _hosts(5)
    text = "".join(
        f"[pod/hw-{i}/hwadvisor] {line}\n" for i, d in enumerate(docs) for line in _emit(d)
    )
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    db = tmp_path / "f.duckdb"
    assert main(["fleet", "ingest", "-", "--db", str(db), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["new_scans"] == 5 and out["hosts"] == 5 and out["files"] == 1
    with open_fleet(db, create=False) as fleet:
        paths = {r[0] for r in fleet.con.execute("SELECT path FROM files").fetchall()}
    assert "-" in paths and "-#pod/hw-0/hwadvisor line 1" in paths
    # One profile on standard input, as a file would hold it: read as that file.
    single = (FIXTURES / "cpu-only.json").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(single)))
    assert main(["fleet", "ingest", "-", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["new_scans"] == 1
    with open_fleet(db, create=False) as fleet:
        row = fleet.con.execute(
            "SELECT path FROM scans ORDER BY ingested_utc DESC, path LIMIT 1"
        ).fetchone()
        assert fleet.scalar("SELECT count(*) FROM scans WHERE path = '-'") == 1, row
    assert not list(Path(logstream.tempfile.gettempdir()).glob("hwadvisor-stdin-*/-"))


def test_a_profile_logged_again_is_ingested_once(tmp_path: Path) -> None:
    docs = _hosts(3)
    lines: list[str] = []
    for _ in range(3):  # the pod logs it every interval; and a restart logs it again
        for d in docs:
            lines += [f"[pod/hw/hwadvisor] {line}" for line in _emit(d)]
    one_line = json.dumps(docs[0], separators=(",", ":"))
    lines += [one_line, f"2026-11-27T09:00:00Z {one_line}"]
    log = tmp_path / "again.log"
    log.write_text("\n".join(lines) + "\n")
    result, fleet = _ingest(tmp_path, log)
    with fleet:
        assert result.new_scans == 4 and result.known_scans == 0 and not result.skipped
        assert fleet.scalar("SELECT count(*) FROM hosts") == 3
        reason = fleet.scalar("SELECT reason FROM files WHERE status = 'stream'")
    assert "4 profiles, 0 skipped, 7 repeated" in reason


def test_a_stream_that_grows_gives_its_new_profiles(tmp_path: Path, monkeypatch: Any) -> None:
    docs = _hosts(6)
    log = tmp_path / "grow.log"
    first = [line for d in docs[:3] for line in _emit(d, line_bytes=2000)]
    late = _emit(docs[3], line_bytes=2000)
    log.write_text("\n".join(first + late[:1]) + "\n")  # the last one still being written
    db = tmp_path / "f.duckdb"
    with open_fleet(db, create=True) as fleet:
        one = ingest(fleet, [log], workers=1)
        assert one.new_scans == 3 and len(one.skipped) == 1 and "missing" in one.skipped[0][1]
        calls: list[str] = []
        real = logstream.open_stream
        monkeypatch.setattr(logstream, "open_stream", lambda p: calls.append(p) or real(p))
        again = ingest(fleet, [log], workers=1)
        assert again.unchanged == 1 and again.new_scans == 0 and calls == []
        with log.open("a") as out:
            out.write("\n".join(late[1:] + [x for d in docs[4:] for x in _emit(d)]) + "\n")
        grown = ingest(fleet, [log], workers=1)
        assert grown.new_scans == 3 and grown.known_scans == 3 and not grown.skipped
        assert fleet.scalar("SELECT count(*) FROM files WHERE status = 'skipped'") == 0
        assert fleet.scalar("SELECT count(*) FROM hosts") == 6


def test_lines_of_one_json_profile_each_are_a_stream(tmp_path: Path) -> None:
    """``kubectl logs … | grep '^{' > node.json`` after two scans: two profiles, one file."""
    docs = _hosts(2)
    ndjson = tmp_path / "node.json"
    ndjson.write_text("".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs))
    single = tmp_path / "one.json"
    single.write_text(json.dumps(docs[0], separators=(",", ":")) + "\n")
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(docs[1], indent=2))
    assert logstream.open_stream(str(single)) is None
    assert logstream.open_stream(str(pretty)) is None
    stream = logstream.open_stream(str(ndjson))
    assert stream is not None
    stream.handle.close()
    result, fleet = _ingest(tmp_path, ndjson, single, pretty)
    with fleet:
        assert result.new_scans == 4 and not result.skipped  # pretty and compact differ
        paths = {r[0] for r in fleet.con.execute("SELECT path FROM scans").fetchall()}
    assert paths == {f"{ndjson}#line 1", f"{ndjson}#line 2", str(single), str(pretty)}


def test_odd_names_are_escaped_like_every_path(tmp_path: Path) -> None:
    import os

    name = os.fsdecode(b"pods-\xff-\x1b]0;x\x07.log")
    log = tmp_path / name
    lines = [f"[pod/hw-\x1b[2J/hwadvisor] {line}" for line in _emit(_hosts(1)[0])]
    log.write_text("\n".join(lines) + "\n", errors="surrogateescape")
    result, fleet = _ingest(tmp_path, tmp_path)
    with fleet:
        assert result.new_scans == 1
        paths = [r[0] for r in fleet.con.execute("SELECT path FROM files").fetchall()]
    assert all("\x1b" not in p and "\udcff" not in p for p in paths)
    assert any(
        p.endswith("pods-\\xff-\\x1b]0;x\\x07.log#pod/hw-\\x1b[2J/hwadvisor line 1") for p in paths
    )


def test_a_read_error_midway_keeps_what_was_read_and_retries(
    tmp_path: Path, monkeypatch: Any
) -> None:
    docs = _hosts(4)
    log = tmp_path / "flaky.log"
    log.write_text("\n".join(x for d in docs for x in _emit(d)) + "\n")
    real = logstream._lines

    def failing(handle: Any) -> Any:
        for n, item in enumerate(real(handle)):
            if n == 4:
                raise OSError(5, "Input/output error")
            yield item

    monkeypatch.setattr(logstream, "_lines", failing)
    db = tmp_path / "f.duckdb"
    with open_fleet(db, create=True) as fleet:
        first = ingest(fleet, [log], workers=1)
        assert 1 <= first.new_scans < 4
        assert any(p == str(log) and "Input/output error" in why for p, why in first.skipped)
        monkeypatch.setattr(logstream, "_lines", real)
        second = ingest(fleet, [log], workers=1)  # not taken as unchanged
        assert second.unchanged == 0 and first.new_scans + second.new_scans == 4


def test_a_reader_is_bounded_by_what_it_holds() -> None:
    reader = StreamReader("s")
    huge = b"hwadvisor-profile v1 0123456789abcdef 1/999999999 00000000 AAAA"
    parts = list(reader.parts([(1, huge, len(huge))]))
    assert [p.reason for p in parts] == ["an hwadvisor-profile line of 999,999,999 parts: damaged"]
    # A lone partial line never finished is read as far as it goes.
    lines = _emit(_hosts(1)[0], line_bytes=100_000)
    cri = [(1, f"2026-11-27T08:00:00Z stdout P {lines[0][:5000]}".encode(), 5031)]
    parts = list(StreamReader("s").parts(cri))
    assert len(parts) == 1 and "fails the checksum" in (parts[0].reason or "")


def test_the_lines_are_what_docs_fleet_md_says(tmp_path: Path, capsys: Any) -> None:
    """Read back by the documented format alone, not by the module's reader."""
    import base64
    import hashlib

    assert main(["fleet", "emit", str(FIXTURES / "eight-gpu.json"), "--line-bytes", "3000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    fields = [line.split(" ") for line in lines]
    assert {f[0] for f in fields} == {"hwadvisor-profile"} and {f[1] for f in fields} == {"v1"}
    pid = fields[0][2]
    for f in fields:
        assert f[3].endswith(f"/{len(lines)}")
        assert int(f[4], 16) == zlib.crc32(f"{f[2]} {f[3]} {f[5]}".encode())
    ordered = sorted(fields, key=lambda f: int(f[3].split("/")[0]))
    raw = zlib.decompress(base64.b64decode("".join(f[5] for f in ordered)))
    assert hashlib.sha256(raw).hexdigest()[:16] == pid
    assert json.loads(raw)["gpus"][0]["name"]["value"].startswith("NVIDIA A100")
    docs = (Path(__file__).parents[1] / "docs" / "fleet.md").read_text(encoding="utf-8")
    section = docs.split("## Profiles from logs", 1)[1]
    assert "CRC-32 of `<id> <i>/<n> <payload>`" in section
