"""GPU figures on a busy, throttled or shared GPU: what the telemetry reads (fake NVML), the
GPU's identity yielded by the cases, the robust slow-GPU size decision, and the flags
:func:`hwadvisor.benchflags.flag_gpu_measurements` puts on the figures.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.benchflags import flag_gpu_measurements, mps_reason
from hwadvisor.model.bench import (
    BenchDevice,
    Benchmarks,
    BenchStatus,
    Disturbance,
    Measurement,
    TelemetrySample,
)
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import GpuInfo, Profile, ToolInfo, TorchDevice, TorchInfo
from hwadvisor.probes.bench import gpu, telemetry
from hwadvisor.probes.bench.plan import BenchContext
from tests.fakes.fake_pynvml import (
    NVML_ERROR_FUNCTION_NOT_FOUND,
    NVML_ERROR_NO_PERMISSION,
    NVML_ERROR_NOT_FOUND,
    NVML_ERROR_NOT_SUPPORTED,
    FakeGpu,
    FakeHandle,
    FakeMig,
    NVMLError,
    err,
)
from tests.fakes.fake_pynvml_clocks import FakePynvmlClocks, make_fake_pynvml_clocks
from tests.test_bench_gpu import CpuAsCuda, FakeCuda, spec

OURS = os.getpid()
#: pids a container cannot be: NVML reports the host's pids there.
HOST_PIDS = (4_000_001, 4_000_002, 4_000_003)


# --------------------------------------------------------------------------------------------
# Fixtures and helpers


def use_nvml(monkeypatch: pytest.MonkeyPatch, fake: Any) -> Any:
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    telemetry.reset()
    return fake


@pytest.fixture(autouse=True)
def _fresh_telemetry() -> Iterator[None]:
    telemetry.reset()
    yield
    telemetry.reset()


@pytest.fixture
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    telemetry.reset()


@pytest.fixture
def real_torch() -> Any:
    return pytest.importorskip("torch")


def cuda_torch(cuda: FakeCuda, hip: str | None = None) -> Any:
    return types.SimpleNamespace(cuda=cuda, version=types.SimpleNamespace(hip=hip))


def read(gpu_spec: FakeGpu, monkeypatch: pytest.MonkeyPatch, **options: Any) -> TelemetrySample:
    use_nvml(monkeypatch, make_fake_pynvml_clocks([gpu_spec], **options))
    found = telemetry.sample(0, "cuda:0.matmul.bf16", "before", torch=cuda_torch(FakeCuda()))
    assert found is not None
    return found


# --------------------------------------------------------------------------------------------
# Telemetry: utilization and other processes


def test_sample_reads_utilization_and_counts_the_other_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = read(FakeGpu(utilization=(85, 40), compute_processes=[OURS, 111, 222]), monkeypatch)
    assert found.utilization_percent == 85
    assert found.other_processes == 2
    assert found.sm_clock_mhz == 1980  # the rest is still read


def test_our_own_process_alone_is_no_other_process(monkeypatch: pytest.MonkeyPatch) -> None:
    found = read(FakeGpu(compute_processes=[OURS]), monkeypatch)
    assert found.other_processes == 0
    assert found.utilization_percent == 0


@pytest.mark.parametrize(
    ("pids", "others"),
    [((), 0), (HOST_PIDS[:1], 0), (HOST_PIDS[:2], 1), (HOST_PIDS, 2)],
)
def test_in_a_container_one_host_pid_is_taken_to_be_ours(
    pids: tuple[int, ...], others: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert OURS not in HOST_PIDS
    found = read(FakeGpu(compute_processes=list(pids)), monkeypatch)
    assert found.other_processes == others


def test_other_process_count() -> None:
    assert telemetry.other_process_count([7, 8, 9], own_pid=8) == 2
    assert telemetry.other_process_count([7, 7], own_pid=7) == 0
    assert telemetry.other_process_count([1, 2, 3], own_pid=8) == 2
    assert telemetry.other_process_count([], own_pid=8) == 0


@pytest.mark.parametrize("code", [NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NO_PERMISSION])
def test_unsupported_utilization_and_processes_are_null_not_errors(
    code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = read(
        FakeGpu(utilization=err(code), compute_processes=err(code), temperature_c=61),
        monkeypatch,
    )
    assert found.utilization_percent is None
    assert found.other_processes is None
    assert found.temperature_c == 61


def test_a_sentinel_utilization_is_null(monkeypatch: pytest.MonkeyPatch) -> None:
    found = read(FakeGpu(utilization=(0xFFFFFFFF, 0)), monkeypatch)
    assert found.utilization_percent is None


def test_processes_fall_back_to_the_older_names(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = make_fake_pynvml_clocks(
        [FakeGpu(compute_processes=[OURS, 5])],
        missing=[
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetComputeRunningProcesses_v3",
        ],
    )
    use_nvml(monkeypatch, fake)
    found = telemetry.sample(0, "c", "after", torch=cuda_torch(FakeCuda()))
    assert found is not None and found.other_processes == 1
    assert "nvmlDeviceGetComputeRunningProcesses_v2" in fake.calls


class _OldDriver(FakePynvmlClocks):
    """A current binding on a driver without the _v3 symbol: the plain name (= _v3) answers
    FunctionNotFound, _v2 works."""

    def _nvmlDeviceGetComputeRunningProcesses(self, handle: FakeHandle) -> Any:
        raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)

    def _nvmlDeviceGetComputeRunningProcesses_v3(self, handle: FakeHandle) -> Any:
        raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)

    def _nvmlDeviceGetComputeRunningProcesses_v2(self, handle: FakeHandle) -> Any:
        return FakePynvmlClocks._nvmlDeviceGetComputeRunningProcesses(self, handle)


def test_processes_from_v2_when_the_driver_lacks_v3(monkeypatch: pytest.MonkeyPatch) -> None:
    use_nvml(monkeypatch, _OldDriver([FakeGpu(compute_processes=[OURS, 5, 6])]))
    found = telemetry.sample(0, "c", "after", torch=cuda_torch(FakeCuda()))
    assert found is not None and found.other_processes == 2


class _MigNvml(FakePynvmlClocks):
    """MIG slices found by their UUID, and the slice's parent GPU from its handle."""

    def _nvmlDeviceGetHandleByUUID(self, uuid: Any) -> FakeHandle:
        for index, g in enumerate(self.gpus):
            for slot, mig in g.mig_devices.items():
                if mig.uuid == uuid:
                    return FakeHandle(index, slot)
        return super()._nvmlDeviceGetHandleByUUID(uuid)

    def _nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, handle: FakeHandle) -> FakeHandle:
        if handle.mig_slot is None:
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        return FakeHandle(handle.index)


