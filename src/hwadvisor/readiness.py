"""Readiness: what stands between this machine and deep-learning work, each with a one-line fix.

:func:`assess` is pure: it reads a :class:`~hwadvisor.model.profile.Profile` and returns findings
in a stable order (errors first, then warnings, then info; by id within a severity). A fact that
is unknown (``value: null``) never triggers a rule: findings are about what was seen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

from hwadvisor.model.facts import Source
from hwadvisor.model.profile import (
    Finding,
    GpuInfo,
    NvmlStatus,
    Profile,
    Severity,
    TorchInfo,
)

if TYPE_CHECKING:
    from hwadvisor.catalog.drivers import FrameworkFloor, GpuMinimum

Rule = Callable[[Profile], list[Finding]]

_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}

#: Said instead of an install command: the right command depends on OS, package manager and CUDA.
_SELECTOR = "PyTorch's 'Get started' selector gives the command"

#: Jetson (integrated) compute capabilities: binaries for them run nowhere else, and vice versa.
_INTEGRATED_CC = {53, 62, 72, 87}

_VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")

_MAX_QUOTE = 300


def assess(profile: Profile) -> list[Finding]:
    """Every readiness finding for ``profile``, most severe first, then by id."""
    findings = [finding for rule in _RULES for finding in rule(profile)]
    return sorted(findings, key=lambda f: (_RANK[Severity(f.severity)], f.id))


# --------------------------------------------------------------------------------------------
# Helpers: small readings of the profile, each None-safe


def _finding(
    finding_id: str, severity: Severity, title: str, detail: str, fix: str
) -> list[Finding]:
    return [Finding(id=finding_id, severity=severity, title=title, detail=detail, fix=fix)]


def _major_minor(text: str | None) -> tuple[int, int] | None:
    match = re.match(r"\s*(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _cc_int(text: str | None) -> int | None:
    """Compute capability "8.9" → 89, "12.0" → 120 (torch's arch-list numbering)."""
    parsed = _major_minor(text)
    return parsed[0] * 10 + parsed[1] if parsed else None


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_QUOTE else flat[: _MAX_QUOTE - 3] + "..."


def _torch(profile: Profile) -> TorchInfo:
    return profile.frameworks.torch


def _torch_probed(torch: TorchInfo) -> bool:
    # A TorchInfo nobody filled in has no source on its facts; "not installed" needs a probe.
    return torch.installed or torch.version.source is not None


def _build(profile: Profile) -> str | None:
    torch = _torch(profile)
    return torch.build.value if torch.installed and torch.import_error is None else None


def _nvidia_gpus(profile: Profile) -> list[GpuInfo]:
    return [gpu for gpu in profile.gpus if gpu.vendor == "nvidia"]


def _amd_gpus(profile: Profile) -> list[GpuInfo]:
    return [gpu for gpu in profile.gpus if gpu.vendor == "amd"]


def _gpu_label(gpu: GpuInfo) -> str:
    name = gpu.name.value or "unknown model"
    return f"GPU {gpu.index} ({name})"


def _nvidia_evidence(profile: Profile) -> list[str]:
    """Signs of NVIDIA hardware that do not depend on NVML working."""
    evidence = []
    gpus = _nvidia_gpus(profile)
    if gpus:
        evidence.append(f"NVML reports {len(gpus)} NVIDIA GPU(s)")
    nodes = profile.platform.nvidia_device_nodes.value
    if nodes:
        shown = [node if node.startswith("/") else f"/dev/{node}" for node in sorted(nodes)[:4]]
        evidence.append(f"NVIDIA device nodes exist ({', '.join(shown)})")
    pci = [dev.bus_id for dev in profile.platform.pci_display_devices if dev.vendor == "nvidia"]
    if pci:
        evidence.append(f"NVIDIA device(s) on the PCI bus at {', '.join(sorted(pci))}")
    return evidence


def _cuda_visible_hides_all(profile: Profile) -> list[str]:
    env = profile.platform.visibility_env
    return [var for var in _VISIBILITY_VARS if var in env and env[var].strip() in ("", "-1")]


def _driver_cuda(profile: Profile) -> tuple[int, int] | None:
    return _major_minor(profile.nvml.cuda_driver_version.value)


def _torch_cuda(profile: Profile) -> tuple[int, int] | None:
    if _build(profile) != "cuda":
        return None
    return _major_minor(_torch(profile).cuda_runtime_version.value)


def _driver_too_old(profile: Profile) -> bool:
    runtime, driver = _torch_cuda(profile), _driver_cuda(profile)
    return runtime is not None and driver is not None and runtime[0] > driver[0]


def _driver_hint(cuda: tuple[int, int]) -> str:
    # The oldest driver of each CUDA release: catalog/drivers.toml, read only when it is named.
    from hwadvisor.catalog.drivers import load_driver_branches

    branch = load_driver_branches().get(cuda)
    if branch is None:
        return f"a driver that supports CUDA {cuda[0]}.{cuda[1]}"
    return f"driver {branch} or newer"


# --------------------------------------------------------------------------------------------
# PyTorch present and built for this hardware


def _torch_not_installed(profile: Profile) -> list[Finding]:
    torch = _torch(profile)
    if torch.installed or not _torch_probed(torch):
        return []
    if _nvidia_evidence(profile):
        fix = f"install a CUDA build of PyTorch ({_SELECTOR})"
    elif _amd_gpus(profile):
        fix = f"install a ROCm build of PyTorch ({_SELECTOR})"
    else:
        fix = f"install PyTorch ({_SELECTOR})"
    return _finding(
        "torch-not-installed",
        Severity.WARNING,
        "PyTorch is not installed",
        "Deep-learning benchmarks and any GPU use need PyTorch; only the CPU was measured.",
        fix,
    )


def _torch_import_failed(profile: Profile) -> list[Finding]:
    torch = _torch(profile)
    if not torch.installed or torch.import_error is None:
        return []
    version = torch.version.value or "(version unknown)"
    return _finding(
        "torch-import-failed",
        Severity.ERROR,
        "PyTorch is installed but cannot be imported",
        f"torch {version}: {_quote(torch.import_error)}",
        "reinstall PyTorch in this environment and keep other CUDA libraries out of "
        f"LD_LIBRARY_PATH ({_SELECTOR})",
    )


def _torch_cpu_only(profile: Profile) -> list[Finding]:
    evidence = _nvidia_evidence(profile)
    if _build(profile) != "cpu" or not evidence:
        return []
    torch = _torch(profile)
    driver = profile.nvml.cuda_driver_version.value
    target = f"for CUDA {driver} or older " if _major_minor(driver) else ""
    return _finding(
        "torch-cpu-only",
        Severity.ERROR,
        "CPU-only PyTorch installed",
        f"torch {torch.version.value or '(version unknown)'} is a CPU-only build, but "
        f"{'; '.join(evidence)}. It cannot use the GPU.",
        f"install a CUDA build of PyTorch {target}({_SELECTOR})",
    )


_NO_NVIDIA_DRIVER = {
    NvmlStatus.LIBRARY_NOT_FOUND: "no NVIDIA driver library (NVML)",
    NvmlStatus.DRIVER_NOT_LOADED: "no NVIDIA driver loaded",
}


def _torch_cuda_without_gpu(profile: Profile) -> list[Finding]:
    """A CUDA build of torch where no NVIDIA GPU can be: its CUDA libraries take several GB and
    are never used (``pip install torch`` on Linux x86-64 brings them by default). Said only
    when every source agrees: NVML finds no driver or no device, no ``/dev/nvidia*`` node, no
    NVIDIA device on the PCI bus (a GPU whose driver is merely unloaded is another finding)."""
    torch = _torch(profile)
    if _build(profile) != "cuda" or (torch.device_count.value or 0) > 0:
        return []
    if _nvidia_evidence(profile) or _amd_gpus(profile):
        return []  # a GPU is there: other findings say what stands in its way
    if profile.platform.nvidia_device_nodes.value is None:
        return []  # /dev was not looked at: the profile cannot tell
    nvml = profile.nvml
    status = NvmlStatus(nvml.status)
    if status in _NO_NVIDIA_DRIVER:
        seen = _NO_NVIDIA_DRIVER[status]
    elif status is NvmlStatus.OK and nvml.device_count.value == 0:
        seen = "the NVIDIA driver reports no GPU"
    else:
        return []
    version = torch.version.value or "(version unknown)"
    runtime = torch.cuda_runtime_version.value
    built = f"built for CUDA {runtime}" if runtime else "a CUDA build"
    return _finding(
        "torch-cuda-without-gpu",
        Severity.INFO,
        "CUDA build of PyTorch on a machine without an NVIDIA GPU",
        f"torch {version} is {built}, but this machine has no NVIDIA GPU ({seen}, no "
        "/dev/nvidia* device, no NVIDIA device seen on the PCI bus). It runs on the CPU like a "
        "CPU build, "
        "and the CUDA libraries installed with it (several GB, the nvidia-* packages) are "
        "never used.",
        "unless a GPU is coming, replace it with the CPU build: pip uninstall torch and the "
        f"nvidia-* packages, then install torch for Compute Platform 'CPU' ({_SELECTOR})",
    )


def _torch_not_rocm(profile: Profile) -> list[Finding]:
    amd = _amd_gpus(profile)
    build = _build(profile)
    if not amd or build is None or build == "rocm" or _nvidia_evidence(profile):
        return []
    names = ", ".join(_gpu_label(gpu) for gpu in amd)
    return _finding(
        "torch-not-rocm-build",
        Severity.WARNING,
        "AMD GPU present, but PyTorch is not a ROCm build",
        f"torch is a {build} build; AMD GPU(s): {names}.",
        f"install a ROCm build of PyTorch on Linux ({_SELECTOR})",
    )


def _rocm_ready(profile: Profile) -> list[Finding]:
    torch = _torch(profile)
    if _build(profile) != "rocm":
        return []
    count = len(_amd_gpus(profile)) or (torch.device_count.value or 0)
    if count == 0:
        return []
    return _finding(
        "rocm-gpus",
        Severity.INFO,
        f"ROCm PyTorch with {count} AMD GPU(s)",
        f"torch {torch.version.value or ''} uses HIP {torch.hip_version.value or '(unknown)'}; "
        "torch.cuda calls run on the AMD GPU(s).",
        "nothing to fix; CUDA-only extensions (custom kernels, some quantisation libraries) "
        "need ROCm builds of their own",
    )


# --------------------------------------------------------------------------------------------
# Driver and CUDA runtime


def _cuda_driver_versions(profile: Profile) -> list[Finding]:
    runtime, driver = _torch_cuda(profile), _driver_cuda(profile)
    if runtime is None or driver is None or runtime <= driver:
        return []
    rt, drv = f"{runtime[0]}.{runtime[1]}", f"{driver[0]}.{driver[1]}"
    driver_version = profile.nvml.driver_version.value or "(version unknown)"
    detail = (
        f"torch {_torch(profile).version.value or ''} was built for CUDA {rt}; "
        f"NVIDIA driver {driver_version} supports CUDA up to {drv}."
    )
    if runtime[0] > driver[0]:
        return _finding(
            "cuda-driver-too-old",
            Severity.ERROR,
            f"NVIDIA driver too old for CUDA {rt}",
            detail + " CUDA cannot start.",
            f"update the NVIDIA driver ({_driver_hint(runtime)}), or install a PyTorch build "
            f"for CUDA {drv} or older ({_SELECTOR})",
        )
    return _finding(
        "cuda-minor-version-compat",
        Severity.WARNING,
        f"NVIDIA driver older than CUDA {rt}",
        detail + " It runs through CUDA minor-version compatibility: kernels work, but PTX JIT "
        "compilation and the newest CUDA features do not.",
        f"update the NVIDIA driver ({_driver_hint(runtime)})",
    )


# --------------------------------------------------------------------------------------------
# The driver judged from NVML alone (no torch needed): against each GPU, and against what
# current framework builds need. A scan in an image without torch still finds an old driver.


def _driver_version(profile: Profile) -> tuple[str, tuple[int, ...]] | None:
    from hwadvisor.catalog.drivers import driver_tuple

    text = profile.nvml.driver_version.value
    parsed = driver_tuple(text)
    return (str(text).strip(), parsed) if text and parsed else None


def _too_old_for_gpus(profile: Profile) -> list[tuple[GpuInfo, GpuMinimum]]:
    """The NVIDIA GPUs whose architecture needs a newer driver than the one loaded."""
    driver = _driver_version(profile)
    gpus = [gpu for gpu in _nvidia_gpus(profile) if not gpu.lost]
    if driver is None or not gpus:
        return []
    from hwadvisor.catalog.drivers import driver_tuple, load_driver_catalog

    catalog = load_driver_catalog()
    found = []
    for gpu in gpus:
        needed = catalog.minimum_for(gpu.compute_capability.value, gpu.architecture.value)
        if needed is not None and driver[1] < (driver_tuple(needed.driver) or (0,)):
            found.append((gpu, needed))
    return found


def _driver_too_old_for_gpu(profile: Profile) -> list[Finding]:
    found = _too_old_for_gpus(profile)
    if not found:
        return []
    from hwadvisor.catalog.drivers import driver_tuple

    driver = _driver_version(profile)
    assert driver is not None
    parts = [
        f"{_gpu_label(gpu)} is {need.architecture} (compute capability "
        f"{need.compute_capability}), first supported by driver {need.driver} "
        f"[{need.source}]"
        for gpu, need in found
    ]
    newest = max((need for _, need in found), key=lambda n: driver_tuple(n.driver) or (0,))
    wanted = newest.driver
    floor = _framework_floor(profile)
    if floor is not None and (driver_tuple(floor.driver) or (0,)) > (driver_tuple(wanted) or (0,)):
        wanted = floor.driver  # current frameworks need more than the GPU itself
    return _finding(
        "nvidia-driver-too-old-for-gpu",
        Severity.ERROR,
        f"NVIDIA driver {driver[0]} is too old for this GPU",
        "; ".join(parts) + f". Driver {driver[0]} predates it: CUDA programs fail or the GPU "
        "is not driven correctly.",
        f"install NVIDIA driver {wanted} or newer (a current production branch)",
    )


def _driver_cuda_of(profile: Profile) -> tuple[tuple[int, int], str] | None:
    """The CUDA version the driver supports, from NVML; else from its branch (an imported
    profile without NVML's CUDA version), with how it was known."""
    cuda = _driver_cuda(profile)
    if cuda is not None:
        return cuda, "NVML"
    driver = _driver_version(profile)
    if driver is None:
        return None
    from hwadvisor.catalog.drivers import load_driver_catalog

    derived = load_driver_catalog().cuda_of_driver(driver[1])
    return (derived, "its branch") if derived is not None else None


def _framework_floor(profile: Profile) -> FrameworkFloor | None:
    """The framework floor the driver is below (the highest such), or None."""
    cuda = _driver_cuda_of(profile)
    if cuda is None or not _nvidia_evidence(profile):
        return None
    from hwadvisor.catalog.drivers import load_driver_catalog

    below = [floor for floor in load_driver_catalog().floors if cuda[0] < floor.cuda]
    return max(below, key=lambda f: f.cuda, default=None)


def _frameworks_need_newer_driver(profile: Profile) -> list[Finding]:
    floor = _framework_floor(profile)
    # The torch rule already says "driver too old" for the torch installed here, and the GPU
    # rule for the GPU: each with its fix, so this one would only repeat the cause.
    if floor is None or _driver_too_old(profile) or _too_old_for_gpus(profile):
        return []
    from hwadvisor.catalog.drivers import load_driver_catalog

    cuda, how = _driver_cuda_of(profile) or ((0, 0), "NVML")
    driver = _driver_version(profile)
    where = f"driver {driver[0]}" if driver else "this NVIDIA driver"
    shown = f"{cuda[0]}.{cuda[1]}"
    floors = [f for f in load_driver_catalog().floors if cuda < f.cuda]
    names = [f.framework for f in floors]
    listed = ", ".join(names[:-1]) + (" or " if len(names) > 1 else "") + names[-1]
    groups: dict[tuple[tuple[int, int], str], list[FrameworkFloor]] = {}
    for f in floors:
        groups.setdefault((f.cuda, f.driver), []).append(f)
    needs = " ".join(
        f"Current builds need CUDA {need[0]}.{need[1]} or newer (driver {driver_min} or "
        f"newer): {'; '.join(f.builds for f in group)} (as of {max(f.checked for f in group)})."
        for (need, driver_min), group in groups.items()
    )
    known = " (known from its branch: NVML did not say)" if how != "NVML" else ""
    detail = f"NVIDIA {where} supports CUDA up to {shown}{known}. {needs}"
    torch = _torch(profile)
    if _build(profile) == "cuda" and torch.cuda_available.value:
        detail += (
            f" The torch installed here ({torch.version.value or 'version unknown'}) runs on "
            "it, but no current release does."
        )
    return _finding(
        "cuda-driver-too-old-for-frameworks",
        Severity.WARNING,
        f"No current {listed} build runs on {where} (CUDA {shown})",
        detail,
        f"update the NVIDIA driver to {floor.driver} or newer (better: a current production "
        "branch)",
    )


def _cuda_init_fix(messages: Iterable[str]) -> str:
    text = " ".join(messages).lower()
    if "too old" in text:
        return "update the NVIDIA driver, or install a PyTorch build for an older CUDA version"
    if "unknown error" in text:
        return (
            "reload the driver (reboot, or `sudo modprobe -r nvidia_uvm && sudo modprobe "
            "nvidia_uvm`); in a container, start it with GPU access (--gpus all)"
        )
    return (
        "run `nvidia-smi`: if it fails, reinstall the NVIDIA driver; if it works, check "
        "CUDA_VISIBLE_DEVICES and the container's GPU access"
    )


def _cuda_init_failed(profile: Profile) -> list[Finding]:
    torch = _torch(profile)
    messages = torch.cuda_warnings
    if not torch.installed or not messages:
        return []
    # The version rule already says it, with the versions: do not repeat it.
    if _driver_too_old(profile) and all("too old" in m.lower() for m in messages):
        return []
    return _finding(
        "torch-cuda-init-failed",
        Severity.ERROR,
        "PyTorch could not initialise the GPU",
        "torch.cuda.is_available() warned: " + " | ".join(_quote(m) for m in messages),
        _cuda_init_fix(messages),
    )


def _cuda_unavailable(profile: Profile) -> list[Finding]:
    torch = _torch(profile)
    evidence = _nvidia_evidence(profile)
    if (
        _build(profile) != "cuda"
        or torch.cuda_available.value is not False
        or torch.cuda_warnings
        or not evidence
        or _driver_too_old(profile)
        or _cuda_visible_hides_all(profile)
    ):
        return []
    return _finding(
        "torch-cuda-unavailable",
        Severity.ERROR,
        "PyTorch cannot see the NVIDIA GPU",
        f"torch.cuda.is_available() is False, but {'; '.join(evidence)}.",
        _cuda_init_fix([]),
    )


# --------------------------------------------------------------------------------------------
# Compute capability against what torch was compiled for


def _parse_arch(entry: str) -> tuple[str, int, str] | None:
    match = re.fullmatch(r"(sm|compute)_(\d+)([af]?)", entry.strip())
    return (match.group(1), int(match.group(2)), match.group(3)) if match else None


def _cubin_runs(code: int, suffix: str, device: int) -> bool:
    """Does a binary (``sm_XY``) compiled for ``code`` run on a GPU of capability ``device``?"""
    if suffix == "a" or code in _INTEGRATED_CC or device in _INTEGRATED_CC:
        return code == device
    # Within one major version, a binary runs on the same or a later minor version.
    return code // 10 == device // 10 and code % 10 <= device % 10


def _ptx_runs(code: int, suffix: str, device: int) -> bool:
    """PTX (``compute_XY``) is compiled by the driver at first use for any later GPU."""
    if suffix == "a" or device in _INTEGRATED_CC:
        return code == device
    return code <= device


def _nvidia_capabilities(profile: Profile) -> dict[str, list[str]]:
    """Compute capability ("8.9") → the GPUs that have it, from NVML and from torch."""
    found: dict[str, list[str]] = {}
    for gpu in _nvidia_gpus(profile):
        cap = gpu.compute_capability.value
        if cap and _cc_int(cap) is not None:
            found.setdefault(cap, []).append(_gpu_label(gpu))
    if _build(profile) == "cuda":
        for device in _torch(profile).devices:
            cap = device.compute_capability.value
            if cap and _cc_int(cap) is not None and cap not in found:
                found[cap] = [f"torch device {device.index} ({device.name.value or 'unknown'})"]
    return found


def _amd_targets(profile: Profile) -> dict[str, list[str]]:
    """gfx target ("gfx90a") → the AMD GPUs that have it, from amdsmi/torch."""
    found: dict[str, list[str]] = {}
    for gpu in _amd_gpus(profile):
        arch = gpu.architecture.value
        if arch:
            found.setdefault(arch.split(":", 1)[0], []).append(_gpu_label(gpu))
    for device in _torch(profile).devices:
        arch = device.architecture.value
        if arch and arch.split(":", 1)[0] not in found:
            target = arch.split(":", 1)[0]
            found[target] = [f"torch device {device.index} ({device.name.value or 'unknown'})"]
    return found


def _arch_support(profile: Profile) -> list[Finding]:
    build = _build(profile)
    arch_list = _torch(profile).arch_list.value
    if not arch_list or build not in ("cuda", "rocm"):
        return []
    shown = " ".join(arch_list)
    if build == "rocm":
        missing_amd = {
            target: gpus
            for target, gpus in _amd_targets(profile).items()
            if target not in {entry.split(":", 1)[0] for entry in arch_list}
        }
        if not missing_amd:
            return []
        what = "; ".join(f"{', '.join(gpus)} is {t}" for t, gpus in sorted(missing_amd.items()))
        return _finding(
            "gpu-arch-unsupported",
            Severity.ERROR,
            "GPU architecture not compiled into this PyTorch",
            f"{what}; this ROCm build of torch targets: {shown}.",
            f"install a ROCm build of PyTorch that supports {', '.join(sorted(missing_amd))} "
            f"({_SELECTOR})",
        )

    codes = [parsed for entry in arch_list if (parsed := _parse_arch(entry))]
    unsupported: list[str] = []
    jit_only: list[str] = []
    for cap, gpus in sorted(_nvidia_capabilities(profile).items()):
        device = _cc_int(cap)
        if device is None:
            continue
        sm = f"sm_{device}"
        label = f"{', '.join(gpus)} is {sm}"
        if any(kind == "sm" and _cubin_runs(code, sfx, device) for kind, code, sfx in codes):
            continue
        if any(kind == "compute" and _ptx_runs(code, sfx, device) for kind, code, sfx in codes):
            jit_only.append(label)
        else:
            unsupported.append(label)
    findings: list[Finding] = []
    if unsupported:
        findings += _finding(
            "gpu-arch-unsupported",
            Severity.ERROR,
            "GPU architecture not compiled into this PyTorch",
            f"{'; '.join(unsupported)}; this torch was compiled for: {shown}. "
            "CUDA kernels fail with 'no kernel image is available'.",
            "install a PyTorch build for a newer CUDA version that includes this GPU's "
            f"architecture ({_SELECTOR})",
        )
    if jit_only:
        findings += _finding(
            "gpu-arch-ptx-jit",
            Severity.WARNING,
            "GPU runs PyTorch only through PTX JIT compilation",
            f"{'; '.join(jit_only)}; this torch has no binary for it, only PTX ({shown}). "
            "Each kernel is compiled at first use: slow start, possibly minutes.",
            f"install a PyTorch build compiled for this GPU's architecture ({_SELECTOR})",
        )
    return findings


# --------------------------------------------------------------------------------------------
# Visibility, NVML, GPU health


def _visibility(profile: Profile) -> list[Finding]:
    env = profile.platform.visibility_env
    hides_all = _cuda_visible_hides_all(profile)
    if hides_all:
        shown = ", ".join(f"{var}={env[var]!r}" for var in hides_all)
        return _finding(
            "gpus-hidden-by-env",
            Severity.WARNING,
            "GPUs hidden by an environment variable",
            f"{shown} hides every GPU from CUDA/ROCm programs, this scan included.",
            f"unset {' and '.join(hides_all)} (or list the GPUs to use) before running",
        )
    if "CUDA_VISIBLE_DEVICES" not in env or _build(profile) != "cuda":
        return []
    seen = _torch(profile).device_count.value
    present = len([gpu for gpu in _nvidia_gpus(profile) if not gpu.lost])
    if seen is None or present == 0 or seen >= present:
        return []
    return _finding(
        "gpus-hidden-by-env",
        Severity.WARNING,
        f"PyTorch sees {seen} of {present} GPUs",
        f"CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']!r} limits torch to {seen} of the "
        f"{present} NVIDIA GPUs NVML reports; multi-GPU results cover only those.",
        "unset CUDA_VISIBLE_DEVICES (or list every GPU in it) before running, to measure all GPUs",
    )


_NVML_TITLE = {
    NvmlStatus.LIBRARY_NOT_FOUND: "NVIDIA driver library (NVML) not found",
    NvmlStatus.DRIVER_NOT_LOADED: "NVIDIA kernel driver not loaded",
    NvmlStatus.VERSION_MISMATCH: "NVIDIA driver and library versions do not match",
    NvmlStatus.NO_PERMISSION: "No permission to use the NVIDIA GPU",
    NvmlStatus.NOT_INSTALLED: "NVML bindings (nvidia-ml-py) not installed",
    NvmlStatus.ERROR: "NVML failed",
}

_NVML_FIX = {
    NvmlStatus.LIBRARY_NOT_FOUND: (
        "install the NVIDIA driver (it provides libnvidia-ml); in a container, start it with "
        "GPU access (--gpus all and the NVIDIA Container Toolkit)"
    ),
    NvmlStatus.DRIVER_NOT_LOADED: (
        "load the driver (`sudo modprobe nvidia`) or reinstall it; with Secure Boot on, enrol "
        "the driver's signing key"
    ),
    NvmlStatus.VERSION_MISMATCH: (
        "reboot: the running kernel driver is older than the installed NVIDIA libraries"
    ),
    NvmlStatus.NO_PERMISSION: (
        "give this user access to /dev/nvidia* (often the `video` group) or run where it has it"
    ),
    NvmlStatus.NOT_INSTALLED: "install nvidia-ml-py into this Python environment",
    NvmlStatus.ERROR: (
        "run `nvidia-smi` to see the driver's error; if it fails, reinstall the driver"
    ),
}


def _fix_in_message(message: str | None) -> str | None:
    """The fix in an NVML message shaped "what happened (detail): fix; continuing ...", or None.

    Only a ": " outside parentheses separates the two: error texts inside them have their own.
    """
    if not message or "\n" in message:
        return None
    depth = 0
    for i, char in enumerate(message):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and message.startswith(": ", i):
            fix = message[i + 2 :].split("; continuing", 1)[0].strip()
            return fix or None
    return None


def _nvml_probed(profile: Profile) -> bool:
    nvml = profile.nvml
    # NvmlInfo's defaults (status error, no message, nothing known) mean nobody ran the probe.
    return not (
        NvmlStatus(nvml.status) is NvmlStatus.ERROR
        and nvml.message is None
        and not nvml.driver_version.known
    )


def _nvml_timeout(profile: Profile) -> list[Finding]:
    if NvmlStatus(profile.nvml.status) is not NvmlStatus.TIMEOUT:
        return []
    return _finding(
        "nvidia-driver-not-responding",
        Severity.ERROR,
        "NVIDIA driver not responding",
        "NVML did not answer within the time limit"
        + (f": {_quote(profile.nvml.message)}" if profile.nvml.message else "."),
        "check `nvidia-smi` and the kernel log (dmesg) for Xid errors; a driver reload or "
        "reboot clears a hung GPU",
    )


def _nvml_unavailable(profile: Profile) -> list[Finding]:
    status = NvmlStatus(profile.nvml.status)
    if status in (NvmlStatus.OK, NvmlStatus.TIMEOUT) or not _nvml_probed(profile):
        return []
    evidence = _nvidia_evidence(profile)
    cvd = profile.platform.visibility_env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        evidence.append(f"CUDA_VISIBLE_DEVICES is set ({cvd!r})")
    if not evidence:
        return []  # no sign of NVIDIA hardware: a missing NVML is simply normal here
    message = f": {_quote(profile.nvml.message)}" if profile.nvml.message else ""
    return _finding(
        "nvml-unavailable",
        Severity.ERROR,
        _NVML_TITLE[status],
        f"NVML status {status.value}{message}; yet {'; '.join(evidence)}.",
        _fix_in_message(profile.nvml.message) or _NVML_FIX[status],
    )


def _gpu_lost(profile: Profile) -> list[Finding]:
    lost = [gpu for gpu in profile.gpus if gpu.lost]
    if not lost:
        return []
    where = ", ".join(
        f"GPU {gpu.index}" + (f" at {gpu.pci_bus_id.value}" if gpu.pci_bus_id.value else "")
        for gpu in lost
    )
    return _finding(
        "gpu-lost",
        Severity.ERROR,
        "GPU fell off the bus",
        f"{where} answered 'GPU is lost': it no longer responds until the machine is reset.",
        "reboot; if it recurs, check the kernel log for Xid 79, the card's power cables, "
        "seating and cooling",
    )


def _pcie_narrow(profile: Profile) -> list[Finding]:
    narrow = []
    for gpu in profile.gpus:
        width, widest = gpu.pcie_width.value, gpu.pcie_width_max.value
        # Only the width: a lower link generation at idle is normal power saving.
        if width is not None and widest is not None and width < widest:
            narrow.append(f"{_gpu_label(gpu)} runs at x{width} of x{widest}")
    if not narrow:
        return []
    return _finding(
        "pcie-link-narrow",
        Severity.WARNING,
        "GPU PCIe link narrower than it can be",
        "; ".join(narrow) + ": host-to-GPU copies run slower than the card allows.",
        "move the GPU to a full-width slot (lanes are often shared with M.2/other slots, see "
        "the board manual) and reseat it",
    )


def _mig(profile: Profile) -> list[Finding]:
    mig = [gpu for gpu in profile.gpus if gpu.mig_enabled.value]
    if not mig:
        return []
    parts = ", ".join(f"{_gpu_label(gpu)}: {len(gpu.mig_instances)} instance(s)" for gpu in mig)
    return _finding(
        "mig-enabled",
        Severity.INFO,
        "MIG enabled: benchmarks see one GPU slice",
        f"{parts}. A process sees one MIG instance, not the whole GPU.",
        "to measure the whole GPU, disable MIG (`sudo nvidia-smi -i <gpu> -mig 0`) when no job "
        "uses it",
    )


# --------------------------------------------------------------------------------------------
# GPU memory health and Xid errors


def _labels(gpus: Iterable[GpuInfo], say: Callable[[GpuInfo], str]) -> str:
    return "; ".join(f"{_gpu_label(gpu)}: {say(gpu)}" for gpu in gpus)


def _ecc_uncorrected(profile: Profile) -> list[Finding]:
    bad = [gpu for gpu in profile.gpus if (gpu.ecc_errors_uncorrected_volatile.value or 0) > 0]
    if not bad:
        return []
    return _finding(
        "gpu-ecc-uncorrected",
        Severity.WARNING,
        "Uncorrected ECC errors in GPU memory",
        _labels(bad, lambda g: f"{g.ecc_errors_uncorrected_volatile.value} since the driver loaded")
        + ". Jobs on it may have crashed or computed with corrupt data.",
        "drain the node and reset the GPU (`nvidia-smi -r -i <gpu>`) so that the bad memory is "
        "retired or remapped; if the errors come back, RMA the GPU",
    )


def _memory_repair_pending(profile: Profile) -> list[Finding]:
    what: set[str] = set()
    details = []
    for gpu in profile.gpus:
        pending = []
        if gpu.retired_pages_pending.value:
            pending.append("page retirement")
        if gpu.remapped_rows_pending.value:
            pending.append("row remapping")
        if pending:
            what.update(pending)
            details.append(f"{_gpu_label(gpu)}: {' and '.join(pending)} pending")
    if not details:
        return []
    return _finding(
        "gpu-memory-repair-pending",
        Severity.WARNING,
        "GPU memory repair waits for a GPU reset",
        "; ".join(details) + ". Until the reset the bad memory is still in use.",
        f"reset the GPU to apply pending {' and '.join(sorted(what))} (drain the node first): "
        "`nvidia-smi -r -i <gpu>`, or reboot",
    )


def _row_remap_failed(profile: Profile) -> list[Finding]:
    bad = [gpu for gpu in profile.gpus if gpu.remapped_rows_failed.value]
    if not bad:
        return []
    return _finding(
        "gpu-row-remap-failed",
        Severity.ERROR,
        "GPU memory row remapping failed",
        _labels(bad, lambda g: "a row remapping failed")
        + ": the GPU has no spare memory rows left to replace failing ones.",
        "the GPU has run out of spare rows: RMA it (take it out of service until it is replaced)",
    )


def _ecc_disabled(profile: Profile) -> list[Finding]:
    off = [
        gpu
        for gpu in profile.gpus
        if gpu.ecc_enabled.value is False and gpu.gpu_class.value == "datacenter"
    ]
    if not off:
        return []
    return _finding(
        "gpu-ecc-disabled",
        Severity.INFO,
        "ECC is off on a datacenter GPU",
        _labels(off, lambda g: "ECC disabled")
        + ". Memory errors then go undetected and silently corrupt results.",
        "enable ECC (`sudo nvidia-smi -i <gpu> -e 1`) and reset the GPU, unless ECC was turned "
        "off on purpose for memory capacity or bandwidth",
    )


class XidMeaning(NamedTuple):
    severity: Severity
    meaning: str
    fix: str


_RESET_OR_RMA = "drain the node and reset the GPU (or reboot); if it recurs, RMA the GPU"
_APP_FAULT = (
    "usually a fault in the program that ran (an illegal memory access): check it; if it "
    "recurs with programs that are known to work, run the GPU diagnostics"
)

#: The Xid codes of NVIDIA's Xid catalog that say something about the GPU's state, and what to do.
#: Codes not listed here are reported together, as "other".
XID_MEANINGS: dict[int, XidMeaning] = {
    13: XidMeaning(Severity.INFO, "graphics engine exception (an application fault)", _APP_FAULT),
    31: XidMeaning(Severity.INFO, "GPU memory page fault (an application fault)", _APP_FAULT),
    43: XidMeaning(Severity.INFO, "GPU stopped processing (an application fault)", _APP_FAULT),
    45: XidMeaning(
        Severity.INFO,
        "preemptive cleanup after earlier errors",
        "look at the Xid logged before it: that is the cause",
    ),
    48: XidMeaning(Severity.ERROR, "double-bit ECC error (DBE)", _RESET_OR_RMA),
    61: XidMeaning(
        Severity.WARNING,
        "internal micro-controller breakpoint/warning",
        "reset the GPU when drained; update the driver if it recurs",
    ),
    62: XidMeaning(
        Severity.ERROR,
        "internal micro-controller halt",
        "drain the node and reset the GPU (or reboot); update the driver if it recurs",
    ),
    63: XidMeaning(
        Severity.WARNING,
        "ECC page retirement or row remapping recorded",
        "reset the GPU when drained to apply the retirement/remapping",
    ),
    64: XidMeaning(Severity.ERROR, "ECC page retirement or row remapping failed", _RESET_OR_RMA),
    74: XidMeaning(
        Severity.ERROR,
        "NVLink error",
        "drain the node, reset the GPUs and check the NVLink bridges or baseboard; if it "
        "recurs, contact the system vendor",
    ),
    79: XidMeaning(
        Severity.ERROR,
        "GPU has fallen off the bus",
        "drain the node and reboot; if it recurs, check the GPU's power, cooling, seating and "
        "riser, then RMA it",
    ),
    92: XidMeaning(
        Severity.WARNING,
        "high single-bit ECC error rate",
        "watch the ECC counters and reset the GPU when drained; RMA it if the rate stays high",
    ),
    94: XidMeaning(
        Severity.WARNING,
        "contained ECC error (the affected application was stopped)",
        "restart the affected job; reset the GPU when drained so that the row is remapped",
    ),
    95: XidMeaning(
        Severity.ERROR,
        "uncontained ECC error (every application on the GPU was affected)",
        _RESET_OR_RMA,
    ),
    119: XidMeaning(
        Severity.ERROR,
        "GSP firmware RPC timeout",
        "drain the node and reset the GPU (or reboot); update the driver if it recurs",
    ),
    120: XidMeaning(
        Severity.ERROR,
        "GSP firmware error",
        "drain the node and reset the GPU (or reboot); update the driver if it recurs",
    ),
}


def _xid_errors(profile: Profile) -> list[Finding]:
    by_code: dict[int, list[GpuInfo]] = {}
    for gpu in profile.gpus:
        for code in gpu.xid_errors_recent.value or []:
            by_code.setdefault(code, []).append(gpu)
    findings: list[Finding] = []
    other: list[str] = []
    for code, gpus in sorted(by_code.items()):
        where = ", ".join(_gpu_label(gpu) for gpu in gpus)
        meaning = XID_MEANINGS.get(code)
        if meaning is None:
            other.append(f"Xid {code} on {where}")
            continue
        findings += _finding(
            f"gpu-xid-{code}",
            meaning.severity,
            f"Xid {code} in the kernel log: {meaning.meaning}",
            f"The NVIDIA driver logged Xid {code} for {where} (since boot, as far back as the "
            "kernel log reaches).",
            meaning.fix,
        )
    if other:
        findings += _finding(
            "gpu-xid-other",
            Severity.INFO,
            "Other Xid errors in the kernel log",
            "; ".join(other) + ".",
            "look the codes up in NVIDIA's Xid error catalog; a code that recurs points at the "
            "GPU or the driver",
        )
    return findings


#: What the Xid probe puts in every GPU's reason when the kernel log could not be read (the
#: prefix of the reasons of ``hwadvisor.probes.xid``; any other reason is about one GPU).
_KERNEL_LOG_UNREADABLE = "kernel log not readable"

_CONTAINERS = ("kubernetes", "docker", "podman", "lxc")


def _xid_log_unreadable(profile: Profile) -> list[Finding]:
    """Xid errors could not be looked for: said once, as information, so that "no Xid finding"
    is never read as "no Xid errors". Not named ``gpu-xid-*`` and never above info: it says
    nothing about the GPUs' health, and must not hold a host back."""
    unread = [
        gpu
        for gpu in _nvidia_gpus(profile)
        if gpu.xid_errors_recent.value is None
        and gpu.xid_errors_recent.source is Source.DEVFS
        and (gpu.xid_errors_recent.reason or "").startswith(_KERNEL_LOG_UNREADABLE)
    ]
    if not unread:
        return []
    reason = unread[0].xid_errors_recent.reason or _KERNEL_LOG_UNREADABLE
    if profile.platform.container.value in _CONTAINERS:
        fix = (
            "mount the node's /dev/kmsg into the container and grant it CAP_SYSLOG (or set "
            "kernel.dmesg_restrict=0 on the node), or scan on the host"
        )
    else:
        fix = "scan as root (or with CAP_SYSLOG), or set kernel.dmesg_restrict=0"
    return _finding(
        "xid-log-unreadable",
        Severity.INFO,
        "Xid errors could not be read here",
        f"{reason[0].upper()}{reason[1:]}: GPU faults the NVIDIA driver logs (Xid errors: ECC "
        f"errors, a GPU fallen off the bus, firmware errors) were not checked for "
        f"{', '.join(f'GPU {gpu.index}' for gpu in unread)}.",
        fix,
    )


# --------------------------------------------------------------------------------------------
# Apple, CPU, and no GPU at all


def _mps(profile: Profile) -> list[Finding]:
    torch = _torch(profile)
    if torch.mps_built.value is not True or torch.mps_available.value is not False:
        return []
    return _finding(
        "mps-unavailable",
        Severity.WARNING,
        "Apple GPU (MPS) built into PyTorch but not available",
        "torch.backends.mps.is_built() is True but is_available() is False: MPS needs "
        "macOS 12.3 or newer and a native arm64 Python.",
        "use macOS 12.3 or newer with an arm64 (native) Python",
    )


def _rosetta(profile: Profile) -> list[Finding]:
    if profile.platform.rosetta.value is not True:
        return []
    return _finding(
        "python-under-rosetta",
        Severity.WARNING,
        "Python runs under Rosetta translation",
        "This is an x86_64 Python on Apple silicon: it cannot use the Apple GPU (MPS), and "
        "CPU code runs translated.",
        "install an arm64 (native) Python",
    )


def _cpu_limit(profile: Profile) -> list[Finding]:
    usable, logical = profile.cpu.usable_cpus.value, profile.cpu.logical_cores.value
    if usable is None or logical is None or usable >= logical:
        return []
    limits = []
    if profile.cpu.affinity_cpus.value is not None:
        limits.append(f"CPU affinity allows {profile.cpu.affinity_cpus.value}")
    if profile.cpu.cgroup_cpu_quota.value is not None:
        limits.append(f"the cgroup quota is {profile.cpu.cgroup_cpu_quota.value:g} CPUs")
    threads = _torch(profile).num_threads.value
    oversubscribed = threads is not None and threads > usable
    if oversubscribed:
        limits.append(f"torch defaults to {threads} threads")
    return _finding(
        "cpu-limited",
        Severity.WARNING if oversubscribed else Severity.INFO,
        f"{usable} of {logical} CPUs usable",
        f"The machine has {logical} logical CPUs, but this process may use {usable}"
        + (f" ({'; '.join(limits)})." if limits else "."),
        f"set torch threads and DataLoader workers to {usable} "
        f"(torch.set_num_threads({usable}), num_workers <= {usable})",
    )


def _gpu_sources_answered(profile: Profile) -> bool:
    torch = _torch(profile)
    return (
        torch.device_count.known
        or profile.platform.nvidia_device_nodes.known
        or (_nvml_probed(profile) and NvmlStatus(profile.nvml.status) is not NvmlStatus.TIMEOUT)
    )


def _no_gpu(profile: Profile) -> list[Finding]:
    torch = _torch(profile)
    if (
        profile.gpus
        or _nvidia_evidence(profile)
        or (torch.device_count.value or 0) > 0
        or torch.mps_available.value
        or torch.xpu_available.value
        or not _gpu_sources_answered(profile)
    ):
        return []
    others = [
        f"{dev.vendor} at {dev.bus_id}"
        for dev in profile.platform.pci_display_devices
        if dev.vendor != "nvidia"
    ]
    detail = "No GPU that a deep-learning framework can use was found."
    if others:
        detail += f" Display devices on the PCI bus ({', '.join(others)}) have no usable backend."
    return _finding(
        "no-gpu",
        Severity.INFO,
        "No GPU: fine for classical ML and small models",
        detail,
        "none for CPU work; `hwadvisor advise --workload NAME` says whether a model needs a GPU",
    )


_RULES: tuple[Rule, ...] = (
    _torch_not_installed,
    _torch_import_failed,
    _torch_cpu_only,
    _torch_cuda_without_gpu,
    _torch_not_rocm,
    _rocm_ready,
    _cuda_driver_versions,
    _driver_too_old_for_gpu,
    _frameworks_need_newer_driver,
    _cuda_init_failed,
    _cuda_unavailable,
    _arch_support,
    _visibility,
    _nvml_timeout,
    _nvml_unavailable,
    _gpu_lost,
    _ecc_uncorrected,
    _memory_repair_pending,
    _row_remap_failed,
    _ecc_disabled,
    _xid_errors,
    _xid_log_unreadable,
    _pcie_narrow,
    _mig,
    _mps,
    _rosetta,
    _cpu_limit,
    _no_gpu,
)
