"""Accuracy of the serving model's speed estimates against its calibration.

    python benchmarks/inference_accuracy.py

For decode and prefill: the share of rows within 1.25x and 1.5x and the worst factor, in sample
(rules fitted on every row) and leaving one source out (each contributor's rows predicted by
rules fitted without them), then the memory cases: how often the plan agrees with the run.
"""

from __future__ import annotations

from hwadvisor.advise.serve.calib import (
    accuracy,
    in_sample,
    leave_one_source_out,
    load_calibration,
    memory_cases,
    speed_rows,
)
from hwadvisor.advise.serve.memory import GiB


def main() -> None:
    data = load_calibration()
    rows = speed_rows(data)
    print(f"{len(rows)} speed rows from {len({r.group for r in rows})} sources")
    for phase in ("decode", "prefill"):
        for label, ratios in (
            ("in sample", in_sample(rows, phase)),
            ("leave one source out", leave_one_source_out(rows, phase)),
        ):
            acc = accuracy(ratios)
            if acc.n == 0:
                print(f"{phase:8} {label:22} no rows")
                continue
            print(
                f"{phase:8} {label:22} n={acc.n:3}  within 1.25x {acc.within_125:5.0%}  "
                f"within 1.5x {acc.within_150:5.0%}  worst {acc.worst:.2f}x"
            )
    cases = memory_cases(data)
    misses = [c for c in cases if c.plan().fits != (c.outcome == "fit")]
    wrong_fit = sum(c.outcome == "oom" for c in misses)
    print(
        f"memory   {len(cases) - len(misses)}/{len(cases)} fit/out-of-memory cases agree; "
        f"'fits' where it ran out: {wrong_fit}"
    )
    for c in misses:
        print(
            f"         disagrees: {c.geom.name} {c.quant} {c.engine} context {c.context} on "
            f"{c.device.count} x {c.device.total_bytes / GiB:.1f} GiB, documented {c.outcome} "
            f"({c.source})"
        )


if __name__ == "__main__":
    main()
