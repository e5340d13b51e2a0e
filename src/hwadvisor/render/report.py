"""Writing a profile's files: JSON, HTML and PDF side by side, redacted where they leave.

Redaction defaults: the JSON and the HTML stay as they are (local inventory), the PDF — the file
that gets attached to purchase requests — is redacted unless asked otherwise (``--no-redact``).
``--redact`` redacts all three.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hwadvisor.errors import OutputError, UsageError
from hwadvisor.model.profile import Profile
from hwadvisor.model.serve import InferenceAdvice
from hwadvisor.render.jsonio import to_json, write_new_file

if TYPE_CHECKING:
    from hwadvisor.render.pdf import PdfWorker

FORMATS = ("json", "html", "pdf")
PAPERS = ("A4", "Letter")


def parse_formats(text: str, allowed: tuple[str, ...] = FORMATS) -> list[str]:
    """``"json,html"`` → ``["json", "html"]``; unknown names are a usage error."""
    chosen = [part.strip().lower() for part in text.split(",") if part.strip()]
    bad = [f for f in chosen if f not in allowed]
    if bad or not chosen:
        raise UsageError(
            f"--format takes a comma-separated list of {', '.join(allowed)}"
            + (f", not {bad[0]!r}" if bad else "")
        )
    return list(dict.fromkeys(chosen))


def parse_paper(text: str) -> str:
    for paper in PAPERS:
        if text.lower() == paper.lower():
            return paper
    raise UsageError(f"--paper is A4 or Letter, not {text!r}")


@dataclass
class Written:
    files: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _free_stem(folder: Path, stem: str, formats: list[str], start: int = 1) -> str:
    """A stem for which none of the files exist yet, so the three always share a name (a
    first guess: :class:`StemFiles` makes the choice stick against another process)."""
    return _candidate(folder, stem, formats, start)[0]


def _candidate(folder: Path, stem: str, formats: list[str], start: int) -> tuple[str, int]:
    for attempt in range(start, 1000):
        candidate = stem if attempt == 1 else f"{stem}-{attempt}"
        if not any((folder / f"{candidate}.{fmt}").exists() for fmt in formats):
            return candidate, attempt
    raise UsageError(f"too many files named {stem}* in {folder}")


class StemFiles:
    """The files of one report, ``folder/<stem>.<format>``, sharing one free stem.

    Free is decided by the files themselves: each is linked into place only if its name is
    not taken (:func:`write_new_file`). When another process takes one first (two scans of a
    host in the same second both choose ``host-20261127T101500Z``), the files this one wrote
    so far are moved with the rest to the next free stem (``-2``, ``-3`` ...): never an error,
    never a file of the other process touched."""

    def __init__(self, folder: Path, stem: str, formats: list[str]) -> None:
        self.folder, self.base, self.formats = folder, stem, formats
        self.stem, self._attempt = _candidate(folder, stem, formats, 1)
        self._written: dict[str, str | bytes] = {}

    @property
    def files(self) -> list[Path]:
        """The files written, where they are now."""
        return [self.folder / f"{self.stem}.{fmt}" for fmt in self._written]

    def write(self, fmt: str, data: str | bytes) -> Path:
        """Write ``data`` as this report's ``fmt`` file; its path."""
        pending = {fmt: data}
        while pending:
            kind, text = next(iter(pending.items()))
            try:
                write_new_file(self.folder / f"{self.stem}.{kind}", text)
            except OutputError as exc:
                if not isinstance(exc.__cause__, FileExistsError):
                    raise
                # Taken by someone else since the stem was chosen: ours move on together.
                for done in self._written:
                    with contextlib.suppress(FileNotFoundError):
                        (self.folder / f"{self.stem}.{done}").unlink()
                pending = {**self._written, **pending}
                self._written = {}
                self.stem, self._attempt = _candidate(
                    self.folder, self.base, self.formats, self._attempt + 1
                )
                continue
            self._written[kind] = text
            del pending[kind]
        return self.folder / f"{self.stem}.{fmt}"


def write_reports(
    profile: Profile,
    *,
    folder: Path,
    stem: str,
    formats: list[str],
    paper: str = "A4",
    template_dir: Path | None = None,
    redact: bool | None = None,
    source_text: str | None = None,
    serving: InferenceAdvice | None = None,
) -> Written:
    """Write the chosen formats as ``folder/stem.<format>``; never overwrite.

    ``source_text`` is the JSON the report is rendered from (a saved file's exact text); by
    default the profile's own JSON. Its SHA-256 goes into the report's appendix.
    """

    done = Written()
    helper: contextlib.AbstractContextManager[PdfWorker | None] = contextlib.nullcontext()
    if "pdf" in formats:
        from hwadvisor.render.pdf import PdfWorker, take_early

        # WeasyPrint loads in a forked helper while the charts and the HTML are drawn here
        # (forked at process start for `hwadvisor report`).
        helper = take_early() or PdfWorker()
    with helper as worker:
        _write_formats(
            done, worker, profile, folder, stem, formats, paper, template_dir, redact, source_text,
            serving,
        )  # fmt: skip
    return done


