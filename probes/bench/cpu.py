"""CPU benchmark cases: matmul (fp32, bf16, fp16), conv2d, triad bandwidth, a small-CNN training
step, and the matmul size sweep for the CPU/GPU crossover.

Each case is a generator ``f(case, ctx)`` run by :func:`~hwadvisor.probes.bench.plan.run_plan` in
the benchmark child; torch arrives as ``ctx.torch`` with its thread count already set. A case
keeps to ``case.seconds`` from its first line: setup, the size probe and warm-up count against it,
and ``Measurement.seconds`` is that whole time. A CPU too slow for the default size gets a smaller
one (recorded in ``params``, said in ``message``) rather than running past its share.

Results later cases may reuse go to ``ctx.shared``: ``cpu.matmul.<precision>.gflops``,
``cpu.train_step.samples_per_s`` and ``cpu.sweep.gflops`` ({n: GFLOP/s}).
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from hwadvisor.model.bench import (
    BenchStatus,
    CpuLoad,
    Crossover,
    CrossoverPoint,
    Disturbance,
    Measurement,
)
from hwadvisor.probes.bench.harness import (
    Burst,
    LoadMonitor,
    affinity_cpus,
    best_call,
    contended,
    free_threads,
    left,
    measurement,
    settings,
    sig,
    spin,
    timed,
)
from hwadvisor.probes.bench.models import (
    SMALL_CNN_INPUT,
    small_cnn,
    small_cnn_optimizer,
    small_cnn_train_flops_per_sample,
)
from hwadvisor.probes.bench.plan import BenchContext, CaseDef, CaseFunction, CaseSpec, failed
from hwadvisor.probes.bench.timing import halve_on_oom, measure, rates

#: fp32 matmul size: ~12 ms per call on a 2-core Zen 4, large enough to reach the BLAS peak.
DEFAULT_MATMUL_N = 1024
#: Matmul size where bf16/fp16 is emulated (~1–5 GFLOP/s): a few ms per call.
EMULATED_MATMUL_N = 128
#: Size of the few calls whose shortest checks the speed before the real size is used.
PROBE_MATMUL_N = 128
MIN_MATMUL_N = 32
#: Warm-up of the compute cases: the first ~0.1 s of a thread pool's work runs ~20 % slow
#: (2-core EPYC VM: 142, 147, then 176–180 GFLOP/s), which a best-of-blocks headline must not see.
COMPUTE_WARMUP_S = 0.15
#: A native precision is never measured below this size: smaller calls time thread hand-offs
#: and the scheduler, not compute (33 MFLOP: 33 ms even at 1 GFLOP/s).
COMPUTE_FLOOR_N = 256
#: One repetition may take at most this fraction of the share (warm-up + ≥ 4 blocks must fit).
MAX_REP_FRACTION = 0.1

DEFAULT_CONV_BATCH = 8
CONV_CHANNELS = 64
CONV_SIZE = 56

#: 3 × 128 MiB: far beyond any last-level cache this tool will meet on one socket.
DEFAULT_TRIAD_ELEMENTS = 2**25
MIN_TRIAD_ELEMENTS = 2**20
#: randn fills only this many elements, repeated: filling 2 × 2**25 costs ~0.3 s of the share.
TRIAD_FILL_CHUNK = 2**20
TRIAD_BYTES_PER_ELEMENT = 12  # read a, read b, write c; fp32

DEFAULT_TRAIN_BATCH = 8
#: A training step may take at most this fraction of the share (2 warm-up steps + 4 blocks).
MAX_STEP_FRACTION = 1 / 6

DEFAULT_SWEEP_SIZES = (64, 128, 256, 512, 1024, 2048)

_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
_ONEDNN_CHECKS = {"bf16": "_is_mkldnn_bf16_supported", "fp16": "_is_mkldnn_fp16_supported"}


def _malloc_settings() -> dict[str, str]:
    """glibc's allocator thresholds in force: with glibc's defaults CPU conv loses 30–40 % to
    page faults on fresh outputs (2-core Zen 4), so the figure depends on them."""
    return {
        name.lower().rstrip("_"): os.environ.get(name, "glibc default")
        for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
    }


# ------------------------------------------------------------------------------------------
# The load around CPU cases: threads from the free cores, a second run after a passing load

#: How long one look at the load lasts, and how many looks the first CPU case may wait for a
#: passing load to end (0.75 s at most, so a busy machine's scan grows by little).
LOAD_LOOK_S = 0.25
LOAD_WAIT_LOOKS = 3
#: The look before a second run of a case that a load disturbed.
RECHECK_S = 0.15
#: Below this many seconds a look cannot tell a taken core from timer noise.
MIN_LOOK_S = 0.1


@dataclass
class CpuLoadState:
    """What the child knows of the load on its CPUs, and what it did about it."""

    usable: int
    cpus: int
    monitor: LoadMonitor
    others: float | None = None
    before: float | None = None
    threads_chosen: int | None = None
    waited: float = 0.0
    retry_left: float = 0.0
    retried: list[str] = field(default_factory=list)
    wait: Callable[[float], None] = spin

    def look(self, seconds: float) -> float | None:
        self.others = self.monitor.sample(seconds, self.wait)
        self.waited += seconds
        return self.others

    def threads(self) -> int:
        return free_threads(self.usable, self.cpus, self.others)

    def snapshot(self) -> CpuLoad:
        chosen = self.threads_chosen
        note = None
        if self.before is not None and chosen is not None and chosen < self.usable:
            note = (
                f"other processes kept {self.before:.1f} of {self.cpus} CPUs busy: measured with "
                f"{chosen} of {self.usable} threads"
            )
        return CpuLoad(
            cpus=self.cpus,
            usable_cpus=self.usable,
            other_cpus_before=self.before,
            threads_chosen=chosen,
            waited_seconds=round(self.waited, 3),
            retried=list(self.retried),
            note=note,
        )


def start_load_watch(
    usable: int, retry_budget_s: float, monitor: LoadMonitor | None = None
) -> CpuLoadState:
    """Start watching the CPUs (the child calls this before importing torch, so the import's
    second or so doubles as the first look at the load)."""
    cpus_list = affinity_cpus()
    monitor = monitor or LoadMonitor(cpus=cpus_list)
    cpus = len(monitor.cpus) if monitor.cpus is not None else (os.cpu_count() or usable)
    state = CpuLoadState(
        usable=max(1, usable), cpus=max(cpus, 1), monitor=monitor, retry_left=retry_budget_s
    )
    monitor.start()
    return state


def _first_look(state: CpuLoadState) -> None:
    """The load before the first CPU case: the window since the watch started, and, where it
    found cores taken, up to three more looks in case the load was passing."""
    elapsed = state.monitor.elapsed()
    if elapsed < MIN_LOOK_S:
        state.wait(MIN_LOOK_S - elapsed)
    state.others = state.monitor.others()
    looks = 0
    while state.threads() < state.usable and looks < LOAD_WAIT_LOOKS:
        state.look(LOAD_LOOK_S)
        looks += 1
    state.before = state.others
    state.threads_chosen = state.threads()


def _load_state(ctx: BenchContext) -> CpuLoadState:
    if not isinstance(ctx.load, CpuLoadState):
        ctx.load = start_load_watch(ctx.usable or ctx.threads, 0.0)
    state: CpuLoadState = ctx.load
    if state.threads_chosen is None:
        _first_look(state)
    # Later cases go by the load seen while the case before ran: on the free cores, others'
    # load is measured as well as by a look, so a load that left frees the cores again.
    return state


def _disturbances(
    m: Measurement, state: CpuLoadState, threads: int, others: float | None, attempts: int
) -> None:
    m.threads = threads
    m.other_cpus = others
    m.attempts = attempts
    if m.status != BenchStatus.OK:
        return
    notes = []
    if contended(others, state.cpus, threads, state.usable):
        m.disturbances.append(Disturbance.CPU_CONTENDED)
        notes.append(
            f"other processes used {others:.1f} of {state.cpus} CPUs while it ran with "
            f"{threads} thread{'s' if threads != 1 else ''}: the figure is low"
        )
    if threads < state.usable:
        m.disturbances.append(Disturbance.FEWER_THREADS)
        notes.append(
            f"measured with {threads} of {state.usable} threads: other processes held the rest "
            "of the CPUs; not the whole machine's figure"
        )
    if notes:
        m.disturbance_note = "; ".join(notes)


def cpu_case(body: CaseFunction) -> CaseFunction:
    """A CPU case with the load handled: threads from the free cores, the load while it ran
    recorded on each measurement, and one second run when a load came up while it ran."""

    @functools.wraps(body)
    def run(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
        torch = ctx.torch
        state = _load_state(ctx)
        attempts = 0
        while True:
            threads = state.threads()
            torch.set_num_threads(threads)
            attempts += 1
            state.monitor.start()
            results = list(body(case, ctx))
            others = state.monitor.others()
            state.others = others
            if (
                contended(others, state.cpus, threads, state.usable)
                and attempts == 1
                and state.retry_left >= case.seconds
            ):
                # A load came up while the case ran: a short look, then again on the cores
                # that are free now.
                state.retry_left -= case.seconds + RECHECK_S
                state.retried.append(case.id)
                state.look(RECHECK_S)
                continue
            break
        for result in results:
            if isinstance(result, Measurement):
                _disturbances(result, state, threads, others, attempts)
            yield result
        yield state.snapshot()

    return run


# ------------------------------------------------------------------------------------------
# matmul


def _native(torch: Any, precision: str, params: dict[str, Any]) -> tuple[bool, str]:
    """Whether the CPU computes ``precision`` in hardware, and who said so.

    The parent decides from the CPU flags (avx512_bf16/amx_bf16, avx512_fp16/amx_fp16); without
    its word, torch's oneDNN check is asked.
    """
    if precision == "fp32":
        return True, "always"
    given = params.get("native")
    if isinstance(given, bool):
        return given, "CPU flags"
    try:
        return bool(getattr(torch.ops.mkldnn, _ONEDNN_CHECKS[precision])()), "torch oneDNN check"
    except (AttributeError, RuntimeError):
        return False, "unknown, assumed emulated"


def _matmul_inputs(torch: Any, dtype: Any, n: int) -> tuple[Any, Any, Any]:
    # randn in fp32 then cast: the same values at every precision for a given seed.
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    return a, b, torch.empty(n, n, dtype=dtype)


def _probe_gflops(torch: Any, dtype: Any, n: int) -> float:
    """GFLOP/s of an n×n matmul: the shortest of a few calls (see :func:`best_call`)."""
    a, b, c = _matmul_inputs(torch, dtype, n)
    shortest, _ = best_call(Burst(lambda: torch.mm(a, b, out=c)))
    return 2.0 * n**3 / max(shortest, 1e-9) / 1e9


def fit_matmul_n(n: int, gflops: float, seconds: float, floor: int = MIN_MATMUL_N) -> int:
    """The largest size ≤ ``n`` whose one call takes at most ``MAX_REP_FRACTION`` of
    ``seconds`` at ``gflops``, a multiple of 16 and at least ``floor`` (and ``MIN_MATMUL_N``)."""
    budget_flop = max(gflops, 1e-3) * 1e9 * seconds * MAX_REP_FRACTION
    largest = (budget_flop / 2.0) ** (1.0 / 3.0)
    if n <= largest:
        return n
    return min(n, max(MIN_MATMUL_N, floor, int(largest) // 16 * 16))


def fit_batch(batch: int, call_s: float, seconds: float, fraction: float) -> int:
    """``batch``, or a smaller one if a call at ``batch`` took more than ``fraction`` of
    ``seconds``. ``call_s`` is the shortest of a few calls (:func:`best_call`), never one call:
    one descheduled call would shrink the batch for nothing."""
    limit = seconds * fraction
    if call_s <= limit:
        return batch
    return max(1, int(batch * limit / call_s))


def _sizing_calls(fn: Callable[[], object], seconds: float, fraction: float) -> tuple[float, float]:
    """The first call of ``fn`` (setup: kernel selection, allocation) and the shortest of it
    and up to two more, within ``fraction`` of the share once two calls ran."""
    burst = Burst(fn)
    shortest, _ = best_call(burst, calls=3, max_s=seconds * fraction)
    return burst.first_call or shortest, shortest


def _reduced(what: str, before: int, after: int, call_s: float, seconds: float) -> str:
    return (
        f"{what} reduced from {before} to {after}: one call took {call_s:.3g} s at best, "
        f"too long for the {seconds:g} s share"
    )


def cpu_matmul(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    """Square matmul ``torch.mm(a, b, out=c)`` at fp32, bf16 or fp16, in GFLOP/s (2n³ per call).

    Params: ``n`` (default 1024; 128 at most where the precision is emulated), ``native``.
    """
    start = time.perf_counter()
    torch = ctx.torch
    precision = case.precision or "fp32"
    if precision not in _DTYPES:
        yield failed(case, f"no CPU matmul case for precision {precision!r}", BenchStatus.SKIPPED)
        return
    dtype = getattr(torch, _DTYPES[precision])
    native, basis = _native(torch, precision, case.params)
    requested = int(case.params.get("n", DEFAULT_MATMUL_N))
    if requested < 1:
        raise ValueError(f"matmul size n must be positive, not {requested}")
    wanted = requested if native else min(requested, EMULATED_MATMUL_N)
    torch.manual_seed(ctx.seed)
    # Even a "native" precision can be catastrophically slow (a torch build without the
    # kernels, an emulating hypervisor): a small call first decides the size.
    probe_n = min(wanted, PROBE_MATMUL_N)
    probe = _probe_gflops(torch, dtype, probe_n)
    # A native precision is never shrunk below the size that measures compute.
    n = fit_matmul_n(wanted, probe, case.seconds, COMPUTE_FLOOR_N if native else MIN_MATMUL_N)
    a, b, c = _matmul_inputs(torch, dtype, n)
    burst = Burst(lambda: torch.mm(a, b, out=c))
    timing = timed(case, burst, left(case, start), warmup_s=COMPUTE_WARMUP_S)
    result = measurement(
        case,
        timing,
        2.0 * n**3 / 1e9,
        unit="GFLOP/s",
        start=start,
        burst=burst,
        params={"n": n, "probe_n": probe_n, "probe_gflops": sig(probe, 3)},
        settings=settings(
            torch,
            dtype=precision,
            native=f"{'yes' if native else 'no'} ({basis})",
            float32_matmul_precision=str(torch.get_float32_matmul_precision()),
        ),
    )
    notes = []
    if not native:
        rate = f"~{result.best:.3g} GFLOP/s" if result.best else "no rate"
        notes.append(f"emulated on this CPU (no native {precision}): {rate} at n={n}")
    if n < wanted:
        notes.append(
            f"size reduced from {requested} to {n}: ~{probe:.3g} GFLOP/s at n={probe_n} "
            f"(the best of a few calls) would not fit the {case.seconds:g} s share"
        )
    if notes and result.status == BenchStatus.OK:
        result.message = "; ".join(notes)
    if result.best is not None:
        ctx.shared[f"cpu.matmul.{precision}.gflops"] = result.best
    yield result


# ------------------------------------------------------------------------------------------
# conv2d


def cpu_conv2d(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    """fp32 3×3 convolution, 64→64 channels on 56×56 maps, padding 1, inference (no_grad).

    Params: ``batch`` (default 8: ~12 ms per call on a 2-core Zen 4). GFLOP/s counts
    2·3·3·Cin·Cout·H·W per sample.
    """
    start = time.perf_counter()
    torch = ctx.torch
    batch = int(case.params.get("batch", DEFAULT_CONV_BATCH))
    if batch < 1:
        raise ValueError(f"conv2d batch must be positive, not {batch}")
    ch, size = CONV_CHANNELS, CONV_SIZE
    torch.manual_seed(ctx.seed)
    x = torch.randn(batch, ch, size, size)
    w = torch.randn(ch, ch, 3, 3)
    conv = torch.nn.functional.conv2d
    requested = batch
    with torch.no_grad():
        # A slow CPU gets a smaller batch rather than blowing the share.
        first, shortest = _sizing_calls(
            lambda: conv(x, w, padding=1), case.seconds, MAX_REP_FRACTION
        )
        batch = fit_batch(batch, shortest, case.seconds, MAX_REP_FRACTION)
        x = x[:batch].contiguous()
        burst = Burst(lambda: conv(x, w, padding=1))
        burst.first_call = first
        # measure()'s warm-up (≥ 2 calls, ≥ 50 ms) pre-warms: oneDNN builds its primitive and the
        # allocator holds the freed output. Without the parent's MALLOC_* settings glibc still
        # returns each 6 MiB output to the system and the next call page-faults it back in:
        # 130–150 instead of 210 GFLOP/s on a 2-core Zen 4, and ±20 % from run to run.
        timing = timed(case, burst, left(case, start), warmup_s=COMPUTE_WARMUP_S)
    flop = 2.0 * 3 * 3 * ch * ch * size * size * batch
    result = measurement(
        case,
        timing,
        flop / 1e9,
        unit="GFLOP/s",
        start=start,
        burst=burst,
        params={"batch": batch, "channels": ch, "size": size, "kernel": 3},
        settings=settings(
            torch,
            dtype="fp32",
            grad="off",
            mkldnn=str(torch.backends.mkldnn.is_available()).lower(),
            float32_matmul_precision=str(torch.get_float32_matmul_precision()),
            **_malloc_settings(),
        ),
    )
    if batch < requested and result.status == BenchStatus.OK:
        result.message = _reduced("batch", requested, batch, shortest, case.seconds)
    yield result


# ------------------------------------------------------------------------------------------
# triad


def _is_cpu_oom(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or "can't allocate memory" in str(exc)


def cpu_triad(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    """Memory bandwidth: ``torch.add(a, b, alpha=s, out=c)`` on fp32 arrays, 12 bytes per
    element, in GB/s. Params: ``elements`` (default 2**25, 384 MiB in all; halved on
    out-of-memory)."""
    start = time.perf_counter()
    torch = ctx.torch
    elements = int(case.params.get("elements", DEFAULT_TRIAD_ELEMENTS))
    if elements < 1:
        raise ValueError(f"triad elements must be positive, not {elements}")

    def arrays(count: int) -> tuple[Any, Any, Any]:
        torch.manual_seed(ctx.seed)
        chunk = min(count, TRIAD_FILL_CHUNK)
        copies = -(-count // chunk)
        a = torch.randn(chunk).repeat(copies)[:count]
        b = torch.randn(chunk).repeat(copies)[:count]
        return a, b, torch.empty(count)

    (a, b, c), used, halvings = halve_on_oom(
        arrays, elements, min_size=min(elements, MIN_TRIAD_ELEMENTS), is_oom=_is_cpu_oom
    )
    burst = Burst(lambda: torch.add(a, b, alpha=3.0, out=c))
    timing = timed(case, burst, left(case, start))
    result = measurement(
        case,
        timing,
        TRIAD_BYTES_PER_ELEMENT * used / 1e9,
        unit="GB/s",
        start=start,
        burst=burst,
        params={"elements": used, "bytes": TRIAD_BYTES_PER_ELEMENT * used},
        settings=settings(torch, dtype="fp32"),
    )
    if halvings and result.status == BenchStatus.OK:
        result.message = f"arrays halved {halvings}× to fit in memory"
    yield result


# ------------------------------------------------------------------------------------------
# training step


def cpu_train_step(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    """One training step of the small CNN (forward, BCE-with-logits loss, backward, Adam) on
    150×150×3 inputs, in samples/s. Params: ``batch`` (default 8: ~120 ms per step on a 2-core
    Zen 4)."""
    start = time.perf_counter()
    torch = ctx.torch
    batch = int(case.params.get("batch", DEFAULT_TRAIN_BATCH))
    if batch < 1:
        raise ValueError(f"train_step batch must be positive, not {batch}")
    torch.manual_seed(ctx.seed)
    model = small_cnn(torch)
    model.train()
    optimizer = small_cnn_optimizer(torch, model)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    x = torch.randn(batch, *SMALL_CNN_INPUT)
    y = torch.randint(0, 2, (batch, 1)).float()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        optimizer.step()

    requested = batch
    first, shortest = _sizing_calls(step, case.seconds, MAX_STEP_FRACTION)
    batch = fit_batch(batch, shortest, case.seconds, MAX_STEP_FRACTION)
    x, y = x[:batch].contiguous(), y[:batch].contiguous()
    burst = Burst(step)
    burst.first_call = first
    # The sizing calls warmed the step up; one more call (at the final batch) is enough.
    timing = timed(case, burst, left(case, start), min_warmup_calls=1, warmup_s=0.0)
    result = measurement(
        case,
        timing,
        float(batch),
        unit="samples/s",
        start=start,
        burst=burst,
        params={"batch": batch, "requested_batch": requested},
        settings=settings(
            torch,
            dtype="fp32",
            optimizer=type(optimizer).__name__,
            float32_matmul_precision=str(torch.get_float32_matmul_precision()),
            **_malloc_settings(),
        ),
    )
    if batch < requested and result.status == BenchStatus.OK:
        result.message = _reduced("batch", requested, batch, shortest, case.seconds)
    if result.best and result.median:
        # Keys as the GPU case's: the median step time, and the FLOP rate of the best block.
        flop = small_cnn_train_flops_per_sample()
        result.params.update(
            ms_per_step=sig(1000.0 * batch / result.median),
            gflop_per_sample=sig(flop / 1e9),
            train_gflops_per_s=sig(result.best * flop / 1e9),
        )
        ctx.shared["cpu.train_step.samples_per_s"] = result.best
    yield result


# ------------------------------------------------------------------------------------------
# crossover sweep


def cpu_sweep(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    """fp32 matmul GFLOP/s for each n of ``params["sizes"]``, briefly, as one Crossover.

    Sizes run small to large; each gets the time left divided by the sizes left, so what the
    quick small sizes do not use goes to the large ones. A size whose warm-up and one block
    cannot fit its share is skipped (null rate, named in the note); the smallest always runs.
    """
    start = time.perf_counter()
    torch = ctx.torch
    sizes = sorted({int(n) for n in case.params.get("sizes", DEFAULT_SWEEP_SIZES)})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"sweep sizes must be positive integers, not {sizes}")
    torch.manual_seed(ctx.seed)
    points: list[CrossoverPoint] = []
    skipped: list[int] = []
    measured: dict[int, float] = {}
    last_rate = _probe_gflops(torch, torch.float32, min(sizes[0], PROBE_MATMUL_N))
    for i, n in enumerate(sizes):
        left = case.seconds - (time.perf_counter() - start)
        share = left / (len(sizes) - i)
        # Two warm-up calls and one block at least; rates rise with n, so the last rate
        # overestimates the time, which is the safe side. The smallest size always runs.
        if i > 0 and 3 * 2.0 * n**3 / (last_rate * 1e9) > share:
            skipped.append(n)
            points.append(CrossoverPoint(n=n))
            continue
        a, b, c = _matmul_inputs(torch, torch.float32, n)
        burst = Burst(functools.partial(torch.mm, a, b, out=c))
        timing = measure(
            burst,
            max_seconds=share,
            warmup_s=0.05 if i == 0 else 0.02,  # the threads are spun up after the first size
            target_block_s=0.02,
        )
        values = [v for v in rates(timing, 2.0 * n**3 / 1e9) if math.isfinite(v) and v > 0]
        best = sig(max(values)) if values else None
        points.append(CrossoverPoint(n=n, cpu_gflops=best))
        if best:
            measured[n] = best
            last_rate = best
    ctx.shared["cpu.sweep.gflops"] = measured
    note = f"threads {torch.get_num_threads()}, best block per size"
    if skipped:
        named = ", ".join(f"n={n}" for n in skipped)
        note += f"; skipped {named}: one call would not fit the share"
    yield Crossover(device="cpu", points=points, note=note)


CASES: dict[str, CaseFunction] = {
    "cpu_matmul": cpu_case(cpu_matmul),
    "cpu_conv2d": cpu_case(cpu_conv2d),
    "cpu_triad": cpu_case(cpu_triad),
    "cpu_train_step": cpu_case(cpu_train_step),
    "cpu_sweep": cpu_case(cpu_sweep),
}

#: The CPU cases in plan order, with their shares at the default budget (5.5 s in all; tuned on
#: a 2-core VM: each headline figure within 5 % of a run 10× longer).
PLAN: tuple[CaseDef, ...] = (
    CaseDef("cpu_matmul", "matmul", "cpu", 1.0, precision="fp32", peak="cpu_fp32"),
    # Emulated low precision is ~100× slower: a tiny size, a small share, but measured,
    # because that slowness is worth knowing (below 0.25 s warm-up + 4 blocks overrun).
    CaseDef("cpu_matmul", "matmul", "cpu", 0.5, precision="fp16", emulated_share=0.3),
    CaseDef("cpu_matmul", "matmul", "cpu", 0.5, precision="bf16", emulated_share=0.3),
    CaseDef("cpu_conv2d", "conv2d", "cpu", 1.2, precision="fp32", peak="cpu_fp32"),
    CaseDef("cpu_triad", "triad", "cpu", 0.7),
    CaseDef("cpu_train_step", "train_step", "cpu", 1.8, precision="fp32"),
    CaseDef(
        "cpu_sweep",
        "crossover",
        "cpu",
        1.0,
        precision="fp32",
        params={"sizes": list(DEFAULT_SWEEP_SIZES)},
        needs_gpu=True,
    ),
)
