"""Apple GPU (MPS) cases: matmul, a device copy (the unified memory's bandwidth as the GPU sees
it: what decode on Apple silicon reads its weights at) and the small-CNN training step.

MPS has no CUDA events: each burst ends with ``torch.mps.synchronize()`` and is timed on the
host clock (without it MPS timings come out ~10× too fast, pytorch/pytorch#152199).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from hwadvisor.model.bench import BenchStatus
from hwadvisor.probes.bench.harness import SyncedBurst, left, measurement, settings, sig, timed
from hwadvisor.probes.bench.models import (
    SMALL_CNN_INPUT,
    small_cnn,
    small_cnn_optimizer,
    small_cnn_train_flops_per_sample,
)
from hwadvisor.probes.bench.plan import BenchContext, CaseDef, CaseSpec, failed

DEFAULT_N = 2048
DEFAULT_BATCH = 32
DEFAULT_COPY_BYTES = 256 * 1024 * 1024
_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _mps(torch: Any) -> tuple[Callable[[], None] | None, str]:
    """MPS's synchronize function, or None and why it cannot be used."""
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is None or not mps.is_available():
        return None, "MPS is not available (needs macOS 12.3+ on Apple silicon and a native Python)"
    return torch.mps.synchronize, ""


def matmul_on(
    case: CaseSpec, ctx: BenchContext, device: str, sync: Callable[[], None]
) -> BaseModel:
    """Square matmul at ``case.precision`` on ``device``, GFLOP/s."""
    torch = ctx.torch
    start = time.perf_counter()
    dtype = getattr(torch, _DTYPES[case.precision or "fp32"])
    n = int(case.params.get("n", DEFAULT_N))
    torch.manual_seed(ctx.seed)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)
    burst = SyncedBurst(lambda: torch.mm(a, b, out=c), sync)
    timing = timed(case, burst, left(case, start))
    return measurement(
        case,
        timing,
        2.0 * n**3 / 1e9,
        unit="GFLOP/s",
        start=start,
        burst=burst,
        params={"n": n},
        settings=settings(torch, dtype=str(dtype)),
    )


def copy_on(case: CaseSpec, ctx: BenchContext, device: str, sync: Callable[[], None]) -> BaseModel:
    """A buffer copied on ``device``: GB/s counting the bytes read and written (as the CUDA
    device copy), the figure the serving model reads unified memory's bandwidth from."""
    torch = ctx.torch
    start = time.perf_counter()
    nbytes = int(case.params.get("bytes", DEFAULT_COPY_BYTES))
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    src.fill_(1)
    dst = torch.empty_like(src)
    burst = SyncedBurst(lambda: dst.copy_(src), sync)
    timing = timed(case, burst, left(case, start))
    return measurement(
        case,
        timing,
        2.0 * nbytes / 1e9,
        unit="GB/s",
        start=start,
        burst=burst,
        params={"bytes": nbytes},
        settings=settings(torch, dtype="torch.uint8"),
    )


def train_step_on(
    case: CaseSpec, ctx: BenchContext, device: str, sync: Callable[[], None]
) -> BaseModel:
    """The small CNN's training step on ``device``, samples/s."""
    torch = ctx.torch
    start = time.perf_counter()
    batch = int(case.params.get("batch", DEFAULT_BATCH))
    torch.manual_seed(ctx.seed)
    model = small_cnn(torch).to(device)
    optimizer = small_cnn_optimizer(torch, model)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    x = torch.randn(batch, *SMALL_CNN_INPUT, device=device)
    y = torch.randint(0, 2, (batch, 1), device=device).float()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        optimizer.step()

    burst = SyncedBurst(step, sync)
    timing = timed(case, burst, left(case, start))
    result = measurement(
        case,
        timing,
        float(batch),
        unit="samples/s",
        start=start,
        burst=burst,
        params={"batch": batch},
        settings=settings(torch, dtype="fp32"),
    )
    if result.best and result.median:
        flop = small_cnn_train_flops_per_sample()
        result.params.update(
            ms_per_step=sig(1000.0 * batch / result.median),
            train_gflops_per_s=sig(result.best * flop / 1e9),
        )
    return result


def mps_matmul(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    sync, why = _mps(ctx.torch)
    if sync is None:
        yield failed(case, why, BenchStatus.SKIPPED)
        return
    yield matmul_on(case, ctx, "mps", sync)


def mps_copy(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    sync, why = _mps(ctx.torch)
    if sync is None:
        yield failed(case, why, BenchStatus.SKIPPED)
        return
    yield copy_on(case, ctx, "mps", sync)


def mps_train_step(case: CaseSpec, ctx: BenchContext) -> Iterator[BaseModel]:
    sync, why = _mps(ctx.torch)
    if sync is None:
        yield failed(case, why, BenchStatus.SKIPPED)
        return
    yield train_step_on(case, ctx, "mps", sync)


CASES = {"mps_matmul": mps_matmul, "mps_copy": mps_copy, "mps_train_step": mps_train_step}

PLAN: tuple[CaseDef, ...] = (
    CaseDef("mps_matmul", "matmul", "mps", 1.5, precision="fp32"),
    CaseDef("mps_matmul", "matmul", "mps", 1.5, precision="fp16"),
    CaseDef("mps_copy", "device_copy", "mps", 1.0),
    CaseDef("mps_train_step", "train_step", "mps", 2.0, precision="fp32"),
)
