"""The torch probe against fake torch modules (no GPU, no CUDA), and once against the real torch."""

from __future__ import annotations

import importlib.abc
import importlib.metadata
import json
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

from hwadvisor.isolation import run_isolated
from hwadvisor.probes.torch_stack import (
    TorchReport,
    collect_torch,
    cudnn_version_string,
    nccl_version_string,
    pci_bus_id,
    torch_child,
)
from tests.fakes import fake_torch
from tests.fakes.fake_torch import GIB, TorchSpec, build_torch


def _collect(module: types.ModuleType) -> TorchReport:
    report = collect_torch(module)
    # Whatever the fake, the report is strict JSON and survives a round trip.
    data = report.model_dump(mode="json")
    json.dumps(data, allow_nan=False)
    assert TorchReport.model_validate(data) == report
    return report


def test_cpu_only_build() -> None:
    info = _collect(fake_torch.cpu_only()).torch
    assert info.installed is True
    assert info.import_error is None
    assert info.version.value == "2.5.1+cpu"
    assert info.build.value == "cpu"
    assert info.cuda_runtime_version.value is None
    assert info.cuda_runtime_version.reason == "not a CUDA build of PyTorch"
    assert info.hip_version.reason == "not a ROCm build of PyTorch"
    assert info.cudnn_version.value is None
    assert info.nccl_version.value is None
    assert "CPU-only" in (info.nccl_version.reason or "")
    assert info.cuda_available.value is False
    assert info.cuda_warnings == []
    assert info.device_count.value == 0
    assert info.devices == []
    assert info.arch_list.value == []
    assert info.mps_built.value is False
    assert info.mps_available.value is False
    assert info.xpu_available.value is False
    assert info.cpu_capability.value == "AVX2"
    assert info.num_threads.value == 8
    assert info.version.source == "torch"


def test_cuda_build_with_two_devices() -> None:
    report = _collect(fake_torch.cuda_two_devices())
    info = report.torch
    assert info.build.value == "cuda"
    assert info.cuda_runtime_version.value == "12.4"
    assert info.cudnn_version.value == "9.1.0"
    assert info.nccl_version.value == "2.21.5"
    assert info.cuda_available.value is True
    assert info.device_count.value == 2
    assert [d.index for d in info.devices] == [0, 1]
    first, second = info.devices
    assert first.name.value == "NVIDIA GeForce RTX 4090"
    assert first.total_memory_bytes.value == 24 * GIB
    assert first.multiprocessor_count.value == 128
    assert first.compute_capability.value == "8.9"
    assert first.uuid.value == "6b9c1c3e-1d2a-4f6e-9a53-0c1d2e3f4a5b"
    assert first.pci_bus_id.value == "00000000:17:00.0"
    assert second.pci_bus_id.value == "00000000:65:00.0"
    assert second.uuid.value == "0f0e0d0c-0b0a-0908-0706-050403020100"
    assert first.architecture.value is None
    assert info.arch_list.value == ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    assert info.cpu_capability.value == "AVX512"
    assert info.num_threads.value == 16
    # NVIDIA GPUs are NVML's to report: torch adds none.
    assert report.accelerators == []


def test_cuda_unknown_error_is_recorded_not_raised() -> None:
    info = _collect(fake_torch.cuda_unknown_error()).torch
    assert info.build.value == "cuda"
    assert info.cuda_available.value is False
    assert info.cuda_warnings == [fake_torch.CUDA_UNKNOWN_ERROR]
    assert info.device_count.value == 0
    assert info.devices == []


@pytest.mark.parametrize("user_filter", ["ignore", "once", "default", "error"])
def test_is_available_warning_recorded_whatever_the_filters(user_filter: str) -> None:
    # The user's own filters (PYTHONWARNINGS=ignore, -W error) must not hide or raise the
    # warning, and the probe's recording must not leak warnings out.
    module = fake_torch.cuda_unknown_error()
    with warnings.catch_warnings(record=True) as outside:
        warnings.simplefilter(user_filter)  # type: ignore[arg-type]
        first = collect_torch(module).torch.cuda_warnings
        second = collect_torch(module).torch.cuda_warnings
    assert first == second == [fake_torch.CUDA_UNKNOWN_ERROR]
    assert outside == []


def test_repeated_warning_recorded_once() -> None:
    text = "CUDA initialization: The NVIDIA driver on your system is too old (found version 11040)."
    module = build_torch(
        TorchSpec(version="2.5.1+cu124", cuda="12.4", available_warnings=[text, text, "other"])
    )
    assert collect_torch(module).torch.cuda_warnings == [text, "other"]


