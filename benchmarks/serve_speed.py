"""How fast inference sizing answers (issue targets: one `advise --serve` answer <= 0.3 s; the
whole model catalog x 4 quants x 3 contexts on one profile <= 2 s).

    python benchmarks/serve_speed.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from hwadvisor.advise.serving import ServeRequest, serve_advice  # noqa: E402
from hwadvisor.catalog.llms import llm_names  # noqa: E402
from hwadvisor.model.load import load_profile  # noqa: E402

PROFILE = ROOT / "tests" / "fixtures" / "reports" / "single-gpu.json"
COMMAND = [
    sys.executable, "-m", "hwadvisor", "advise", "-p", str(PROFILE), "--serve",
    "meta-llama/Meta-Llama-3-8B", "--quant", "Q4_K_M", "--context", "8192", "--assume-gpu",
    "RTX 3070", "--json", "-",
]  # fmt: skip


def main() -> int:
    runs = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run(COMMAND, check=True, capture_output=True, cwd=ROOT)
        runs.append(time.perf_counter() - t)
    command_s = statistics.median(runs)
    bare = []
    for _ in range(3):  # the interpreter alone, on the same machine at the same moment
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, capture_output=True)
        bare.append(time.perf_counter() - t)
    python_s = statistics.median(bare)
    profile = load_profile(PROFILE)
    request = ServeRequest(model="meta-llama/Meta-Llama-3-8B", quant="Q4_K_M", context=8192)
    serve_advice(profile, request)  # catalogs loaded once, as in one command
    t = time.perf_counter()
    serve_advice(profile, request)
    answer_s = time.perf_counter() - t
    names = llm_names()
    t = time.perf_counter()
    n = 0
    for name in names:
        for quant in ("Q4_K_M", "Q8_0", "F16", "IQ3_XXS"):
            for context in (4096, 32768, 131072):
                serve_advice(profile, ServeRequest(model=name, quant=quant, context=context))
                n += 1
    sweep_s = time.perf_counter() - t
    rows = [
        ("advise --serve, the whole command", f"{command_s:.2f} s", "<= 0.3 s", command_s <= 0.3),
        ("  of which Python's own start-up", f"{python_s:.2f} s", "-", True),
        ("  the answer itself (in process)", f"{answer_s:.3f} s", "<= 0.3 s", answer_s <= 0.3),
        (f"sweep: {len(names)} models x 4 quants x 3 contexts ({n})", f"{sweep_s:.1f} s",
         "<= 2 s", sweep_s <= 2),
    ]  # fmt: skip
    for what, got, target, ok in rows:
        print(f"{what:52} {got:>9}   target {target:>8}   {'ok' if ok else 'MISSED'}")
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
