"""The amdsmi probe against fake ``amdsmi`` modules shaped like ROCm 6.x's Python bindings."""

from __future__ import annotations

import json
import sys
import types
from enum import IntEnum
from typing import Any

import pytest

from hwadvisor.probes.amd import AmdReport, AmdStatus, amdsmi_child, collect_amdsmi

GIB = 1024**3
MIB = 1024**2


class AmdSmiException(Exception):
    """The bindings' base error (``amdsmi_exception.AmdSmiException``)."""


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, code: int) -> None:
        super().__init__(f"Error code:\n\t{code} | AMDSMI_STATUS_NOT_SUPPORTED")


class AmdSmiMemoryType(IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class AmdSmiTemperatureType(IntEnum):
    EDGE = 0
    HOTSPOT = 1


class AmdSmiTemperatureMetric(IntEnum):
    CURRENT = 0


def _asic(name: str, gfx: str) -> dict[str, Any]:
    return {
        "market_name": name,
        "vendor_id": "0x1002",
        "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
        "subvendor_id": "0x1002",
        "device_id": "0x74a1",
        "rev_id": "0x00",
        "asic_serial": "0x1234567890ABCDEF",
        "oam_id": 0,
        "num_compute_units": 304,
        "target_graphics_version": gfx,
    }


def fake_amdsmi(
    gpus: list[dict[str, Any]] | None = None,
    *,
    init_error: BaseException | None = None,
    unsupported: set[tuple[int, str]] | None = None,
) -> types.ModuleType:
    """A fake ``amdsmi``: handles are indices into ``gpus``; ``unsupported`` lists (index, call)
    pairs that raise AmdSmiLibraryException(NOT_SUPPORTED)."""
    gpus = gpus if gpus is not None else [mi300x()]
    unsupported = unsupported or set()
    mod = types.ModuleType("amdsmi")
    mod.calls = []  # type: ignore[attr-defined]
    mod.AmdSmiException = AmdSmiException  # type: ignore[attr-defined]
    mod.AmdSmiLibraryException = AmdSmiLibraryException  # type: ignore[attr-defined]
    mod.AmdSmiMemoryType = AmdSmiMemoryType  # type: ignore[attr-defined]
    mod.AmdSmiTemperatureType = AmdSmiTemperatureType  # type: ignore[attr-defined]
    mod.AmdSmiTemperatureMetric = AmdSmiTemperatureMetric  # type: ignore[attr-defined]

    def answer(call: str, handle: int, *args: Any) -> Any:
        if (handle, call) in unsupported:
            raise AmdSmiLibraryException(2)
        value = gpus[handle][call]
        return value(*args) if callable(value) else value

    def amdsmi_init(*_flags: Any) -> None:
        mod.calls.append("init")
        if init_error is not None:
            raise init_error

    def amdsmi_shut_down() -> None:
        mod.calls.append("shut_down")

    mod.amdsmi_init = amdsmi_init  # type: ignore[attr-defined]
    mod.amdsmi_shut_down = amdsmi_shut_down  # type: ignore[attr-defined]
    mod.amdsmi_get_processor_handles = lambda: list(range(len(gpus)))  # type: ignore[attr-defined]
    for call in (
        "amdsmi_get_gpu_asic_info",
        "amdsmi_get_gpu_device_uuid",
        "amdsmi_get_gpu_device_bdf",
        "amdsmi_get_gpu_memory_total",
        "amdsmi_get_gpu_memory_usage",
        "amdsmi_get_gpu_vram_usage",
        "amdsmi_get_power_cap_info",
        "amdsmi_get_temp_metric",
    ):
        setattr(mod, call, lambda handle, *args, _c=call: answer(_c, handle, *args))
    return mod


def mi300x() -> dict[str, Any]:
    def temp(sensor: AmdSmiTemperatureType, _metric: Any) -> int:
        if sensor is AmdSmiTemperatureType.EDGE:  # Instinct parts have no edge sensor
            raise AmdSmiLibraryException(2)
        return 41

    return {
        "amdsmi_get_gpu_asic_info": _asic("AMD Instinct MI300X", "gfx942"),
        "amdsmi_get_gpu_device_uuid": "94ff74a1-0000-1000-80ff-ffffffffffff",
        "amdsmi_get_gpu_device_bdf": "0000:05:00.0",
        "amdsmi_get_gpu_memory_total": lambda _t: 192 * GIB,
        "amdsmi_get_gpu_memory_usage": lambda _t: 2 * GIB,
        "amdsmi_get_gpu_vram_usage": {"vram_total": 196608, "vram_used": 2048},
        "amdsmi_get_power_cap_info": {"power_cap": 750_000_000, "default_power_cap": 750_000_000},
        "amdsmi_get_temp_metric": temp,
    }


def radeon() -> dict[str, Any]:
    return {
        "amdsmi_get_gpu_asic_info": _asic("AMD Radeon RX 7900 XTX", "gfx1100"),
        "amdsmi_get_gpu_device_uuid": "5bff744c-0000-1000-8000-000000000001",
        "amdsmi_get_gpu_device_bdf": "0000:03:00.0",
        "amdsmi_get_gpu_memory_total": lambda _t: 24 * GIB,
        "amdsmi_get_gpu_memory_usage": lambda _t: 512 * MIB,
        "amdsmi_get_gpu_vram_usage": {"vram_total": 24576, "vram_used": 512},
        "amdsmi_get_power_cap_info": {"power_cap": 327_000_000},
        "amdsmi_get_temp_metric": lambda _s, _m: 38,
    }


def _check_json(report: AmdReport) -> None:
    data = report.model_dump(mode="json")
    json.dumps(data, allow_nan=False)
    assert AmdReport.model_validate(data) == report


def test_one_instinct_gpu() -> None:
    module = fake_amdsmi()
    report = collect_amdsmi(module)
    _check_json(report)
    assert report.status is AmdStatus.OK
    assert report.message is None
    [gpu] = report.gpus
    assert (gpu.index, gpu.vendor, gpu.backend) == (0, "amd", "rocm")
    assert gpu.name.value == "AMD Instinct MI300X"
    assert gpu.name.source == "amdsmi"
    assert gpu.architecture.value == "gfx942"
    assert gpu.uuid.value == "94ff74a1-0000-1000-80ff-ffffffffffff"
    assert gpu.pci_bus_id.value == "0000:05:00.0"
    assert gpu.vram_total_bytes.value == 192 * GIB
    assert gpu.vram_used_bytes.value == 2 * GIB
    assert gpu.vram_free_bytes.value == 190 * GIB
    assert gpu.vram_free_bytes.source == "derived"
    assert gpu.power_limit_watts.value == 750.0
    assert gpu.temperature_c.value == 41  # EDGE unsupported: the hotspot sensor answered
    assert gpu.multiprocessor_count.value == 304
    assert gpu.compute_capability.value is None
    assert module.calls == ["init", "shut_down"]


def test_two_gpus_and_one_bad_field_hides_nothing_else() -> None:
    module = fake_amdsmi(
        [mi300x(), radeon()],
        unsupported={(1, "amdsmi_get_gpu_asic_info"), (0, "amdsmi_get_power_cap_info")},
    )
    report = collect_amdsmi(module)
    _check_json(report)
    first, second = report.gpus
    assert first.power_limit_watts.value is None
    assert "amdsmi_get_power_cap_info" in (first.power_limit_watts.reason or "")
    assert first.name.value == "AMD Instinct MI300X"
    assert second.name.value is None
    assert "AmdSmiLibraryException" in (second.name.reason or "")
    assert second.architecture.value is None
    assert second.pci_bus_id.value == "0000:03:00.0"
    assert second.vram_total_bytes.value == 24 * GIB
    assert second.power_limit_watts.value == 327.0
    assert second.temperature_c.value == 38


def test_na_strings_become_unknown() -> None:
    gpu = radeon()
    gpu["amdsmi_get_gpu_asic_info"] = {**_asic("N/A", "gfx1100"), "num_compute_units": "N/A"}
    [info] = collect_amdsmi(fake_amdsmi([gpu])).gpus
    assert info.name.value is None
    assert info.name.reason == "market name: not available on this GPU"
    assert info.multiprocessor_count.value is None
    assert info.architecture.value == "gfx1100"


def test_vram_falls_back_to_mib_usage_call() -> None:
    module = fake_amdsmi(
        [radeon()],
        unsupported={(0, "amdsmi_get_gpu_memory_total"), (0, "amdsmi_get_gpu_memory_usage")},
    )
    [gpu] = collect_amdsmi(module).gpus
    assert gpu.vram_total_bytes.value == 24576 * MIB
    assert gpu.vram_used_bytes.value == 512 * MIB


def test_old_bindings_in_millidegrees() -> None:
    gpu = radeon()
    gpu["amdsmi_get_temp_metric"] = lambda _s, _m: 45000
    [info] = collect_amdsmi(fake_amdsmi([gpu])).gpus
    assert info.temperature_c.value == 45


def test_init_failure_is_an_error_with_a_fix() -> None:
    module = fake_amdsmi(init_error=AmdSmiLibraryException(8))
    report = collect_amdsmi(module)
    assert report.status is AmdStatus.ERROR
    assert report.gpus == []
    assert "amdgpu driver" in (report.message or "")
    assert module.calls == ["init"]


def test_no_gpus_is_ok_and_empty() -> None:
    report = collect_amdsmi(fake_amdsmi([]))
    assert report.status is AmdStatus.OK
    assert report.gpus == []


def test_shut_down_even_when_listing_fails() -> None:
    module = fake_amdsmi()

    def broken() -> list[int]:
        raise AmdSmiLibraryException(1)

    module.amdsmi_get_processor_handles = broken  # type: ignore[attr-defined]
    report = collect_amdsmi(module)
    assert report.status is AmdStatus.ERROR
    assert "could not list GPUs" in (report.message or "")
    assert module.calls == ["init", "shut_down"]


def test_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    report = collect_amdsmi()
    assert report.status is AmdStatus.NOT_INSTALLED
    assert "not installed" in (report.message or "")
    assert report.gpus == []


def test_child_entry_point_returns_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi([radeon()]))
    data = amdsmi_child()
    json.dumps(data, allow_nan=False)
    report = AmdReport.model_validate(data)
    assert report.status is AmdStatus.OK
    assert report.gpus[0].name.value == "AMD Radeon RX 7900 XTX"