def test_rocm_build_reports_amd_accelerator() -> None:
    report = _collect(fake_torch.rocm_one_amd())
    info = report.torch
    assert info.build.value == "rocm"
    assert info.hip_version.value == "6.2.41133-dd7f95766"
    assert info.cuda_runtime_version.value is None
    assert "HIP" in (info.cuda_runtime_version.reason or "")
    assert info.cudnn_version.value is None
    assert "MIOpen" in (info.cudnn_version.reason or "")
    assert info.nccl_version.value == "2.20.5"
    assert info.cuda_available.value is True
    assert len(info.devices) == 1
    assert info.devices[0].architecture.value == "gfx90a:sramecc+:xnack-"
    assert info.devices[0].compute_capability.value == "9.0"
    [gpu] = report.accelerators
    assert (gpu.vendor, gpu.backend, gpu.index) == ("amd", "rocm", 0)
    assert gpu.name.value == "AMD Instinct MI210"
    assert gpu.architecture.value == "gfx90a"
    assert gpu.pci_bus_id.value == "00000000:03:00.0"
    assert gpu.uuid.value == "58ff7a63-0000-1000-8000-00000000c0de"
    assert gpu.vram_total_bytes.value == 64 * GIB
    assert gpu.multiprocessor_count.value == 104
    assert gpu.compute_capability.value is None
    assert gpu.name.source == "torch"


def test_mps_built_but_unavailable() -> None:
    report = _collect(fake_torch.mps_unavailable())
    assert report.torch.mps_built.value is True
    assert report.torch.mps_available.value is False
    assert report.torch.build.value == "cpu"
    assert report.accelerators == []


def test_mps_available_adds_one_apple_gpu() -> None:
    report = _collect(fake_torch.mps_available())
    [gpu] = report.accelerators
    assert (gpu.vendor, gpu.backend, gpu.index) == ("apple", "mps", 0)
    assert gpu.name.value == "Apple GPU (MPS)"
    assert gpu.vram_total_bytes.value is None
    assert "unified memory" in (gpu.vram_total_bytes.reason or "")


def test_xpu_build_adds_intel_gpus() -> None:
    arc = types.SimpleNamespace(name="Intel(R) Arc(TM) A770 Graphics", total_memory=16 * GIB)
    module = build_torch(
        TorchSpec(version="2.5.1+xpu", xpu="20240200", xpu_available=True, xpu_devices=[arc])
    )
    report = _collect(module)
    assert report.torch.build.value == "xpu"
    assert report.torch.xpu_available.value is True
    [gpu] = report.accelerators
    assert (gpu.vendor, gpu.backend) == ("intel", "xpu")
    assert gpu.name.value == "Intel(R) Arc(TM) A770 Graphics"
    assert gpu.vram_total_bytes.value == 16 * GIB


def test_failing_device_properties_hide_nothing_else() -> None:
    info = _collect(fake_torch.props_raise()).torch
    assert info.device_count.value == 2
    assert len(info.devices) == 2
    for device in info.devices:
        assert device.name.value is None
        assert "RuntimeError: CUDA error: unspecified launch failure" in (device.name.reason or "")
        assert device.compute_capability.value is None
        assert device.pci_bus_id.value is None
    # The other facts are still there.
    assert info.version.value == "2.5.1+cu124"
    assert info.build.value == "cuda"
    assert info.cudnn_version.value == "9.1.0"
    assert info.nccl_version.value == "2.21.5"
    assert info.arch_list.value == ["sm_80", "sm_86", "sm_90"]
    assert info.num_threads.value == 8


def test_missing_nccl_is_unknown_with_reason() -> None:
    info = _collect(fake_torch.no_nccl()).torch
    assert info.nccl_version.value is None
    assert (info.nccl_version.reason or "").startswith("NCCL not available: AttributeError")
    assert info.cudnn_version.value == "8.9.7"
    assert info.cuda_runtime_version.value == "12.1"
    assert len(info.devices) == 1


def test_nccl_absent_on_cpu_build_is_not_called() -> None:
    spec = TorchSpec()
    module = build_torch(spec)
    module.cuda.nccl.version = lambda: pytest.fail("nccl.version() called on a CPU build")
    assert collect_torch(module).torch.nccl_version.value is None


def test_old_torch_without_backends_keeps_other_facts() -> None:
    info = _collect(fake_torch.old_torch_without_backends()).torch
    assert info.mps_built.value is None
    assert "AttributeError" in (info.mps_built.reason or "")
    assert info.mps_available.value is None
    assert info.cpu_capability.value is None
    assert info.xpu_available.value is False  # no torch.xpu at all: certainly not available
    assert info.version.value == "1.11.0"
    assert info.build.value == "cpu"
    assert info.num_threads.value == 8


