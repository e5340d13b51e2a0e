"""How close hwadvisor's time-to-train model comes to published, measured training throughputs.

Reads the calibration table (``src/hwadvisor/catalog/calibration.toml``, or ``--table FILE``),
estimates every row through the advice's own path (``hwadvisor.calibration``) and prints three
evaluations, each with its targets:

1. in-sample: every row with the packaged fitted rules (catalog/model.toml) -- per-row lines, the
   summary; >= 90 % within 1.5x, all within 2x, geometric-mean ratio 0.85-1.15;
2. leave-one-source-out: for each origin (publisher) in turn, the rules are refitted on every
   other origin and that origin's rows scored with them -- the figure that predicts how the model
   does on data it has not seen; >= 85 % within 1.5x, all within 2.5x;
3. as typed: transformer rows entered the way users type them (parameters and tokens, no shape;
   the advice assumes a standard shape), in-sample and leaving each origin out; >= 80 % within
   1.5x (the target is on the out-of-sample figure).

The ratio is predicted speed over measured speed (time rows: measured over predicted time), so
above 1 means hwadvisor promises more than was measured. ``--quick`` skips the refits (1, and
3 in-sample only). Exits 0 whatever the accuracy, unless ``--strict`` is given (then 1 on any
MISS); 2 on a malformed table.

    python benchmarks/advice_accuracy.py [--table FILE] [--worst 8] [--quick] [--strict]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hwadvisor.calibration import (
    CalibrationError,
    Comparison,
    compare_all,
    load_calibration,
    report_lines,
    summarize,
)
from hwadvisor.fitting import leave_one_origin_out

LOSO_WITHIN_1_5 = 0.85
LOSO_MAX_FACTOR = 2.5
TYPED_WITHIN_1_5 = 0.80


def _line(title: str, cs: Sequence[Comparison]) -> str:
    s = summarize(cs)
    worst = max((c.factor for c in cs), default=1.0)
    return (
        f"{title}: {s.within_1_5} of {s.rows} within 1.5x ({s.share_within_1_5:.0%}), "
        f"{s.within_2} within 2x, worst {worst:.2f}x, geometric-mean ratio {s.geomean:.2f}"
    )


def _mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--table", type=Path, help="a calibration table other than the packaged one"
    )
    parser.add_argument("--worst", type=int, default=8, help="how many worst rows to list")
    parser.add_argument("--quick", action="store_true", help="skip the leave-one-out refits")
    parser.add_argument("--rounds", type=int, default=3, help="search rounds of each refit")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    try:
        rows = load_calibration(args.table)
        comparisons = compare_all(rows)
        typed = [c for c in compare_all(rows, as_typed=True) if c.kind == "transformer"]
    except CalibrationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("== 1. in-sample (packaged fitted rules) ==")
    for line in report_lines(comparisons, worst=args.worst):
        print(line)
    missed = any(not ok for _label, ok in summarize(comparisons).targets)

    print()
    print("== 3. as typed: transformers with parameters and tokens only (shape assumed) ==")
    print(_line("in-sample", typed))
    if args.quick:
        return 1 if args.strict and missed else 0

    print()
    print("== 2. leave-one-source-out (refit without each origin, score it) ==")
    started = time.perf_counter()
    held = leave_one_origin_out(rows, rounds=args.rounds)
    for h in held:
        print(f"  {_line(h.origin, h.comparisons)}")
    out = [c for h in held for c in h.comparisons]
    loso = summarize(out)
    worst = max(c.factor for c in out)
    print(_line("all origins", out))
    for c in sorted(out, key=lambda c: -c.factor)[: args.worst]:
        print(f"  {c.row.id:<44} {c.row.origin:<20} ratio {c.ratio:.2f}")
    loso_ok = (
        loso.share_within_1_5 >= LOSO_WITHIN_1_5,
        worst <= LOSO_MAX_FACTOR,
    )
    print(f"  {_mark(loso_ok[0])}  >= {LOSO_WITHIN_1_5:.0%} of rows within 1.5x")
    print(f"  {_mark(loso_ok[1])}  all rows within {LOSO_MAX_FACTOR:g}x")

    print()
    print("== 3. as typed, leaving each source out ==")
    held_typed = leave_one_origin_out(rows, rounds=args.rounds, as_typed=True)
    typed_out = [c for h in held_typed for c in h.comparisons if c.kind == "transformer"]
    print(_line("leave-one-source-out, as typed", typed_out))
    typed_ok = summarize(typed_out).share_within_1_5 >= TYPED_WITHIN_1_5
    print(f"  {_mark(typed_ok)}  >= {TYPED_WITHIN_1_5:.0%} of shapeless rows within 1.5x")
    print(f"(refits took {time.perf_counter() - started:.0f} s)")
    missed = missed or not all(loso_ok) or not typed_ok
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
