"""Fake ``torch`` modules for the torch probe, one per machine state seen in bug reports.

Attribute names mirror the real torch 2.x API (``torch.version.cuda``/``hip``/``xpu``,
``torch.backends.cudnn.version()``, ``torch.cuda.nccl.version()`` returning a tuple,
``torch.cuda.get_device_properties(i)`` with ``major``/``minor``/``total_memory``/
``multi_processor_count``/``uuid``/``pci_*_id``/``gcnArchName``). Nothing here touches hardware.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

GIB = 1024**3

CUDA_UNKNOWN_ERROR = (
    "CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up "
    "environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. "
    "Setting the available devices to be zero. (Triggered internally at "
    "../c10/cuda/CUDAFunctions.cpp:108.)"
)


class FakeUuid:
    """torch's ``_CUuuid``: ``str()`` gives the UUID text, without NVML's ``GPU-`` prefix."""

    def __init__(self, text: str) -> None:
        self._text = text

    def __str__(self) -> str:
        return self._text


def device_props(
    name: str = "NVIDIA GeForce RTX 4090",
    major: int = 8,
    minor: int = 9,
    total_memory: int = 24 * GIB,
    multi_processor_count: int = 128,
    uuid: str | None = "6b9c1c3e-1d2a-4f6e-9a53-0c1d2e3f4a5b",
    pci: tuple[int, int, int] | None = (0, 0x17, 0),
    gcn_arch: str = "NVIDIA CUDA",
) -> types.SimpleNamespace:
    """One ``_CudaDeviceProperties``-like object."""
    props = types.SimpleNamespace(
        name=name,
        major=major,
        minor=minor,
        total_memory=total_memory,
        multi_processor_count=multi_processor_count,
        is_integrated=0,
        is_multi_gpu_board=0,
        gcnArchName=gcn_arch,
        warp_size=32,
        L2_cache_size=72 * 1024 * 1024,
    )
    if uuid is not None:
        props.uuid = FakeUuid(uuid)
    if pci is not None:
        props.pci_domain_id, props.pci_bus_id, props.pci_device_id = pci
    return props


@dataclass
class TorchSpec:
    """What one fake torch reports. Defaults: a CPU-only 2.5.1 build."""

    version: str = "2.5.1+cpu"
    cuda: str | None = None
    hip: str | None = None
    xpu: str | None = None
    cudnn: int | None = None
    nccl: tuple[Any, ...] | None = None
    has_nccl: bool = True
    available: bool = False
    available_warnings: list[str] = field(default_factory=list)
    devices: list[Any] = field(default_factory=list)
    props_error: BaseException | None = None
    arch_list: list[str] = field(default_factory=list)
    mps_built: bool = False
    mps_available: bool = False
    has_xpu: bool = True
    xpu_available: bool = False
    xpu_devices: list[Any] = field(default_factory=list)
    cpu_capability: str = "AVX2"
    num_threads: int = 8


def build_torch(spec: TorchSpec) -> types.ModuleType:
    """A module object shaped like ``torch`` that answers from ``spec``."""
    torch = types.ModuleType("torch")
    torch.__version__ = spec.version  # type: ignore[attr-defined]
    torch.version = types.SimpleNamespace(  # type: ignore[attr-defined]
        __version__=spec.version,
        cuda=spec.cuda,
        hip=spec.hip,
        xpu=spec.xpu,
        git_version="0" * 40,
        debug=False,
    )

    def is_available() -> bool:
        for message in spec.available_warnings:
            warnings.warn(message, UserWarning, stacklevel=2)
        return spec.available

    def device_count() -> int:
        return len(spec.devices) if spec.available else 0

    def get_device_properties(index: int) -> Any:
        if spec.props_error is not None:
            raise spec.props_error
        if index < 0 or index >= device_count():
            raise AssertionError("Invalid device id")
        return spec.devices[index]

    def nccl_version() -> tuple[Any, ...]:
        if spec.nccl is None:  # what a CPU build does: torch._C lacks _nccl_version
            raise AttributeError("module 'torch._C' has no attribute '_nccl_version'")
        return spec.nccl

    cuda = types.SimpleNamespace(
        is_available=is_available,
        device_count=device_count,
        get_device_properties=get_device_properties,
        get_arch_list=lambda: list(spec.arch_list),
    )
    if spec.has_nccl:
        cuda.nccl = types.SimpleNamespace(version=nccl_version)
    torch.cuda = cuda  # type: ignore[attr-defined]

    torch.backends = types.SimpleNamespace(  # type: ignore[attr-defined]
        cudnn=types.SimpleNamespace(version=lambda: spec.cudnn),
        mps=types.SimpleNamespace(
            is_built=lambda: spec.mps_built, is_available=lambda: spec.mps_available
        ),
        cpu=types.SimpleNamespace(get_cpu_capability=lambda: spec.cpu_capability),
    )
    if spec.has_xpu:
        torch.xpu = types.SimpleNamespace(  # type: ignore[attr-defined]
            is_available=lambda: spec.xpu_available,
            device_count=lambda: len(spec.xpu_devices),
            get_device_properties=lambda i: spec.xpu_devices[i],
        )
    torch.get_num_threads = lambda: spec.num_threads  # type: ignore[attr-defined]
    return torch


# --------------------------------------------------------------------------------------------
# The machine states


def cpu_only() -> types.ModuleType:
    """A CPU-only wheel (what a plain install gives on many machines)."""
    return build_torch(TorchSpec())


def cuda_two_devices() -> types.ModuleType:
    """A CUDA 12.4 build on a machine with two RTX 4090s."""
    return build_torch(
        TorchSpec(
            version="2.5.1+cu124",
            cuda="12.4",
            cudnn=90100,
            nccl=(2, 21, 5),
            available=True,
            devices=[
                device_props(pci=(0, 0x17, 0)),
                device_props(uuid="0f0e0d0c-0b0a-0908-0706-050403020100", pci=(0, 0x65, 0)),
            ],
            arch_list=["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
            cpu_capability="AVX512",
            num_threads=16,
        )
    )


def cuda_unknown_error() -> types.ModuleType:
    """A CUDA build whose ``is_available()`` warns "CUDA unknown error" and answers False."""
    return build_torch(
        TorchSpec(
            version="2.5.1+cu124",
            cuda="12.4",
            cudnn=90100,
            nccl=(2, 21, 5),
            available=False,
            available_warnings=[CUDA_UNKNOWN_ERROR],
            devices=[device_props()],
            arch_list=["sm_80", "sm_86", "sm_90"],
        )
    )


def rocm_one_amd() -> types.ModuleType:
    """A ROCm 6.2 build: ``torch.version.hip`` set, ``torch.cuda`` answers for the AMD GPU."""
    return build_torch(
        TorchSpec(
            version="2.5.1+rocm6.2",
            hip="6.2.41133-dd7f95766",
            cudnn=3002000,
            nccl=(2, 20, 5),
            available=True,
            devices=[
                device_props(
                    name="AMD Instinct MI210",
                    major=9,
                    minor=0,
                    total_memory=64 * GIB,
                    multi_processor_count=104,
                    uuid="58ff7a63-0000-1000-8000-00000000c0de",
                    pci=(0, 0x03, 0),
                    gcn_arch="gfx90a:sramecc+:xnack-",
                )
            ],
            arch_list=["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"],
        )
    )


def mps_unavailable() -> types.ModuleType:
    """A macOS arm64 wheel on a Mac where MPS cannot be used (old macOS, or under Rosetta)."""
    return build_torch(
        TorchSpec(version="2.5.1", mps_built=True, mps_available=False, cpu_capability="NO AVX")
    )


def mps_available() -> types.ModuleType:
    """A macOS arm64 wheel on Apple silicon, MPS ready."""
    return build_torch(
        TorchSpec(version="2.5.1", mps_built=True, mps_available=True, cpu_capability="NO AVX")
    )


def props_raise() -> types.ModuleType:
    """A CUDA build where reading device properties fails (a GPU fell off the bus mid-scan)."""
    return build_torch(
        TorchSpec(
            version="2.5.1+cu124",
            cuda="12.4",
            cudnn=90100,
            nccl=(2, 21, 5),
            available=True,
            devices=[device_props(), device_props()],
            props_error=RuntimeError("CUDA error: unspecified launch failure"),
            arch_list=["sm_80", "sm_86", "sm_90"],
        )
    )


def no_nccl() -> types.ModuleType:
    """A CUDA build without ``torch.cuda.nccl`` (Windows builds ship no NCCL)."""
    return build_torch(
        TorchSpec(
            version="2.5.1+cu121",
            cuda="12.1",
            cudnn=8907,
            has_nccl=False,
            available=True,
            devices=[device_props()],
            arch_list=["sm_80", "sm_86", "sm_90"],
        )
    )


def old_torch_without_backends() -> types.ModuleType:
    """A torch so old (or so stripped) that ``backends.mps``/``backends.cpu``/``xpu`` are absent."""
    torch = build_torch(TorchSpec(version="1.11.0", has_xpu=False))
    torch.backends = types.SimpleNamespace(  # type: ignore[attr-defined]
        cudnn=types.SimpleNamespace(version=lambda: None)
    )
    return torch


#: Every preset, for parametrised tests.
PRESETS: dict[str, Callable[[], types.ModuleType]] = {
    "cpu_only": cpu_only,
    "cuda_two_devices": cuda_two_devices,
    "cuda_unknown_error": cuda_unknown_error,
    "rocm_one_amd": rocm_one_amd,
    "mps_unavailable": mps_unavailable,
    "mps_available": mps_available,
    "props_raise": props_raise,
    "no_nccl": no_nccl,
    "old_torch_without_backends": old_torch_without_backends,
}
