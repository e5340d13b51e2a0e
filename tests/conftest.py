"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` need a real NVIDIA GPU: skip them where there is none."""
    import shutil

    if shutil.which("nvidia-smi") and Path("/dev/nvidiactl").exists():
        return
    skip = pytest.mark.skip(reason="needs a real NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
