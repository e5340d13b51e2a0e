"""A fake ``pynvml`` (nvidia-ml-py) module built from a declarative spec.

In the spirit of codecarbon's ``tests/fake_modules/pynvml``, but closer to the real binding:

* ``NVMLError(code)`` returns the per-code subclass (``NVMLError_NotSupported``, ...), generated
  from the ``NVML_ERROR_*`` constants exactly as nvidia-ml-py's ``_extractNVMLErrorsAsClasses``
  does, and carries the code in ``.value``;
* device calls before ``nvmlInit`` (or after ``nvmlShutdown``) raise ``Uninitialized``;
* string getters decode bytes strictly, as ``convertStrBytes`` does, and keep the raw function
  in ``__wrapped__`` (set ``decode_strings=False`` to mimic old bindings that return bytes).

Any value in the spec may be an exception instance (use :func:`err`): the fake raises it on every
call that reads that value. ``missing`` names functions the module must not have at all.
"""

from __future__ import annotations

import functools
import string
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hwadvisor.importers.nvidia_smi_xml import parse_nvidia_smi_xml
from hwadvisor.model.facts import Fact
from hwadvisor.model.profile import GpuInfo

# --------------------------------------------------------------------------------------------
# Constants (values from nvml.h, as nvidia-ml-py defines them)

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_INSUFFICIENT_POWER = 8
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_IRQ_ISSUE = 11
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_OPERATING_SYSTEM = 17
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_IN_USE = 19
NVML_ERROR_MEMORY = 20
NVML_ERROR_NO_DATA = 21
NVML_ERROR_UNKNOWN = 999

NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_CLOCK_VIDEO = 3
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
NVML_NVLINK_MAX_LINKS = 18
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0
NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1

NVML_TOPOLOGY_INTERNAL = 0
NVML_TOPOLOGY_SINGLE = 10
NVML_TOPOLOGY_MULTIPLE = 20
NVML_TOPOLOGY_HOSTBRIDGE = 30
NVML_TOPOLOGY_NODE = 40
NVML_TOPOLOGY_SYSTEM = 50

NVML_DEVICE_ARCH_KEPLER = 2
NVML_DEVICE_ARCH_MAXWELL = 3
NVML_DEVICE_ARCH_PASCAL = 4
NVML_DEVICE_ARCH_VOLTA = 5
NVML_DEVICE_ARCH_TURING = 6
NVML_DEVICE_ARCH_AMPERE = 7
NVML_DEVICE_ARCH_ADA = 8
NVML_DEVICE_ARCH_HOPPER = 9
NVML_DEVICE_ARCH_BLACKWELL = 10
NVML_DEVICE_ARCH_UNKNOWN = 0xFFFFFFFF

ARCHITECTURE_CODES = {
    "Kepler": NVML_DEVICE_ARCH_KEPLER,
    "Maxwell": NVML_DEVICE_ARCH_MAXWELL,
    "Pascal": NVML_DEVICE_ARCH_PASCAL,
    "Volta": NVML_DEVICE_ARCH_VOLTA,
    "Turing": NVML_DEVICE_ARCH_TURING,
    "Ampere": NVML_DEVICE_ARCH_AMPERE,
    "Ada Lovelace": NVML_DEVICE_ARCH_ADA,
    "Hopper": NVML_DEVICE_ARCH_HOPPER,
    "Blackwell": NVML_DEVICE_ARCH_BLACKWELL,
}

_CONSTANTS = {name: value for name, value in dict(globals()).items() if name.startswith("NVML_")}


# --------------------------------------------------------------------------------------------
# Errors, structured as nvidia-ml-py's


