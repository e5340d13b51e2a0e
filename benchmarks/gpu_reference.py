"""GPU accuracy: the scan's GPU figures against long reference runs on the same GPU.

For each figure the default scan reports — matmul in fp32 (TF32 off), TF32, fp16 and bf16, conv
in fp32 and mixed precision, the device-to-device copy, and pinned and pageable copies in both
directions between host and GPU — the reference runs the same case longer, with a longer
warm-up and over a sweep of sizes, and keeps its best. Prints each figure, its ratio to the
reference and to the catalog peak (the scan's), and whether it is within target:

  matmul        within 5 % of the best of the size sweep (itself ~80 % of the dense tensor peak
                on an H100/H200 in bf16)
  conv, copies  within 10 %; pageable transfers within 20 % (they vary with the host's memory)

    python benchmarks/gpu_reference.py [--scan scan.json] [--json out.json] [--device cuda:0]

Without --scan the default cases run first here (a scan's shares). Needs a CUDA GPU; elsewhere
it says so and exits 0. About 70 s of measuring on an H100.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MATMUL_SWEEP = (4096, 8192, 12288, 16384)
TARGETS = {"matmul": 0.05, "conv2d": 0.10, "device_copy": 0.10, "h2d": 0.10, "d2h": 0.10}
#: Pageable copies go through the host's own memcpy into a staging buffer: they follow the host
#: (its memory, its other load) more than the GPU. Two H200 machines read 0.91x and 1.39x of a
#: long run (2026-11-27), so the target is wide; the advice never rests on them.
PAGEABLE_TARGET = 0.40
REFERENCE_WARMUP_S = 1.0

Key = tuple[str, "str | None", "str | None"]


def _case(
    device: str,
    kind: str,
    case: str,
    seconds: float,
    precision: str | None = None,
    variant: str | None = None,
    **params: Any,
) -> dict[str, Any]:
    tag = "-".join(f"{k}{v}" for k, v in params.items() if k not in ("warmup_s", "one_size"))
    return {
        "id": f"{device}.{case}.{precision or '-'}.{variant or '-'}.{tag}",
        "title": case,
        "kind": kind,
        "case": case,
        "device": device,
        "precision": precision,
        "variant": variant,
        "seconds": seconds,
        "params": params,
    }


def default_cases(device: str) -> list[dict[str, Any]]:
    """The scan's own cases for the compared figures, at their default shares."""
    from hwadvisor.probes.bench.gpu import PLAN

    return [
        _case(device, d.kind, d.case, d.share, d.precision, d.variant, **d.params)
        for d in PLAN
        if d.case in TARGETS and d.precision != "fp8"
    ]


def reference_cases(device: str) -> list[dict[str, Any]]:
    """Longer runs of the same cases, over a sweep of sizes: about 70 s on an H100."""
    w = REFERENCE_WARMUP_S
    # each size of the sweep on its own: the scan's second size (half or twice n) is not tried
    cases = [
        _case(device, "gpu_matmul", "matmul", 2.0, p, n=n, warmup_s=w, one_size=1)
        for p in ("bf16", "fp16", "tf32", "fp32")
        for n in MATMUL_SWEEP
    ]
    cases += [
        _case(device, "gpu_conv2d", "conv2d", 2.5, p, batch=b, warmup_s=w)
        for p in ("fp32", "amp")
        for b in (256, 512)
    ]
    cases += [
        _case(device, "gpu_device_copy", "device_copy", 2.5, bytes=s, warmup_s=w)
        for s in (1 << 30, 4 << 30)
    ]
    cases += [
        _case(device, "gpu_transfer", d, 4.0, None, v, direction=d, warmup_s=w)
        for d in ("h2d", "d2h")
        for v in ("pinned", "pageable")
    ]
    return cases


def _key(m: dict[str, Any]) -> Key:
    return (m["case"], m.get("precision"), m.get("variant"))


def _label(key: Key) -> str:
    return " ".join(p for p in key if p)


