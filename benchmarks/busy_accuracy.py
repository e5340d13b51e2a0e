"""How trustworthy the CPU figures of `hwadvisor scan` are on a busy machine.

For each condition (``idle``; ``busy-loop``: one shell busy loop; ``load40``: a multi-threaded
process keeping about 40 % of all CPUs busy) runs ``hwadvisor scan --json - -q --workload
resnet50-imagenet`` and, under the same load right after it, a plain-torch reference in a fresh
child with the thread count the scan's fp32 matmul chose (conv2d: its own, where the scan reports
a different one) — fp32 1024² matmul and the scan's conv2d shape: 0.3 s warm-up, blocks of 3
calls for 3 s, best block. The reference gets the scan's thread count in
OMP/MKL/OPENBLAS_NUM_THREADS and the MALLOC_* settings the scan reports, so that only the load
differs.

Prints one row per condition and run: the scan's matmul and conv2d best (with the threads,
other_cpus and disturbances it recorded), the reference's best and scan/reference; the scan's
resnet50 time-to-train on this machine and its ratio to idle's; the scan's wall time and its ratio
to idle's; the load the load process actually kept (``load``) and what processes other than ours
used meanwhile (``bg``, share of all CPUs). Then the targets, under busy-loop and load40:

  * matmul and conv2d within 25 % of the reference (|scan/reference − 1| ≤ 0.25);
  * time-to-train within 1.5× of idle's (max(r, 1/r) ≤ 1.5);
  * scan wall time ≤ 1.3× idle's.

    python benchmarks/busy_accuracy.py [--runs 1] [--conditions idle,busy-loop,load40]

Exits 0 unless a scan fails (then prints the tail of its stderr and exits 1). No load process is
left behind: each runs in its own process group, killed when its condition ends.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwadvisor.probes.bench.harness import machine_busy_seconds, own_cpu_seconds

CONDITIONS = ("idle", "busy-loop", "load40")
BUSY = ("busy-loop", "load40")
WORKLOAD = "resnet50-imagenet"
#: Seconds a load runs before the scan starts, to reach its steady state.
SETTLE_S = 1.0
SCAN_TIMEOUT_S = 300.0
REF_TIMEOUT_S = 120.0

FIGURE_TARGET = 0.25  # |scan/reference − 1|
TTT_TARGET = 1.5  # max(r, 1/r) against idle
WALL_TARGET = 1.3  # wall / idle wall
#: A row is marked when processes other than ours used more than this share of the CPUs.
BACKGROUND_WARN = 0.10

#: The load40 child: N threads (argv[1]), each hashing 64 KiB with sha256 (which releases the
#: GIL) for ``duty × period`` and sleeping for the rest of the period.
LOAD_CODE = textwrap.dedent(
    """
    import hashlib, sys, threading, time
    n, duty, period = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    buf = bytes(64 * 1024)
    def work():
        while True:
            start = time.perf_counter()
            while time.perf_counter() - start < duty * period:
                hashlib.sha256(buf).digest()
            time.sleep((1.0 - duty) * period)
    for _ in range(n):
        threading.Thread(target=work, daemon=True).start()
    while True:
        time.sleep(3600)
    """
)
LOAD_DUTY = 0.4
LOAD_PERIOD_S = 0.1

#: The plain-torch reference: argv[1] threads, argv[2] the cases (comma-separated); prints one
#: JSON line.
REF_CODE = textwrap.dedent(
    """
    import json, sys, time
    import torch
    threads, cases = int(sys.argv[1]), sys.argv[2].split(",")
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    def best(fn, flops, warm=0.3, seconds=3.0, per_block=3):
        start = time.perf_counter()
        fn()
        while time.perf_counter() - start < warm:
            fn()
        top, blocks = 0.0, 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            for _ in range(per_block):
                fn()
            top = max(top, per_block * flops / (time.perf_counter() - t0) / 1e9)
            blocks += 1
        return {"best": top, "blocks": blocks}
    out = {"threads": torch.get_num_threads()}
    if "matmul" in cases:
        n = 1024
        a, b, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
        out["matmul"] = best(lambda: torch.mm(a, b, out=c), 2 * n**3)
    if "conv2d" in cases:
        x, w = torch.randn(8, 64, 56, 56), torch.randn(64, 64, 3, 3)
        flops = 2 * 3 * 3 * 64 * 64 * 56 * 56 * 8
        with torch.no_grad():
            out["conv2d"] = best(lambda: torch.nn.functional.conv2d(x, w, padding=1), flops)
    print(json.dumps(out))
    """
)

MALLOC_SETTINGS = {
    "malloc_mmap_threshold": "MALLOC_MMAP_THRESHOLD_",
    "malloc_trim_threshold": "MALLOC_TRIM_THRESHOLD_",
}


@dataclass
class Figure:
    """One case (matmul or conv2d) of one run: the scan's figure and the reference's."""

    scan: float | None = None
    threads: int | None = None
    other_cpus: float | None = None
    disturbances: list[str] | None = None
    ref: float | None = None
    ref_threads: int | None = None

    @property
    def ratio(self) -> float | None:
        if self.scan is None or not self.ref:
            return None
        return self.scan / self.ref


@dataclass
class Row:
    condition: str
    run: int
    wall: float
    ttt: float | None = None
    reason: str | None = None
    figures: dict[str, Figure] = field(default_factory=dict)
    ref_threads: int | None = None
    ref_note: str | None = None
    load_share: float | None = None
    background: float | None = None


# --- processes and /proc -------------------------------------------------------------------------


def _cores() -> int:
    return os.cpu_count() or 1


def _hwadvisor() -> list[str]:
    exe = Path(sys.executable).with_name("hwadvisor")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "hwadvisor"]


def _busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot."""
    return machine_busy_seconds(None)