class NVMLError(Exception):
    """``NVMLError(code)`` maps to the subclass generated for that code, like the real one."""

    _valClassMapping: dict[int, type[NVMLError]] = {}  # noqa: RUF012 - mirrors the binding
    _errcode_to_string = {  # noqa: RUF012
        NVML_ERROR_UNINITIALIZED: "Uninitialized",
        NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
        NVML_ERROR_NOT_SUPPORTED: "Not Supported",
        NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
        NVML_ERROR_NOT_FOUND: "Not Found",
        NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
        NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
        NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
        NVML_ERROR_GPU_IS_LOST: "GPU is lost",
        NVML_ERROR_LIB_RM_VERSION_MISMATCH: "RM has detected an NVML/RM version mismatch.",
        NVML_ERROR_UNKNOWN: "Unknown Error",
    }
    value: int

    def __new__(cls, value: int) -> NVMLError:
        if cls is NVMLError:
            cls = NVMLError._valClassMapping.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self) -> str:
        return self._errcode_to_string.get(self.value, f"NVML Error with code {self.value}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NVMLError) and self.value == other.value

    __hash__ = None  # type: ignore[assignment]  # as the binding: __eq__ without __hash__


def _extract_errors_as_classes() -> dict[str, type[NVMLError]]:
    """``NVML_ERROR_LIB_RM_VERSION_MISMATCH`` -> ``NVMLError_LibRmVersionMismatch``, etc."""
    classes: dict[str, type[NVMLError]] = {}
    for name, code in _CONSTANTS.items():
        if not name.startswith("NVML_ERROR_"):
            continue
        class_name = "NVMLError_" + string.capwords(name.replace("NVML_ERROR_", ""), "_").replace(
            "_", ""
        )

        def new(cls: type[NVMLError], *args: Any, _code: int = code) -> NVMLError:
            return NVMLError.__new__(cls, _code)

        subclass = type(class_name, (NVMLError,), {"__new__": new})
        NVMLError._valClassMapping[code] = subclass
        classes[class_name] = subclass
    return classes


ERROR_CLASSES = _extract_errors_as_classes()
globals().update(ERROR_CLASSES)


def err(code: int) -> NVMLError:
    """The error the fake raises for a spec value: ``name=err(NVML_ERROR_NOT_SUPPORTED)``."""
    return NVMLError(code)


# --------------------------------------------------------------------------------------------
# The spec


@dataclass
class FakeMig:
    """One MIG instance."""

    uuid: Any = "MIG-00000000-0000-0000-0000-000000000000"
    name: Any = "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    memory_total: Any = 10 * 1024**3
    gpu_instance_id: Any = 1
    compute_instance_id: Any = 0
    multiprocessor_count: Any = 16
    compute_processes: Any = field(default_factory=list)
    """Pids of the compute processes on this MIG instance, or an error."""


@dataclass
class FakeGpu:
    """One GPU: what each NVML call answers (in NVML's units: bytes, mW, MHz)."""

    name: Any = "NVIDIA H100 80GB HBM3"
    uuid: Any = "GPU-00000000-0000-0000-0000-000000000000"
    serial: Any = "1650000000001"
    bus_id: Any = "00000000:17:00.0"
    architecture: Any = NVML_DEVICE_ARCH_HOPPER
    cuda_compute_capability: Any = (9, 0)
    memory: Any = (85520809984, 84987871232, 532938752)
    """(total, free, used) bytes, or an error."""
    multiprocessor_count: Any = field(default_factory=lambda: err(NVML_ERROR_NOT_SUPPORTED))
    """nvmlDeviceGetAttributes: real NVML answers it for MIG devices only."""
    enforced_power_limit_mw: Any = 700000
    power_usage_mw: Any = 71500
    clocks_mhz: Any = field(default_factory=lambda: {NVML_CLOCK_SM: 1980, NVML_CLOCK_MEM: 2619})
    max_clocks_mhz: Any = field(default_factory=lambda: {NVML_CLOCK_SM: 1980, NVML_CLOCK_MEM: 2619})
    pcie_generation: Any = 5
    pcie_generation_max: Any = 5
    pcie_width: Any = 16
    pcie_width_max: Any = 16
    temperature_c: Any = 34
    utilization: Any = (0, 0)
    """(gpu %, memory %), or an error."""
    compute_processes: Any = field(default_factory=list)
    """Pids of the compute processes on the GPU (nvmlDeviceGetComputeRunningProcesses), or an
    error."""
    ecc_mode: Any = (NVML_FEATURE_ENABLED, NVML_FEATURE_ENABLED)
    persistence_mode: Any = NVML_FEATURE_ENABLED
    mig_mode: Any = (NVML_DEVICE_MIG_DISABLE, NVML_DEVICE_MIG_DISABLE)
    max_mig_devices: Any = 7
    mig_devices: dict[int, FakeMig] = field(default_factory=dict)
    """MIG slot -> instance; other slots answer NotFound."""
    nvlinks: dict[int, str] = field(default_factory=dict)
    """Active NVLink index -> the PCI bus id at its far end. None active: NotSupported."""
    nvlink_error: NVMLError | None = None
    """Raised by every NVLink call instead, when set."""
    handle_error: NVMLError | None = None
    """Raised by nvmlDeviceGetHandleByIndex for this GPU (e.g. GpuIsLost)."""
    vbios_version: Any = "96.00.74.00.0D"
    ecc_errors: Any = field(
        default_factory=lambda: {
            (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC): 0,
            (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC): 0,
            (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC): 0,
            (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC): 0,
        }
    )
    """nvmlDeviceGetTotalEccErrors: (error type, counter type) -> count or error (a missing
    pair answers NotSupported); or one error for every pair."""
    retired_pages: Any = field(default_factory=lambda: err(NVML_ERROR_NOT_SUPPORTED))
    """nvmlDeviceGetRetiredPages: cause -> page addresses or error; or one error for every
    cause (Ampere and newer: NotSupported, row remapping replaced page retirement)."""
    retired_pages_pending: Any = field(default_factory=lambda: err(NVML_ERROR_NOT_SUPPORTED))
    """nvmlDeviceGetRetiredPagesPendingStatus: an enable state, or an error."""
    remapped_rows: Any = (0, 0, 0, 0)
    """nvmlDeviceGetRemappedRows: (corrected rows, uncorrected rows, pending, failure occurred),
    or an error (NotSupported before Ampere)."""


@dataclass(frozen=True)
class FakeHandle:
    index: int
    mig_slot: int | None = None


class _Struct:
    """A plain stand-in for the binding's ctypes structures."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        return f"_Struct({self.__dict__!r})"


def _give(value: Any) -> Any:
    if isinstance(value, BaseException):
        raise value
    return value


def _convert_str_bytes(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Like the binding's ``convertStrBytes``: bytes results are decoded strictly."""

    @functools.wraps(fn)
    def wrapper(*args: Any) -> Any:
        result = fn(*args)
        return result.decode() if isinstance(result, bytes) else result

    return wrapper


class FakePynvml(types.ModuleType):
    """A module object with the binding's names; records calls in :attr:`calls`."""

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        init_error: NVMLError | None = None,
        driver_version: Any = "550.54.15",
        cuda_driver_version: Any = 12040,
        nvml_version: Any = "12.550.54.15",
        topology: dict[tuple[int, int], int] | None = None,
        default_topology: int = NVML_TOPOLOGY_SYSTEM,
        missing: Iterable[str] = (),
        decode_strings: bool = True,
    ) -> None:
        super().__init__("pynvml", "Fake pynvml built by tests.fakes.fake_pynvml")
        self.gpus = gpus
        self.init_error = init_error
        self.driver_version = driver_version
        self.cuda_driver_version = cuda_driver_version
        self.nvml_version = nvml_version
        self.topology = topology or {}
        self.default_topology = default_topology
        self.initialized = 0
        self.init_calls = 0
        self.shutdown_calls = 0
        self.calls: list[str] = []
        self.__dict__.update(_CONSTANTS)
        self.__dict__.update(ERROR_CLASSES)
        self.NVMLError = NVMLError
        strings = {
            "nvmlSystemGetDriverVersion",
            "nvmlSystemGetNVMLVersion",
            "nvmlDeviceGetName",
            "nvmlDeviceGetUUID",
            "nvmlDeviceGetSerial",
            "nvmlDeviceGetVbiosVersion",
        }
        for name in dir(type(self)):
            if not name.startswith("_nvml"):
                continue
            public = name[1:]
            if public in set(missing):
                continue
            fn = self._recorded(public, getattr(self, name))
            if decode_strings and public in strings:
                fn = _convert_str_bytes(fn)
            setattr(self, public, fn)

    # -- plumbing --------------------------------------------------------------------------

    def _recorded(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            self.calls.append(name)
            if name not in {"nvmlInit", "nvmlInitWithFlags", "nvmlErrorString"} and (
                self.initialized <= 0
            ):
                raise NVMLError(NVML_ERROR_UNINITIALIZED)
            return fn(*args)

        return call

    def _gpu(self, handle: FakeHandle) -> FakeGpu:
        if not isinstance(handle, FakeHandle) or handle.mig_slot is not None:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[handle.index]

    def _mig(self, handle: FakeHandle) -> FakeMig:
        return self.gpus[handle.index].mig_devices[handle.mig_slot or 0]

    # -- library -------------------------------------------------------------------------

    def _nvmlInit(self) -> None:
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error
        self.initialized += 1

    def _nvmlInitWithFlags(self, flags: int) -> None:
        self._nvmlInit()

    def _nvmlShutdown(self) -> None:
        self.shutdown_calls += 1
        self.initialized -= 1

    def _nvmlErrorString(self, code: int) -> str:
        return str(NVMLError(code))

    def _nvmlSystemGetDriverVersion(self) -> Any:
        return _give(self.driver_version)

    def _nvmlSystemGetCudaDriverVersion(self) -> Any:
        return _give(self.cuda_driver_version)

    def _nvmlSystemGetCudaDriverVersion_v2(self) -> Any:
        return _give(self.cuda_driver_version)

    def _nvmlSystemGetNVMLVersion(self) -> Any:
        return _give(self.nvml_version)

    def _nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def _nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        if not 0 <= index < len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        _give(self.gpus[index].handle_error)
        return FakeHandle(index)

    # -- device and MIG device -----------------------------------------------------------

    def _nvmlDeviceGetName(self, handle: FakeHandle) -> Any:
        if handle.mig_slot is not None:
            return _give(self._mig(handle).name)
        return _give(self._gpu(handle).name)

    def _nvmlDeviceGetUUID(self, handle: FakeHandle) -> Any:
        if handle.mig_slot is not None:
            return _give(self._mig(handle).uuid)
        return _give(self._gpu(handle).uuid)

    def _nvmlDeviceGetSerial(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).serial)

    def _nvmlDeviceGetMemoryInfo(self, handle: FakeHandle) -> Any:
        if handle.mig_slot is not None:
            total = _give(self._mig(handle).memory_total)
            return _Struct(total=total, free=total, used=0)
        total, free, used = _give(self._gpu(handle).memory)
        return _Struct(total=total, free=free, used=used)

    def _nvmlDeviceGetAttributes(self, handle: FakeHandle) -> Any:
        if handle.mig_slot is not None:
            count = _give(self._mig(handle).multiprocessor_count)
        else:
            count = _give(self._gpu(handle).multiprocessor_count)
        return _Struct(multiprocessorCount=count)

    def _nvmlDeviceGetGpuInstanceId(self, handle: FakeHandle) -> Any:
        if handle.mig_slot is None:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _give(self._mig(handle).gpu_instance_id)

    def _nvmlDeviceGetComputeInstanceId(self, handle: FakeHandle) -> Any:
        if handle.mig_slot is None:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _give(self._mig(handle).compute_instance_id)

    # -- device only -----------------------------------------------------------------------

    def _nvmlDeviceGetPciInfo(self, handle: FakeHandle) -> Any:
        bus_id = _give(self._gpu(handle).bus_id)
        raw = bus_id.encode() if isinstance(bus_id, str) else bus_id
        # The binding's struct holds c_char arrays: bytes, with the legacy 4-digit domain form.
        return _Struct(busId=raw, busIdLegacy=raw[4:])

    def _nvmlDeviceGetArchitecture(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).architecture)

    def _nvmlDeviceGetCudaComputeCapability(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).cuda_compute_capability)

    def _nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).enforced_power_limit_mw)

    def _nvmlDeviceGetPowerUsage(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).power_usage_mw)

    def _nvmlDeviceGetClockInfo(self, handle: FakeHandle, clock: int) -> Any:
        clocks = _give(self._gpu(handle).clocks_mhz)
        return _give(clocks.get(clock, err(NVML_ERROR_NOT_SUPPORTED)))

    def _nvmlDeviceGetMaxClockInfo(self, handle: FakeHandle, clock: int) -> Any:
        clocks = _give(self._gpu(handle).max_clocks_mhz)
        return _give(clocks.get(clock, err(NVML_ERROR_NOT_SUPPORTED)))

    def _nvmlDeviceGetCurrPcieLinkGeneration(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).pcie_generation)

    def _nvmlDeviceGetMaxPcieLinkGeneration(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).pcie_generation_max)

    def _nvmlDeviceGetCurrPcieLinkWidth(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).pcie_width)

    def _nvmlDeviceGetMaxPcieLinkWidth(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).pcie_width_max)

    def _nvmlDeviceGetTemperature(self, handle: FakeHandle, sensor: int) -> Any:
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _give(self._gpu(handle).temperature_c)

    def _nvmlDeviceGetTemperatureV(self, handle: FakeHandle, sensor: int) -> Any:
        return self._nvmlDeviceGetTemperature(handle, sensor)

    def _nvmlDeviceGetUtilizationRates(self, handle: FakeHandle) -> Any:
        gpu, memory = _give(self._gpu(handle).utilization)
        return _Struct(gpu=gpu, memory=memory)

    def _nvmlDeviceGetComputeRunningProcesses(self, handle: FakeHandle) -> Any:
        if handle.mig_slot is not None:
            pids = _give(self._mig(handle).compute_processes)
        else:
            pids = _give(self._gpu(handle).compute_processes)
        # nvmlProcessInfo_t: the binding reports usedGpuMemory None where NVML cannot tell.
        return [
            _Struct(
                pid=pid, usedGpuMemory=None, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF
            )
            for pid in pids
        ]

    def _nvmlDeviceGetComputeRunningProcesses_v3(self, handle: FakeHandle) -> Any:
        return self._nvmlDeviceGetComputeRunningProcesses(handle)

    def _nvmlDeviceGetComputeRunningProcesses_v2(self, handle: FakeHandle) -> Any:
        return self._nvmlDeviceGetComputeRunningProcesses(handle)

    def _nvmlDeviceGetEccMode(self, handle: FakeHandle) -> Any:
        return list(_give(self._gpu(handle).ecc_mode))

    def _nvmlDeviceGetPersistenceMode(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).persistence_mode)

    def _nvmlDeviceGetMigMode(self, handle: FakeHandle) -> Any:
        return list(_give(self._gpu(handle).mig_mode))

    def _nvmlDeviceGetMaxMigDeviceCount(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).max_mig_devices)

    def _nvmlDeviceGetMigDeviceHandleByIndex(self, handle: FakeHandle, slot: int) -> Any:
        gpu = self._gpu(handle)
        if not 0 <= slot < _give(gpu.max_mig_devices):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if slot not in gpu.mig_devices:
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        return FakeHandle(handle.index, slot)

    def _nvmlDeviceGetVbiosVersion(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).vbios_version)

    def _nvmlDeviceGetTotalEccErrors(self, handle: FakeHandle, kind: int, counter: int) -> Any:
        counts = _give(self._gpu(handle).ecc_errors)
        return _give(counts.get((kind, counter), err(NVML_ERROR_NOT_SUPPORTED)))

    def _nvmlDeviceGetRetiredPages(self, handle: FakeHandle, cause: int) -> Any:
        pages = _give(self._gpu(handle).retired_pages)
        if cause not in (0, 1):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return list(_give(pages.get(cause, [])))

    def _nvmlDeviceGetRetiredPagesPendingStatus(self, handle: FakeHandle) -> Any:
        return _give(self._gpu(handle).retired_pages_pending)

    def _nvmlDeviceGetRemappedRows(self, handle: FakeHandle) -> Any:
        return tuple(_give(self._gpu(handle).remapped_rows))

    def _nvmlDeviceGetTopologyCommonAncestor(self, a: FakeHandle, b: FakeHandle) -> Any:
        self._gpu(a)  # both must be whole GPUs, as in NVML
        self._gpu(b)
        pair = (min(a.index, b.index), max(a.index, b.index))
        return _give(self.topology.get(pair, self.default_topology))

    def _nvmlDeviceGetNvLinkState(self, handle: FakeHandle, link: int) -> Any:
        gpu = self._gpu(handle)
        _give(gpu.nvlink_error)
        if not 0 <= link < NVML_NVLINK_MAX_LINKS:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if not gpu.nvlinks:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return NVML_FEATURE_ENABLED if link in gpu.nvlinks else NVML_FEATURE_DISABLED

    def _nvmlDeviceGetNvLinkRemotePciInfo(self, handle: FakeHandle, link: int) -> Any:
        gpu = self._gpu(handle)
        _give(gpu.nvlink_error)
        if link not in gpu.nvlinks:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _Struct(busId=gpu.nvlinks[link].encode(), busIdLegacy=b"")


