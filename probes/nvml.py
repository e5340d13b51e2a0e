"""NVIDIA GPUs through NVML (the ``pynvml`` module of nvidia-ml-py).

Every NVML call goes through one choke point, :meth:`_Nvml.query` (in the manner of nvitop's
``libnvml.nvmlQuery``): one unreadable field becomes ``null`` with a reason, and a GPU that fell
off the bus is marked lost without hiding the others. ``pynvml`` is imported only when
:func:`collect_nvml` runs, never at import time.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import Field

from hwadvisor.model.facts import Fact, Source, StrictModel, fact, unknown
from hwadvisor.model.profile import GpuInfo, GpuLink, MigInstance, NvmlInfo, NvmlStatus

T = TypeVar("T")

SRC = Source.NVML
BINDING = "nvidia-ml-py"

GPU_LOST = "GPU is lost (NVML GpuIsLost: it fell off the bus): reseat or reset it, or reboot"
NOT_IN_BINDING = "not supported by this driver/binding"
NOT_ON_GPU = "not supported on this GPU"
NEEDS_ROOT = "needs root"
NO_VALUE = "NVML has no value for it on this GPU"
ECC_OFF = "ECC is disabled on this GPU"
REMAP_NOT_ON_GPU = "not supported on this GPU (page retirement applies)"
RETIRE_NOT_ON_GPU = "not supported on this GPU (row remapping applies)"

# NVML error codes, with the values nvml.h gives them, for bindings that lack a constant.
_ERROR_CODES = {
    "NVML_ERROR_UNINITIALIZED": 1,
    "NVML_ERROR_INVALID_ARGUMENT": 2,
    "NVML_ERROR_NOT_SUPPORTED": 3,
    "NVML_ERROR_NO_PERMISSION": 4,
    "NVML_ERROR_NOT_FOUND": 6,
    "NVML_ERROR_DRIVER_NOT_LOADED": 9,
    "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
    "NVML_ERROR_FUNCTION_NOT_FOUND": 13,
    "NVML_ERROR_GPU_IS_LOST": 15,
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": 18,
}

_ARCHITECTURES = {
    "NVML_DEVICE_ARCH_KEPLER": (2, "Kepler"),
    "NVML_DEVICE_ARCH_MAXWELL": (3, "Maxwell"),
    "NVML_DEVICE_ARCH_PASCAL": (4, "Pascal"),
    "NVML_DEVICE_ARCH_VOLTA": (5, "Volta"),
    "NVML_DEVICE_ARCH_TURING": (6, "Turing"),
    "NVML_DEVICE_ARCH_AMPERE": (7, "Ampere"),
    "NVML_DEVICE_ARCH_ADA": (8, "Ada Lovelace"),
    "NVML_DEVICE_ARCH_HOPPER": (9, "Hopper"),
    "NVML_DEVICE_ARCH_BLACKWELL": (10, "Blackwell"),
    "NVML_DEVICE_ARCH_RUBIN": (13, "Rubin"),
}

_TOPOLOGY = {
    "NVML_TOPOLOGY_INTERNAL": (0, "same_board"),
    "NVML_TOPOLOGY_SINGLE": (10, "pcie_switch"),
    "NVML_TOPOLOGY_MULTIPLE": (20, "pcie_switches"),
    "NVML_TOPOLOGY_HOSTBRIDGE": (30, "host_bridge"),
    "NVML_TOPOLOGY_NODE": (40, "numa_node"),
    "NVML_TOPOLOGY_SYSTEM": (50, "system"),
}

# NVML's "no value" sentinels for unsigned int and unsigned long long results.
_SENTINELS = {0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF}


class NvmlReport(StrictModel):
    """What the NVML probe learns: the library/driver facts, the GPUs and how they connect."""

    nvml: NvmlInfo = Field(default_factory=NvmlInfo)
    gpus: list[GpuInfo] = Field(default_factory=list)
    topology: list[GpuLink] = Field(default_factory=list)


def collect_nvml(nvml: Any | None = None) -> NvmlReport:
    """Read every NVIDIA GPU through NVML; never raises for a missing or broken NVML.

    ``nvml`` is the ``pynvml`` module or a stand-in for it (tests); by default ``pynvml`` is
    imported here. Start-up failures become an :class:`NvmlStatus` with a one-line message that
    says what happened and the fix; ``nvmlShutdown`` always follows a successful ``nvmlInit``.
    """
    module: Any = nvml
    if module is None:
        try:
            import pynvml

            module = pynvml
        except ImportError:
            return _failed(
                NvmlStatus.NOT_INSTALLED,
                "the pynvml module is not installed: pip install nvidia-ml-py; "
                "continuing without NVIDIA GPUs",
                unknown("pynvml is not importable", SRC),
            )
    session = _Nvml(module)
    binding = _binding_version(module)
    try:
        module.nvmlInit()
    except AttributeError:
        return _failed(
            NvmlStatus.ERROR,
            "the pynvml module has no nvmlInit (another package replaced it): "
            "pip install --force-reinstall nvidia-ml-py; continuing without NVIDIA GPUs",
            binding,
        )
    except session.error as err:
        status, message = session.init_failure(err)
        return _failed(status, message, binding)
    try:
        return _collect(session, binding)
    finally:
        # A failing shutdown needs no fix: NVML is released with the (child) process anyway.
        with contextlib.suppress(session.error, AttributeError):
            module.nvmlShutdown()


def nvml_child() -> dict[str, Any]:
    """Entry point for the isolated child process: the report as JSON-ready data."""
    return collect_nvml().model_dump(mode="json")


# --------------------------------------------------------------------------------------------
# The choke point


class _GpuLostError(Exception):
    """Raised by :meth:`_Nvml.query` on ``GpuIsLost``: the whole GPU is gone, not one field."""


class _Result(NamedTuple):
    value: Any
    reason: str | None
    code: int | None


@dataclass
class _Nvml:
    """The binding with its error codes resolved, and the one place NVML is called."""

    module: Any
    error: type[Exception] = field(init=False)
    codes: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.error = self.module.NVMLError
        self.codes = {
            name: int(getattr(self.module, name, code)) for name, code in _ERROR_CODES.items()
        }

    def const(self, name: str, default: int) -> int:
        return int(getattr(self.module, name, default))

    def code(self, name: str) -> int:
        return self.codes[name]

    def query(self, fn_name: str, *args: Any) -> _Result:
        """Call ``pynvml.<fn_name>(*args)``: the value, or ``None`` with a reason and error code.

        Raises :class:`_GpuLostError` on ``GpuIsLost``; every other failure is a reason.
        """
        try:
            fn = getattr(self.module, fn_name)
        except AttributeError:
            return _Result(None, f"{NOT_IN_BINDING} ({fn_name} missing)", None)
        try:
            value = fn(*args)
        except UnicodeDecodeError:
            # nvidia-ml-py decodes strings strictly; WSL drivers return invalid UTF-8. The
            # undecorated function (functools.wraps keeps it) gives the raw bytes.
            raw_fn = getattr(fn, "__wrapped__", None)
            if raw_fn is None:
                return _Result(None, "the driver returned text that is not UTF-8", None)
            return self.query_raw(raw_fn, fn_name, *args)
        except self.error as err:
            return self._failure(err, fn_name)
        return _Result(_decode(value), None, None)

    def query_first(self, *calls: tuple[Any, ...]) -> _Result:
        """The first of several spellings of one query that this binding and driver have.

        Each call is ``(fn_name, *args)``; the next is tried only when the previous one is
        missing from the binding or the driver (newer names first, older as fallback).
        """
        result = _Result(None, NOT_IN_BINDING, None)
        for fn_name, *args in calls:
            result = self.query(fn_name, *args)
            missing = result.value is None and (
                result.code is None or result.code == self.code("NVML_ERROR_FUNCTION_NOT_FOUND")
            )
            if not missing:
                return result
        return result

    def query_raw(self, raw_fn: Callable[..., Any], fn_name: str, *args: Any) -> _Result:
        try:
            value = raw_fn(*args)
        except self.error as err:
            return self._failure(err, fn_name)
        return _Result(_decode(value), None, None)

    def _failure(self, err: Exception, fn_name: str) -> _Result:
        code = getattr(err, "value", None)
        if code == self.code("NVML_ERROR_GPU_IS_LOST"):
            raise _GpuLostError(fn_name) from err
        if code == self.code("NVML_ERROR_FUNCTION_NOT_FOUND"):
            return _Result(None, NOT_IN_BINDING, code)
        if code == self.code("NVML_ERROR_NOT_SUPPORTED"):
            return _Result(None, NOT_ON_GPU, code)
        if code == self.code("NVML_ERROR_NO_PERMISSION"):
            return _Result(None, NEEDS_ROOT, code)
        return _Result(None, f"NVML error in {fn_name}: {self.describe(err)}", code)

    def describe(self, err: Exception) -> str:
        try:
            text = str(err)
        except self.error:
            # The binding's __str__ asks the library, which may be what is broken.
            text = f"NVML error code {getattr(err, 'value', '?')}"
        return " ".join(text.split()) or type(err).__name__

    def init_failure(self, err: Exception) -> tuple[NvmlStatus, str]:
        code = getattr(err, "value", None)
        tail = "; continuing without NVIDIA GPUs"
        if code == self.code("NVML_ERROR_LIBRARY_NOT_FOUND"):
            return NvmlStatus.LIBRARY_NOT_FOUND, (
                "NVIDIA driver not installed (libnvidia-ml not found): install the NVIDIA driver"
                + tail
            )
        if code == self.code("NVML_ERROR_DRIVER_NOT_LOADED"):
            return NvmlStatus.DRIVER_NOT_LOADED, (
                "NVIDIA driver not loaded: load the nvidia kernel module (or reboot), "
                "or run on a GPU machine" + tail
            )
        if code == self.code("NVML_ERROR_LIB_RM_VERSION_MISMATCH"):
            return NvmlStatus.VERSION_MISMATCH, (
                "driver/library version mismatch: reboot or reload the nvidia kernel module "
                "after a driver update" + tail
            )
        if code == self.code("NVML_ERROR_NO_PERMISSION"):
            return NvmlStatus.NO_PERMISSION, (
                "no permission to open the NVIDIA devices: give this user access to "
                "/dev/nvidia* (e.g. the video group) or pass the GPUs into the container" + tail
            )
        return NvmlStatus.ERROR, (
            f"NVML failed to start ({self.describe(err)}): check that `nvidia-smi` works" + tail
        )


def _decode(value: Any) -> Any:
    # Older bindings return bytes, newer ones str; either may carry invalid UTF-8 (WSL).
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace").rstrip("\x00")
    return value


# --------------------------------------------------------------------------------------------
# Facts from results


def _fact(result: _Result, convert: Callable[[Any], T | None]) -> Fact[T]:
    """The converted value as a fact, or ``null`` with the query's (or the conversion's) reason."""
    if result.value is None:
        return unknown(result.reason or "NVML returned nothing", SRC)
    if isinstance(result.value, int) and result.value in _SENTINELS:
        return unknown(NO_VALUE, SRC)
    try:
        converted = convert(result.value)
    except (TypeError, ValueError, AttributeError, IndexError, KeyError):
        converted = None
    if converted is None:
        return unknown(f"unexpected value from NVML: {result.value!r}", SRC)
    return fact(converted, SRC)


def _text(value: Any) -> str | None:
    text = _decode(value)
    return text.strip() if isinstance(text, str) and text.strip() else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _milliwatts(value: Any) -> float | None:
    number = _count(value)
    return number / 1000.0 if number is not None else None


def _enabled(on: int) -> Callable[[Any], bool | None]:
    def convert(value: Any) -> bool | None:
        # EccMode and MigMode answer [current, pending]; PersistenceMode a single state.
        current = value[0] if isinstance(value, list | tuple) else value
        return current == on if isinstance(current, int) else None

    return convert


def _bytes_field(name: str) -> Callable[[Any], int | None]:
    def convert(value: Any) -> int | None:
        number = getattr(value, name)
        return None if number in _SENTINELS else _count(number)

    return convert


def normalize_bus_id(bus_id: Any) -> str | None:
    """NVML's ``busId`` (bytes or str) as ``00000000:17:00.0``, or None if it is not a bus id."""
    text = _text(bus_id)
    if text is None:
        return None
    parts = text.replace(".", ":").split(":")
    if len(parts) == 3:
        parts.insert(0, "0")
    if len(parts) != 4:
        return None
    try:
        domain, bus, device, function = (int(part, 16) for part in parts)
    except ValueError:
        return None
    return f"{domain:08X}:{bus:02X}:{device:02X}.{function}"


