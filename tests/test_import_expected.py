"""Every recorded paste is read as a person reading it would state it (tests/fixtures/import/
expected.toml, written from the texts); and every recorded paste has such a statement."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.expectations import check, load

FOLDER = Path(__file__).parent / "fixtures" / "import"
ENTRIES = load(FOLDER / "expected.toml")


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_paste_is_read_as_a_reader_states_it(entry: dict[str, object]) -> None:
    verdict = check(entry, FOLDER)  # type: ignore[arg-type]
    assert verdict.right, "; ".join(verdict.misses)


def test_every_recorded_paste_has_expectations() -> None:
    named = {entry["file"] for entry in ENTRIES}
    recorded = {p.name for p in FOLDER.iterdir() if p.suffix != ".md" and p.name != "expected.toml"}
    assert recorded - named == set()
    assert named - recorded == set()


def test_every_recorded_paste_names_its_source() -> None:
    sources = (FOLDER / "SOURCES.md").read_text(encoding="utf-8")
    recorded = {p.name for p in FOLDER.iterdir() if p.suffix != ".md" and p.name != "expected.toml"}
    assert {name for name in recorded if f"`{name}`" not in sources} == set()
