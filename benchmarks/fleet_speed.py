"""How fast the fleet roll-up is, and whether its outlier rule finds a bad GPU and nothing else.

The issue's targets, on the 2-core machine:
- 10,000 profiles (a third CPU-only, a third one GPU, a third 8-GPU nodes; generated from the
  recorded fixtures with varied hosts, GPUs, drivers and figures): ingest <= 10 s, ``fleet
  summary`` <= 1 s, peak memory <= 1 GB; re-ingest of the unchanged folder <= 2 s.
- 100,000 profiles (``--hosts 100000``, about 5 GB of files): ingest <= 100 s, peak memory
  <= 1 GB; the other targets scale with the count (1 s per 1,000 profiles to ingest).
- A planted 20 %-slow GPU among 64 identical ones is flagged; no false outlier among 1,000
  identical 8-GPU hosts with a normal spread (2.5 % per figure).

    python benchmarks/fleet_speed.py [--hosts 10000] [--keep FOLDER]

With ``--keep``, a folder that already holds the generated profiles of that size is reused
(generating 100,000 takes minutes).
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.helpers import fleet_synth  # noqa: E402

from hwadvisor.fleet.queries import outliers, summary  # noqa: E402
from hwadvisor.fleet.store import ingest, open_fleet  # noqa: E402
from hwadvisor.model import fastjson  # noqa: E402


def _peak_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, workers) / 1024


def _outlier_checks(work: Path) -> tuple[bool, int]:
    rng = random.Random(3)
    base = fleet_synth.template("single-gpu")
    docs = [
        fleet_synth.make_host(base, i, rng, gpu_model=fleet_synth.GPU_MODELS[0], salt="p")
        for i in range(64)
    ]
    fleet_synth.slow_down(docs[17], "cuda:0", 0.8)
    fleet_synth.write(work / "planted", iter(docs))
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [work / "planted"])
        found = outliers(fleet)
    planted = [o.hostname for o in found] == ["node-00017"]
    eight = fleet_synth.template("eight-gpu")
    fleet_synth.write(
        work / "identical",
        (
            fleet_synth.make_host(eight, i, rng, gpu_model=fleet_synth.GPU_MODELS[2], salt="i")
            for i in range(1000)
        ),
    )
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [work / "identical"])
        false = len(outliers(fleet))
    return planted, false


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="write the generated fleet here and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="fleet-speed-"))
    try:
        folder = work / "profiles"
        t = time.perf_counter()
        have = sum(1 for _ in folder.iterdir()) if folder.is_dir() else 0
        if have == args.hosts:
            n = have
        else:
            n = fleet_synth.write(folder, fleet_synth.mixed_fleet(args.hosts))
        size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        print(f"JSON parser: {'orjson' if fastjson.available() else 'json (orjson not installed)'}")
        print(f"generated {n:,} profiles ({size:,.0f} MB) in {time.perf_counter() - t:.1f} s")
        db = work / "fleet.duckdb"
        db.unlink(missing_ok=True)
        with open_fleet(db, create=True) as fleet:
            t = time.perf_counter()
            result = ingest(fleet, [folder])
            ingest_s = time.perf_counter() - t
        with open_fleet(db, create=True) as fleet:
            t = time.perf_counter()
            again = ingest(fleet, [folder])
            reingest_s = time.perf_counter() - t
        with open_fleet(db, create=False) as fleet:
            t = time.perf_counter()
            roll = summary(fleet, datetime(2026, 11, 23))
            summary_s = time.perf_counter() - t
        peak = _peak_mb()
        planted, false = _outlier_checks(work)
        scale = max(1.0, args.hosts / 10_000)
        rows = [
            ("ingest", f"{ingest_s:.1f} s", f"<= {10 * scale:.0f} s", ingest_s <= 10 * scale),
            (
                "re-ingest (unchanged)",
                f"{reingest_s:.2f} s",
                f"<= {2 * scale:.0f} s",
                reingest_s <= 2 * scale,
            ),
            ("fleet summary", f"{summary_s:.2f} s", f"<= {scale:.0f} s", summary_s <= scale),
            ("peak memory", f"{peak:,.0f} MB", "<= 1024 MB", peak <= 1024),
            ("planted 20 % slow GPU of 64", "flagged" if planted else "missed", "flagged", planted),
            ("false outliers, 1,000 identical hosts", str(false), "0", false == 0),
        ]
        print(
            f"{result.new_scans:,} scans, {roll['hosts']:,} hosts, {roll['gpus']:,} GPUs; "
            f"re-ingest read {again.files - again.unchanged} files"
        )
        for what, got, target, ok in rows:
            print(f"{what:40} {got:>12}   target {target:>12}   {'ok' if ok else 'MISSED'}")
        return 0 if all(ok for *_, ok in rows) else 1
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