def _pci_bus_id(value: Any) -> str | None:
    # busId is the current field; busIdLegacy is all that very old drivers fill in.
    return normalize_bus_id(getattr(value, "busId", None)) or normalize_bus_id(
        getattr(value, "busIdLegacy", None)
    )


def _cuda_version(value: Any) -> str | None:
    number = _count(value)
    if number is None or number <= 0:
        return None
    return f"{number // 1000}.{number % 1000 // 10}"


def _binding_version(module: Any) -> Fact[str]:
    """The nvidia-ml-py version, if that distribution really provides ``module``."""
    module_file = getattr(module, "__file__", None)
    if not module_file:
        return unknown("the pynvml binding given is not an installed module", SRC)
    owners = importlib.metadata.packages_distributions().get("pynvml", [])
    try:
        dist = importlib.metadata.distribution(BINDING)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for entry in dist.files or []:
            if entry.name == "pynvml.py" and _same_file(dist.locate_file(entry), module_file):
                return fact(dist.version, SRC)
    others = sorted({owner for owner in owners if owner != BINDING})
    provider = ", ".join(others) if others else "an unknown source"
    return unknown(
        f"pynvml comes from {provider}, not {BINDING}: pip uninstall {' '.join(others) or 'it'} "
        f"and pip install --force-reinstall {BINDING}",
        SRC,
    )


