"""The README and the docs pages against the code: a newcomer can run every example as written,
the test command CI greps for is there, links resolve, the exit codes and the workload presets
table match the code, and docs/cli.md is the commands' own ``--help``."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.exitcodes import ExitStatus

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FIXTURES = Path(__file__).parent / "fixtures"
# docs/import.md is written with the importers' own work; the README links to it already.
ELSEWHERE = {"docs/import.md"}


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _blocks(text: str) -> list[tuple[str, str]]:
    """The fenced code blocks marked bash or console: (language, body)."""
    return re.findall(r"^```(bash|console)\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def _hwadvisor_commands(text: str) -> list[list[str]]:
    """Every hwadvisor command line of the README's blocks, as argv after the program name:
    every line of a bash block, the ``$ `` lines of a console block (the rest is output);
    shell lines split at ``&&``, ``;`` and ``|``, comments and redirections dropped."""
    commands = []
    for language, block in _blocks(text):
        for line in block.splitlines():
            if language == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            for part in re.split(r"&&|;|\|", line):
                words = shlex.split(part, comments=True)
                if ">" in words:
                    words = words[: words.index(">")]
                if words and words[0] in ("hwadvisor", ".venv/bin/hwadvisor"):
                    commands.append(words[1:])
    return commands


def _inline_commands(text: str) -> list[list[str]]:
    """``hwadvisor ...`` in inline code outside the blocks, placeholders (COMMAND) left out."""
    outside = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    found = []
    for span in re.findall(r"`(hwadvisor [^`]+)`", outside):
        words = shlex.split(span)[1:]
        if not any(w.isupper() and len(w) > 1 for w in words):
            found.append(words)
    return found


def _root_command() -> Any:
    import typer.main

    from hwadvisor.cli import app

    return typer.main.get_command(app)


def _resolve(argv: list[str]) -> tuple[Any, list[str], list[str]]:
    """The click command an argv names, its path, and the arguments left for it."""
    command, path, rest = _root_command(), [], list(argv)
    while rest and hasattr(command, "list_commands"):
        if rest[0].startswith("-"):
            rest.pop(0)  # a global option (--debug)
            continue
        sub = command.get_command(command.context_class(command), rest[0])
        assert sub is not None, f"no command {' '.join([*path, rest[0]])!r}"
        command, path, rest = sub, [*path, rest.pop(0)], rest
    return command, path, rest


def _options(command: Any) -> set[str]:
    names: set[str] = set()
    for param in command.params:
        names.update(getattr(param, "opts", []))
        names.update(getattr(param, "secondary_opts", []))
    return names


def test_the_two_commands_are_there_as_ci_runs_them() -> None:
    text = _readme()
    assert "bash setup.sh && .venv/bin/hwadvisor scan" in text
    assert "bash setup.sh --dev && .venv/bin/python -m pytest" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash setup.sh --dev && .venv/bin/python -m pytest" in ci


def test_the_readme_is_short_and_puts_hwadvisor_on_path_before_the_bare_name() -> None:
    text = _readme()
    assert len(text.splitlines()) < 250
    lines = text.splitlines()
    activate = next(i for i, line in enumerate(lines) if line == "source .venv/bin/activate")
    first_bare = next(
        i for i, words in enumerate(lines) if words.startswith("hwadvisor ") and i > 0
    )
    assert activate < first_bare
    assert ".venv/bin/hwadvisor" in "\n".join(lines[activate : activate + 4])


def test_every_link_of_the_readme_and_the_docs_resolves() -> None:
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            resolved = (page.parent / target).resolve()
            if resolved.relative_to(ROOT).as_posix() in ELSEWHERE:
                continue
            assert resolved.exists(), f"{page.relative_to(ROOT)} links to missing {target}"


def test_nothing_in_the_docs_points_at_unseen_material_or_this_machine() -> None:
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        assert "source material" not in text, page.name
        assert not re.search(r"(?<![\w.])/(?:work|root|home/\w+)/", text), page.name


def test_every_exit_code_is_in_the_readme() -> None:
    table = _readme().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for status in ExitStatus:
        assert re.search(rf"^\| {int(status)} \|", table, re.MULTILINE), status
    for code in (143, 129):  # SIGTERM, SIGHUP
        assert str(code) in table


def test_every_example_names_a_command_and_options_that_exist() -> None:
    examples = _hwadvisor_commands(_readme()) + _inline_commands(_readme())
    assert len(examples) >= 8
    for argv in examples:
        command, path, rest = _resolve(argv)
        known = _options(command)
        for word in rest:
            if word.startswith("-") and word != "-":
                option = word.split("=", 1)[0]
                assert option in known, f"hwadvisor {' '.join(path)}: no option {option}"


def _fresh_checkout(tmp_path: Path) -> Path:
    """What a newcomer's folder holds by the time they reach the examples: a scan in reports/
    (a recorded profile stands for it) and lscpu output."""
    work = tmp_path / "clone"
    (work / "reports").mkdir(parents=True)
    scanned = work / "reports" / "vm-20261127T111547Z.json"
    shutil.copy(FIXTURES / "reports" / "cpu-only.json", scanned)
    shutil.copy(FIXTURES / "import" / "lscpu-neoverse-n2-runner.txt", work / "lscpu.txt")
    return work


def test_every_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each block's hwadvisor commands, in the README's order, in one folder. `scan` measures
    hardware, so a recorded profile stands for what it writes (its options are parsed)."""
    from hwadvisor.cli import main

    monkeypatch.chdir(_fresh_checkout(tmp_path))
    monkeypatch.setenv("HWADVISOR_REDACT_SALT", "readme")
    monkeypatch.setenv("COLUMNS", "80")
    ran = []
    stand_ins = iter(["cpu-only.json", "single-gpu.json", "eight-gpu.json"])
    for argv in _hwadvisor_commands(_readme()):
        command, path, rest = _resolve(argv)
        if path == ["scan"]:
            command.make_context("scan", list(rest))  # options and values parse
            json_out = rest[rest.index("--json") + 1] if "--json" in rest else None
            if json_out and json_out != "-":
                shutil.copy(FIXTURES / "reports" / next(stand_ins), json_out)
            continue
        code = main(argv)
        out = capsys.readouterr()
        assert code in (ExitStatus.OK, ExitStatus.DEGRADED), (argv, code, out.err)
        ran.append(path[0])
    assert {"advise", "report", "import", "fleet", "diff"} <= set(ran)


