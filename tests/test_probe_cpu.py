"""probes/cpu.py against recorded /proc/cpuinfo trees and fakes; no real hardware is assumed."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.model.facts import Source
from hwadvisor.probes import cpu as cpu_module
from hwadvisor.probes.cpu import (
    cpuinfo_child,
    needs_cpuinfo,
    parse_proc_cpuinfo,
    probe_cpu,
    read_sysctl,
)
from hwadvisor.probes.roots import Roots

FIXTURES = Path(__file__).parent / "fixtures"
CPU_FIXTURES = FIXTURES / "cpu"

Freq = namedtuple("Freq", "current min max")


class FakePsutil:
    """Just the psutil calls probe_cpu makes, each scriptable."""

    Error = Exception

    def __init__(
        self,
        *,
        logical: int | None = 16,
        physical: int | None = 8,
        freq: Any = None,
        freq_error: BaseException | None = None,
        affinity: list[int] | None = None,
    ) -> None:
        self.logical, self.physical = logical, physical
        self.freq, self.freq_error, self.affinity = freq, freq_error, affinity

    def cpu_count(self, logical: bool = True) -> int | None:
        return self.logical if logical else self.physical

    def cpu_freq(self) -> Any:
        if self.freq_error is not None:
            raise self.freq_error
        return self.freq

    def Process(self) -> Any:  # psutil's name
        affinity = self.affinity

        class _Process:
            def cpu_affinity(self) -> list[int]:
                if affinity is None:
                    raise AttributeError("cpu_affinity")
                return affinity

        return _Process()


def eight() -> set[int]:
    return set(range(8))


def probe_fixture(name: str, **kwargs: Any) -> Any:
    kwargs.setdefault("psutil_module", FakePsutil())
    kwargs.setdefault("affinity", eight)
    kwargs.setdefault("system", "Linux")
    return probe_cpu(Roots.under(CPU_FIXTURES / name), **kwargs)


def write_tree(base: Path, files: dict[str, str]) -> Roots:
    for relative, text in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Roots.under(base)


def x86_cpuinfo(vendor: str, family: int, model: int, stepping: int, flags: str = "fpu lm") -> str:
    return (
        f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        f"model name\t: test part\nstepping\t: {stepping}\nflags\t\t: {flags}\n"
    )


# --------------------------------------------------------------------------------------------
# parse_proc_cpuinfo


def test_parse_splits_processor_blocks() -> None:
    text = (CPU_FIXTURES / "amd-ryzen-4100-hyperv" / "proc" / "cpuinfo").read_text()
    blocks = parse_proc_cpuinfo(text)
    assert len(blocks) == 8
    assert [b["processor"] for b in blocks] == [str(n) for n in range(8)]
    assert blocks[5]["physical id"] == "1"
    assert blocks[0]["model name"] == "AMD Ryzen 3 4100 4-Core Processor"
    # "cache_alignment : 64" uses a space, not a tab, in this recording.
    assert blocks[0]["cache_alignment"] == "64"


def test_parse_keeps_the_machine_block_of_old_arm_kernels() -> None:
    text = (CPU_FIXTURES / "arm-raspberry-pi-model-b" / "proc" / "cpuinfo").read_text()
    blocks = parse_proc_cpuinfo(text)
    assert len(blocks) == 2
    assert blocks[0]["Processor"] == "ARMv6-compatible processor rev 7 (v6l)"
    assert blocks[1]["Hardware"] == "BCM2708"


def test_parse_one_line_per_processor_layout(tmp_path: Path) -> None:
    # Some ARM kernels' layout, as in google/cpu_features test/cpuinfo_aarch64_test.cc.
    text = (
        "Processor   : AArch64 Processor rev 3 (aarch64)\nprocessor   : 0\nprocessor   : 1\n"
        "processor   : 2\nFeatures    : fp asimd evtstrm aes\nCPU implementer : 0x41\n"
        "CPU architecture: AArch64\nCPU part    : 0xd03\n"
    )
    blocks = parse_proc_cpuinfo(text)
    assert [b["processor"] for b in blocks] == ["0", "1", "2"]
    roots = write_tree(tmp_path, {"proc/cpuinfo": text})
    info = probe_cpu(roots, psutil_module=FakePsutil(), affinity=eight, system="Linux")
    assert info.logical_cores.value == 3
    assert info.microarchitecture.value == "Cortex-A53"
    assert info.isa_features.value == ["neon"]
    assert info.architecture.value == "aarch64"


def test_parse_joins_repeated_feature_lines_and_ignores_garbage() -> None:
    blocks = parse_proc_cpuinfo(
        "processor : 0\nFeatures : fp asimd\nFeatures : sve i8mm\nno colon here\n\n\n"
    )
    assert blocks == [{"processor": "0", "Features": "fp asimd sve i8mm"}]
    assert parse_proc_cpuinfo("") == []


# --------------------------------------------------------------------------------------------
# Recorded CPUs


RECORDED = [
    # folder, vendor, model name, microarchitecture, architecture, logical, physical, sockets
    ("amd-epyc-kvm", "AMD", "AMD EPYC", "Zen 4", "x86_64", 2, 2, 1),
    ("amd-ryzen-4100-hyperv", "AMD", "AMD Ryzen 3 4100 4-Core Processor", "Zen 2", "x86_64",
     8, 4, 2),
    ("intel-xeon-6972p-granite-rapids", "Intel", "Intel(R) Xeon(R) 6972P", "Granite Rapids",
     "x86_64", 1, 1, 1),
    ("intel-core-ultra-9-285-arrow-lake", "Intel", "Intel(R) Core(TM) Ultra 9 285", "Arrow Lake",
     "x86_64", 1, 1, 1),
    ("intel-xeon-8259cl-ec2", "Intel", "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz",
     "Cascade Lake", "x86_64", 2, 1, 1),
    ("hygon-c86", "Hygon", "Hygon C86-4G (OPN:5435)", "Zen", None, 1, 1, 1),
    ("arm-graviton2", "ARM", "Neoverse N1", "Neoverse N1", "aarch64", 1, None, None),
    ("arm-neoverse-n2", "ARM", "Neoverse N2", "Neoverse N2", "aarch64", 1, None, None),
    ("arm-ampere-1a", "Ampere", "Ampere-1a", "Ampere-1a", "aarch64", 1, None, None),
    ("arm-cavium-thunderx", "Cavium", "ThunderX", "ThunderX", "aarch64", 6, None, None),
    ("arm-raspberry-pi-model-b", "ARM", "ARM1176", "ARM1176", "armv6l", 1, None, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("folder", "vendor", "model", "uarch", "arch", "logical", "physical", "sockets"), RECORDED
)
def test_recorded_cpus(
    folder: str,
    vendor: str,
    model: str,
    uarch: str,
    arch: str | None,
    logical: int,
    physical: int | None,
    sockets: int | None,
) -> None:
    info = probe_fixture(folder, psutil_module=FakePsutil(physical=None))
    assert info.vendor.value == vendor
    assert info.model_name.value == model
    assert info.microarchitecture.value == uarch
    assert info.microarchitecture.source == Source.PROCFS
    if arch is not None:
        assert info.architecture.value == arch
    assert info.logical_cores.value == logical
    assert info.physical_cores.value == physical
    assert info.sockets.value == sockets
    if physical is None:
        # ARM: no core ids anywhere and psutil says None (giampaolo/psutil#1078).
        assert "returned None" in (info.physical_cores.reason or "")
    if sockets is None:
        assert info.sockets.reason


@pytest.mark.parametrize(
    ("folder", "features"),
    [
        ("amd-epyc-kvm", ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw",
                          "avx512vl", "avx512_vnni", "avx512_bf16"]),
        ("intel-xeon-6972p-granite-rapids", ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f",
                                             "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                                             "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16",
                                             "amx_int8"]),
        ("intel-core-ultra-9-285-arrow-lake", ["sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni"]),
        ("intel-xeon-8259cl-ec2", ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw",
                                   "avx512vl"]),
        ("amd-ryzen-4100-hyperv", ["sse4_2", "avx", "avx2", "fma", "f16c"]),
        ("arm-graviton2", ["neon", "asimdhp"]),
        ("arm-neoverse-n2", ["neon", "asimdhp", "bf16", "i8mm", "sve", "sve2"]),
        ("arm-ampere-1a", ["neon", "asimdhp", "bf16", "i8mm"]),
        ("arm-cavium-thunderx", ["neon"]),
        ("arm-raspberry-pi-model-b", []),
    ],
)  # fmt: skip
def test_isa_features_are_normalised(folder: str, features: list[str]) -> None:
    info = probe_fixture(folder)
    assert info.isa_features.value == features
    assert info.isa_features.source == Source.PROCFS


def test_recorded_epyc_vm_tree_in_full() -> None:
    info = probe_fixture("amd-epyc-kvm", affinity=eight)
    # Caches: one L1d and L2 per core, one L3 shared by both CPUs (counted once).
    assert info.l1d_cache_bytes.value == 2 * 32 * 1024
    assert info.l2_cache_bytes.value == 2 * 1024 * 1024
    assert info.l3_cache_bytes.value == 32 * 1024 * 1024
    assert info.l3_cache_bytes.source == Source.SYSFS
    assert info.numa_nodes.value == 1
    assert info.virtualized.value is True
    assert info.hypervisor.value is None
    assert "does not name itself" in (info.hypervisor.reason or "")
    # cgroup v1 with cpu.cfs_quota_us = -1: no quota; usable = min(logical 2, affinity 8).
    assert info.cgroup_cpu_quota.value is None
    assert info.cgroup_cpu_quota.reason == "no CPU quota (cpu.cfs_quota_us = -1)"
    assert info.usable_cpus.value == 2
    assert info.usable_cpus.source == Source.DERIVED
    assert info.performance_cores.reason == "no hybrid core types exposed"
    assert info.efficiency_cores.value is None
    # No cpufreq in this VM: the "cpu MHz" stands in for the base clock, with a caveat.
    assert info.base_frequency_mhz.value == pytest.approx(2596.148)
    assert info.base_frequency_mhz.source == Source.PROCFS
    assert "not the rated base clock" in (info.base_frequency_mhz.reason or "")
    assert "TSC" in (info.base_frequency_mhz.reason or "")
    assert info.max_frequency_mhz.value is None
    assert "psutil.cpu_freq() returned None" in (info.max_frequency_mhz.reason or "")


def test_every_field_is_a_value_or_has_a_reason_and_a_source() -> None:
    for folder in sorted(p.name for p in CPU_FIXTURES.iterdir() if p.is_dir()):
        info = probe_fixture(folder)
        for name, value in info:
            assert value.source is not None, (folder, name)
            assert value.value is not None or value.reason not in (None, "", "not probed"), (
                folder,
                name,
            )
        json.loads(info.model_dump_json())  # strict JSON


def test_intel_model_name_gives_the_base_clock() -> None:
    info = probe_fixture("intel-xeon-8259cl-ec2")
    assert info.base_frequency_mhz.value == 2500.0
    assert info.base_frequency_mhz.reason is None


def test_procfs_cache_size_fallbacks() -> None:
    # Intel: "cache size" is the L3 of one package; AMD: the L2 of one core.
    intel = probe_fixture("intel-xeon-8259cl-ec2")
    assert intel.l3_cache_bytes.value == 36608 * 1024
    assert intel.l2_cache_bytes.value is None
    assert "py-cpuinfo was not run" in (intel.l2_cache_bytes.reason or "")
    amd = probe_fixture("amd-ryzen-4100-hyperv")
    assert amd.l2_cache_bytes.value == 4 * 512 * 1024


def test_hybrid_cpu_from_sysfs_pmus() -> None:
    info = probe_fixture("intel-core-ultra-9-285-arrow-lake")
    assert info.performance_cores.value == 8
    assert info.efficiency_cores.value == 16
    assert info.performance_cores.source == Source.SYSFS


def test_hybrid_counts_physical_cores_through_thread_siblings(tmp_path: Path) -> None:
    # Alder Lake-like: 8 P-cores with SMT (CPUs 0-15), 8 E-cores without (16-23).
    files = {"sys/devices/cpu_core/cpus": "0-15\n", "sys/devices/cpu_atom/cpus": "16-23\n"}
    for cpu in range(24):
        siblings = f"{cpu & ~1}-{cpu | 1}" if cpu < 16 else str(cpu)
        topo = f"sys/devices/system/cpu/cpu{cpu}/topology"
        files[f"{topo}/thread_siblings_list"] = siblings + "\n"
        files[f"{topo}/physical_package_id"] = "0\n"
    info = probe_cpu(
        write_tree(tmp_path, files),
        psutil_module=FakePsutil(logical=24),
        affinity=eight,
        system="Linux",
    )
    assert (info.performance_cores.value, info.efficiency_cores.value) == (8, 8)
    # No /proc/cpuinfo here: counts come from sysfs and psutil.
    assert info.physical_cores.value == 16
    assert info.physical_cores.source == Source.SYSFS
    assert info.sockets.value == 1
    assert info.logical_cores.value == 24
    assert info.logical_cores.source == Source.PSUTIL


def test_hostile_model_name_is_kept_as_data(tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script> & \"quotes\" 'single'"
    roots = write_tree(
        tmp_path,
        {"proc/cpuinfo": x86_cpuinfo("GenuineIntel", 6, 143, 8).replace("test part", hostile)},
    )
    info = probe_cpu(roots, psutil_module=FakePsutil(), affinity=eight, system="Linux")
    assert info.model_name.value == hostile
    assert json.loads(info.model_dump_json())["model_name"]["value"] == hostile


@pytest.mark.parametrize(
    ("vendor", "family", "model", "stepping", "expected"),
    [
        ("GenuineIntel", 6, 143, 8, "Sapphire Rapids"),
        ("GenuineIntel", 6, 207, 2, "Emerald Rapids"),
        ("GenuineIntel", 6, 173, 1, "Granite Rapids"),
        ("GenuineIntel", 6, 85, 4, "Skylake-SP"),
        ("GenuineIntel", 6, 85, 7, "Cascade Lake"),
        ("GenuineIntel", 6, 85, 11, "Cooper Lake"),
        ("GenuineIntel", 6, 106, 6, "Ice Lake-SP"),
        ("GenuineIntel", 6, 151, 2, "Alder Lake"),
        ("GenuineIntel", 6, 183, 1, "Raptor Lake"),
        ("GenuineIntel", 6, 170, 4, "Meteor Lake"),
        ("GenuineIntel", 6, 158, 10, "Coffee Lake"),
        ("GenuineIntel", 6, 142, 11, "Whiskey Lake"),
        ("AuthenticAMD", 23, 1, 2, "Zen"),
        ("AuthenticAMD", 23, 8, 2, "Zen+"),
        ("AuthenticAMD", 23, 49, 0, "Zen 2"),
        ("AuthenticAMD", 25, 1, 1, "Zen 3"),
        ("AuthenticAMD", 25, 68, 1, "Zen 3+"),
        ("AuthenticAMD", 25, 97, 2, "Zen 4"),
        ("AuthenticAMD", 25, 160, 2, "Zen 4"),
        ("AuthenticAMD", 26, 2, 1, "Zen 5"),
        ("AuthenticAMD", 26, 68, 0, "Zen 5"),
    ],
)
def test_x86_microarchitecture_table(
    tmp_path: Path, vendor: str, family: int, model: int, stepping: int, expected: str
) -> None:
    roots = write_tree(tmp_path, {"proc/cpuinfo": x86_cpuinfo(vendor, family, model, stepping)})
    info = probe_cpu(roots, psutil_module=FakePsutil(), affinity=eight, system="Linux")
    assert info.microarchitecture.value == expected


def test_unknown_x86_model_says_which(tmp_path: Path) -> None:
    roots = write_tree(tmp_path, {"proc/cpuinfo": x86_cpuinfo("GenuineIntel", 6, 250, 0)})
    info = probe_cpu(roots, psutil_module=FakePsutil(), affinity=eight, system="Linux")
    assert info.microarchitecture.value is None
    assert "model 250 (0xfa)" in (info.microarchitecture.reason or "")


def test_arm_big_little_and_unknown_parts(tmp_path: Path) -> None:
    block = "processor\t: {n}\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: {p}\n"
    text = "\n".join(block.format(n=n, p="0xd05" if n < 4 else "0xd0b") for n in range(8))
    roots = write_tree(tmp_path / "bl", {"proc/cpuinfo": text})
    info = probe_cpu(roots, psutil_module=FakePsutil(), affinity=eight, system="Linux")
    assert info.microarchitecture.value == "Cortex-A55 + Cortex-A76"
    unknown_part = block.format(n=0, p="0xfff").replace("0x41", "0x99")
    roots = write_tree(tmp_path / "unknown", {"proc/cpuinfo": unknown_part})
    info = probe_cpu(roots, psutil_module=FakePsutil(), affinity=eight, system="Linux")
    assert info.microarchitecture.value is None
    assert "0xfff" in (info.microarchitecture.reason or "")
    assert info.model_name.value is None
    assert "not in the table" in (info.model_name.reason or "")
    assert info.vendor.value == "implementer 0x99"


def test_sysfs_cpufreq_and_dmi_hypervisor(tmp_path: Path) -> None:
    flags = "fpu lm sse4_2 avx hypervisor"
    roots = write_tree(
        tmp_path,
        {
            "proc/cpuinfo": x86_cpuinfo("GenuineIntel", 6, 143, 8, flags),
            "sys/devices/system/cpu/cpufreq/policy0/base_frequency": "2100000\n",
            "sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq": "3800000\n",
            "sys/devices/system/cpu/cpufreq/policy1/cpuinfo_max_freq": "3900000\n",
            "sys/class/dmi/id/sys_vendor": "Amazon EC2\n",
            "sys/class/dmi/id/product_name": "m7i.large\n",
        },
    )
    info = probe_cpu(roots, psutil_module=FakePsutil(), affinity=eight, system="Linux")
    assert info.base_frequency_mhz.value == 2100.0
    assert info.max_frequency_mhz.value == 3900.0
    assert info.max_frequency_mhz.source == Source.SYSFS
    assert info.virtualized.value is True
    assert info.hypervisor.value == "Amazon EC2"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"sys/class/dmi/id/sys_vendor": "QEMU", "sys/class/dmi/id/product_name": "Standard PC"},
         "QEMU"),
        ({"sys/class/dmi/id/sys_vendor": "Microsoft Corporation",
          "sys/class/dmi/id/product_name": "Virtual Machine"}, "Microsoft Hyper-V"),
        ({"sys/class/dmi/id/sys_vendor": "VMware, Inc."}, "VMware"),
        ({"sys/class/dmi/id/sys_vendor": "Google",
          "sys/class/dmi/id/product_name": "Google Compute Engine"}, "Google Compute Engine"),
        ({"sys/class/dmi/id/sys_vendor": "Red Hat", "sys/class/dmi/id/product_name": "KVM"},
         "KVM"),
        ({"sys/hypervisor/type": "xen"}, "Xen"),
    ],
)  # fmt: skip
def test_hypervisor_names(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    files = {**files, "proc/cpuinfo": x86_cpuinfo("GenuineIntel", 6, 85, 7, "fpu lm hypervisor")}
    info = probe_cpu(
        write_tree(tmp_path, files), psutil_module=FakePsutil(), affinity=eight, system="Linux"
    )
    assert info.hypervisor.value == expected


def test_bare_metal_is_not_virtualized(tmp_path: Path) -> None:
    files = {
        "proc/cpuinfo": x86_cpuinfo("AuthenticAMD", 25, 97, 2, "fpu lm avx2"),
        "sys/class/dmi/id/sys_vendor": "Micro-Star International Co., Ltd.",
    }
    info = probe_cpu(
        write_tree(tmp_path, files), psutil_module=FakePsutil(), affinity=eight, system="Linux"
    )
    assert info.virtualized.value is False
    assert info.hypervisor.reason == "not virtualized"
    assert "TSC" not in (info.base_frequency_mhz.reason or "")


# --------------------------------------------------------------------------------------------
# cgroup quota and usable CPUs


def cgroup_roots(name: str) -> Roots:
    return Roots.under(FIXTURES / "cgroup" / name)


def test_cgroup_quota_limits_usable_cpus() -> None:
    info = probe_cpu(
        cgroup_roots("v2-quota-2cpu"),
        psutil_module=FakePsutil(logical=16),
        affinity=eight,
        system="Linux",
    )
    assert info.logical_cores.value == 16
    assert info.affinity_cpus.value == 8
    assert info.cgroup_cpu_quota.value == 2.0
    assert info.cgroup_cpu_quota.source == Source.CGROUP
    assert info.usable_cpus.value == 2


def test_no_quota_means_usable_is_min_of_logical_and_affinity() -> None:
    info = probe_cpu(
        cgroup_roots("v2-max"), psutil_module=FakePsutil(logical=16), affinity=eight, system="Linux"
    )
    assert info.cgroup_cpu_quota.value is None
    assert info.cgroup_cpu_quota.reason == "no CPU quota (cpu.max = max)"
    assert info.usable_cpus.value == 8


def test_fractional_quota_rounds_up() -> None:
    info = probe_cpu(
        cgroup_roots("v1-quota"),
        psutil_module=FakePsutil(logical=16),
        affinity=eight,
        system="Linux",
    )
    assert info.cgroup_cpu_quota.value == 1.5
    assert info.usable_cpus.value == 2


def test_affinity_defaults_to_the_live_process() -> None:
    info = probe_fixture("amd-epyc-kvm", affinity=None)
    getaffinity = getattr(__import__("os"), "sched_getaffinity", None)
    if getaffinity is None:
        pytest.skip("no sched_getaffinity here")
    assert info.affinity_cpus.value == len(getaffinity(0))


def test_affinity_failure_is_a_reason() -> None:
    def broken() -> set[int]:
        raise OSError("EINVAL")

    info = probe_fixture("amd-epyc-kvm", affinity=broken)
    assert info.affinity_cpus.value is None
    assert "EINVAL" in (info.affinity_cpus.reason or "")
    assert info.usable_cpus.value == 2  # still min(logical) from procfs


# --------------------------------------------------------------------------------------------
# psutil and py-cpuinfo in trouble


@pytest.mark.parametrize(
    ("fake", "expected"),
    [
        (FakePsutil(freq=None), "psutil.cpu_freq() returned None"),
        (FakePsutil(freq_error=FileNotFoundError("no cpufreq")), "psutil.cpu_freq() failed"),
        (FakePsutil(freq_error=NotImplementedError("arm64")), "psutil.cpu_freq() failed"),
        (FakePsutil(freq=Freq(2400.0, 0.0, 0.0)), "reports no maximum"),
    ],
)
def test_psutil_cpu_freq_none_or_raising(fake: FakePsutil, expected: str) -> None:
    info = probe_fixture("arm-graviton2", psutil_module=fake)
    assert info.max_frequency_mhz.value is None
    assert expected in (info.max_frequency_mhz.reason or "")


def test_psutil_max_clock_is_used_when_sysfs_is_silent() -> None:
    info = probe_fixture("arm-graviton2", psutil_module=FakePsutil(freq=Freq(2500.0, 0.0, 2500.0)))
    assert info.max_frequency_mhz.value == 2500.0
    assert info.max_frequency_mhz.source == Source.PSUTIL


def test_psutil_physical_count_none_on_linux_without_topology() -> None:
    info = probe_fixture("arm-cavium-thunderx", psutil_module=FakePsutil(physical=None))
    assert info.physical_cores.value is None
    assert "cpu_count(logical=False) returned None" in (info.physical_cores.reason or "")
    info = probe_fixture("arm-cavium-thunderx", psutil_module=FakePsutil(physical=48))
    assert info.physical_cores.value == 48
    assert info.physical_cores.source == Source.PSUTIL


def empty_roots(tmp_path: Path) -> Roots:
    return Roots.under(tmp_path)


@pytest.mark.parametrize("system", ["Windows", "Linux"])
def test_empty_cpuinfo_dict_does_not_crash(tmp_path: Path, system: str) -> None:
    info = probe_cpu(
        empty_roots(tmp_path),
        cpuinfo_raw={},
        psutil_module=FakePsutil(),
        affinity=eight,
        system=system,
    )
    assert info.vendor.value is None
    assert "py-cpuinfo reported no vendor_id_raw" in (info.vendor.reason or "")
    assert info.model_name.value is None
    assert "brand_raw" in (info.model_name.reason or "")
    assert info.isa_features.value is None
    assert "py-cpuinfo reported no flags" in (info.isa_features.reason or "")
    assert info.logical_cores.value == 16
    assert info.physical_cores.value == 8
    assert info.physical_cores.source == Source.PSUTIL
    json.loads(info.model_dump_json())


def test_arm_cpuinfo_dict_without_brand_raw(tmp_path: Path) -> None:
    # The shape py-cpuinfo returns on aarch64 (workhorsy/py-cpuinfo tests/test_linux_aarch64_64.py):
    # no brand_raw, no vendor, no family/model (oracle/hiq#28: KeyError 'brand_raw').
    raw = {
        "arch": "ARM_8",
        "bits": 64,
        "count": 6,
        "arch_string_raw": "aarch64",
        "l1_data_cache_size": 32 * 1024,
        "l2_cache_size": 16384 * 1024,
        "flags": ["aes", "asimd", "atomics", "crc32", "evtstrm", "fp", "pmull", "sha1", "sha2"],
    }
    info = probe_cpu(
        empty_roots(tmp_path),
        cpuinfo_raw=raw,
        psutil_module=FakePsutil(physical=None),
        affinity=eight,
        system="Linux",
    )
    assert info.model_name.value is None
    assert "brand_raw" in (info.model_name.reason or "")
    assert info.microarchitecture.value is None
    assert info.isa_features.value == ["neon"]
    assert info.isa_features.source == Source.CPUINFO
    assert info.l1d_cache_bytes.value == 32 * 1024
    assert info.l1d_cache_bytes.source == Source.CPUINFO
    assert "may be one instance" in (info.l1d_cache_bytes.reason or "")
    assert info.l3_cache_bytes.value is None


def test_cpuinfo_timeout_is_the_reason(tmp_path: Path) -> None:
    info = probe_cpu(
        empty_roots(tmp_path),
        cpuinfo_error="timeout",
        psutil_module=FakePsutil(freq=Freq(3000.0, 0.0, 3600.0)),
        affinity=eight,
        system="Windows",
    )
    for field in (info.vendor, info.model_name, info.isa_features, info.l2_cache_bytes):
        assert field.value is None
        assert "timeout" in (field.reason or "")
    # What psutil knows is still there.
    assert info.logical_cores.value == 16
    assert info.base_frequency_mhz.value == 3600.0  # Windows: psutil's max is the rated clock
    assert info.max_frequency_mhz.value is None
    assert info.cgroup_cpu_quota.value is None
    assert "Linux only" in (info.cgroup_cpu_quota.reason or "")
    assert info.numa_nodes.value is None


def test_windows_from_cpuinfo_dict(tmp_path: Path) -> None:
    # Keys and value shapes as py-cpuinfo 9 returns them on Windows.
    raw = {
        "vendor_id_raw": "GenuineIntel",
        "brand_raw": "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz",
        "hz_advertised": [3192000000, 0],
        "family": 6,
        "model": 158,
        "stepping": 10,
        "flags": ["avx", "avx2", "fma", "f16c", "sse4_2", "hypervisor"],
        "l2_cache_size": 1572864,
        "l3_cache_size": 12582912,
    }
    info = probe_cpu(
        empty_roots(tmp_path),
        cpuinfo_raw=raw,
        psutil_module=FakePsutil(),
        affinity=eight,
        system="Windows",
    )
    assert info.vendor.value == "Intel"
    assert info.vendor.source == Source.CPUINFO
    assert info.model_name.value == "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz"
    assert info.microarchitecture.value == "Coffee Lake"
    assert info.microarchitecture.source == Source.CPUINFO
    assert info.isa_features.value == ["sse4_2", "avx", "avx2", "fma", "f16c"]
    assert info.base_frequency_mhz.value == 3200.0
    assert info.l3_cache_bytes.value == 12582912
    assert info.virtualized.value is True
    assert info.virtualized.source == Source.CPUINFO
    assert info.sockets.value is None
    assert info.performance_cores.reason == "no hybrid core types exposed"


# --------------------------------------------------------------------------------------------
# macOS through sysctl


DARWIN_SYSCTL = {
    "hw.nperflevels": "2",
    "hw.perflevel0.physicalcpu": "8",
    "hw.perflevel1.physicalcpu": "4",
    "hw.perflevel0.l1dcachesize": "131072",
    "hw.perflevel1.l1dcachesize": "65536",
    "hw.perflevel0.l2cachesize": "16777216",
    "hw.perflevel0.cpusperl2": "4",
    "hw.perflevel1.l2cachesize": "4194304",
    "hw.perflevel1.cpusperl2": "4",
    "hw.physicalcpu": "12",
    "hw.logicalcpu": "12",
    "hw.packages": "1",
    "hw.optional.arm64": "1",
    "hw.optional.neon": "1",
    "hw.optional.arm.FEAT_FP16": "1",
    "hw.optional.arm.FEAT_BF16": "1",
    "hw.optional.arm.FEAT_I8MM": "1",
    "hw.optional.arm.FEAT_SME": "0",
    "machdep.cpu.brand_string": "Apple M3 Pro",
    "kern.hv_vmm_present": "0",
}


def test_darwin_uses_sysctl(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[tuple[str, ...]] = []

    def fake_sysctl(*names: str, timeout: float = 2.0) -> dict[str, str]:
        calls.append(names)
        return DARWIN_SYSCTL

    monkeypatch.setattr(cpu_module, "read_sysctl", fake_sysctl)
    info = probe_cpu(
        empty_roots(tmp_path),
        cpuinfo_error="timeout",  # Rosetta: py-cpuinfo hangs
        psutil_module=FakePsutil(),
        affinity=eight,
        system="Darwin",
    )
    assert calls
    assert info.model_name.value == "Apple M3 Pro"
    assert info.model_name.source == Source.SYSCTL
    assert info.vendor.value == "Apple"
    assert info.microarchitecture.value == "Apple M3"
    assert info.architecture.value == "aarch64"
    assert (info.performance_cores.value, info.efficiency_cores.value) == (8, 4)
    assert info.performance_cores.source == Source.SYSCTL
    assert info.physical_cores.value == 12
    assert info.sockets.value == 1
    assert info.isa_features.value == ["neon", "asimdhp", "bf16", "i8mm"]
    assert info.l1d_cache_bytes.value == 8 * 131072 + 4 * 65536
    assert info.l2_cache_bytes.value == 2 * 16777216 + 1 * 4194304
    assert info.virtualized.value is False


def test_sysctl_only_on_darwin(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*names: str, timeout: float = 2.0) -> dict[str, str]:
        raise AssertionError("sysctl must not run on Linux")

    monkeypatch.setattr(cpu_module, "read_sysctl", forbidden)
    assert probe_fixture("amd-epyc-kvm").vendor.value == "AMD"


@pytest.mark.parametrize(
    "error",
    [
        FileNotFoundError("sysctl"),
        subprocess.TimeoutExpired("sysctl", 2.0),
        PermissionError("denied"),
    ],
)
def test_read_sysctl_guards_its_subprocess(
    monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    def run(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(subprocess, "run", run)
    assert read_sysctl("hw") == {}


def test_read_sysctl_parses_partial_output(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(*args: Any, **kwargs: Any) -> Any:
        assert kwargs["timeout"] <= 5
        out = b"hw.perflevel0.physicalcpu: 8\nmachdep.cpu.brand_string: Apple M1\n"
        return subprocess.CompletedProcess(args, 1, out, b"unknown oid 'hw.perflevel1'")

    monkeypatch.setattr(subprocess, "run", run)
    assert read_sysctl("hw.perflevel0.physicalcpu", "hw.perflevel1.physicalcpu") == {
        "hw.perflevel0.physicalcpu": "8",
        "machdep.cpu.brand_string": "Apple M1",
    }


# --------------------------------------------------------------------------------------------
# needs_cpuinfo and cpuinfo_child


@pytest.mark.parametrize(
    "folder",
    ["amd-epyc-kvm", "intel-xeon-6972p-granite-rapids", "arm-graviton2", "arm-cavium-thunderx",
     "arm-raspberry-pi-model-b"],
)  # fmt: skip
def test_procfs_is_enough(folder: str) -> None:
    assert needs_cpuinfo(Roots.under(CPU_FIXTURES / folder), system="Linux") is False


def test_needs_cpuinfo_when_procfs_falls_short(tmp_path: Path) -> None:
    assert needs_cpuinfo(Roots.under(tmp_path), system="Linux") is True  # no /proc/cpuinfo
    assert needs_cpuinfo(Roots.under(CPU_FIXTURES / "amd-epyc-kvm"), system="Darwin") is True
    no_flags = write_tree(tmp_path / "a", {"proc/cpuinfo": "processor : 0\nmodel name : X\n"})
    assert needs_cpuinfo(no_flags, system="Linux") is True
    arm_no_part = write_tree(tmp_path / "b", {"proc/cpuinfo": "processor : 0\nFeatures : fp\n"})
    assert needs_cpuinfo(arm_no_part, system="Linux") is True


def test_cpuinfo_child_returns_json_safe_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("cpuinfo")
    fake.get_cpu_info = lambda: {  # type: ignore[attr-defined]
        "brand_raw": "<b>x</b>",
        "hz_actual": (2400000000, 0),
        "odd": math.nan,
        "nested": {"k": (1, 2)},
        "obj": object,
    }
    monkeypatch.setitem(sys.modules, "cpuinfo", fake)
    result = cpuinfo_child()
    assert result["brand_raw"] == "<b>x</b>"
    assert result["hz_actual"] == [2400000000, 0]
    assert result["odd"] is None
    assert result["nested"] == {"k": [1, 2]}
    json.dumps(result, allow_nan=False)


def test_cpu_module_does_not_import_cpuinfo_at_import_time() -> None:
    source = Path(cpu_module.__file__).read_text()
    top_level = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not any("cpuinfo" in line.split()[1] for line in top_level)