def _same_file(a: Any, b: str) -> bool:
    try:
        return Path(str(a)).resolve() == Path(b).resolve()
    except OSError:
        return False


# --------------------------------------------------------------------------------------------
# Collection


def _failed(status: NvmlStatus, message: str, binding: Fact[str]) -> NvmlReport:
    reason = f"NVML unavailable ({status.value})"
    info = NvmlInfo(
        status=status,
        message=message,
        driver_version=unknown(reason, SRC),
        cuda_driver_version=unknown(reason, SRC),
        nvml_version=unknown(reason, SRC),
        binding_version=binding,
        device_count=unknown(reason, SRC),
    )
    return NvmlReport(nvml=info)


def _collect(nvml: _Nvml, binding: Fact[str]) -> NvmlReport:
    cuda = nvml.query_first(
        ("nvmlSystemGetCudaDriverVersion_v2",), ("nvmlSystemGetCudaDriverVersion",)
    )
    count = nvml.query("nvmlDeviceGetCount")
    info = NvmlInfo(
        status=NvmlStatus.OK,
        driver_version=_fact(nvml.query("nvmlSystemGetDriverVersion"), _text),
        cuda_driver_version=_fact(cuda, _cuda_version),
        nvml_version=_fact(nvml.query("nvmlSystemGetNVMLVersion"), _text),
        binding_version=binding,
        device_count=_fact(count, _count),
    )
    if info.device_count.value is None:
        info.status = NvmlStatus.ERROR
        info.message = (
            f"NVML started but could not count the GPUs ({info.device_count.reason}): "
            "check that `nvidia-smi` works; continuing without NVIDIA GPUs"
        )
        return NvmlReport(nvml=info)
    gpus: list[GpuInfo] = []
    handles: dict[int, Any] = {}
    for index in range(info.device_count.value):
        gpu, handle = _gpu(nvml, index)
        gpus.append(gpu)
        if handle is not None and not gpu.lost:
            handles[index] = handle
    topology = _topology(nvml, gpus, handles) if len(gpus) >= 2 else []
    return NvmlReport(nvml=info, gpus=gpus, topology=topology)


