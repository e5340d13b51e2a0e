"""Multi-GPU cases: peer-to-peer copy bandwidth between every ordered pair of GPUs, and
all-reduce bus bandwidth across processes (NCCL on GPUs; gloo on the CPU, which tests use).

The all-reduce runs one process per rank, started with the ``spawn`` method (CUDA does not
survive ``fork``), rendezvousing through a file store in a private temporary folder. The group
has its own deadline: ranks still running then are terminated, then killed, and the case
reports ``timeout``, so that it can never hang the benchmark child; the parent stops the child
at its own limit as well (the spawned ranks share its process group and go with it).
"""

from __future__ import annotations

import contextlib
import math
import queue as queue_module
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from hwadvisor.model.bench import AllReduce, BenchStatus, PeerCopy
from hwadvisor.probes._common import describe
from hwadvisor.probes.bench.gpu import (
    event_block,
    fit_size,
    is_oom,
    telemetry_samples,
)
from hwadvisor.probes.bench.plan import BenchContext, CaseFunction, CaseSpec, failed
from hwadvisor.probes.bench.timing import halve_on_oom, measure, rates

MIB = 1024**2

DEFAULT_P2P_BYTES = 256 * MIB
MIN_P2P_BYTES = 4 * MIB
DEFAULT_NCCL_BYTES = 256 * MIB
DEFAULT_GLOO_BYTES = 1 * MIB
DEFAULT_ITERS = 5
DEFAULT_TRIALS = 5
DEFAULT_WARMUP_ITERS = 3
#: Seconds allowed to terminate a straggling rank before it is killed.
TERMINATE_GRACE_S = 2.0

NO_PEER = "no peer access between these GPUs: the copy is staged through host memory"


# --------------------------------------------------------------------------------------------
# Pure helpers


def all_reduce_bandwidth(size_bytes: int, seconds: float, world_size: int) -> tuple[float, float]:
    """(algorithm bandwidth, bus bandwidth) in GB/s for one all-reduce of ``size_bytes`` taking
    ``seconds``: algbw = size / time; busbw = algbw × 2(n−1)/n, as nccl-tests define them (the
    bus bandwidth is comparable across rank counts and with the links' own figures)."""
    if seconds <= 0 or world_size < 1 or size_bytes < 0:
        raise ValueError(f"no bandwidth for {size_bytes} bytes in {seconds} s on {world_size}")
    algbw = size_bytes / seconds / 1e9
    return algbw, algbw * 2 * (world_size - 1) / world_size


def group_timeout(seconds: float) -> float:
    """The all-reduce group's deadline for a case share of ``seconds``: at least 3 s under the
    parent's limit for the case (4 × share, or share + 10 s), so the case reports a timeout
    itself."""
    return max(3.0 * seconds, seconds + 7.0)


# --------------------------------------------------------------------------------------------
# Peer-to-peer copies


def _visible_gpus(case: CaseSpec, ctx: BenchContext) -> int | str:
    cuda = ctx.torch.cuda
    if not cuda.is_available():
        return "no CUDA GPU is visible to torch"
    count = int(cuda.device_count())
    if count < 2:
        return f"needs at least 2 GPUs; torch sees {count}"
    return count


def _min_free(cuda: Any, count: int) -> int | None:
    free: list[int] = []
    for index in range(count):
        try:
            free.append(int(cuda.mem_get_info(index)[0]))
        except (RuntimeError, AttributeError):
            return None
    return min(free) if free else None