def _write_formats(
    done: Written,
    worker: PdfWorker | None,
    profile: Profile,
    folder: Path,
    stem: str,
    formats: list[str],
    paper: str,
    template_dir: Path | None,
    redact: bool | None,
    source_text: str | None,
    serving: InferenceAdvice | None = None,
) -> None:
    from hwadvisor.redact import default_salt

    # A redacted file is named by the redaction's token for the host, never by the hostname
    # (a scan's stem starts with it): `redacted-68fdd01c8e-20261127T101500Z.pdf`.
    redacted = [f for f in formats if (redact is not False and f == "pdf") or redact]
    plain = [f for f in formats if f not in redacted]
    files = StemFiles(folder, stem, plain) if plain else None
    hidden = (
        StemFiles(folder, redacted_stem(stem, profile, default_salt()), redacted)
        if redacted
        else None
    )
    by_format = {f: files for f in plain} | {f: hidden for f in redacted}
    _write_all(
        done, by_format, worker, profile, formats, paper, template_dir, redact, source_text,
        serving,
    )  # fmt: skip
    written = [*(files.files if files else []), *(hidden.files if hidden else [])]
    done.files.extend(sorted(written, key=lambda path: FORMATS.index(path.suffix[1:])))


def _write_all(
    done: Written,
    files: dict[str, StemFiles | None],
    worker: PdfWorker | None,
    profile: Profile,
    formats: list[str],
    paper: str,
    template_dir: Path | None,
    redact: bool | None,
    source_text: str | None,
    serving: InferenceAdvice | None = None,
) -> None:
    from hwadvisor.redact import default_salt, redact_profile, salt_warning

    salt = default_salt()
    redact_all = bool(redact)
    redact_pdf = redact is not False
    if (redact_all or (redact_pdf and "pdf" in formats)) and (why := salt_warning()):
        done.warnings.append(why)
    shown = redact_profile(profile, salt) if redact_all else profile
    json_text = to_json(shown) if redact_all or source_text is None else source_text
    sha = hashlib.sha256(json_text.encode("utf-8")).hexdigest()
    # The PDF shows what the HTML shows unless only the PDF is redacted: render once then. Its
    # page is drawn first, so that the helper lays it out while the HTML file is written.
    same = "html" in formats and redact_all == redact_pdf
    pdf_page: str | None = None
    if "pdf" in formats:
        pdf_profile = redact_profile(profile, salt) if redact_pdf and not same else shown
        pdf_page = _html(pdf_profile, paper, template_dir, sha, serving)
        if worker is not None:
            worker.submit(pdf_page)
    if "json" in formats:
        _file(files, "json").write("json", json_text)
    if "html" in formats:
        page = (
            pdf_page
            if same and pdf_page is not None
            else _html(shown, paper, template_dir, sha, serving)
        )
        _file(files, "html").write("html", page)
    if pdf_page is not None:
        from hwadvisor.render.pdf import PdfUnavailable, render_pdf

        try:
            data = worker.result() if worker is not None else render_pdf(pdf_page)
        except PdfUnavailable as exc:
            done.warnings.append(f"no PDF: {exc}")
        else:
            _file(files, "pdf").write("pdf", data)


def _file(files: dict[str, StemFiles | None], fmt: str) -> StemFiles:
    chosen = files.get(fmt)
    if chosen is None:  # every format written has its files
        raise UsageError(f"no file chosen for {fmt}")
    return chosen


def file_stem(profile: Profile) -> str:
    """The name a scan or import gives its files: the host and the profile's UTC time,
    ``build-7-20261121T100203Z``."""
    host = profile.host.hostname.value or "host"
    stamp = profile.created_utc.replace("-", "").replace(":", "")
    return f"{_safe_name(host)[:64]}-{stamp}"


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "host"


def redacted_stem(stem: str, profile: Profile, salt: str) -> str:
    """The name of a redacted output: ``stem`` with the host's name (as a scan's file name
    spells it) and every other identifier the redaction knows replaced by its token, so that
    a file that is safe to send does not carry the hostname in its name."""
    from hwadvisor.redact import redact_label, redact_profile

    host = profile.host.hostname.value
    if not host:
        return _safe_name(redact_label(stem, [profile], salt))
    tok = redact_profile(profile, salt).host.hostname.value or "redacted"
    spelled = _safe_name(host)[:64]
    if stem.lower().startswith(spelled.lower()):
        stem = tok + stem[len(spelled) :]
    named = _safe_name(redact_label(stem, [profile], salt))
    # Whatever spelling is left (a host inside a longer word, a name cut at 64 characters):
    # the token and the time, never the name.
    forms = {host.lower(), spelled.lower(), *(p.lower() for p in host.split(".") if p)}
    if any(len(f) >= 3 and f in named.lower() for f in forms):
        return f"{tok}-{profile.created_utc.replace('-', '').replace(':', '')}"
    return named


def _html(
    shown: Profile,
    paper: str,
    template_dir: Path | None,
    sha: str,
    serving: InferenceAdvice | None = None,
) -> str:
    """The page for ``shown``: a redacted profile when the output is redacted. Redaction works
    on the profile's values, never on the markup (a host called ``td`` or ``style`` must not
    take table cells or CSS with it)."""
    from hwadvisor.render.html import render_html

    return render_html(
        shown, source_sha256=sha, paper=paper, template_dir=template_dir, serving=serving
    )