def _our_cpu() -> float:
    """CPU seconds of this process and its waited-for children."""
    return own_cpu_seconds(children=True) or 0.0


def _proc_cpu(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) of a running process (None off Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _load_command(condition: str) -> list[str] | None:
    if condition == "busy-loop":
        return ["sh", "-c", "while :; do :; done"]
    if condition == "load40":
        return [
            sys.executable,
            "-c",
            LOAD_CODE,
            str(_cores()),
            str(LOAD_DUTY),
            str(LOAD_PERIOD_S),
        ]
    return None


@contextmanager
def _load(condition: str) -> Iterator[subprocess.Popen[bytes] | None]:
    """Run the condition's load in its own process group for the duration of the block."""
    cmd = _load_command(condition)
    if cmd is None:
        yield None
        return
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
    )
    try:
        time.sleep(SETTLE_S)
        yield proc
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _scan(cwd: Path) -> tuple[dict[str, Any], float]:
    """Run the scan; its profile and wall time. Exits 1 when the scan fails."""
    cmd = [*_hwadvisor(), "scan", "--json", "-", "-q", "--workload", WORKLOAD]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, cwd=cwd, timeout=SCAN_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        print(f"scan timed out after {SCAN_TIMEOUT_S:.0f} s:\n{_tail(stderr)}", file=sys.stderr)
        sys.exit(1)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 3):  # 3: degraded, the profile was still written
        print(f"scan failed (exit {done.returncode}):\n{_tail(done.stderr)}", file=sys.stderr)
        sys.exit(1)
    try:
        profile = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        print(f"scan printed no valid JSON ({exc}):\n{_tail(done.stderr)}", file=sys.stderr)
        sys.exit(1)
    return profile, wall


