"""``nvidia-smi topo -m`` (how the GPUs are joined) and ``nvidia-smi -L`` (names, UUIDs, MIG
devices): real pastes from public issues, read as pasted, and cut anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.errors import InputError
from hwadvisor.importers.collect_env import gpu_topology
from hwadvisor.importers.detect import SMI_TABLE, detect_format, import_text
from hwadvisor.model.facts import Source
from hwadvisor.model.profile import GpuLink, Profile

IMPORT = Path(__file__).parent / "fixtures" / "import"
TOPO = "nvidia-smi topo -m"
LIST = "nvidia-smi -L"
MIB = 1024**2


def _text(name: str) -> str:
    return (IMPORT / name).read_text(encoding="utf-8")


def _links(profile: Profile) -> dict[tuple[int, int], GpuLink]:
    return {(link.gpu_a, link.gpu_b): link for link in profile.gpu_topology}


def _cut(profile: Profile) -> str | None:
    assert profile.imported is not None
    return profile.imported.files[0].truncated


def _notes(profile: Profile) -> str:
    return profile.diagnostics.probes[0].message or ""


# --------------------------------------------------------------------------------------------
# nvidia-smi topo -m

#: file → (GPUs in the header, {pair: (link, NVLinks)} as the text shows them, cut reason or None)
TOPO_REAL = {
    "smi-topo-2gpu-phb-tabs-legend.txt": (2, {(0, 1): ("host_bridge", 0)}, None),
    "smi-topo-5gpu-sys-node-phb-legend.txt": (
        5,
        {
            (0, 1): ("system", 0), (0, 4): ("system", 0), (1, 2): ("host_bridge", 0),
            (1, 3): ("numa_node", 0), (2, 4): ("numa_node", 0), (3, 4): ("host_bridge", 0),
        },
        None,
    ),
    "smi-topo-8gpu-mlx4-no-numa-cut.txt": (
        8,
        {
            (0, 1): ("pcie_switch", 0), (0, 2): ("host_bridge", 0), (0, 7): ("system", 0),
            (2, 3): ("pcie_switch", 0), (4, 5): ("pcie_switch", 0), (4, 7): ("host_bridge", 0),
            (5, 6): ("unknown", 0),
        },
        "the matrix has the rows of 5 of its 8 GPUs",
    ),
    "smi-topo-16gpu-nv6-10nic-cut.txt": (
        16,
        {(0, 1): ("nvlink", 6), (0, 15): ("nvlink", 6), (4, 15): ("nvlink", 6),
         (5, 6): ("unknown", 0)},
        "the matrix has the rows of 5 of its 16 GPUs",
    ),
    "smi-topo-8gpu-nv18-9nic-cut-in-nic-rows.txt": (
        8, {(0, 7): ("nvlink", 18), (3, 4): ("nvlink", 18)},
        "the matrix ends after 7 of its 9 NIC rows",
    ),
    "smi-topo-8gpu-nv8-cut-in-gpu7-row.txt": (
        8, {(0, 7): ("nvlink", 8), (6, 7): ("nvlink", 8)},
        "GPU7's row is cut after 4 of 8 GPU columns",
    ),
    "smi-topo-8gpu-nv18-12nic-merged-cells-cut.txt": (
        8, {(0, 1): ("nvlink", 18), (4, 7): ("nvlink", 18)},
        "the matrix ends after 1 of its 12 NIC rows",
    ),
    "smi-topo-vllm-section-2gpu-nv12-8nic.txt": (
        2, {(0, 1): ("nvlink", 12)}, "the text ends inside the legend"
    ),
    "smi-topo-vllm-info-8gpu-nv18-18nic-cut.txt": (
        8, {(0, 7): ("nvlink", 18), (3, 7): ("nvlink", 18), (4, 5): ("unknown", 0)},
        "the matrix has the rows of 4 of its 8 GPUs",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(TOPO_REAL))
def test_topo_matrix_gives_a_link_per_pair(name: str) -> None:
    count, expected, cut = TOPO_REAL[name]
    text = _text(name)
    assert detect_format(text) == TOPO
    profile = import_text(text, name)
    # One GPU record per GPU column: the matrix names none of them.
    assert [gpu.index for gpu in profile.gpus] == list(range(count))
    assert all(gpu.name.value is None for gpu in profile.gpus)
    assert profile.gpus[0].name.reason == "not in nvidia-smi topo -m"
    assert profile.nvml.device_count.value == count
    links = _links(profile)
    assert len(links) == count * (count - 1) // 2
    for pair, (kind, nvlinks) in expected.items():
        assert (links[pair].link, links[pair].nvlink_count) == (kind, nvlinks), pair
    assert _cut(profile) == cut
    assert ("input-truncated" in {f.id for f in profile.findings}) == (cut is not None)


def test_nvlink_and_pcie_links_say_what_the_matrix_shows() -> None:
    nvlink = _links(import_text(_text("smi-topo-vllm-section-2gpu-nv12-8nic.txt"), "a"))[(0, 1)]
    # "NV12" hides the PCIe path: it stays unknown, and says why.
    assert nvlink.pcie_link is None and nvlink.reason and "PCIe path" in nvlink.reason
    pcie = _links(import_text(_text("smi-topo-5gpu-sys-node-phb-legend.txt"), "b"))[(0, 1)]
    assert (pcie.link, pcie.pcie_link, pcie.nvlink_count, pcie.reason) == (
        "system",
        "system",
        0,
        None,
    )
    cut = _links(import_text(_text("smi-topo-8gpu-mlx4-no-numa-cut.txt"), "c"))[(5, 6)]
    assert cut.reason == "the text is cut before the GPU5/GPU6 cell of the matrix"


def test_a_cut_row_is_read_from_the_other_gpus_rows() -> None:
    # GPU7's row stops after 4 cells; GPU0..6's rows hold the GPU7 column whole.
    links = _links(import_text(_text("smi-topo-8gpu-nv8-cut-in-gpu7-row.txt"), "x"))
    assert all(link.link == "nvlink" and link.nvlink_count == 8 for link in links.values())


def test_cpu_affinity_and_nics_are_notes() -> None:
    notes = _notes(import_text(_text("smi-topo-5gpu-sys-node-phb-legend.txt"), "x"))
    assert "GPU0: CPUs 8-15,24-31 (NUMA node 1)" in notes
    assert "GPU1-GPU4: CPUs 0-7,16-23 (NUMA node 0)" in notes
    old = _notes(import_text(_text("smi-topo-8gpu-mlx4-no-numa-cut.txt"), "y"))
    assert (
        "GPU0-GPU3: CPUs 0-9,20-29" in old and "NIC column(s) in nvidia-smi topo -m: mlx4_0" in old
    )
    # The paste ends inside GPU4's affinity ("0-23,4"): that value is not passed on.
    cut = _notes(import_text(_text("smi-topo-16gpu-nv6-10nic-cut.txt"), "z"))
    assert "GPU0-GPU3: CPUs 0-23,48-71" in cut and "0-23,4;" not in cut and "GPU4:" not in cut
    merged = _notes(import_text(_text("smi-topo-8gpu-nv18-12nic-merged-cells-cut.txt"), "m"))
    assert "12 NIC column(s)" in merged  # "NIC8NIC9" (a lost tab) is two columns


def test_collect_env_reads_its_gpu_topology_section() -> None:
    constructed = _text("collect_env-vllm-sectioned-2x-h100-constructed.txt")
    profile = import_text(constructed, "collect_env.txt")
    assert [
        (link.gpu_a, link.gpu_b, link.link, link.nvlink_count) for link in profile.gpu_topology
    ] == [(0, 1, "nvlink", 18)]
    # The real vLLM section (cut inside GPU3's row) through the same function.
    links = gpu_topology(_text("smi-topo-vllm-info-8gpu-nv18-18nic-cut.txt"))
    assert len(links) == 28 and links[0].nvlink_count == 18
    without = import_text(_text("collect_env-linux-cuda-4x-a100-sxm4-80gb.txt"), "plain")
    assert without.gpu_topology == []


def test_table_and_matrix_pasted_together() -> None:
    # Both come from one report (noonghunna/club-3090 #1229): the table, then topo -m.
    text = (
        _text("smi-table-610-kmd-2x-rtx5090-cut.txt")
        + "\n"
        + _text("smi-topo-2gpu-phb-tabs-legend.txt")
    )
    assert detect_format(text) == SMI_TABLE
    profile = import_text(text, "both.txt")
    assert [gpu.name.value for gpu in profile.gpus] == ["NVIDIA GeForce RTX 5090"] * 2
    assert [(link.gpu_a, link.gpu_b, link.link) for link in profile.gpu_topology] == [
        (0, 1, "host_bridge")
    ]


def test_other_formats_are_not_taken_for_topo() -> None:
    for path in sorted(IMPORT.iterdir()):
        if not path.name.startswith("smi-topo-") and path.suffix in (".txt", ".json"):
            assert detect_format(path.read_text(encoding="utf-8")) != TOPO, path.name


@given(st.integers(min_value=1, max_value=1400), st.sampled_from(sorted(TOPO_REAL)))
def test_topo_cut_anywhere_is_read_up_to_the_cut(cut: int, name: str) -> None:
    text = _text(name)[:cut]
    try:
        profile = import_text(text, "cut.txt")
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    if detect_format(text) != TOPO:
        return
    whole = _links(import_text(_text(name), "whole.txt"))
    for pair, link in _links(profile).items():
        # What the cut text shows is what the whole text shows; the rest is unknown, with why.
        assert link.link in (whole[pair].link, "unknown")
        assert link.link != "unknown" or link.reason


# --------------------------------------------------------------------------------------------
# nvidia-smi -L


def test_list_gives_names_uuids_and_mig_devices_of_their_gpu() -> None:
    text = _text("smi-L-4x-a100-sxm4-80gb-mig-on-gpu0.txt")
    assert detect_format(text) == LIST
    profile = import_text(text, "L.txt")
    assert [gpu.name.value for gpu in profile.gpus] == ["NVIDIA A100-SXM4-80GB"] * 4
    assert profile.gpus[3].uuid.value == "GPU-69ec2344-ebac-b028-f88f-452abb3d7f11"
    first = profile.gpus[0]
    # The four MIG lines are GPU 0's slices, never GPUs.
    assert first.mig_enabled.value is True
    assert [m.index for m in first.mig_instances] == [0, 1, 2, 3]
    assert first.mig_instances[2].uuid.value == "MIG-f00d722c-f4e1-52c9-aa31-750441ae1bfe"
    assert first.mig_instances[0].name.value == "NVIDIA A100-SXM4-80GB MIG 1g.20gb"
    # A slice's memory is its own (and not printed); the card's comes from the catalog.
    assert first.mig_instances[0].memory_total_bytes.value is None
    assert first.vram_total_bytes.value == 81920 * MIB
    assert first.vram_total_bytes.source == Source.CATALOG
    # No MIG line under a GPU says nothing of its MIG mode.
    assert profile.gpus[1].mig_enabled.value is None and profile.gpus[1].mig_instances == []
    assert profile.nvml.device_count.value == 4
    assert _cut(profile) is None


def test_list_of_an_a100_pcie_with_two_mig_devices() -> None:
    profile = import_text(_text("smi-L-a100-80gb-pcie-2x-mig-3g40gb.txt"), "L.txt")
    (gpu,) = profile.gpus
    assert gpu.name.value == "NVIDIA A100 80GB PCIe"
    assert gpu.uuid.value == "GPU-932bfb2c-849a-2a22-1e84-9eff6bc02b39"
    assert [m.name.value for m in gpu.mig_instances] == ["NVIDIA A100 80GB PCIe MIG 3g.40gb"] * 2
    assert gpu.catalog_name.value == "A100 PCIe 80GB"


def test_list_after_a_prompt_line() -> None:
    profile = import_text(_text("smi-L-4x-rtx3090-prompt.txt"), "L.txt")
    assert [gpu.name.value for gpu in profile.gpus] == ["NVIDIA GeForce RTX 3090"] * 4
    assert profile.gpus[0].uuid.value == "GPU-e1924eea-b9bb-d537-39f2-b345087fa145"
    assert all(gpu.vram_total_bytes.value == 24 * 1024**3 for gpu in profile.gpus)  # catalog


def test_list_pasted_before_a_table_cut_at_its_head() -> None:
    # The table stops at its column heads: the -L lines are all there is of the GPU.
    text = _text("smi-table-535-with-L-a100-7x-mig-1g10gb-cut.txt")
    assert detect_format(text) == SMI_TABLE
    profile = import_text(text, "both.txt")
    (gpu,) = profile.gpus
    assert gpu.name.value == "NVIDIA A100-SXM4-80GB"
    assert gpu.uuid.value == "GPU-7fdaf0a5-179b-f636-d15d-daf243e3ff16"
    assert len(gpu.mig_instances) == 7 and gpu.mig_enabled.value is True
    assert profile.nvml.driver_version.value == "535.216.01"
    assert _cut(profile) == "the table is cut before its first GPU row"


def test_list_gives_the_table_its_uuids() -> None:
    profile = import_text(_text("smi-table-535-with-L-2x-quadro-rtx4000-cut.txt"), "both.txt")
    assert [gpu.uuid.value for gpu in profile.gpus] == [
        "GPU-c7b57be0-94ff-d352-a59b-d0ee00aeed43",
        "GPU-d6de6afc-bdfe-75c4-5273-0544439153fc",
    ]
    first, second = profile.gpus
    assert first.vram_total_bytes.value == 8192 * MIB and first.power_draw_watts.value == 10.0
    # GPU 1's memory cell is cut ("1MiB /"): not read from the table (the catalog's one size
    # of the Quadro RTX 4000 stands in, said as the catalog's), and the cut is reported.
    assert second.vram_total_bytes.source.value == "catalog"
    assert second.vram_total_bytes.value == 8 * 10**9 or second.vram_total_bytes.value == 8 * 2**30
    assert _cut(profile) == "the table is cut after GPU 1's first row"


def test_list_redacted_uuid_stays_unknown() -> None:
    profile = import_text(_text("smi-table-540-with-L-jetson-orin-cuda-na-cut.txt"), "orin.txt")
    (gpu,) = profile.gpus
    assert gpu.name.value == "Orin (nvgpu)"
    assert (
        gpu.uuid.value is None and gpu.uuid.reason == "nvidia-smi -L shows '[removed]' for the UUID"
    )
    assert profile.nvml.cuda_driver_version.value is None  # "CUDA Version: N/A"


def test_list_cut_inside_a_line() -> None:
    text = _text("smi-L-4x-a100-sxm4-80gb-mig-on-gpu0.txt")
    cut = text[: text.index("GPU-5e375e7e") + 6]  # inside GPU 2's UUID
    profile = import_text(cut, "cut.txt")
    assert [gpu.index for gpu in profile.gpus] == [0, 1, 2]
    assert profile.gpus[2].uuid.value is None
    assert _cut(profile) == "the line of GPU 2 is cut"
    assert profile.nvml.device_count.value is None


def test_mig_lines_without_their_gpu_are_not_taken_for_a_list() -> None:
    # sgawe11/RAG-on-GH200-with-MIG README: the MIG lines of `nvidia-smi -L`, the GPU line left out.
    text = (
        "  MIG 3g.48gb     Device  0: (UUID: MIG-51fa7c7a-4c41-59bf-b08a-9cb4b47525a7)\n"
        "  MIG 2g.24gb     Device  1: (UUID: MIG-27b1a30b-e164-5ba8-9904-9d949f65d8e4)\n"
        "  MIG 1g.24gb     Device  2: (UUID: MIG-6c80966f-629d-5379-803b-55424fc1a0bc)\n"
    )
    with pytest.raises(InputError, match="looks like nvidia-smi -L but has only MIG device lines"):
        import_text(text, "mig.txt")


def test_collect_env_gpu_lines_are_not_a_list() -> None:
    # collect_env's "GPU 0: <name>" lines carry no UUID.
    text = "GPU 0: NVIDIA A100-SXM4-80GB\nGPU 1: NVIDIA A100-SXM4-80GB\n"
    assert detect_format(text) != LIST
