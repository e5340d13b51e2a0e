"""``nvidia-smi -q`` (``nvidia-smi -a``) as plain text: the most pasted GPU description there is.

The text is the XML report (``nvidia-smi -q -x``) written as indented ``Key : value`` lines. This
module turns it back into that XML tree, naming each line as the XML does, and lets the XML
importer read it: one reading of the facts for both. A shell prompt before the report, any
driver's wording (396 to 580) and a paste cut off part-way are read (the GPUs read up to the cut
are kept, and the cut is reported); fences and quote marks are taken off before any format reads
the text (:mod:`hwadvisor.importers.paste`).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from hwadvisor.importers.base import Imported, Sample
from hwadvisor.importers.evidence import KeyIndex, keys_found
from hwadvisor.importers.nvidia_smi_xml import NvidiaSmiXmlError, imported_from_root
from hwadvisor.importers.registry import Format
from hwadvisor.model.facts import Source

__all__ = ["FORMAT", "looks_like_nvidia_smi_q", "parse_nvidia_smi_q"]

#: The banner (a stray inline-code backtick or quote a paste left before it is allowed).
_BANNER = re.compile(r"^[`'\"]{0,3}=+\s*NVSMI LOG\s*=+\s*$", re.MULTILINE)
_GPU_HEADER = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<key>[^:]+?)\s*(?::\s*(?P<value>.*?))?\s*$")

#: Where the text's wording differs from the XML's element names: (parent, text key) → XML
#: name. Keys not listed become their words in lower case joined by "_" ("Product Name" →
#: product_name), which is the XML's own name for most of them.
_RENAMES: dict[tuple[str, str], str] = {
    ("gpu", "serial_number"): "serial",
    ("gpu", "gpu_uuid"): "uuid",
    ("gpu", "gpu_current_temp"): "gpu_temp",
    ("pci", "bus_id"): "pci_bus_id",
    ("pci", "gpu_link_info"): "pci_gpu_link_info",
    ("pci_gpu_link_info", "pcie_generation"): "pcie_gen",
    ("pci_gpu_link_info", "link_width"): "link_widths",
    ("pcie_gen", "max"): "max_link_gen",
    ("pcie_gen", "current"): "current_link_gen",
    ("link_widths", "max"): "max_link_width",
    ("link_widths", "current"): "current_link_width",
    ("mig_mode", "current"): "current_mig",
    ("mig_mode", "pending"): "pending_mig",
    ("ecc_mode", "current"): "current_ecc",
    ("ecc_mode", "pending"): "pending_ecc",
    ("temperature", "gpu_current_temp"): "gpu_temp",
    ("utilization", "gpu"): "gpu_util",
    ("utilization", "memory"): "memory_util",
    ("clocks", "graphics"): "graphics_clock",
    ("clocks", "sm"): "sm_clock",
    ("clocks", "memory"): "mem_clock",
    ("clocks", "video"): "video_clock",
    ("max_clocks", "graphics"): "graphics_clock",
    ("max_clocks", "sm"): "sm_clock",
    ("max_clocks", "memory"): "mem_clock",
    ("max_clocks", "video"): "video_clock",
    ("power_readings", "power_limit"): "power_limit",
    ("gpu_power_readings", "current_power_limit"): "current_power_limit",
    ("compute_capability", ""): "compute_cap",
    ("retired_pages", "single_bit_ecc"): "multiple_single_bit_retirement",
    ("retired_pages", "double_bit_ecc"): "double_bit_retirement",
    ("retired_pages", "pending_page_blacklist"): "pending_blacklist",
    ("retired_pages", "pending"): "pending_retirement",
    ("remapped_rows", "correctable_error"): "remapped_row_corr",
    ("remapped_rows", "uncorrectable_error"): "remapped_row_unc",
    ("remapped_rows", "pending"): "remapped_row_pending",
    ("remapped_rows", "remapping_failure_occurred"): "remapped_row_failure",
}
#: Sections whose children the XML names by what they are (``<mig_device>``), not by index.
_LISTS = {"mig_devices": "mig_device", "processes": "process_info"}


#: The report's own lines before its first GPU: read wherever they sit (before the banner too,
#: where a paste put them).
_ROOT_KEYS = {"timestamp", "driver_version", "cuda_version", "attached_gpus"}

_INDEX = KeyIndex(
    {
        **dict.fromkeys(
            (
                "Timestamp",
                "Driver Version",
                "CUDA Version",
                "Attached GPUs",
                "Product Brand",
                "Product Architecture",
                "Display Mode",
                "Persistence Mode",
                "Serial Number",
                "GPU UUID",
                "Minor Number",
                "VBIOS Version",
                "MultiGPU Board",
                "Board ID",
                "GPU Part Number",
                "FB Memory Usage",
                "BAR1 Memory Usage",
                "Bus Id",
                "Compute Mode",
                "Accounting Mode",
            ),
            1.0,
        ),
        "Product Name": 2.0,
    }
)


def nvidia_smi_q_score(text: str) -> float:
    """Sure with the banner or a GPU section; else by how many of the report's keys start lines
    (a paste that begins inside a GPU's block), never likely without a product name."""
    if looks_like_nvidia_smi_q(text):
        return 1.0
    found = keys_found(text, _INDEX)
    cap = 0.95 if "Product Name" in found else 0.45
    return min(cap, sum(found.values()) / 7)


def looks_like_nvidia_smi_q(text: str) -> bool:
    """The ``==NVSMI LOG==`` banner, or a GPU section of ``Key : value`` lines."""
    if _BANNER.search(text):
        return True
    lines = [line.strip() for line in text.splitlines()]
    return any(_GPU_HEADER.match(line) for line in lines) and any(
        line.startswith("Product Name") and ":" in line for line in lines
    )


def _name(parent: str, key: str) -> str:
    words = re.sub(r"[^0-9A-Za-z]+", "_", key.strip()).strip("_").lower()
    return _RENAMES.get((parent, words), words or "value")


def _to_xml(text: str) -> ET.Element:
    """The text as the ``<nvidia_smi_log>`` tree ``nvidia-smi -q -x`` would have written."""
    root = ET.Element("nvidia_smi_log")
    # (indent, element) from the root down to the section the next line belongs to.
    stack: list[tuple[int, ET.Element]] = [(-1, root)]
    started = False
    for raw in text.split("\n"):
        if not raw.strip():
            continue
        if _BANNER.match(raw.strip()):
            started = True
            continue
        header = _GPU_HEADER.match(raw.strip())
        if header and len(raw) - len(raw.lstrip()) == 0:
            started = True
            gpu = ET.SubElement(root, "gpu", id=header.group(1))
            stack = [(-1, root), (0, gpu)]
            continue
        line = _LINE.match(raw.expandtabs(4))
        if line is None:
            continue
        indent = len(line.group("indent"))
        if not started:
            tag = _name("nvidia_smi_log", line.group("key"))
            if indent == 0 and tag in _ROOT_KEYS and line.group("value"):
                # The report's own line before its banner (or a paste that starts after it).
                if root.find(tag) is None:
                    ET.SubElement(root, tag).text = line.group("value")
                continue
            if tag == "product_name" and line.group("value") and not root.findall("gpu"):
                # A paste that starts inside the first GPU's block, its header line cut off.
                gpu = ET.SubElement(root, "gpu", id="")
                stack = [(-1, root), (indent - 1, gpu)]
                started = True
            else:
                continue  # a shell prompt or notes before the report
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        tag = _name(parent.tag, line.group("key"))
        if parent.tag in _LISTS and tag.startswith("device"):
            tag = _LISTS[parent.tag]
        if not re.match(r"^[a-z_][a-z0-9_]*$", tag):
            continue
        element = ET.SubElement(parent, tag)
        value = line.group("value")
        if value:
            element.text = value
        else:
            stack.append((indent, element))
    return root


def parse_nvidia_smi_q(text: str) -> Imported:
    """Read ``nvidia-smi -q`` text. Raises :class:`NvidiaSmiXmlError` (the XML importer's) when
    no GPU section or driver line can be found."""
    root = _to_xml(text)
    if not root.findall("gpu") and root.find("driver_version") is None:
        raise NvidiaSmiXmlError("no GPU section and no driver version in the nvidia-smi -q text")
    return imported_from_root(root)


def _near(sample: Sample) -> str | None:
    head = sample.head
    if "Driver Version" in head and "Product Name" in head and "Attached GPUs" not in head:
        return "looks like nvidia-smi -q text but has no 'Attached GPUs' line or GPU section"
    return None


FORMAT = Format(
    name="nvidia-smi -q text",
    source=Source.NVIDIA_SMI,
    sniff=lambda sample: looks_like_nvidia_smi_q(sample.head),
    score=lambda sample: nvidia_smi_q_score(sample.head),
    parse=lambda sample: parse_nvidia_smi_q(sample.text),
    rank=90,
    near=_near,
    example="nvidia-smi -q",
)
