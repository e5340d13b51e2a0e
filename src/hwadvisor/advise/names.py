"""GPU names as people type them: the catalog row, or the three nearest names."""

from __future__ import annotations

import difflib
import re

from hwadvisor.catalog.peaks import (
    GpuPeak,
    find_gpu_peak,
    load_catalog,
)
from hwadvisor.errors import UsageError

_BRANDS = re.compile(r"\b(nvidia|geforce|tesla|quadro|amd|instinct|radeon|intel|graphics)\b")
#: "Intel(R) Arc(TM) A770 Graphics": the marks are no words of the name.
_TRADEMARKS = re.compile(r"\((?:r|tm)\)|[®™]")


def _tokens(text: str) -> list[str]:
    """``"NVIDIA GeForce RTX3050 Ti"`` → ``["rtx", "3050", "ti"]``: brand words and trademark
    marks dropped, letters and digits split."""
    text = _BRANDS.sub(" ", _TRADEMARKS.sub(" ", text.lower()))
    return re.findall(r"[a-z]+|\d+", text)


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


def nearest_gpus(name: str, count: int = 3) -> list[str]:
    """The ``count`` catalog names nearest ``name``: a near spelling first when there is one
    (a typo such as "4909" for "4090"), then the names of the family asked for (every word of
    two letters or more, "Arc", "RTX", "Max", in the name), then by model number (an RTX 3050
    is near an RTX 3060, not an RTX A6000; an "Arc A7700" near the Arc A770, not a Radeon RX
    7900 XT)."""
    query = _tokens(name)
    names = [p.name for p in load_catalog()]
    by_tokens = {" ".join(_tokens(n)): n for n in names}
    spelled = difflib.get_close_matches(" ".join(query), list(by_tokens), n=1, cutoff=0.8)
    family = {t for t in query if t.isalpha() and len(t) > 1}

    def rank(candidate: str) -> tuple[bool, float]:
        tokens = _tokens(candidate)
        return (not (family and family <= set(tokens)), -_closeness(query, tokens))

    ranked = sorted(names, key=rank)
    chosen: list[str] = []
    for candidate in [*(by_tokens[k] for k in spelled), *ranked]:
        if candidate not in chosen:
            chosen.append(candidate)
    return chosen[:count]


def _suggest(name: str) -> str:
    close = nearest_gpus(name) if _tokens(name) else []
    return f"; close matches: {', '.join(close)}" if close else ""


def resolve_gpu(name: str) -> GpuPeak:
    """A GPU of the catalog by name, or a usage error listing close matches."""
    peak = find_gpu_peak(name)
    if peak is None:
        raise UsageError(
            f"unknown GPU {name!r}{_suggest(name) or ''}; the GPU catalog lists the known ones"
        )
    return peak
