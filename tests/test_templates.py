"""An organization's --template-dir: sandboxed (a template cannot run code), read through the one
input reader, and a broken template is one input-error line naming its file and line."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from hwadvisor.cli import main
from hwadvisor.errors import InputError
from hwadvisor.model.load import load_profile
from hwadvisor.render.html import render_html

FIXTURES = Path(__file__).parent / "fixtures"
PROFILE = FIXTURES / "reports" / "single-gpu.json"
SHA = "0" * 64


def _render(folder: Path) -> str:
    return render_html(load_profile(PROFILE), source_sha256=SHA, template_dir=folder)


def test_a_template_cannot_reach_os(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    (tmp_path / "report.html.j2").write_text(
        "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"report\.html\.j2:1: not allowed in a template"):
        _render(tmp_path)
    assert not marker.exists()


def test_a_template_cannot_change_the_profile(tmp_path: Path) -> None:
    (tmp_path / "report.html.j2").write_text("{{ p.gpus.append(1) }}", encoding="utf-8")
    with pytest.raises(InputError, match="not allowed in a template"):
        _render(tmp_path)


def test_a_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "report.html.j2").write_text("<p>ok</p>\n{% if %}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"report\.html\.j2:2: syntax error"):
        _render(tmp_path)


def test_an_undefined_variable_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "report.html.j2").write_text("<p>\n{{ no_such_thing }}</p>", encoding="utf-8")
    with pytest.raises(InputError, match=r"report\.html\.j2:2: 'no_such_thing' is undefined"):
        _render(tmp_path)


def test_a_named_pipe_in_the_folder_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "report.html.j2")
    box: dict[str, BaseException] = {}

    def target() -> None:
        try:
            _render(tmp_path)
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the report waited on a named pipe"
    assert isinstance(box.get("error"), InputError)


def test_the_cli_reports_a_broken_template_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "tpl"
    folder.mkdir()
    (folder / "report.html.j2").write_text("{% for %}", encoding="utf-8")
    code = main(
        ["report", str(PROFILE), "--out", str(tmp_path), "--format", "html", "--template-dir",
         str(folder)]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 5
    assert "report.html.j2:1: syntax error" in err and "internal error" not in err
    assert err.count("\n") == 1
    assert not list(tmp_path.glob("*.html"))


def test_an_extended_base_in_the_folder_is_used(tmp_path: Path) -> None:
    bundled = (Path(__file__).parent.parent / "templates" / "base.html.j2").read_text(
        encoding="utf-8"
    )
    (tmp_path / "base.html.j2").write_text(
        bundled.replace("<body", '<body data-org="acme"'), encoding="utf-8"
    )
    assert 'data-org="acme"' in _render(tmp_path)
