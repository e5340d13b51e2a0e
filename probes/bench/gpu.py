"""GPU benchmark cases: matmul per precision, conv2d, device copy, host↔device transfers, kernel
launch latency, a small-CNN training step, and the CPU-against-GPU matmul sweep.

How every case times (see the project's benchmarking notes):

* CUDA events around a burst of repetitions, one synchronize at the end of the burst, never one
  per repetition (:func:`event_block`); :func:`~hwadvisor.probes.bench.timing.measure` sizes the
  bursts and stops once the spread is narrow or the case's time share is spent;
* a warm-up of 200–500 ms first, so that the clocks ramp up; the very first call (CUDA context,
  cuBLAS/cuDNN handles, lazy module loading, cuDNN autotuning) is timed on its own and reported as
  ``first_call_seconds``, never mixed into the figure;
* sizes start from the case's parameters, come down to what the free memory holds, and halve
  again on out-of-memory; the size used is recorded;
* precision is a setting: FP32 runs with TF32 off, and the settings in force are recorded;
* an NVML telemetry sample before and after each case, where NVML is available.

torch comes from ``ctx.torch`` (imported by the plan runner in the child process).
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hwadvisor.model.bench import BenchStatus, Confidence, Crossover, CrossoverPoint, Measurement
from hwadvisor.probes._common import describe
from hwadvisor.probes.bench import telemetry
from hwadvisor.probes.bench.harness import best_call
from hwadvisor.probes.bench.plan import BenchContext, CaseDef, CaseFunction, CaseSpec, failed
from hwadvisor.probes.bench.timing import Timing, halve_on_oom, measure, rates, summarize

MIB = 1024**2
GIB = 1024**3

DEFAULT_MATMUL_N = 8192
MIN_MATMUL_N = 256
DEFAULT_CONV_BATCH = 256
CONV_CHANNELS = 64
CONV_HW = 56
DEFAULT_COPY_BYTES = GIB
MIN_COPY_BYTES = 16 * MIB
DEFAULT_TRANSFER_BYTES = 64 * MIB
DEFAULT_TRAIN_BATCH = 64
DEFAULT_SWEEP_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)

#: Share of the free GPU memory a case's buffers may take (cuBLAS/cuDNN workspaces need room).
MEMORY_SHARE = 0.5
#: GPU warm-up bounds: long enough for the clocks to ramp up, short enough for the budget.
WARMUP_MIN_S = 0.2
WARMUP_MAX_S = 0.5
#: A single repetition longer than this share of the case's time means a smaller size.
SLOW_REP_SHARE = 0.1

_TIMING_NOTE = "CUDA events around a burst, one synchronize per burst"


# --------------------------------------------------------------------------------------------
# Pure helpers


def event_block(
    cuda: Any, step: Callable[[], object], before: Callable[[], object] | None = None
) -> Callable[[int], float]:
    """``block(reps) -> seconds`` for :func:`measure`: CUDA events around a burst of ``reps``
    calls of ``step`` on the current stream, and one synchronize (on the end event) after it.

    ``before`` (an L2 flush) is enqueued ahead of the start event, so it is not timed.
    """

    def block(reps: int) -> float:
        if before is not None:
            before()
        start = cuda.Event(enable_timing=True)
        end = cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            step()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0

    return block


def wall_block(cuda: Any, step: Callable[[], object]) -> Callable[[int], float]:
    """``block(reps) -> seconds`` by the host clock: for work that includes host-side copies,
    where what the user waits for is the wall time. One device synchronize after the burst."""

    def block(reps: int) -> float:
        start = time.perf_counter()
        for _ in range(reps):
            step()
        cuda.synchronize()
        return time.perf_counter() - start

    return block


def fit_size(size: int, need: Callable[[int], float], budget: float | None, min_size: int) -> int:
    """Halve ``size`` until ``need(size)`` bytes fit in ``budget`` (no bound when None), but not
    below ``min_size``."""
    if budget is None:
        return size
    while size // 2 >= min_size and need(size) > budget:
        size //= 2
    return size


def is_oom(exc: BaseException) -> bool:
    """torch's out-of-memory error (``torch.OutOfMemoryError`` is a RuntimeError whose text
    starts with "CUDA out of memory"; older builds raise a plain RuntimeError with that text)."""
    return isinstance(exc, MemoryError) or "out of memory" in str(exc).lower()


def matmul_flops(n: int) -> float:
    """Floating-point operations of one square ``n``×``n`` matmul."""
    return 2.0 * n**3


def conv_flops(batch: int, channels: int, hw: int, kernel: int = 3) -> float:
    """Forward FLOPs of a same-padded ``kernel``×``kernel`` conv, ``channels``→``channels``."""
    return 2.0 * kernel * kernel * channels * channels * hw * hw * batch


def crossover_n(points: list[CrossoverPoint], gpu_key: str) -> int | None:
    """The smallest n from which the GPU stays faster than the CPU (``gpu_key`` is
    ``gpu_gflops`` or ``gpu_with_transfer_gflops``): below it the CPU is as fast or faster.

    Only points with both figures count. None when there is no crossing to report: the GPU is
    not faster at the largest n measured (it never wins), or it is faster at every n measured
    (it always wins); the points tell which.
    """
    if gpu_key not in ("gpu_gflops", "gpu_with_transfer_gflops"):
        raise ValueError(f"unknown GPU figure {gpu_key!r}")
    pairs = sorted(
        (p.n, p.cpu_gflops, getattr(p, gpu_key))
        for p in points
        if p.cpu_gflops is not None and getattr(p, gpu_key) is not None
    )
    wins = [gpu > cpu for _, cpu, gpu in pairs]
    if not wins or not wins[-1]:
        return None
    first = len(wins)
    while first > 0 and wins[first - 1]:
        first -= 1
    return None if first == 0 else pairs[first][0]


def device_index(device: str) -> int | None:
    """``cuda`` -> 0, ``cuda:3`` -> 3; None for anything that is not a CUDA device."""
    kind, _, index = device.partition(":")
    if kind != "cuda":
        return None
    if not index:
        return 0
    return int(index) if index.isdigit() else None


def warmup_seconds(case: CaseSpec) -> float:
    """200–500 ms (a third of the case's share), or the ``warmup_s`` parameter."""
    if "warmup_s" in case.params:
        return max(0.0, float(case.params["warmup_s"]))
    return min(WARMUP_MAX_S, max(WARMUP_MIN_S, case.seconds / 3))


def _round(value: float) -> float:
    return float(f"{value:.5g}")


# --------------------------------------------------------------------------------------------
# The device a case runs on


@dataclass
class Gpu:
    """The GPU one case runs on."""

    torch: Any
    cuda: Any
    index: int
    device: Any
    """``torch.device`` of the case."""
    name: str
    capability: tuple[int, int]
    l2_bytes: int
    hip: bool
    context_seconds: float | None
    """CUDA context creation, when this case was the first to touch the GPU."""

    def free_bytes(self) -> int | None:
        try:
            free, _total = self.cuda.mem_get_info(self.index)
        except (RuntimeError, AttributeError):
            return None
        return int(free)

    def budget(self) -> float | None:
        free = self.free_bytes()
        return None if free is None else free * MEMORY_SHARE

    def empty_cache(self) -> None:
        # Cached blocks of one case would shrink the next case's free memory.
        with contextlib.suppress(RuntimeError, AttributeError):
            self.cuda.empty_cache()


def open_gpu(case: CaseSpec, ctx: BenchContext) -> Gpu | str:
    """The case's GPU, made current, or why the case cannot run."""
    torch = ctx.torch
    cuda = torch.cuda
    index = device_index(case.device)
    if index is None:
        return f"{case.device!r} is not a CUDA device"
    if not cuda.is_available():
        return (
            "no CUDA GPU is visible to torch (CPU-only torch build, no driver, "
            "or CUDA_VISIBLE_DEVICES hides it)"
        )
    count = int(cuda.device_count())
    if index >= count:
        return f"{case.device} is not visible: torch sees {count} GPU(s)"
    device = torch.device(case.device if ":" in case.device else f"cuda:{index}")
    contexts: set[int] = ctx.shared.setdefault("cuda_contexts", set())
    context_s = None
    if index in contexts:
        cuda.set_device(index)
    else:
        # The first CUDA call of the process on this GPU (set_device already creates the
        # context since CUDA 12) takes seconds, or minutes of PTX JIT on GPUs newer than the
        # build: timed here, apart from any figure.
        start = time.perf_counter()
        cuda.set_device(index)
        torch.zeros(1, device=device)
        cuda.synchronize(index)
        context_s = time.perf_counter() - start
        contexts.add(index)
    props = cuda.get_device_properties(index)
    return Gpu(
        torch=torch,
        cuda=cuda,
        index=index,
        device=device,
        name=str(getattr(props, "name", "")),
        capability=(int(getattr(props, "major", 0)), int(getattr(props, "minor", 0))),
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0),
        hip=bool(getattr(torch.version, "hip", None)),
        context_seconds=context_s,
    )


