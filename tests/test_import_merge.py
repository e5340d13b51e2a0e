"""Several files describing one machine: one profile, each fact from the most specific file that
states it (keeping that file's source), disagreements reported, never silently averaged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hwadvisor.cli import app, main
from hwadvisor.errors import InputError
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.importers.detect import import_text, import_texts
from hwadvisor.importers.merge import same
from hwadvisor.model.facts import Source

IMPORT = Path(__file__).parent / "fixtures" / "import"


def paste(name: str) -> str:
    return (IMPORT / name).read_text(encoding="utf-8")


#: collect_env of the machine the constructed nvidia-smi -q report describes (2x H100, 535).
COLLECT_ENV_2XH100 = """\
PyTorch version: 2.1.2+cu121
Is debug build: False
CUDA used to build PyTorch: 12.1
ROCM used to build PyTorch: N/A

OS: Ubuntu 22.04.3 LTS (x86_64)
Python version: 3.10.12 (main, Jun 11 2023, 05:26:28) [GCC 11.4.0] (64-bit runtime)
Is CUDA available: True
GPU models and configuration:
GPU 0: NVIDIA H100 80GB HBM3
GPU 1: NVIDIA H100 80GB HBM3

Nvidia driver version: 535.129.03
cuDNN version: 8.9.2

CPU:
Architecture:                    x86_64
CPU(s):                          64
Model name:                      AMD EPYC 7763 64-Core Processor
Socket(s):                       1
Core(s) per socket:              32
Flags:                           fpu avx avx2 fma

