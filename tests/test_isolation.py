"""The child-process runner: results, failures, hangs, and nothing left behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from hwadvisor.isolation import run_isolated
from tests.helpers.procs import alive

T = "tests.helpers.child_targets"


def test_result_comes_back_despite_stdout_noise() -> None:
    result = run_isolated(f"{T}:echo", {"value": [1, "two"]}, timeout_s=30)
    assert result.status == "ok", result
    assert result.value == {"echo": [1, "two"]}
    assert "library noise" in result.stderr_tail


def test_exception_in_child_is_reported_not_raised() -> None:
    result = run_isolated(f"{T}:boom", timeout_s=30)
    assert result.status == "failed"
    assert result.error_type == "RuntimeError"
    assert "probe exploded" in (result.error or "")


def test_child_that_dies_is_a_failure() -> None:
    result = run_isolated(f"{T}:die", timeout_s=30)
    assert result.status == "failed"
    assert "exit status 7" in (result.error or "")


def test_non_finite_result_is_a_failure_not_invalid_json() -> None:
    result = run_isolated(f"{T}:nan", timeout_s=30)
    assert result.status == "failed"
    assert result.error_type == "ValueError"


def test_unknown_target_is_a_failure() -> None:
    result = run_isolated("tests.helpers.no_such_module:f", timeout_s=30)
    assert result.status == "failed"
    assert result.error_type == "ModuleNotFoundError"


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
def test_hang_times_out_within_limit_and_leaves_no_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    start = time.monotonic()
    result = run_isolated(f"{T}:hang", {"pid_file": str(pid_file)}, timeout_s=1.5)
    elapsed = time.monotonic() - start
    assert result.status == "timeout"
    assert elapsed < 1.5 + 2.0
    child, grandchild = (int(p) for p in pid_file.read_text().split())
    deadline = time.monotonic() + 2
    while (alive(child) or alive(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)
    assert not alive(grandchild)


def test_generator_items_stream_back() -> None:
    seen: list[object] = []

    def on_item(item: object) -> None:
        seen.append(item)

    result = run_isolated(
        f"{T}:count_then_hang", {"n": 3, "hang_after": False}, timeout_s=30, on_item=on_item
    )
    assert result.status == "ok"
    assert result.items == seen == [{"i": 0}, {"i": 1}, {"i": 2}]


def test_items_survive_a_hang_and_limits_follow_items() -> None:
    start = time.monotonic()
    # Each item grants 0.5 s more; the child hangs after the last one.
    result = run_isolated(
        f"{T}:count_then_hang",
        {"n": 2, "hang_after": True},
        timeout_s=30,
        on_item=lambda _item: 0.5,
    )
    assert result.status == "timeout"
    assert result.items == [{"i": 0}, {"i": 1}]
    assert time.monotonic() - start < 0.5 + 2.0 + 2.0  # start-up + limit + kill grace
