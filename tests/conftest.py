"""Shared pytest fixtures."""

from __future__ import annotations

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` need a real NVIDIA GPU: skip them where there is none."""
    import shutil

    if shutil.which("nvidia-smi") and Path("/dev/nvidiactl").exists():
        return
    skip = pytest.mark.skip(reason="needs a real NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
