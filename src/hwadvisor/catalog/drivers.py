"""``drivers.toml``: the oldest NVIDIA driver branch each CUDA release needs, read through the
one loader. Imported by the readiness check only when it names a driver to install, so that
nothing else pays for the model."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic_core import core_schema

from hwadvisor.catalog.peaks import CatalogError
from hwadvisor.catalog.schema import POSITIVE_WHOLE, Check, DataModel, load_toml, read_text
from hwadvisor.catalog.toml import packaged_text

__all__ = ["DRIVERS_RESOURCE", "load_driver_branches"]

DRIVERS_RESOURCE = "drivers.toml"

_CUDA = Check('a CUDA release such as "12.8"', core_schema.str_schema(pattern=r"^\d+\.\d+$"))


class _Drivers(DataModel):
    linux_driver_branch: dict[Annotated[str, _CUDA], Annotated[int, POSITIVE_WHOLE]]


def load_driver_branches(path: Path | None = None) -> dict[tuple[int, int], int]:
    """CUDA (major, minor) → the oldest Linux driver branch that runs it: the packaged
    ``drivers.toml`` (cached) or the file at ``path``. :class:`CatalogError` when malformed."""
    if path is None:
        return dict(_packaged())
    return _parse(read_text(path, CatalogError), str(path))


@lru_cache(maxsize=1)
def _packaged() -> tuple[tuple[tuple[int, int], int], ...]:
    return tuple(_parse(packaged_text(DRIVERS_RESOURCE), DRIVERS_RESOURCE).items())


def _parse(text: str, origin: str) -> dict[tuple[int, int], int]:
    data = load_toml(_Drivers, text, origin, CatalogError)
    return {_release(cuda): branch for cuda, branch in data.linux_driver_branch.items()}


def _release(cuda: str) -> tuple[int, int]:
    major, minor = cuda.split(".")
    return int(major), int(minor)
