"""The unit of every profile: a fact is a value, or ``null`` with a reason, and its source."""

from __future__ import annotations

import math
import re
from enum import Enum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator

T = TypeVar("T")


class Source(str, Enum):
    """Where a fact came from. Kept short and stable: it is part of the JSON contract."""

    NVML = "nvml"
    TORCH = "torch"
    PSUTIL = "psutil"
    CPUINFO = "cpuinfo"
    PROCFS = "procfs"
    SYSFS = "sysfs"
    CGROUP = "cgroup"
    SYSCTL = "sysctl"
    PLATFORM = "platform"
    OS = "os"
    ENV = "env"
    AMDSMI = "amdsmi"
    PCI = "pci"
    DEVFS = "devfs"
    DERIVED = "derived"
    NVIDIA_SMI = "nvidia-smi"
    COLLECT_ENV = "collect_env"
    LSCPU = "lscpu"
    ROCM_SMI = "rocm-smi"
    AMD_SMI = "amd-smi"
    GPUSTAT = "gpustat"
    SYSTEM_PROFILER = "system_profiler"
    LSPCI = "lspci"
    LSHW = "lshw"
    INXI = "inxi"
    CLINFO = "clinfo"
    XPU_SMI = "xpu-smi"
    SYCL_LS = "sycl-ls"
    NPU_SMI = "npu-smi"
    TEGRASTATS = "tegrastats"
    JETSON_RELEASE = "jetson_release"
    CATALOG = "catalog"
    """hwadvisor's GPU catalog, for what an imported description lacks (VRAM, architecture)."""


#: Characters no hardware fact contains and that would act, not show, on a terminal or in
#: markup: C0 controls but tab and newline, DEL, C1 controls (ESC starts terminal sequences that
#: can move the cursor or set the window title), and the bidirectional overrides and isolates
#: that reorder what a reader sees (Trojan Source, CVE-2021-42574).
_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with every active character written out as ``\\uXXXX``: what reaches a
    terminal, an HTML page, an SVG chart or a JSON file from a profile shows, never acts."""
    if not _ACTIVE.search(text):
        return text
    return _ACTIVE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


#: The longest string a profile keeps (a probe's traceback is a few kB): a 20 MB "hostname" in a
#: hand-edited or hostile profile would otherwise cost minutes and gigabytes in every report.
MAX_STRING = 16 * 1024


def _bounded(text: str) -> str:
    if len(text) <= MAX_STRING:
        return text
    return f"{text[:MAX_STRING]}… [{len(text) - MAX_STRING:,} characters cut]"


def _visible_values(data: Any) -> Any:
    if isinstance(data, str):
        return visible(_bounded(data))
    if isinstance(data, dict):
        return {
            visible(k) if isinstance(k, str) else k: _visible_values(v) for k, v in data.items()
        }
    if isinstance(data, (list, tuple)):
        return [_visible_values(v) for v in data]
    return data


class StrictModel(BaseModel):
    """Base for every model of the profile: unknown keys are kept out, fields stay in order,
    and every string is made :func:`visible` (a profile is input: an escape sequence in a host
    name must not reach a terminal)."""

    model_config = ConfigDict(extra="ignore", ser_json_inf_nan="null", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _strings_are_visible(cls, data: Any) -> Any:
        return _visible_values(data) if isinstance(data, dict) else data


_M = TypeVar("_M", bound=BaseModel)
#: Each model's field names (pydantic's ``model_fields`` is a property built on each read).
_FIELD_NAMES: dict[type[BaseModel], frozenset[str]] = {}


def constructed(cls: type[_M], **values: Any) -> _M:
    """``cls.model_construct(**values)`` (no validation: for answers built from trusted
    figures, never from user input), a fifth of the time where ``values`` names every field
    and the model has no post-init hook: a sweep of the model catalog builds 70,000. Anything
    else goes through ``model_construct`` itself."""
    fields = _FIELD_NAMES.get(cls)
    if fields is None:
        fields = _FIELD_NAMES.setdefault(cls, frozenset(cls.model_fields))
    if values.keys() != fields or cls.__pydantic_post_init__ is not None:
        return cls.model_construct(**values)
    model = cls.__new__(cls)
    # ``values`` is this call's own dict; its order is the caller's, which nothing reads (the
    # JSON and equality go by the fields)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(fields))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


def plain_json(value: Any) -> Any:
    """A model as ``model_dump(mode="json")`` gives it, for the models of an answer built by
    :func:`constructed` (no aliases, serializers or computed fields; non-finite floats as
    null, as ``ser_json_inf_nan="null"`` writes them): without building pydantic's serializer,
    a tenth of ``advise --serve``'s time. A test holds it equal to pydantic's over a grid."""
    if isinstance(value, BaseModel):
        return {name: plain_json(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [plain_json(item) for item in value]
    if isinstance(value, dict):
        return {key: plain_json(item) for key, item in value.items()}
    if isinstance(value, Enum):
        return plain_json(value.value)
    if value is None or isinstance(value, (str, int)):  # bool is an int
        return value
    raise TypeError(f"no plain JSON for {type(value).__name__}")


def _finite(value: Any) -> Any:
    """Non-finite floats have no place in strict JSON; callers turn them into a reason."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Fact(StrictModel, Generic[T]):
    """A value with its source, or ``value: null`` with a ``reason`` saying why it is unknown."""

    value: T | None = None
    source: Source | None = None
    reason: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _non_finite_is_unknown(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("value") is not None:
            raw = data["value"]
            if _finite(raw) is None:
                data = {**data, "value": None, "reason": f"non-finite value {raw!r}"}
        return data

    @model_validator(mode="after")
    def _null_needs_reason(self) -> Fact[T]:
        if self.value is None and not self.reason:
            self.reason = "unknown"
        return self

    @property
    def known(self) -> bool:
        return self.value is not None


def fact(value: T | None, source: Source, reason: str = "not reported") -> Fact[T]:
    """A fact from ``source``; ``None`` (or a non-finite float) becomes unknown with ``reason``."""
    value = _finite(value)
    if value is None:
        return Fact[T](value=None, source=source, reason=reason)
    return Fact[T](value=value, source=source)


def unknown(reason: str, source: Source | None = None) -> Fact[Any]:
    """An unknown fact: ``null`` with the reason (and the source that was asked, if any)."""
    return Fact[Any](value=None, source=source, reason=reason)
