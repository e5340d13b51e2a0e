"""How fast profiles go through a log stream: ``fleet emit`` lines, then ``fleet ingest`` of them.

10,000 generated profiles (as ``benchmarks/fleet_speed.py``: a third CPU-only, a third one GPU,
a third 8-GPU nodes), each emitted as ``hwadvisor fleet emit`` does (serials and addresses left
out, 8,000-byte lines), spread over 500 pods as ``kubectl logs --prefix --timestamps`` prints
them, with a log line of the collector's own after each profile, in one file. Measured: the lines
per profile, the emit cost, the ingest of the stream, a re-ingest of the unchanged stream, the
peak memory; and what recognising streams by their content costs an ingest of a folder of
ordinary profile files (the check alone, against the ingest of each file).

    python benchmarks/fleet_logstream_speed.py [--hosts 10000] [--pods 500]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.helpers import fleet_synth  # noqa: E402

from hwadvisor.fleet import logstream  # noqa: E402
from hwadvisor.fleet.store import ingest, open_fleet  # noqa: E402
from hwadvisor.redact import log_copy  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from fleet_speed import _peak_mb  # noqa: E402


def _stream(path: Path, hosts: int, pods: int) -> tuple[list[int], float]:
    """Write the stream; the lines of each profile, and the seconds spent emitting."""
    rng = random.Random(11)
    queues: list[list[str]] = [[] for _ in range(pods)]
    counts: list[int] = []
    emit_s = 0.0
    for i, doc in enumerate(fleet_synth.mixed_fleet(hosts)):
        t = time.perf_counter()
        lines = logstream.encode(log_copy(doc))
        emit_s += time.perf_counter() - t
        counts.append(len(lines))
        queues[i % pods].extend(lines)
        queues[i % pods].append(f"hwadvisor: scan {i} done, next in 21600 s\n")
    with path.open("w", encoding="utf-8") as out:
        n = 0
        live = [q for q in queues if q]
        while live:
            k = rng.randrange(len(live))
            n += 1
            out.write(
                f"[pod/hwadvisor-{k:05x}/hwadvisor] 2026-11-27T08:00:00.{n:09d}Z " + live[k].pop(0)
            )
            if not live[k]:
                live.pop(k)
    return counts, emit_s


def _folder_cost(work: Path, hosts: int) -> tuple[float, float]:
    """Seconds per file that recognising streams adds to an ingest of ordinary profile files,
    and seconds per file of that ingest (one process; the best of three, for a busy machine)."""
    folder = work / "profiles"
    fleet_synth.write(folder, fleet_synth.mixed_fleet(hosts))
    files = [str(p) for p in sorted(folder.iterdir())]
    checks, ingests = [], []
    for _ in range(3):
        t = time.perf_counter()
        assert not any(logstream.open_stream(f) for f in files)
        checks.append(time.perf_counter() - t)
        with open_fleet(None, create=True) as fleet:
            t = time.perf_counter()
            ingest(fleet, [folder], workers=1)
            ingests.append(time.perf_counter() - t)
    return min(checks) / len(files), min(ingests) / len(files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--no-folder", action="store_true", help="skip the folder comparison")
    parser.add_argument("--folder-hosts", type=int, default=2000, help="profiles in the folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fleet-logstream-"))
    try:
        log = work / "kubectl-logs.txt"
        t = time.perf_counter()
        counts, emit_s = _stream(log, args.hosts, args.pods)
        print(
            f"generated {args.hosts:,} profiles as a {log.stat().st_size / 1e6:,.0f} MB log "
            f"stream in {time.perf_counter() - t:.1f} s"
        )
        db = work / "fleet.duckdb"
        with open_fleet(db, create=True) as fleet:
            t = time.perf_counter()
            result = ingest(fleet, [log])
            ingest_s = time.perf_counter() - t
            t = time.perf_counter()
            again = ingest(fleet, [log])
            reingest_s = time.perf_counter() - t
            hosts = fleet.scalar("SELECT count(*) FROM hosts")
        peak = _peak_mb()
        print(
            f"{result.new_scans:,} scans, {hosts:,} hosts, {len(result.skipped)} skipped; "
            f"re-ingest: {again.unchanged} unchanged"
        )
        rows = [
            ("lines per profile (max)", f"{max(counts)}", "<= 2", max(counts) <= 2),
            ("lines per profile (mean)", f"{statistics.mean(counts):.2f}", "", True),
            (
                "emit, per profile",
                f"{emit_s / args.hosts * 1000:.1f} ms",
                "",
                True,
            ),
            ("ingest of the stream", f"{ingest_s:.1f} s", "", True),
            ("re-ingest (unchanged)", f"{reingest_s:.2f} s", "<= 2 s", reingest_s <= 2),
            ("peak memory", f"{peak:,.0f} MB", "<= 1024 MB", peak <= 1024),
            ("every profile ingested", str(result.new_scans), str(args.hosts), True),
        ]
        rows[-1] = (*rows[-1][:3], result.new_scans == args.hosts and not result.skipped)
        if not args.no_folder:
            check, per_file = _folder_cost(work, args.folder_hosts)
            share = check / per_file
            rows.append(("ingest of a profile file", f"{per_file * 1000:.2f} ms", "", True))
            rows.append(("stream check of a profile file", f"{check * 1000:.3f} ms", "", True))
            rows.append(("cost of recognising streams", f"{share:.1%}", "<= 5 %", share <= 0.05))
        for what, got, target, ok in rows:
            print(f"{what:36} {got:>10}   target {target or '—':>12}   {'ok' if ok else 'MISSED'}")
        return 0 if all(ok for *_, ok in rows) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
