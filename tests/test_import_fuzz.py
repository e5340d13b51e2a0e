"""Fuzz every importer with the real pastes: cut at any point, random bytes put in, lines re-
wrapped at any width. Each either imports (a partial profile, with a finding where it saw the
cut) or is one InputError line — never another exception, never a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwadvisor.errors import InputError
from hwadvisor.importers.detect import detect_format, import_text
from hwadvisor.importers.registry import formats

IMPORT = Path(__file__).parent / "fixtures" / "import"
SMI_XML = Path(__file__).parent / "fixtures" / "nvidia-smi"
PASTES = sorted(
    p
    for folder in (IMPORT, SMI_XML)
    for p in folder.iterdir()
    if p.suffix in (".txt", ".json", ".xml", ".csv")
)
TEXTS = {p.name: p.read_text(encoding="utf-8") for p in PASTES}
FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def _imports_or_one_line(text: str) -> None:
    try:
        profile = import_text(text, "paste.txt")
    except InputError as exc:
        message = str(exc)
        assert message.startswith("paste.txt: ") and "\n" not in message
        return
    assert profile.imported is not None and profile.imported.files[0].file == "paste.txt"
    for gpu in profile.gpus:
        assert gpu.vram_total_bytes.value is None or gpu.vram_total_bytes.value > 0


def test_every_format_has_real_pastes() -> None:
    """Each registered format reads at least one recorded paste as itself."""
    seen = {detect_format(text) for text in TEXTS.values()}
    missing = [f.name for f in formats() if f.name not in seen]
    assert not missing, f"no recorded paste is detected as {missing}"


@pytest.mark.parametrize("name", sorted(TEXTS))
@FUZZ
@given(data=st.data())
def test_cut_anywhere(name: str, data: st.DataObject) -> None:
    text = TEXTS[name]
    cut = data.draw(st.integers(min_value=1, max_value=len(text)))
    _imports_or_one_line(text[:cut])


@pytest.mark.parametrize("name", sorted(TEXTS))
@FUZZ
@given(data=st.data())
def test_random_bytes_inserted(name: str, data: st.DataObject) -> None:
    text = TEXTS[name]
    at = data.draw(st.integers(min_value=0, max_value=len(text)))
    junk = data.draw(st.text(min_size=1, max_size=40))
    _imports_or_one_line(text[:at] + junk + text[at:])


@pytest.mark.parametrize("name", sorted(TEXTS))
@FUZZ
@given(width=st.integers(min_value=20, max_value=200))
def test_rewrapped_at_any_width(name: str, width: int) -> None:
    """An issue tracker or terminal that wraps long lines."""
    lines = []
    for line in TEXTS[name].splitlines():
        lines += [line[i : i + width] for i in range(0, max(len(line), 1), width)]
    _imports_or_one_line("\n".join(lines))


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_tabs_and_crlf_and_quote_marks(name: str) -> None:
    """Paste noise: every line quoted ("> "), CRLF line ends, inside a Markdown fence."""
    text = TEXTS[name]
    noisy = "```\r\n" + "".join(f"> {line}\r\n" for line in text.splitlines()) + "```\r\n"
    assert detect_format(noisy) == detect_format(text)
    _imports_or_one_line(noisy)