_GPU_FACTS = [
    name
    for name, info in GpuInfo.model_fields.items()
    if isinstance(info.annotation, type) and issubclass(info.annotation, Fact)
]


def _gpu(nvml: _Nvml, index: int) -> tuple[GpuInfo, Any]:
    """One GPU; a ``GpuIsLost`` anywhere keeps what was read and nulls the rest."""
    fields: dict[str, Any] = {}
    mig_instances: list[MigInstance] = []
    handle: Any = None
    try:
        handle = nvml.query("nvmlDeviceGetHandleByIndex", index)
        if handle.value is None:
            reason = f"no handle for this GPU: {handle.reason}"
            fields = {name: unknown(reason, SRC) for name in _GPU_FACTS}
            return GpuInfo(index=index, vendor="nvidia", backend="cuda", **fields), None
        _read_gpu(nvml, handle.value, fields)
        if fields["mig_enabled"].value:
            mig_instances = _mig_instances(nvml, handle.value)
    except _GpuLostError:
        for name in _GPU_FACTS:
            fields.setdefault(name, unknown(GPU_LOST, SRC))
        return GpuInfo(index=index, vendor="nvidia", backend="cuda", lost=True, **fields), None
    gpu = GpuInfo(
        index=index, vendor="nvidia", backend="cuda", mig_instances=mig_instances, **fields
    )
    return gpu, handle.value


