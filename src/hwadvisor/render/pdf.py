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

import contextlib
import importlib
import io
import logging
import os
import pickle
import platform
import signal
import sys
import threading
from collections.abc import Iterator
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


@contextlib.contextmanager
def _ldconfig_only() -> Iterator[bool]:
    """While WeasyPrint loads, ``ctypes.util.find_library`` asks ldconfig's cache alone.

    WeasyPrint tries up to six names per library (one per platform) and each name that is not
    found makes ctypes run the C compiler and the linker to look for it: 0.3 s of a 0.9 s import
    on a Linux machine with gcc. ldconfig's cache is where the distribution's Pango is; a library
    only a compiler would find is still found, as :func:`_load` tries again without this. Yields
    whether it is in effect (Linux with glibc's ldconfig)."""
    import ctypes.util

    original = ctypes.util.find_library
    cached = getattr(ctypes.util, "_findSoname_ldconfig", None)
    if cached is None or not sys.platform.startswith("linux"):
        yield False
        return
    ctypes.util.find_library = cached
    try:
        yield True
    finally:
        ctypes.util.find_library = original


def _import_weasyprint() -> Any:
    if "weasyprint" in sys.modules:
        return importlib.import_module("weasyprint")
    with _ldconfig_only() as in_effect:
        if not in_effect:
            return importlib.import_module("weasyprint")
        try:
            # WeasyPrint prints a help text before raising when a library is missing: the second
            # try below prints it, if it fails too.
            with contextlib.redirect_stdout(io.StringIO()):
                return importlib.import_module("weasyprint")
        except OSError:
            for name in [n for n in sys.modules if n.partition(".")[0] == "weasyprint"]:
                del sys.modules[name]
    return importlib.import_module("weasyprint")


def _load() -> tuple[Any, Any]:
    """Import WeasyPrint lazily; :class:`PdfUnavailable` when it or its libraries are missing."""
    try:
        weasyprint = _import_weasyprint()
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


# --------------------------------------------------------------------------------------------
# Rendering beside the charts

#: Set (to anything) to render the PDF in this process, never in a forked helper.
IN_PROCESS_ENV = "HWADVISOR_PDF_IN_PROCESS"


def _usable_cpus() -> int:
    from hwadvisor.cpus import usable_cpus

    return usable_cpus()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


class PdfWorker:
    """One PDF, rendered in a forked child that loads WeasyPrint and lays out a first page
    while this process draws the charts and the HTML: on two cores the PDF is ready about half a
    second sooner. Where that cannot help or cannot be done safely (one usable CPU, not Linux,
    other threads running, ``HWADVISOR_PDF_IN_PROCESS`` set) and whenever the child fails, the
    PDF is rendered here, as before. Use as a context manager: leaving it stops the child."""

    def __init__(self, *, isolate: bool = False) -> None:
        #: Fork even with one usable CPU: the point is then not speed but that a long layout
        #: (a fleet's thousands of rows) never holds up a stop signal, as it does in-process.
        self.isolate = isolate
        self._pid: int | None = None
        self._send = -1
        self._receive = -1
        self._html = ""
        self._started = False

    def __enter__(self) -> PdfWorker:
        if not self._started:
            self.start()
        return self

    def start(self) -> None:
        """Fork the helper, where that helps and is safe; else the PDF is rendered here."""
        self._started = True
        forkable = (
            sys.platform.startswith("linux")
            and hasattr(os, "fork")
            and (self.isolate or _usable_cpus() >= 2)
            and threading.active_count() == 1  # a fork copies no other thread, nor its locks
            and not os.environ.get(IN_PROCESS_ENV)
        )
        if forkable:
            try:
                self._fork()
            except OSError:
                self._pid = None

    @property
    def forked(self) -> bool:
        return self._pid is not None

    def __exit__(self, *_exc: object) -> None:
        self._stop()

    def _fork(self) -> None:
        html_read, html_write = os.pipe()
        pdf_read, pdf_write = os.pipe()
        # Room for a whole report (SVG charts included) in the pipe: submit() returns at once,
        # even while the helper is still loading WeasyPrint.
        with contextlib.suppress(AttributeError, ImportError, OSError):
            import fcntl  # POSIX only: the helper is forked on Linux alone

            fcntl.fcntl(html_write, fcntl.F_SETPIPE_SZ, 1 << 20)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; its result is checked by the parent's tests
            status = 0
            try:
                os.close(html_write)
                os.close(pdf_read)
                _child(html_read, pdf_write)
            except BaseException:  # noqa: BLE001 - the parent renders in-process instead
                status = 1
            finally:
                os._exit(status)
        os.close(html_read)
        os.close(pdf_write)
        self._pid, self._send, self._receive = pid, html_write, pdf_read

    def submit(self, html: str) -> None:
        """Hand ``html`` to the helper, which lays it out while this process goes on; the PDF
        comes from :meth:`result`."""
        self._html = html
        if self._pid is None:
            return
        try:
            _write_all(self._send, html.encode("utf-8", "surrogatepass"))
            os.close(self._send)
        except OSError:
            self._stop()  # the helper is gone: result() renders here
        self._send = -1

    def result(self) -> bytes:
        """The PDF of the submitted HTML (see :func:`render_pdf`)."""
        html = self._html
        if self._pid is None:
            return render_pdf(html)
        payload = b""
        try:
            payload = _read_all(self._receive)
        except OSError:
            payload = b""
        finally:
            self._stop()
        try:
            status, value = pickle.loads(payload)  # our own child's answer
        except Exception:  # noqa: BLE001 - the child died: render here
            return render_pdf(html)
        if status == "ok" and isinstance(value, bytes):
            return value
        if status == "unavailable":
            raise PdfUnavailable(str(value))
        return render_pdf(html)  # it failed there: here it fails (or not) as it always did

    def render(self, html: str) -> bytes:
        """The PDF of ``html``: :meth:`submit` and :meth:`result` at once."""
        self.submit(html)
        return self.result()

    def _stop(self) -> None:
        for fd in (self._send, self._receive):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._send = self._receive = -1
        if self._pid is not None:
            pid, self._pid = self._pid, None
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done == 0:  # still loading, or rendering a page nobody will read
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
            except (ChildProcessError, ProcessLookupError, OSError):
                pass


