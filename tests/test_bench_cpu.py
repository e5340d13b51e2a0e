"""The CPU benchmark cases, run for real with tiny sizes and shares through ``run_plan``.

Figures are not asserted (speed belongs to ``benchmarks/``); what is asserted is that every
result is sane: status, unit, finite positive rates, the sizes and settings actually used.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from hwadvisor.model.bench import BenchStatus, Crossover, Measurement
from hwadvisor.probes.bench import cpu
from hwadvisor.probes.bench.models import (
    SMALL_CNN_INPUT,
    small_cnn,
    small_cnn_forward_flops_per_sample,
    small_cnn_optimizer,
    small_cnn_parameters,
    small_cnn_train_flops_per_sample,
)
from hwadvisor.probes.bench.plan import BenchContext, BenchPlan, CaseSpec, run_plan
from tests.helpers import load

torch = pytest.importorskip("torch")

THREADS = 2


@pytest.fixture(autouse=True)
def _quiet_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases see idle CPUs, whatever else runs on the test machine (load: test_bench_load)."""
    load.install(monkeypatch, load.quiet(THREADS))


@pytest.fixture(autouse=True)
def _keep_torch_threads() -> Iterator[None]:
    """run_plan sets torch's thread count for the process; give it back afterwards."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def spec(
    kind: str, case: str, precision: str | None = "fp32", seconds: float = 0.1, **params: Any
) -> CaseSpec:
    return CaseSpec(
        id=f"cpu.{case}.{precision}.{len(params)}",
        title=case,
        kind=kind,
        case=case,
        precision=precision,
        seconds=seconds,
        params=params,
    )


def run_cases(*cases: CaseSpec) -> list[dict[str, Any]]:
    plan = BenchPlan(threads=THREADS, seed=0, cases=list(cases))
    return list(run_plan(plan.model_dump(mode="json")))


def measurements(events: list[dict[str, Any]]) -> list[Measurement]:
    return [
        Measurement.model_validate(e["data"])
        for e in events
        if e["event"] == "result" and e["kind"] == "measurement"
    ]


def one(case: CaseSpec) -> Measurement:
    (m,) = measurements(run_cases(case))
    return m


def assert_sane(m: Measurement, unit: str) -> None:
    assert m.status == BenchStatus.OK, m.message
    assert m.device == "cpu"
    assert m.unit == unit
    assert m.best is not None and m.median is not None and m.spread is not None
    assert all(math.isfinite(v) for v in (m.best, m.median, m.spread))
    assert m.best >= m.median > 0
    assert m.blocks >= 1 and m.reps_per_block >= 1
    assert m.seconds > 0
    assert m.first_call_seconds is not None and m.first_call_seconds > 0
    assert m.settings["threads"] == str(THREADS)
    assert "cpu_capability" in m.settings
    # The JSON contract: strict, no NaN or Infinity anywhere.
    Measurement.model_validate_json(m.model_dump_json())


def test_fp32_matmul() -> None:
    m = one(spec("cpu_matmul", "matmul", n=128))
    assert_sane(m, "GFLOP/s")
    assert m.precision == "fp32"
    assert m.settings["dtype"] == "fp32"
    assert m.settings["float32_matmul_precision"] == torch.get_float32_matmul_precision()
    if m.params["n"] == 128:
        assert m.message is None
    else:  # a heavily loaded machine: the probe was too slow for n=128 in 0.1 s, and it says so
        assert m.message is not None and "size reduced from 128" in m.message


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_non_native_low_precision_uses_a_tiny_size_and_says_emulated(precision: str) -> None:
    m = one(spec("cpu_matmul", "matmul", precision, seconds=0.15, n=1024, native=False))
    assert_sane(m, "GFLOP/s")
    assert int(m.params["n"]) <= cpu.EMULATED_MATMUL_N
    assert m.message is not None
    assert "emulated" in m.message and f"no native {precision}" in m.message
    assert "GFLOP/s" in m.message
    assert m.settings["native"].startswith("no")
    assert m.settings["dtype"] == precision


def test_native_claim_is_checked_and_the_size_shrunk_to_fit_the_share() -> None:
    # fp32 at n=4096 takes ~1 s per call on a small machine: far too long for 0.1 s.
    m = one(spec("cpu_matmul", "matmul", "fp32", seconds=0.1, n=4096))
    assert_sane(m, "GFLOP/s")
    assert int(m.params["n"]) < 4096
    assert m.message is not None and "size reduced from 4096" in m.message
    assert m.seconds < 2.0


def test_without_the_parents_word_torch_is_asked() -> None:
    m = one(spec("cpu_matmul", "matmul", "bf16", seconds=0.1, n=64))
    assert_sane(m, "GFLOP/s")
    assert "torch oneDNN check" in m.settings["native"] or "assumed" in m.settings["native"]


def test_fit_matmul_n() -> None:
    assert cpu.fit_matmul_n(1024, 200.0, 1.0) == 1024  # 10.7 ms per call ≤ 100 ms
    small = cpu.fit_matmul_n(1024, 1.0, 0.3)  # 1 GFLOP/s, 30 ms per call at most
    assert small % 16 == 0 and 2 * small**3 / 1e9 <= 0.03
    assert cpu.fit_matmul_n(1024, 1e-9, 0.1) == cpu.MIN_MATMUL_N


def test_conv2d() -> None:
    m = one(spec("cpu_conv2d", "conv2d", batch=1))
    assert_sane(m, "GFLOP/s")
    assert m.params == {"batch": 1, "channels": 64, "size": 56, "kernel": 3}
    assert m.settings["grad"] == "off"
    assert "malloc_mmap_threshold" in m.settings


def test_fit_batch() -> None:
    assert cpu.fit_batch(8, 0.1, 1.0, 0.5) == 8
    assert cpu.fit_batch(8, 1.0, 1.0, 0.25) == 2
    assert cpu.fit_batch(8, 100.0, 1.0, 0.1) == 1


def test_slow_conv_and_train_step_get_a_smaller_batch_within_their_share() -> None:
    conv = one(spec("cpu_conv2d", "conv2d", seconds=0.05, batch=64))
    assert_sane(conv, "GFLOP/s")
    assert int(conv.params["batch"]) < 64
    assert conv.message is not None and "batch reduced from 64" in conv.message
    step = one(spec("cpu_train_step", "train_step", seconds=0.03, batch=16))
    assert_sane(step, "samples/s")
    assert int(step.params["batch"]) < 16
    assert step.message is not None and "batch reduced from 16" in step.message


def test_triad() -> None:
    m = one(spec("cpu_triad", "triad", None, elements=3 * 2**20 + 5))  # not a chunk multiple
    assert_sane(m, "GB/s")
    assert m.precision is None
    assert m.params["elements"] == 3 * 2**20 + 5
    assert m.params["bytes"] == 12 * (3 * 2**20 + 5)


def test_train_step() -> None:
    # batch 1: a loaded machine cannot make the case shrink it further
    m = one(spec("cpu_train_step", "train_step", seconds=0.3, batch=1))
    assert_sane(m, "samples/s")
    assert m.params["batch"] == 1
    assert m.best is not None
    assert m.median is not None
    assert m.params["ms_per_step"] == pytest.approx(1000 / m.median, rel=1e-3)
    assert m.params["requested_batch"] == 1
    assert float(m.params["train_gflops_per_s"]) > 0
    assert m.settings["optimizer"] == "SmallCnnAdam"


def test_sweep_yields_one_crossover_with_every_size() -> None:
    events = run_cases(spec("cpu_sweep", "crossover", seconds=0.5, sizes=[128, 32, 64]))
    results = [e for e in events if e["event"] == "result"]
    assert [e["kind"] for e in results] == ["crossover", "cpu_load"]
    crossover = Crossover.model_validate(results[0]["data"])
    assert crossover.device == "cpu"
    assert [p.n for p in crossover.points] == [32, 64, 128]
    assert crossover.points[0].cpu_gflops is not None  # the smallest size always runs
    for point in crossover.points:
        assert point.gpu_gflops is None
        if point.cpu_gflops is None:  # only on a heavily loaded machine, and then it says so
            assert crossover.note is not None and f"n={point.n}" in crossover.note
        else:
            assert point.cpu_gflops > 0


def test_sweep_skips_a_size_that_cannot_fit() -> None:
    events = run_cases(spec("cpu_sweep", "crossover", seconds=0.05, sizes=[64, 4096]))
    crossover = Crossover.model_validate(next(e for e in events if e["event"] == "result")["data"])
    by_n = {p.n: p.cpu_gflops for p in crossover.points}
    assert by_n[64] is not None and by_n[4096] is None
    assert crossover.note is not None and "skipped n=4096" in crossover.note


def test_a_failing_case_becomes_a_failed_measurement_and_the_next_still_runs() -> None:
    events = run_cases(
        spec("cpu_triad", "triad", None, elements=-5),
        spec("cpu_matmul", "matmul", "fp8"),
        spec("cpu_matmul", "matmul", n=64),
    )
    shown = [e["event"] for e in events if e.get("kind") != "cpu_load"]
    assert shown == ["start", "result", "end"] * 3
    bad, unsupported, good = measurements(events)
    assert bad.status == BenchStatus.FAILED
    assert bad.message is not None and "ValueError" in bad.message
    assert unsupported.status == BenchStatus.SKIPPED
    assert good.status == BenchStatus.OK


def test_shared_results_for_later_cases() -> None:
    ctx = BenchContext(torch=torch, threads=THREADS, seed=0)
    list(cpu.cpu_matmul(spec("cpu_matmul", "matmul", n=64), ctx))
    list(cpu.cpu_sweep(spec("cpu_sweep", "crossover", sizes=[32]), ctx))
    assert ctx.shared["cpu.matmul.fp32.gflops"] > 0
    assert set(ctx.shared["cpu.sweep.gflops"]) == {32}


def test_registry_keys() -> None:
    assert set(cpu.CASES) == {
        "cpu_matmul",
        "cpu_conv2d",
        "cpu_triad",
        "cpu_train_step",
        "cpu_sweep",
    }


def test_small_cnn_shape_parameters_and_flops() -> None:
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = small_cnn(torch)
    assert SMALL_CNN_INPUT == (3, 150, 150)
    assert sum(p.numel() for p in model.parameters()) == small_cnn_parameters() == 3_453_121
    x = torch.randn(2, *SMALL_CNN_INPUT)
    with FlopCounterMode(display=False) as forward:
        out = model(x)
    assert out.shape == (2, 1)
    assert forward.get_total_flops() == 2 * small_cnn_forward_flops_per_sample()
    with FlopCounterMode(display=False) as step:
        model(x).sum().backward()
    assert step.get_total_flops() == pytest.approx(2 * small_cnn_train_flops_per_sample(), rel=1e-3)


def test_hand_written_adam_matches_torch_optim() -> None:
    import copy

    torch.manual_seed(0)
    mine = small_cnn(torch)
    theirs = copy.deepcopy(mine)
    opt_mine = small_cnn_optimizer(torch, mine)
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=1e-4)
    x = torch.randn(2, *SMALL_CNN_INPUT)
    y = torch.tensor([[1.0], [0.0]])
    loss = torch.nn.BCEWithLogitsLoss()
    for _ in range(3):
        for model, opt in ((mine, opt_mine), (theirs, opt_theirs)):
            opt.zero_grad()
            loss(model(x), y).backward()
            opt.step()
    for a, b in zip(mine.parameters(), theirs.parameters(), strict=True):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-7)