def _read_gpu(nvml: _Nvml, h: Any, fields: dict[str, Any]) -> None:
    """Fill ``fields`` one guarded query at a time, in a fixed order."""
    q = nvml.query
    sm = nvml.const("NVML_CLOCK_SM", 1)
    mem = nvml.const("NVML_CLOCK_MEM", 2)
    enabled = nvml.const("NVML_FEATURE_ENABLED", 1)
    fields["name"] = _fact(q("nvmlDeviceGetName", h), _text)
    fields["uuid"] = _fact(q("nvmlDeviceGetUUID", h), _text)
    fields["serial"] = _fact(q("nvmlDeviceGetSerial", h), _text)
    fields["pci_bus_id"] = _fact(q("nvmlDeviceGetPciInfo", h), _pci_bus_id)
    fields["architecture"] = _architecture(nvml, q("nvmlDeviceGetArchitecture", h))
    fields["compute_capability"] = _fact(
        q("nvmlDeviceGetCudaComputeCapability", h), lambda v: f"{int(v[0])}.{int(v[1])}"
    )
    memory = q("nvmlDeviceGetMemoryInfo", h)
    fields["vram_total_bytes"] = _fact(memory, _bytes_field("total"))
    fields["vram_free_bytes"] = _fact(memory, _bytes_field("free"))
    fields["vram_used_bytes"] = _fact(memory, _bytes_field("used"))
    fields["multiprocessor_count"] = _fact(
        q("nvmlDeviceGetAttributes", h), lambda v: _count(v.multiprocessorCount)
    )
    fields["power_limit_watts"] = _fact(q("nvmlDeviceGetEnforcedPowerLimit", h), _milliwatts)
    fields["power_draw_watts"] = _fact(q("nvmlDeviceGetPowerUsage", h), _milliwatts)
    fields["sm_clock_mhz"] = _fact(q("nvmlDeviceGetClockInfo", h, sm), _count)
    fields["sm_clock_max_mhz"] = _fact(q("nvmlDeviceGetMaxClockInfo", h, sm), _count)
    fields["memory_clock_mhz"] = _fact(q("nvmlDeviceGetClockInfo", h, mem), _count)
    fields["memory_clock_max_mhz"] = _fact(q("nvmlDeviceGetMaxClockInfo", h, mem), _count)
    fields["pcie_generation"] = _fact(q("nvmlDeviceGetCurrPcieLinkGeneration", h), _count)
    fields["pcie_generation_max"] = _fact(q("nvmlDeviceGetMaxPcieLinkGeneration", h), _count)
    fields["pcie_width"] = _fact(q("nvmlDeviceGetCurrPcieLinkWidth", h), _count)
    fields["pcie_width_max"] = _fact(q("nvmlDeviceGetMaxPcieLinkWidth", h), _count)
    # nvmlDeviceGetTemperature goes away with CUDA 14; drivers before ~R550 lack the V form.
    sensor = nvml.const("NVML_TEMPERATURE_GPU", 0)
    fields["temperature_c"] = _fact(
        nvml.query_first(
            ("nvmlDeviceGetTemperatureV", h, sensor), ("nvmlDeviceGetTemperature", h, sensor)
        ),
        _count,
    )
    fields["utilization_percent"] = _fact(
        q("nvmlDeviceGetUtilizationRates", h), lambda v: _count(v.gpu)
    )
    fields["ecc_enabled"] = _fact(q("nvmlDeviceGetEccMode", h), _enabled(enabled))
    fields["persistence_mode"] = _fact(q("nvmlDeviceGetPersistenceMode", h), _enabled(enabled))
    fields["mig_enabled"] = _fact(
        q("nvmlDeviceGetMigMode", h), _enabled(nvml.const("NVML_DEVICE_MIG_ENABLE", 1))
    )
    fields["vbios_version"] = _fact(q("nvmlDeviceGetVbiosVersion", h), _text)
    _read_memory_health(nvml, h, fields)


