"""The fake ``pynvml`` of :mod:`tests.fakes.fake_pynvml`, extended with what benchmark telemetry
reads: the current clocks-event (throttle) reasons, and handles by PCI bus id and by UUID.

As in nvidia-ml-py: ``nvmlDeviceGetCurrentClocksEventReasons`` and the older
``nvmlDeviceGetCurrentClocksThrottleReasons`` answer the same bitmask (``missing`` can take
either away, as old or future bindings do); ``nvmlDeviceGetHandleByPciBusId`` accepts the 4- or
8-digit domain form; unknown ids answer NotFound.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.probes.nvml import normalize_bus_id
from tests.fakes.fake_pynvml import (
    NVML_ERROR_NOT_FOUND,
    FakeGpu,
    FakeHandle,
    FakePynvml,
    NVMLError,
    _give,
)

# nvmlClocksEventReason* / nvmlClocksThrottleReason* (nvml.h).
CLOCK_REASON_CONSTANTS = {
    "GpuIdle": 0x0001,
    "ApplicationsClocksSetting": 0x0002,
    "SwPowerCap": 0x0004,
    "HwSlowdown": 0x0008,
    "SyncBoost": 0x0010,
    "SwThermalSlowdown": 0x0020,
    "HwThermalSlowdown": 0x0040,
    "HwPowerBrakeSlowdown": 0x0080,
    "DisplayClockSetting": 0x0100,
    "None": 0x0000,
}


class FakePynvmlClocks(FakePynvml):
    """:class:`FakePynvml` plus clock-event reasons (per GPU index: a mask or an error)."""

    def __init__(
        self, gpus: list[FakeGpu], *, reasons: dict[int, Any] | None = None, **options: Any
    ) -> None:
        self.reasons = reasons or {}
        super().__init__(gpus, **options)
        for name, value in CLOCK_REASON_CONSTANTS.items():
            setattr(self, f"nvmlClocksEventReason{name}", value)
            setattr(self, f"nvmlClocksThrottleReason{name}", value)

    def _nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeHandle) -> Any:
        self._gpu(handle)
        return _give(self.reasons.get(handle.index, 0))

    def _nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: FakeHandle) -> Any:
        return self._nvmlDeviceGetCurrentClocksEventReasons(handle)

    def _nvmlDeviceGetHandleByPciBusId(self, bus_id: Any) -> FakeHandle:
        wanted = normalize_bus_id(bus_id)
        for index, gpu in enumerate(self.gpus):
            if not isinstance(gpu.bus_id, BaseException) and normalize_bus_id(gpu.bus_id) == wanted:
                _give(gpu.handle_error)
                return FakeHandle(index)
        raise NVMLError(NVML_ERROR_NOT_FOUND)

    def _nvmlDeviceGetHandleByUUID(self, uuid: Any) -> FakeHandle:
        for index, gpu in enumerate(self.gpus):
            if gpu.uuid == uuid:
                _give(gpu.handle_error)
                return FakeHandle(index)
        raise NVMLError(NVML_ERROR_NOT_FOUND)


def make_fake_pynvml_clocks(gpus: list[FakeGpu] | None = None, **options: Any) -> FakePynvmlClocks:
    """A fake ``pynvml`` with ``gpus`` (one default H100 if none) and clock-event reasons."""
    return FakePynvmlClocks([FakeGpu()] if gpus is None else gpus, **options)