def telemetry_samples(gpu_index: int, case_id: str, when: str, torch: Any) -> Iterator[BaseModel]:
    """One NVML sample of the GPU, if NVML is there (its absence is not an error)."""
    found = telemetry.sample(gpu_index, case_id, when, torch=torch)
    if found is not None:
        yield found


def device_record(gpu: Gpu, ctx: BenchContext) -> Iterator[BaseModel]:
    """The GPU's identity (name, UUID, PCI bus id), the first time a case opens it in this child:
    the parent ties ``cuda:N`` to the profile's GPU by it."""
    recorded: set[int] = ctx.shared.setdefault("bench_devices", set())
    if gpu.index in recorded:
        return
    recorded.add(gpu.index)
    found = telemetry.device_identity(gpu.index, gpu.torch)
    if found is not None:
        yield found


_Body = Callable[[CaseSpec, BenchContext, Gpu], Iterator[BaseModel]]


def gpu_case(body: _Body) -> CaseFunction:
    """A case function from ``body``: skip without a GPU, telemetry before and after, and the
    GPU's cached memory given back after the case."""

    @functools.wraps(body)
    def run(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
        gpu = open_gpu(case, ctx)
        if isinstance(gpu, str):
            yield failed(case, gpu, BenchStatus.SKIPPED)
            return
        yield from device_record(gpu, ctx)
        yield from telemetry_samples(gpu.index, case.id, "before", gpu.torch)
        try:
            yield from body(case, ctx, gpu)
        finally:
            gpu.empty_cache()
        yield from telemetry_samples(gpu.index, case.id, "after", gpu.torch)

    return run


# --------------------------------------------------------------------------------------------
# Settings


def precision_settings(torch: Any) -> dict[str, str]:
    """The global precision and library settings in force, as text (unreadable ones say so)."""
    reads: dict[str, Callable[[], object]] = {
        "float32_matmul_precision": torch.get_float32_matmul_precision,
        "cuda_matmul_allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
        "cudnn_benchmark": lambda: torch.backends.cudnn.benchmark,
        "fp16_reduced_precision_reduction": (
            lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        ),
    }
    settings: dict[str, str] = {}
    for key, read in reads.items():
        try:
            settings[key] = str(read())
        except (RuntimeError, AttributeError) as exc:
            # torch ≥ 2.9 refuses legacy getters once the new fp32_precision API was used.
            settings[key] = f"unreadable ({describe(exc)})"
    return settings


@contextlib.contextmanager
def fp32_mode(torch: Any, tf32: bool) -> Iterator[None]:
    """FP32 matmul and conv with TF32 on or off (off: true FP32), restored afterwards."""
    saved_precision = torch.get_float32_matmul_precision()
    saved_cudnn = torch.backends.cudnn.allow_tf32
    try:
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        yield
    finally:
        torch.set_float32_matmul_precision(saved_precision)
        torch.backends.cudnn.allow_tf32 = saved_cudnn


@contextlib.contextmanager
def cudnn_benchmark(torch: Any) -> Iterator[None]:
    """cuDNN autotuning on (the first call per shape tunes; it is timed apart), restored after."""
    saved = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = True
        yield
    finally:
        torch.backends.cudnn.benchmark = saved


def amp_dtype(gpu: Gpu) -> Any:
    """bfloat16 where the GPU has it natively (Ampere and newer), else float16."""
    torch = gpu.torch
    # ROCm's capability numbers are not NVIDIA's; ask torch there.
    native = bool(gpu.cuda.is_bf16_supported()) if gpu.hip else gpu.capability >= (8, 0)
    return torch.bfloat16 if native else torch.float16


# --------------------------------------------------------------------------------------------
# Running and reporting one measured kernel


@dataclass
class Run:
    """One measured kernel: its timing, the first call, and the sizes used."""

    timing: Timing
    first_call_seconds: float
    params: dict[str, int | float | str]
    settings: dict[str, str]


def first_call(gpu: Gpu, step: Callable[[], object]) -> float:
    """Seconds of one call of ``step`` and a synchronize: the first call, timed on its own."""
    start = time.perf_counter()
    step()
    gpu.cuda.synchronize(gpu.index)
    return time.perf_counter() - start


def remaining(case: CaseSpec, started: float, floor: float = 0.05) -> float:
    """What is left of the case's time share (at least ``floor``)."""
    return max(floor, case.seconds - (time.perf_counter() - started))


def result(
    case: CaseSpec,
    gpu: Gpu,
    run: Run,
    *,
    unit: str,
    work_per_rep: float = 1.0,
    higher_is_better: bool = True,
    seconds_scale: float = 1.0,
    started: float,
) -> Measurement:
    """The measurement of ``run``: rates (``work_per_rep`` per repetition) or, for latencies,
    seconds per repetition × ``seconds_scale``. Never NaN or infinite: no figure means failed."""
    if higher_is_better:
        values = rates(run.timing, work_per_rep)
    else:
        values = [t * seconds_scale for t in run.timing.per_rep_seconds if t > 0]
    values = [v for v in values if math.isfinite(v) and v > 0]
    if not values:
        return failed(case, "the GPU timer gave no positive time: nothing to report")
    summary = summarize(values, higher_is_better=higher_is_better)
    first = run.first_call_seconds
    settings = {
        "device_name": gpu.name,
        "timing": _TIMING_NOTE,
        "warmup_s": f"{run.timing.warmup_seconds:.3f}",
        "stopped_because": run.timing.stopped_because,
        **run.settings,
    }
    if gpu.context_seconds is not None:
        first += gpu.context_seconds
        settings["first_call_includes"] = (
            f"CUDA context creation ({gpu.context_seconds:.3f} s): first case on this GPU"
        )
    return Measurement(
        case=case.case,
        device=case.device,
        precision=case.precision,
        variant=case.variant,
        unit=unit,
        higher_is_better=higher_is_better,
        best=_round(summary.best),
        median=_round(summary.median),
        spread=summary.spread,
        blocks=run.timing.blocks,
        reps_per_block=run.timing.reps_per_block,
        seconds=round(time.perf_counter() - started, 3),
        first_call_seconds=_round(first),
        params=run.params,
        settings=settings,
        confidence=Confidence(summary.confidence),
    )


def time_kernel(
    case: CaseSpec,
    gpu: Gpu,
    step: Callable[[], object],
    *,
    started: float,
    before: Callable[[], object] | None = None,
) -> tuple[float, Timing]:
    """First call of ``step`` (timed apart), then warm-up and measured bursts in the time left."""
    first = first_call(gpu, step)
    timing = measure(
        event_block(gpu.cuda, step, before),
        max_seconds=remaining(case, started),
        warmup_s=warmup_seconds(case),
    )
    return first, timing


# --------------------------------------------------------------------------------------------
# Matmul

_MATMUL_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}
_ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}