def _scaled(value: float, unit: str) -> tuple[float, str]:
    return (value / 1000, "TFLOP/s") if unit == "GFLOP/s" else (value, unit)


def compare(default: list[dict[str, Any]], reference: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per figure measured both ways: the scan's figure against the reference's best."""
    best_ref: dict[Key, dict[str, Any]] = {}
    for m in reference:
        if m.get("status") == "ok" and m.get("best"):
            k = _key(m)
            if k not in best_ref or m["best"] > best_ref[k]["best"]:
                best_ref[k] = m
    rows = []
    for m in default:
        k = _key(m)
        ref = best_ref.get(k)
        if k[0] not in TARGETS or k[1] == "fp8":
            continue
        target = PAGEABLE_TARGET if k[2] == "pageable" else TARGETS[k[0]]
        got = m.get("best") if m.get("status") == "ok" else None
        unit = m.get("unit") or (ref or {}).get("unit") or ""
        row: dict[str, Any] = {
            "figure": _label(k),
            "unit": unit,
            "default": got,
            "reference": ref["best"] if ref else None,
            "reference_params": ref.get("params") if ref else None,
            "target": target,
            "peak": m.get("peak"),
            "of_peak": None,
            "ratio": None,
        }
        if got is None or ref is None:
            row["status"] = "FAIL"
            row["line"] = (
                f"{_label(k)}: "
                + ("no scan figure" if got is None else "no reference figure")
                + f" ({m.get('message') or (ref or {}).get('message') or 'not measured'})"
            )
            rows.append(row)
            continue
        ratio = got / ref["best"]
        row["ratio"] = round(ratio, 3)
        row["status"] = "pass" if abs(ratio - 1) <= target else "FAIL"
        value, shown = _scaled(got, unit)
        ref_value, _ = _scaled(ref["best"], unit)
        line = f"{_label(k):<18} {value:>9,.1f} {shown:<8} {ratio:.2f}× ref {ref_value:,.1f}"
        size = {a: b for a, b in (ref.get("params") or {}).items() if a in ("n", "batch", "bytes")}
        if size:
            line += " (" + ", ".join(f"{a}={b}" for a, b in size.items()) + ")"
        if m.get("peak"):
            row["of_peak"] = round(got / m["peak"], 3)
            peak_value, _ = _scaled(m["peak"], unit)
            line += f", {got / m['peak']:.0%} of {peak_value:,.1f}"
        row["line"] = line + f" [±{target:.0%}]"
        rows.append(row)
    return rows


def _run(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from hwadvisor.isolation import run_isolated

    plan = {"threads": 1, "seed": 0, "cases": cases}
    limit = 120 + 4 * sum(c["seconds"] for c in cases)
    result = run_isolated("hwadvisor.probes.bench.plan:run_plan", {"plan": plan}, timeout_s=limit)
    found = [
        i["data"]
        for i in result.items
        if isinstance(i, dict) and i.get("event") == "result" and i.get("kind") == "measurement"
    ]
    if result.status != "ok":
        print(f"benchmark child {result.status}: {result.error}\n{result.stderr_tail}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--scan", type=Path, help="a profile whose GPU figures are compared")
    parser.add_argument("--json", type=Path, help="write the rows and raw figures here")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to measure")
        return 0
    if not torch.cuda.is_available():
        print("no CUDA GPU here: nothing to measure")
        return 0
    dev = args.device
    if args.scan is not None:
        profile = json.loads(args.scan.read_text(encoding="utf-8"))
        default = [
            m
            for m in (profile.get("benchmarks") or {}).get("measurements", [])
            if m.get("device") == dev
        ]
        source = f"the scan {args.scan.name}"
    else:
        default = _run(default_cases(dev))
        source = "default cases run here"
    reference = _run(reference_cases(dev))
    rows = compare(default, reference)
    name = torch.cuda.get_device_name(dev)
    print(f"{name}: figures of {source} against the long reference")
    for row in rows:
        print(f"{row['status']:<5} {row['line']}")
    if args.json is not None:
        record = {"device": name, "source": source, "rows": rows, "reference": reference}
        args.json.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