def test_device_without_uuid_or_pci_fields() -> None:
    spec = TorchSpec(
        version="2.0.1+cu118",
        cuda="11.8",
        available=True,
        devices=[fake_torch.device_props(uuid=None, pci=None)],
    )
    [device] = _collect(build_torch(spec)).torch.devices
    assert device.uuid.value is None
    assert device.uuid.reason == "this torch does not report device UUIDs"
    assert device.pci_bus_id.value is None
    assert device.name.value == "NVIDIA GeForce RTX 4090"


def test_unreadable_torch_version_module() -> None:
    module = fake_torch.cpu_only()
    del module.version
    info = _collect(module).torch
    assert info.build.value is None
    assert "torch.version unreadable" in (info.build.reason or "")
    assert info.cuda_runtime_version.value is None
    assert info.version.value == "2.5.1+cpu"


def test_torch_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail as if absent
    report = collect_torch()
    info = report.torch
    assert info.installed is False
    assert info.import_error is None
    assert info.version.value is None
    assert info.version.reason == "torch is not installed"
    assert info.build.reason == "torch is not installed"
    assert info.cuda_available.value is None
    assert report.accelerators == []


class _RaisingFinder(importlib.abc.MetaPathFinder):
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> None:
        if fullname == "torch":
            raise self.exc


def _installed_torch_version() -> str | None:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


@pytest.mark.parametrize(
    "exc",
    [
        OSError("libcudnn.so.9: cannot open shared object file: No such file or directory"),
        ImportError("undefined symbol: ncclCommRegister"),
        ModuleNotFoundError("No module named 'typing_extensions'", name="typing_extensions"),
    ],
)
def test_broken_torch_import(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_RaisingFinder(exc), *sys.meta_path])
    info = collect_torch().torch
    assert info.installed is True
    assert info.import_error is not None
    assert type(exc).__name__ in info.import_error
    assert str(exc).split(":")[0] in info.import_error
    assert info.build.value is None
    assert (info.build.reason or "").startswith("import torch failed:")
    assert info.version.value == _installed_torch_version()


def test_torch_child_returns_json_of_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch.cuda_two_devices())
    data = torch_child()
    json.dumps(data, allow_nan=False)
    report = TorchReport.model_validate(data)
    assert report.torch.device_count.value == 2
    assert report.torch.devices[1].pci_bus_id.value == "00000000:65:00.0"


@pytest.mark.parametrize("name", sorted(fake_torch.PRESETS))
def test_every_preset_collects(name: str) -> None:
    report = _collect(fake_torch.PRESETS[name]())
    assert report.torch.installed is True
    assert report.torch.version.known


@pytest.mark.parametrize(
    ("raw", "text"),
    [(90100, "9.1.0"), (90501, "9.5.1"), (8907, "8.9.7"), (7605, "7.6.5")],
)
def test_cudnn_version_string(raw: int, text: str) -> None:
    assert cudnn_version_string(raw) == text


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ((2, 21, 5), "2.21.5"),
        ((2, 21, 5, "+cuda12.4"), "2.21.5+cuda12.4"),
        (2708, "2.7.8"),
        (21903, "2.19.3"),
    ],
)
def test_nccl_version_string(raw: Any, text: str) -> None:
    assert nccl_version_string(raw) == text


def test_pci_bus_id_matches_nvml_form() -> None:
    assert pci_bus_id(0, 0x17, 0) == "00000000:17:00.0"
    assert pci_bus_id(1, 0xAF, 0x1F) == "00000001:AF:1F.0"


def test_real_torch_in_a_child_process() -> None:
    """The installed torch, read in a spawned child as the scan does (CUDA never in this one)."""
    installed = _installed_torch_version()
    result = run_isolated("hwadvisor.probes.torch_stack:torch_child", timeout_s=120)
    assert result.status == "ok", (result.error, result.stderr_tail)
    report = TorchReport.model_validate(result.value)
    if installed is None:
        assert report.torch.installed is False
        return
    assert report.torch.installed is True
    assert report.torch.version.value == installed
    assert report.torch.build.value in ("cpu", "cuda", "rocm", "xpu")
    if report.torch.build.value == "cpu":
        assert report.torch.devices == []
        assert report.torch.cuda_runtime_version.value is None
    assert report.torch.num_threads.value is not None and report.torch.num_threads.value >= 1
