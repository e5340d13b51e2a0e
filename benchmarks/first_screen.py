"""How long the answer is before the details: the issue's target is the verdict, the
recommended hardware class and the key figures within 15 lines at 80 columns.

For each report fixture, with its stored advice and with advice computed now for two
workloads, prints how many lines the opening block takes in an 80-column terminal (the lines
before the first detail table) and whether the verdict and the recommended class are in it.

    python benchmarks/first_screen.py
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from rich.console import Console  # noqa: E402

from hwadvisor.advise import advise  # noqa: E402
from hwadvisor.model.load import load_profile  # noqa: E402
from hwadvisor.render.console import render_summary  # noqa: E402
from hwadvisor.workloads import load_workloads  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "reports"
TARGET = 15
#: Where the details start: the first section after the opening block.
DETAILS = ("Machine", "Time to train")


def opening(text: str) -> list[str]:
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if n and line.strip() in DETAILS:
            return [x for x in lines[:n] if x.strip()]
    return lines


def main() -> int:
    workloads = {w.name: w for w in load_workloads()}
    worst = 0
    for name in ("cpu-only", "single-gpu", "eight-gpu"):
        for workload in ("stored", "llm-7b-lora", "resnet50-imagenet"):
            profile = load_profile(FIXTURES / f"{name}.json")
            presets = None
            if workload != "stored":
                profile.advice = advise(profile, workloads[workload])
            elif profile.advice is None:
                presets = [advise(profile, w) for w in workloads.values()]
            out = io.StringIO()
            render_summary(profile, Console(file=out, width=80, highlight=False), presets)
            head = opening(out.getvalue())
            said = "\n".join(head)
            verdict = "enough" in said and ("Recommended" in said or "Smallest class" in said)
            worst = max(worst, len(head))
            if workload != "stored":
                what = workload
            elif profile.advice is not None:
                what = f"{profile.advice.workload.name} (stored)"
            else:
                what = "no advice"
            label = f"{name} / {what}"
            print(f"{label:<45} {len(head):3d} lines  verdict+class: {'yes' if verdict else 'NO'}")
    verdict = "ok" if worst <= TARGET else "OVER"
    print(f"longest opening block: {worst} lines (target <= {TARGET}: {verdict})")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
