"""Recognise what a file holds and turn it into a profile: the ``hwadvisor import`` back end.

The formats are the registry's (:mod:`hwadvisor.importers.registry`), plus a saved hwadvisor
profile, which is loaded as it is. Several files describing one machine are merged
(:mod:`hwadvisor.importers.merge`). Nothing here touches hardware or imports torch; every error
is an :class:`~hwadvisor.errors.InputError` with a one-line message.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from hwadvisor import __version__
from hwadvisor.catalog.identify import identify_gpus
from hwadvisor.errors import InputError
from hwadvisor.importers.base import MAX_GPUS, Imported, ImportFormatError, Sample, new_gpu
from hwadvisor.importers.collect_env import now_utc
from hwadvisor.importers.merge import Part, merge
from hwadvisor.importers.paste import clean_paste, strip_escapes
from hwadvisor.importers.registry import Format, closest, detect, formats
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.load import looks_like_profile, parse_profile, read_text_file
from hwadvisor.model.profile import (
    NOT_SHOWN,
    Diagnostics,
    Finding,
    HostIdentity,
    ImportConflict,
    ImportedFile,
    ImportInfo,
    ProbeRun,
    ProbeStatus,
    Profile,
    Severity,
    ToolInfo,
)
from hwadvisor.readiness import assess

#: The start of the message for text no format takes (the formats tried and the closest follow).
UNKNOWN_FORMAT = "not a recognised format"

#: Format names, for callers and tests that ask which format a text is in.
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


def import_files(paths: list[Path]) -> Profile:
    """Read every file of ``paths`` (one machine described by several tools) into one profile:
    each fact from the most specific file stating it, disagreements reported
    (:mod:`hwadvisor.importers.merge`). One path is :func:`import_file`."""
    if len(paths) == 1:
        return import_file(paths[0])
    texts = [(read_text_file(path), str(path)) for path in paths]
    return import_texts(texts)


def import_text(text: str, origin: str) -> Profile:
    """Detect the format of ``text`` and build a profile from it, with findings assessed.

    ``origin`` names the input in error messages. Raises :class:`InputError` on empty, binary,
    unrecognised or unreadable input.
    """
    _check(text, origin)
    if _is_profile(text):
        # A saved profile keeps its own envelope, findings and diagnostics (and its exact text).
        return parse_profile(text, origin)
    return import_texts([(text, origin)])


def import_texts(texts: list[tuple[str, str]]) -> Profile:
    """``(text, origin)`` pairs describing one machine, imported and merged into one profile."""
    parts: list[tuple[Part, Imported]] = []
    for text, origin in texts:
        _check(text, origin)
        if _is_profile(text):
            raise InputError(
                f"{origin}: a saved hwadvisor profile cannot be merged with other files; "
                "import the other files on their own"
            )
        kind, read = read_one(text, origin)
        parts.append((Part(origin, kind, read.profile), read))
    return _finish(parts)


def read_one(text: str, origin: str) -> tuple[Format, Imported]:
    """The format of ``text`` and what it says (no envelope, no findings)."""
    sample = Sample(clean_paste(text))  # fences, quote marks, line ends: for every format alike
    kind = detect(sample)
    if kind is None:
        if sample.body.startswith("{"):
            # A JSON object no format takes: the profile loader says why it is not a profile.
            parse_profile(text, origin)
        raise InputError(f"{origin}: {unknown_format_message(sample)}")
    try:
        return kind, kind.parse(sample)
    except ImportFormatError as exc:
        raise InputError(f"{origin}: unreadable {kind.name}: {_one_line(str(exc))}") from exc
    except RecursionError as exc:
        raise InputError(f"{origin}: unreadable {kind.name}: nested too deeply") from exc
    except (OverflowError, ValueError) as exc:
        # A figure no machine has (10**400 bytes, a 5,000-digit number): refused, not a crash.
        raise InputError(
            f"{origin}: unreadable {kind.name}: a number out of any real range "
            f"({_one_line(str(exc))[:80]})"
        ) from exc


def unknown_format_message(sample: Sample) -> str:
    """What to say of text no format takes, in one line: the formats tried, the one it comes
    closest to, and the command whose output to paste instead."""
    names = ", ".join(f.name for f in formats())
    hint = closest(sample) or (
        "it looks like none of them; paste the whole output of `nvidia-smi -q` or "
        "`python -m torch.utils.collect_env` (hwadvisor import --help lists every format)"
    )
    return f"{UNKNOWN_FORMAT} (tried {names}, and an hwadvisor profile); {hint}"


def detect_format(text: str) -> str | None:
    """The name of the format ``text`` is in (:data:`PROFILE` for a saved profile), or None.

    A file that mixes formats (a bug report with both collect_env and nvidia-smi pasted) is read
    as the richer one: the registry's order (:mod:`hwadvisor.importers.registry`).
    """
    if _is_profile(text):
        return PROFILE
    kind = detect(Sample(clean_paste(text)))
    return kind.name if kind else None


def _check(text: str, origin: str) -> None:
    if not text.strip():
        raise InputError(f"{origin}: empty file")
    if _BINARY.search(text) and _BINARY.search(strip_escapes(text)):
        # Terminal escapes (nvidia-smi topo -m underlines its header even into a file) are
        # taken off with the rest of what a paste wraps around the output.
        raise InputError(f"{origin}: not text (control characters; a binary file?)")


_is_profile = looks_like_profile  # the saved-profile test, shared with the command line


def _finish(parts: list[tuple[Part, Imported]]) -> Profile:
    """The envelope an import has: the source's time and hostname where it has them, one
    diagnostics entry per file, the files and their conflicts under ``imported``, assessed
    findings (and ones saying so when an input was cut off or the inputs disagree)."""
    imported_utc = now_utc()
    conflicts: list[ImportConflict] = []
    if len(parts) == 1:
        profile = parts[0][0].profile
    else:
        profile, conflicts = merge([part for part, _ in parts])
    names = " + ".join(dict.fromkeys(part.format.name for part, _ in parts))
    times = sorted(read.when_utc for _, read in parts if read.when_utc)
    hosts = [(read.hostname, part) for part, read in parts if read.hostname]
    conflicts += _envelope_conflicts(times, hosts)
    profile.tool = ToolInfo(version=__version__)
    profile.created_utc = times[-1] if times else imported_utc
    profile.host = HostIdentity(
        hostname=(
            fact(hosts[0][0], hosts[0][1].format.source)
            if hosts
            else unknown(f"imported from {names}")
        ),
        machine_id=unknown(f"imported from {names}"),
    )
    profile.diagnostics = Diagnostics(probes=[_probe_run(part, read) for part, read in parts])
    profile.imported = ImportInfo(
        imported_utc=imported_utc,
        files=[
            ImportedFile(
                file=part.origin,
                format=part.format.name,
                source=part.format.source.value,
                taken_utc=read.when_utc,
                truncated=read.truncated,
            )
            for part, read in parts
        ],
        conflicts=conflicts,
    )
    not_shown = _list_not_shown(profile)
    identify_gpus(profile)
    _mark_unknown(profile, f"not in {names}")
    profile.findings = assess(profile)
    profile.findings += _import_findings(parts, conflicts)
    if not_shown:
        profile.findings.append(_not_shown_finding(profile, not_shown))
    return profile


def _list_not_shown(profile: Profile) -> int:
    """The GPUs a source counts ("Attached GPUs : 8", "N GPUs") but the text does not show,
    listed with every fact unknown (:data:`NOT_SHOWN`); how many were added."""
    stated = profile.nvml.device_count.value
    shown = profile.gpus
    if not isinstance(stated, int) or stated <= len(shown) or len(shown) >= MAX_GPUS:
        return 0
    stated = min(stated, MAX_GPUS)
    first = shown[0] if shown else None
    used = {gpu.index for gpu in shown}
    free = (i for i in range(stated + len(shown)) if i not in used)
    added = [
        new_gpu(
            next(free),
            vendor=first.vendor if first else "nvidia",
            backend=first.backend if first else "cuda",
            source=profile.nvml.device_count.source or Source.NVIDIA_SMI,
            missing=NOT_SHOWN,
        )
        for _ in range(stated - len(shown))
    ]
    profile.gpus = sorted([*shown, *added], key=lambda gpu: gpu.index)
    return len(added)


def _not_shown_finding(profile: Profile, count: int) -> Finding:
    total = len(profile.gpus)
    names = {gpu.name.value for gpu in profile.gpus if gpu.name.reason != NOT_SHOWN}
    model = next(iter(names)) if len(names) == 1 else None
    if model:
        assume = (
            f"the advice assumes they are {model} like the {total - count} shown "
            f"(the shown ones are identical)"
        )
    else:
        assume = "the advice counts only the GPUs shown"
    return Finding(
        id="gpus-not-shown",
        severity=Severity.INFO,
        title=f"{count} of the {total} GPUs the text counts are not in it",
        detail=f"the source states {total} GPUs and shows {total - count}; the others are "
        f"listed with every fact unknown ({NOT_SHOWN}); {assume}",
        fix="paste the whole output to have every GPU's facts",
    )


def _envelope_conflicts(times: list[str], hosts: list[tuple[str, Part]]) -> list[ImportConflict]:
    conflicts = []
    names = {host.lower() for host, _ in hosts}
    if len(names) > 1:
        (first, a), *rest = hosts
        other, b = next((h, p) for h, p in rest if h.lower() != first.lower())
        conflicts.append(
            ImportConflict(
                fact="host.hostname",
                kept=f"{first!r} ({a.origin})",
                dropped=f"{other!r} ({b.origin})",
            )
        )
    if len(times) > 1 and _days_between(times[0], times[-1]) > 1:
        conflicts.append(
            ImportConflict(
                fact="created_utc",
                kept=f"{times[-1]} (the newest source)",
                dropped=f"{times[0]} (taken {_days_between(times[0], times[-1]):.0f} days before)",
            )
        )
    return conflicts


def _days_between(first: str, last: str) -> float:
    def parse(text: str) -> datetime:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")

    return (parse(last) - parse(first)).total_seconds() / 86400


def _probe_run(part: Part, read: Imported) -> ProbeRun:
    message = f"{part.origin}: imported from {part.format.name}; no hardware was probed"
    if read.when_utc:
        message += f"; taken {read.when_utc} by the source's clock"
    if read.truncated:
        message += f"; input cut off ({read.truncated})"
    for note in read.notes:
        message += f"; {note}"
    # A cut paste is read, not failed: see the finding.
    return ProbeRun(name="import", status=ProbeStatus.OK, seconds=0.0, message=message)


def _import_findings(
    parts: list[tuple[Part, Imported]], conflicts: list[ImportConflict]
) -> list[Finding]:
    findings = []
    for part, read in parts:
        if read.truncated:
            where = f"{part.origin} ({part.format.name})" if len(parts) > 1 else part.format.name
            findings.append(
                Finding(
                    id="input-truncated",
                    severity=Severity.WARNING,
                    title="The imported text was cut off",
                    detail=f"{where}: {read.truncated}; what follows the cut is unknown",
                    fix="paste or attach the whole output to have every GPU and fact",
                )
            )
        if read.unmodelled:
            findings.append(
                Finding(
                    id="accelerator-not-modelled",
                    severity=Severity.WARNING,
                    title="This machine has accelerators hwadvisor does not model",
                    detail=(
                        f"{part.origin}: {read.unmodelled}; the profile lists no GPU for them, "
                        "and the advice covers the CPU and GPUs only"
                    ),
                    fix="judge the accelerators with their vendor's tools; the advice here "
                    "describes this machine as if it had none",
                )
            )
    if conflicts:
        shown = "; ".join(f"{c.fact}: kept {c.kept}, not {c.dropped}" for c in conflicts[:3])
        more = (
            f"; and {len(conflicts) - 3} more (see imported.conflicts)"
            if len(conflicts) > 3
            else ""
        )
        different = any(c.fact in ("host.hostname", "created_utc") for c in conflicts)
        findings.append(
            Finding(
                id="import-conflict",
                severity=Severity.WARNING,
                title=(
                    "The imported files may describe different machines or moments"
                    if different
                    else "The imported files disagree"
                ),
                detail=f"{len(conflicts)} fact(s) stated differently: {shown}{more}",
                fix="check that every file comes from the same machine, taken at the same time",
            )
        )
    return findings


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
