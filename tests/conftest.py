"""Shared pytest fixtures."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True)
def _children_may_start_again() -> Iterator[None]:
    """A test of Ctrl-C handling stops every child process and bars new ones, as the command
    line does before it exits (:func:`hwadvisor.isolation.kill_all_children`): lift the bar
    after each test, so that no later test depends on the order the tests ran in."""
    yield
    from hwadvisor.isolation import allow_children

    allow_children()


_CACHE_MADE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """The parsed-catalog cache of the test run in a folder of its own (removed at the end):
    tests never write to, nor read from, the user's cache folder."""
    if "HWADVISOR_CACHE_DIR" not in os.environ:
        folder = tempfile.mkdtemp(prefix="hwadvisor-test-cache-")
        _CACHE_MADE.append(folder)
        os.environ["HWADVISOR_CACHE_DIR"] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _CACHE_MADE:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` need a real NVIDIA GPU: skip them where there is none."""
    if shutil.which("nvidia-smi") and Path("/dev/nvidiactl").exists():
        return
    skip = pytest.mark.skip(reason="needs a real NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
