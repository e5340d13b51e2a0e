"""Apple GPU (MPS) cases: skipped where MPS is absent; their timing logic, run on the CPU."""

from __future__ import annotations

from typing import Any

import pytest

from hwadvisor.benchrun import plan_cases
from hwadvisor.model.bench import BenchStatus, Measurement
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import Profile, ToolInfo, TorchInfo
from hwadvisor.probes.bench.mps import SyncedBurst, copy_on, matmul_on, mps_matmul, train_step_on
from hwadvisor.probes.bench.plan import BenchContext, CaseSpec

torch = pytest.importorskip("torch")


def _ctx() -> BenchContext:
    return BenchContext(torch=torch, threads=1, seed=0)


def _case(kind: str, case: str, **params: Any) -> CaseSpec:
    return CaseSpec(
        id=f"mps.{case}",
        title=case,
        kind=kind,
        case=case,
        device="mps",
        precision="fp32",
        seconds=0.2,
        params=params,
    )


def test_synced_burst_synchronizes_once_per_burst() -> None:
    calls: list[str] = []
    burst = SyncedBurst(lambda: calls.append("op"), lambda: calls.append("sync"))
    burst(3)
    assert calls == ["op", "op", "op", "sync"]
    assert burst.first_call is not None


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="MPS is available here")
def test_without_mps_the_case_is_skipped_with_the_reason() -> None:
    (result,) = mps_matmul(_case("mps_matmul", "matmul"), _ctx())
    assert isinstance(result, Measurement)
    assert result.status == BenchStatus.SKIPPED
    assert "MPS is not available" in (result.message or "")


def test_matmul_and_train_step_logic_on_the_cpu() -> None:
    syncs: list[int] = []
    m = matmul_on(_case("mps_matmul", "matmul", n=64), _ctx(), "cpu", lambda: syncs.append(1))
    assert isinstance(m, Measurement) and m.status == BenchStatus.OK
    assert m.unit == "GFLOP/s" and m.best and m.best > 0 and m.params["n"] == 64
    assert syncs  # every burst ended with a synchronize
    t = train_step_on(_case("mps_train_step", "train_step", batch=2), _ctx(), "cpu", lambda: None)
    assert isinstance(t, Measurement) and t.status == BenchStatus.OK
    assert t.unit == "samples/s" and t.params["batch"] == 2


def test_plan_adds_mps_cases_when_available() -> None:
    p = Profile(tool=ToolInfo(version="t"), created_utc="2026-01-01T00:00:00Z")
    p.cpu.usable_cpus = fact(8, Source.DERIVED)
    p.frameworks.torch = TorchInfo(
        installed=True,
        mps_available=fact(True, Source.TORCH),
        cuda_available=fact(False, Source.TORCH),
    )
    plan = plan_cases(p)
    mps = [c for c in plan.cases if c.device == "mps"]
    assert {c.kind for c in mps} == {"mps_matmul", "mps_copy", "mps_train_step"}
    assert all(c.title.startswith("Apple GPU") for c in mps)


def test_copy_logic_on_the_cpu_counts_bytes_read_and_written() -> None:
    syncs: list[int] = []
    case = _case("mps_copy", "device_copy", bytes=1 << 20)
    m = copy_on(case, _ctx(), "cpu", lambda: syncs.append(1))
    assert isinstance(m, Measurement) and m.status == BenchStatus.OK
    assert m.unit == "GB/s" and m.best and m.best > 0 and m.params["bytes"] == 1 << 20
    assert syncs


def test_an_apple_scan_with_a_gpu_copy_serves_from_unified_memory() -> None:
    """On Apple silicon the GPU decodes: its copy (not the CPU cores' triad, often half of it)
    sizes the machine, as unified memory with the efficiency fitted on Apple rows."""
    from hwadvisor.advise.serving import ServeRequest, serve_advice
    from hwadvisor.model.bench import Benchmarks

    def profile(copy: float | None) -> Profile:
        p = Profile(tool=ToolInfo(version="t"), created_utc="2026-01-01T00:00:00Z")
        p.platform.os = fact("Darwin", Source.DERIVED)
        p.memory.total_bytes = fact(64 * 2**30, Source.DERIVED)
        rows = [
            Measurement(case="triad", device="cpu", status=BenchStatus.OK, unit="GB/s", best=100.0),
            Measurement(case="matmul", device="cpu", precision="fp32", status=BenchStatus.OK,
                        unit="GFLOP/s", best=800.0),
        ]  # fmt: skip
        if copy is not None:
            rows.append(Measurement(case="device_copy", device="mps", status=BenchStatus.OK,
                                    unit="GB/s", best=copy))  # fmt: skip
            rows.append(Measurement(case="matmul", device="mps", precision="fp16",
                                    status=BenchStatus.OK, unit="GFLOP/s",
                                    best=9000.0))  # fmt: skip
        p.benchmarks = Benchmarks(measurements=rows)
        return p

    request = ServeRequest(model="llama-3.1-8b")
    cpu_only = serve_advice(profile(None), request).this_machine
    with_gpu = serve_advice(profile(350.0), request).this_machine
    assert cpu_only is not None and with_gpu is not None
    assert "measured GPU copy 350 GB/s" in with_gpu.basis and "unified" not in cpu_only.basis
    assert cpu_only.decode_tok_s and with_gpu.decode_tok_s
    assert with_gpu.decode_tok_s > 3 * cpu_only.decode_tok_s
