"""Readiness findings: each rule fires on the facts that should trigger it, and only on those."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import (
    CpuInfo,
    Finding,
    Frameworks,
    GpuInfo,
    MigInstance,
    NvmlInfo,
    NvmlStatus,
    PciDevice,
    PlatformInfo,
    Profile,
    Severity,
    ToolInfo,
    TorchDevice,
    TorchInfo,
)
from hwadvisor.readiness import assess

CUDA_ARCHS = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]


# --------------------------------------------------------------------------------------------
# Builders for minimal profiles


def T(value: Any) -> Fact[Any]:
    return fact(value, Source.TORCH)


def make(
    *,
    torch: TorchInfo | None = None,
    gpus: list[GpuInfo] | None = None,
    nvml: NvmlInfo | None = None,
    platform: PlatformInfo | None = None,
    cpu: CpuInfo | None = None,
) -> Profile:
    return Profile(
        tool=ToolInfo(version="t"),
        created_utc="2026-01-01T00:00:00Z",
        frameworks=Frameworks(torch=torch or TorchInfo()),
        gpus=gpus or [],
        nvml=nvml or NvmlInfo(),
        platform=platform or PlatformInfo(),
        cpu=cpu or CpuInfo(),
    )


def torch_cpu(**extra: Any) -> TorchInfo:
    values: dict[str, Any] = dict(
        installed=True,
        version=T("2.5.1+cpu"),
        build=T("cpu"),
        cuda_available=T(False),
        device_count=T(0),
        arch_list=T([]),
        mps_built=T(False),
        mps_available=T(False),
        xpu_available=T(False),
        num_threads=T(8),
    )
    return TorchInfo(**{**values, **extra})


def torch_cuda(runtime: str = "12.4", count: int = 1, **extra: Any) -> TorchInfo:
    values: dict[str, Any] = dict(
        installed=True,
        version=T(f"2.5.1+cu{runtime.replace('.', '')}"),
        build=T("cuda"),
        cuda_runtime_version=T(runtime),
        cuda_available=T(count > 0),
        device_count=T(count),
        arch_list=T(CUDA_ARCHS),
        mps_built=T(False),
        mps_available=T(False),
        xpu_available=T(False),
        num_threads=T(8),
        devices=[TorchDevice(index=i, compute_capability=T("8.9")) for i in range(count)],
    )
    return TorchInfo(**{**values, **extra})


def torch_rocm(arch: str = "gfx90a:sramecc+:xnack-", **extra: Any) -> TorchInfo:
    values: dict[str, Any] = dict(
        installed=True,
        version=T("2.5.1+rocm6.2"),
        build=T("rocm"),
        hip_version=T("6.2.41133"),
        cuda_available=T(True),
        device_count=T(1),
        arch_list=T(["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"]),
        devices=[TorchDevice(index=0, name=T("AMD Instinct MI210"), architecture=T(arch))],
    )
    return TorchInfo(**{**values, **extra})


def nvidia(index: int = 0, cc: str = "8.9", **extra: Any) -> GpuInfo:
    values: dict[str, Any] = dict(
        index=index,
        vendor="nvidia",
        backend="cuda",
        name=fact("NVIDIA GeForce RTX 4090", Source.NVML),
        compute_capability=fact(cc, Source.NVML),
        pci_bus_id=fact(f"00000000:{0x17 + index:02X}:00.0", Source.NVML),
    )
    return GpuInfo(**{**values, **extra})


def amd(index: int = 0, arch: str = "gfx90a") -> GpuInfo:
    return GpuInfo(
        index=index,
        vendor="amd",
        backend="rocm",
        name=fact("AMD Instinct MI210", Source.AMDSMI),
        architecture=fact(arch, Source.AMDSMI),
    )


def nvml_ok(cuda: str = "12.4", count: int = 1) -> NvmlInfo:
    return NvmlInfo(
        status=NvmlStatus.OK,
        driver_version=fact("550.54.14", Source.NVML),
        cuda_driver_version=fact(cuda, Source.NVML),
        device_count=fact(count, Source.NVML),
    )


def nvml_failed(status: NvmlStatus, message: str = "NVML failed") -> NvmlInfo:
    return NvmlInfo(status=status, message=message)


def platform(**extra: Any) -> PlatformInfo:
    values: dict[str, Any] = dict(nvidia_device_nodes=fact([], Source.DEVFS))
    return PlatformInfo(**{**values, **extra})


def with_dev_nodes() -> PlatformInfo:
    return platform(nvidia_device_nodes=fact(["nvidia0", "nvidiactl"], Source.DEVFS))


def nvidia_on_pci() -> PlatformInfo:
    pci = PciDevice(bus_id="0000:17:00.0", vendor="nvidia", vendor_id="0x10de", device_id="0x2684")
    return platform(pci_display_devices=[pci])


def by_id(profile: Profile) -> dict[str, Finding]:
    findings = assess(profile)
    ids = [f.id for f in findings]
    assert len(ids) == len(set(ids)), f"duplicate ids: {ids}"
    return {f.id: f for f in findings}


def sev(finding: Finding) -> Severity:
    return Severity(finding.severity)


# --------------------------------------------------------------------------------------------
# The empty profile and unknown facts


def test_profile_with_nothing_known_has_no_findings() -> None:
    assert assess(make()) == []


def test_unknown_facts_on_a_gpu_and_torch_trigger_nothing() -> None:
    profile = make(
        torch=TorchInfo(installed=True),
        gpus=[GpuInfo(index=0, vendor="nvidia", backend="cuda")],
        cpu=CpuInfo(usable_cpus=unknown("no cgroup")),
    )
    assert assess(profile) == []


# --------------------------------------------------------------------------------------------
# PyTorch builds


@pytest.mark.parametrize(
    "evidence",
    [
        {"gpus": [nvidia()], "nvml": nvml_ok()},
        {"platform": with_dev_nodes()},
        {"platform": nvidia_on_pci()},
    ],
    ids=["nvml", "dev-nodes", "pci"],
)
def test_cpu_only_torch_on_nvidia_machine(evidence: dict[str, Any]) -> None:
    finding = by_id(make(torch=torch_cpu(), **evidence))["torch-cpu-only"]
    assert sev(finding) is Severity.ERROR
    assert "/dev//" not in finding.detail
    assert finding.title == "CPU-only PyTorch installed"
    assert "2.5.1+cpu" in finding.detail


def test_cpu_only_fix_names_the_drivers_cuda() -> None:
    finding = by_id(make(torch=torch_cpu(), gpus=[nvidia()], nvml=nvml_ok("12.4")))[
        "torch-cpu-only"
    ]
    assert "CUDA 12.4" in finding.fix
    assert "Get started" in finding.fix


def test_cpu_only_torch_without_nvidia_is_fine() -> None:
    assert "torch-cpu-only" not in by_id(make(torch=torch_cpu(), platform=platform()))
    assert "torch-cpu-only" not in by_id(make(torch=torch_cuda(), gpus=[nvidia()], nvml=nvml_ok()))


def test_torch_not_installed() -> None:
    missing = TorchInfo(installed=False, version=unknown("torch is not installed", Source.TORCH))
    finding = by_id(make(torch=missing))["torch-not-installed"]
    assert sev(finding) is Severity.WARNING
    # A torch probe that never ran is not "not installed".
    assert "torch-not-installed" not in by_id(make(torch=TorchInfo()))


def test_torch_not_installed_fix_fits_the_hardware() -> None:
    missing = TorchInfo(installed=False, version=unknown("torch is not installed", Source.TORCH))
    assert (
        "CUDA build"
        in by_id(make(torch=missing, platform=with_dev_nodes()))["torch-not-installed"].fix
    )
    assert "ROCm build" in by_id(make(torch=missing, gpus=[amd()]))["torch-not-installed"].fix


def test_torch_import_failed() -> None:
    broken = TorchInfo(
        installed=True,
        import_error="OSError: libcudnn.so.9: cannot open shared object file",
        version=fact("2.5.1+cu124", Source.ENV),
    )
    findings = by_id(make(torch=broken, platform=with_dev_nodes()))
    assert sev(findings["torch-import-failed"]) is Severity.ERROR
    assert "libcudnn.so.9" in findings["torch-import-failed"].detail
    assert "torch-not-installed" not in findings
    assert "torch-import-failed" not in by_id(make(torch=torch_cpu()))


def test_amd_gpu_with_cuda_torch() -> None:
    finding = by_id(make(torch=torch_cpu(), gpus=[amd()]))["torch-not-rocm-build"]
    assert sev(finding) is Severity.WARNING
    assert "torch-not-rocm-build" not in by_id(make(torch=torch_rocm(), gpus=[amd()]))


def test_rocm_build_with_amd_gpu_is_info() -> None:
    finding = by_id(make(torch=torch_rocm(), gpus=[amd()]))["rocm-gpus"]
    assert sev(finding) is Severity.INFO
    assert finding.title == "ROCm PyTorch with 1 AMD GPU(s)"
    assert "rocm-gpus" not in by_id(make(torch=torch_cpu(), gpus=[amd()]))


# --------------------------------------------------------------------------------------------
# Driver against CUDA runtime


def test_driver_too_old_for_torch_cuda_major() -> None:
    profile = make(torch=torch_cuda("12.4"), gpus=[nvidia()], nvml=nvml_ok("11.8"))
    finding = by_id(profile)["cuda-driver-too-old"]
    assert sev(finding) is Severity.ERROR
    assert finding.title == "NVIDIA driver too old for CUDA 12.4"
    assert "driver 550 or newer" in finding.fix
    assert "CUDA 11.8 or older" in finding.fix


def test_driver_older_minor_is_a_warning() -> None:
    profile = make(torch=torch_cuda("12.4"), gpus=[nvidia()], nvml=nvml_ok("12.2"))
    findings = by_id(profile)
    assert sev(findings["cuda-minor-version-compat"]) is Severity.WARNING
    assert "PTX" in findings["cuda-minor-version-compat"].detail
    assert "cuda-driver-too-old" not in findings


@pytest.mark.parametrize("driver", ["12.4", "12.6", "13.0"])
def test_driver_new_enough(driver: str) -> None:
    findings = by_id(make(torch=torch_cuda("12.4"), gpus=[nvidia()], nvml=nvml_ok(driver)))
    assert "cuda-driver-too-old" not in findings
    assert "cuda-minor-version-compat" not in findings


def test_driver_version_unknown_triggers_nothing() -> None:
    nvml = NvmlInfo(status=NvmlStatus.OK, cuda_driver_version=unknown("not supported"))
    findings = by_id(make(torch=torch_cuda("12.4"), gpus=[nvidia()], nvml=nvml))
    assert "cuda-driver-too-old" not in findings
    assert "cuda-minor-version-compat" not in findings


def test_is_available_warning_is_an_error_quoting_it() -> None:
    warning = "CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up"
    torch = torch_cuda(count=0, cuda_warnings=[warning])
    finding = by_id(make(torch=torch, gpus=[nvidia()], nvml=nvml_ok()))["torch-cuda-init-failed"]
    assert sev(finding) is Severity.ERROR
    assert warning in finding.detail
    assert "nvidia_uvm" in finding.fix


def test_too_old_warning_not_repeated_when_versions_say_it() -> None:
    warning = "The NVIDIA driver on your system is too old (found version 11080)."
    torch = torch_cuda("12.4", count=0, cuda_warnings=[warning])
    findings = by_id(make(torch=torch, gpus=[nvidia()], nvml=nvml_ok("11.8")))
    assert "cuda-driver-too-old" in findings
    assert "torch-cuda-init-failed" not in findings
    # Without NVML's version, the warning is the only clue: then it is reported.
    findings = by_id(make(torch=torch, platform=with_dev_nodes()))
    assert "update the NVIDIA driver" in findings["torch-cuda-init-failed"].fix


def test_cuda_build_that_cannot_see_the_gpu() -> None:
    torch = torch_cuda(count=0)
    finding = by_id(make(torch=torch, gpus=[nvidia()], nvml=nvml_ok()))["torch-cuda-unavailable"]
    assert sev(finding) is Severity.ERROR
    assert "torch-cuda-unavailable" not in by_id(
        make(torch=torch_cuda(), gpus=[nvidia()], nvml=nvml_ok())
    )


# --------------------------------------------------------------------------------------------
# Compute capability


def test_new_gpu_missing_from_arch_list() -> None:
    profile = make(torch=torch_cuda(devices=[]), gpus=[nvidia(cc="12.0")], nvml=nvml_ok())
    finding = by_id(profile)["gpu-arch-unsupported"]
    assert sev(finding) is Severity.ERROR
    assert "sm_120" in finding.detail
    assert "sm_90" in finding.detail


@pytest.mark.parametrize(
    ("cc", "archs"),
    [
        ("8.9", CUDA_ARCHS),  # sm_86 binaries run on 8.9: same major, later minor
        ("9.0", ["sm_80", "sm_90a"]),  # arch-specific binary for exactly this GPU
        ("8.0", ["sm_80"]),
    ],
)
def test_supported_capabilities(cc: str, archs: list[str]) -> None:
    profile = make(
        torch=torch_cuda(devices=[], arch_list=T(archs)), gpus=[nvidia(cc=cc)], nvml=nvml_ok()
    )
    findings = by_id(profile)
    assert "gpu-arch-unsupported" not in findings
    assert "gpu-arch-ptx-jit" not in findings


@pytest.mark.parametrize(
    ("cc", "archs"),
    [
        ("10.0", ["sm_90a"]),  # another major version
        ("10.3", ["sm_100a"]),  # arch-specific ("a") binaries run on exactly one capability
        ("8.0", ["sm_86"]),  # a binary for a later minor version does not run on an earlier one
        ("8.7", ["sm_80", "sm_86"]),  # Jetson Orin: only its own binaries run
    ],
)
def test_binary_that_does_not_cover_the_gpu(cc: str, archs: list[str]) -> None:
    profile = make(
        torch=torch_cuda(devices=[], arch_list=T(archs)), gpus=[nvidia(cc=cc)], nvml=nvml_ok()
    )
    assert "gpu-arch-unsupported" in by_id(profile)


def test_ptx_only_is_a_jit_warning() -> None:
    profile = make(
        torch=torch_cuda(devices=[], arch_list=T(["sm_75", "sm_80", "compute_80"])),
        gpus=[nvidia(cc="9.0")],
        nvml=nvml_ok(),
    )
    findings = by_id(profile)
    assert sev(findings["gpu-arch-ptx-jit"]) is Severity.WARNING
    assert "gpu-arch-unsupported" not in findings


def test_capability_from_torch_when_nvml_has_none() -> None:
    torch = torch_cuda(
        devices=[TorchDevice(index=0, name=T("Blackwell"), compute_capability=T("12.0"))]
    )
    assert "gpu-arch-unsupported" in by_id(make(torch=torch, platform=with_dev_nodes()))


def test_rocm_gfx_target_missing() -> None:
    profile = make(torch=torch_rocm(arch="gfx1201"), gpus=[amd(arch="gfx1201")])
    finding = by_id(profile)["gpu-arch-unsupported"]
    assert "gfx1201" in finding.fix
    assert "gpu-arch-unsupported" not in by_id(make(torch=torch_rocm(), gpus=[amd()]))


# --------------------------------------------------------------------------------------------
# Visibility, NVML, GPU health


@pytest.mark.parametrize("value", ["", "-1", " "])
def test_cuda_visible_devices_hides_all(value: str) -> None:
    profile = make(
        torch=torch_cuda(count=0),
        gpus=[nvidia()],
        nvml=nvml_ok(),
        platform=platform(visibility_env={"CUDA_VISIBLE_DEVICES": value}),
    )
    findings = by_id(profile)
    assert sev(findings["gpus-hidden-by-env"]) is Severity.WARNING
    assert "CUDA_VISIBLE_DEVICES" in findings["gpus-hidden-by-env"].fix
    assert "torch-cuda-unavailable" not in findings  # the variable explains it


def test_cuda_visible_devices_hides_some() -> None:
    profile = make(
        torch=torch_cuda(count=1),
        gpus=[nvidia(0), nvidia(1)],
        nvml=nvml_ok(count=2),
        platform=platform(visibility_env={"CUDA_VISIBLE_DEVICES": "0"}),
    )
    assert by_id(profile)["gpus-hidden-by-env"].title == "PyTorch sees 1 of 2 GPUs"


@pytest.mark.parametrize("env", [{}, {"CUDA_VISIBLE_DEVICES": "0,1"}])
def test_visibility_not_restricted(env: dict[str, str]) -> None:
    profile = make(
        torch=torch_cuda(count=2),
        gpus=[nvidia(0), nvidia(1)],
        nvml=nvml_ok(count=2),
        platform=platform(visibility_env=env),
    )
    assert "gpus-hidden-by-env" not in by_id(profile)


def test_visibility_ignores_cpu_torch_counts() -> None:
    profile = make(
        torch=torch_cpu(),
        gpus=[nvidia(0)],
        nvml=nvml_ok(),
        platform=platform(visibility_env={"CUDA_VISIBLE_DEVICES": "0"}),
    )
    assert "gpus-hidden-by-env" not in by_id(profile)


@pytest.mark.parametrize(
    ("status", "fix_part"),
    [
        (NvmlStatus.DRIVER_NOT_LOADED, "modprobe nvidia"),
        (NvmlStatus.LIBRARY_NOT_FOUND, "install the NVIDIA driver"),
        (NvmlStatus.VERSION_MISMATCH, "reboot"),
        (NvmlStatus.NO_PERMISSION, "/dev/nvidia"),
        (NvmlStatus.NOT_INSTALLED, "nvidia-ml-py"),
        (NvmlStatus.ERROR, "nvidia-smi"),
    ],
)
def test_nvml_failure_with_nvidia_hardware(status: NvmlStatus, fix_part: str) -> None:
    profile = make(nvml=nvml_failed(status, "the probe's message"), platform=with_dev_nodes())
    finding = by_id(profile)["nvml-unavailable"]
    assert sev(finding) is Severity.ERROR
    assert fix_part in finding.fix
    assert "the probe's message" in finding.detail
    assert "/dev/nvidia0" in finding.detail


@pytest.mark.parametrize(
    ("message", "fix"),
    [
        (
            "NVIDIA driver not loaded: load the nvidia kernel module (or reboot), or run on a "
            "GPU machine; continuing without NVIDIA GPUs",
            "load the nvidia kernel module (or reboot), or run on a GPU machine",
        ),
        (
            "NVML failed to start (NVMLError_Unknown: Unknown Error): check that `nvidia-smi` "
            "works; continuing without NVIDIA GPUs",
            "check that `nvidia-smi` works",
        ),
    ],
)
def test_nvml_failure_fix_comes_from_the_probes_message(message: str, fix: str) -> None:
    profile = make(nvml=nvml_failed(NvmlStatus.ERROR, message), platform=with_dev_nodes())
    assert by_id(profile)["nvml-unavailable"].fix == fix


def test_nvml_failure_message_without_a_fix_uses_the_status_fix() -> None:
    message = "NVML probe failed (ChildCrashed: killed by signal 11); continuing without it"
    profile = make(nvml=nvml_failed(NvmlStatus.ERROR, message), platform=with_dev_nodes())
    finding = by_id(profile)["nvml-unavailable"]
    assert finding.fix.startswith("run `nvidia-smi`")
    assert "killed by signal 11" in finding.detail


def test_nvml_missing_without_nvidia_hardware_is_normal() -> None:
    profile = make(nvml=nvml_failed(NvmlStatus.LIBRARY_NOT_FOUND), platform=platform())
    assert "nvml-unavailable" not in by_id(profile)


def test_nvml_missing_with_cuda_visible_devices_set() -> None:
    profile = make(
        nvml=nvml_failed(NvmlStatus.LIBRARY_NOT_FOUND),
        platform=platform(visibility_env={"CUDA_VISIBLE_DEVICES": "0"}),
    )
    assert "CUDA_VISIBLE_DEVICES" in by_id(profile)["nvml-unavailable"].detail


def test_nvml_timeout_is_driver_not_responding() -> None:
    finding = by_id(make(nvml=nvml_failed(NvmlStatus.TIMEOUT, "did not finish")))[
        "nvidia-driver-not-responding"
    ]
    assert sev(finding) is Severity.ERROR
    assert finding.title == "NVIDIA driver not responding"
    assert "nvidia-driver-not-responding" not in by_id(make(nvml=nvml_ok(), gpus=[nvidia()]))


def test_lost_gpu() -> None:
    profile = make(nvml=nvml_ok(count=2), gpus=[nvidia(0), nvidia(1, lost=True)])
    finding = by_id(profile)["gpu-lost"]
    assert sev(finding) is Severity.ERROR
    assert "GPU 1 at 00000000:18:00.0" in finding.detail
    assert "gpu-lost" not in by_id(make(nvml=nvml_ok(), gpus=[nvidia()]))


def test_pcie_link_narrower_than_max() -> None:
    gpu = nvidia(pcie_width=fact(8, Source.NVML), pcie_width_max=fact(16, Source.NVML))
    finding = by_id(make(nvml=nvml_ok(), gpus=[gpu]))["pcie-link-narrow"]
    assert sev(finding) is Severity.WARNING
    assert "x8 of x16" in finding.detail


def test_pcie_generation_below_max_at_idle_is_normal() -> None:
    gpu = nvidia(
        pcie_width=fact(16, Source.NVML),
        pcie_width_max=fact(16, Source.NVML),
        pcie_generation=fact(1, Source.NVML),
        pcie_generation_max=fact(4, Source.NVML),
    )
    assert "pcie-link-narrow" not in by_id(make(nvml=nvml_ok(), gpus=[gpu]))


def test_mig_enabled_is_info() -> None:
    gpu = nvidia(mig_enabled=fact(True, Source.NVML), mig_instances=[MigInstance(index=0)])
    finding = by_id(make(nvml=nvml_ok(), gpus=[gpu]))["mig-enabled"]
    assert sev(finding) is Severity.INFO
    assert "1 instance" in finding.detail
    off = nvidia(mig_enabled=fact(False, Source.NVML))
    assert "mig-enabled" not in by_id(make(nvml=nvml_ok(), gpus=[off]))


# --------------------------------------------------------------------------------------------
# Apple, CPU, no GPU


def test_mps_built_but_unavailable() -> None:
    torch = torch_cpu(mps_built=T(True), mps_available=T(False))
    finding = by_id(make(torch=torch))["mps-unavailable"]
    assert sev(finding) is Severity.WARNING
    assert "12.3" in finding.fix and "arm64" in finding.fix
    ready = torch_cpu(mps_built=T(True), mps_available=T(True))
    assert "mps-unavailable" not in by_id(make(torch=ready))


def test_python_under_rosetta() -> None:
    finding = by_id(make(platform=platform(rosetta=fact(True, Source.SYSCTL))))[
        "python-under-rosetta"
    ]
    assert sev(finding) is Severity.WARNING
    assert finding.fix == "install an arm64 (native) Python"
    assert "python-under-rosetta" not in by_id(
        make(platform=platform(rosetta=fact(False, Source.SYSCTL)))
    )


def _cpu(usable: int, logical: int = 16) -> CpuInfo:
    return CpuInfo(
        usable_cpus=fact(usable, Source.DERIVED),
        logical_cores=fact(logical, Source.PSUTIL),
        cgroup_cpu_quota=fact(float(usable), Source.CGROUP),
    )


def test_cpu_quota_below_host_cores() -> None:
    finding = by_id(make(cpu=_cpu(4), torch=torch_cpu(num_threads=T(4))))["cpu-limited"]
    assert sev(finding) is Severity.INFO
    assert finding.title == "4 of 16 CPUs usable"
    assert "set torch threads and DataLoader workers to 4" in finding.fix


def test_cpu_quota_with_torch_oversubscribing_is_a_warning() -> None:
    finding = by_id(make(cpu=_cpu(4), torch=torch_cpu(num_threads=T(16))))["cpu-limited"]
    assert sev(finding) is Severity.WARNING
    assert "16 threads" in finding.detail


def test_all_cpus_usable() -> None:
    assert "cpu-limited" not in by_id(make(cpu=_cpu(16)))


def test_no_gpu_at_all() -> None:
    finding = by_id(make(torch=torch_cpu(), platform=platform()))["no-gpu"]
    assert sev(finding) is Severity.INFO
    assert finding.title == "No GPU: fine for classical ML and small models"
    assert "scenario" not in finding.title.lower()  # plain words, not the engine's numbering
    assert "advise --workload" in finding.fix  # the way to find out, not "see the advice"


@pytest.mark.parametrize(
    "extra",
    [
        {"platform": with_dev_nodes()},
        {"gpus": [amd()]},
        {"torch": torch_cpu(mps_available=T(True), mps_built=T(True))},
        {"torch": torch_cuda(), "platform": platform()},
    ],
    ids=["dev-nodes", "amd", "mps", "torch-devices"],
)
def test_no_gpu_not_said_when_there_is_one(extra: dict[str, Any]) -> None:
    values: dict[str, Any] = {"torch": torch_cpu(), "platform": platform(), **extra}
    assert "no-gpu" not in by_id(make(**values))


# --------------------------------------------------------------------------------------------
# Order, form, and robustness


def _rich_profile() -> Profile:
    """A machine with many problems at once."""
    return make(
        torch=torch_cuda(
            "12.4",
            count=1,
            cuda_warnings=["CUDA initialization: CUDA unknown error"],
            mps_built=T(True),
        ),
        gpus=[
            nvidia(
                0,
                cc="12.0",
                pcie_width=fact(4, Source.NVML),
                pcie_width_max=fact(16, Source.NVML),
                mig_enabled=fact(True, Source.NVML),
            ),
            nvidia(1, lost=True),
        ],
        nvml=nvml_ok("12.2", count=2),
        platform=platform(
            visibility_env={"CUDA_VISIBLE_DEVICES": "0"}, rosetta=fact(True, Source.SYSCTL)
        ),
        cpu=_cpu(4),
    )


def test_order_is_severity_then_id() -> None:
    findings = assess(_rich_profile())
    assert len(findings) >= 6
    rank = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    keys = [(rank[sev(f)], f.id) for f in findings]
    assert keys == sorted(keys)
    assert sev(findings[0]) is Severity.ERROR
    assert sev(findings[-1]) is Severity.INFO
    assert assess(_rich_profile()) == findings  # deterministic


_REGISTRY = re.compile(r"pypi|download\.pytorch|https?://|conda|anaconda", re.IGNORECASE)


def test_findings_are_well_formed() -> None:
    profiles = [
        _rich_profile(),
        make(torch=torch_cpu(), gpus=[nvidia()], nvml=nvml_ok()),
        make(torch=torch_rocm(arch="gfx1201"), gpus=[amd(arch="gfx1201")]),
        make(nvml=nvml_failed(NvmlStatus.DRIVER_NOT_LOADED), platform=with_dev_nodes()),
        make(torch=torch_cpu(), platform=platform()),
        make(**_cuda_build_no_gpu()),
    ]
    for profile in profiles:
        for finding in assess(profile):
            assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", finding.id), finding.id
            assert finding.title and finding.detail and finding.fix
            assert "\n" not in finding.fix, finding.id
            assert not _REGISTRY.search(finding.fix), finding.fix


def _fact_paths(model: BaseModel, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, Fact):
            yield (*path, name)
        elif isinstance(value, BaseModel):
            yield from _fact_paths(value, (*path, name))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _fact_paths(item, (*path, name, i))


def _blank(profile: Profile, path: tuple[Any, ...]) -> Profile:
    copy = profile.model_copy(deep=True)
    target: Any = copy
    for step in path[:-1]:
        target = target[step] if isinstance(step, int) else getattr(target, step)
    setattr(target, path[-1], unknown("blanked by the test"))
    return copy


def test_any_single_unknown_fact_never_crashes() -> None:
    profile = _rich_profile()
    paths = list(_fact_paths(profile))
    assert len(paths) > 50
    for path in paths:
        for finding in assess(_blank(profile, path)):
            assert isinstance(finding, Finding)


# --------------------------------------------------------------------------------------------
# A CUDA build of torch where there is no NVIDIA GPU: GBs of unused CUDA libraries


def _cuda_build_no_gpu(**extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "torch": torch_cuda("12.8", count=0),
        "nvml": nvml_failed(NvmlStatus.LIBRARY_NOT_FOUND, "libnvidia-ml.so.1 not found"),
        "platform": platform(),
    }
    return {**values, **extra}


@pytest.mark.parametrize(
    "nvml",
    [
        nvml_failed(NvmlStatus.LIBRARY_NOT_FOUND, "libnvidia-ml.so.1 not found"),
        nvml_failed(NvmlStatus.DRIVER_NOT_LOADED, "Driver Not Loaded"),
        nvml_ok(count=0),
    ],
    ids=["no-library", "no-driver", "no-devices"],
)
def test_cuda_build_without_nvidia_gpu(nvml: NvmlInfo) -> None:
    findings = by_id(make(**_cuda_build_no_gpu(nvml=nvml)))
    finding = findings["torch-cuda-without-gpu"]
    assert sev(finding) is Severity.INFO
    assert "CUDA build" in finding.title and "without an NVIDIA GPU" in finding.title
    assert "2.5.1+cu128" in finding.detail and "CUDA 12.8" in finding.detail
    assert "GB" in finding.detail and "never used" in finding.detail
    assert "CPU build" in finding.fix and "pip uninstall torch" in finding.fix
    assert "'Get started' selector" in finding.fix
    assert "no-gpu" in findings  # both true: no GPU, and the CUDA libraries are dead weight


@pytest.mark.parametrize(
    "extra",
    [
        {"torch": torch_cpu()},  # the CPU build: nothing to say
        {"torch": torch_rocm(device_count=T(0))},
        {"torch": TorchInfo(installed=False, version=unknown("not installed"))},
        {"torch": torch_cuda("12.8", count=1)},  # torch sees a GPU
        {"gpus": [nvidia()], "nvml": nvml_ok()},  # NVML sees one
        {"platform": with_dev_nodes()},  # the driver is loaded
        {"platform": nvidia_on_pci()},  # a GPU on the bus, its driver unloaded
        {"gpus": [amd()]},  # another GPU: other findings
        {"nvml": nvml_failed(NvmlStatus.TIMEOUT)},  # NVML could not answer
        {"nvml": nvml_failed(NvmlStatus.NO_PERMISSION)},
        {"nvml": NvmlInfo()},  # NVML not probed
        {"platform": PlatformInfo()},  # /dev not looked at
    ],
    ids=[
        "cpu-build",
        "rocm-build",
        "no-torch",
        "torch-sees-gpu",
        "nvml-sees-gpu",
        "dev-nodes",
        "nvidia-on-pci",
        "amd-gpu",
        "nvml-timeout",
        "nvml-no-permission",
        "nvml-not-probed",
        "dev-not-probed",
    ],
)
def test_cuda_build_finding_only_where_no_nvidia_gpu_can_be(extra: dict[str, Any]) -> None:
    assert "torch-cuda-without-gpu" not in by_id(make(**_cuda_build_no_gpu(**extra)))


def test_cuda_build_finding_with_a_broken_torch_import_is_not_said() -> None:
    broken = torch_cuda("12.8", count=0, import_error="libcudart.so.12: cannot open")
    assert "torch-cuda-without-gpu" not in by_id(make(**_cuda_build_no_gpu(torch=broken)))