def _read_memory_health(nvml: _Nvml, h: Any, fields: dict[str, Any]) -> None:
    """ECC error counts, retired pages (before Ampere) and remapped rows (Ampere on): each query
    guarded on its own, with the reason a GPU does not answer where it is known."""
    q = nvml.query
    unsupported = nvml.code("NVML_ERROR_NOT_SUPPORTED")
    ecc_off = fields["ecc_enabled"].value is False

    def ecc(error_type: str, default_type: int, counter: str, default_counter: int) -> Fact[int]:
        result = q(
            "nvmlDeviceGetTotalEccErrors",
            h,
            nvml.const(error_type, default_type),
            nvml.const(counter, default_counter),
        )
        if ecc_off:
            result = _explained(result, unsupported, ECC_OFF)
        return _fact(result, _count)

    fields["ecc_errors_corrected_volatile"] = ecc(
        "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0, "NVML_VOLATILE_ECC", 0
    )
    fields["ecc_errors_uncorrected_volatile"] = ecc(
        "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1, "NVML_VOLATILE_ECC", 0
    )
    fields["ecc_errors_uncorrected_aggregate"] = ecc(
        "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1, "NVML_AGGREGATE_ECC", 1
    )

    # nvmlDeviceGetRemappedRows: (corrected rows, uncorrected rows, pending, failure occurred).
    remapped = _explained(q("nvmlDeviceGetRemappedRows", h), unsupported, REMAP_NOT_ON_GPU)
    fields["remapped_rows_uncorrectable"] = _fact(remapped, lambda v: _count(v[1]))
    fields["remapped_rows_pending"] = _fact(remapped, lambda v: _flag(v[2]))
    fields["remapped_rows_failed"] = _fact(remapped, lambda v: _flag(v[3]))

    # Row remapping replaced page retirement on Ampere: say so where one answers and not the other.
    retire_why = RETIRE_NOT_ON_GPU if remapped.value is not None else NOT_ON_GPU
    causes = (
        nvml.const("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", 0),
        nvml.const("NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", 1),
    )
    pages = [
        _explained(q("nvmlDeviceGetRetiredPages", h, cause), unsupported, retire_why)
        for cause in causes
    ]
    failed = next((result for result in pages if not isinstance(result.value, list)), None)
    if failed is None:
        fields["retired_pages"] = fact(sum(len(result.value) for result in pages), SRC)
    elif failed.value is None:
        fields["retired_pages"] = unknown(failed.reason or "NVML returned nothing", SRC)
    else:
        fields["retired_pages"] = unknown(f"unexpected value from NVML: {failed.value!r}", SRC)
    pending = _explained(q("nvmlDeviceGetRetiredPagesPendingStatus", h), unsupported, retire_why)
    fields["retired_pages_pending"] = _fact(pending, _flag)


