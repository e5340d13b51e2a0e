"""Which catalog row each GPU of a profile is, and what that row knows that the source did not.

Run on every profile a scan or an import builds: the row's name and class are facts of the
profile (``source: catalog``), and an imported description that names a card but not its memory,
architecture or compute capability has them from the catalog, marked as such.
"""

from __future__ import annotations

import re

from hwadvisor.catalog.peaks import GpuPeak, find_gpu_peak
from hwadvisor.model.facts import Fact, Source, unknown
from hwadvisor.model.profile import Profile

#: Memory written in a product name: "A800-SXM4-80GB", "V100-SXM2-16GB", "V100-32G",
#: "GTX 1060 6GB", "GH200 480GB" (a size after a separator; "A10G" is a model, not 10 GB).
_NAME_MEMORY = re.compile(r"(?:^|[\s\-_(/])(\d{1,3})\s?(?:GB|GiB|G)(?![A-Za-z0-9])")


def memory_from_name(name: str) -> int | None:
    """The memory (bytes) a GPU's product name states, or None. As with the catalog, "80GB"
    is what the driver reports in MiB / 1024 (an 80GB card shows 81920 MiB)."""
    match = _NAME_MEMORY.search(name)
    if match is None or not 1 <= int(match.group(1)) <= 512:
        return None
    return int(match.group(1)) * 1024**3


def _gib(gb: float) -> int:
    return int(gb * 1024**3)


def identify_gpus(profile: Profile) -> None:
    """What the GPU catalog knows of each named card: the row it matched (``catalog_name``) and
    its class, and — where the source did not say — memory, architecture and compute
    capability, all marked ``source: catalog``."""
    found: dict[tuple[str, int | None], GpuPeak | None] = {}  # machines repeat one model
    for gpu in profile.gpus:
        name = gpu.name.value
        if not name:
            continue
        named = memory_from_name(name) if gpu.vram_total_bytes.value is None else None
        key = (name, gpu.vram_total_bytes.value or named)
        if key not in found:
            found[key] = find_gpu_peak(*key)
        peak = found[key]
        known = peak is not None and peak.origin == "catalog"
        if named and not (known and peak and peak.memory_gb and _gib(peak.memory_gb) == named):
            # The name states it (A800-SXM4-80GB): used whether or not the catalog knows the
            # card; where the catalog's row says the same, the row is the source.
            gpu.vram_total_bytes = Fact(value=named, source=Source.DERIVED)
        if peak is None or peak.origin != "catalog":
            reason = f"{name!r} is not in hwadvisor's GPU catalog"
            gpu.catalog_name = unknown(reason)
            gpu.gpu_class = unknown(reason)
            continue
        gpu.catalog_name = Fact(value=peak.name, source=Source.CATALOG)
        gpu.gpu_class = Fact(value=peak.gpu_class, source=Source.CATALOG)
        if gpu.vram_total_bytes.value is None and peak.memory_gb:
            # The catalog's "80 GB" is what the driver reports in MiB / 1024 (A100 80GB: 81920).
            value = _gib(peak.memory_gb)
            gpu.vram_total_bytes = Fact(value=value, source=Source.CATALOG)
        if gpu.vendor == "amd":
            # On AMD the architecture fact is the gfx target, as amdsmi and HIP name it (what
            # readiness compares with torch's arch list), not the generation ("CDNA 3").
            if gpu.architecture.value is None and peak.target:
                gpu.architecture = Fact(value=peak.target, source=Source.CATALOG)
            continue
        if gpu.architecture.value is None and peak.architecture:
            gpu.architecture = Fact(value=peak.architecture, source=Source.CATALOG)
        if gpu.compute_capability.value is None and peak.target:
            gpu.compute_capability = Fact(value=peak.target, source=Source.CATALOG)
