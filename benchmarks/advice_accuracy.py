"""How close hwadvisor's time-to-train model comes to published, measured training throughputs.

Reads the calibration table (``src/hwadvisor/catalog/calibration.toml``, or ``--table FILE``),
estimates every row through the advice's own path (``hwadvisor.calibration``) and prints one line
per row (hardware, workload, measured, predicted, ratio), the summary and the targets:
>= 90 % of rows within 1.5x, every row within 2x, geometric-mean ratio within 0.85-1.15.

The ratio is predicted speed over measured speed (time rows: measured over predicted time), so
above 1 means hwadvisor promises more than was measured. Exits 0 whatever the accuracy, unless
``--strict`` is given (then 1 on any MISS); 2 on a malformed table.

    python benchmarks/advice_accuracy.py [--table FILE] [--worst 8] [--strict]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hwadvisor.calibration import (
    CalibrationError,
    compare_all,
    load_calibration,
    report_lines,
    summarize,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--table", type=Path, help="a calibration table other than the packaged one"
    )
    parser.add_argument("--worst", type=int, default=8, help="how many worst rows to list")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    try:
        comparisons = compare_all(load_calibration(args.table))
    except CalibrationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in report_lines(comparisons, worst=args.worst):
        print(line)
    missed = any(not ok for _label, ok in summarize(comparisons).targets)
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
