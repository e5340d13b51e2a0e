"""What every importer shares: the text it reads (:class:`Sample`), what it gives back
(:class:`Imported`), its one error type, and records whose unknown facts follow from the model.

An importer is a module with a ``FORMAT`` (:class:`hwadvisor.importers.registry.Format`): a name,
the :class:`~hwadvisor.model.facts.Source` its facts carry, ``sniff`` (is this text mine? cheap:
it runs for every format on every import) and ``parse``. Facts the format cannot carry are left
to :func:`new_gpu` / :func:`new_cpu` (``null`` with "not in <format>").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any, TypeVar

from hwadvisor import __version__
from hwadvisor.importers.jsontext import load_json_prefix
from hwadvisor.model.facts import Fact, Source, StrictModel, unknown
from hwadvisor.model.profile import CpuInfo, GpuInfo, NvmlInfo, NvmlStatus, Profile, ToolInfo

T = TypeVar("T")


#: More GPUs than one machine shows (an MI300X node in CPX mode lists 64 partitions): a longer
#: list is a paste repeated or several machines concatenated; the first ones are kept.
MAX_GPUS = 128


#: More MIG devices than one GPU can be split into (7 on an A100 or H100): the rest is a paste
#: repeated.
MAX_MIG = 16


def cap_gpus(items: list[T]) -> tuple[list[T], str | None]:
    """The first :data:`MAX_GPUS` of ``items``, and why the rest were left out (or None)."""
    if len(items) <= MAX_GPUS:
        return items, None
    return items[:MAX_GPUS], (
        f"{len(items)} GPUs listed, more than one machine has: the first {MAX_GPUS} are read"
    )


class ImportFormatError(ValueError):
    """The text is not readable as the format its sniffer took it for (one-line message)."""


class Sample:
    """The cleaned text of one input, with what several sniffers need computed once."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def body(self) -> str:
        """The text without leading blank space and byte-order mark."""
        return self.text.lstrip("\ufeff \t\r\n")

    @cached_property
    def head(self) -> str:
        """The first 64 KiB: where every format shows what it is."""
        return self.text[:65536]

    @cached_property
    def _json(self) -> tuple[Any, str | None]:
        if self.body[:1] in ("{", "["):
            document = load_json_prefix(self.body)
            if document[0] is not None:
                return document
        # A prompt line before the document ("$ gpustat --json", or "[gh]$ ..." that only
        # looks like an array): the first line that starts one, within the first 4 KiB.
        starts = [i for i in (self.text.find("\n{"), self.text.find("\n[")) if 0 <= i <= 4096]
        for start in sorted(starts):
            document = load_json_prefix(self.text[start + 1 :])
            if document[0] is not None:
                return document
        return None, None

    @property
    def json(self) -> Any:
        """The JSON document the text is (read up to a cut, see :attr:`json_cut`), or None."""
        return self._json[0]

    @property
    def json_cut(self) -> str | None:
        """Where the JSON document was cut off, or None when it is whole (or not JSON)."""
        return self._json[1]


@dataclass
class Imported:
    """What one input said: a profile, and what the envelope needs from the source."""

    profile: Profile
    when_utc: str | None = None
    """The source's own timestamp (ISO 8601 UTC), where it prints one."""
    hostname: str | None = None
    """The machine's name, where the source prints it."""
    truncated: str | None = None
    """Why the input looks cut off, where it does ("3 of the 8 attached GPUs are in the text")."""
    unmodelled: str | None = None
    """Accelerators the source shows that hwadvisor does not model (TPU, Gaudi, Trainium), with
    the words that show them."""
    notes: list[str] = field(default_factory=list)
    """What a reader should know about how the text was read (one line each)."""


def empty_profile(**sections: Any) -> Profile:
    """A profile with only ``sections`` filled in (the envelope is the import's to set)."""
    return Profile(tool=ToolInfo(version=__version__), created_utc="", **sections)


@cache
def _fact_fields(model: type[StrictModel]) -> tuple[str, ...]:
    """Every fact field of ``model`` (derived from the model, never listed by hand)."""
    return tuple(
        name
        for name, info in model.model_fields.items()
        if info.default_factory is not None and isinstance(info.default_factory(), Fact)  # type: ignore[call-arg]
    )


def _unknowns(model: type[StrictModel], source: Source, missing: str) -> dict[str, Any]:
    # One validated unknown, copied: a paste can list hundreds of GPUs.
    template = unknown(missing, source)
    return {name: template.model_copy() for name in _fact_fields(model)}


def new_gpu(
    index: int,
    *,
    vendor: str,
    backend: str,
    source: Source,
    missing: str,
    **known: Any,
) -> GpuInfo:
    """A GPU record with ``known`` facts; every other fact ``null`` with ``missing`` as reason."""
    fields = _unknowns(GpuInfo, source, missing)
    fields.update(known)
    return GpuInfo(index=index, vendor=vendor, backend=backend, **fields)


def new_cpu(*, source: Source, missing: str, **known: Any) -> CpuInfo:
    """A CPU record with ``known`` facts; every other fact ``null`` with ``missing`` as reason."""
    fields = _unknowns(CpuInfo, source, missing)
    fields.update(known)
    return CpuInfo(**fields)


def new_nvml(
    *, source: Source, missing: str, status: NvmlStatus = NvmlStatus.OK, **known: Any
) -> NvmlInfo:
    """The NVIDIA driver facts a tool's output states (``known``); the others ``null`` with
    ``missing``, and the Python binding's version not applicable (no binding was used). The
    status is OK by default: the tool read the GPUs through the driver when it printed them."""
    fields = _unknowns(NvmlInfo, source, missing)
    fields["binding_version"] = unknown(f"not applicable: read from {source.value} output", source)
    fields.update(known)
    return NvmlInfo(status=status, **fields)
