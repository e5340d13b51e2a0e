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
from typing import Any

from pydantic import BaseModel

from hwadvisor.model.bench import BenchStatus, Confidence, Crossover, CrossoverPoint, Measurement
from hwadvisor.probes.bench.models import (
    SMALL_CNN_INPUT,
    small_cnn,
    small_cnn_optimizer,
    small_cnn_train_flops_per_sample,
)
from hwadvisor.probes.bench.plan import BenchContext, CaseFunction, CaseSpec, failed
from hwadvisor.probes.bench.timing import Timing, halve_on_oom, measure, rates, summarize

#: fp32 matmul size: ~12 ms per call on a 2-core Zen 4, large enough to reach the BLAS peak.
DEFAULT_MATMUL_N = 1024
#: Matmul size where bf16/fp16 is emulated (~1–5 GFLOP/s): a few ms per call.
EMULATED_MATMUL_N = 128
#: Size of the one untimed + one timed call that checks the speed before the real size is used.
PROBE_MATMUL_N = 128
MIN_MATMUL_N = 32
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

#: Least time given to ``measure`` after setup, so that it still times one block.
MIN_MEASURE_S = 0.02
TARGET_BLOCK_S = 0.03
#: Fraction of the share spent before a narrow spread may end the case.
EARLY_STOP_AFTER = 0.5

_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
_ONEDNN_CHECKS = {"bf16": "_is_mkldnn_bf16_supported", "fp16": "_is_mkldnn_fp16_supported"}


class _Burst:
    """``block(reps)`` for :func:`measure`: ``reps`` calls of ``fn`` timed with ``perf_counter``.

    Remembers the first call's duration (kernel selection, JIT, first-touch page faults).
    """

    def __init__(self, fn: Callable[[], object]) -> None:
        self.fn = fn
        self.first_call: float | None = None

    def __call__(self, reps: int) -> float:
        fn = self.fn
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        elapsed = time.perf_counter() - start
        if self.first_call is None:
            self.first_call = elapsed
        return elapsed


def _sig(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")


def _left(case: CaseSpec, start: float) -> float:
    """What is left of the case's share."""
    return max(MIN_MEASURE_S, case.seconds - (time.perf_counter() - start))


def _timed(case: CaseSpec, block: Callable[[int], float], seconds: float) -> Timing:
    """:func:`measure`, stopping early (spread < 3 %) only once about half the share is spent.

    Best-of-4 blocks is not a stable headline on a shared VM: slow phases last longer than four
    30 ms blocks (2-core Zen 4: fp32 matmul best-of-4 varied 7.6 % over 8 runs, best-of-12
    3.4 %). ``params`` may override the rule: ``min_blocks``, ``stop_spread`` (0 for a reference
    run that uses its whole share), ``max_blocks``.
    """
    p = case.params
    min_blocks = max(4, int(EARLY_STOP_AFTER * seconds / TARGET_BLOCK_S))
    return measure(
        block,
        max_seconds=seconds,
        target_block_s=TARGET_BLOCK_S,
        stop_spread=float(p.get("stop_spread", 0.03)),
        min_blocks=int(p.get("min_blocks", min_blocks)),
        max_blocks=int(p.get("max_blocks", 200)),
    )


def _settings(torch: Any, **extra: str) -> dict[str, str]:
    settings = {"threads": str(torch.get_num_threads())}
    try:
        settings["cpu_capability"] = str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):  # torch < 2.1 has no backends.cpu
        settings["cpu_capability"] = "unknown"
    return {**settings, **extra}


def _malloc_settings() -> dict[str, str]:
    """glibc's allocator thresholds in force: with glibc's defaults CPU conv loses 30–40 % to
    page faults on fresh outputs (2-core Zen 4), so the figure depends on them."""
    return {
        name.lower().rstrip("_"): os.environ.get(name, "glibc default")
        for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
    }


def _measurement(
    case: CaseSpec,
    timing: Timing,
    work_per_rep: float,
    *,
    unit: str,
    start: float,
    burst: _Burst,
    params: dict[str, int | float | str],
    settings: dict[str, str],
) -> Measurement:
    """The case's Measurement from its blocks; a failed one if no block gave a finite rate."""
    values = [v for v in rates(timing, work_per_rep) if math.isfinite(v) and v > 0]
    if not values:
        return failed(case, "no usable timing: the clock did not advance during the blocks")
    summary = summarize(values)
    first = burst.first_call
    return Measurement(
        case=case.case,
        device=case.device,
        precision=case.precision,
        variant=case.variant,
        status=BenchStatus.OK,
        unit=unit,
        best=_sig(summary.best),
        median=_sig(summary.median),
        spread=summary.spread,
        blocks=timing.blocks,
        reps_per_block=timing.reps_per_block,
        seconds=round(time.perf_counter() - start, 3),
        first_call_seconds=round(first, 6) if first is not None else None,
        params=params,
        settings=settings,
        confidence=Confidence(summary.confidence),
    )


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
    """GFLOP/s of one n×n matmul after one untimed call (kernel selection, JIT)."""
    a, b, c = _matmul_inputs(torch, dtype, n)
    torch.mm(a, b, out=c)
    start = time.perf_counter()
    torch.mm(a, b, out=c)
    return 2.0 * n**3 / max(time.perf_counter() - start, 1e-9) / 1e9