def fp8_unsupported(torch: Any, capability: tuple[int, int], hip: bool) -> str | None:
    """Why FP8 matmul cannot be measured here, or None."""
    if hip:
        return "FP8 matmul is measured on NVIDIA GPUs only (ROCm GPUs use other FP8 formats)"
    if capability < (8, 9):
        return (
            f"FP8 tensor cores need compute capability 8.9 or newer (Ada, Hopper); "
            f"this GPU is {capability[0]}.{capability[1]}"
        )
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return "this torch build has no FP8 matmul (torch._scaled_mm, torch.float8_e4m3fn)"
    return None


def _matmul_step(gpu: Gpu, precision: str, n: int) -> Callable[[], object]:
    torch, device = gpu.torch, gpu.device
    if precision == "fp8":
        # e4m3 inputs with per-tensor scales, bf16 out; cuBLASLt wants the second operand
        # column-major, which the transpose of a row-major matrix is. Fast accumulation is
        # what FP8 training uses in the forward pass, and what the datasheet peak assumes.
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()
        scale = torch.ones((), device=device, dtype=torch.float32)
        out_dtype = torch.bfloat16

        def fp8() -> object:
            return torch._scaled_mm(
                a, b, scale_a=scale, scale_b=scale, out_dtype=out_dtype, use_fast_accum=True
            )

        return fp8
    dtype = getattr(torch, _MATMUL_DTYPES[precision])
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)
    return functools.partial(torch.matmul, a, b, out=c)