# --------------------------------------------------------------------------------------------
# docs/advice.md's presets table against workloads.toml and the memory model


def _preset_rows() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "advice.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\| `([a-z0-9-]+)` \|", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in line.strip("|").split("|")]
    return rows


def test_the_presets_table_matches_workloads_toml() -> None:
    from hwadvisor.catalog.toml import packaged_text, tomllib
    from hwadvisor.memory import memory_per_gpu, spec_from_workload
    from hwadvisor.workloads import load_workloads

    data = tomllib.loads(packaged_text("workloads.toml"))
    presets = {row["name"]: row for row in data["workload"]}
    rows = _preset_rows()
    assert list(rows) == list(presets), "the table lists every preset, in the file's order"
    by_name = {w.name: w for w in load_workloads()}
    for name, cells in rows.items():
        _, _what, epochs, batch, precision, _flops, memory = cells
        row = presets[name]
        assert epochs == f"{row['epochs']:g}", name
        assert precision == row["precision"], name
        if row["kind"] == "classical":
            assert batch == "—" and memory.startswith("—"), name
            continue
        expected = str(row["batch_size"])
        if "micro_batch" in row:
            expected += f" (micro-batch {row['micro_batch']})"
        assert batch == expected, name
        gib = memory_per_gpu(spec_from_workload(by_name[name])).total / 2**30
        assert memory.startswith(f"{gib:.1f} GiB"), (name, memory, f"{gib:.1f} GiB")


def test_docs_cli_md_is_the_commands_own_help() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "write_cli_reference.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
