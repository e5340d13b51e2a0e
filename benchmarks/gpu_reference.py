"""GPU accuracy: the default scan's bf16 matmul and pinned host-to-device figures against long
reference runs on the same GPU.

Targets: bf16 matmul within 5 % of the best a long size sweep reaches (itself ~80 % of the dense
tensor peak on an H100/H200); pinned H2D within 10 % of a long 64 MiB copy test. Needs a CUDA
GPU; elsewhere it says so and exits 0.

    python benchmarks/gpu_reference.py [--device cuda:0]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hwadvisor.isolation import run_isolated

TARGET = "hwadvisor.probes.bench.plan:run_plan"
SWEEP = (2048, 4096, 6144, 8192, 12288, 16384)


def _case(device: str, kind: str, case: str, seconds: float, **extra: Any) -> dict[str, Any]:
    precision = extra.pop("precision", None)
    variant = extra.pop("variant", None)
    tag = "-".join(str(v) for v in extra.values())
    return {
        "id": f"{device}.{case}.{precision}.{variant}.{tag}",
        "title": case,
        "kind": kind,
        "case": case,
        "device": device,
        "precision": precision,
        "variant": variant,
        "seconds": seconds,
        "params": extra,
    }


def _run(cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    plan = {"threads": 1, "seed": 0, "cases": cases}
    result = run_isolated(
        TARGET, {"plan": plan}, timeout_s=600 + 4 * sum(c["seconds"] for c in cases)
    )
    if result.status != "ok":
        sys.exit(f"benchmark child {result.status}: {result.error}\n{result.stderr_tail}")
    return {
        i["id"]: i["data"]
        for i in result.items
        if isinstance(i, dict) and i.get("event") == "result" and i.get("kind") == "measurement"
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to measure")
        return
    if not torch.cuda.is_available():
        print("no CUDA GPU here: nothing to measure")
        return
    dev = args.device
    default = _run(
        [
            _case(dev, "gpu_matmul", "matmul", 1.5, precision="bf16"),
            _case(dev, "gpu_transfer", "h2d", 0.5, variant="pinned", direction="h2d"),
        ]
    )
    sweep = [_case(dev, "gpu_matmul", "matmul", 3.0, precision="bf16", n=n) for n in SWEEP]
    long_h2d = _case(
        dev, "gpu_transfer", "h2d", 10.0, variant="pinned", direction="h2d", stop_spread=0.0
    )
    reference = _run([*sweep, long_h2d])

    got_mm = next(m for m in default.values() if m["case"] == "matmul")
    got_h2d = next(m for m in default.values() if m["case"] == "h2d")
    best_n, best_mm = max(
        (
            (m["params"].get("n"), m["best"] or 0.0)
            for m in reference.values()
            if m["case"] == "matmul"
        ),
        key=lambda t: t[1],
    )
    ref_h2d = next(m for m in reference.values() if m["case"] == "h2d")["best"]
    for label, got, ref, target in (
        (f"bf16 matmul vs best of sweep (n={best_n})", got_mm["best"], best_mm, 0.05),
        ("pinned H2D vs 10 s copy test", got_h2d["best"], ref_h2d, 0.10),
    ):
        dev_pct = (got - ref) / ref
        verdict = "ok" if abs(dev_pct) <= target else "OVER TARGET"
        print(
            f"{label:<40} default {got:,.1f}  reference {ref:,.1f}  {dev_pct:+.1%} "
            f"(target ±{target:.0%}: {verdict})"
        )
    print(f"{torch.cuda.get_device_name(dev)}: bf16 sweep best {best_mm / 1000:,.1f} TFLOP/s")


if __name__ == "__main__":
    main()
