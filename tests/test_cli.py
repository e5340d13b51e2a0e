"""The command line, driven in-process: exit codes, stdout/stderr, files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwadvisor import __version__, pipeline
from hwadvisor.cli import main
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.model.facts import Source, fact
from hwadvisor.model.profile import (
    Diagnostics,
    HostIdentity,
    ProbeRun,
    ProbeStatus,
    Profile,
    ToolInfo,
)


def _profile(hostname: str = "box-1", degraded: bool = False) -> Profile:
    runs = [ProbeRun(name="cpu", status=ProbeStatus.OK, seconds=0.01)]
    if degraded:
        runs.append(
            ProbeRun(
                name="nvml",
                status=ProbeStatus.TIMEOUT,
                seconds=15.0,
                message="did not finish within 15 s and was stopped",
            )
        )
    return Profile(
        tool=ToolInfo(version=__version__),
        created_utc="2026-11-21T10:02:03Z",
        host=HostIdentity(hostname=fact(hostname, Source.OS)),
        diagnostics=Diagnostics(probes=runs),
    )


@pytest.fixture
def fake_scan(monkeypatch: pytest.MonkeyPatch) -> list[Profile]:
    """Replace the real scan with one that returns the queued profiles."""
    queue: list[Profile] = []

    def run_scan(options: pipeline.ScanOptions, progress: object = None) -> Profile:
        return queue.pop(0) if queue else _profile()

    monkeypatch.setattr(pipeline, "run_scan", run_scan)
    return queue


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == ExitStatus.OK
    assert capsys.readouterr().out.strip() == f"hwadvisor {__version__}"


def test_help_on_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["--help"], ["scan", "--help"], ["schema", "--help"]):
        assert main(args) == ExitStatus.OK
        assert "Usage" in capsys.readouterr().out


def test_usage_error_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "--no-such-option"]) == ExitStatus.USAGE
    assert main(["scan", "--probe-timeout", "0"]) == ExitStatus.USAGE
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--budget", "nan", "finite number of seconds"),
        ("--budget", "inf", "finite number of seconds"),
        ("--budget", "0.1", "between 0.5 and 3600"),
        ("--probe-timeout", "nan", "finite number of seconds"),
        ("--probe-timeout", "-inf", "finite number of seconds"),
        ("--probe-timeout", "7200", "between 1 and 3600"),
    ],
)
def test_time_options_refuse_nonsense(
    capsys: pytest.CaptureFixture[str], option: str, value: str, said: str
) -> None:
    assert main(["scan", option, value]) == ExitStatus.USAGE
    err = capsys.readouterr().err
    assert said in err and "less than or equal" not in err


def test_scan_json_stdout_is_only_json(
    fake_scan: list[Profile],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "--json", "-"]) == ExitStatus.OK
    out = capsys.readouterr().out
    assert json.loads(out)["host"]["hostname"]["value"] == "box-1"
    assert list(tmp_path.iterdir()) == []


def test_scan_writes_named_file_and_never_overwrites(
    fake_scan: list[Profile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out"
    assert main(["scan", "--out", str(out_dir), "--format", "json"]) == ExitStatus.OK
    assert main(["scan", "--out", str(out_dir), "--format", "json"]) == ExitStatus.OK
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == ["box-1-20261121T100203Z-2.json", "box-1-20261121T100203Z.json"]
    captured = capsys.readouterr()
    assert "Profile written to" in captured.err
    assert "CPU" in captured.out  # the summary


def test_explicit_json_path_that_exists_is_io_error(
    fake_scan: list[Profile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "mine.json"
    target.write_text("keep me")
    assert main(["scan", "--json", str(target)]) == ExitStatus.IO_ERROR
    assert target.read_text() == "keep me"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists" in err


def test_explicit_json_path_is_that_file_only(
    fake_scan: list[Profile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Siblings from an earlier run must not push the JSON to another name a script never reads.
    (tmp_path / "mine.html").write_text("old report")
    (tmp_path / "mine.pdf").write_text("old pdf")
    target = tmp_path / "mine.json"
    assert main(["scan", "--json", str(target), "--format", "json,html,pdf"]) == ExitStatus.OK
    assert json.loads(target.read_text())["host"]["hostname"]["value"] == "box-1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.html", "mine.json", "mine.pdf"]
    assert (tmp_path / "mine.html").read_text() == "old report"
    assert f"Profile written to {target}" in capsys.readouterr().err.replace("\n", "")


def test_import_json_path_is_that_file_only(tmp_path: Path) -> None:
    source = Path(__file__).parent / "fixtures" / "profiles" / "v1-cpu-only.json"
    (tmp_path / "box.html").write_text("x")
    target = tmp_path / "box.json"
    assert main(["import", str(source), "--json", str(target), "-q"]) == ExitStatus.OK
    assert target.exists() and not (tmp_path / "box-2.json").exists()
    assert main(["import", str(source), "--json", str(target), "-q"]) == ExitStatus.IO_ERROR


def test_unwritable_out_is_io_error(
    fake_scan: list[Profile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("")
    assert main(["scan", "--out", str(blocker / "x")]) == ExitStatus.IO_ERROR
    assert "Traceback" not in capsys.readouterr().err


def test_degraded_scan_still_writes_and_exits_3(
    fake_scan: list[Profile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_scan.append(_profile(degraded=True))
    assert main(["scan", "--out", str(tmp_path), "-f", "json"]) == ExitStatus.DEGRADED
    (written,) = tmp_path.iterdir()
    assert json.loads(written.read_text())["diagnostics"]["probes"][1]["status"] == "timeout"
    out = capsys.readouterr().out
    assert "did not complete" in out and "nvml" in out


def test_ctrl_c_exits_130_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_args: object, **_kwargs: object) -> Profile:
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "run_scan", interrupted)
    assert main(["scan", "--out", str(tmp_path)]) == ExitStatus.INTERRUPTED
    assert list(tmp_path.iterdir()) == []
    assert "interrupted" in capsys.readouterr().err


def test_internal_error_is_one_line_unless_debug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_args: object, **_kwargs: object) -> Profile:
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(pipeline, "run_scan", broken)
    assert main(["scan", "--out", str(tmp_path)]) == ExitStatus.ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ZeroDivisionError: oops" in err and "--debug" in err
    assert main(["--debug", "scan", "--out", str(tmp_path)]) == ExitStatus.ERROR
    assert "Traceback" in capsys.readouterr().err


def test_hostile_names_are_shown_literally(
    fake_scan: list[Profile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_scan.append(_profile(hostname="[red]evil[/red]<script>"))
    assert main(["scan", "--out", str(tmp_path), "-f", "json"]) == ExitStatus.OK
    assert "[red]evil[/red]<script>" in capsys.readouterr().out
    (written,) = tmp_path.iterdir()
    assert written.name.startswith("red_evil_red_script-")  # a safe file name


def test_schema_is_json_schema_of_the_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == ExitStatus.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["$schema"].endswith("2020-12/schema")
    assert {"schema_version", "cpu", "gpus", "frameworks", "findings"} <= set(doc["properties"])
    assert "Fact_int_" in doc["$defs"]


@pytest.mark.parametrize(
    "args",
    [
        ["-f", "json"],
        ["-f", "json,html"],
        ["--json", "{tmp}/mine.json"],
        ["--json", "{tmp}/mine.json", "--redact"],
    ],
)
def test_quiet_scan_prints_nothing(
    fake_scan: list[Profile],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    monkeypatch.setenv("HWADVISOR_REDACT_SALT", "a-salt-of-the-site")
    argv = [a.format(tmp=tmp_path) for a in args]
    for quiet in ("--quiet", "-q"):
        assert main(["scan", quiet, "--out", str(tmp_path / "out"), *argv]) == ExitStatus.OK
        assert capsys.readouterr() == ("", "")
        if "--json" in argv:
            assert (tmp_path / "mine.json").is_file()
            (tmp_path / "mine.json").unlink()
    assert (tmp_path / "out").is_dir() or "--json" in argv


def test_quiet_degraded_scan_says_only_why(
    fake_scan: list[Profile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_scan.append(_profile(degraded=True))
    assert main(["scan", "-q", "--out", str(tmp_path), "-f", "json"]) == ExitStatus.DEGRADED
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines() == [
        "Some probes failed or timed out; the profile says which (diagnostics.probes)."
    ]
    assert "written" not in err
    assert len(list(tmp_path.iterdir())) == 1


def test_quiet_errors_are_still_reported(
    fake_scan: list[Profile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "mine.json"
    target.write_text("{}")
    assert main(["scan", "-q", "--json", str(target)]) == ExitStatus.IO_ERROR
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("hwadvisor: error: ") and err.count("\n") == 1


def test_quiet_import_and_report_print_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "box.json"
    source.write_text(_profile().model_dump_json())
    out = tmp_path / "out"
    assert main(["import", "-q", str(source), "--out", str(out)]) == ExitStatus.OK
    assert capsys.readouterr() == ("", "")
    (profile,) = out.iterdir()
    assert main(["report", "--quiet", str(profile), "-f", "html"]) == ExitStatus.OK
    assert capsys.readouterr() == ("", "")
    assert profile.with_suffix(".html").is_file()
    # Without --quiet the same commands say what they wrote.
    assert main(["report", str(profile), "-f", "html", "--out", str(tmp_path / "again")]) == 0
    assert "Report written to" in capsys.readouterr().err
