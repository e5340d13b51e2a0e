"""HTML report → PDF with WeasyPrint, which is imported lazily and never reaches disk or network.

WeasyPrint resolves every ``<img src>``, ``<link href>`` and CSS ``url()`` through a URL fetcher;
the default one (``weasyprint.urls.URLFetcher`` since v68, which replaced ``default_url_fetcher``)
opens ``file:``, ``http:``, ``https:`` and ``ftp:`` URLs. A report carries probed strings (device
names, paths), so a crafted value could otherwise make the renderer read local files or reach
internal hosts. :func:`render_pdf` passes a subclass whose ``fetch`` serves ``data:`` URLs only and
refuses everything else with ``ValueError`` (WeasyPrint then skips that resource with a warning)
before any handler is opened; refused URLs are recorded. No ``base_url`` is given, so relative
URLs cannot resolve to the working folder either.

When WeasyPrint or its system libraries (Pango, HarfBuzz, fontconfig) are missing,
:class:`PdfUnavailable` says how to install them on this OS; the JSON and HTML outputs do not
depend on it.
"""

from __future__ import annotations

import importlib
import logging
import platform
from pathlib import Path
from typing import Any

from hwadvisor.errors import HwAdvisorError

#: Options for ``write_pdf`` (see ``weasyprint.DEFAULT_OPTIONS``): recompress images, embed only
#: the glyphs used (``full_fonts=False``), drop font hinting, keep streams compressed.
PDF_OPTIONS: dict[str, Any] = {
    "optimize_images": True,
    "full_fonts": False,
    "hinting": False,
    "uncompressed_pdf": False,
}

ALLOWED_SCHEMES = frozenset({"data"})

WINDOWS_FIX = (
    "install GTK via MSYS2 as the WeasyPrint docs describe "
    "(https://doc.courtbouillon.org/weasyprint/stable/first_steps.html#windows), "
    "then reopen the terminal"
)


class PdfUnavailable(HwAdvisorError):
    """WeasyPrint or the system libraries it needs cannot be loaded; no PDF was written."""


def _os_release_ids(path: Path = Path("/etc/os-release")) -> set[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    ids: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key in ("ID", "ID_LIKE"):
            ids.update(value.strip().strip("\"'").lower().split())
    return ids


def install_hint(system: str | None = None, os_ids: set[str] | None = None) -> str:
    """The one-line command that installs WeasyPrint's system libraries on this OS."""
    system = system if system is not None else platform.system()
    if system == "Darwin":
        return "brew install pango"
    if system == "Windows":
        return WINDOWS_FIX
    ids = os_ids if os_ids is not None else _os_release_ids()
    if ids & {"debian", "ubuntu"}:
        return "sudo apt-get install libpango-1.0-0 libpangoft2-1.0-0"
    if ids & {"fedora", "rhel", "centos", "rocky", "almalinux"}:
        return "sudo dnf install pango"
    if ids & {"alpine"}:
        return "sudo apk add pango"
    if ids & {"arch"}:
        return "sudo pacman -S pango"
    if ids & {"suse", "opensuse"}:
        return "sudo zypper install pango"
    return (
        "install Pango (>= 1.44) with your package manager "
        "(Debian/Ubuntu: apt-get install libpango-1.0-0 libpangoft2-1.0-0; "
        "Fedora: dnf install pango)"
    )


def _unavailable(exc: BaseException) -> PdfUnavailable:
    if isinstance(exc, ImportError) and (exc.name or "").partition(".")[0] == "weasyprint":
        # Not installed at all: a slim install (`pip install hwadvisor`, `setup.sh --slim`).
        return PdfUnavailable(
            "WeasyPrint is not installed: PDF reports need the report extra, "
            f"pip install 'hwadvisor[report]' (and Pango: {install_hint()}); "
            "the JSON and HTML reports are still written"
        )
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return PdfUnavailable(
        f"PDF report unavailable: WeasyPrint could not be loaded ({detail}); "
        f"fix: {install_hint()} (and `pip install weasyprint` if it is missing); "
        "the JSON and HTML reports are still written"
    )


def _load() -> tuple[Any, Any]:
    """Import WeasyPrint lazily; :class:`PdfUnavailable` when it or its libraries are missing."""
    try:
        weasyprint = importlib.import_module("weasyprint")
        urls = importlib.import_module("weasyprint.urls")
    except (ImportError, OSError) as exc:
        raise _unavailable(exc) from exc
    return weasyprint, urls


def pdf_available() -> tuple[bool, str | None]:
    """Whether a PDF can be rendered here, and if not, the one-line reason with its fix."""
    try:
        _load()
    except PdfUnavailable as exc:
        return False, str(exc)
    return True, None


def _data_only_fetcher(urls: Any, refused: list[str]) -> Any:
    """A ``weasyprint.urls.URLFetcher`` that serves ``data:`` URLs and refuses every other one."""

    class DataOnlyFetcher(urls.URLFetcher):  # type: ignore[misc]
        def fetch(self, url: str, headers: Any = None) -> Any:
            scheme = url.split(":", 1)[0].strip().lower() if ":" in url else ""
            if scheme not in ALLOWED_SCHEMES:
                refused.append(url)
                # WeasyPrint turns this into a warning and leaves the resource out.
                raise ValueError(f"hwadvisor: fetching {scheme or 'relative'} URLs is disabled")
            return super().fetch(url, headers)

    # allowed_protocols is WeasyPrint's own check, kept as a second fence; no redirects.
    return DataOnlyFetcher(
        timeout=1, allowed_protocols=sorted(ALLOWED_SCHEMES), allow_redirects=False
    )


def render_pdf(html: str, refused: list[str] | None = None) -> bytes:
    """Render self-contained report HTML to PDF bytes.

    Only ``data:`` URLs are loaded; any other URL is skipped and appended to ``refused`` when a
    list is given. Raises :class:`PdfUnavailable` when WeasyPrint cannot be loaded.
    """
    weasyprint, urls = _load()
    record: list[str] = refused if refused is not None else []
    fetcher = _data_only_fetcher(urls, record)
    # A refused URL is expected here, not an error worth a console line: WeasyPrint logs each at
    # ERROR level. The refusals are kept in ``refused`` instead.
    logger = logging.getLogger("weasyprint")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    from hwadvisor.signals import deferred

    try:
        # Ctrl-C inside WeasyPrint's C callbacks would be printed and swallowed, and the PDF
        # written anyway: the signal waits for the render, then stops hwadvisor (no PDF).
        with deferred():
            document = weasyprint.HTML(string=html, base_url=None, url_fetcher=fetcher)
            pdf = document.write_pdf(**PDF_OPTIONS)
    finally:
        logger.setLevel(level)
    if not isinstance(pdf, bytes):  # pragma: no cover - write_pdf without target returns bytes
        raise TypeError("WeasyPrint returned no PDF bytes")
    return pdf