def fit_matmul_n(n: int, gflops: float, seconds: float) -> int:
    """The largest size ≤ ``n`` whose one call takes at most ``MAX_REP_FRACTION`` of
    ``seconds`` at ``gflops``, a multiple of 16 and at least ``MIN_MATMUL_N``."""
    budget_flop = max(gflops, 1e-3) * 1e9 * seconds * MAX_REP_FRACTION
    largest = (budget_flop / 2.0) ** (1.0 / 3.0)
    if n <= largest:
        return n
    return max(MIN_MATMUL_N, int(largest) // 16 * 16)


def fit_batch(batch: int, first_call_s: float, seconds: float, fraction: float) -> int:
    """``batch``, or a smaller one if the first call at ``batch`` took more than ``fraction`` of
    ``seconds`` (the first call is the slowest, so the estimate errs on the safe side)."""
    limit = seconds * fraction
    if first_call_s <= limit:
        return batch
    return max(1, int(batch * limit / first_call_s))


def _once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _reduced(what: str, before: int, after: int, first_call_s: float, seconds: float) -> str:
    return (
        f"{what} reduced from {before} to {after}: the first call took {first_call_s:.3g} s, "
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
    n = fit_matmul_n(wanted, probe, case.seconds)
    a, b, c = _matmul_inputs(torch, dtype, n)
    burst = _Burst(lambda: torch.mm(a, b, out=c))
    timing = _timed(case, burst, _left(case, start))
    result = _measurement(
        case,
        timing,
        2.0 * n**3 / 1e9,
        unit="GFLOP/s",
        start=start,
        burst=burst,
        params={"n": n, "probe_n": probe_n, "probe_gflops": _sig(probe, 3)},
        settings=_settings(
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
            f"would not fit the {case.seconds:g} s share"
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
        first = _once(lambda: conv(x, w, padding=1))
        batch = fit_batch(batch, first, case.seconds, MAX_REP_FRACTION)
        x = x[:batch].contiguous()
        burst = _Burst(lambda: conv(x, w, padding=1))
        burst.first_call = first
        # measure()'s warm-up (≥ 2 calls, ≥ 50 ms) pre-warms: oneDNN builds its primitive and the
        # allocator holds the freed output. Without the parent's MALLOC_* settings glibc still
        # returns each 6 MiB output to the system and the next call page-faults it back in:
        # 130–150 instead of 210 GFLOP/s on a 2-core Zen 4, and ±20 % from run to run.
        timing = _timed(case, burst, _left(case, start))
    flop = 2.0 * 3 * 3 * ch * ch * size * size * batch
    result = _measurement(
        case,
        timing,
        flop / 1e9,
        unit="GFLOP/s",
        start=start,
        burst=burst,
        params={"batch": batch, "channels": ch, "size": size, "kernel": 3},
        settings=_settings(
            torch,
            dtype="fp32",
            grad="off",
            mkldnn=str(torch.backends.mkldnn.is_available()).lower(),
            float32_matmul_precision=str(torch.get_float32_matmul_precision()),
            **_malloc_settings(),
        ),
    )
    if batch < requested and result.status == BenchStatus.OK:
        result.message = _reduced("batch", requested, batch, first, case.seconds)
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
    burst = _Burst(lambda: torch.add(a, b, alpha=3.0, out=c))
    timing = _timed(case, burst, _left(case, start))
    result = _measurement(
        case,
        timing,
        TRIAD_BYTES_PER_ELEMENT * used / 1e9,
        unit="GB/s",
        start=start,
        burst=burst,
        params={"elements": used, "bytes": TRIAD_BYTES_PER_ELEMENT * used},
        settings=_settings(torch, dtype="fp32"),
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
    first = _once(step)
    batch = fit_batch(batch, first, case.seconds, MAX_STEP_FRACTION)
    x, y = x[:batch].contiguous(), y[:batch].contiguous()
    burst = _Burst(step)
    burst.first_call = first
    timing = _timed(case, burst, _left(case, start))
    result = _measurement(
        case,
        timing,
        float(batch),
        unit="samples/s",
        start=start,
        burst=burst,
        params={"batch": batch, "requested_batch": requested},
        settings=_settings(
            torch,
            dtype="fp32",
            optimizer=type(optimizer).__name__,
            float32_matmul_precision=str(torch.get_float32_matmul_precision()),
            **_malloc_settings(),
        ),
    )
    if batch < requested and result.status == BenchStatus.OK:
        result.message = _reduced("batch", requested, batch, first, case.seconds)
    if result.best and result.median:
        # Keys as the GPU case's: the median step time, and the FLOP rate of the best block.
        flop = small_cnn_train_flops_per_sample()
        result.params.update(
            ms_per_step=_sig(1000.0 * batch / result.median),
            gflop_per_sample=_sig(flop / 1e9),
            train_gflops_per_s=_sig(result.best * flop / 1e9),
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
        burst = _Burst(functools.partial(torch.mm, a, b, out=c))
        timing = measure(
            burst,
            max_seconds=share,
            warmup_s=0.05 if i == 0 else 0.02,  # the threads are spun up after the first size
            target_block_s=0.02,
        )
        values = [v for v in rates(timing, 2.0 * n**3 / 1e9) if math.isfinite(v) and v > 0]
        best = _sig(max(values)) if values else None
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
    "cpu_matmul": cpu_matmul,
    "cpu_conv2d": cpu_conv2d,
    "cpu_triad": cpu_triad,
    "cpu_train_step": cpu_train_step,
    "cpu_sweep": cpu_sweep,
}