# --------------------------------------------------------------------------------------------
# Starting the helper with the process

_EARLY: PdfWorker | None = None


def _asks_for_pdf(args: list[str]) -> bool:
    """Whether the command line is ``report`` with a PDF among its formats (the default), read
    before the command-line parser is even imported. A wrong guess costs little: a helper that is
    not needed is stopped, and one that was not started is started later."""
    words = [a for a in args if not a.startswith("-")]
    if not words or words[0] != "report" or {"-h", "--help"} & set(args):
        return False
    formats = None
    for i, arg in enumerate(args):
        if arg in ("-f", "--format") and i + 1 < len(args):
            formats = args[i + 1]
        elif arg.startswith("--format="):
            formats = arg.split("=", 1)[1]
        elif arg.startswith("-f") and len(arg) > 2 and not arg.startswith("--"):
            formats = arg[2:]
    return formats is None or "pdf" in formats.lower()


def start_early(args: list[str]) -> None:
    """At process start, for ``hwadvisor report``: fork the PDF helper now, so that WeasyPrint
    loads while this process imports its own modules, reads the profile and draws the page."""
    global _EARLY
    if _EARLY is None and _asks_for_pdf(args):
        worker = PdfWorker()
        worker.start()
        _EARLY = worker if worker.forked else None


def take_early() -> PdfWorker | None:
    """The helper :func:`start_early` forked, for the caller to use (and stop); else None."""
    global _EARLY
    worker, _EARLY = _EARLY, None
    return worker


def stop_early() -> None:
    """Stop a helper nobody took (the command failed before its PDF)."""
    worker = take_early()
    if worker is not None:
        worker.__exit__(None, None, None)


def _warm_up_page() -> str:
    """A small page in the report's style (its CSS, headings, bold, monospace, a table and a
    chart's SVG text): laid out and written while this process waits for the report, it loads
    the fonts and code paths the report's first layout would otherwise load (0.1–0.25 s)."""
    import base64
    from importlib.resources import files

    try:
        css = files("hwadvisor.templates").joinpath("report.css").read_text(encoding="utf-8")
    except (OSError, ImportError):
        css = ""
    chart = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="60pt" height="14pt" viewBox="0 0 60 14">'
        '<text x="0" y="11" style="font-size: 10px">GPU 24 h</text></svg>'
    )
    uri = "data:image/svg+xml;base64," + base64.b64encode(chart.encode("utf-8")).decode("ascii")
    return (
        f"<html><head><style>{css}</style></head><body><h1>hwadvisor</h1><h2>Charts</h2>"
        "<h3>Time</h3><p>Text <strong>bold</strong> <code>mono</code></p>"
        '<table class="kv"><thead><tr><th>fact</th><th class="num">value</th></tr></thead>'
        '<tbody><tr><td>GPU</td><td class="num">24 GiB</td></tr></tbody></table>'
        f'<figure><img src="{uri}" alt="chart"></figure></body></html>'
    )


def _child(html_fd: int, pdf_fd: int) -> None:  # pragma: no cover - runs in the forked child
    # Ctrl-C in a terminal reaches the whole process group: the parent acts on it and stops
    # this child; the child itself must not print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    unavailable: str | None = None
    try:
        _load()
        render_pdf(_warm_up_page())
    except PdfUnavailable as exc:
        unavailable = str(exc)
    except Exception:  # noqa: BLE001 - render_pdf below meets it again and says what it is
        pass
    html = _read_all(html_fd).decode("utf-8", "surrogatepass")
    if not html:
        return  # the parent went on without a PDF
    result: tuple[str, Any]
    if unavailable is not None:
        result = ("unavailable", unavailable)
    else:
        try:
            result = ("ok", render_pdf(html))
        except PdfUnavailable as exc:
            result = ("unavailable", str(exc))
        except Exception as exc:  # noqa: BLE001 - the parent renders in-process and raises
            result = ("error", f"{type(exc).__name__}: {exc}")
    _write_all(pdf_fd, pickle.dumps(result))
