"""macOS ``system_profiler`` (text and ``-json``), ``gpustat`` (``--json`` and plain) and pasted
``/proc/cpuinfo``: what a person reading each recording would state — GPUs, memory, CPU model
and counts — and, where the text cannot say, a reason instead of a guess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwadvisor.advise import advise
from hwadvisor.catalog.peaks import cpu_peak_details
from hwadvisor.errors import InputError
from hwadvisor.importers.base import Sample
from hwadvisor.importers.detect import detect_format, import_text
from hwadvisor.importers.proc_cpuinfo import ProcCpuinfoError, parse_proc_cpuinfo_text
from hwadvisor.model.facts import Source
from hwadvisor.model.profile import Profile
from hwadvisor.workloads import get_workload

IMPORT = Path(__file__).parent / "fixtures" / "import"
GIB = 1024**3
MIB = 1024**2

SP = "system_profiler output"
GPUSTAT = "gpustat output"
CPUINFO = "/proc/cpuinfo"


def load(name: str) -> str:
    return (IMPORT / name).read_text(encoding="utf-8")


def read(name: str, kind: str) -> Profile:
    text = load(name)
    assert detect_format(text) == kind
    return import_text(text, name)


def message(profile: Profile) -> str:
    (run,) = profile.diagnostics.probes
    return run.message or ""


def truncated(profile: Profile) -> str | None:
    assert profile.imported is not None
    (entry,) = profile.imported.files
    return entry.truncated


# --------------------------------------------------------------------------------------------
# system_profiler: hardware


@pytest.mark.parametrize(
    ("name", "chip", "cores", "p_cores", "e_cores", "memory_gib"),
    [
        ("system_profiler-hw-m2-pro-mini.txt", "Apple M2 Pro", 12, 8, 4, 16),
        ("system_profiler-hw-m1-pro-serial.txt", "Apple M1 Pro", 10, 8, 2, 16),
        ("system_profiler-m2-max-hw-displays-sw-constructed.txt", "Apple M2 Max", 12, 8, 4, 32),
        ("system_profiler-m2-max-hw-displays-sw-constructed.json", "Apple M2 Max", 12, 8, 4, 32),
    ],
)
def test_apple_silicon_hardware(
    name: str, chip: str, cores: int, p_cores: int, e_cores: int, memory_gib: int
) -> None:
    profile = read(name, SP)
    cpu = profile.cpu
    assert cpu.model_name.value == chip and cpu.vendor.value == "Apple"
    assert cpu.model_name.source is Source.SYSTEM_PROFILER
    assert cpu.architecture.value == "aarch64"
    assert cpu.microarchitecture.value == " ".join(chip.split()[:2])  # "Apple M2"
    assert (cpu.physical_cores.value, cpu.logical_cores.value) == (cores, cores)
    assert (cpu.performance_cores.value, cpu.efficiency_cores.value) == (p_cores, e_cores)
    assert cpu.sockets.value == 1
    assert profile.memory.total_bytes.value == memory_gib * GIB
    assert profile.platform.os.value == "Darwin"
    assert truncated(profile) is None


def test_intel_mac_hardware_counts_hyperthreads() -> None:
    profile = read("system_profiler-hw-imac-pro-xeon-w.txt", SP)
    cpu = profile.cpu
    assert cpu.model_name.value == "10-Core Intel Xeon W" and cpu.vendor.value == "Intel"
    assert cpu.architecture.value == "x86_64"
    assert (cpu.sockets.value, cpu.physical_cores.value, cpu.logical_cores.value) == (1, 10, 20)
    assert cpu.base_frequency_mhz.value == 3000.0
    assert cpu.l2_cache_bytes.value == 10 * MIB  # 1 MB per core
    assert cpu.l3_cache_bytes.value == int(13.8 * MIB)
    assert cpu.performance_cores.value is None and "not a hybrid" in str(
        cpu.performance_cores.reason
    )
    assert profile.memory.total_bytes.value == 64 * GIB
    assert profile.gpus == []
    assert "iMac Pro (iMacPro1,1)" in message(profile)


def test_identifiers_are_never_stored() -> None:
    secrets = {
        "system_profiler-hw-m1-pro-serial.txt": [
            "GGJXG26P75",
            "30BD6509-4710-567C-826E-3AF2D66DBF35",
            "00006000-001A595E0121801E",
        ],
        "system_profiler-hw-vm-anka.json": ["ZNNF3941VQ", "E465E3CB-0162-5E0E-9CEA-FED57C72BE74"],
        "system_profiler-displays-firepro-d500-cut.txt": ["2A0359Y86JL"],
        "system_profiler-displays-m3-pro-json-cut.txt": ["4254554c"],
        "system_profiler-m2-max-hw-displays-sw-constructed.txt": [
            "C0NSTRUCTED1",
            "11111111-2222-3333-4444-555555555555",
            "Jane Doe",
        ],
        "system_profiler-m2-max-hw-displays-sw-constructed.json": [
            "C0NSTRUCTED1",
            "11111111-2222-3333-4444-555555555555",
            "Jane Doe",
            "fd626d62",
        ],
    }
    for name, values in secrets.items():
        assert all(value in load(name) for value in values), name  # the test can fail
        dumped = read(name, SP).model_dump_json()
        for value in values:
            assert value not in dumped, (name, value)


def test_software_section_gives_os_and_hostname() -> None:
    text = read("system_profiler-m2-max-hw-displays-sw-constructed.txt", SP)
    js = read("system_profiler-m2-max-hw-displays-sw-constructed.json", SP)
    for profile in (text, js):
        assert profile.host.hostname.value == "lab-mbp"
        assert profile.host.hostname.source is Source.SYSTEM_PROFILER
        assert profile.platform.distribution.value == "macOS 13.4 (22F66)"
        assert profile.platform.kernel.value == "22.5.0"
    # The text and the -json of one machine say the same.
    assert text.cpu == js.cpu and text.memory == js.memory
    assert [g.model_dump() for g in text.gpus] == [g.model_dump() for g in js.gpus]


def test_a_virtual_mac() -> None:
    profile = read("system_profiler-hw-vm-anka.json", SP)
    cpu = profile.cpu
    assert cpu.model_name.value is None and "Unknown" in str(cpu.model_name.reason)
    assert cpu.virtualized.value is True
    assert cpu.physical_cores.value == 6
    assert profile.memory.total_bytes.value == 14 * GIB


def test_apple_gpu_gets_an_estimate_from_unified_memory() -> None:
    profile = read("system_profiler-m2-max-hw-displays-sw-constructed.txt", SP)
    mine = [
        e
        for e in advise(profile, get_workload("small-cnn")).estimates
        if e.origin == "this-machine" and "MPS" in e.hardware
    ]
    assert len(mine) == 1 and "Apple M2 Max" in mine[0].hardware
    assert mine[0].seconds is not None
    assert mine[0].memory_available_bytes == int(32 * GIB * 0.7)


# --------------------------------------------------------------------------------------------
# system_profiler: graphics


@pytest.mark.parametrize(
    ("name", "gpu", "cores", "cut"),
    [
        ("system_profiler-displays-m3.txt", "Apple M3", 10, False),
        ("system_profiler-m2-max-hw-displays-sw-constructed.json", "Apple M2 Max", 30, False),
        # Older macOS names the GPU "kHW_AppleM1Item"; the paste ends inside the displays.
        ("system_profiler-displays-m1-json-cut.txt", "Apple M1", None, True),
        ("system_profiler-displays-m3-pro-json-cut.txt", "Apple M3 Pro", None, True),
    ],
)
def test_apple_gpu(name: str, gpu: str, cores: int | None, cut: bool) -> None:
    profile = read(name, SP)
    (found,) = profile.gpus
    assert (found.vendor, found.backend, found.name.value) == ("apple", "mps", gpu)
    assert found.multiprocessor_count.value == cores
    assert found.vram_total_bytes.value is None
    assert "unified memory" in str(found.vram_total_bytes.reason)
    assert found.catalog_name.value == gpu
    if cut:
        assert "JSON ends unclosed" in str(truncated(profile))
        assert "input-truncated" in [f.id for f in profile.findings]
    else:
        assert truncated(profile) is None
        assert "Metal support: Metal 3" in message(profile)


def test_amd_gpus_of_intel_macs_run_through_mps() -> None:
    (vega,) = read("system_profiler-displays-vega64-imac-pro.txt", SP).gpus
    assert (vega.vendor, vega.backend, vega.name.value) == ("amd", "mps", "Radeon Pro Vega 64")
    assert vega.vram_total_bytes.value == 16 * GIB
    # A paste that starts inside the first GPU's block: both FirePro D500s of a Mac Pro.
    profile = read("system_profiler-displays-firepro-d500-cut.txt", SP)
    assert [(g.index, g.name.value) for g in profile.gpus] == [
        (0, "AMD FirePro D500"),
        (1, "AMD FirePro D500"),
    ]
    assert all(g.vram_total_bytes.value == 3 * GIB for g in profile.gpus)
    assert "starts inside a block" in str(truncated(profile))
    # The monitor's lines ("Display Type", "Resolution") are not taken for GPU facts.
    assert profile.cpu.model_name.value is None


def test_intel_and_nvidia_graphics_of_a_mac_are_no_training_device() -> None:
    profile = read("system_profiler-displays-iris-pro-gt750m.txt", SP)
    assert profile.gpus == []
    assert "Intel Iris Pro: integrated Intel graphics (1536 MB shared)" in message(profile)
    assert "NVIDIA GeForce GT 750M: no PyTorch backend" in message(profile)
    assert truncated(profile) is None
    # A dual-GPU MacBook Pro's paste that stops inside the first (Intel) block: cut.
    profile = read("system_profiler-displays-uhd630-cut.txt", SP)
    assert profile.gpus == []
    assert "Intel UHD Graphics 630" in message(profile)
    assert truncated(profile) == "the block of Intel UHD Graphics 630 ends before its Metal line"


@pytest.mark.parametrize(
    ("cores", "total", "tiers"),
    [
        ('"proc 12:8:4"', 12, (8, 4)),
        ("8", 8, (None, None)),
        # macOS 26 on M5 Pro/Max: a fourth field whose tiers system_profiler does not name.
        ('"proc 18:6:0:12"', 18, (None, None)),
    ],
)
def test_json_core_counts(cores: str, total: int, tiers: tuple[int | None, int | None]) -> None:
    text = (
        '{"SPHardwareDataType": [{"chip_type": "Apple M5 Max", '
        f'"number_processors": {cores}, "physical_memory": "48 GB"}}]}}'
    )
    cpu = import_text(text, "hw.json").cpu
    assert cpu.physical_cores.value == total
    assert (cpu.performance_cores.value, cpu.efficiency_cores.value) == tiers
    if tiers == (None, None):
        assert cpu.performance_cores.reason


def test_unnamed_core_tiers_are_not_guessed() -> None:
    text = (
        "Hardware Overview:\n  Chip: Apple M5 Max\n"
        "  Total Number of Cores: 18 (6 super and 12 performance)\n  Memory: 48 GB\n"
    )
    cpu = import_text(text, "hw.txt").cpu
    assert cpu.physical_cores.value == 18
    assert cpu.performance_cores.value is None and cpu.efficiency_cores.value is None
    assert "super" in str(cpu.performance_cores.reason)


def test_a_section_title_alone_is_unreadable() -> None:
    with pytest.raises(InputError, match="unreadable system_profiler output"):
        import_text("Hardware:\n\n    Hardware Overview:\n\n", "empty.txt")


def test_a_chipset_line_alone_is_not_taken() -> None:
    with pytest.raises(InputError, match="looks like system_profiler output"):
        import_text("Chipset Model: something\n", "x.txt")


# --------------------------------------------------------------------------------------------
# gpustat


def test_gpustat_json_gh200() -> None:
    profile = read("gpustat-json-gh200-tacc.txt", GPUSTAT)  # after a "[gh]$" prompt and logs
    (gpu,) = profile.gpus
    assert (gpu.vendor, gpu.backend, gpu.name.value) == ("nvidia", "cuda", "NVIDIA GH200 120GB")
    assert gpu.name.source is Source.GPUSTAT
    assert gpu.uuid.value == "GPU-6248a92d-df2d-db15-af4e-b0e000650adb"
    assert gpu.vram_total_bytes.value == 97871 * MIB
    assert gpu.vram_used_bytes.value == 0
    assert (gpu.power_draw_watts.value, gpu.power_limit_watts.value) == (78.0, 900.0)
    assert (gpu.temperature_c.value, gpu.utilization_percent.value) == (27, 0)
    assert profile.nvml.driver_version.value == "560.35.03"
    assert profile.nvml.device_count.value == 1
    assert profile.host.hostname.value == "c608-151.vista.tacc.utexas.edu"
    assert profile.created_utc == "2025-04-09T13:44:37Z"
    assert "local time without a zone" in message(profile)
    assert truncated(profile) is None


def test_gpustat_json_two_gpus_without_processes() -> None:
    profile = read("gpustat-json-2x-rtx3090-constructed.json", GPUSTAT)
    assert [(g.index, g.name.value) for g in profile.gpus] == [
        (0, "NVIDIA GeForce RTX 3090"),
        (1, "NVIDIA GeForce RTX 3090"),
    ]
    first, second = profile.gpus
    assert first.vram_total_bytes.value == 24576 * MIB
    assert first.vram_used_bytes.value == 21873 * MIB
    assert second.power_draw_watts.value is None
    assert second.power_draw_watts.reason == "gpustat reports null for power.draw"
    assert profile.host.hostname.value == "train-box"
    # Process lists name people and their commands: not part of a hardware profile.
    dumped = profile.model_dump_json()
    assert "alice" in load("gpustat-json-2x-rtx3090-constructed.json")
    assert "alice" not in dumped and "train.py" not in dumped


@pytest.mark.parametrize(
    ("name", "gpus", "gpu", "total_mib", "driver", "host", "when"),
    [
        (
            "gpustat-text-4x-p100.txt",
            4,
            "Tesla P100-PCIE-16GB",
            16384,
            "515.65.01",
            "gpu-a-11.extreme",
            "2022-08-22T15:23:57Z",
        ),
        (
            "gpustat-text-gt650m-not-supported.txt",
            1,
            "GeForce GT 650M",
            1999,
            "390.144",
            "debianace",
            "2022-05-24T09:21:01Z",
        ),
        # Four runs of a loop, one GPU each: one GPU, the first run's time; no driver in the
        # header of gpustat before 0.6.
        (
            "gpustat-text-gtx1070-loop.txt",
            1,
            "GeForce GTX 1070",
            8116,
            None,
            "hak8ordesktop",
            "2018-06-23T20:36:39Z",
        ),
    ],
)
def test_gpustat_text(
    name: str,
    gpus: int,
    gpu: str,
    total_mib: int,
    driver: str | None,
    host: str,
    when: str,
) -> None:
    profile = read(name, GPUSTAT)
    assert [g.name.value for g in profile.gpus] == [gpu] * gpus
    assert [g.index for g in profile.gpus] == list(range(gpus))
    assert all(g.vram_total_bytes.value == total_mib * MIB for g in profile.gpus)
    assert profile.nvml.driver_version.value == driver
    assert profile.host.hostname.value == host
    assert profile.created_utc == when
    assert truncated(profile) is None


def test_gpustat_text_details() -> None:
    (gtx,) = read("gpustat-text-gtx1070-loop.txt", GPUSTAT).gpus
    assert (gtx.temperature_c.value, gtx.utilization_percent.value) == (63, 10)
    assert (gtx.power_draw_watts.value, gtx.power_limit_watts.value) == (39.0, 151.0)
    assert gtx.vram_used_bytes.value == 552 * MIB
    (gt650m,) = read("gpustat-text-gt650m-not-supported.txt", GPUSTAT).gpus
    assert gt650m.utilization_percent.value is None
    assert gt650m.utilization_percent.reason == "gpustat reports ?? for utilization"
    p100 = read("gpustat-text-4x-p100.txt", GPUSTAT).gpus
    assert [g.utilization_percent.value for g in p100] == [0, 0, 0, 2]
    assert p100[0].power_draw_watts.value is None  # printed with -P only


def test_gpustat_fan_and_codec_columns_are_not_the_utilisation() -> None:
    # The -a layout, as gpustat's own tests print it: fan 16 %, GPU 76 %, codec E/D.
    text = (
        "host  Mon Aug 22 15:23:57 2022  515.65.01\n"
        "[0] GeForce GTX TITAN 0 | 80°C,  16 %,  76 % (E:  88 %  D:  67 %),  125 / 250 W |"
        "  8000 / 12287 MB | user1:python/48448(4000M)\n"
    )
    (gpu,) = import_text(text, "a.txt").gpus
    assert (gpu.temperature_c.value, gpu.utilization_percent.value) == (80, 76)
    assert (gpu.power_draw_watts.value, gpu.power_limit_watts.value) == (125.0, 250.0)


def test_gpustat_text_cut_in_a_gpu_line() -> None:
    lines = load("gpustat-text-4x-p100.txt").splitlines()
    text = "\n".join([*lines[:5], "[2] Tesla P100-PCIE-16GB | 28'C,   0 % |   103 / 16"])
    profile = import_text(text, "cut.txt")
    assert len(profile.gpus) == 2
    assert truncated(profile) == "the line of GPU 2 is cut off"
    assert profile.nvml.device_count.value is None


@pytest.mark.parametrize("marker", ['"enforced.power.limit": 350', '"gpus": ['])
def test_gpustat_json_cut_off(marker: str) -> None:
    whole = load("gpustat-json-2x-rtx3090-constructed.json")
    text = whole[: whole.index(marker) + len(marker)]
    profile = import_text(text, "cut.json")
    assert "JSON ends unclosed" in str(truncated(profile))
    assert [g.name.value for g in profile.gpus] == (
        ["NVIDIA GeForce RTX 3090"] if marker.startswith('"enforced') else []
    )
    assert profile.nvml.device_count.value is None
    assert profile.host.hostname.value == "train-box"


def test_gpustat_json_with_a_zone_is_converted() -> None:
    whole = json.loads(load("gpustat-json-2x-rtx3090-constructed.json"))
    whole["query_time"] = "2024-03-05T09:12:44.518823+02:00"
    profile = import_text(json.dumps(whole), "zoned.json")
    assert profile.created_utc == "2024-03-05T07:12:44Z"
    assert "local time" not in message(profile)


def test_a_paste_with_gpustat_and_the_nvidia_smi_table_is_read_as_the_table() -> None:
    text = load("gpustat-text-4x-p100.txt") + "\n" + load("smi-table-550-tesla-p4.txt")
    assert detect_format(text) == "nvidia-smi table"


# --------------------------------------------------------------------------------------------
# /proc/cpuinfo: Arm


@pytest.mark.parametrize(
    ("name", "model", "logical", "isa", "cut", "fpc"),
    [
        ("proc-cpuinfo-graviton2-t4g-small.txt", "Neoverse-N1", 2, "neon", None, 16),
        ("proc-cpuinfo-agilex5-a76-a55.txt", "Cortex-A55 + Cortex-A76", 4, "asimdhp", None, 16),
        ("proc-cpuinfo-graviton3-head.txt", "Neoverse-V1", None, "sve", "head/grep", 32),
        ("proc-cpuinfo-grace-neoverse-v2-first-cpu.txt", "Neoverse-V2", None, "sve2", None, 32),
        # Only the M1's efficiency cores (Icestorm) are in the paste: no FLOP/cycle figure.
        ("proc-cpuinfo-asahi-m1-cut.txt", "Icestorm-M1", None, "neon", "processor 3", None),
    ],
)
def test_arm_cpuinfo(
    name: str, model: str, logical: int | None, isa: str, cut: str | None, fpc: int | None
) -> None:
    profile = read(name, CPUINFO)
    cpu = profile.cpu
    assert cpu.model_name.value == model and cpu.microarchitecture.value == model
    assert cpu.model_name.source is Source.PROCFS
    assert cpu.architecture.value == "aarch64"
    assert cpu.logical_cores.value == logical
    if logical is None:
        assert cpu.logical_cores.reason  # says why the count is not in the text
    assert cpu.isa_features.value is not None and isa in cpu.isa_features.value
    if cut is None:
        assert truncated(profile) is None
    else:
        assert cut in str(truncated(profile))
    # The core design (as lscpu names it) keys the FLOP/cycle table.
    assert cpu_peak_details(cpu).flops_per_cycle == fpc


def test_arm_vendors_and_big_little() -> None:
    agilex = read("proc-cpuinfo-agilex5-a76-a55.txt", CPUINFO).cpu
    assert agilex.vendor.value == "ARM"
    assert (agilex.performance_cores.value, agilex.efficiency_cores.value) == (2, 2)
    assert agilex.physical_cores.value == 4
    asahi = read("proc-cpuinfo-asahi-m1-cut.txt", CPUINFO).cpu
    assert asahi.vendor.value == "Apple"
    graviton = read("proc-cpuinfo-graviton2-t4g-small.txt", CPUINFO).cpu
    assert graviton.physical_cores.value == 2
    assert graviton.performance_cores.value is None
    assert graviton.sockets.value is None and graviton.virtualized.value is None


# --------------------------------------------------------------------------------------------
# /proc/cpuinfo: x86


def test_hybrid_alder_lake_first_entry() -> None:
    profile = read("proc-cpuinfo-i7-1260p-hybrid-first-cpu.txt", CPUINFO)
    cpu = profile.cpu
    assert cpu.model_name.value == "12th Gen Intel(R) Core(TM) i7-1260P"
    assert (cpu.vendor.value, cpu.microarchitecture.value) == ("Intel", "Alder Lake")
    # siblings 16, cpu cores 12 of a one-socket part: 4 P-cores with two threads, 8 E-cores.
    assert (cpu.sockets.value, cpu.physical_cores.value, cpu.logical_cores.value) == (1, 12, 16)
    assert (cpu.performance_cores.value, cpu.efficiency_cores.value) == (4, 8)
    isa = cpu.isa_features.value or []
    assert "avx_vnni" in isa and "avx2" in isa and "avx512f" not in isa
    assert cpu.virtualized.value is False
    cut = str(truncated(profile))
    assert "processor 0 is cut off" in cut and "1 of the 16 processors" in cut
    assert "input-truncated" in [f.id for f in profile.findings]


@pytest.mark.parametrize(
    ("name", "model", "micro", "counts", "cut"),
    [
        (
            "proc-cpuinfo-i7-8565u-cut-in-cpu1.txt",
            "Intel(R) Core(TM) i7-8565U CPU @ 1.80GHz",
            "Whiskey Lake",
            (1, 4, 8),
            "processor 1 is cut off",
        ),
        (
            "proc-cpuinfo-core-ultra-9-285-first-cpu.txt",
            "Intel(R) Core(TM) Ultra 9 285",
            "Arrow Lake",
            (1, 24, 24),
            "1 of the 24 processors",
        ),
        # Server parts: a cut paste does not say how many packages the machine has.
        (
            "proc-cpuinfo-epyc-9654-first-cpu.txt",
            "AMD EPYC 9654 96-Core Processor",
            "Zen 4",
            (None, None, None),
            "1 of the 96 processors",
        ),
        (
            "proc-cpuinfo-xeon-8480-one-entry.txt",
            "Intel(R) Xeon(R) Platinum 8480+",
            "Sapphire Rapids",
            (None, None, None),
            "first entry: 2",
        ),
        (
            "proc-cpuinfo-xeon-e5-4657l-v2-excerpt.txt",
            "Intel(R) Xeon(R) CPU E5-4657L v2 @ 2.40GHz",
            "Ivy Bridge-EP",
            (None, None, None),
            "first entry: 40",
        ),
    ],
)
def test_x86_cpuinfo(
    name: str, model: str, micro: str, counts: tuple[int | None, ...], cut: str
) -> None:
    profile = read(name, CPUINFO)
    cpu = profile.cpu
    assert cpu.model_name.value == model and cpu.microarchitecture.value == micro
    assert cpu.architecture.value == "x86_64"
    assert (cpu.sockets.value, cpu.physical_cores.value, cpu.logical_cores.value) == counts
    if counts[0] is None:
        assert "package count is unknown" in str(cpu.logical_cores.reason)
    assert cut in str(truncated(profile))


def test_x86_details() -> None:
    whiskey = read("proc-cpuinfo-i7-8565u-cut-in-cpu1.txt", CPUINFO).cpu
    assert whiskey.base_frequency_mhz.value == 1800.0
    assert whiskey.performance_cores.value is None
    arrow = read("proc-cpuinfo-core-ultra-9-285-first-cpu.txt", CPUINFO).cpu
    assert arrow.performance_cores.value is None
    assert "Hyper-Threading" in str(arrow.performance_cores.reason)
    sapphire = read("proc-cpuinfo-xeon-8480-one-entry.txt", CPUINFO).cpu
    assert {"avx512f", "amx_tile", "amx_bf16"} <= set(sapphire.isa_features.value or [])
    epyc = read("proc-cpuinfo-epyc-9654-first-cpu.txt", CPUINFO).cpu
    assert "avx512f" in (epyc.isa_features.value or [])
    # An EPYC "P" model is a one-socket part: its first entry gives the counts.
    text = load("proc-cpuinfo-epyc-9654-first-cpu.txt").replace("EPYC 9654 96", "EPYC 9654P 96")
    one_socket = import_text(text, "p.txt").cpu
    assert (one_socket.sockets.value, one_socket.logical_cores.value) == (1, 96)
    ivy = read("proc-cpuinfo-xeon-e5-4657l-v2-excerpt.txt", CPUINFO).cpu
    # The flags come from the part-entry the paste starts with.
    assert ivy.isa_features.value == ["sse4_2", "avx", "f16c"]
    assert "'physical id' goes up to 3" in str(ivy.sockets.reason)


def _entry(number: int, package: int, core: int, siblings: int, cores: int, model: str) -> str:
    return (
        f"processor\t: {number}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n{model}"
        f"physical id\t: {package}\nsiblings\t: {siblings}\ncore id\t\t: {core}\n"
        f"cpu cores\t: {cores}\nflags\t\t: fpu lm avx avx2 fma hypervisor\n"
        "power management:\n\n"
    )


def test_a_whole_two_socket_paste_is_counted_from_its_entries() -> None:
    model = "model\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\nstepping\t: 4\n"
    entries = [
        _entry(n, package, core, 4, 2, model)
        for n, (package, core) in enumerate(
            (p, c) for _ in range(2) for p in range(2) for c in range(2)
        )
    ]
    profile = import_text("ubuntu@ip-10-0-0-1:~$ cat /proc/cpuinfo\n" + "".join(entries), "x")
    cpu = profile.cpu
    assert (cpu.sockets.value, cpu.physical_cores.value, cpu.logical_cores.value) == (2, 4, 8)
    assert cpu.virtualized.value is True
    assert cpu.microarchitecture.value == "Skylake-SP"
    assert truncated(profile) is None


def test_a_whole_hybrid_paste_counts_threads_per_core() -> None:
    model = "model\t\t: 151\nmodel name\t: 12th Gen Intel(R) Core(TM) i5-1235U\n"
    # Two P-cores with two threads each (core ids 0, 4), two E-cores (8, 9).
    layout = [0, 0, 4, 4, 8, 9]
    text = "".join(_entry(n, 0, core, 6, 4, model) for n, core in enumerate(layout))
    cpu = import_text(text, "x").cpu
    assert (cpu.physical_cores.value, cpu.logical_cores.value) == (4, 6)
    assert (cpu.performance_cores.value, cpu.efficiency_cores.value) == (2, 2)


def test_a_cut_off_last_entry_is_read_not_refused() -> None:
    read_ = parse_proc_cpuinfo_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Int")
    assert read_.profile.cpu.vendor.value == "Intel"
    assert read_.truncated == "the entry of processor 0 is cut off"


def test_no_processor_entry_is_refused() -> None:
    with pytest.raises(ProcCpuinfoError):
        parse_proc_cpuinfo_text("vendor_id\t: GenuineIntel\nflags\t: fpu\n")
    assert detect_format("processor : 0\nsomething : else\n") is None


def test_sniffers_do_not_take_each_others_recordings() -> None:
    from hwadvisor.importers import gpustat, proc_cpuinfo, system_profiler

    for path in sorted(IMPORT.iterdir()):
        if path.suffix not in (".txt", ".json"):
            continue
        sample = Sample(path.read_text(encoding="utf-8"))
        takers = [
            module.FORMAT.name
            for module in (gpustat, proc_cpuinfo, system_profiler)
            if module.FORMAT.sniff(sample)
        ]
        expected = {
            "gpustat-": ["gpustat output"],
            "proc-cpuinfo-": ["/proc/cpuinfo"],
            "system_profiler-": ["system_profiler output"],
        }
        mine = next((v for k, v in expected.items() if path.name.startswith(k)), [])
        assert takers == mine, path.name


def test_old_arm_kernels_print_the_cpu_lines_once_after_the_entries() -> None:
    # The 32-bit layout (a Raspberry Pi 3 on a 32-bit kernel): entries with BogoMIPS only, then
    # Features/CPU part once, then the board's Hardware/Revision/Serial.
    text = (
        "Processor\t: ARMv7 Processor rev 4 (v7l)\nprocessor\t: 0\nBogoMIPS\t: 38.40\n\n"
        "processor\t: 1\nBogoMIPS\t: 38.40\n\n"
        "Features\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt\n"
        "CPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\nCPU part\t: 0xd03\n"
        "CPU revision\t: 4\n\n"
        "Hardware\t: BCM2835\nRevision\t: a02082\nSerial\t\t: 00000000deadbeef\n"
    )
    profile = import_text(text, "pi.txt")
    cpu = profile.cpu
    assert (cpu.model_name.value, cpu.architecture.value) == ("Cortex-A53", "armv7l")
    assert cpu.logical_cores.value == 2
    assert truncated(profile) is None
    assert "deadbeef" not in profile.model_dump_json()


@pytest.mark.parametrize(
    "text",
    [
        "[0] " + "a | " * 16000,
        "[0] " + "|" * 60000,
        "[0] x | " + " " * 60000 + "| 5 / ",
        "processor : 0\nflags : " + " " * 65000 + "x",
        "\n" * 65000,
    ],
)
def test_hostile_long_lines_are_sniffed_in_linear_time(text: str) -> None:
    import time

    from hwadvisor.importers import gpustat, proc_cpuinfo, system_profiler

    sample = Sample(text)
    start = time.perf_counter()
    for module in (gpustat, proc_cpuinfo, system_profiler):
        module.FORMAT.sniff(sample)
    assert time.perf_counter() - start < 1.0