def _explained(result: _Result, code: int, reason: str) -> _Result:
    """``result`` with ``reason`` in place of NVML's where the query failed with ``code``."""
    if result.value is None and result.code == code:
        return _Result(None, reason, code)
    return result


def _flag(value: Any) -> bool | None:
    """NVML's 0/1 flags (and enable states) as a bool."""
    number = _count(value)
    return None if number is None else number != 0


def _architecture(nvml: _Nvml, result: _Result) -> Fact[str]:
    names = {nvml.const(const, code): name for const, (code, name) in _ARCHITECTURES.items()}
    if isinstance(result.value, int) and result.value not in names:
        return unknown(f"architecture code {result.value} is unknown to hwadvisor", SRC)
    return _fact(result, names.get)


def _mig_instances(nvml: _Nvml, h: Any) -> list[MigInstance]:
    slots = nvml.query("nvmlDeviceGetMaxMigDeviceCount", h)
    if not isinstance(slots.value, int) or slots.value in _SENTINELS:
        return []
    empty = {nvml.code("NVML_ERROR_NOT_FOUND"), nvml.code("NVML_ERROR_INVALID_ARGUMENT")}
    instances: list[MigInstance] = []
    for slot in range(slots.value):
        mig = nvml.query("nvmlDeviceGetMigDeviceHandleByIndex", h, slot)
        if mig.value is None:
            if mig.code in empty:
                continue  # an unused slot: fewer instances than the GPU allows
            instances.append(
                MigInstance(
                    index=len(instances),
                    uuid=unknown(mig.reason or "no handle", SRC),
                    name=unknown(mig.reason or "no handle", SRC),
                    memory_total_bytes=unknown(mig.reason or "no handle", SRC),
                    gpu_instance_id=unknown(mig.reason or "no handle", SRC),
                    compute_instance_id=unknown(mig.reason or "no handle", SRC),
                    multiprocessor_count=unknown(mig.reason or "no handle", SRC),
                )
            )
            continue
        m = mig.value
        instances.append(
            MigInstance(
                index=len(instances),
                uuid=_fact(nvml.query("nvmlDeviceGetUUID", m), _text),
                name=_fact(nvml.query("nvmlDeviceGetName", m), _text),
                memory_total_bytes=_fact(
                    nvml.query("nvmlDeviceGetMemoryInfo", m), _bytes_field("total")
                ),
                gpu_instance_id=_fact(nvml.query("nvmlDeviceGetGpuInstanceId", m), _count),
                compute_instance_id=_fact(nvml.query("nvmlDeviceGetComputeInstanceId", m), _count),
                multiprocessor_count=_fact(
                    nvml.query("nvmlDeviceGetAttributes", m),
                    lambda v: _count(v.multiprocessorCount),
                ),
            )
        )
    return instances