def _reference(
    threads: int, cases: list[str], malloc: dict[str, str]
) -> tuple[dict[str, Any] | None, str | None]:
    """The plain-torch reference of ``cases`` in a fresh child; (results, None) or (None, why)."""
    env = {k: v for k, v in os.environ.items() if k not in MALLOC_SETTINGS.values()}
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    env.update(malloc)
    try:
        done = subprocess.run(
            [sys.executable, "-c", REF_CODE, str(threads), ",".join(cases)],
            capture_output=True,
            text=True,
            env=env,
            timeout=REF_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"reference timed out after {REF_TIMEOUT_S:.0f} s"
    if done.returncode != 0:
        return None, f"reference failed (exit {done.returncode}): {_tail(done.stderr, 3)}"
    try:
        return json.loads(done.stdout.strip().splitlines()[-1]), None
    except (json.JSONDecodeError, IndexError) as exc:
        return None, f"reference printed no JSON: {exc}"


# --- reading the profile -------------------------------------------------------------------------


def _get(data: Any, *keys: str | int) -> Any:
    """``data[k0][k1]…``, or None where any step is missing."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(data, list) or not -len(data) <= key < len(data):
                return None
        elif not isinstance(data, dict):
            return None
        data = data[key] if isinstance(key, int) else data.get(key)
    return data


def _measurement(profile: dict[str, Any], case: str) -> dict[str, Any] | None:
    for m in _get(profile, "benchmarks", "measurements") or []:
        if (
            isinstance(m, dict)
            and m.get("case") == case
            and m.get("precision") == "fp32"
            and m.get("device") == "cpu"
        ):
            return m
    return None


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _scan_threads(profile: dict[str, Any]) -> tuple[int | None, str]:
    """The threads the scan's fp32 CPU matmul ran with, and where that came from: its
    ``threads``, else its ``settings["threads"]``, else the benchmark phase's ``threads``."""
    m = _measurement(profile, "matmul") or {}
    for value, source in (
        (m.get("threads"), "matmul threads"),
        (_get(m, "settings", "threads"), 'matmul settings["threads"]'),
        (_get(profile, "benchmarks", "threads"), "benchmarks.threads"),
    ):
        if _int(value) is not None:
            return _int(value), source
    return None, "none reported"


def _malloc(profile: dict[str, Any]) -> dict[str, str]:
    """The MALLOC_* environment the scan's CPU cases report having run with."""
    out: dict[str, str] = {}
    for case in ("conv2d", "matmul"):
        settings = _get(_measurement(profile, case), "settings") or {}
        for key, var in MALLOC_SETTINGS.items():
            value = settings.get(key) if isinstance(settings, dict) else None
            if var not in out and _int(value) is not None:
                out[var] = str(value)
    return out


def _figure(profile: dict[str, Any], case: str) -> Figure:
    m = _measurement(profile, case)
    if m is None:
        return Figure()
    dist = m.get("disturbances")
    return Figure(
        scan=_float(m.get("best")) if m.get("status", "ok") == "ok" else None,
        threads=_int(m.get("threads")),
        other_cpus=_float(m.get("other_cpus")),
        disturbances=[str(d) for d in dist] if isinstance(dist, list) else None,
    )


# --- one condition -------------------------------------------------------------------------------


def run_condition(condition: str, run: int, cwd: Path) -> Row:
    busy0, ours0 = _busy_seconds(), _our_cpu()
    t0 = time.perf_counter()
    load_share = None
    with _load(condition) as proc:
        load0 = _proc_cpu(proc.pid) if proc else None
        l0 = time.perf_counter()
        profile, wall = _scan(cwd)
        threads, source = _scan_threads(profile)
        ref_threads = threads if threads is not None else _cores()
        figures = {case: _figure(profile, case) for case in ("matmul", "conv2d")}
        # conv2d is measured against its own thread count where the scan reports a different one
        conv_threads = figures["conv2d"].threads or ref_threads
        groups = {ref_threads: ["matmul"]}
        groups.setdefault(conv_threads, []).append("conv2d")
        notes = []
        for group_threads, cases in groups.items():
            ref, why = _reference(group_threads, cases, _malloc(profile))
            if why:
                notes.append(why)
            for case in cases:
                figures[case].ref = _float(_get(ref, case, "best")) if ref else None
                figures[case].ref_threads = group_threads
        if proc is not None:
            load1 = _proc_cpu(proc.pid)
            if load0 is not None and load1 is not None:
                load_share = (load1 - load0) / ((time.perf_counter() - l0) * _cores())
    elapsed = time.perf_counter() - t0
    busy1, ours1 = _busy_seconds(), _our_cpu()

    row = Row(condition, run, wall, ref_threads=ref_threads, load_share=load_share)
    if threads is None:
        row.ref_note = f"the scan reported no thread count; reference ran with {ref_threads}"
    elif source != "matmul threads":
        row.ref_note = f"{ref_threads} threads, from {source} (the measurement has no threads)"
    if conv_threads != ref_threads:
        notes.append(f"conv2d ran with {conv_threads} threads in the scan: so did its reference")
    if notes:
        row.ref_note = "; ".join(([row.ref_note] if row.ref_note else []) + notes)
    if busy0 is not None and busy1 is not None:
        row.background = max(0.0, (busy1 - busy0) - (ours1 - ours0)) / (elapsed * _cores())
    row.ttt = _float(_get(profile, "advice", "this_machine", "seconds"))
    reason = _get(profile, "advice", "this_machine", "reasons", -1)
    row.reason = str(reason) if reason is not None else None
    row.figures = figures
    return row


# --- printing ------------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str = ".3g") -> str:
    return "—" if value is None else format(value, spec)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    for unit, size in (("y", 365.25 * 86400), ("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def _dist(values: list[str] | None) -> str:
    if values is None:
        return "—"
    return ",".join(values) or "none"


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _median(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


HEADER = (
    f"{'condition':<12}{'load':>5}{'bg':>5} │ "
    f"{'matmul':>6}{'thr':>4}{'oth':>5} {'disturb':<14}{'ref':>6}{'s/ref':>6} │ "
    f"{'conv2d':>6}{'thr':>4}{'oth':>5} {'disturb':<14}{'ref':>6}{'s/ref':>6} │ "
    f"{'resnet50':>9}{'/idle':>6} │ {'wall s':>6}{'/idle':>6}"
)


def _line(row: Row, idle_ttt: float | None, idle_wall: float | None) -> str:
    parts = [f"{row.condition + '#' + str(row.run):<12}{_pct(row.load_share):>5}"]
    mark = "!" if (row.background or 0.0) > BACKGROUND_WARN else ""
    parts.append(f"{_pct(row.background) + mark:>5} │ ")
    for case in ("matmul", "conv2d"):
        f = row.figures.get(case, Figure())
        parts.append(
            f"{_fmt(f.scan):>6}{_fmt(f.threads, 'd'):>4}{_fmt(f.other_cpus, '.2f'):>5} "
            f"{_dist(f.disturbances)[:13]:<14}{_fmt(f.ref):>6}{_fmt(f.ratio, '.2f'):>6} │ "
        )
    parts.append(
        f"{_dur(row.ttt):>9}{_fmt(_div(row.ttt, idle_ttt), '.2f'):>6} │ "
        f"{row.wall:>6.1f}{_fmt(_div(row.wall, idle_wall), '.2f'):>6}"
    )
    return "".join(parts)


def _ratio_of(case: str) -> Callable[[Row], float | None]:
    return lambda r: r.figures[case].ratio if case in r.figures else None


def _verdicts(
    rows: list[Row], idle_ttt: float | None, idle_wall: float | None, conditions: list[str]
) -> None:
    busy = [c for c in conditions if c in BUSY]
    print("\ntargets (under " + (", ".join(busy) or "no busy condition: none checked") + "):")
    if not busy:
        return

    def check(
        label: str,
        value_of: Callable[[Row], float | None],
        bad: Callable[[float], float],
        shown: str,
    ) -> None:
        cells = []
        for cond in busy:
            values = [value_of(r) for r in rows if r.condition == cond]
            known = [v for v in values if v is not None]
            if not known:
                cells.append(f"{cond} — n/a")
                continue
            worst = max(known, key=bad)
            ok = len(known) == len(values) and all(bad(v) <= 0 for v in known)
            cells.append(f"{cond} {format(worst, shown)} {'PASS' if ok else 'MISS'}")
        print(f"  {label:<42} {'; '.join(cells)}")

    for case in ("matmul", "conv2d"):
        check(
            f"{case} scan/reference within ±{FIGURE_TARGET:.0%}",
            _ratio_of(case),
            lambda v: abs(v - 1) - FIGURE_TARGET,
            ".2f",
        )
    check(
        f"time-to-train within {TTT_TARGET}× of idle's",
        lambda r: _div(r.ttt, idle_ttt),
        lambda v: (max(v, 1 / v) if v > 0 else float("inf")) - TTT_TARGET,
        ".2f",
    )
    check(
        f"scan wall time ≤ {WALL_TARGET}× idle's",
        lambda r: _div(r.wall, idle_wall),
        lambda v: v - WALL_TARGET,
        ".2f",
    )


def report(rows: list[Row], conditions: list[str]) -> None:
    idle = [r for r in rows if r.condition == "idle"]
    idle_ttt = _median([r.ttt for r in idle])
    idle_wall = _median([r.wall for r in idle])
    print(
        f"\n{_cores()} CPUs. load: share of all CPUs the load process used; bg: share other "
        "processes used; thr/oth/disturb: the scan's threads, other_cpus, disturbances; "
        "ref: plain torch with the scan's threads; /idle: against the median idle run."
    )
    print(HEADER)
    print("─" * len(HEADER))
    for row in rows:
        print(_line(row, idle_ttt, idle_wall))
    print("\nnotes:")
    for row in rows:
        label = f"{row.condition}#{row.run}"
        reason = row.reason or "—"
        print(f"  {label:<12} reasons[-1]: {reason[:100]}{'…' if len(reason) > 100 else ''}")
        if row.ref_note:
            print(f"  {'':<12} reference: {row.ref_note}")
    if any((r.background or 0.0) > BACKGROUND_WARN for r in rows):
        print(
            f"  ! other processes used more than {BACKGROUND_WARN:.0%} of the CPUs during that "
            "condition: its figures are not only the intended load's effect"
        )
    if not idle:
        print("  (no idle run: the /idle ratios and their targets need --conditions with idle)")
    _verdicts(rows, idle_ttt, idle_wall, conditions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="repeat each condition N times")
    parser.add_argument(
        "--conditions",
        default=",".join(CONDITIONS),
        help=f"comma-separated, from {', '.join(CONDITIONS)}",
    )
    args = parser.parse_args()
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown or not conditions or args.runs < 1:
        parser.error(f"unknown condition(s) {unknown}" if unknown else "nothing to run")
    # SIGTERM ends the run through the finally blocks, so that no load process is left behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(1, args.runs + 1):
            for condition in conditions:
                row = run_condition(condition, run, Path(tmp))
                rows.append(row)
                mm, cv = row.figures["matmul"], row.figures["conv2d"]
                print(
                    f"{condition}#{run}: scan {row.wall:.1f} s, matmul {_fmt(mm.scan)} "
                    f"(ref {_fmt(mm.ref)}), conv2d {_fmt(cv.scan)} (ref {_fmt(cv.ref)}), "
                    f"threads {_fmt(mm.threads, 'd')}/{_fmt(cv.threads, 'd')} (reference "
                    f"{_fmt(mm.ref_threads, 'd')}/{_fmt(cv.ref_threads, 'd')}), "
                    f"background {_pct(row.background)}",
                    flush=True,
                )
    report(rows, conditions)


if __name__ == "__main__":
    main()