Versions of relevant libraries:
[pip3] torch==2.1.2
"""

LSCPU_128 = """\
Architecture:                    x86_64
CPU(s):                          128
Model name:                      AMD EPYC 7763 64-Core Processor
Socket(s):                       2
Core(s) per socket:              32
Flags:                           fpu avx avx2 fma
"""


def test_collect_env_and_nvidia_smi_of_one_machine_agree() -> None:
    profile = import_texts(
        [
            (COLLECT_ENV_2XH100, "collect_env.txt"),
            (paste("smi-q-535-2x-h100-constructed.txt"), "q.txt"),
        ]
    )
    assert profile.imported is not None
    assert [f.format for f in profile.imported.files] == [
        "collect_env output",
        "nvidia-smi -q text",
    ]
    assert profile.imported.conflicts == []
    assert "import-conflict" not in {f.id for f in profile.findings}
    assert len(profile.gpus) == 2  # the two lists name the same two GPUs: matched, not added
    for gpu in profile.gpus:
        # Memory and bus id from nvidia-smi (which reads the hardware), torch facts from
        # collect_env: each keeps its own source.
        assert gpu.vram_total_bytes.source is Source.NVIDIA_SMI
        assert gpu.pci_bus_id.known and gpu.pci_bus_id.source is Source.NVIDIA_SMI
    assert profile.frameworks.torch.version.value == "2.1.2+cu121"
    assert profile.frameworks.torch.version.source is Source.COLLECT_ENV
    assert profile.cpu.model_name.source is Source.COLLECT_ENV
    # The report's own time is the profile's; the import's time is kept apart.
    assert profile.created_utc == "2023-11-21T10:02:03Z"
    assert profile.imported.imported_utc != profile.created_utc


def test_the_more_specific_file_wins_and_the_other_value_is_reported() -> None:
    both = [(COLLECT_ENV_2XH100, "collect_env.txt"), (LSCPU_128, "lscpu.txt")]
    for order in (both, both[::-1]):  # the file order does not decide: the format's rank does
        profile = import_texts(order)
        assert profile.cpu.logical_cores.value == 128
        assert profile.cpu.logical_cores.source is Source.LSCPU
        assert profile.imported is not None
        conflicts = {c.fact: c for c in profile.imported.conflicts}
        assert set(conflicts) == {"cpu.sockets", "cpu.physical_cores", "cpu.logical_cores"}
        assert conflicts["cpu.logical_cores"].kept == "128 (lscpu.txt)"
        assert conflicts["cpu.logical_cores"].dropped == "64 (collect_env.txt)"
        finding = next(f for f in profile.findings if f.id == "import-conflict")
        assert finding.title == "The imported files disagree"
        assert "3 fact(s)" in finding.detail
        # What lscpu does not say comes from collect_env.
        assert profile.frameworks.torch.version.value == "2.1.2+cu121"


def test_gpus_are_matched_by_bus_id_whatever_their_order() -> None:
    text = paste("smi-q-535-2x-h100-constructed.txt")
    blocks = text.split("\nGPU 00000000:")
    swapped = blocks[0] + "\nGPU 00000000:" + blocks[2] + "\nGPU 00000000:" + blocks[1]
    profile = import_texts([(text, "a.txt"), (swapped, "b.txt")])
    assert len(profile.gpus) == 2
    assert profile.imported is not None and profile.imported.conflicts == []


def test_more_gpus_in_one_file_are_added_not_lost() -> None:
    two = COLLECT_ENV_2XH100
    line = "GPU {}: NVIDIA H100 80GB HBM3\n"
    four = two.replace(line.format(1), "".join(line.format(i) for i in (1, 2, 3)))
    profile = import_texts(
        [(paste("smi-q-535-2x-h100-constructed.txt"), "q.txt"), (four, "ce.txt")]
    )
    assert [gpu.index for gpu in profile.gpus] == [0, 1, 2, 3]
    assert profile.gpus[0].pci_bus_id.known and not profile.gpus[3].pci_bus_id.known


def test_files_from_two_machines_are_called_so() -> None:
    profile_a = import_texts([(COLLECT_ENV_2XH100, "ce.txt"), (LSCPU_128, "l.txt")])
    assert profile_a.host.hostname.value is None  # neither file names the machine
    q = paste("smi-q-535-2x-h100-constructed.txt")
    old = q.replace("Tue Nov 21 10:02:03 2023", "Mon Jan  2 09:00:00 2023")
    profile = import_texts([(q, "new.txt"), (old, "old.txt")])
    assert profile.imported is not None
    fact = {c.fact: c for c in profile.imported.conflicts}["created_utc"]
    assert fact.kept.startswith("2023-11-21T10:02:03Z")
    finding = next(f for f in profile.findings if f.id == "import-conflict")
    assert "different machines or moments" in finding.title


def test_a_cut_file_in_a_merge_is_named_in_its_finding() -> None:
    q = paste("smi-q-535-2x-h100-constructed.txt")
    cut = q[: q.index("GPU 00000000:2A:00.0")]
    profile = import_texts([(COLLECT_ENV_2XH100, "ce.txt"), (cut, "cut.txt")])
    finding = next(f for f in profile.findings if f.id == "input-truncated")
    assert finding.detail.startswith("cut.txt (nvidia-smi -q text): 1 of the 2 attached GPUs")
    assert len(profile.gpus) == 2  # the second GPU still known, from collect_env


def test_a_saved_profile_is_not_merged() -> None:
    saved = (Path(__file__).parent / "fixtures" / "reports" / "cpu-only.json").read_text("utf-8")
    assert import_text(saved, "p.json").imported is None  # on its own: loaded as it is
    with pytest.raises(InputError, match=r"^p\.json: a saved hwadvisor profile cannot be merged"):
        import_texts([(COLLECT_ENV_2XH100, "ce.txt"), (saved, "p.json")])


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("NVIDIA A100-SXM4-80GB", "nvidia a100 sxm4 80gb", True),
        ("NVIDIA A100-SXM...", "NVIDIA A100-SXM4-80GB", True),  # the table's cut name
        ("NVIDIA A100-SXM...", "NVIDIA H100 80GB HBM3", False),
        ("535.104", "535.104.05", True),
        ("535.104", "535.129.03", False),
        (85899345920, 85899345920 * 1.001, True),
        (85520809984, 85899345920, True),  # 81559 MiB vs 80 GiB: 0.4 %
        (64, 128, False),
        (True, 1, False),
        (["avx2", "fma"], ["avx2", "fma", "avx512f"], True),
        (["avx2"], ["sve"], False),
    ],
)
def test_same_reading(a: object, b: object, expected: bool) -> None:
    assert same(a, b) is expected
    assert same(b, a) is expected


def test_cli_merges_files_and_refuses_a_missing_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ce.txt").write_text(COLLECT_ENV_2XH100, encoding="utf-8")
    (tmp_path / "lscpu.txt").write_text(LSCPU_128, encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(
        app, ["import", str(tmp_path / "ce.txt"), str(tmp_path / "lscpu.txt"), "--json", "-"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [f["file"].rsplit("/", 1)[-1] for f in data["imported"]["files"]] == [
        "ce.txt",
        "lscpu.txt",
    ]
    assert data["cpu"]["logical_cores"] == {"value": 128, "source": "lscpu", "reason": None}
    status = main(["import", str(tmp_path / "ce.txt"), str(tmp_path / "no.txt")])
    assert status == ExitStatus.INPUT_ERROR
    err = capsys.readouterr().err
    assert "no.txt: cannot be read" in err and "Traceback" not in err


def test_a_conflict_names_the_file_the_kept_value_came_from_among_three() -> None:
    """The base file (nvidia-smi -q) says nothing of the CPU: the whole CPU section comes from
    the second file, and collect_env, third, disagrees with that file, not with the first."""
    q = (paste("smi-q-535-2x-h100-constructed.txt"), "q.txt")
    three = [q, (LSCPU_128, "lscpu.txt"), (COLLECT_ENV_2XH100, "ce.txt")]
    for order in (three, three[::-1], [three[2], three[0], three[1]]):
        profile = import_texts(order)
        assert profile.imported is not None
        conflicts = {c.fact: c for c in profile.imported.conflicts}
        assert set(conflicts) == {"cpu.sockets", "cpu.physical_cores", "cpu.logical_cores"}
        for conflict in conflicts.values():
            assert conflict.kept.endswith("(lscpu.txt)"), conflict
            assert conflict.dropped.endswith("(ce.txt)"), conflict


def test_a_conflict_from_a_fourth_file_names_the_third_where_its_gpu_came_from() -> None:
    """Two GPUs in nvidia-smi -q, four in the third file (two added from it), and a fourth file
    naming the last GPU otherwise: the kept name is the third file's."""
    line = "GPU {}: NVIDIA H100 80GB HBM3\n"
    four = COLLECT_ENV_2XH100.replace(line.format(1), "".join(line.format(i) for i in (1, 2, 3)))
    other = four.replace(line.format(3), "GPU 3: NVIDIA A100-SXM4-80GB\n")
    files = [
        (paste("smi-q-535-2x-h100-constructed.txt"), "q.txt"),
        (LSCPU_128, "lscpu.txt"),
        (four, "four.txt"),
        (other, "other.txt"),
    ]
    profile = import_texts(files)
    assert profile.imported is not None
    conflicts = {c.fact: c for c in profile.imported.conflicts}
    assert conflicts["gpus[3].name"].kept == "'NVIDIA H100 80GB HBM3' (four.txt)"
    assert conflicts["gpus[3].name"].dropped == "'NVIDIA A100-SXM4-80GB' (other.txt)"
    assert conflicts["cpu.logical_cores"].kept == "128 (lscpu.txt)"
    assert {c.dropped.rsplit(" ", 1)[1] for c in conflicts.values()} <= {
        "(four.txt)",
        "(other.txt)",
    }