# --------------------------------------------------------------------------------------------
# Topology


def _topology(nvml: _Nvml, gpus: list[GpuInfo], handles: dict[int, Any]) -> list[GpuLink]:
    """One link per pair of GPUs: NVLink where active links join them, else the PCIe path."""
    levels = {nvml.const(const, code): name for const, (code, name) in _TOPOLOGY.items()}
    bus_ids = {gpu.index: gpu.pci_bus_id.value for gpu in gpus}
    remotes = {index: _nvlink_remotes(nvml, handle) for index, handle in handles.items()}
    links: list[GpuLink] = []
    for a in range(len(gpus)):
        for b in range(a + 1, len(gpus)):
            if a not in handles or b not in handles:
                lost = a if a not in handles else b
                links.append(
                    GpuLink(
                        gpu_a=a,
                        gpu_b=b,
                        link="unknown",
                        reason=f"GPU {lost} has no usable NVML handle",
                    )
                )
                continue
            links.append(_link(nvml, a, b, handles, bus_ids, remotes, levels))
    return links


def _link(
    nvml: _Nvml,
    a: int,
    b: int,
    handles: dict[int, Any],
    bus_ids: dict[int, str | None],
    remotes: dict[int, list[str] | str],
    levels: dict[int, str],
) -> GpuLink:
    try:
        ancestor = nvml.query("nvmlDeviceGetTopologyCommonAncestor", handles[a], handles[b])
    except _GpuLostError:
        ancestor = _Result(None, GPU_LOST, None)
    pcie = levels.get(ancestor.value) if isinstance(ancestor.value, int) else None
    reasons: list[str] = []
    if pcie is None:
        reasons.append(f"PCIe path unknown: {ancestor.reason or repr(ancestor.value)}")
    count = 0
    remote_a = remotes[a]
    if isinstance(remote_a, str):
        reasons.append(f"NVLink of GPU {a} unknown: {remote_a}")
    elif bus_ids[b] is None:
        reasons.append(f"NVLink unknown: GPU {b} has no PCI bus id")
    else:
        count = sum(1 for remote in remote_a if remote == bus_ids[b])
    link = "nvlink" if count else (pcie or "unknown")
    reason = "; ".join(reasons) or None
    return GpuLink(gpu_a=a, gpu_b=b, link=link, nvlink_count=count, pcie_link=pcie, reason=reason)


def _nvlink_remotes(nvml: _Nvml, handle: Any) -> list[str] | str:
    """Bus ids at the far end of each active NVLink, or the reason they cannot be read.

    A GPU without NVLink answers NotSupported (or InvalidArgument) for every link: that is
    "no links", not an unknown.
    """
    enabled = nvml.const("NVML_FEATURE_ENABLED", 1)
    absent = {nvml.code("NVML_ERROR_NOT_SUPPORTED"), nvml.code("NVML_ERROR_INVALID_ARGUMENT")}
    remotes: list[str] = []
    try:
        for link in range(nvml.const("NVML_NVLINK_MAX_LINKS", 18)):
            state = nvml.query("nvmlDeviceGetNvLinkState", handle, link)
            if state.value is None:
                if state.code in absent:
                    continue
                return state.reason or "NVLink state unreadable"
            if state.value != enabled:
                continue
            # Bindings name it with or without the suffix (nvidia-ml-py: without).
            remote = nvml.query_first(
                ("nvmlDeviceGetNvLinkRemotePciInfo_v2", handle, link),
                ("nvmlDeviceGetNvLinkRemotePciInfo", handle, link),
            )
            bus_id = _pci_bus_id(remote.value) if remote.value is not None else None
            if bus_id is None:
                return f"remote end of NVLink {link} unreadable: {remote.reason}"
            remotes.append(bus_id)
    except _GpuLostError:
        return GPU_LOST
    return remotes
