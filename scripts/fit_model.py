"""Fit the time-to-train model's rules to the calibration table and write catalog/model.toml.

    python scripts/fit_model.py [--rounds 8] [--check]

Fits hwadvisor.catalog.model.ModelParams to every row of src/hwadvisor/catalog/calibration.toml
(hwadvisor.fitting.fit), then refits without each origin in turn to get the out-of-sample errors
(hwadvisor.fitting.leave_one_origin_out), from which the range shown around an estimate is
taken (hwadvisor.fitting.bands). Writes the rules, the ranges and a line saying how they were
fitted. ``--check`` writes nothing and exits 1 when the file differs from a fresh fit.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
from pathlib import Path

from hwadvisor.advise import load_rules
from hwadvisor.calibration import load_calibration, summarize
from hwadvisor.fitting import as_dict, bands, fit, leave_one_origin_out, origins

OUT = Path(__file__).resolve().parent.parent / "src" / "hwadvisor" / "catalog" / "model.toml"


def _value(x: float) -> str:
    if x == 0:
        return "0.0"
    if abs(x) < 1e-3:
        return f"{x:.3e}"
    return f"{x:.4g}" if "." in f"{x:.4g}" or "e" in f"{x:.4g}" else f"{x:.4g}.0"


def render(rounds: int) -> str:
    rows = load_calibration()
    rules = load_rules()
    fitted = fit(rows, rules, rounds=rounds)
    held = leave_one_origin_out(rows, rules, rounds=max(3, rounds // 2))
    out_of_sample = [c for h in held for c in h.comparisons]
    s = summarize(out_of_sample)
    ranges = bands(out_of_sample)
    when = datetime.date.today().isoformat()
    line = (
        f"{when}: {len(rows)} rows from {len(origins(rows))} origins; leaving each origin out, "
        f"{s.within_1_5} of {s.rows} rows within 1.5x, {s.within_2} within 2x "
        f"(geometric mean {s.geomean:.2f})"
    )
    lines = [
        "# The time-to-train model's fitted rules: written by scripts/fit_model.py from the",
        "# calibration table (calibration.toml); read by hwadvisor.catalog.model.",
        "# Refit, never edit: python scripts/fit_model.py. What each rule is: catalog/model.py.",
        f'fitted = "{line}"',
        "",
        "[params]",
    ]
    lines += [f"{name} = {_value(value)}" for name, value in as_dict(fitted.params).items()]
    lines += [
        "",
        "# The range shown around an estimate, by kind of work and device class: the 10th to 90th",
        "# percentile of the ratios (time x ratio = what was measured) with each origin left out.",
    ]
    for group, (low, high, count) in ranges.items():
        lines += [
            "",
            "[[band]]",
            f'group = "{group}"',
            f"low = {low}",
            f"high = {high}",
            f"rows = {count}",
        ]
    if not all(math.isfinite(v) for v in as_dict(fitted.params).values()):
        raise SystemExit("the fit did not converge to finite values")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = render(args.rounds)
    if args.check:
        same = OUT.read_text(encoding="utf-8").split("\n", 4)[4] == text.split("\n", 4)[4]
        print("model.toml is up to date" if same else "model.toml differs from a fresh fit")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