def make_fake_pynvml(gpus: list[FakeGpu] | None = None, **options: Any) -> FakePynvml:
    """A fake ``pynvml`` with ``gpus`` (one default H100 if none); see :class:`FakePynvml`."""
    return FakePynvml([FakeGpu()] if gpus is None else gpus, **options)


# --------------------------------------------------------------------------------------------
# From a recorded nvidia-smi -q -x


def _or_unsupported(f: Fact[Any], convert: Callable[[Any], Any] = lambda v: v) -> Any:
    # A value nvidia-smi could not show is one NVML would not give either.
    return convert(f.value) if f.value is not None else err(NVML_ERROR_NOT_SUPPORTED)


def _feature(f: Fact[Any], pair: bool) -> Any:
    if f.value is None:
        return err(NVML_ERROR_NOT_SUPPORTED)
    state = NVML_FEATURE_ENABLED if f.value else NVML_FEATURE_DISABLED
    return (state, state) if pair else state


def _ecc_from(gpu: GpuInfo) -> dict[tuple[int, int], Any]:
    unc, vol, agg = NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC
    return {
        (NVML_MEMORY_ERROR_TYPE_CORRECTED, vol): _or_unsupported(gpu.ecc_errors_corrected_volatile),
        (unc, vol): _or_unsupported(gpu.ecc_errors_uncorrected_volatile),
        (unc, agg): _or_unsupported(gpu.ecc_errors_uncorrected_aggregate),
    }


