"""The entry point before the command line is parsed: the PDF helper forked for `report` only,
and Ctrl-C while the modules load is one line and exit 130, with no helper left behind."""

from __future__ import annotations

import sys

import pytest

from hwadvisor import launch
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.render import pdf as pdfmod


def test_interrupted_is_the_documented_status() -> None:
    assert launch._INTERRUPTED == ExitStatus.INTERRUPTED


def test_ctrl_c_while_loading_is_one_line_and_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stopped: list[bool] = []

    def interrupted(_args: list[str]) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sys, "argv", ["hwadvisor", "report", "p.json"])
    monkeypatch.setattr(pdfmod, "start_early", interrupted)
    monkeypatch.setattr(pdfmod, "stop_early", lambda: stopped.append(True))
    with pytest.raises(SystemExit) as done:
        launch.run()
    assert done.value.code == 130
    assert capsys.readouterr().err == "hwadvisor: error: interrupted\n"
    assert stopped == [True]  # a helper forked before the interrupt is stopped


def test_other_commands_start_no_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[list[str]] = []
    ran: list[bool] = []
    monkeypatch.setattr(pdfmod, "start_early", started.append)
    import hwadvisor.cli

    monkeypatch.setattr(hwadvisor.cli, "run", lambda: ran.append(True))
    monkeypatch.setattr(sys, "argv", ["hwadvisor", "scan", "--no-bench"])
    launch.run()
    monkeypatch.setattr(sys, "argv", ["hwadvisor", "report", "p.json"])
    launch.run()
    assert started == [["report", "p.json"]] and ran == [True, True]
