"""GPU and multi-GPU benchmark cases, NVML telemetry, and the all-reduce process group.

Without a GPU the cases run on "CPU-as-CUDA": the real (CPU) torch with every ``cuda`` device
mapped to the CPU and a fake ``torch.cuda`` (events on the host clock, memory figures, peer
access, device properties), so that each case's control flow, sizing, out-of-memory halving,
settings and records are exercised for real. The all-reduce runs real processes with gloo.
Tests marked ``gpu`` run every case on a real CUDA GPU and check the figures make sense.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import multiprocessing
import os
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hwadvisor.model.bench import (
    AllReduce,
    BenchDevice,
    BenchStatus,
    Crossover,
    CrossoverPoint,
    Measurement,
    PeerCopy,
    TelemetrySample,
)
from hwadvisor.probes.bench import gpu, multi, telemetry
from hwadvisor.probes.bench.plan import BenchContext, CaseSpec, registry
from hwadvisor.probes.bench.timing import measure
from tests.fakes.fake_pynvml import (
    NVML_CLOCK_MEM,
    NVML_CLOCK_SM,
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_NOT_SUPPORTED,
    FakeGpu,
    err,
)
from tests.fakes.fake_pynvml_clocks import make_fake_pynvml_clocks
from tests.fakes.fake_torch import GIB, device_props

MIB = 1024**2


# --------------------------------------------------------------------------------------------
# Fakes: CUDA events on a clock, and real torch with "cuda" mapped to the CPU


class FakeEvent:
    """``torch.cuda.Event``: ``record`` reads the owner's clock, ``elapsed_time`` is in ms."""

    def __init__(self, owner: FakeCuda, **_: Any) -> None:
        self.owner = owner
        self.at: float | None = None

    def record(self, stream: Any = None) -> None:
        self.owner.log.append("record")
        self.at = self.owner.clock()

    def synchronize(self) -> None:
        self.owner.log.append("event.synchronize")

    def elapsed_time(self, end: FakeEvent) -> float:
        assert self.at is not None and end.at is not None, "elapsed_time of an unrecorded event"
        return (end.at - self.at) * 1000.0


class FakeCuda:
    """What the cases use of ``torch.cuda``; ``log`` records events and synchronizes."""

    def __init__(
        self,
        *,
        devices: int = 1,
        available: bool = True,
        clock: Callable[[], float] = time.perf_counter,
        free: int = 64 * GIB,
        capability: tuple[int, int] = (9, 0),
        peer: Callable[[int, int], bool] = lambda i, j: True,
    ) -> None:
        self.available = available
        self.clock = clock
        self.free = free
        self.peer = peer
        self.log: list[str] = []
        self.current = 0
        self.props = []
        for index in range(devices):
            props = device_props(
                name="NVIDIA H100 80GB HBM3",
                major=capability[0],
                minor=capability[1],
                total_memory=80 * GIB,
                uuid=f"00000000-0000-0000-0000-00000000000{index}",
                pci=(0, 0x17 + index, 0),
            )
            props.L2_cache_size = 64 * 1024  # a small flush buffer: these runs are on the CPU
            self.props.append(props)

    def is_available(self) -> bool:
        return self.available

    def device_count(self) -> int:
        return len(self.props) if self.available else 0

    def set_device(self, index: int) -> None:
        self.current = index

    def current_device(self) -> int:
        return self.current

    @contextlib.contextmanager
    def device(self, index: int) -> Iterator[None]:
        saved, self.current = self.current, index
        try:
            yield
        finally:
            self.current = saved

    def get_device_properties(self, index: int) -> Any:
        return self.props[index]

    def mem_get_info(self, index: int | None = None) -> tuple[int, int]:
        return self.free, 80 * GIB

    def synchronize(self, device: Any = None) -> None:
        self.log.append("cuda.synchronize")

    def Event(self, **options: Any) -> FakeEvent:  # torch's name
        return FakeEvent(self, **options)

    def empty_cache(self) -> None:
        self.log.append("empty_cache")

    def is_bf16_supported(self, including_emulation: bool = True) -> bool:
        return True

    def can_device_access_peer(self, i: int, j: int) -> bool:
        return self.peer(i, j)


