"""Driver findings that need no torch: the driver against each GPU's architecture and against
what current framework builds need, over a grid of (GPU × driver × torch), and their way into
the fleet (ids and severities in the profile's findings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.catalog.drivers import driver_tuple, load_driver_catalog
from hwadvisor.catalog.peaks import CatalogError
from hwadvisor.model.facts import Source, fact, unknown
from hwadvisor.model.profile import (
    Finding,
    Frameworks,
    GpuInfo,
    NvmlInfo,
    NvmlStatus,
    Profile,
    ToolInfo,
    TorchInfo,
)
from hwadvisor.readiness import assess

GPU_RULE = "nvidia-driver-too-old-for-gpu"
FLOOR_RULE = "cuda-driver-too-old-for-frameworks"
TORCH_RULE = "cuda-driver-too-old"

#: (name, compute capability, NVML architecture, the oldest driver written out here by hand,
#: independently of drivers.toml, so that a wrong edit of the data file fails the grid).
GPUS = [
    ("Tesla T4", "7.5", "Turing", (410, 48)),
    ("NVIDIA A100-SXM4-80GB", "8.0", "Ampere", (450, 51, 5)),
    ("NVIDIA L4", "8.9", "Ada Lovelace", (520, 61, 5)),
    ("NVIDIA H100 80GB HBM3", "9.0", "Hopper", (520, 61, 5)),
    ("NVIDIA B200", "10.0", "Blackwell", (570, 133, 20)),
    ("NVIDIA GeForce RTX 5090", "12.0", "Blackwell", (570,)),
]

#: (driver, the CUDA version NVML reports for it).
DRIVERS = [
    ("470.182.03", "11.4"),
    ("515.105.01", "11.7"),
    ("520.61.05", "11.8"),
    ("525.147.05", "12.0"),
    ("535.183.01", "12.2"),
    ("570.124.06", "12.8"),
    ("570.133.20", "12.8"),
    ("580.65.06", "13.0"),
]

#: None: torch not installed; else the CUDA version of the installed build.
TORCHES = [None, "11.8", "12.6"]


def T(value: Any) -> Any:
    return fact(value, Source.TORCH)


def torch_info(runtime: str | None) -> TorchInfo:
    if runtime is None:
        return TorchInfo(
            installed=False,
            version=unknown("torch is not installed", Source.TORCH),
            build=unknown("torch is not installed", Source.TORCH),
        )
    return TorchInfo(
        installed=True,
        version=T(f"2.5.1+cu{runtime.replace('.', '')}"),
        build=T("cuda"),
        cuda_runtime_version=T(runtime),
        cuda_available=T(True),
        device_count=T(1),
        arch_list=T(["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]),
    )


def gpu(name: str, cc: str | None, arch: str | None, lost: bool = False) -> GpuInfo:
    return GpuInfo(
        index=0,
        vendor="nvidia",
        backend="cuda",
        name=fact(name, Source.NVML),
        compute_capability=fact(cc, Source.NVML, "not supported"),
        architecture=fact(arch, Source.NVML, "not supported"),
        pci_bus_id=fact("00000000:17:00.0", Source.NVML),
        lost=lost,
    )


def nvml(driver: str | None, cuda: str | None) -> NvmlInfo:
    return NvmlInfo(
        status=NvmlStatus.OK,
        driver_version=fact(driver, Source.NVML, "not supported"),
        cuda_driver_version=fact(cuda, Source.NVML, "not supported"),
        device_count=fact(1, Source.NVML),
    )


def profile(gpus: list[GpuInfo], info: NvmlInfo, torch: TorchInfo | None = None) -> Profile:
    return Profile(
        tool=ToolInfo(version="t"),
        created_utc="2026-01-01T00:00:00Z",
        gpus=gpus,
        nvml=info,
        frameworks=Frameworks(torch=torch or torch_info(None)),
    )


def findings(p: Profile) -> dict[str, Finding]:
    found = assess(p)
    ids = [f.id for f in found]
    assert len(ids) == len(set(ids)), ids
    return {f.id: f for f in found}


def _cuda(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


# --------------------------------------------------------------------------------------------
# The grid


@pytest.mark.parametrize("runtime", TORCHES, ids=lambda r: f"torch-{r or 'absent'}")
@pytest.mark.parametrize(("driver", "cuda"), DRIVERS, ids=[d for d, _ in DRIVERS])
@pytest.mark.parametrize(("name", "cc", "arch", "oldest"), GPUS, ids=[g[1] for g in GPUS])
def test_driver_findings_over_gpu_driver_and_torch(
    name: str,
    cc: str,
    arch: str,
    oldest: tuple[int, ...],
    driver: str,
    cuda: str,
    runtime: str | None,
) -> None:
    found = findings(profile([gpu(name, cc, arch)], nvml(driver, cuda), torch_info(runtime)))
    version = driver_tuple(driver)
    assert version is not None
    too_old_for_gpu = version < oldest
    below_floor = _cuda(cuda) < (12, 0)
    torch_too_new = runtime is not None and _cuda(runtime)[0] > _cuda(cuda)[0]

    assert (GPU_RULE in found) is too_old_for_gpu
    assert (TORCH_RULE in found) is torch_too_new
    # One cause, one finding: the framework warning only where neither the GPU rule nor the
    # torch rule already says the driver is too old.
    assert (FLOOR_RULE in found) is (below_floor and not too_old_for_gpu and not torch_too_new)
    if too_old_for_gpu:
        finding = found[GPU_RULE]
        assert finding.severity == "error"
        assert f"NVIDIA driver {driver} is too old" in finding.title
        assert f"{arch} (compute capability {cc})" in finding.detail
        # The fix names a driver that runs both the GPU and current frameworks.
        fixed = max(oldest, (525, 60, 13))
        assert f"install NVIDIA driver {'.'.join(map(str, fixed))} or newer" in finding.fix
    if FLOOR_RULE in found:
        finding = found[FLOOR_RULE]
        assert finding.severity == "warning"
        assert finding.title == (
            f"No current PyTorch, JAX or TensorFlow build runs on driver {driver} (CUDA {cuda})"
        )
        assert "525.60.13" in finding.fix
        # True whether or not torch is installed: it never says torch is missing or present
        # unless it is.
        assert ("The torch installed here" in finding.detail) is (runtime is not None)
    # The invariant the fleet needs: an old driver never goes unsaid, torch or no torch.
    if below_floor or too_old_for_gpu:
        severities = {found[i].severity for i in (GPU_RULE, FLOOR_RULE, TORCH_RULE) if i in found}
        assert severities & {"error", "warning"}
    else:
        assert not {GPU_RULE, FLOOR_RULE} & found.keys()


def test_old_driver_host_without_torch_is_still_flagged() -> None:
    """The Kubernetes case of issue 24: no torch in the image, driver 470 on an A100."""
    p = profile([gpu("NVIDIA A100-SXM4-80GB", "8.0", "Ampere")], nvml("470.182.03", "11.4"))
    found = findings(p)
    assert "torch-not-installed" in found
    finding = found[FLOOR_RULE]
    assert finding.title == (
        "No current PyTorch, JAX or TensorFlow build runs on driver 470.182.03 (CUDA 11.4)"
    )
    assert "supports CUDA up to 11.4" in finding.detail
    assert "need CUDA 12.0 or newer (driver 525.60.13 or newer): PyTorch 2.8" in finding.detail
    assert "(as of 2025-10-15)" in finding.detail


def test_an_old_torch_that_runs_is_said_to_run() -> None:
    p = profile(
        [gpu("NVIDIA A100-SXM4-80GB", "8.0", "Ampere")],
        nvml("470.182.03", "11.4"),
        torch_info("11.3"),
    )
    found = findings(p)
    assert TORCH_RULE not in found and "cuda-minor-version-compat" not in found
    assert "The torch installed here (2.5.1+cu113) runs on it, but no current release does." in (
        found[FLOOR_RULE].detail
    )


def test_architecture_name_alone_judges_a_gpu_without_compute_capability() -> None:
    p = profile([gpu("NVIDIA B200", None, "Blackwell")], nvml("565.57.01", "12.7"))
    finding = findings(p)[GPU_RULE]
    # The lowest Blackwell entry: a driver that cannot run any Blackwell GPU.
    assert "Blackwell (compute capability 12.0), first supported by driver 570" in finding.detail
    ok = profile([gpu("NVIDIA B200", None, "Blackwell")], nvml("570.86.10", "12.8"))
    assert GPU_RULE not in findings(ok)


@pytest.mark.parametrize(
    ("cc", "arch"),
    [("8.7", "Ampere"), ("11.0", "Blackwell"), ("6.1", "Pascal"), (None, None), (None, "Rubin")],
)
def test_gpus_not_in_the_table_are_not_judged(cc: str | None, arch: str | None) -> None:
    """Jetson (8.7, 11.0), pre-Volta and unknown GPUs: nothing to compare with."""
    p = profile([gpu("some GPU", cc, arch)], nvml("525.147.05", "12.0"))
    assert GPU_RULE not in findings(p)


def test_a_lost_gpu_is_not_judged() -> None:
    p = profile([gpu("NVIDIA B200", "10.0", "Blackwell", lost=True)], nvml("560.35.03", "12.6"))
    assert GPU_RULE not in findings(p)


def test_without_nvml_cuda_version_the_branch_says_it() -> None:
    """An imported nvidia-smi table may give the driver but not its CUDA version."""
    p = profile([gpu("Tesla T4", "7.5", "Turing")], nvml("470.256.02", None))
    finding = findings(p)[FLOOR_RULE]
    assert "driver 470.256.02 (CUDA 11.4)" in finding.title
    assert "up to 11.4 (known from its branch: NVML did not say)." in finding.detail
    p = profile([gpu("Tesla T4", "7.5", "Turing")], nvml("535.183.01", None))
    assert FLOOR_RULE not in findings(p)


@pytest.mark.parametrize(("driver", "cuda"), [(None, None), ("garbage", None), (None, "11.4")])
def test_unknown_or_unreadable_driver_facts_say_little(
    driver: str | None, cuda: str | None
) -> None:
    found = findings(profile([gpu("Tesla T4", "7.5", "Turing")], nvml(driver, cuda)))
    assert GPU_RULE not in found
    # NVML's CUDA version alone is enough for the framework floor.
    assert (FLOOR_RULE in found) is (cuda is not None)


def test_no_nvidia_gpu_no_driver_findings() -> None:
    p = profile([], nvml("470.182.03", "11.4"))
    assert not {GPU_RULE, FLOOR_RULE} & findings(p).keys()


# --------------------------------------------------------------------------------------------
# Into the fleet


def test_the_fleet_reads_the_ids_and_severities(tmp_path: Path) -> None:
    from hwadvisor.fleet.rows import flatten
    from hwadvisor.render.jsonio import to_json

    hosts = {
        "no-torch": profile([gpu("Tesla T4", "7.5", "Turing")], nvml("470.1", "11.4")),
        "old-for-gpu": profile([gpu("NVIDIA B200", "10.0", "Blackwell")], nvml("550.1", "12.4")),
    }
    seen = {}
    for name, p in hosts.items():
        p.findings = assess(p)
        doc = json.loads(to_json(p))
        seen[name] = {(f["id"], f["severity"]) for f in flatten(doc, "scan").findings}
    assert (FLOOR_RULE, "warning") in seen["no-torch"]
    assert (GPU_RULE, "error") in seen["old-for-gpu"]


# --------------------------------------------------------------------------------------------
# The data


def test_the_packaged_tables_have_sources_and_dates() -> None:
    catalog = load_driver_catalog()
    assert {m.architecture for m in catalog.gpu_minimums.values()} >= {
        "Volta",
        "Turing",
        "Ampere",
        "Ada Lovelace",
        "Hopper",
        "Blackwell",
    }
    assert all(m.source and driver_tuple(m.driver) for m in catalog.gpu_minimums.values())
    assert [f.framework for f in catalog.floors] == ["PyTorch", "JAX", "TensorFlow"]
    assert all(f.source and f.checked for f in catalog.floors)
    # Each floor's driver is the oldest of its CUDA major in the branch table.
    for floor in catalog.floors:
        assert driver_tuple(floor.driver)[0] == catalog.branches[floor.cuda]  # type: ignore[index]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('driver = "384.81"', 'driver = "R384"', "must be a driver version such as"),
        ('driver = "384.81"', "driver = 384", "must be a driver version such as"),
        ('checked = "2025-10-15"', 'checked = "Oct 2025"', "must be a date such as"),
        ('cuda = "12.0"', 'cuda = "12"', 'must be a CUDA release such as "12.8"'),
        ('architecture = "Volta"', 'arch = "Volta"', "unknown key"),
    ],
)
def test_a_bad_entry_names_its_key(tmp_path: Path, old: str, new: str, expected: str) -> None:
    from hwadvisor.catalog.toml import packaged_text

    text = packaged_text("drivers.toml")
    assert old in text
    path = tmp_path / "drivers.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(CatalogError) as caught:
        load_driver_catalog(path)
    assert expected in str(caught.value)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("470.182.03", (470, 182, 3)),
        ("570", (570,)),
        (" 535.54.03 ", (535, 54, 3)),
        ("560.35.03-beta", (560, 35)),
        ("", None),
        (None, None),
        ("r570", None),
    ],
)
def test_driver_tuple(text: str | None, parsed: tuple[int, ...] | None) -> None:
    assert driver_tuple(text) == parsed
