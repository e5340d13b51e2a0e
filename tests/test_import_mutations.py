"""Whatever happens to a paste on its way (cut at the start or the end, a letter lost, terminal
escapes, Markdown fences anywhere, quote marks), the import reads it or says in one line why
not (exit 5, ``InputError``): never a traceback. And the general rules behind issue 26's second
round: detection by weight of evidence, cleaning, CSV samples, names, counted GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwadvisor.catalog.identify import memory_from_name
from hwadvisor.cli import main
from hwadvisor.errors import InputError
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.importers.base import Sample
from hwadvisor.importers.detect import UNKNOWN_FORMAT, detect_format, import_text
from hwadvisor.importers.paste import clean_paste, strip_escapes
from hwadvisor.importers.registry import LIKELY, SURE, Format, detect, formats
from hwadvisor.model.profile import NOT_SHOWN, Profile

FOLDER = Path(__file__).parent / "fixtures" / "import"
PASTES = sorted(
    p for p in FOLDER.iterdir() if p.suffix not in (".md", ".toml") and p.stat().st_size < 200_000
)
TEXTS = {p.name: p.read_text(encoding="utf-8") for p in PASTES}
ESC = "\x1b"


def _read_or_refuse(text: str) -> Profile | None:
    """Import ``text``: a profile, or None after a one-line InputError; anything else fails."""
    try:
        return import_text(text, "paste")
    except InputError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith("paste: ")
        return None


def _mutate(text: str, kind: str, a: float, b: float) -> str:
    n = len(text)
    i, j = sorted((int(a * n), int(b * n)))
    if kind == "cut-start":
        return text[i:]
    if kind == "cut-end":
        return text[:j]
    if kind == "cut-both":
        return text[i:j] if j > i else text[i:]
    if kind == "drop-letter":
        return text[:i] + text[i + 1 :]
    if kind == "escapes":
        return text[:i] + f"{ESC}[4m" + text[i:j] + f"{ESC}[0m" + text[j:]
    if kind == "bare-escapes":
        return text[:i] + "[1m" + text[i:j] + "[0m" + text[j:]
    if kind == "fence":
        return text[:i] + "```text\n" + text[i:j] + "```" + text[j:]
    if kind == "inline-fence":
        return text[:i] + "```" + text[i:]
    if kind == "quote":
        return "\n".join("> " + line for line in text.splitlines())
    if kind == "crlf":
        return text.replace("\n", "\r\n")
    raise AssertionError(kind)


KINDS = [
    "cut-start",
    "cut-end",
    "cut-both",
    "drop-letter",
    "escapes",
    "bare-escapes",
    "fence",
    "inline-fence",
    "quote",
    "crlf",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(TEXTS)),
    kind=st.sampled_from(KINDS),
    a=st.floats(0, 1),
    b=st.floats(0, 1),
)
def test_no_mutation_of_a_paste_gives_a_traceback(name: str, kind: str, a: float, b: float) -> None:
    _read_or_refuse(_mutate(TEXTS[name], kind, a, b))


@pytest.mark.parametrize("name", sorted(TEXTS))
@pytest.mark.parametrize("kind", ["cut-start", "drop-letter", "escapes", "inline-fence"])
def test_every_paste_survives_each_mutation_at_a_few_places(name: str, kind: str) -> None:
    for a, b in ((0.01, 0.5), (0.2, 0.9), (0.5, 0.51)):
        _read_or_refuse(_mutate(TEXTS[name], kind, a, b))


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_escapes_and_fences_change_nothing_read(name: str) -> None:
    """Escapes around a line's text and fences around the whole: the same format, the same
    GPUs, the same CPU."""
    text = TEXTS[name]
    lines = text.split("\n")
    escaped = "\n".join(f"{ESC}[4m{line}{ESC}[0m" if line.strip() else line for line in lines)
    fenced = "```console\n" + escaped + "\n```\n"
    assert detect_format(fenced) == detect_format(text)
    plain, noisy = _read_or_refuse(text), _read_or_refuse(fenced)
    assert (plain is None) == (noisy is None)
    if plain is not None and noisy is not None:
        assert [g.name.value for g in noisy.gpus] == [g.name.value for g in plain.gpus]
        assert noisy.cpu.model_name.value == plain.cpu.model_name.value


# --------------------------------------------------------------------------------- cleaning


def test_escapes_are_taken_off_not_refused_as_binary() -> None:
    matrix = "GPU0\t X \tNV12\t0-31\nGPU1\tNV12\t X \t0-31\n"
    text = f"{ESC}[4m\tGPU0\tGPU1\tCPU Affinity{ESC}[0m\n" + matrix
    assert (
        strip_escapes(text)
        == "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV12\t0-31\nGPU1\tNV12\t X \t0-31\n"
    )
    assert detect_format(text) == "nvidia-smi topo -m"
    assert len(import_text(text, "topo").gpus) == 2


def test_other_control_characters_are_still_refused() -> None:
    with pytest.raises(InputError, match="not text"):
        import_text("GPU 0: NVIDIA A100\x00\x01\x02", "bin")


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        ("```", []),
        ("```text", []),
        ("  ```console", []),
        (
            "```GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)",
            ["GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)"],
        ),
        ("GPU 1: Tesla T4 (UUID: GPU-2)```", ["GPU 1: Tesla T4 (UUID: GPU-2)"]),
        ("output:```GPU 2: Tesla T4", ["output:", "GPU 2: Tesla T4"]),
        ("> ```", []),
    ],
)
def test_fences_go_wherever_they_sit_and_their_line_stays(line: str, kept: list[str]) -> None:
    assert [x for x in clean_paste(line).split("\n") if x.strip()] == kept


# -------------------------------------------------------------------------------- detection


def test_a_format_with_only_sniff_still_works() -> None:
    """Formats other modules add may define sniff/parse/near only: they score by their sniffer."""
    plain = Format(
        name="x",
        source=formats()[0].source,
        sniff=lambda sample: "MAGIC" in sample.text,
        parse=formats()[0].parse,
        rank=10,
    )
    assert plain.evidence(Sample("MAGIC here")) == SURE
    assert plain.evidence(Sample("nothing")) == 0.0


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # The CPU section of a Jetson report starting part-way (no header line).
        (
            "Is CUDA available: True\nCUDA runtime version: 12.2\nGPU models and configuration:"
            " GPU 0: Orin (nvgpu)\nNvidia driver version: N/A\nHIP runtime version: N/A\n",
            "collect_env output",
        ),
        # lscpu that lost its first letter and one letter more.
        (
            "rchitecture:  x86_64\nCPU(s):  8\nVendr ID:  GenuineIntel\n"
            "Model name:  Intel(R) Core(TM) i7-9700\nThread(s) per core: 1\n",
            "lscpu output",
        ),
    ],
)
def test_partial_and_misspelt_pastes_are_read(text: str, name: str) -> None:
    assert detect_format(text) == name


def test_a_weak_likeness_is_not_read_but_named() -> None:
    text = "Driver Version : 535.129.03\nCUDA Version : 12.2\n"
    assert detect(Sample(text)) is None
    with pytest.raises(InputError) as err:
        import_text(text, "p.txt")
    message = str(err.value)
    assert message.startswith(f"p.txt: {UNKNOWN_FORMAT}")
    assert "it looks most like nvidia-smi -q text; paste the whole output of `nvidia-smi -q`" in (
        message
    )
    assert 0 < max(f.evidence(Sample(text)) for f in formats()) < LIKELY


# ------------------------------------------------------------------------------------ CSV


def test_a_repeated_header_is_no_gpu_and_samples_fold() -> None:
    header = "index, name, pci.bus_id, memory.total [MiB], encoder.stats.sessionCount"
    row = "0, NVIDIA L4, 00000000:01:00.0, 23034 MiB, 0"
    text = "\n".join([header, row] * 13)
    profile = import_text(text, "csv")
    assert [g.name.value for g in profile.gpus] == ["NVIDIA L4"]
    assert "sampled 13 times" in profile.diagnostics.probes[0].message


def test_two_gpus_sampled_stay_two() -> None:
    header = "timestamp, name, uuid, memory.total [MiB]"
    rows = [f"2026/01/01 00:00:0{i}, Tesla T4, GPU-{g}, 15360 MiB" for i in range(5) for g in "ab"]
    profile = import_text("\n".join([header, *rows]), "csv")
    assert len(profile.gpus) == 2


# ---------------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("name", "gib"),
    [
        ("NVIDIA A800-SXM4-80GB", 80),
        ("Tesla V100-SXM2-16GB", 16),
        ("Tesla V100-PCIE-32G", 32),
        ("NVIDIA GeForce GTX 1060 6GB", 6),
        ("NVIDIA GH200 480GB", 480),
        ("NVIDIA A10G", None),
        ("GRID A100-40C", None),
        ("NVIDIA H100 NVL", None),
        ("Apple M2 Max (38 GPU cores)", None),
    ],
)
def test_memory_written_in_a_name(name: str, gib: int | None) -> None:
    assert memory_from_name(name) == (gib * 1024**3 if gib else None)


def test_a_name_the_catalog_does_not_know_still_gives_its_memory() -> None:
    text = "GPU 0: NVIDIA Imaginary-X9-48GB (UUID: GPU-1)\n"
    (gpu,) = import_text(text, "L").gpus
    assert gpu.vram_total_bytes.value == 48 * 1024**3


# --------------------------------------------------------------------------------- counts


def test_attached_gpus_before_the_banner_count() -> None:
    text = (
        "Attached GPUs                       : 8\n"
        "==============NVSMI LOG==============\n\n"
        "Driver Version                      : 535.129.03\n"
        "GPU 00000000:18:00.0\n"
        "    Product Name                    : NVIDIA A800-SXM4-80GB\n"
    )
    profile = import_text(text, "q")
    assert len(profile.gpus) == 8
    assert profile.gpus[0].vram_total_bytes.value == 80 * 1024**3
    assert [g.name.reason for g in profile.gpus[1:]] == [NOT_SHOWN] * 7
    finding = next(f for f in profile.findings if f.id == "gpus-not-shown")
    assert "assumes they are NVIDIA A800-SXM4-80GB" in finding.detail


def test_cli_refuses_bad_input_in_one_line_with_exit_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("Driver Version : 535.129.03\nsomething\n", encoding="utf-8")
    code = main(["import", str(bad), "--json", str(tmp_path / "p.json")])
    assert code == ExitStatus.INPUT_ERROR
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if line.strip()]
    assert "Traceback" not in captured.err
    assert len(lines) == 1 and UNKNOWN_FORMAT in lines[0] and "nvidia-smi -q" in lines[0]