def _matmul_run(case: CaseSpec, gpu: Gpu, precision: str, started: float) -> Run:
    requested = int(case.params.get("n", DEFAULT_MATMUL_N))
    element = _ELEMENT_BYTES[precision]

    # Three matrices, plus room for fp8's bf16 staging and output.
    def need(n: int) -> float:
        return n * n * (3 * element + 4) if precision == "fp8" else 3 * n * n * element

    n = fit_size(requested, need, gpu.budget(), MIN_MATMUL_N)
    firsts: list[float] = []
    slower = 0

    shortest: list[float] = []

    def attempt(n: int) -> tuple[float, Timing] | None:
        slow = SLOW_REP_SHARE * case.seconds
        step = _matmul_step(gpu, precision, n)
        firsts.append(first_call(gpu, step))
        # The shortest of a few calls: one call preempted by another process (or a clock
        # still ramping up) must not halve the size.
        one, _calls = best_call(event_block(gpu.cuda, step), calls=3, max_s=slow, min_calls=2)
        shortest.append(one)
        if one > slow and n // 2 >= MIN_MATMUL_N:
            return None  # a slow GPU: one repetition would eat the share; try n / 2
        timing = measure(
            event_block(gpu.cuda, step),
            max_seconds=remaining(case, started) * (1.0 - reserved[0]),
            warmup_s=warmup_seconds(case),
        )
        return firsts[0], timing

    def second_run(n: int) -> Timing:
        """The run at the second size. The GPU is warm from the first: no warm-up beyond
        measure's two calls, then blocks until the case's time is spent, but at least
        SECOND_SIZE_BLOCKS of them (a figure of fewer is low confidence), past the case's
        share if need be."""
        step = _matmul_step(gpu, precision, n)
        first_call(gpu, step)
        return measure(
            event_block(gpu.cuda, step),
            max_seconds=remaining(case, started),
            warmup_s=0.0,
            at_least=SECOND_SIZE_BLOCKS,
        )

    # Tensor-core matmuls peak below the largest size on some GPUs (an H200 ran bf16 5-10 %
    # faster at 4096 than at 8192 in three runs): half the size is timed too, in a share of
    # the time kept for it, and the faster of the two is the figure. FP32 without tensor
    # cores goes the other way (the H200's fp32 ran 2-5 % faster at 16384): where twice the
    # size fits the memory and its run fits the share kept, it is timed too.
    # ``one_size`` (the reference sweep's cases): the size asked for, and only it
    second = None if case.params.get("one_size") else SECOND_SIZE.get(precision)
    reserved = [SECOND_SIZE_SHARE[second] if second else 0.0]
    halvings = 0
    while True:
        outcome, n, oom_halvings = halve_on_oom(
            attempt, n, min_size=MIN_MATMUL_N, is_oom=is_oom, after_oom=gpu.empty_cache
        )
        halvings += oom_halvings
        if outcome is not None:
            break
        n //= 2
        slower += 1
    first, timing = outcome
    tried = [n]
    one = shortest[-1] if shortest else 0.0
    other = _second_size(second, n, one, reserved[0] * case.seconds)
    budget = gpu.budget()
    if other and not slower and (budget is None or need(other) <= budget):
        reserved[0] = 0.0
        try:
            run: Timing | None = second_run(other)
        except RuntimeError:  # out of memory or a failed kernel: the first size stands
            run = None  # (the case's end empties the cache)
        tried.append(other)
        if run is not None and _rate(run, other) > _rate(timing, n):
            n, timing = other, run
    params: dict[str, int | float | str] = {"n": n, "requested_n": requested}
    if len(tried) > 1:
        params["sizes_tried"] = ",".join(str(t) for t in tried)
    if halvings:
        params["oom_halvings"] = halvings
    if slower:
        params["slow_gpu_halvings"] = slower
    return Run(timing, first, params, {"dtype": precision_dtype(gpu.torch, precision)})


