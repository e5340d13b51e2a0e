"""Reading the data files: the packaged catalogs and users' own rules and price files."""

from __future__ import annotations

import sys
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 needs the tomli backport (same API)
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


def packaged_text(name: str) -> str:
    """A data file shipped in ``hwadvisor.catalog`` (importlib.resources, not ``__file__``, so
    that it works from a wheel or a zip too)."""
    return resources.files("hwadvisor.catalog").joinpath(name).read_text(encoding="utf-8")


def parse_toml(text: str, origin: str, error: type[Exception]) -> dict[str, Any]:
    """TOML text as a dict; invalid TOML raises ``error`` naming ``origin`` and the line."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{origin}: not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise error(f"{origin}: nested too deeply to be a data file") from exc
    return data
