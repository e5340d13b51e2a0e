"""How long ``hwadvisor import`` takes on a 1 MB paste, per format, and how long detection takes.

Targets: a 1 MB paste imports in at most 0.5 s; detecting its format takes at most 50 ms. Each
recorded paste in ``tests/fixtures/import`` (and the nvidia-smi XML recordings) is grown to about
1 MB the way big pastes grow — its own content repeated (more GPUs, more processes, longer
lists) — and a 1 MB log with no format in it (every sniffer runs and says no) is timed too.
The median of ``--runs`` imports in this process (modules loaded, caches warm) is reported.

    python benchmarks/import_speed.py [--runs 5]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hwadvisor.errors import InputError  # noqa: E402
from hwadvisor.importers.base import Sample  # noqa: E402
from hwadvisor.importers.detect import detect_format, import_text  # noqa: E402
from hwadvisor.importers.paste import clean_paste  # noqa: E402
from hwadvisor.importers.registry import detect  # noqa: E402

IMPORT_TARGET_S = 0.5
DETECT_TARGET_S = 0.050
SIZE = 1_000_000


def _grown(text: str) -> str:
    """``text`` grown to about :data:`SIZE`: its second half (GPU sections, list lines, JSON
    members are mostly there) repeated after it."""
    if text.lstrip().startswith(("{", "[")):
        return text + " " * (SIZE - len(text))  # JSON: trailing space keeps it one document
    tail = text[len(text) // 2 :]
    copies = max(1, (SIZE - len(text)) // max(len(tail), 1))
    return text + tail * copies


def _median(run: int, action: object) -> float:
    times = []
    for _ in range(run):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    files = sorted((ROOT / "tests" / "fixtures" / "import").glob("*.*")) + sorted(
        (ROOT / "tests" / "fixtures" / "nvidia-smi").glob("*.xml")
    )
    cases = {p.name: _grown(p.read_text(encoding="utf-8")) for p in files if p.suffix != ".md"}
    line = "2026-11-23 10:02:03 INFO worker 7: step 1234 loss 0.123 lr 3e-4 | tokens/s 9876\n"
    cases["(a 1 MB log: no format)"] = line * (SIZE // len(line))
    worst_import = worst_detect = 0.0
    print(f"{'paste (grown to ~1 MB)':58} {'format':28} {'detect':>8} {'import':>8}")
    for name, text in cases.items():
        kind = detect_format(text) or "-"

        def imported(text: str = text, name: str = name) -> None:
            with contextlib.suppress(InputError):
                import_text(text, name)

        detect_s = _median(args.runs, lambda text=text: detect(Sample(clean_paste(text))))
        import_s = _median(args.runs, imported)
        worst_import, worst_detect = max(worst_import, import_s), max(worst_detect, detect_s)
        print(f"{name[:58]:58} {kind[:28]:28} {detect_s * 1000:6.1f}ms {import_s:7.3f}s")
    ok = worst_import <= IMPORT_TARGET_S and worst_detect <= DETECT_TARGET_S
    print(
        f"worst: detect {worst_detect * 1000:.1f} ms (target {DETECT_TARGET_S * 1000:.0f} ms), "
        f"import {worst_import:.3f} s (target {IMPORT_TARGET_S} s): {'PASS' if ok else 'MISS'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
