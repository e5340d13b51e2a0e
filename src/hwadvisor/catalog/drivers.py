"""``drivers.toml``: what NVIDIA drivers each CUDA release, each GPU architecture and today's
framework builds need, read through the one loader. Imported by the readiness checks only when
a profile has an NVIDIA driver to judge, so that nothing else pays for the model."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import Field
from pydantic_core import core_schema

from hwadvisor.catalog.peaks import CatalogError
from hwadvisor.catalog.schema import (
    POSITIVE_WHOLE,
    Check,
    DataModel,
    Text,
    load_toml,
    read_text,
)
from hwadvisor.catalog.toml import TomlSource, packaged_data

__all__ = [
    "DRIVERS_RESOURCE",
    "DriverCatalog",
    "FrameworkFloor",
    "GpuMinimum",
    "driver_tuple",
    "load_driver_branches",
    "load_driver_catalog",
]

DRIVERS_RESOURCE = "drivers.toml"

_CUDA = Check('a CUDA release such as "12.8"', core_schema.str_schema(pattern=r"^\d+\.\d+$"))
_DRIVER = Check(
    'a driver version such as "525.60.13" or a branch such as "570"',
    core_schema.str_schema(pattern=r"^\d{2,4}(\.\d{1,4}){0,2}$"),
)
_DATE = Check('a date such as "2025-10-15"', core_schema.str_schema(pattern=r"^\d{4}-\d\d-\d\d$"))


class _GpuMinimum(DataModel):
    architecture: Text
    driver: Annotated[str, _DRIVER]
    source: Text


class _Floor(DataModel):
    cuda: Annotated[str, _CUDA]
    driver: Annotated[str, _DRIVER]
    builds: Text
    source: Text
    checked: Annotated[str, _DATE]


class _Drivers(DataModel):
    # Declared first: an unknown key's hint lists the known ones in this order.
    linux_driver_branch: dict[Annotated[str, _CUDA], Annotated[int, POSITIVE_WHOLE]]
    minimum_driver_for_gpu: dict[Annotated[str, _CUDA], _GpuMinimum] = Field(default_factory=dict)
    oldest_cuda_of_current_builds: dict[Text, _Floor] = Field(default_factory=dict)


@dataclass(frozen=True)
class GpuMinimum:
    """The oldest driver for GPUs of one compute capability."""

    compute_capability: str
    architecture: str
    driver: str
    source: str


@dataclass(frozen=True)
class FrameworkFloor:
    """The oldest CUDA (and driver) that a framework's current builds run on."""

    framework: str
    cuda: tuple[int, int]
    driver: str
    builds: str
    source: str
    checked: str


@dataclass(frozen=True)
class DriverCatalog:
    branches: dict[tuple[int, int], int]
    """CUDA (major, minor) → the oldest Linux driver branch that runs it."""
    gpu_minimums: dict[str, GpuMinimum]
    """Compute capability ("9.0") → the oldest driver for it."""
    floors: tuple[FrameworkFloor, ...]

    def minimum_for(
        self, compute_capability: str | None, architecture: str | None
    ) -> GpuMinimum | None:
        """The oldest driver for a GPU: by its compute capability, else by its architecture
        name (the lowest entry of that architecture); None when neither is listed."""
        if compute_capability and compute_capability in self.gpu_minimums:
            return self.gpu_minimums[compute_capability]
        if compute_capability or not architecture:
            return None  # a capability not listed (Jetson, older than Volta): nothing to say
        same = [m for m in self.gpu_minimums.values() if m.architecture == architecture]
        return min(same, key=lambda m: driver_tuple(m.driver) or (0,), default=None)

    def cuda_of_driver(self, driver: tuple[int, ...]) -> tuple[int, int] | None:
        """The newest CUDA release whose oldest branch is at most ``driver``'s (None: older
        than every release listed)."""
        fits = [cuda for cuda, branch in self.branches.items() if branch <= driver[0]]
        return max(fits, default=None)


def driver_tuple(text: str | None) -> tuple[int, ...] | None:
    """A driver version as numbers: "470.182.03" → (470, 182, 3), "570" → (570,); None when it
    does not start with a number. Compare ``version < minimum``: (570, 124, 6) < (570, 133, 20),
    and (570, 124, 6) < (570,) is False (a bare branch is met by every release of it)."""
    parts: list[int] = []
    for part in (text or "").strip().split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts) if parts else None


def load_driver_branches(path: Path | None = None) -> dict[tuple[int, int], int]:
    """CUDA (major, minor) → the oldest Linux driver branch that runs it: the packaged
    ``drivers.toml`` (cached) or the file at ``path``. :class:`CatalogError` when malformed."""
    return dict(load_driver_catalog(path).branches)


def load_driver_catalog(path: Path | None = None) -> DriverCatalog:
    """The whole of ``drivers.toml``: the packaged one (cached) or the file at ``path``."""
    if path is None:
        return _packaged()
    return _parse(read_text(path, CatalogError), str(path))


@lru_cache(maxsize=1)
def _packaged() -> DriverCatalog:
    return _parse(packaged_data(DRIVERS_RESOURCE, CatalogError), DRIVERS_RESOURCE)


def _parse(text: TomlSource, origin: str) -> DriverCatalog:
    data = load_toml(_Drivers, text, origin, CatalogError)
    return DriverCatalog(
        branches={_release(cuda): branch for cuda, branch in data.linux_driver_branch.items()},
        gpu_minimums={
            cc: GpuMinimum(cc, entry.architecture, entry.driver, entry.source)
            for cc, entry in data.minimum_driver_for_gpu.items()
        },
        floors=tuple(
            FrameworkFloor(name, _release(f.cuda), f.driver, f.builds, f.source, f.checked)
            for name, f in data.oldest_cuda_of_current_builds.items()
        ),
    )


def _release(cuda: str) -> tuple[int, int]:
    major, minor = cuda.split(".")
    return int(major), int(minor)