class CpuAsCuda(types.ModuleType):
    """The real torch, with a fake ``cuda`` and every ``cuda`` device mapped to the CPU.

    Factories drop ``pin_memory`` (a CPU build has no pinned allocator), record the bytes asked
    for, and raise torch's "CUDA out of memory" RuntimeError above ``oom_above`` bytes.
    """

    def __init__(self, real: Any, cuda: FakeCuda, oom_above: int | None = None) -> None:
        super().__init__("torch")
        self._real = real
        self.cuda = cuda
        self.oom_above = oom_above
        self.allocations: list[int] = []
        for name in ("randn", "empty", "zeros", "ones", "randint"):
            setattr(self, name, self._factory(name))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def device(self, *args: Any) -> Any:
        if args and str(args[0]).startswith("cuda"):
            return self._real.device("cpu")
        return self._real.device(*args)

    def _factory(self, name: str) -> Callable[..., Any]:
        real = getattr(self._real, name)

        def make(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("pin_memory", None)
            if str(kwargs.get("device", "cpu")).startswith("cuda"):
                kwargs["device"] = "cpu"
            if name != "randint":
                dims = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
                numel = math.prod(int(d) for d in dims)
                size = numel * kwargs.get("dtype", self._real.float32).itemsize
                self.allocations.append(size)
                if self.oom_above is not None and size > self.oom_above:
                    raise RuntimeError(
                        f"CUDA out of memory. Tried to allocate {size / GIB:.2f} GiB "
                        "(GPU 0; 79.11 GiB total capacity)"
                    )
            return real(*args, **kwargs)

        return make


@pytest.fixture
def real_torch() -> Any:
    return pytest.importorskip("torch")


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A fake NVML with two H100s at the fake CUDA devices' bus ids, cooler GPU first."""
    gpus = [
        FakeGpu(uuid="GPU-0", bus_id="00000000:17:00.0", temperature_c=40),
        FakeGpu(uuid="GPU-1", bus_id="00000000:18:00.0", temperature_c=50),
    ]
    fake = make_fake_pynvml_clocks(gpus, reasons={0: 0x4, 1: 0x0})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    telemetry.reset()
    yield fake
    telemetry.reset()


@pytest.fixture
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    telemetry.reset()
    yield
    telemetry.reset()


def ctx_for(torch: Any) -> BenchContext:
    return BenchContext(torch=torch, threads=1, seed=0)


def spec(kind: str, case: str, **fields: Any) -> CaseSpec:
    params = {"warmup_s": 0.01, **fields.pop("params", {})}
    return CaseSpec(
        id=f"cuda:0.{case}.{fields.get('precision') or '-'}.{fields.get('variant') or '-'}",
        title=case,
        kind=kind,
        case=case,
        device=fields.pop("device", "cuda:0"),
        seconds=fields.pop("seconds", 0.15),
        params=params,
        **fields,
    )


def run_case(case: CaseSpec, torch: Any) -> list[Any]:
    """The case's results, less the GPU identity a first case yields (tested on its own in
    tests/test_bench_gpu_flags.py)."""
    results = registry()[case.kind](case, ctx_for(torch))
    return [r for r in results if not isinstance(r, BenchDevice)]


def only(results: list[Any], kind: type) -> list[Any]:
    return [r for r in results if isinstance(r, kind)]


def assert_ok(m: Measurement) -> None:
    assert m.status == BenchStatus.OK, m.message
    for value in (m.best, m.median, m.spread, m.first_call_seconds):
        assert value is not None and math.isfinite(value)
    assert m.best is not None and m.best > 0
    assert m.blocks >= 1 and m.reps_per_block >= 1


# --------------------------------------------------------------------------------------------
# Event timing


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_event_block_times_the_burst_and_synchronizes_once_at_the_end() -> None:
    clock = ManualClock()
    cuda = FakeCuda(clock=clock)

    def step() -> None:
        cuda.log.append("step")
        clock.now += 0.002

    block = gpu.event_block(cuda, step)
    assert block(10) == pytest.approx(0.020)
    assert cuda.log == ["record"] + ["step"] * 10 + ["record", "event.synchronize"]


def test_event_block_enqueues_the_flush_before_the_start_event() -> None:
    clock = ManualClock()
    cuda = FakeCuda(clock=clock)

    def flush() -> None:
        cuda.log.append("flush")
        clock.now += 1.0  # a slow flush must not count

    def step() -> None:
        clock.now += 0.001

    assert gpu.event_block(cuda, step, before=flush)(5) == pytest.approx(0.005)
    assert cuda.log[:2] == ["flush", "record"]


def test_measure_over_event_blocks_never_synchronizes_the_device_between_reps() -> None:
    clock = ManualClock()
    cuda = FakeCuda(clock=clock)

    def step() -> None:
        clock.now += 0.0005

    timing = measure(gpu.event_block(cuda, step), max_seconds=1.0, warmup_s=0.01, clock=clock)
    assert timing.per_rep_seconds and all(
        t == pytest.approx(0.0005) for t in timing.per_rep_seconds
    )
    assert timing.reps_per_block == 60  # 30 ms blocks of 0.5 ms reps
    assert "cuda.synchronize" not in cuda.log
    blocks = timing.warmup_calls + timing.blocks
    assert cuda.log.count("event.synchronize") == blocks


def test_warmup_is_200_to_500_ms_unless_set() -> None:
    assert gpu.warmup_seconds(spec("gpu_matmul", "matmul", params={"warmup_s": 0.3})) == 0.3
    bare = CaseSpec(id="x", title="x", kind="gpu_matmul", case="matmul", seconds=0.1)
    assert gpu.warmup_seconds(bare) == gpu.WARMUP_MIN_S
    assert gpu.warmup_seconds(bare.model_copy(update={"seconds": 30.0})) == gpu.WARMUP_MAX_S


# --------------------------------------------------------------------------------------------
# Pure helpers


def test_fit_size_halves_to_the_memory_budget_but_not_below_the_floor() -> None:
    def need(n: int) -> float:
        return 3 * n * n * 4.0

    assert gpu.fit_size(8192, need, None, 256) == 8192
    assert gpu.fit_size(8192, need, 3 * 2048 * 2048 * 4, 256) == 2048
    assert gpu.fit_size(8192, need, 10.0, 256) == 256


def test_out_of_memory_is_recognized_by_type_or_text(real_torch: Any) -> None:
    assert gpu.is_oom(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert gpu.is_oom(real_torch.OutOfMemoryError("CUDA out of memory."))
    assert gpu.is_oom(RuntimeError("HIP out of memory. Tried to allocate 1.00 GiB"))
    assert not gpu.is_oom(RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED"))


def test_device_index() -> None:
    assert gpu.device_index("cuda") == 0
    assert gpu.device_index("cuda:3") == 3
    assert gpu.device_index("cpu") is None
    assert gpu.device_index("cuda:x") is None


def test_flop_counts() -> None:
    assert gpu.matmul_flops(8192) == 2 * 8192**3
    assert gpu.conv_flops(256, 64, 56) == 2 * 9 * 64 * 64 * 56 * 56 * 256


def points(*rows: tuple[int, float | None, float | None]) -> list[CrossoverPoint]:
    return [CrossoverPoint(n=n, cpu_gflops=c, gpu_gflops=g) for n, c, g in rows]


def test_crossover_is_the_smallest_n_from_which_the_gpu_stays_faster() -> None:
    rows = points((64, 50, 5), (128, 80, 40), (256, 100, 300), (512, 110, 2000))
    assert gpu.crossover_n(rows, "gpu_gflops") == 256


def test_crossover_ignores_an_early_win_the_gpu_does_not_keep() -> None:
    rows = points((64, 50, 60), (128, 80, 40), (256, 100, 300), (512, 110, 2000))
    assert gpu.crossover_n(rows, "gpu_gflops") == 256


def test_crossover_is_none_when_the_gpu_never_or_always_wins() -> None:
    never = points((64, 50, 5), (128, 80, 40), (256, 100, 90))
    always = points((64, 50, 60), (128, 80, 400))
    assert gpu.crossover_n(never, "gpu_gflops") is None
    assert gpu.crossover_n(always, "gpu_gflops") is None
    assert gpu.crossover_n([], "gpu_gflops") is None


def test_crossover_uses_only_points_with_both_figures_and_the_key_asked() -> None:
    rows = [
        CrossoverPoint(n=64, cpu_gflops=50, gpu_gflops=5, gpu_with_transfer_gflops=1),
        CrossoverPoint(n=128, cpu_gflops=None, gpu_gflops=400),
        CrossoverPoint(n=256, cpu_gflops=100, gpu_gflops=300, gpu_with_transfer_gflops=60),
        CrossoverPoint(n=512, cpu_gflops=110, gpu_gflops=900, gpu_with_transfer_gflops=200),
    ]
    assert gpu.crossover_n(rows, "gpu_gflops") == 256
    assert gpu.crossover_n(rows, "gpu_with_transfer_gflops") == 512
    with pytest.raises(ValueError):
        gpu.crossover_n(rows, "cpu_gflops")


def test_all_reduce_bus_bandwidth_follows_nccl_tests() -> None:
    size = 256 * MIB
    algbw, busbw = multi.all_reduce_bandwidth(size, 0.001, 2)
    assert algbw == pytest.approx(size / 0.001 / 1e9)  # GB/s = 1e9 bytes/s: 268.4
    assert busbw == pytest.approx(algbw)  # 2(n-1)/n = 1 for two ranks
    algbw8, busbw8 = multi.all_reduce_bandwidth(size, 0.001, 8)
    assert busbw8 == pytest.approx(algbw8 * 1.75)
    assert multi.all_reduce_bandwidth(size, 0.001, 1)[1] == 0.0
    with pytest.raises(ValueError):
        multi.all_reduce_bandwidth(size, 0.0, 2)


@pytest.mark.parametrize("share", [0.1, 1.0, 5.0, 20.0])
def test_group_deadline_comes_before_the_parents_limit(share: float) -> None:
    parent_limit = max(4.0 * share, share + 10.0)  # hwadvisor.benchrun's limit for a case
    assert multi.group_timeout(share) <= parent_limit - 3.0
    assert multi.group_timeout(share) >= share


# --------------------------------------------------------------------------------------------
# Telemetry


def test_throttle_reason_masks_decode_to_names() -> None:
    assert telemetry.decode_clock_reasons(0) == []
    assert telemetry.decode_clock_reasons(0x1) == ["gpu_idle"]
    assert telemetry.decode_clock_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert telemetry.decode_clock_reasons(0x1FF) == [
        "gpu_idle",
        "applications_clocks_setting",
        "sw_power_cap",
        "hw_slowdown",
        "sync_boost",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
        "display_clock_setting",
    ]
    assert telemetry.decode_clock_reasons(0x8 | 0x10000) == ["hw_slowdown", "unknown_0x10000"]
    with pytest.raises(ValueError):
        telemetry.decode_clock_reasons(-1)


def test_decoding_agrees_with_the_bindings_constants() -> None:
    pynvml = pytest.importorskip("pynvml")
    for bit, name in telemetry.CLOCK_EVENT_REASONS:
        camel = "".join(part.capitalize() for part in name.split("_"))
        constant = getattr(pynvml, f"nvmlClocksThrottleReason{camel}", None)
        assert constant is not None, f"nvmlClocksThrottleReason{camel} missing"
        assert constant == bit, name
        newer = getattr(pynvml, f"nvmlClocksEventReason{camel}", None)
        assert newer is None or newer == bit, name


def fake_torch_for_telemetry(cuda: FakeCuda) -> Any:
    return types.SimpleNamespace(cuda=cuda, version=types.SimpleNamespace(hip=None))


def test_sample_reads_clocks_temperature_power_and_reasons(fake_nvml: Any) -> None:
    found = telemetry.sample(
        0, "cuda:0.matmul.bf16", "before", torch=fake_torch_for_telemetry(FakeCuda(devices=2))
    )
    assert found == TelemetrySample(
        device="cuda:0",
        case="cuda:0.matmul.bf16",
        when="before",
        sm_clock_mhz=1980,
        memory_clock_mhz=2619,
        temperature_c=40,
        power_watts=71.5,
        throttle_reasons=["sw_power_cap"],
        utilization_percent=0,
        other_processes=0,
    )
    assert fake_nvml.init_calls == 1
    telemetry.sample(0, "c", "after", torch=fake_torch_for_telemetry(FakeCuda(devices=2)))
    assert fake_nvml.init_calls == 1  # NVML starts once per process


def test_sample_finds_the_gpu_by_pci_bus_id_when_torch_orders_differently(
    fake_nvml: Any,
) -> None:
    cuda = FakeCuda(devices=2)
    cuda.props.reverse()  # torch's cuda:0 is NVML's GPU 1 (CUDA_VISIBLE_DEVICES=1,0)
    found = telemetry.sample(0, "c", "before", torch=fake_torch_for_telemetry(cuda))
    assert found is not None and found.temperature_c == 50
    assert "nvmlDeviceGetHandleByIndex" not in fake_nvml.calls


def test_sample_falls_back_to_the_uuid(fake_nvml: Any) -> None:
    cuda = FakeCuda(devices=2)
    for props in cuda.props:
        del props.pci_bus_id  # torch before 2.2
    cuda.props[0].uuid = "1"  # torch prints the UUID without NVML's "GPU-"
    found = telemetry.sample(0, "c", "before", torch=fake_torch_for_telemetry(cuda))
    assert found is not None and found.temperature_c == 50


def test_sample_maps_by_index_only_when_nothing_reorders(
    fake_nvml: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = types.SimpleNamespace(name="GPU")  # no PCI ids, no UUID
    cuda = FakeCuda(devices=2)
    cuda.props = [bare, bare]
    torch = fake_torch_for_telemetry(cuda)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    found = telemetry.sample(1, "c", "before", torch=torch)
    assert found is not None and found.temperature_c == 50
    telemetry.reset()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert telemetry.sample(0, "c", "before", torch=torch) is None


def test_sample_uses_the_older_throttle_reasons_call(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = make_fake_pynvml_clocks(
        missing=["nvmlDeviceGetCurrentClocksEventReasons"], reasons={0: 0x20 | 0x1}
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    telemetry.reset()
    try:
        cuda = FakeCuda()
        found = telemetry.sample(0, "c", "after", torch=fake_torch_for_telemetry(cuda))
        assert found is not None
        assert found.throttle_reasons == ["gpu_idle", "sw_thermal_slowdown"]
        assert "nvmlDeviceGetCurrentClocksThrottleReasons" in fake.calls
    finally:
        telemetry.reset()


def test_unreadable_fields_are_null_and_the_rest_still_comes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus = [
        FakeGpu(
            power_usage_mw=err(NVML_ERROR_NOT_SUPPORTED),
            clocks_mhz={NVML_CLOCK_SM: 1410, NVML_CLOCK_MEM: err(NVML_ERROR_NOT_SUPPORTED)},
            temperature_c=0xFFFFFFFF,
        )
    ]
    fake = make_fake_pynvml_clocks(gpus, reasons={0: err(NVML_ERROR_NOT_SUPPORTED)})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    telemetry.reset()
    try:
        found = telemetry.sample(0, "c", "before", torch=fake_torch_for_telemetry(FakeCuda()))
    finally:
        telemetry.reset()
    assert found is not None
    assert found.sm_clock_mhz == 1410
    assert found.memory_clock_mhz is None
    assert found.power_watts is None
    assert found.temperature_c is None
    assert found.throttle_reasons == []


def test_no_sample_without_nvml_a_lost_gpu_or_on_rocm(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = FakeCuda()
    torch = fake_torch_for_telemetry(cuda)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    telemetry.reset()
    assert telemetry.sample(0, "c", "before", torch=torch) is None
    assert telemetry.unavailable_reason() == "the pynvml module is not installed"

    fake = make_fake_pynvml_clocks(init_error=err(NVML_ERROR_DRIVER_NOT_LOADED))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    telemetry.reset()
    assert telemetry.sample(0, "c", "before", torch=torch) is None
    assert "Driver Not Loaded" in (telemetry.unavailable_reason() or "")

    lost = make_fake_pynvml_clocks([FakeGpu(handle_error=err(NVML_ERROR_GPU_IS_LOST))])
    monkeypatch.setitem(sys.modules, "pynvml", lost)
    telemetry.reset()
    assert telemetry.sample(0, "c", "before", torch=torch) is None

    monkeypatch.setitem(sys.modules, "pynvml", make_fake_pynvml_clocks())
    telemetry.reset()
    rocm = types.SimpleNamespace(cuda=cuda, version=types.SimpleNamespace(hip="6.2"))
    assert telemetry.sample(0, "c", "before", torch=rocm) is None
    telemetry.reset()


# --------------------------------------------------------------------------------------------
# The cases, on CPU-as-CUDA


GPU_KINDS = sorted(gpu.CASES)


def test_every_gpu_and_multi_case_is_registered() -> None:
    cases = registry()
    for kind in [*gpu.CASES, *multi.CASES]:
        assert kind in cases
    assert set(GPU_KINDS) == {
        "gpu_matmul",
        "gpu_conv2d",
        "gpu_device_copy",
        "gpu_transfer",
        "gpu_launch_latency",
        "gpu_train_step",
        "gpu_sweep",
    }
    assert set(multi.CASES) == {"gpu_p2p", "all_reduce"}


@pytest.mark.parametrize("kind", [*GPU_KINDS, "gpu_p2p", "all_reduce"])
def test_without_cuda_every_case_is_skipped_with_a_reason(
    kind: str, real_torch: Any, no_nvml: None
) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(available=False))
    params = {"backend": "nccl"} if kind == "all_reduce" else {}
    results = run_case(spec(kind, "x", params=params), torch)
    assert len(results) == 1
    assert isinstance(results[0], Measurement)
    assert results[0].status == BenchStatus.SKIPPED
    assert "GPU" in (results[0].message or "")


def test_a_gpu_torch_does_not_see_is_skipped(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(devices=1))
    (m,) = run_case(spec("gpu_matmul", "matmul", precision="fp32", device="cuda:2"), torch)
    assert m.status == BenchStatus.SKIPPED
    assert "torch sees 1 GPU" in (m.message or "")


@pytest.mark.parametrize("precision", ["fp32", "tf32", "fp16", "bf16"])
def test_matmul_measures_with_the_precision_settings_recorded_and_restored(
    precision: str, real_torch: Any, fake_nvml: Any
) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda())
    before = real_torch.get_float32_matmul_precision()
    results = run_case(spec("gpu_matmul", "matmul", precision=precision, params={"n": 64}), torch)
    samples = only(results, TelemetrySample)
    assert [s.when for s in samples] == ["before", "after"]
    assert isinstance(results[0], TelemetrySample) and isinstance(results[-1], TelemetrySample)
    (m,) = only(results, Measurement)
    assert_ok(m)
    assert (m.case, m.device, m.precision, m.unit) == ("matmul", "cuda:0", precision, "GFLOP/s")
    # A fast fp32 matmul is timed at twice the size too (the faster stands).
    assert m.params["n"] in ((64, 128) if precision == "fp32" else (64,))
    expected = {"fp32": "highest", "tf32": "high"}.get(precision)
    if expected:
        assert m.settings["float32_matmul_precision"] == expected
        assert m.settings["cuda_matmul_allow_tf32"] == str(precision == "tf32")
        assert m.settings["cudnn_allow_tf32"] == str(precision == "tf32")
    assert m.settings["dtype"] == {"fp16": "torch.float16", "bf16": "torch.bfloat16"}.get(
        precision, "torch.float32"
    )
    assert "CUDA context creation" in m.settings["first_call_includes"]
    assert real_torch.get_float32_matmul_precision() == before


def test_the_first_call_and_context_are_timed_once_per_gpu(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda())
    ctx = ctx_for(torch)
    case = spec("gpu_matmul", "matmul", precision="fp32", params={"n": 64})
    (first,) = only(list(gpu.gpu_matmul(case, ctx)), Measurement)
    (second,) = only(list(gpu.gpu_matmul(case, ctx)), Measurement)
    assert "first_call_includes" in first.settings
    assert "first_call_includes" not in second.settings
    assert second.first_call_seconds is not None and second.first_call_seconds > 0


@pytest.fixture
def never_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sizing by memory alone: the CPU standing in for a GPU is slow (more so on a loaded
    machine), and the slow-GPU halving must not blur what a memory test checks."""
    monkeypatch.setattr(gpu, "SLOW_REP_SHARE", 1e9)


def test_matmul_halves_n_on_out_of_memory_and_records_the_size_used(
    real_torch: Any, no_nvml: None, never_slow: None
) -> None:
    fits = 256 * 256 * 4
    torch = CpuAsCuda(real_torch, FakeCuda(), oom_above=fits)
    (m,) = run_case(spec("gpu_matmul", "matmul", precision="fp32", params={"n": 1024}), torch)
    assert_ok(m)
    assert m.params["n"] == 256
    assert m.params["requested_n"] == 1024
    assert m.params["oom_halvings"] == 2
    assert 1024 * 1024 * 4 in torch.allocations and 512 * 512 * 4 in torch.allocations


@pytest.mark.parametrize("second_faster", [True, False])
@pytest.mark.parametrize(
    ("precision", "n", "second"),
    [("bf16", 512, 256), ("fp32", 256, 512)],  # tensor cores: half the size; fp32: twice
)
def test_a_matmul_is_also_timed_at_a_second_size_and_the_faster_stands(
    precision: str,
    n: int,
    second: int,
    second_faster: bool,
    real_torch: Any,
    no_nvml: None,
    never_slow: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rate = gpu._rate
    seen: list[int] = []

    def biased(timing: Any, size: int) -> float:
        seen.append(size)
        return rate(timing, size) * (1e6 if (size == second) == second_faster else 1.0)

    monkeypatch.setattr(gpu, "_rate", biased)
    monkeypatch.setattr(gpu, "DOUBLE_SIZE_CALLS", 1e-6)  # the doubled size always fits the time
    torch = CpuAsCuda(real_torch, FakeCuda())
    (m,) = run_case(spec("gpu_matmul", "matmul", precision=precision, params={"n": n}), torch)
    assert_ok(m)
    assert m.params["sizes_tried"] == f"{n},{second}" and sorted(seen) == sorted([n, second])
    assert m.params["n"] == (second if second_faster else n)
    assert m.params["requested_n"] == n
    if second_faster:
        # the second size's figure rests on three blocks or more, even past the case's share
        # (a real H200's fp32 at 16384 was one block, low confidence, before)
        assert m.blocks >= gpu.SECOND_SIZE_BLOCKS


def test_fp32_matmul_is_timed_at_one_size_where_twice_it_would_not_fit_the_time(
    real_torch: Any, no_nvml: None, never_slow: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu, "DOUBLE_SIZE_CALLS", 1e9)
    torch = CpuAsCuda(real_torch, FakeCuda())
    (m,) = run_case(spec("gpu_matmul", "matmul", precision="fp32", params={"n": 512}), torch)
    assert_ok(m)
    assert m.params["n"] == 512 and "sizes_tried" not in m.params


def test_fp32_matmul_is_not_doubled_past_the_memory_it_may_take(
    real_torch: Any, no_nvml: None, never_slow: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu, "DOUBLE_SIZE_CALLS", 1e-6)
    cuda = FakeCuda(free=int(3 * 256 * 256 * 4 / gpu.MEMORY_SHARE) + 1024)
    torch = CpuAsCuda(real_torch, cuda)
    (m,) = run_case(spec("gpu_matmul", "matmul", precision="fp32", params={"n": 256}), torch)
    assert_ok(m)
    assert m.params["n"] == 256 and "sizes_tried" not in m.params


def test_the_second_matmul_size_over_a_grid() -> None:
    kept = gpu.SECOND_SIZE_SHARE["double"] * 2.0  # the fp32 case's at the default budget
    # An H200's fp32 matmul at 8192 takes 21.5 ms: 16384 (8x the work) is timed too; an
    # A100's 61 ms would spend the case's time on two calls: it is not.
    assert gpu._second_size("double", 8192, 0.0215, kept) == 16384
    assert gpu._second_size("double", 8192, 0.061, kept) is None
    for n in (256, 512, 4096, 8192):
        assert gpu._second_size("half", n, 0.01, 1.0) == (n // 2 if n >= 512 else None)
        assert gpu._second_size(None, n, 0.01, 1.0) is None
        assert gpu._second_size("double", n, 0.0, 1.0) is None  # no call timed: no guess
        doubled = [gpu._second_size("double", n, one, kept) for one in (1e-4, 0.01, 0.03, 0.1)]
        # Faster calls never lose the doubled size a slower one got.
        assert all(a is not None or b is None for a, b in itertools.pairwise(doubled))
        assert set(doubled) <= {2 * n, None}


@pytest.mark.parametrize(
    ("precision", "n", "second", "error"),
    [
        ("fp16", 512, 256, "CUDA error: an illegal memory access was encountered"),
        ("fp32", 256, 512, "CUDA out of memory. Tried to allocate 3.00 MiB"),
    ],
)
def test_a_second_size_that_fails_leaves_the_first_figure(
    precision: str,
    n: int,
    second: int,
    error: str,
    real_torch: Any,
    no_nvml: None,
    never_slow: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step = gpu._matmul_step

    def failing(g: Any, precision: str, size: int) -> Any:
        if size == second:
            raise RuntimeError(error)
        return step(g, precision, size)

    monkeypatch.setattr(gpu, "_matmul_step", failing)
    monkeypatch.setattr(gpu, "DOUBLE_SIZE_CALLS", 1e-6)  # the doubled size always fits the time
    torch = CpuAsCuda(real_torch, FakeCuda())
    (m,) = run_case(spec("gpu_matmul", "matmul", precision=precision, params={"n": n}), torch)
    assert_ok(m)
    assert m.params["n"] == n and m.params["sizes_tried"] == f"{n},{second}"


def test_matmul_out_of_memory_at_the_smallest_size_is_an_error(
    real_torch: Any, no_nvml: None
) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(), oom_above=1024)
    with pytest.raises(RuntimeError, match="out of memory"):
        run_case(spec("gpu_matmul", "matmul", precision="fp32", params={"n": 512}), torch)


def test_matmul_size_comes_down_to_the_free_memory(
    real_torch: Any, no_nvml: None, never_slow: None
) -> None:
    cuda = FakeCuda(free=int(3 * 512 * 512 * 4 / gpu.MEMORY_SHARE))
    torch = CpuAsCuda(real_torch, cuda)
    (m,) = run_case(spec("gpu_matmul", "matmul", precision="fp32", params={"n": 2048}), torch)
    assert_ok(m)
    assert m.params["n"] == 512
    assert "oom_halvings" not in m.params


def test_fp8_is_skipped_below_compute_capability_8_9(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(capability=(8, 0)))
    (m,) = run_case(spec("gpu_matmul", "matmul", precision="fp8", params={"n": 64}), torch)
    assert m.status == BenchStatus.SKIPPED
    assert "8.9" in (m.message or "") and "8.0" in (m.message or "")


def test_fp8_reasons() -> None:
    full = types.SimpleNamespace(_scaled_mm=object(), float8_e4m3fn=object())
    assert gpu.fp8_unsupported(full, (9, 0), hip=False) is None
    assert gpu.fp8_unsupported(full, (8, 9), hip=False) is None
    assert "ROCm" in (gpu.fp8_unsupported(full, (9, 4), hip=True) or "")
    assert "_scaled_mm" in (gpu.fp8_unsupported(types.SimpleNamespace(), (9, 0), False) or "")


def test_fp8_runs_through_scaled_mm_where_supported(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(capability=(9, 0)))
    (m,) = run_case(spec("gpu_matmul", "matmul", precision="fp8", params={"n": 64}), torch)
    # The CPU build may or may not have an FP8 kernel; either way a clean record.
    if m.status == BenchStatus.OK:
        assert_ok(m)
        assert "float8_e4m3fn" in m.settings["dtype"]
    else:
        assert m.status == BenchStatus.SKIPPED and "FP8" in (m.message or "")


@pytest.mark.parametrize("precision", ["fp32", "amp"])
def test_conv2d_autotunes_outside_the_figure(
    precision: str, real_torch: Any, no_nvml: None
) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda())
    saved = real_torch.backends.cudnn.benchmark
    params = {"batch": 4, "channels": 8, "hw": 8}
    (m,) = run_case(spec("gpu_conv2d", "conv2d", precision=precision, params=params), torch)
    assert_ok(m)
    assert m.settings["cudnn_benchmark"] == "True"
    assert real_torch.backends.cudnn.benchmark == saved
    assert m.params["batch"] == 4
    if precision == "amp":
        assert m.settings["autocast_dtype"] == "torch.bfloat16"
        assert m.settings["memory_format"] == "channels_last"
    else:
        assert m.settings["cudnn_allow_tf32"] == "False"


def test_conv2d_halves_the_batch_on_out_of_memory(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(), oom_above=2 * 8 * 8 * 8 * 4)
    params = {"batch": 8, "channels": 8, "hw": 8}
    (m,) = run_case(spec("gpu_conv2d", "conv2d", precision="fp32", params=params), torch)
    assert_ok(m)
    assert m.params["batch"] == 2 and m.params["oom_halvings"] == 2


def test_amp_is_fp16_before_ampere(real_torch: Any) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(capability=(7, 0)))
    opened = gpu.open_gpu(spec("gpu_conv2d", "conv2d"), ctx_for(torch))
    assert isinstance(opened, gpu.Gpu)
    assert gpu.amp_dtype(opened) == real_torch.float16


def test_device_copy_counts_read_and_write(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda())
    (m,) = run_case(spec("gpu_device_copy", "device_copy", params={"bytes": 4 * MIB}), torch)
    assert_ok(m)
    assert m.unit == "GB/s"
    assert m.params["bytes"] == 4 * MIB
    assert "2 × buffer" in m.settings["bytes_counted"]
    assert str(2 * 64 * 1024) in m.settings["l2_flush"]


@pytest.mark.parametrize("variant", ["pinned", "pageable"])
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_transfers(variant: str, direction: str, real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda())
    params = {"direction": direction, "bytes": 2 * MIB}
    (m,) = run_case(spec("gpu_transfer", direction, variant=variant, params=params), torch)
    assert_ok(m)
    assert (m.case, m.variant, m.unit) == (direction, variant, "GB/s")
    assert m.params == {"bytes": 2 * MIB, "direction": direction}
    assert m.settings["host_memory"] == variant
    assert m.blocks >= 1


def test_launch_latency_is_a_latency(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda())
    (m,) = run_case(spec("gpu_launch_latency", "launch_latency"), torch)
    assert_ok(m)
    assert m.unit == "us" and m.higher_is_better is False
    assert m.best is not None and m.median is not None and m.best <= m.median


def test_train_step_fp32_with_the_projects_small_cnn(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda())
    case = spec("gpu_train_step", "train_step", precision="fp32", params={"batch": 2}, seconds=0.3)
    (m,) = run_case(case, torch)
    assert_ok(m)
    assert m.unit == "samples/s"
    assert m.params["batch"] == 2
    assert isinstance(m.params["ms_per_step"], float) and m.params["ms_per_step"] > 0
    assert m.settings["autocast_dtype"] == "off"
    assert m.settings["optimizer"].startswith("SmallCnnAdam")


def tiny_models(real_torch: Any) -> types.ModuleType:
    """A stand-in for the models module: a network small enough for CPU autocast."""
    stub = types.ModuleType("hwadvisor.probes.bench.models")
    stub.SMALL_CNN_INPUT = (3, 150, 150)  # type: ignore[attr-defined]

    def small_cnn(torch: Any) -> Any:
        nn = torch.nn
        return nn.Sequential(nn.Conv2d(3, 2, 3, stride=8), nn.Flatten(), nn.Linear(2 * 19 * 19, 1))

    stub.small_cnn = small_cnn  # type: ignore[attr-defined]
    return stub


@pytest.mark.parametrize(
    ("capability", "dtype", "scaler"), [((8, 0), "bfloat16", False), ((7, 5), "float16", True)]
)
def test_train_step_amp(
    capability: tuple[int, int],
    dtype: str,
    scaler: bool,
    real_torch: Any,
    no_nvml: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hwadvisor.probes.bench as bench_package

    monkeypatch.setattr(bench_package, "models", tiny_models(real_torch), raising=False)
    torch = CpuAsCuda(real_torch, FakeCuda(capability=capability))
    (m,) = run_case(
        spec("gpu_train_step", "train_step", precision="amp", params={"batch": 2}), torch
    )
    assert_ok(m)
    assert m.settings["autocast_dtype"] == f"torch.{dtype}"
    assert m.settings["grad_scaler"] == str(scaler)
    assert "train_gflops_per_s" not in m.params  # the stand-in has no FLOP count


def test_sweep_yields_gpu_points_with_and_without_transfer(real_torch: Any, fake_nvml: Any) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda())
    case = spec(
        "gpu_sweep", "crossover", precision="fp32", params={"sizes": [32, 16, 64]}, seconds=0.3
    )
    results = run_case(case, torch)
    assert [type(r) for r in results] == [TelemetrySample, Crossover, TelemetrySample]
    crossover = results[1]
    assert crossover.device == "cuda:0"
    assert [p.n for p in crossover.points] == [16, 32, 64]
    for p in crossover.points:
        assert p.cpu_gflops is None  # the parent merges the CPU sweep in
        assert p.gpu_gflops is not None and p.gpu_gflops > 0 and math.isfinite(p.gpu_gflops)
        assert p.gpu_with_transfer_gflops is not None and p.gpu_with_transfer_gflops > 0
    assert "pageable" in (crossover.note or "")


def test_sweep_stops_at_the_size_that_does_not_fit(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(), oom_above=32 * 32 * 4)
    case = spec("gpu_sweep", "crossover", params={"sizes": [16, 32, 64]}, seconds=0.2)
    # The warm-up runs at the largest size: out of memory there stops the sweep at once.
    (crossover,) = run_case(case, torch)
    assert crossover.points == []
    assert "n = 64: out of memory" in (crossover.note or "")


def test_gpu_case_gives_cached_memory_back(real_torch: Any, no_nvml: None) -> None:
    cuda = FakeCuda()
    torch = CpuAsCuda(real_torch, cuda)
    run_case(spec("gpu_launch_latency", "launch_latency"), torch)
    assert "empty_cache" in cuda.log


# --------------------------------------------------------------------------------------------
# Peer-to-peer


def test_p2p_measures_every_ordered_pair_and_says_when_it_goes_through_host(
    real_torch: Any, fake_nvml: Any
) -> None:
    cuda = FakeCuda(devices=2, peer=lambda i, j: (i, j) == (1, 0))
    torch = CpuAsCuda(real_torch, cuda)
    case = spec("gpu_p2p", "p2p", params={"bytes": 4 * MIB}, seconds=0.2)
    results = run_case(case, torch)
    copies = only(results, PeerCopy)
    assert [(c.src, c.dst) for c in copies] == [("cuda:0", "cuda:1"), ("cuda:1", "cuda:0")]
    for c in copies:
        assert c.status == BenchStatus.OK
        assert c.gb_per_s is not None and c.gb_per_s > 0 and math.isfinite(c.gb_per_s)
    assert copies[0].message == multi.NO_PEER
    assert copies[1].message is None
    samples = only(results, TelemetrySample)
    assert sorted((s.device, s.when) for s in samples) == [
        ("cuda:0", "after"),
        ("cuda:0", "before"),
        ("cuda:1", "after"),
        ("cuda:1", "before"),
    ]


def test_p2p_needs_two_gpus(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(devices=1))
    (m,) = run_case(spec("gpu_p2p", "p2p"), torch)
    assert m.status == BenchStatus.SKIPPED and "at least 2 GPUs" in (m.message or "")


# --------------------------------------------------------------------------------------------
# All-reduce: the process group


def test_nccl_all_reduce_needs_two_gpus(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(devices=1))
    (m,) = run_case(spec("all_reduce", "all_reduce", params={"backend": "nccl"}), torch)
    assert m.status == BenchStatus.SKIPPED


def test_all_reduce_rejects_an_unknown_backend(real_torch: Any) -> None:
    (m,) = run_case(spec("all_reduce", "all_reduce", params={"backend": "mpi2"}), real_torch)
    assert m.status == BenchStatus.SKIPPED and "mpi2" in (m.message or "")


def test_gloo_all_reduce_across_two_real_processes(real_torch: Any) -> None:
    if not real_torch.distributed.is_available():
        pytest.skip("this torch build has no torch.distributed")
    params = {
        "backend": "gloo",
        "world_size": 2,
        "size_bytes": 256 * 1024,
        "iters": 3,
        "trials": 3,
        "warmup": 1,
    }
    case = spec("all_reduce", "all_reduce", params=params, seconds=10.0)
    started = time.monotonic()
    (result,) = run_case(case, real_torch)
    assert isinstance(result, AllReduce)
    assert result.status == BenchStatus.OK, result.message
    assert (result.backend, result.world_size, result.size_bytes) == ("gloo", 2, 256 * 1024)
    assert result.algbw_gbs is not None and result.algbw_gbs > 0
    assert result.busbw_gbs == pytest.approx(result.algbw_gbs, rel=1e-3)  # 2(n-1)/n = 1
    assert time.monotonic() - started < 30


def _ok_rank(rank: int, world: int, results: Any) -> None:
    results.put(("ok", rank, [0.002, 0.001, 0.003]))


def _failing_rank(rank: int, world: int, results: Any) -> None:
    if rank == 1:
        results.put(("error", rank, "DistBackendError: NCCL error: unhandled system error"))
    else:
        results.put(("ok", rank, [0.001]))


def _sleepy_rank(rank: int, world: int, results: Any) -> None:
    time.sleep(120)


def _crashing_rank(rank: int, world: int, results: Any) -> None:
    if rank == 1:
        os._exit(3)
    time.sleep(120)


def _failing_while_the_other_hangs(rank: int, world: int, results: Any) -> None:
    if rank == 0:
        results.put(("error", rank, "DistBackendError: connection reset"))
        return
    time.sleep(120)  # stuck in a collective rank 0 never joins


def spawn() -> Any:
    return multiprocessing.get_context("spawn")


def test_group_collects_every_ranks_report() -> None:
    outcome = multi.run_group(_ok_rank, (), 2, 30.0, spawn())
    assert outcome.reports == {0: [0.002, 0.001, 0.003], 1: [0.002, 0.001, 0.003]}
    assert not outcome.timed_out and not outcome.errors
    assert outcome.exitcodes == {0: 0, 1: 0}
    result = multi.all_reduce_result("gloo", 2, 2_000_000, outcome, 30.0)
    assert result.status == BenchStatus.OK
    assert result.algbw_gbs == pytest.approx(1.0)  # 2 MB in the median 2 ms


def test_group_reports_a_failing_rank() -> None:
    outcome = multi.run_group(_failing_rank, (), 2, 30.0, spawn())
    result = multi.all_reduce_result("nccl", 2, 1024, outcome, 30.0)
    assert result.status == BenchStatus.FAILED
    assert result.message == "rank 1: DistBackendError: NCCL error: unhandled system error"
    assert result.algbw_gbs is None and result.busbw_gbs is None


def test_a_failed_rank_ends_the_group_without_waiting_for_the_deadline() -> None:
    started = time.monotonic()
    outcome = multi.run_group(_failing_while_the_other_hangs, (), 2, 60.0, spawn())
    assert time.monotonic() - started < 30
    assert not outcome.timed_out
    assert outcome.errors == {0: "DistBackendError: connection reset"}
    assert all(code is not None for code in outcome.exitcodes.values())
    result = multi.all_reduce_result("nccl", 2, 1024, outcome, 60.0)
    assert result.status == BenchStatus.FAILED


def test_group_that_hangs_is_stopped_at_its_deadline() -> None:
    started = time.monotonic()
    outcome = multi.run_group(_sleepy_rank, (), 2, 1.5, spawn())
    assert outcome.timed_out
    assert time.monotonic() - started < 1.5 + 2 * multi.TERMINATE_GRACE_S + 5
    assert all(code is not None for code in outcome.exitcodes.values())  # none left running
    result = multi.all_reduce_result("nccl", 2, 1024, outcome, 1.5)
    assert result.status == BenchStatus.TIMEOUT
    assert "did not finish in 1.5 s" in (result.message or "")


def test_group_with_a_crashed_rank_ends_without_waiting_for_the_deadline() -> None:
    started = time.monotonic()
    outcome = multi.run_group(_crashing_rank, (), 2, 60.0, spawn())
    assert time.monotonic() - started < 30
    assert outcome.errors == {1: "rank 1 exited with code 3"}
    assert all(code is not None for code in outcome.exitcodes.values())


# --------------------------------------------------------------------------------------------
# On a real GPU


def _run_real(cases: list[CaseSpec]) -> list[dict[str, Any]]:
    from hwadvisor.probes.bench.plan import BenchPlan, run_plan

    plan = BenchPlan(threads=os.cpu_count() or 1, cases=cases)
    return [e for e in run_plan(plan.model_dump(mode="json")) if e["event"] == "result"]


def _real_case(kind: str, case: str, seconds: float = 1.0, **fields: Any) -> CaseSpec:
    key = f"cuda:0.{case}.{fields.get('precision') or '-'}.{fields.get('variant') or '-'}"
    return CaseSpec(
        id=key, title=key, kind=kind, case=case, device="cuda:0", seconds=seconds, **fields
    )


@pytest.mark.gpu
def test_every_gpu_case_on_a_real_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA GPU")
    cases = [
        *(
            _real_case("gpu_matmul", "matmul", precision=p)
            for p in ("fp32", "tf32", "fp16", "bf16", "fp8")
        ),
        _real_case("gpu_conv2d", "conv2d", precision="fp32"),
        _real_case("gpu_conv2d", "conv2d", precision="amp"),
        _real_case("gpu_device_copy", "device_copy"),
        *(
            _real_case("gpu_transfer", d, variant=v, params={"direction": d})
            for d in ("h2d", "d2h")
            for v in ("pinned", "pageable")
        ),
        _real_case("gpu_launch_latency", "launch_latency", seconds=0.5),
        _real_case("gpu_train_step", "train_step", precision="amp", seconds=2.0),
        _real_case(
            "gpu_sweep",
            "crossover",
            precision="fp32",
            seconds=3.0,
            params={"sizes": [64, 256, 1024, 4096]},
        ),
    ]
    events = _run_real(cases)
    measurements = [
        Measurement.model_validate(e["data"]) for e in events if e["kind"] == "measurement"
    ]
    by_key = {(m.case, m.precision, m.variant): m for m in measurements}
    for m in measurements:
        if m.precision == "fp8" and m.status == BenchStatus.SKIPPED:
            continue
        assert_ok(m)
    assert len(measurements) == len(cases) - 1  # the sweep yields a Crossover
    fp32 = by_key[("matmul", "fp32", None)].best
    bf16 = by_key[("matmul", "bf16", None)].best
    assert fp32 is not None and bf16 is not None and bf16 > fp32
    pinned = by_key[("h2d", None, "pinned")].best
    pageable = by_key[("h2d", None, "pageable")].best
    assert pinned is not None and pageable is not None and pinned >= pageable
    (crossover,) = [Crossover.model_validate(e["data"]) for e in events if e["kind"] == "crossover"]
    assert [p.n for p in crossover.points] == [64, 256, 1024, 4096]
    for p in crossover.points:
        assert p.gpu_gflops and p.gpu_with_transfer_gflops
        assert p.gpu_gflops > p.gpu_with_transfer_gflops * 0.9
    if telemetry.unavailable_reason() is None:
        assert any(e["kind"] == "telemetry" for e in events)


@pytest.mark.gpu
def test_peer_copies_and_nccl_all_reduce_on_real_gpus() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA GPUs")
    count = torch.cuda.device_count()
    cases = [
        CaseSpec(
            id="gpus.p2p", title="p2p", kind="gpu_p2p", case="p2p", device="cuda:0", seconds=2.0
        ),
        CaseSpec(
            id="gpus.all_reduce",
            title="all-reduce",
            kind="all_reduce",
            case="all_reduce",
            device="cuda:0",
            seconds=10.0,
            params={"backend": "nccl", "world_size": count},
        ),
    ]
    events = _run_real(cases)
    copies = [PeerCopy.model_validate(e["data"]) for e in events if e["kind"] == "peer_copy"]
    assert len(copies) == count * (count - 1)
    assert all(c.status == BenchStatus.OK and c.gb_per_s and c.gb_per_s > 0 for c in copies)
    (reduce,) = [AllReduce.model_validate(e["data"]) for e in events if e["kind"] == "all_reduce"]
    assert reduce.status == BenchStatus.OK, reduce.message
    assert reduce.busbw_gbs is not None and reduce.busbw_gbs > 0


@pytest.mark.slow
def test_all_reduce_spawns_its_ranks_from_inside_the_isolated_benchmark_child() -> None:
    """The production path: the plan runs in an isolated child (its own session, started with
    ``python -c``), which spawns the ranks."""
    pytest.importorskip("torch")
    from hwadvisor.isolation import run_isolated
    from hwadvisor.probes.bench.plan import BenchPlan

    case = CaseSpec(
        id="cpu.all_reduce",
        title="all-reduce",
        kind="all_reduce",
        case="all_reduce",
        device="cpu",
        seconds=5.0,
        params={"backend": "gloo", "world_size": 2, "size_bytes": 64 * 1024},
    )
    plan = BenchPlan(cases=[case]).model_dump(mode="json")
    outcome = run_isolated("hwadvisor.probes.bench.plan:run_plan", {"plan": plan}, timeout_s=60)
    assert outcome.status == "ok", outcome.error
    (item,) = [i for i in outcome.items if i["event"] == "result"]
    assert item["kind"] == "all_reduce"
    result = AllReduce.model_validate(item["data"])
    assert result.status == BenchStatus.OK, result.message
    assert result.busbw_gbs is not None and result.busbw_gbs > 0