#: Matmul precisions also timed at a second size (tensor-core ones at half the size, FP32 at
#: twice), and the share of the case's time kept for it.
SECOND_SIZE = {"fp16": "half", "bf16": "half", "fp8": "half", "fp32": "double"}
SECOND_SIZE_SHARE = {"half": 0.35, "double": 0.55}
#: Blocks the second size's figure rests on at least (three make a figure high confidence).
SECOND_SIZE_BLOCKS = 3
#: Calls of the doubled size its run takes: the first, two of warm-up, the blocks.
DOUBLE_SIZE_CALLS = SECOND_SIZE_BLOCKS + 3


def _second_size(kind: str | None, n: int, one_s: float, kept_s: float) -> int | None:
    """The second matmul size to time, or None: half of ``n`` (not under the smallest size),
    or twice ``n`` where its run (:data:`DOUBLE_SIZE_CALLS` calls of 8x ``one_s`` each) fits
    in ``kept_s`` seconds."""
    if kind == "half":
        return n // 2 if n // 2 >= MIN_MATMUL_N else None
    if kind == "double" and one_s > 0 and 8 * one_s * DOUBLE_SIZE_CALLS <= kept_s:
        return 2 * n
    return None


def _rate(timing: Timing, n: int) -> float:
    """Matmul FLOP/s of ``timing``'s median repetition at size ``n`` (0 with no time)."""
    times = sorted(t for t in timing.per_rep_seconds if t > 0)
    return matmul_flops(n) / times[len(times) // 2] if times else 0.0


def precision_dtype(torch: Any, precision: str) -> str:
    if precision == "fp8":
        return (
            "float8_e4m3fn inputs, per-tensor scales, bfloat16 output, fast accumulation "
            "(torch._scaled_mm)"
        )
    return str(getattr(torch, _MATMUL_DTYPES.get(precision, "float32")))


@gpu_case
def gpu_matmul(case: CaseSpec, ctx: BenchContext, gpu: Gpu) -> Iterator[BaseModel]:
    """Square matmul (default n = 8192) at ``case.precision``: fp32 (TF32 off), tf32, fp16,
    bf16 or fp8; GFLOP/s."""
    started = time.perf_counter()
    precision = case.precision or "fp32"
    torch = gpu.torch
    if precision == "fp8":
        why = fp8_unsupported(torch, gpu.capability, gpu.hip)
        if why is not None:
            yield failed(case, why, BenchStatus.SKIPPED)
            return
    elif precision not in _MATMUL_DTYPES:
        yield failed(case, f"unknown matmul precision {precision!r}")
        return
    with fp32_mode(torch, tf32=precision == "tf32"):
        settings = precision_settings(torch)
        try:
            run = _matmul_run(case, gpu, precision, started)
        except RuntimeError as exc:
            if precision != "fp8" or is_oom(exc):
                raise
            # A build or driver whose cuBLASLt lacks FP8 for this GPU: not measurable here.
            yield failed(case, f"FP8 matmul failed: {describe(exc)}", BenchStatus.SKIPPED)
            return
    run.settings = {**settings, **run.settings}
    n = int(run.params["n"])
    yield result(
        case, gpu, run, unit="GFLOP/s", work_per_rep=matmul_flops(n) / 1e9, started=started
    )


# --------------------------------------------------------------------------------------------
# Conv2d


@gpu_case
def gpu_conv2d(case: CaseSpec, ctx: BenchContext, gpu: Gpu) -> Iterator[BaseModel]:
    """3×3 conv, 64→64 channels on 56×56 maps, batch 256 by default; fp32 (TF32 off), tf32 or
    amp (autocast to bf16, or fp16 before Ampere); forward GFLOP/s with cuDNN autotuning."""
    started = time.perf_counter()
    torch = gpu.torch
    precision = case.precision or "fp32"
    if precision not in ("fp32", "tf32", "amp"):
        yield failed(case, f"unknown conv2d precision {precision!r}")
        return
    channels = int(case.params.get("channels", CONV_CHANNELS))
    hw = int(case.params.get("hw", CONV_HW))
    requested = int(case.params.get("batch", DEFAULT_CONV_BATCH))
    amp = precision == "amp"
    dtype = amp_dtype(gpu) if amp else torch.float32
    element = 2 if amp else 4
    # Channels-last is the layout tensor cores run convs in; FP32 stays in the default layout.
    memory_format = torch.channels_last if amp else torch.contiguous_format
    batch = fit_size(requested, lambda b: 2 * b * channels * hw * hw * element, gpu.budget(), 1)

    def attempt(batch: int) -> tuple[float, Timing]:
        x = torch.randn(batch, channels, hw, hw, device=gpu.device, dtype=dtype)
        x = x.contiguous(memory_format=memory_format)
        w = torch.randn(channels, channels, 3, 3, device=gpu.device, dtype=dtype)
        w = w.contiguous(memory_format=memory_format)
        step = functools.partial(torch.nn.functional.conv2d, x, w, padding=1)
        # The first call per shape runs cuDNN's autotuning: time_kernel keeps it out.
        return time_kernel(case, gpu, step, started=started)

    autocast: Any = (
        torch.autocast(device_type=gpu.device.type, dtype=dtype)
        if amp
        else contextlib.nullcontext()
    )
    with fp32_mode(torch, tf32=precision == "tf32"), cudnn_benchmark(torch), autocast:
        settings = precision_settings(torch)
        (first, timing), batch, halvings = halve_on_oom(
            attempt, batch, min_size=1, is_oom=is_oom, after_oom=gpu.empty_cache
        )
    settings["dtype"] = str(dtype)
    settings["memory_format"] = "channels_last" if amp else "contiguous"
    if amp:
        settings["autocast_dtype"] = str(dtype)
    params: dict[str, int | float | str] = {
        "batch": batch,
        "requested_batch": requested,
        "channels": channels,
        "hw": hw,
        "kernel": 3,
    }
    if halvings:
        params["oom_halvings"] = halvings
    run = Run(timing, first, params, settings)
    work = conv_flops(batch, channels, hw) / 1e9
    yield result(case, gpu, run, unit="GFLOP/s", work_per_rep=work, started=started)


# --------------------------------------------------------------------------------------------
# Memory: device copy, host↔device transfers


def _l2_flush(gpu: Gpu) -> tuple[Callable[[], object] | None, int]:
    """A write over twice the L2 size, allocated once, to start each burst with a cold cache."""
    if gpu.l2_bytes <= 0:
        return None, 0
    size = 2 * gpu.l2_bytes
    buffer = gpu.torch.empty(size, dtype=gpu.torch.uint8, device=gpu.device)
    return buffer.zero_, size


@gpu_case
def gpu_device_copy(case: CaseSpec, ctx: BenchContext, gpu: Gpu) -> Iterator[BaseModel]:
    """Device-to-device copy of a large buffer (1 GiB by default, within free memory);
    GB/s counting the bytes read and written (2 × the buffer)."""
    started = time.perf_counter()
    torch = gpu.torch
    requested = int(case.params.get("bytes", DEFAULT_COPY_BYTES))
    size = fit_size(requested, lambda s: 2 * s, gpu.budget(), MIN_COPY_BYTES)
    flush, flush_bytes = _l2_flush(gpu)

    def attempt(size: int) -> tuple[float, Timing]:
        src = torch.randn(size // 4, device=gpu.device)
        dst = torch.empty_like(src)
        return time_kernel(
            case, gpu, functools.partial(dst.copy_, src), started=started, before=flush
        )

    (first, timing), size, halvings = halve_on_oom(
        attempt, size, min_size=MIN_COPY_BYTES, is_oom=is_oom, after_oom=gpu.empty_cache
    )
    size = size // 4 * 4
    params: dict[str, int | float | str] = {"bytes": size, "requested_bytes": requested}
    if halvings:
        params["oom_halvings"] = halvings
    settings = {
        "bytes_counted": "read + write (2 × buffer)",
        "l2_flush": f"{flush_bytes} bytes written before each burst"
        if flush
        else "none (L2 size unknown)",
    }
    run = Run(timing, first, params, settings)
    yield result(case, gpu, run, unit="GB/s", work_per_rep=2 * size / 1e9, started=started)


def _is_pinned(tensor: Any) -> str:
    try:
        return str(bool(tensor.is_pinned()))
    except RuntimeError as exc:
        return f"unknown ({describe(exc)})"


@gpu_case
def gpu_transfer(case: CaseSpec, ctx: BenchContext, gpu: Gpu) -> Iterator[BaseModel]:
    """Host↔device copy of a 64 MiB buffer, ``variant`` pinned or pageable, ``direction`` h2d or
    d2h (parameter, else the case name); GB/s, median and best of several bursts."""
    started = time.perf_counter()
    torch = gpu.torch
    variant = case.variant or "pinned"
    direction = str(case.params.get("direction", case.case if case.case in ("h2d", "d2h") else ""))
    if variant not in ("pinned", "pageable") or direction not in ("h2d", "d2h"):
        yield failed(case, f"unknown transfer {variant!r} {direction!r}")
        return
    size = int(case.params.get("bytes", DEFAULT_TRANSFER_BYTES)) // 4 * 4
    # Both buffers exist, and every page of them is touched, before anything is timed.
    host = torch.empty(size // 4, dtype=torch.float32, pin_memory=variant == "pinned")
    host.fill_(1.0)
    device_buffer = torch.empty(size // 4, dtype=torch.float32, device=gpu.device)
    device_buffer.fill_(1.0)
    if direction == "h2d":
        step = functools.partial(device_buffer.copy_, host, non_blocking=True)
    else:
        step = functools.partial(host.copy_, device_buffer, non_blocking=True)
    first, timing = time_kernel(case, gpu, step, started=started)
    params: dict[str, int | float | str] = {"bytes": size, "direction": direction}
    settings = {
        "host_memory": variant,
        "host_is_pinned": _is_pinned(host),
        "copy": "copy_(non_blocking=True)",
    }
    run = Run(timing, first, params, settings)
    yield result(case, gpu, run, unit="GB/s", work_per_rep=size / 1e9, started=started)


# --------------------------------------------------------------------------------------------
# Launch latency


@gpu_case
def gpu_launch_latency(case: CaseSpec, ctx: BenchContext, gpu: Gpu) -> Iterator[BaseModel]:
    """Time per launch of a tiny kernel (a 1-element add) in a burst of launches, as torch
    issues it (Python, dispatcher and CUDA launch); microseconds, lower is better."""
    started = time.perf_counter()
    x = gpu.torch.zeros(1, device=gpu.device)
    first, timing = time_kernel(case, gpu, functools.partial(x.add_, 1.0), started=started)
    run = Run(timing, first, {"elements": 1}, {"kernel": "1-element add_"})
    yield result(
        case, gpu, run, unit="us", higher_is_better=False, seconds_scale=1e6, started=started
    )


# --------------------------------------------------------------------------------------------
# Training step


def _optimizer(models: Any, torch: Any, model: Any, *, torch_optim: bool) -> Any:
    """Adam at lr 1e-4, the CPU case's optimizer. GradScaler needs a ``torch.optim`` optimizer
    (it reads ``param_groups``), so the fp16 path takes ``torch.optim.Adam``: the same update."""
    make = getattr(models, "small_cnn_optimizer", None)
    if torch_optim or not callable(make):
        return torch.optim.Adam(model.parameters(), lr=1e-4)
    return make(torch, model)


@gpu_case
def gpu_train_step(case: CaseSpec, ctx: BenchContext, gpu: Gpu) -> Iterator[BaseModel]:
    """One training step of the small CNN (3×150×150 inputs, 1 logit, BCE-with-logits loss,
    Adam: the CPU case's step) at ``amp`` (autocast bf16, or fp16 with a gradient scaler before
    Ampere) or ``fp32`` (TF32 off); samples/s, with ms per step in the parameters."""
    from hwadvisor.probes.bench import models

    started = time.perf_counter()
    torch = gpu.torch
    precision = case.precision or "amp"
    if precision not in ("amp", "fp32"):
        yield failed(case, f"unknown train_step precision {precision!r}")
        return
    amp = precision == "amp"
    dtype = amp_dtype(gpu) if amp else torch.float32
    requested = int(case.params.get("batch", DEFAULT_TRAIN_BATCH))
    use_scaler = amp and dtype == torch.float16

    optimizer_name = ""

    def attempt(batch: int) -> tuple[float, Timing]:
        nonlocal optimizer_name
        torch.manual_seed(ctx.seed)
        model = models.small_cnn(torch).to(gpu.device)
        optimizer = _optimizer(models, torch, model, torch_optim=use_scaler)
        optimizer_name = f"{type(optimizer).__name__}(lr=1e-4)"
        loss_fn = torch.nn.BCEWithLogitsLoss()
        x = torch.randn(batch, *models.SMALL_CNN_INPUT, device=gpu.device)
        y = torch.randint(0, 2, (batch,), device=gpu.device).to(torch.float32)
        # fp16 needs loss scaling; the scaler's inf check syncs once per step, as in real
        # training.
        scaler = torch.amp.GradScaler(gpu.device.type) if use_scaler else None

        def step() -> None:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=gpu.device.type, dtype=dtype, enabled=amp):
                loss = loss_fn(model(x).reshape(-1).float(), y)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()

        return time_kernel(case, gpu, step, started=started)

    with fp32_mode(torch, tf32=False), cudnn_benchmark(torch):
        settings = precision_settings(torch)
        (first, timing), batch, halvings = halve_on_oom(
            attempt, requested, min_size=1, is_oom=is_oom, after_oom=gpu.empty_cache
        )
    per_step = sorted(timing.per_rep_seconds)
    params: dict[str, int | float | str] = {
        "batch": batch,
        "requested_batch": requested,
        "ms_per_step": _round(per_step[len(per_step) // 2] * 1000) if per_step else 0.0,
    }
    if halvings:
        params["oom_halvings"] = halvings
    flops_per_sample = getattr(models, "small_cnn_train_flops_per_sample", None)
    if callable(flops_per_sample) and per_step and per_step[0] > 0:
        params["train_gflops_per_s"] = _round(float(flops_per_sample()) * batch / per_step[0] / 1e9)
    settings["autocast_dtype"] = str(dtype) if amp else "off"
    settings["grad_scaler"] = str(use_scaler)
    settings["optimizer"] = optimizer_name
    run = Run(timing, first, params, settings)
    yield result(case, gpu, run, unit="samples/s", work_per_rep=float(batch), started=started)


# --------------------------------------------------------------------------------------------
# CPU against GPU: the matmul sweep


def _sweep_sizes(case: CaseSpec) -> list[int]:
    raw = case.params.get("sizes", DEFAULT_SWEEP_SIZES)
    return sorted({int(n) for n in raw if int(n) > 0})


@gpu_case
def gpu_sweep(case: CaseSpec, ctx: BenchContext, gpu: Gpu) -> Iterator[BaseModel]:
    """FP32 matmul (TF32 off) for each n of ``sizes``: kernel only, and with the inputs copied
    from (pageable) host memory and the result copied back; one :class:`Crossover` of GPU points
    for the parent to merge with the CPU sweep (see :func:`crossover_n`)."""
    started = time.perf_counter()
    torch, cuda = gpu.torch, gpu.cuda
    sizes = _sweep_sizes(case)
    if not sizes:
        yield failed(case, "no matmul sizes to sweep")
        return
    points: list[CrossoverPoint] = []
    note = (
        "FP32 matmul, TF32 off; kernel: CUDA events; with transfer: A and B copied from "
        "pageable host memory, C copied back, wall clock"
    )
    current = sizes[-1]
    with fp32_mode(torch, tf32=False):
        try:
            # Clocks ramp up on the largest size, once for the whole sweep.
            warm = _matmul_step(gpu, "fp32", current)
            first_call(gpu, warm)
            warm_block = event_block(cuda, warm)
            deadline = time.perf_counter() + warmup_seconds(case)
            while time.perf_counter() < deadline:
                warm_block(1)
            del warm, warm_block
            for position, n in enumerate(sizes):
                current = n
                share = remaining(case, started, floor=0.02) / (2 * (len(sizes) - position))
                points.append(_sweep_point(gpu, n, share))
        except RuntimeError as exc:
            if not is_oom(exc):
                raise
            note += f"; stopped at n = {current}: out of memory"
    yield Crossover(device=case.device, points=points, note=note)


def _sweep_point(gpu: Gpu, n: int, share: float) -> CrossoverPoint:
    torch, cuda, device = gpu.torch, gpu.cuda, gpu.device
    block_s = max(0.002, min(0.03, share / 5))
    kernel = _matmul_step(gpu, "fp32", n)
    kernel_timing = measure(
        event_block(cuda, kernel),
        max_seconds=share,
        warmup_s=min(0.01, share / 4),
        target_block_s=block_s,
    )
    a = torch.randn(n, n)
    b = torch.randn(n, n)

    def with_transfer() -> object:
        return torch.matmul(a.to(device), b.to(device)).cpu()

    transfer_timing = measure(
        wall_block(cuda, with_transfer),
        max_seconds=share,
        warmup_s=min(0.01, share / 4),
        target_block_s=block_s,
    )
    work = matmul_flops(n) / 1e9
    return CrossoverPoint(
        n=n,
        gpu_gflops=_best_rate(kernel_timing, work),
        gpu_with_transfer_gflops=_best_rate(transfer_timing, work),
    )


def _best_rate(timing: Timing, work: float) -> float | None:
    values = [v for v in rates(timing, work) if math.isfinite(v) and v > 0]
    return _round(max(values)) if values else None


#: The cases run on every GPU, in order, with their shares at the default budget (15 s a GPU).
PLAN: tuple[CaseDef, ...] = (
    CaseDef("gpu_matmul", "matmul", "gpu", 2.0, precision="fp32", peak="gpu_compute"),
    CaseDef("gpu_matmul", "matmul", "gpu", 1.0, precision="tf32", peak="gpu_compute"),
    CaseDef("gpu_matmul", "matmul", "gpu", 1.0, precision="fp16", peak="gpu_compute"),
    CaseDef("gpu_matmul", "matmul", "gpu", 1.5, precision="bf16", peak="gpu_compute"),
    CaseDef("gpu_matmul", "matmul", "gpu", 1.0, precision="fp8", peak="gpu_compute"),
    CaseDef("gpu_conv2d", "conv2d", "gpu", 1.0, precision="fp32", peak="gpu_compute"),
    CaseDef("gpu_conv2d", "conv2d", "gpu", 1.0, precision="amp", peak="gpu_compute"),
    CaseDef("gpu_device_copy", "device_copy", "gpu", 0.8, peak="gpu_bandwidth"),
    *(
        CaseDef("gpu_transfer", d, "gpu", 0.5, variant=v, params={"direction": d}, peak="pcie")
        for d in ("h2d", "d2h")
        for v in ("pinned", "pageable")
    ),
    CaseDef("gpu_launch_latency", "launch_latency", "gpu", 0.3),
    CaseDef("gpu_train_step", "train_step", "gpu", 1.5, precision="amp"),
    CaseDef(
        "gpu_sweep",
        "crossover",
        "gpu",
        1.2,
        precision="fp32",
        params={"sizes": list(DEFAULT_SWEEP_SIZES)},
    ),
)

CASES: dict[str, CaseFunction] = {
    "gpu_matmul": gpu_matmul,
    "gpu_conv2d": gpu_conv2d,
    "gpu_device_copy": gpu_device_copy,
    "gpu_transfer": gpu_transfer,
    "gpu_launch_latency": gpu_launch_latency,
    "gpu_train_step": gpu_train_step,
    "gpu_sweep": gpu_sweep,
}
