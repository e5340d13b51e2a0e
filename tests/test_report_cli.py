"""`report`, `diff` and the scan's report files, driven through the CLI."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from pypdf import PdfReader

from hwadvisor.cli import main
from hwadvisor.exitcodes import ExitStatus

REPORTS = Path(__file__).parent / "fixtures" / "reports"


def _pdf_text(path: Path) -> str:
    return "\n".join(
        page.extract_text() or "" for page in PdfReader(io.BytesIO(path.read_bytes())).pages
    )


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    target = tmp_path / "box.json"
    shutil.copy(REPORTS / "cpu-only.json", target)
    return target


def test_report_writes_html_and_a_redacted_pdf(
    saved: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWADVISOR_REDACT_SALT", "test-salt")
    assert main(["report", str(saved)]) == ExitStatus.OK
    html, pdf = saved.with_suffix(".html"), saved.with_suffix(".pdf")
    assert "build-7" in html.read_text()  # local HTML keeps the hostname
    text = _pdf_text(pdf)
    assert "build-7" not in text and "redacted-" in text  # the PDF leaves the building redacted
    assert "scenario 2 of 4" in text and "Is this machine enough?" in text
    assert pdf.stat().st_size < 1024 * 1024
    # Never overwritten: a second run gets new names.
    assert main(["report", str(saved)]) == ExitStatus.OK
    assert (saved.parent / "box-2.html").exists() and (saved.parent / "box-2.pdf").exists()
    capsys.readouterr()


def test_report_redact_everything_and_no_redact(saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert main(["report", str(saved), "--redact", "--out", str(out)]) == ExitStatus.OK
    assert "build-7" not in (out / "box.html").read_text()
    assert (
        main(["report", str(saved), "--no-redact", "-f", "pdf", "--out", str(tmp_path / "n")])
        == ExitStatus.OK
    )
    assert "build-7" in _pdf_text(tmp_path / "n" / "box.pdf")


def test_report_is_deterministic(saved: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert main(["report", str(saved), "-f", "html", "--out", str(tmp_path / name)]) == 0
    assert (tmp_path / "a" / "box.html").read_bytes() == (tmp_path / "b" / "box.html").read_bytes()


def test_report_bad_input(tmp_path: Path, saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(saved), "--format", "xml"]) == ExitStatus.USAGE
    assert main(["report", str(saved), "--paper", "A3"]) == ExitStatus.USAGE
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main(["report", str(broken)]) == ExitStatus.INPUT_ERROR
    assert main(["report", str(tmp_path / "missing.json")]) == ExitStatus.INPUT_ERROR
    assert "Traceback" not in capsys.readouterr().err


def test_missing_pdf_library_keeps_json_and_html(
    saved: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "weasyprint", None)
    out = tmp_path / "o"
    assert main(["report", str(saved), "-f", "html,pdf", "--out", str(out)]) == ExitStatus.DEGRADED
    assert sorted(p.name for p in out.iterdir()) == ["box.html"]
    assert "no PDF" in capsys.readouterr().err


def test_diff_terminal_json_html_and_pdf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = REPORTS / "single-gpu.json", REPORTS / "eight-gpu.json"
    assert main(["diff", str(a), str(b), "--json", "-"]) == ExitStatus.OK
    data = json.loads(capsys.readouterr().out)
    added = "GPUs 1–7 added: 7 × NVIDIA A100-SXM4-40GB"
    assert added in data["summary"]
    html, pdf = tmp_path / "d.html", tmp_path / "d.pdf"
    assert main(["diff", str(a), str(b), "--html", str(html), "--pdf", str(pdf)]) == 0
    assert "Profile diff" in html.read_text()
    assert "GPUs 1–7 added" in _pdf_text(pdf)
    assert "Profile diff ·" in _pdf_text(pdf) and "Hardware report" not in _pdf_text(pdf)
    assert "Changed facts" in capsys.readouterr().out


def test_reports_of_one_second_take_the_next_name_never_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four scans of one host in the same second all find ``node-<second>`` free and all try
    to write it at once (held at a barrier just before the first file): one keeps the name,
    the others write theirs, together, as -2, -3 and -4; none fails."""
    import threading

    from hwadvisor.model.load import load_profile
    from hwadvisor.render import report as reports

    profile = load_profile(REPORTS / "cpu-only.json")
    real = reports.write_new_file
    gate = threading.Barrier(4)
    first = threading.local()

    def racing(path: Path, text: str | bytes) -> Path:
        if not getattr(first, "passed", False):
            first.passed = True
            gate.wait(timeout=60)
        return real(path, text)

    monkeypatch.setattr(reports, "write_new_file", racing)
    written: list[list[Path]] = []
    failed: list[BaseException] = []

    def scan() -> None:
        try:
            done = reports.write_reports(
                profile,
                folder=tmp_path,
                stem="node-20261127T101500Z",
                formats=["json", "html"],
                redact=False,
            )
            written.append(done.files)
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=scan) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failed == []
    stems = sorted({p.stem for files in written for p in files})
    assert stems == [
        "node-20261127T101500Z",
        "node-20261127T101500Z-2",
        "node-20261127T101500Z-3",
        "node-20261127T101500Z-4",
    ]
    for files in written:  # each scan's two files share a stem, and are there
        assert {p.suffix for p in files} == {".json", ".html"}
        assert len({p.stem for p in files}) == 1 and all(p.is_file() for p in files)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{s}{ext}" for s in stems for ext in (".html", ".json")
    )
