"""``--help`` of every command: prose that wraps to the terminal, examples, exit codes, no type
placeholders; ``-V``; shell completion; and a start that imports nothing heavy."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from hwadvisor import __version__
from hwadvisor.cli import main
from hwadvisor.exitcodes import ExitStatus

COMMANDS = [
    [],
    ["scan"],
    ["advise"],
    ["import"],
    ["report"],
    ["diff"],
    ["workloads"],
    ["schema"],
    ["fleet"],
    ["fleet", "ingest"],
    ["fleet", "emit"],
    ["fleet", "summary"],
    ["fleet", "export"],
    ["fleet", "advise"],
    ["fleet", "diff"],
    ["fleet", "report"],
    ["export"],
    ["export", "prometheus"],
]


def _help(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main([*args, "--help"]) == ExitStatus.OK
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


@pytest.fixture(autouse=True)
def _eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a) or "hwadvisor")
def test_help_reads_as_prose(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(args, capsys)
    assert text.startswith("Usage: hwadvisor")
    # No type placeholders: <bool>, <str>, <int>, <path>, <float>, <list[path]>, <dir> ...
    assert not re.search(r"<[a-z][a-z \[\]|]*>", text), text
    assert "{" not in text.splitlines()[0]  # typer's {FILE...} for a required argument
    # Wrapped to the terminal: no line wider than 80 columns.
    assert max(len(line) for line in text.splitlines()) <= 80, text
    # An example block that runs hwadvisor, and the exit codes with their meaning.
    examples = text.split("Examples:", 1)[1].split("Exit codes", 1)[0]
    assert "hwadvisor " in examples
    codes = text.split("Exit codes", 1)[1]
    assert re.search(r"^\s+0\s+success$", codes, re.MULTILINE)
    assert re.search(r"^\s+1\s+internal error", codes, re.MULTILINE)
    assert "README" in text


def test_manual_line_breaks_of_docstrings_do_not_cut_sentences(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _help([], capsys)
    commands = text.split("Commands:", 1)[1].split("Examples:", 1)[0]
    # Each command's one-line summary is a whole sentence (never cut with "..."), and where it
    # wraps, the continuation is indented under the text, not left at column 0.
    assert "..." not in commands
    for line in commands.strip("\n").splitlines():
        if not line:
            continue
        assert line.startswith("  "), line
    scan = _help(["scan"], capsys)
    # The docstring's paragraphs are flowed: a sentence is not broken at the source's newline.
    assert "the\nmachine" not in scan and "does,\n" not in scan


def test_scan_help_names_its_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(["scan"], capsys)
    codes = text.split("Exit codes", 1)[1]
    for code in (0, 1, 2, 3, 4, 5, 130):
        assert re.search(rf"^\s+{code}\s+\S", codes, re.MULTILINE), code
    # Options that take a value show what they take; flags show nothing after their name.
    assert re.search(r"-o, --out DIR\s", text)
    assert re.search(r"--probe-timeout SECONDS\s", text)
    assert re.search(r"-q, --quiet\s+Print nothing", text)
    assert re.search(r"--no-bench\s+Detect only", text)


def test_help_through_a_pipe_is_plain_text() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "hwadvisor", "scan", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout and "╭" not in proc.stdout  # no colours, no boxes
    assert "Examples:" in proc.stdout and max(map(len, proc.stdout.splitlines())) <= 80


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_short_and_long(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([flag]) == ExitStatus.OK
    assert capsys.readouterr().out == f"hwadvisor {__version__}\n"


def test_completion_is_offered(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer.completion

    text = _help([], capsys)
    assert "--install-completion" in text and "--show-completion" in text
    # typer finds the shell among the parent processes: none when the suite runs detached.
    monkeypatch.setattr(typer.completion, "_get_shell_name", lambda: "bash")
    assert main(["--show-completion", "bash"]) == ExitStatus.OK
    assert "_HWADVISOR_COMPLETE" in capsys.readouterr().out


def test_completion_completes_commands_and_options() -> None:
    env = {
        **os.environ,
        "_HWADVISOR_COMPLETE": "complete_bash",
        "COMP_WORDS": "hwadvisor scan --no",
        "COMP_CWORD": "2",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "hwadvisor"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert set(proc.stdout.split()) == {"--no-bench", "--no-redact"}


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from hwadvisor.cli import main\n"
        "for args in (['--help'], ['scan', '--help'], ['fleet', '--help'], ['-V']):\n"
        "    main(args)\n"
        "heavy = {'torch', 'duckdb', 'matplotlib', 'weasyprint', 'pynvml', 'cpuinfo',\n"
        "         'hwadvisor.render.pdf'}  # the PDF helper's module: only for a PDF\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def _all_names() -> list[str]:
    from typer.main import get_command_name

    from hwadvisor import cli

    commands = [
        info.name or get_command_name(info.callback.__name__)
        for info in cli.app.registered_commands
        if info.callback is not None
    ]
    return commands + [info.name for info in cli.app.registered_groups if info.name]


def test_every_command_is_listed_here() -> None:
    assert sorted(_all_names()) == sorted(
        {args[0] for args in COMMANDS if args} | {"gpus", "cpus"} | {"calibrate-serve"}
    )


@pytest.mark.parametrize("name", _all_names())
@pytest.mark.parametrize("before", [[], ["--debug"]])
def test_a_command_named_first_is_built_alone_and_reads_the_same(
    name: str,
    before: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the command asked for is built (typer builds every command's options before it
    parses one); its help, usage and errors are those of the whole app."""
    from hwadvisor import cli

    one = cli._app_for([*before, name, "--help"])
    assert one is not cli.app
    built = [*one.registered_commands, *one.registered_groups]
    assert len(built) == 1
    assert len(cli.app.registered_commands) + len(cli.app.registered_groups) > 1  # untouched
    alone = _help([*before, name], capsys)
    code_alone = main([*before, name, "--no-such-option"])
    error_alone = capsys.readouterr().err
    monkeypatch.setattr(cli, "_app_for", lambda args: cli.app)
    assert _help([*before, name], capsys) == alone
    assert main([*before, name, "--no-such-option"]) == code_alone == ExitStatus.USAGE
    assert capsys.readouterr().err == error_alone


@pytest.mark.parametrize(
    "args", [[], ["--help"], ["-V"], ["--debug"], ["advse"], ["--debug", "--help", "advise"]]
)
def test_anything_else_gets_the_whole_app(args: list[str]) -> None:
    from hwadvisor import cli

    assert cli._app_for(args) is cli.app


def test_shell_completion_gets_the_whole_app(monkeypatch: pytest.MonkeyPatch) -> None:
    from hwadvisor import cli

    monkeypatch.setenv("_HWADVISOR_COMPLETE", "bash_complete")
    assert cli._app_for(["advise"]) is cli.app