def gpu_p2p(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    """Copy a 256 MiB buffer (parameter ``bytes``) from ``cuda:i`` to ``cuda:j`` for every
    ordered pair, timed with CUDA events on the source GPU's stream (where torch runs a
    cross-device copy); one :class:`PeerCopy` per pair with the median GB/s of the bursts."""
    started = time.perf_counter()
    torch = ctx.torch
    cuda = torch.cuda
    count = _visible_gpus(case, ctx)
    if isinstance(count, str):
        yield failed(case, count, BenchStatus.SKIPPED)
        return
    for index in range(count):
        yield from telemetry_samples(index, case.id, "before", torch)
    requested = int(case.params.get("bytes", DEFAULT_P2P_BYTES))
    free = _min_free(cuda, count)
    size = fit_size(requested, lambda s: 2 * s, None if free is None else free * 0.5, MIN_P2P_BYTES)

    def allocate(size: int) -> tuple[list[Any], list[Any]]:
        sources = [torch.randn(size // 4, device=f"cuda:{i}") for i in range(count)]
        targets = [torch.empty(size // 4, device=f"cuda:{i}") for i in range(count)]
        return sources, targets

    def free_cache() -> None:
        for index in range(count):
            with cuda.device(index):
                cuda.empty_cache()

    (sources, targets), size, _ = halve_on_oom(
        allocate, size, min_size=MIN_P2P_BYTES, is_oom=is_oom, after_oom=free_cache
    )
    size = size // 4 * 4
    pairs = [(i, j) for i in range(count) for j in range(count) if i != j]
    left = max(0.0, case.seconds - (time.perf_counter() - started))
    share = max(0.03, left / len(pairs))
    try:
        for i, j in pairs:
            yield _peer_copy(cuda, i, j, sources[i], targets[j], size, share)
    finally:
        del sources, targets
        free_cache()
    for index in range(count):
        yield from telemetry_samples(index, case.id, "after", torch)


def _peer_copy(cuda: Any, i: int, j: int, src: Any, dst: Any, size: int, share: float) -> PeerCopy:
    try:
        peer = bool(cuda.can_device_access_peer(i, j))
    except (RuntimeError, AssertionError):
        peer = False
    message = None if peer else NO_PEER
    try:
        # Events record on the current device's current stream: the source's.
        with cuda.device(i):
            copy = event_block(cuda, lambda: dst.copy_(src, non_blocking=True))
            timing = measure(
                copy,
                max_seconds=share,
                warmup_s=min(0.05, share / 3),
                target_block_s=max(0.005, min(0.03, share / 5)),
            )
    except RuntimeError as exc:
        return PeerCopy(
            src=f"cuda:{i}", dst=f"cuda:{j}", status=BenchStatus.FAILED, message=describe(exc)
        )
    values = rates(timing, size / 1e9)
    if not values:
        return PeerCopy(
            src=f"cuda:{i}",
            dst=f"cuda:{j}",
            status=BenchStatus.FAILED,
            message="the GPU timer gave no positive time",
        )
    return PeerCopy(
        src=f"cuda:{i}",
        dst=f"cuda:{j}",
        gb_per_s=float(f"{statistics.median(values):.5g}"),
        message=message,
    )


# --------------------------------------------------------------------------------------------
# All-reduce


@dataclass
class GroupOutcome:
    """What a spawned group of ranks reported, and how it ended."""

    reports: dict[int, Any] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    timed_out: bool = False
    exitcodes: dict[int, int | None] = field(default_factory=dict)


def run_group(
    target: Callable[..., None],
    args: tuple[Any, ...],
    world_size: int,
    timeout_s: float,
    mp_context: Any,
) -> GroupOutcome:
    """Start ``target(rank, world_size, results, *args)`` in ``world_size`` processes and collect
    what each puts on ``results``: ``("ok", rank, payload)`` or ``("error", rank, message)``.

    Waits until every rank reported, a rank died without a word, or ``timeout_s`` passed; then
    every process still alive is terminated, and killed if it does not go.
    """
    results = mp_context.Queue()
    procs = [
        mp_context.Process(
            target=target, args=(rank, world_size, results, *args), daemon=True, name=f"rank{rank}"
        )
        for rank in range(world_size)
    ]
    outcome = GroupOutcome()
    deadline = time.monotonic() + timeout_s
    failed_at = math.inf
    try:
        for proc in procs:
            proc.start()
        while len(outcome.reports) + len(outcome.errors) < world_size:
            if outcome.errors:
                # The others may sit in a collective the failed rank never joins: a short wait
                # for their word, not the whole deadline.
                deadline = min(deadline, failed_at + TERMINATE_GRACE_S)
            left = deadline - time.monotonic()
            if left <= 0:
                outcome.timed_out = not outcome.errors
                break
            try:
                status, rank, payload = results.get(timeout=min(left, 0.25))
            except queue_module.Empty:
                if _silent_death(procs, outcome):
                    break
                continue
            if status == "ok":
                outcome.reports[int(rank)] = payload
            else:
                outcome.errors[int(rank)] = str(payload)
                failed_at = min(failed_at, time.monotonic())
    finally:
        # Ranks that all reported are tearing down their group: let them finish cleanly.
        finished = len(outcome.reports) == world_size
        _stop(procs, TERMINATE_GRACE_S if finished else 0.0)
        for rank, proc in enumerate(procs):
            outcome.exitcodes[rank] = proc.exitcode
        results.close()
        results.cancel_join_thread()
    return outcome


def _silent_death(procs: list[Any], outcome: GroupOutcome) -> bool:
    """Record ranks that exited without reporting; True when the group cannot finish."""
    dead = False
    for rank, proc in enumerate(procs):
        heard = rank in outcome.reports or rank in outcome.errors
        # A rank that exited cleanly may still have its message in the pipe: only a crash
        # (a non-zero or signal exit code) is final.
        if not heard and proc.exitcode not in (None, 0):
            outcome.errors[rank] = f"rank {rank} exited with code {proc.exitcode}"
            dead = True
    return dead


def _stop(procs: list[Any], wait_s: float) -> None:
    """Give the ranks ``wait_s`` to exit on their own, then terminate, then kill them."""
    procs = [proc for proc in procs if proc.pid is not None]  # a failed start leaves some unborn
    deadline = time.monotonic() + wait_s
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + TERMINATE_GRACE_S
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.kill()
            proc.join(TERMINATE_GRACE_S)


def all_reduce_worker(
    rank: int,
    world_size: int,
    results: Any,
    backend: str,
    init_method: str,
    size_bytes: int,
    iters: int,
    trials: int,
    warmup: int,
    timeout_s: float,
) -> None:
    """One rank: join the group, all-reduce a float tensor ``warmup`` times, then ``trials``
    bursts of ``iters``; put the seconds per all-reduce of each burst on ``results``."""
    try:
        import torch
        import torch.distributed as dist

        nccl = backend == "nccl"
        if nccl:
            torch.cuda.set_device(rank)
            device = torch.device("cuda", rank)
        else:
            torch.set_num_threads(1)  # gloo ranks share the CPU with each other
            device = torch.device("cpu")
        dist.init_process_group(
            backend,
            init_method=init_method,
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout_s),
        )
        try:
            # Zeros: a sum of zeros stays finite however many times it is reduced.
            tensor = torch.zeros(max(1, size_bytes // 4), dtype=torch.float32, device=device)
            for _ in range(warmup):
                dist.all_reduce(tensor)
            times = [
                _all_reduce_burst(torch, dist, tensor, iters, nccl, rank) for _ in range(trials)
            ]
        finally:
            dist.destroy_process_group()
        results.put(("ok", rank, times))
    except (RuntimeError, ValueError, OSError, ImportError) as exc:
        # torch.distributed raises DistBackendError/DistError, both RuntimeErrors.
        results.put(("error", rank, describe(exc)))


def _all_reduce_burst(
    torch: Any, dist: Any, tensor: Any, iters: int, nccl: bool, rank: int
) -> float:
    """Seconds per all-reduce over a burst of ``iters``, the ranks lined up first (untimed)."""
    if nccl:
        dist.barrier(device_ids=[rank])
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dist.all_reduce(tensor)
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0 / iters
    dist.barrier()
    begin = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor)  # synchronous on the CPU with gloo
    return (time.perf_counter() - begin) / iters


def _all_reduce_setup(case: CaseSpec, ctx: BenchContext) -> tuple[str, int, int] | str:
    """(backend, world size, bytes), or why the case cannot run here."""
    torch = ctx.torch
    cuda = torch.cuda
    params = case.params
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return "this torch build has no torch.distributed"
    backend = str(params.get("backend") or ("nccl" if cuda.is_available() else "gloo"))
    if backend == "nccl":
        if not cuda.is_available():
            return "no CUDA GPU is visible to torch"
        if not dist.is_nccl_available():
            return "this torch build has no NCCL"
        count = int(cuda.device_count())
        world = int(params.get("world_size", count))
        if world < 2:
            return f"needs at least 2 GPUs; torch sees {count}"
        if world > count:
            return f"world_size {world} is more than the {count} GPU(s) torch sees"
        requested = int(params.get("size_bytes", DEFAULT_NCCL_BYTES))
        free = _min_free(cuda, world)
        # The tensor plus NCCL's own buffers, within a quarter of the tightest GPU's free memory.
        size = fit_size(requested, lambda s: s, None if free is None else free * 0.25, MIB)
        return backend, world, size
    if backend == "gloo":
        if not dist.is_gloo_available():
            return "this torch build has no gloo"
        world = int(params.get("world_size", 2))
        if world < 2:
            return f"world_size {world}: an all-reduce needs at least 2 ranks"
        return backend, world, int(params.get("size_bytes", DEFAULT_GLOO_BYTES))
    return f"unknown all-reduce backend {backend!r} (nccl or gloo)"


def all_reduce(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    """All-reduce (sum) of a float32 tensor across ``world_size`` spawned ranks (default: every
    visible GPU with NCCL, 256 MiB; gloo: 2 ranks, 1 MiB); rank 0's median over the bursts gives
    algbw and busbw. Parameters: backend, world_size, size_bytes, iters, trials, warmup,
    timeout_s."""
    setup = _all_reduce_setup(case, ctx)
    if isinstance(setup, str):
        yield failed(case, setup, BenchStatus.SKIPPED)
        return
    backend, world, size = setup
    size = max(4, size // 4 * 4)
    torch = ctx.torch
    params = case.params
    iters = max(1, int(params.get("iters", DEFAULT_ITERS)))
    trials = max(1, int(params.get("trials", DEFAULT_TRIALS)))
    warmup = max(0, int(params.get("warmup", DEFAULT_WARMUP_ITERS)))
    timeout_s = float(params.get("timeout_s", group_timeout(case.seconds)))
    gpus = range(world) if backend == "nccl" else range(0)
    for index in gpus:
        yield from telemetry_samples(index, case.id, "before", torch)
    if backend == "nccl":
        # Cached blocks of earlier cases in this process would crowd NCCL's buffers out.
        with contextlib.suppress(RuntimeError):
            torch.cuda.empty_cache()
    with tempfile.TemporaryDirectory(prefix="hwadvisor-allreduce-") as folder:
        init_method = (Path(folder) / "rendezvous").as_uri()
        outcome = run_group(
            all_reduce_worker,
            (backend, init_method, size, iters, trials, warmup, timeout_s),
            world,
            timeout_s,
            torch.multiprocessing.get_context("spawn"),
        )
    for index in gpus:
        yield from telemetry_samples(index, case.id, "after", torch)
    yield all_reduce_result(backend, world, size, outcome, timeout_s)


def all_reduce_result(
    backend: str, world: int, size: int, outcome: GroupOutcome, timeout_s: float
) -> AllReduce:
    """The :class:`AllReduce` record of a group's outcome: rank 0's median burst, or why not."""
    base: dict[str, Any] = {"backend": backend, "world_size": world, "size_bytes": size}
    if outcome.errors:
        rank = min(outcome.errors)
        message = f"rank {rank}: {outcome.errors[rank]}"
        return AllReduce(**base, status=BenchStatus.FAILED, message=message)
    if outcome.timed_out:
        message = (
            f"the all-reduce group did not finish in {timeout_s:g} s "
            f"({len(outcome.reports)} of {world} ranks reported); its processes were stopped"
        )
        return AllReduce(**base, status=BenchStatus.TIMEOUT, message=message)
    times = [t for t in outcome.reports.get(0, []) if isinstance(t, float) and t > 0]
    if not times:
        return AllReduce(**base, status=BenchStatus.FAILED, message="rank 0 reported no time")
    algbw, busbw = all_reduce_bandwidth(size, statistics.median(times), world)
    return AllReduce(**base, algbw_gbs=float(f"{algbw:.5g}"), busbw_gbs=float(f"{busbw:.5g}"))


CASES: dict[str, CaseFunction] = {"gpu_p2p": gpu_p2p, "all_reduce": all_reduce}
