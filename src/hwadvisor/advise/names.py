"""GPU names as people type them (``--assume-gpu``, ``hwadvisor gpus FILTER``), resolved
strictly: one catalog row, one row and a note naming the others, or a usage error.

What counts in a name: its words and numbers after brand words (NVIDIA, GeForce, Tesla,
Quadro, AMD, Radeon, Instinct, Intel) and generic ones ("GPU", "Graphics") are dropped, case,
spaces and hyphens ignored: "rtx4090", "RTX-4090", "GeForce RTX 4090" and "4090" are one name.
A memory size ("40GB", "80 GB", "144G") is read as the memory, not as words.

:func:`resolve_gpu` gives the row whose name or alias accounts for every word the user typed:

* a word the user typed that a row lacks ("Ti", "SUPER", "D", "Laptop", "NVL", "PCIe", a
  model number) rules the row out: "RTX 4090 Ti" is no RTX 4090, and no card at all, so it is
  a usage error naming the nearest cards (:func:`nearest_gpus`);
* a word of the row the user left out may be missing only when it names a form of the same
  product (SXM, PCIe, NVL, HBM, the memory, a parenthesised remark such as "(one GCD)") or a
  family word ("RTX", "GTX", "RX", "Arc", "Apple", "Data Center"): "H100" is an H100 SXM, PCIe
  or NVL, while "RTX 3080" is no RTX 3080 Ti and "M2" no M2 Max;
* the memory typed decides between rows ("A100 40GB"); a row whose memory varies (no
  ``memory_gb``) takes any size;
* the row the user named exactly (every word of its name or of a specific alias) wins alone;
  otherwise, when several rows fit equally ("H100", "A100", "RTX 3080"), the catalog's
  documented default (a row note saying 'a bare "H100" is taken as ...', or 'NVML names it
  "NVIDIA H200"') is taken, else the first in catalog order, and the note names the others.

:func:`gpu_rows` lists the catalog for ``hwadvisor gpus [FILTER]``.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections import Counter
from functools import lru_cache
from typing import Any

from hwadvisor.catalog import peaks, schema
from hwadvisor.catalog.peaks import CATALOG_RESOURCE, CatalogError, GpuPeak, load_catalog
from hwadvisor.catalog.toml import packaged_kept
from hwadvisor.errors import UsageError

__all__ = [
    "GpuRow",
    "ResolvedGpu",
    "gpu_rows",
    "nearest_gpus",
    "resolve_gpu",
    "varying_memory",
]

_BRANDS = re.compile(r"\b(nvidia|geforce|tesla|quadro|amd|instinct|radeon|intel|graphics)\b")
#: "Intel(R) Arc(TM) A770 Graphics": the marks are no words of the name.
_TRADEMARKS = re.compile(r"\((?:r|tm)\)|[®™]")

#: Words dropped from every name before matching: brands, and words that name no model.
_DROPPED = frozenset(
    {"nvidia", "geforce", "tesla", "quadro", "amd", "instinct", "radeon", "intel", "graphics"}
    | {"gpu"}
)
#: Family words a user may leave out: "4090" is the GeForce RTX 4090, "A770" the Arc A770.
_FAMILY = frozenset({"rtx", "gtx", "rx", "arc", "apple", "data", "center", "generation"})
#: Words that name a form of one product (socket, link, memory type): left out, they make the
#: name ambiguous ("H100": SXM, PCIe or NVL), not another product.
_FORMS = frozenset(
    {"sxm", "sxm2", "sxm4", "sxm5", "pcie", "nvl", "hbm", "hbm2", "hbm2e", "hbm3", "hbm3e"}
)
#: A memory size: "40GB", "80 GB", "24GiB", "144G", "P100PCIe16GB"; not the "10G" of "A10G"
#: (a bare "G" right after a letter).
_MEMORY = re.compile(
    r"(?<![0-9.])(\d+(?:\.\d+)?) ?(?:gib|gb)(?![a-z0-9])"
    r"|(?<![a-z0-9.])(\d+(?:\.\d+)?) ?g(?![a-z0-9])"
)
#: Words: "sxm4" and "hbm3e" stay whole (an "SXM4" is no "SXM5"); elsewhere letters and digits
#: part ("rtx4090" is "rtx 4090", "a100" is "a 100").
_WORD = re.compile(r"sxm\d|hbm\d?e?|[a-z]+|\d+(?:\.\d+)?")
_PARENTHESES = re.compile(r"\(([^()]*)\)")
#: "A100-SXM4-40GB", "RTX_4090", "MI250X/MI250": separators, as spaces.
_SEPARATORS = re.compile(r"[-_/,]+")


def _tokens(text: str) -> list[str]:
    """``"NVIDIA GeForce RTX3050 Ti"`` → ``["rtx", "3050", "ti"]``: brand words and trademark
    marks dropped, letters and digits split (the words :func:`nearest_gpus` compares)."""
    text = _BRANDS.sub(" ", _TRADEMARKS.sub(" ", text.lower()))
    return re.findall(r"[a-z]+|\d+", text)


# --------------------------------------------------------------------------------------------
# Words of a name, for strict matching


@dataclasses.dataclass(frozen=True)
class _Words:
    """A name as matched: its words (a multiset), the memory it states, and the words it says
    in parentheses ("(one GCD)", "(Pascal)"), which a user may leave out."""

    words: Counter[str]
    memory_gb: float | None
    remarks: frozenset[str]


def _memory(text: str) -> tuple[float | None, str]:
    """The first memory size stated in ``text`` (lower case), and the text without it."""
    found = _MEMORY.search(text)
    if found is None:
        return None, text
    size = float(found.group(1) or found.group(2))
    return size, text[: found.start()] + " " + text[found.end() :]


def _split(
    text: str, *, keep_brands: bool = False, known: frozenset[str] | None = None
) -> list[str]:
    """Words of ``text`` (lower case, no memory): letter runs that are no known word split into
    known ones ("geforcertx" → "geforce", "rtx"), then brand and generic words dropped."""
    words: list[str] = []
    for word in _WORD.findall(text):
        words.extend(_segment(word, known or _vocabulary()) if word.isalpha() else [word])
    dropped = {"gpu", "graphics"} if keep_brands else _DROPPED
    return [word for word in words if word not in dropped]


def _words(text: str, known: frozenset[str] | None = None) -> _Words:
    lowered = _SEPARATORS.sub(" ", _TRADEMARKS.sub(" ", text.lower()))
    memory_gb, rest = _memory(lowered)
    remarks = [word for group in _PARENTHESES.findall(rest) for word in _split(group, known=known)]
    return _Words(Counter(_split(rest, known=known)), memory_gb, frozenset(remarks) - _FORMS)


def _vocabulary() -> frozenset[str]:
    return _kept().vocabulary


def _build_vocabulary(catalog: tuple[GpuPeak, ...]) -> frozenset[str]:
    known = set(_DROPPED | _FAMILY | _FORMS | {"gpu", "laptop", "mobile"})
    for row in catalog:
        for text in (row.name, *row.match):
            known.update(w for w in _WORD.findall(text.lower()) if w.isalpha())
    return frozenset(known)


@lru_cache(maxsize=4096)
def _segment(run: str, known: frozenset[str]) -> tuple[str, ...]:
    """A letter run as known words, fewest pieces first; the run itself when it is a known word
    or cannot be split ("tisuper" → "ti", "super"; "xtx" stays "xtx"); ``known``: the
    catalog's words."""
    if run in known:
        return (run,)
    best: list[tuple[str, ...] | None] = [()] + [None] * len(run)
    for end in range(1, len(run) + 1):
        for start in range(end):
            head = best[start]
            if head is not None and run[start:end] in known:
                candidate = (*head, run[start:end])
                current = best[end]
                if current is None or len(candidate) < len(current):
                    best[end] = candidate
    return best[-1] or (run,)