def _remapped_from(gpu: GpuInfo) -> Any:
    facts = (gpu.remapped_rows_uncorrectable, gpu.remapped_rows_pending, gpu.remapped_rows_failed)
    if any(f.value is None for f in facts):
        return err(NVML_ERROR_NOT_SUPPORTED)
    return (
        0,
        gpu.remapped_rows_uncorrectable.value,
        int(bool(facts[1].value)),
        int(bool(facts[2].value)),
    )


def fake_from_nvidia_smi_xml(text: str, **options: Any) -> FakePynvml:
    """A fake whose GPUs answer what a recorded ``nvidia-smi -q -x`` shows, field by field."""
    info, parsed = parse_nvidia_smi_xml(text)
    gpus: list[FakeGpu] = []
    for gpu in parsed:
        memory: Any = (
            (gpu.vram_total_bytes.value, gpu.vram_free_bytes.value, gpu.vram_used_bytes.value)
            if gpu.vram_total_bytes.value is not None
            else err(NVML_ERROR_NOT_SUPPORTED)
        )
        clocks = {
            NVML_CLOCK_SM: _or_unsupported(gpu.sm_clock_mhz),
            NVML_CLOCK_MEM: _or_unsupported(gpu.memory_clock_mhz),
        }
        max_clocks = {
            NVML_CLOCK_SM: _or_unsupported(gpu.sm_clock_max_mhz),
            NVML_CLOCK_MEM: _or_unsupported(gpu.memory_clock_max_mhz),
        }
        migs = {
            i: FakeMig(
                uuid=_or_unsupported(m.uuid),
                name=_or_unsupported(m.name),
                memory_total=_or_unsupported(m.memory_total_bytes),
                gpu_instance_id=_or_unsupported(m.gpu_instance_id),
                compute_instance_id=_or_unsupported(m.compute_instance_id),
                multiprocessor_count=_or_unsupported(m.multiprocessor_count),
            )
            for i, m in enumerate(gpu.mig_instances)
        }
        gpus.append(
            FakeGpu(
                name=_or_unsupported(gpu.name),
                uuid=_or_unsupported(gpu.uuid),
                serial=_or_unsupported(gpu.serial),
                bus_id=_or_unsupported(gpu.pci_bus_id),
                architecture=_or_unsupported(gpu.architecture, ARCHITECTURE_CODES.__getitem__),
                cuda_compute_capability=_or_unsupported(
                    gpu.compute_capability, lambda v: tuple(int(p) for p in v.split("."))
                ),
                memory=memory,
                enforced_power_limit_mw=_or_unsupported(
                    gpu.power_limit_watts, lambda w: round(w * 1000)
                ),
                power_usage_mw=_or_unsupported(gpu.power_draw_watts, lambda w: round(w * 1000)),
                clocks_mhz=clocks,
                max_clocks_mhz=max_clocks,
                pcie_generation=_or_unsupported(gpu.pcie_generation),
                pcie_generation_max=_or_unsupported(gpu.pcie_generation_max),
                pcie_width=_or_unsupported(gpu.pcie_width),
                pcie_width_max=_or_unsupported(gpu.pcie_width_max),
                temperature_c=_or_unsupported(gpu.temperature_c),
                utilization=_or_unsupported(gpu.utilization_percent, lambda u: (u, 0)),
                ecc_mode=_feature(gpu.ecc_enabled, pair=True),
                persistence_mode=_feature(gpu.persistence_mode, pair=False),
                mig_mode=_feature(gpu.mig_enabled, pair=True),
                max_mig_devices=7 if migs else 0,
                mig_devices=migs,
                vbios_version=_or_unsupported(gpu.vbios_version),
                ecc_errors=_ecc_from(gpu),
                # The XML gives the count: the fake lists that many pages for one cause.
                retired_pages=_or_unsupported(gpu.retired_pages, lambda n: {0: [0] * n, 1: []}),
                retired_pages_pending=_or_unsupported(gpu.retired_pages_pending, int),
                remapped_rows=_remapped_from(gpu),
            )
        )
    cuda = info.cuda_driver_version.value
    options.setdefault("driver_version", _or_unsupported(info.driver_version))
    options.setdefault(
        "cuda_driver_version",
        err(NVML_ERROR_NOT_SUPPORTED)
        if cuda is None
        else int(cuda.split(".")[0]) * 1000 + int(cuda.split(".")[1]) * 10,
    )
    return FakePynvml(gpus, **options)