def test_on_a_mig_slice_the_processes_are_the_slices_own(monkeypatch: pytest.MonkeyPatch) -> None:
    slice_uuid = "MIG-11111111-2222-3333-4444-555555555555"
    whole = FakeGpu(
        temperature_c=55,
        compute_processes=[OURS, 1, 2, 3],  # every slice's processes
        mig_devices={0: FakeMig(uuid=slice_uuid, compute_processes=[OURS])},
    )
    use_nvml(monkeypatch, _MigNvml([whole]))
    cuda = FakeCuda()
    cuda.props[0].uuid = slice_uuid
    found = telemetry.sample(0, "c", "before", torch=cuda_torch(cuda))
    assert found is not None
    assert found.temperature_c == 55  # the whole GPU's sensors
    assert found.other_processes == 0  # the other slices' work is not on our SMs


# --------------------------------------------------------------------------------------------
# The GPU's identity


def test_device_identity_from_torch_alone(no_nvml: None) -> None:
    found = telemetry.device_identity(1, cuda_torch(FakeCuda(devices=2)))
    assert found == BenchDevice(
        device="cuda:1",
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-00000000-0000-0000-0000-000000000001",
        pci_bus_id="00000000:18:00.0",
    )


def test_device_identity_fills_what_torch_lacks_from_nvml(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    use_nvml(monkeypatch, make_fake_pynvml_clocks([FakeGpu(uuid="GPU-abc", bus_id="0000:3B:00.0")]))
    cuda = FakeCuda()
    cuda.props = [types.SimpleNamespace(name="NVIDIA H100 80GB HBM3")]  # torch < 2.2
    found = telemetry.device_identity(0, cuda_torch(cuda))
    assert found == BenchDevice(
        device="cuda:0",
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-abc",
        pci_bus_id="00000000:3B:00.0",
    )


def test_device_identity_is_none_when_nothing_is_known(no_nvml: None) -> None:
    cuda = FakeCuda()

    def broken(index: int) -> Any:
        raise RuntimeError("CUDA error: unknown error")

    cuda.get_device_properties = broken  # type: ignore[method-assign]
    assert telemetry.device_identity(0, cuda_torch(cuda)) is None


def test_device_identity_keeps_rocm_uuids_as_torch_prints_them(no_nvml: None) -> None:
    found = telemetry.device_identity(0, cuda_torch(FakeCuda(), hip="6.2"))
    assert found is not None
    assert found.uuid == "00000000-0000-0000-0000-000000000000"


def test_gpu_case_yields_each_gpus_identity_once_before_its_first_sample(
    real_torch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_nvml(
        monkeypatch,
        make_fake_pynvml_clocks(
            [
                FakeGpu(uuid="GPU-0", bus_id="00000000:17:00.0"),
                FakeGpu(uuid="GPU-1", bus_id="00000000:18:00.0"),
            ]
        ),
    )
    torch = CpuAsCuda(real_torch, FakeCuda(devices=2))
    ctx = BenchContext(torch=torch, threads=1, seed=0)
    runs = [
        list(gpu.gpu_launch_latency(spec("gpu_launch_latency", "launch_latency", device=d), ctx))
        for d in ("cuda:0", "cuda:0", "cuda:1")
    ]
    first, again, other = runs
    assert isinstance(first[0], BenchDevice) and isinstance(first[1], TelemetrySample)
    assert first[0].device == "cuda:0" and first[0].pci_bus_id == "00000000:17:00.0"
    assert not any(isinstance(r, BenchDevice) for r in again)
    assert [r.device for r in other if isinstance(r, BenchDevice)] == ["cuda:1"]
    assert other[0].pci_bus_id == "00000000:18:00.0"
    assert [r.when for r in first if isinstance(r, TelemetrySample)] == ["before", "after"]


def test_no_identity_for_a_skipped_case(real_torch: Any, no_nvml: None) -> None:
    torch = CpuAsCuda(real_torch, FakeCuda(available=False))
    ctx = BenchContext(torch=torch, threads=1, seed=0)
    results = list(gpu.gpu_launch_latency(spec("gpu_launch_latency", "launch_latency"), ctx))
    assert [type(r) for r in results] == [Measurement]
    assert "bench_devices" not in ctx.shared


# --------------------------------------------------------------------------------------------
# The slow-GPU size decision: the shortest of a few calls


class JumpClock:
    """The event clock: real time, plus ``jump`` seconds added at each end-event of the probe
    calls listed in ``slow_calls`` (1 = the first event-timed call of the case)."""

    def __init__(self, jump: float, slow_calls: set[int]) -> None:
        self.jump, self.slow_calls = jump, slow_calls
        self.reads = 0
        self.offset = 0.0

    def __call__(self) -> float:
        import time

        self.reads += 1
        if self.reads % 2 == 0 and self.reads // 2 in self.slow_calls:
            self.offset += self.jump  # this call's end event: the call took `jump` longer
        return time.perf_counter() + self.offset


def matmul_with(clock: JumpClock, real_torch: Any) -> Measurement:
    torch = CpuAsCuda(real_torch, FakeCuda(clock=clock))
    # one size: fp32's doubled size (tried where a call is fast, as on a fast CPU) would move
    # n for a reason other than the one under test
    params = {"n": 512, "one_size": 1}
    case = spec("gpu_matmul", "matmul", precision="fp32", seconds=0.6, params=params)
    ctx = BenchContext(torch=torch, threads=1, seed=0)
    (m,) = [r for r in gpu.gpu_matmul(case, ctx) if isinstance(r, Measurement)]
    assert m.status == BenchStatus.OK, m.message
    return m


def test_one_preempted_call_does_not_halve_the_matmul(real_torch: Any, no_nvml: None) -> None:
    m = matmul_with(JumpClock(jump=5.0, slow_calls={1}), real_torch)
    assert m.params["n"] == 512
    assert "slow_gpu_halvings" not in m.params


def test_a_gpu_slow_on_every_call_still_halves_the_matmul(real_torch: Any, no_nvml: None) -> None:
    # The three probe calls at n = 512 are all slow; at n = 256 the GPU keeps up.
    m = matmul_with(JumpClock(jump=5.0, slow_calls={1, 2, 3}), real_torch)
    assert m.params["n"] == 256
    assert m.params["slow_gpu_halvings"] == 1


# --------------------------------------------------------------------------------------------
# The flags


def profile(gpus: list[GpuInfo] | None = None) -> Profile:
    p = Profile(tool=ToolInfo(version="t"), created_utc="2026-01-01T00:00:00Z")
    found = gpus if gpus is not None else [nvidia_gpu(0, "00000000:17:00.0")]
    p.gpus = found
    p.frameworks.torch = TorchInfo(
        installed=True,
        cuda_available=fact(True, Source.TORCH),
        device_count=fact(len(found), Source.TORCH),
        devices=[
            TorchDevice(index=i, pci_bus_id=fact(g.pci_bus_id.value, Source.TORCH))
            for i, g in enumerate(found)
        ],
    )
    return p


def nvidia_gpu(index: int, bus_id: str, mig: bool = False) -> GpuInfo:
    return GpuInfo(
        index=index,
        vendor="nvidia",
        backend="cuda",
        name=fact("NVIDIA H100 80GB HBM3", Source.NVML),
        pci_bus_id=fact(bus_id, Source.NVML),
        mig_enabled=fact(mig, Source.NVML),
    )


def figure(case: str = "matmul", precision: str | None = "bf16", **fields: Any) -> Measurement:
    measured: dict[str, Any] = {
        "device": "cuda:0",
        "unit": "GFLOP/s",
        "best": 100.0,
        "median": 99.0,
        "spread": 0.01,
        "blocks": 10,
        "reps_per_block": 4,
    }
    return Measurement(case=case, precision=precision, **{**measured, **fields})


def sample(case: str, when: str, device: str = "cuda:0", **fields: Any) -> TelemetrySample:
    quiet: dict[str, Any] = {
        "sm_clock_mhz": 1980,
        "temperature_c": 45,
        "throttle_reasons": [],
        "utilization_percent": 0,
        "other_processes": 0,
    }
    return TelemetrySample(device=device, case=case, when=when, **{**quiet, **fields})


def samples(case: str, device: str = "cuda:0", **fields: Any) -> list[TelemetrySample]:
    """A quiet before sample and an after sample with ``fields``."""
    return [sample(case, "before", device), sample(case, "after", device, **fields)]


def bench(
    measurements: list[Measurement],
    telemetry: list[TelemetrySample],
    devices: list[BenchDevice] | None = None,
) -> Benchmarks:
    return Benchmarks(measurements=measurements, telemetry=telemetry, devices=devices or [])


def flag(b: Benchmarks, p: Profile | None = None, env: dict[str, str] | None = None) -> None:
    flag_gpu_measurements(b, p or profile(), env or {}, mps_pipe_dir=Path("/nonexistent/mps"))


def test_an_undisturbed_gpu_keeps_its_figures_clean() -> None:
    b = bench(
        [figure(), figure("h2d", None, variant="pinned"), figure("launch_latency", None)],
        [
            *samples("cuda:0.matmul.bf16", throttle_reasons=["sw_power_cap"], temperature_c=80),
            *samples("cuda:0.h2d.pinned", utilization_percent=100),  # our own work
            *samples("cuda:0.launch_latency"),
        ],
        devices=[BenchDevice(device="cuda:0", uuid="GPU-0", pci_bus_id="00000000:17:00.0")],
    )
    flag(b)
    for m in b.measurements:
        assert m.disturbances == [] and m.disturbance_note is None
        assert m.trusted


def test_other_processes_during_a_case_make_that_figure_busy() -> None:
    b = bench(
        [figure(), figure(precision="fp16")],
        [*samples("cuda:0.matmul.bf16", other_processes=2), *samples("cuda:0.matmul.fp16")],
    )
    flag(b)
    busy, quiet = b.measurements
    assert busy.disturbances == [Disturbance.GPU_BUSY]
    assert busy.disturbance_note == "2 other processes on the GPU"
    assert not busy.trusted
    assert quiet.disturbances == []


def test_utilization_before_the_first_case_makes_every_figure_of_that_gpu_busy() -> None:
    b = bench(
        [figure(), figure("h2d", None, variant="pinned"), figure(device="cuda:1")],
        [
            sample("cuda:0.matmul.bf16", "before", utilization_percent=85),
            sample("cuda:0.matmul.bf16", "after", utilization_percent=100),
            *samples("cuda:0.h2d.pinned"),
            sample("cuda:1.matmul.bf16", "before", "cuda:1", utilization_percent=9),
            sample("cuda:1.matmul.bf16", "after", "cuda:1", utilization_percent=100),
        ],
    )
    flag(b, profile([nvidia_gpu(0, "00000000:17:00.0"), nvidia_gpu(1, "00000000:18:00.0")]))
    first, second, other_gpu = b.measurements
    for m in (first, second):
        assert m.disturbances == [Disturbance.GPU_BUSY]
        assert m.disturbance_note == "GPU utilization 85% before the benchmarks"
    assert other_gpu.disturbances == []  # 9 % is below the threshold


def test_a_later_cases_utilization_before_is_our_own_work() -> None:
    b = bench(
        [figure(), figure(precision="fp16")],
        [
            *samples("cuda:0.matmul.bf16"),
            sample("cuda:0.matmul.fp16", "before", utilization_percent=100),
            sample("cuda:0.matmul.fp16", "after", utilization_percent=100),
        ],
    )
    flag(b)
    assert [m.disturbances for m in b.measurements] == [[], []]


@pytest.mark.parametrize(
    "reason",
    ["hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"],
)
def test_slowed_clocks_make_the_figure_throttled(reason: str) -> None:
    b = bench(
        [figure()],
        samples("cuda:0.matmul.bf16", throttle_reasons=["sw_power_cap", reason], temperature_c=88),
    )
    flag(b)
    (m,) = b.measurements
    assert m.disturbances == [Disturbance.GPU_THROTTLED]
    assert m.disturbance_note == f"clocks slowed: {reason} (up to 88 °C)"


def test_running_at_the_power_cap_is_not_a_disturbance() -> None:
    b = bench(
        [figure()],
        [
            sample("cuda:0.matmul.bf16", "before", throttle_reasons=["gpu_idle"]),
            sample("cuda:0.matmul.bf16", "after", throttle_reasons=["sw_power_cap"]),
        ],
    )
    flag(b)
    assert b.measurements[0].disturbances == []


def test_a_mig_slice_is_shared() -> None:
    b = bench([figure(), figure("launch_latency", None)], [])
    flag(b, profile([nvidia_gpu(0, "00000000:17:00.0", mig=True)]))
    for m in b.measurements:
        assert m.disturbances == [Disturbance.GPU_SHARED]
        assert m.disturbance_note == "a MIG slice, not the whole GPU"


def test_a_mig_uuid_from_the_child_is_shared_without_nvml_in_the_profile() -> None:
    b = bench(
        [figure()], [], devices=[BenchDevice(device="cuda:0", uuid="MIG-1234", name="H100 MIG")]
    )
    flag(b, profile([]))
    assert b.measurements[0].disturbances == [Disturbance.GPU_SHARED]


@pytest.mark.parametrize(
    "env",
    [
        {"CUDA_MPS_PIPE_DIRECTORY": "/run/mps"},
        {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"},
    ],
)
def test_mps_in_the_environment_is_shared(env: dict[str, str]) -> None:
    b = bench([figure()], samples("cuda:0.matmul.bf16"))
    flag(b, env=env)
    (m,) = b.measurements
    assert m.disturbances == [Disturbance.GPU_SHARED]
    assert m.disturbance_note is not None and "MPS" in m.disturbance_note
    assert next(iter(env)) in m.disturbance_note


def test_the_mps_pipe_directory_means_mps(tmp_path: Path) -> None:
    assert mps_reason({}, tmp_path / "nvidia-mps") is None
    assert mps_reason({"CUDA_MPS_PIPE_DIRECTORY": " "}, tmp_path / "nvidia-mps") is None
    (tmp_path / "nvidia-mps").mkdir()
    # A directory left behind by a stopped daemon is not MPS in use; its control pipe is.
    assert mps_reason({}, tmp_path / "nvidia-mps") is None
    os.mkfifo(tmp_path / "nvidia-mps" / "control")
    b = bench([figure()], [])
    flag_gpu_measurements(b, profile(), {}, mps_pipe_dir=tmp_path / "nvidia-mps")
    assert b.measurements[0].disturbances == [Disturbance.GPU_SHARED]
    assert str(tmp_path / "nvidia-mps") in (b.measurements[0].disturbance_note or "")


def test_every_condition_is_flagged_once_with_its_figures() -> None:
    m = figure()
    b = bench(
        [m],
        [
            sample("cuda:0.matmul.bf16", "before", utilization_percent=40, other_processes=1),
            sample(
                "cuda:0.matmul.bf16",
                "after",
                other_processes=3,
                throttle_reasons=["hw_thermal_slowdown", "sw_thermal_slowdown"],
                temperature_c=91,
            ),
        ],
    )
    flag(b, profile([nvidia_gpu(0, "00000000:17:00.0", mig=True)]))
    flag(b, profile([nvidia_gpu(0, "00000000:17:00.0", mig=True)]))  # again: nothing added
    assert m.disturbances == [
        Disturbance.GPU_BUSY,
        Disturbance.GPU_THROTTLED,
        Disturbance.GPU_SHARED,
    ]
    assert m.disturbance_note == (
        "3 other processes on the GPU; GPU utilization 40% before the benchmarks; "
        "clocks slowed: hw_thermal_slowdown, sw_thermal_slowdown (up to 91 °C); "
        "a MIG slice, not the whole GPU"
    )


def test_only_measured_gpu_figures_are_flagged() -> None:
    cpu = Measurement(case="matmul", device="cpu", precision="fp32", best=50.0)
    skipped = figure(status=BenchStatus.SKIPPED, best=None)
    failed = figure(precision="fp16", status=BenchStatus.FAILED, best=None)
    b = bench(
        [cpu, skipped, failed],
        [
            *samples("cuda:0.matmul.bf16", other_processes=4),
            *samples("cuda:0.matmul.fp16", other_processes=4),
        ],
    )
    flag(b, env={"CUDA_MPS_PIPE_DIRECTORY": "/run/mps"})
    assert [m.disturbances for m in b.measurements] == [[], [], []]


def test_an_existing_note_is_extended() -> None:
    m = figure(disturbance_note="measured twice")
    b = bench([m], samples("cuda:0.matmul.bf16", other_processes=1))
    flag(b)
    assert m.disturbance_note == "measured twice; 1 other process on the GPU"


def test_samples_are_matched_to_their_own_case_and_device() -> None:
    b = bench(
        [figure(), figure(device="cuda:1"), figure("h2d", None, variant="pageable")],
        [
            *samples("cuda:0.matmul.bf16"),
            *samples("cuda:1.matmul.bf16", "cuda:1"),
            *samples("cuda:0.h2d.pinned", other_processes=1),  # another variant
            *samples("cuda:0.h2d.pageable"),
            *samples("cuda:1.matmul.fp16", "cuda:1", throttle_reasons=["hw_slowdown"]),
        ],
    )
    flag(b, profile([nvidia_gpu(0, "00000000:17:00.0"), nvidia_gpu(1, "00000000:18:00.0")]))
    assert [m.disturbances for m in b.measurements] == [[], [], []]
