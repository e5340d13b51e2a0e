"""Fit the serving model's efficiencies to its calibration and write catalog/serve_model.toml.

    python scripts/fit_serve.py [--check]

General rules only: one efficiency per engine family, per family x device kind, per family x
quant family and per family x quant family x device kind and phase (decode, prefill), each
shrunk toward the level above and the top toward a prior
(hwadvisor.advise.serve.calib.fit_rules), with a fixed time per decode step per engine family
and per family x device kind with enough runs, and a MoE factor per family. The range around
an estimate is the 10th-90th percentile of the leave-one-source-out ratios. ``--check``
writes nothing and exits 1 when the file differs from a fresh fit.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from hwadvisor.advise.serve.calib import (
    HOST_FAMILIES,
    fit_rules,
    leave_one_source_out,
    load_calibration,
    reference_run,
    serving_rows,
    speed_rows,
    spread_from,
)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "hwadvisor" / "catalog" / "serve_model.toml"


def render() -> str:
    data = load_calibration()
    rows = speed_rows(data)
    serving = serving_rows(data)
    # The range around an estimate comes from the engines people serve with; the eager rows
    # (this project's reference runs) fit the host's time and are scored on their own
    # (benchmarks/inference_accuracy.py).
    served = [row for row in rows if row.family not in HOST_FAMILIES and not reference_run(row)]
    loso = leave_one_source_out(served, ("decode", "prefill"), serving)
    spread = spread_from(loso["decode"], loso["prefill"])
    rules = fit_rules(rows, spread, serving)
    groups = len({row.group for row in rows})
    lines = [
        "# Efficiencies of the serving model (advise/serve/speed.py): measured / ideal, where the",
        "# ideal is bandwidth / bytes per token (decode) and FLOPs / FLOPs per token (prefill).",
        f"# Written by scripts/fit_serve.py from {len(rows)} rows of serve_calibration.toml",
        f"# ({groups} sources) and its {len(serving)} batched serving runs. Keys, looked up in",
        "# this order: family/quant family/kind,",
        "# family/*/kind, family/quant family, family; '*' is the prior.",
        "# Do not edit by hand: change the calibration and rerun the script.",
        "",
    ]
    for name, table in (
        ("decode", rules.decode),
        ("prefill", rules.prefill),
        ("overhead_s", rules.overhead_s),
        ("moe", rules.moe),
        ("moe_prefill", rules.moe_prefill),
    ):
        lines.append(f"[{name}]")
        for key, value in table.items():
            lines.append(f'"{key}" = {value}')
        lines.append("")
    lines.append("[host_s]")
    lines.append("# eager engines: the host's time per forward pass, [fixed, per layer] seconds")
    for key, (fixed, per_layer) in rules.host_s.items():
        lines.append(f'"{key}" = [{fixed}, {per_layer}]')
    lines.append("")
    lines.append("[eager_linear_s]")
    lines.append(
        "# eager engines: the time a dequantized Linear adds to a forward pass, per format"
    )
    for key, value in rules.eager_linear_s.items():
        lines.append(f'"{key}" = {value}')
    lines.append("")
    lines.append("[per_sequence_s]")
    lines.append("# a batched step's time per sequence beyond the first, per family")
    for key, value in rules.per_sequence_s.items():
        lines.append(f'"{key}" = {value}')
    lines.append("")
    lines.append("[allreduce_s]")
    lines.append("# a tensor-parallel all-reduce's latency a hop (count - 1 hops, two a layer)")
    for key, value in rules.allreduce_s.items():
        lines.append(f'"{key}" = {value}')
    lines.append("")
    lines.append("[prefill_flops_max]")
    lines.append(
        "# per family: the most FLOP/s its prefill was measured doing (tok/s x FLOPs/token)"
    )
    for key, value in rules.prefill_flops_max.items():
        lines.append(f'"{key}" = {value:.4g}')
    lines.append("")
    lines.append("[range]")
    for key, value in spread.items():
        lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = render()
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("serve_model.toml is up to date" if same else "serve_model.toml differs from a fit")
        return 0 if same else 1
    fd, tmp = tempfile.mkstemp(dir=OUT.parent, prefix=".serve_model.")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, OUT)
    print(f"wrote {OUT.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
