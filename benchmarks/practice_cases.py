"""Jobs as practitioners know them, through the advice's own path: what hwadvisor answers.

Prints one line per case — the job as a user types it, the hardware, hwadvisor's answer, what
practice says — and the small CNN's GPU-over-CPU speed-up (target 10-40x; the source material
measured 13.8-28x). Exits 1 with --strict when a case disagrees.

    python benchmarks/practice_cases.py [--strict]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.helpers import practice  # noqa: E402

from hwadvisor.advise import advise, resolve_gpu  # noqa: E402
from hwadvisor.workloads import Workload, get_workload, with_epochs  # noqa: E402

_typed, _desktop = practice.typed, practice.desktop_6_core


def _fits(w: Workload, card: str, count: int = 1) -> bool | None:
    advice = advise(practice.cpu_only(), w, assume=[(resolve_gpu(card), count)])
    return advice.assumed[0].fits_memory


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args()
    qlora7 = _typed(6.74e9, 2e7, method="qlora", optimizer="paged-adamw-8bit")
    qlora70 = _typed(69e9, 2e7, method="qlora", optimizer="paged-adamw-8bit")
    full7 = _typed(6.74e9, 1e8)
    sd15 = get_workload("sd15-finetune")
    cases: list[tuple[str, object, object]] = [
        ("7B QLoRA (--method qlora) on a 16 GB T4: fits", _fits(qlora7, "T4"), True),
        ("70B QLoRA on one 48 GB RTX A6000: fits", _fits(qlora70, "RTX A6000"), True),
        ("7B full fine-tune on one 80 GB H100: does not fit", _fits(full7, "H100 SXM"), False),
        ("7B full fine-tune on 8x H100, sharded: fits", _fits(full7, "H100 SXM", 8), True),
        (
            "13B full fine-tune, 300M tokens, 24 h: class 3 (one 8-GPU machine)",
            advise(practice.cpu_only(), _typed(13e9, 3e8)).scenario.id,
            3,
        ),
        ("SD 1.5 fine-tune on a 24 GB RTX 4090: fits", _fits(sd15, "RTX 4090"), True),
    ]  # fmt: skip
    bad = 0
    for label, got, want in cases:
        ok = got == want
        bad += not ok
        print(f"{'ok  ' if ok else 'MISS'} {label}: hwadvisor says {got}")
    small = with_epochs(get_workload("small-cnn"), 2000)  # the steps, not the start-up
    advice = advise(_desktop(), small, assume=[(resolve_gpu("RTX 3070"), 1)])
    cpu = next(e for e in advice.estimates if e.origin == "this-machine" and not e.gpus)
    gpu = next(e for e in advice.estimates if e.origin == "assumed")
    assert cpu.seconds and gpu.seconds
    speedup = cpu.seconds / gpu.seconds
    ok = 10 <= speedup <= 40
    bad += not ok
    print(
        f"{'ok  ' if ok else 'MISS'} small CNN, RTX 3070 over a 6-core desktop CPU: "
        f"{speedup:.1f}x (target 10-40x; measured 13.8-28x)"
    )
    return 1 if args.strict and bad else 0


if __name__ == "__main__":
    sys.exit(main())
