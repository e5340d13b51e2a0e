"""Recognise what a file holds and turn it into a profile: the ``hwadvisor import`` back end.

Four formats: ``python -m torch.utils.collect_env`` output, ``nvidia-smi -q -x`` XML, the plain
``nvidia-smi`` table, and a saved hwadvisor profile. Nothing here touches hardware or imports
torch; every error is an :class:`~hwadvisor.errors.InputError` with a one-line message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from hwadvisor import __version__
from hwadvisor.errors import InputError
from hwadvisor.importers.collect_env import (
    CollectEnvError,
    looks_like_collect_env,
    looks_like_lscpu,
    now_utc,
    parse_collect_env,
    parse_lscpu,
)
from hwadvisor.importers.nvidia_smi_csv import looks_like_query_csv, parse_query_csv
from hwadvisor.importers.nvidia_smi_table import (
    NvidiaSmiTableError,
    looks_like_nvidia_smi_table,
    parse_nvidia_smi_table,
)
from hwadvisor.importers.nvidia_smi_text import looks_like_nvidia_smi_q, parse_nvidia_smi_q
from hwadvisor.importers.nvidia_smi_xml import NvidiaSmiXmlError, parse_nvidia_smi_xml
from hwadvisor.importers.paste import clean_paste
from hwadvisor.model.facts import Fact, Source, unknown
from hwadvisor.model.load import parse_profile, read_text_file
from hwadvisor.model.profile import (
    Diagnostics,
    Finding,
    HostIdentity,
    ProbeRun,
    ProbeStatus,
    Profile,
    Severity,
    ToolInfo,
)
from hwadvisor.readiness import assess

UNKNOWN_FORMAT = (
    "not a recognised format: expected collect_env output, nvidia-smi -q text or -q -x XML, "
    "an nvidia-smi table or --query-gpu CSV, lscpu output, or an hwadvisor profile"
)

COLLECT_ENV = "collect_env output"
SMI_XML = "nvidia-smi -q -x XML"
SMI_TABLE = "nvidia-smi table"
SMI_Q = "nvidia-smi -q text"
SMI_CSV = "nvidia-smi --query-gpu CSV"
LSCPU = "lscpu output"
PROFILE = "hwadvisor profile"

#: Control characters other than tab, CR, LF: text files do not hold them.
_BINARY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def import_file(path: Path) -> Profile:
    """Read ``path`` and import it (see :func:`import_text`)."""
    return import_text(read_text_file(path), str(path))


def import_text(text: str, origin: str) -> Profile:
    """Detect the format of ``text`` and build a profile from it, with findings assessed.

    ``origin`` names the input in error messages. Raises :class:`InputError` on empty, binary,
    unrecognised or unreadable input.
    """
    if not text.strip():
        raise InputError(f"{origin}: empty file")
    if _BINARY.search(text):
        raise InputError(f"{origin}: not text (control characters; a binary file?)")
    if detect_format(text) == PROFILE:
        # A saved profile keeps its own envelope, findings and diagnostics (and its exact text).
        return parse_profile(text, origin)
    text = clean_paste(text)  # fences, quote marks, line ends: for every format alike
    kind = detect_format(text)
    if kind is None:
        raise InputError(f"{origin}: {UNKNOWN_FORMAT}")
    if kind == PROFILE:
        return parse_profile(text, origin)
    try:
        read = _parse(kind, text)
    except (CollectEnvError, NvidiaSmiTableError, NvidiaSmiXmlError) as exc:
        raise InputError(f"{origin}: unreadable {kind}: {_one_line(str(exc))}") from exc
    return _finish(read, kind)


def detect_format(text: str) -> str | None:
    """The format ``text`` is in (one of the module's format names), or None.

    A file that mixes formats (a bug report with both collect_env and nvidia-smi pasted) is read
    as the richer one, collect_env first, then the XML, then the table.
    """
    body = text.lstrip("\ufeff \t\r\n")
    if body.startswith("{"):
        return PROFILE
    if looks_like_collect_env(text):
        return COLLECT_ENV
    if body.startswith("<") and "<nvidia_smi_log" in body:
        return SMI_XML
    if looks_like_nvidia_smi_q(text):
        return SMI_Q
    if looks_like_nvidia_smi_table(text):
        return SMI_TABLE
    if "<nvidia_smi_log" in body:
        return SMI_XML
    if looks_like_query_csv(text):
        return SMI_CSV
    if looks_like_lscpu(text):
        return LSCPU
    return None


@dataclass
class _Read:
    """An imported profile with what the envelope needs from the source."""

    profile: Profile
    when_utc: str | None = None
    """The source's own timestamp, where it has one."""
    truncated: str | None = None
    """Why the input looks cut off, where it does."""


def _parse(kind: str, text: str) -> _Read:
    if kind == COLLECT_ENV:
        return _Read(parse_collect_env(text))
    if kind == LSCPU:
        return _Read(parse_lscpu(text))
    if kind == SMI_Q:
        read = parse_nvidia_smi_q(text)
        profile = Profile(
            tool=ToolInfo(version=__version__),
            created_utc=read.timestamp_utc or now_utc(),
            nvml=read.nvml,
            gpus=read.gpus,
        )
        return _Read(profile, read.timestamp_utc, read.truncated)
    if kind == SMI_TABLE:
        return _Read(parse_nvidia_smi_table(text))
    if kind == SMI_CSV:
        nvml, gpus = parse_query_csv(text)
        return _Read(
            Profile(tool=ToolInfo(version=__version__), created_utc=now_utc(), nvml=nvml, gpus=gpus)
        )
    nvml, gpus = parse_nvidia_smi_xml(_xml_part(text))
    return _Read(
        Profile(tool=ToolInfo(version=__version__), created_utc=now_utc(), nvml=nvml, gpus=gpus)
    )


def _xml_part(text: str) -> str:
    """The XML document in ``text``, without a shell prompt or notes pasted before it."""
    start = text.find("<?xml")
    if start < 0:
        start = text.find("<nvidia_smi_log")
    return text[start:] if start > 0 else text


def _finish(read: _Read, kind: str) -> Profile:
    """The envelope an import has: no hostname, the source's time where it has one, one
    diagnostics entry, assessed findings (and one saying so when the input was cut off)."""
    profile = read.profile
    profile.tool = ToolInfo(version=__version__)
    profile.created_utc = read.when_utc or now_utc()
    profile.host = HostIdentity(
        hostname=unknown(f"imported from {kind}"),
        machine_id=unknown(f"imported from {kind}"),
    )
    message = f"imported from {kind}; no hardware was probed"
    if read.when_utc:
        message += f"; taken {read.when_utc} by the source's clock"
    if read.truncated:
        message += f"; input cut off ({read.truncated})"
    profile.diagnostics = Diagnostics(
        probes=[
            ProbeRun(
                name="import",
                status=ProbeStatus.OK,  # a cut paste is read, not failed: see the finding
                seconds=0.0,
                message=message,
            )
        ]
    )
    fill_from_catalog(profile)
    _mark_unknown(profile, f"not in {kind}")
    profile.findings = assess(profile)
    if read.truncated:
        profile.findings.append(
            Finding(
                id="input-truncated",
                severity=Severity.WARNING,
                title="The imported text was cut off",
                detail=f"{kind}: {read.truncated}; what follows the cut is unknown",
                fix="paste or attach the whole output to have every GPU and fact",
            )
        )
    return profile


def fill_from_catalog(profile: Profile) -> None:
    """What the GPU catalog knows of a card and the imported text did not say (a collect_env
    gives names only): memory and architecture, marked ``source: catalog``."""
    from hwadvisor.catalog.peaks import find_gpu_peak

    for gpu in profile.gpus:
        name = gpu.name.value
        if not name:
            continue
        peak = find_gpu_peak(name)
        if peak is None or peak.origin != "catalog":
            continue
        if gpu.vram_total_bytes.value is None and peak.memory_gb:
            # The catalog's "80 GB" is what the driver reports in MiB / 1024 (A100 80GB: 81920).
            value = int(peak.memory_gb * 1024**3)
            gpu.vram_total_bytes = Fact(value=value, source=Source.CATALOG)
        if gpu.architecture.value is None and peak.architecture:
            gpu.architecture = Fact(value=peak.architecture, source=Source.CATALOG)


def _mark_unknown(model: BaseModel, reason: str) -> None:
    """Say why each fact the format cannot carry is null, in place of the scan's "not probed".

    The source stays empty: readiness rules read a source as "this was asked".
    """
    for name in type(model).model_fields:
        value = getattr(model, name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, Fact):
                if item.value is None and item.source is None and item.reason == "not probed":
                    item.reason = reason
            elif isinstance(item, BaseModel):
                _mark_unknown(item, reason)


def _one_line(text: str) -> str:
    return " ".join(text.split())