def _same_memory(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and math.isclose(a, b, abs_tol=0.05)


def _other_memory(a: float | None, b: float | None) -> bool:
    """Two sizes, and not the same: a row of a memory varying per board (None) takes any."""
    return a is not None and b is not None and not _same_memory(a, b)


@dataclasses.dataclass(frozen=True)
class _Form:
    """One way to write a row: its name or one of its ``match`` aliases."""

    words: _Words
    loose: bool
    """An alias less specific than the name ("H100" of "H100 SXM", "GTX 1060" of "GTX 1060
    6GB"): it finds the row, but typing it names the row no more than the others it fits."""


@dataclasses.dataclass(frozen=True)
class _Entry:
    peak: GpuPeak
    forms: tuple[_Form, ...]
    optional: frozenset[str]
    """Words of the row that a user may leave out: forms, family words, remarks."""
    union: Counter[str] = dataclasses.field(default_factory=Counter)
    """Every word of every name of the row."""


_DEFAULTS = re.compile(r'bare "([^"]+)" is taken as|NVML names it "([^"]+)"')


def _key(words: _Words) -> tuple[tuple[str, ...], float | None]:
    return tuple(sorted(words.words.elements())), words.memory_gb


_Defaults = dict[tuple[tuple[str, ...], float | None], str]


@dataclasses.dataclass(frozen=True)
class _Kept:
    """The catalog as matched: the words its names are made of, its rows with their forms, and
    the documented defaults (the words of a bare name → the row a note says it is taken as)."""

    vocabulary: frozenset[str]
    entries: tuple[_Entry, ...]
    defaults: _Defaults


#: What the kept index depends on besides the GPU catalog's TOML: the matching rules here and
#: the catalog's rows as read.
_CODE = (__file__, peaks.__file__, schema.__file__)


@lru_cache(maxsize=1)
def _kept() -> _Kept:
    return _read_kept()


def _read_kept() -> _Kept:
    """Built once per catalog and code, then kept in the cache folder (building it splits a
    thousand names into words: a tenth of a command's time)."""
    catalog = tuple(load_catalog())
    return packaged_kept(
        CATALOG_RESOURCE,
        CatalogError,
        lambda _: _plain(_build(catalog)),
        lambda plain: _from_plain(plain, catalog),
        _CODE,
        kind="names",
    )


def _build(catalog: tuple[GpuPeak, ...]) -> _Kept:
    vocabulary = _build_vocabulary(catalog)
    entries, defaults = _build_index(catalog, vocabulary)
    return _Kept(vocabulary, entries, defaults)


def _plain(kept: _Kept) -> dict[str, Any]:
    def words(w: _Words) -> list[Any]:
        return [dict(w.words), w.memory_gb, sorted(w.remarks)]

    return {
        "vocabulary": sorted(kept.vocabulary),
        "entries": [
            {
                "name": e.peak.name,
                "forms": [[*words(f.words), f.loose] for f in e.forms],
                "optional": sorted(e.optional),
                "union": dict(e.union),
            }
            for e in kept.entries
        ],
        "defaults": [[list(key[0]), key[1], name] for key, name in kept.defaults.items()],
    }


def _from_plain(plain: Any, catalog: tuple[GpuPeak, ...]) -> _Kept:
    entries = plain["entries"]
    if len(entries) != len(catalog):
        raise ValueError("kept for another catalog")
    built: list[_Entry] = []
    for peak, e in zip(catalog, entries, strict=True):
        if e["name"] != peak.name:
            raise ValueError("kept for another catalog")
        forms = tuple(
            _Form(_Words(Counter(w), _number(m), frozenset(r)), bool(loose))
            for w, m, r, loose in e["forms"]
        )
        built.append(_Entry(peak, forms, frozenset(e["optional"]), Counter(e["union"])))
    defaults: _Defaults = {
        (tuple(words), _number(memory)): str(name) for words, memory, name in plain["defaults"]
    }
    return _Kept(frozenset(plain["vocabulary"]), tuple(built), defaults)


def _number(value: Any) -> float | None:
    if value is not None and not isinstance(value, (int, float)):
        raise TypeError("not a number")
    return value


def _index() -> tuple[tuple[_Entry, ...], _Defaults]:
    kept = _kept()
    return kept.entries, kept.defaults


def _build_index(
    catalog: tuple[GpuPeak, ...], vocabulary: frozenset[str]
) -> tuple[tuple[_Entry, ...], _Defaults]:
    """The catalog as matched, and the documented defaults: the words of a bare name → the
    row a note says that name is taken as."""
    entries: list[_Entry] = []
    defaults: _Defaults = {}
    for peak in catalog:
        name = _words(peak.name, vocabulary)
        forms = [_Form(name, loose=False)]
        for alias in peak.match:
            words = _words(alias, vocabulary)
            loose = (
                words.words <= name.words
                and (words.memory_gb is None or _same_memory(words.memory_gb, name.memory_gb))
                and _key(words) != _key(name)
            )
            forms.append(_Form(words, loose))
        remarks = frozenset(word for form in forms for word in form.words.remarks)
        union: Counter[str] = Counter()
        for form in forms:
            union |= form.words.words
        entries.append(_Entry(peak, tuple(forms), _FORMS | _FAMILY | remarks, union))
        for found in _DEFAULTS.finditer(peak.note or ""):
            bare = _words(found.group(1) or found.group(2), vocabulary)
            defaults.setdefault(_key(bare), peak.name)
    return tuple(entries), defaults


def _fit(entry: _Entry, asked: _Words) -> int | None:
    """How ``entry`` fits the name asked: 0 named exactly, 1 fits with words left out (forms,
    the memory), None not at all (a word asked that the row lacks, a product word left out,
    another memory size)."""
    if _other_memory(asked.memory_gb, entry.peak.memory_gb):
        return None
    best: int | None = None
    for form in entry.forms:
        if not asked.words <= form.words.words:
            continue
        if _other_memory(asked.memory_gb, form.words.memory_gb):
            continue
        missing = set((form.words.words - asked.words).elements()) - _FAMILY
        if not missing <= entry.optional:
            continue
        memory_missing = form.words.memory_gb is not None and asked.memory_gb is None
        exact = not missing and not memory_missing and not form.loose
        fit = 0 if exact else 1
        best = fit if best is None else min(best, fit)
    if (
        best is None
        and asked.words <= entry.union
        and any(
            not (set(form.words.words.elements()) - entry.optional - _FAMILY) - set(asked.words)
            and not form.loose
            for form in entry.forms
        )
    ):
        # one of the row's names whole, with words of its other names beside it: "AMD Ryzen AI
        # Max+ 395 (Radeon 8060S, Strix Halo)" is the 8060S row named three ways at once
        best = 1
    return best


# --------------------------------------------------------------------------------------------
# The API


@dataclasses.dataclass(frozen=True)
class ResolvedGpu:
    """The catalog row a typed GPU name stands for, and a note when the name also fits other
    rows (which one was taken, and the others to choose from)."""

    peak: GpuPeak
    note: str | None = None
    memory_gb: float | None = None
    """The memory the typed name states ("Apple M2 Ultra 192GB": 192), if any."""


@dataclasses.dataclass(frozen=True)
class GpuRow:
    """One catalog row as ``hwadvisor gpus`` lists it. TFLOP/s are dense."""

    name: str
    vendor: str
    gpu_class: str
    architecture: str | None
    memory_gb: float | None
    tensor_tflops: float | None
    """The BF16 tensor peak, or FP16 where the row has no BF16 figure."""
    tensor_precision: str | None
    """"bf16" or "fp16": which figure ``tensor_tflops`` is; None without either."""
    fp32_tflops: float | None
    bandwidth_gbs: float | None

    def as_dict(self) -> dict[str, str | float | None]:
        """The row as JSON takes it, keys named as the fields."""
        return dataclasses.asdict(self)


def nearest_gpus(name: str, count: int = 3) -> list[str]:
    """The ``count`` catalog names nearest ``name``: a near spelling first when there is one
    and the model number asked is in no name (a typo such as "4909" for "4090"), then the
    names of the family asked for (every word of two letters or more that is no variant word
    such as "Ti" or "SUPER": "Arc", "RTX", "Max"), laptop parts only after the others unless a
    laptop part was asked for, the cards with the model number asked first (for "RTX 4090 Ti"
    the RTX 4090, then the 4090 D), then by model number (an RTX 3050 is near an RTX 3060,
    not an RTX A6000; an "Arc A7700" near the Arc A770, not a Radeon RX 7900 XT). A memory
    size in the name ("RTX 4090 16GB") is no model number."""
    query = _tokens(_memory(_TRADEMARKS.sub(" ", name.lower()))[1])
    names = [p.name for p in load_catalog()]
    by_tokens = {" ".join(_tokens(n)): n for n in names}
    number = next((t for t in query if t.isdigit()), None)
    known_number = number is not None and any(number in key.split() for key in by_tokens)
    spelled = (
        []
        if known_number
        else difflib.get_close_matches(" ".join(query), list(by_tokens), n=1, cutoff=0.8)
    )
    family = {t for t in query if t.isalpha() and len(t) > 1} - _VARIANTS
    mobile = bool(set(query) & _MOBILE)

    def rank(candidate: str) -> tuple[bool, bool, bool, int, float]:
        tokens = _tokens(candidate)
        same_number = number is not None and number in tokens
        # Of the cards with the number asked, the one with fewest words not asked for first:
        # "RTX 4090 Ti" is nearer the RTX 4090 than the 4090 D.
        extra = len({t for t in tokens if t.isalpha()} - set(query) - {"gb"})
        return (
            not (family and family <= set(tokens)),
            mobile != bool(set(tokens) & _MOBILE),
            not same_number,
            extra if same_number else 0,
            -_closeness(query, tokens),
        )

    ranked = sorted(names, key=rank)
    chosen: list[str] = []
    for candidate in [*(by_tokens[k] for k in spelled), *ranked]:
        if candidate not in chosen:
            chosen.append(candidate)
    return chosen[:count]


#: Words that make a variant of a model, not a family: "RTX 4090 Ti" is asked in the RTX family.
_VARIANTS = frozenset({"ti", "super", "xt", "xtx", "gre", "laptop", "mobile", "ultra", "nvl"})
_MOBILE = frozenset({"laptop", "mobile"})


def _closeness(query: list[str], row: list[str]) -> float:
    """How near a catalog name is to what was asked: spelling, shared words, and above all a
    model number close to the one asked (an RTX 3050 is near an RTX 3060, not an RTX A6000)."""
    score = difflib.SequenceMatcher(None, " ".join(query), " ".join(row)).ratio()
    words = {t for t in query if t.isalpha()}
    if words:
        score += 0.5 * len(words & {t for t in row if t.isalpha()}) / len(words)
    numbers = [int(t) for t in query if t.isdigit()]
    theirs = [int(t) for t in row if t.isdigit()]
    if numbers and theirs:
        gap = abs(numbers[0] - theirs[0]) / max(numbers[0], theirs[0], 1)
        score += 2.0 / (1.0 + 10.0 * gap)
    return score


def _suggest(name: str) -> str:
    close = nearest_gpus(name) if _tokens(name) else []
    return f"; close matches: {', '.join(close)}" if close else ""


def _unknown(name: str, asked: _Words) -> UsageError:
    close = nearest_gpus(name) if asked.words and _tokens(name) else []
    closest = f"; closest: {', '.join(close)}" if close else ""
    return UsageError(
        f"unknown GPU {name!r}: the catalog has no such card{closest} (hwadvisor gpus lists them)"
    )


def varying_memory(resolved: ResolvedGpu) -> tuple[float | None, str | None]:
    """The memory (GiB) an assumed GPU whose memory varies per machine or board (a row with no
    ``memory_gb``: an Apple chip, Strix Halo, a V100) is sized with: the size its name states,
    else the least it was sold with, with a note saying so. ``(None, None)`` for a row of one
    memory, or when neither is known."""
    peak = resolved.peak
    if peak.memory_gb:
        return None, None
    if resolved.memory_gb:
        return resolved.memory_gb, None
    if peak.memory_min_gb:
        return peak.memory_min_gb, (
            f"{peak.name}: {peak.memory_min_gb:g} GB assumed, the least it was sold with (a "
            "size in the name sizes yours, as in 'M2 Ultra 192GB' or 'V100 32GB')"
        )
    return None, None


#: An Apple chip's name: "M2 Ultra", "m4max", "Apple M3".
_APPLE_CHIP = re.compile(r"(?<![a-z0-9])m[1-9](?![0-9])", re.IGNORECASE)
#: The Mac around a chip, which names no GPU: "Mac Studio M2 Ultra", "MacBook Pro M3 Max".
_MAC_PRODUCT = re.compile(
    r"\b(?:macbook\s*(?:pro|air)?|mac\s*(?:studio|mini|pro)|imac(?:\s*pro)?)\b", re.IGNORECASE
)
#: A GPU core count as people write it after an Apple chip: "24-core", "30-core GPU",
#: "(40-core GPU)", "32c", "14 GPU cores", "76 GPU", "38 cores".
_CORES = re.compile(
    r"\(?\s*(?<![0-9])(\d{1,3})\s*-?\s*(?:gpu\s*cores?|cores?(?:\s*gpu)?|c|gpu)(?![a-z0-9])\s*\)?",
    re.IGNORECASE,
)
#: CPU and GPU core counts written as a pair ("M3 Max 16/40", "M4 Max 16C/40C"): the GPU's is
#: the second.
_CORE_PAIR = re.compile(
    r"\(?\s*(?<![0-9])\d{1,2}\s*c?\s*/\s*(\d{1,3})\s*c?(?![a-z0-9])\s*\)?", re.IGNORECASE
)
#: The CPU's core count beside it ("11-core CPU", "12C CPU"), which says nothing of the GPU.
_CPU_CORES = re.compile(
    r"\(?\s*(?<![0-9])\d{1,3}\s*-?\s*(?:cpu\s*cores?|cores?\s*cpu|c\s*cpu)(?![a-z0-9])\s*\)?,?",
    re.IGNORECASE,
)


def _apple_parts(name: str) -> tuple[str, int | None]:
    """An Apple chip's name without the Mac around it and without its GPU core count, and the
    count (None: not given, or not an Apple chip's name)."""
    if not _APPLE_CHIP.search(name):
        return name, None
    text = _MAC_PRODUCT.sub(" ", name)
    pair = _CORE_PAIR.search(text)
    if pair is not None:
        rest = text[: pair.start()] + " " + text[pair.end() :]
        return " ".join(rest.split()), int(pair.group(1))
    text = _CPU_CORES.sub(" ", text)
    found = _CORES.search(text)
    if found is None:
        return " ".join(text.split()), None
    rest = text[: found.start()] + " " + text[found.end() :]
    return " ".join(rest.split()), int(found.group(1))


#: A count written with the GPU: "8x H200", "8xH100", "8 × H200", "2*3090" before it, "H200
#: x8", "A6000 × 4", "H100x8" after it. A digit run glued to an "x" counts only up to MAX_COUNT
#: ("7900XTX" is a card, not 7,900 "TX"); spaced, the "x" must stand alone ("7900 XTX" too).
_COUNT_BEFORE = re.compile(r"\s*(\d{1,4})(?:[x×*]|\s*[×*]|\s+x(?=[\s\d]))\s*(\S.*)", re.I)
_COUNT_AFTER = re.compile(r"(.*?\S)(?:\s+[x×*]|\s*[×*]|(?<=\d)x)\s*(\d{1,4})\s*", re.I)
MAX_COUNT = 1024


def split_count(name: str, gpus: int = 1) -> tuple[str, int]:
    """The GPU ``name`` names and how many of it: a count written with it ("8x H200"), else
    ``gpus`` (``--gpus``). Both, and different: a usage error."""
    for pattern, count_group, name_group in ((_COUNT_BEFORE, 1, 2), (_COUNT_AFTER, 2, 1)):
        found = pattern.fullmatch(name)
        if found is None or int(found.group(count_group)) > MAX_COUNT:
            continue
        count = int(found.group(count_group))
        if count == 0:
            raise UsageError(f"--assume-gpu {name!r}: a count of GPUs from 1 to {MAX_COUNT}")
        if gpus not in (1, count):
            raise UsageError(f"--assume-gpu {name!r} says {count}, --gpus says {gpus}: give one")
        return found.group(name_group).strip(), count
    return name, gpus


def resolve_gpu(name: str) -> ResolvedGpu:
    """The catalog row ``name`` stands for (see the module's rules), with a note when other
    rows fit as well; a :class:`UsageError` naming the closest cards when none fits.

    An Apple chip may be named with the Mac around it ("Mac Studio M2 Ultra") and with its GPU
    core count ("M1 Max 24-core", "M3 Max 30c"): a row of that count where the catalog has one
    (its bandwidth may differ), else the full chip's row with its compute scaled to the cores
    (the bandwidth as listed)."""
    base, cores = _apple_parts(name)
    if cores is None:
        return _resolve(base)
    try:
        return _resolve(f"{base} {cores}-core")  # a row of that core count
    except UsageError:
        pass
    found = _resolve(base)
    row = found.peak
    full = row.gpu_cores
    if full is None or cores == full:
        return found
    if cores > full:
        raise UsageError(f"{name!r}: the {row.name} has at most {full} GPU cores")
    share = cores / full

    def scaled(x: float | None) -> float | None:
        return None if x is None else round(x * share, 3)

    peak = dataclasses.replace(
        row,
        name=f"{row.name} ({cores}-core GPU)",
        fp32_tflops=scaled(row.fp32_tflops),
        tf32_tflops=scaled(row.tf32_tflops),
        fp16_tflops=scaled(row.fp16_tflops),
        bf16_tflops=scaled(row.bf16_tflops),
        fp8_tflops=scaled(row.fp8_tflops),
        gpu_cores=cores,
    )
    return ResolvedGpu(
        peak,
        f"{row.name} with {cores} of its {full} GPU cores: its compute scaled to "
        f"{share:.0%}, its bandwidth as listed ({row.bandwidth_gbs or 0:g} GB/s)",
        found.memory_gb,
    )


def _resolve(name: str) -> ResolvedGpu:
    asked = _words(name)
    if not asked.words:
        raise _unknown(name, asked)
    entries, defaults = _index()
    fits = [(fit, e.peak) for e in entries if (fit := _fit(e, asked)) is not None]
    if asked.memory_gb is not None and any(
        _same_memory(peak.memory_gb, asked.memory_gb) for _, peak in fits
    ):
        # "V100 SXM2 32GB": the 32 GB row, not the row whose boards come in 16 and 32 GB.
        fits = [(fit, peak) for fit, peak in fits if peak.memory_gb is not None]
    if not fits:
        bare = dataclasses.replace(asked, memory_gb=None)
        if (
            "laptop" not in asked.words
            and "mobile" not in asked.words
            and not any(_fit(e, bare) is not None for e in entries)
        ):
            # a part sold only in laptops ("RTX 3500 Ada"; not "RTX 4090 16GB", a desktop
            # card's name with the laptop part's memory): its laptop row, said so
            typed_laptop = dataclasses.replace(asked, words=asked.words + Counter(["laptop"]))
            laptop = [e.peak for e in entries if _fit(e, typed_laptop) == 0]
            if len(laptop) == 1:
                typed = " ".join(name.split())
                return ResolvedGpu(
                    laptop[0],
                    f"“{typed}” taken as the {laptop[0].name} (no desktop card has that name)",
                    asked.memory_gb,
                )
        raise _unknown(name, asked)
    level = min(fit for fit, _ in fits)
    tier = [peak for fit, peak in fits if fit == level]
    if len(tier) == 1:
        return ResolvedGpu(tier[0], memory_gb=asked.memory_gb)
    default = defaults.get(_key(asked))
    chosen = next((peak for peak in tier if peak.name == default), tier[0])
    others = ", ".join(peak.name for peak in tier if peak is not chosen)
    typed = " ".join(name.split())
    return ResolvedGpu(
        chosen,
        f"“{typed}” taken as {chosen.name} (also in the catalog: {others}; name one to choose)",
        asked.memory_gb,
    )


def gpu_rows(filter: str | None = None) -> list[GpuRow]:
    """The catalog rows for a listing, in catalog order; with ``filter``, the rows whose name,
    aliases, vendor or class hold every word of it ("4090": the RTX 4090, 4090 D and the
    laptop part; "amd datacenter"; "80GB": the rows with 80 GB)."""
    memory_gb: float | None = None
    wanted: Counter[str] = Counter()
    runs: list[str] = []
    if filter is not None:
        memory_gb, rest = _memory(_SEPARATORS.sub(" ", _TRADEMARKS.sub(" ", filter.lower())))
        wanted = Counter(_split(rest, keep_brands=True))
        # a word of letters and digits stays one ("a16" is not "A770 (16 GB)")
        runs = [w for w in re.findall(r"[a-z0-9]+", rest) if w.isalnum() and not w.isalpha()]
    rows: list[GpuRow] = []
    for peak in load_catalog():
        if memory_gb is not None and not _same_memory(peak.memory_gb, memory_gb):
            continue
        if wanted:
            texts = " ".join((peak.name, *peak.match)).lower()
            have = Counter(re.findall(r"[a-z]+|\d+", _TRADEMARKS.sub(" ", texts)))
            have.update(_split(texts, keep_brands=True))
            have.update([peak.vendor, peak.gpu_class, *_split(peak.gpu_class)])
            if not all(have[word] for word in wanted):
                continue
            compact = re.sub(r"[^a-z0-9]+", "", texts)
            if not all(run in compact for run in runs):
                continue
        precision = "bf16" if peak.bf16_tflops else "fp16" if peak.fp16_tflops else None
        rows.append(
            GpuRow(
                name=peak.name,
                vendor=peak.vendor,
                gpu_class=peak.gpu_class,
                architecture=peak.architecture,
                memory_gb=peak.memory_gb,
                tensor_tflops=peak.bf16_tflops or peak.fp16_tflops,
                tensor_precision=precision,
                fp32_tflops=peak.fp32_tflops,
                bandwidth_gbs=peak.bandwidth_gbs,
            )
        )
    return rows
