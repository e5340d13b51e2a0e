"""Parse the text of ``python -m torch.utils.collect_env`` into a profile.

collect_env is what people paste into bug reports, so this reads what it prints on Linux, Windows
and macOS, across PyTorch versions, with sections missing or cut short. Facts it does not print
stay ``null`` with the reason; every fact read here has the source ``collect_env``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from hwadvisor import __version__
from hwadvisor.importers.base import (
    Imported,
    ImportFormatError,
    Sample,
    cap_gpus,
    new_cpu,
    new_gpu,
    new_nvml,
)
from hwadvisor.importers.evidence import KeyIndex, keys_found
from hwadvisor.importers.registry import SURE, Format
from hwadvisor.model.facts import Fact, Source, fact, unknown
from hwadvisor.model.profile import (
    CpuInfo,
    Frameworks,
    GpuInfo,
    GpuLink,
    NvmlInfo,
    NvmlStatus,
    PlatformInfo,
    Profile,
    ToolInfo,
    TorchInfo,
)
from hwadvisor.probes.isa import isa_from_tokens

SRC = Source.COLLECT_ENV
MISSING = "not in collect_env output"

#: Words collect_env prints where it has no value.
_NO_VALUE = {"", "n/a", "could not collect", "no cuda", "none", "unknown"}


_X86_VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon"}

#: Win32_Processor.Architecture codes (what ``wmic cpu`` prints on Windows).
_WMI_ARCH = {"0": "x86", "5": "arm", "9": "x86_64", "12": "aarch64"}

_MACHINE_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}

_KEY_VALUE = re.compile(r"^([A-Za-z][^:=]*?)\s*[:=]\s*(.*)$")
_GPU_LINE = re.compile(r"^GPU (\d+): (.+)$")
_VERSION = re.compile(r"^\d+(?:\.\d+)*")
_OS_ARCH = re.compile(r"^(.*?)\s*\((x86_64|aarch64|arm64|AMD64|i686|ppc64le|s390x|armv\d+l)\)$")

#: The header line collect_env starts with; also how :mod:`detect` recognises the format.
MARKERS = ("PyTorch version:", "CUDA used to build PyTorch:", "Is CUDA available:")


def now_utc() -> str:
    """The current time as the profile writes it (ISO 8601, UTC, seconds)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class CollectEnvError(ImportFormatError):
    """The text holds nothing collect_env prints."""


#: Only the CPU section pasted: "CPU:" then lscpu's first line.
_CPU_SECTION = re.compile(r"^\s*CPU:[ \t]*\r?\n[ \t]*Architecture:")


#: vLLM's and SGLang's layout: sections between ``====`` banner lines, ``Key   : value`` lines.
_BANNER = re.compile(r"^\s*={10,}\s*$")
_ALIGNED = re.compile(r"^([A-Za-z][^:\n]*?)\s+:[ \t]?(.*)$")
#: Sections of the sectioned layout after which no header line of torch's layout comes.
_AFTER_HEADER = ("vllm info", "sglang info", "environment variables", "versions of relevant")


def unsection(text: str) -> str:
    """vLLM's/SGLang's sectioned collect_env written as torch's own layout (the one the parser
    reads): banners dropped, ``Key   : value`` as ``Key: value``, the "CPU Info" section under a
    ``CPU:`` line, and what follows the hardware sections (library versions, vLLM's settings,
    environment variables) under "Versions of relevant libraries", which the parser skips.
    Text in torch's layout comes back as it was."""
    lines = text.splitlines()
    if sum(1 for line in lines if _BANNER.match(line)) < 4:
        return text
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _BANNER.match(line) and index + 2 < len(lines) and _BANNER.match(lines[index + 2]):
            title = lines[index + 1].strip().lower()
            if title == "cpu info":
                out.append("CPU:")
            elif title.startswith(_AFTER_HEADER):
                out.append("Versions of relevant libraries:")
            index += 3
            continue
        aligned = _ALIGNED.match(line)
        out.append(f"{aligned.group(1)}: {aligned.group(2)}" if aligned else line)
        index += 1
    return "\n".join(out)


#: SGLang's ``python3 -m sglang.check_env``: its keys, as torch's collect_env names them.
_FORK_KEYS = {
    "Python": "Python version",
    "PyTorch": "PyTorch version",
    "CUDA available": "Is CUDA available",
    "CUDA Driver Version": "Nvidia driver version",
    "NVIDIA Topology": "GPU Topology",
}
_FORK_LINE = re.compile(r"^(Python|PyTorch|CUDA available|CUDA Driver Version|NVIDIA Topology):")
#: "GPU 0,1,2,3: NVIDIA H100 80GB HBM3": one line for several GPUs of one model.
_GPU_GROUP = re.compile(r"^GPU (\d+(?:,\s*\d+)+): (.+)$")
#: The first package line of check_env's list (the library versions follow the header).
_FORK_LIBS = re.compile(r"^(sglang|vllm|flashinfer\w*|sgl_kernel|triton|transformers):\s")


_FORK_SIGN = re.compile(r"(?m)^(?:GPU \d+,|Python: |PyTorch: |CUDA Driver Version: |CUDA_HOME: )")


def unfork(text: str) -> str:
    """Forks of collect_env (SGLang's check_env) written as torch's layout: their keys renamed,
    a "GPU 0,1,2: name" line as one line per GPU, and their package list under "Versions of
    relevant libraries" (which the parser skips). Torch's own layout comes back as it was."""
    if not re.search(
        r"(?m)^(?:GPU \d+,|Python: |PyTorch: |CUDA Driver Version: |CUDA_HOME: )", text
    ):
        return text
    out: list[str] = []
    libs = False
    for line in text.splitlines():
        stripped = line.strip()
        fork = _FORK_LINE.match(stripped)
        group = _GPU_GROUP.match(stripped)
        if fork:
            key = fork.group(1)
            out.append(f"{_FORK_KEYS[key]}:{stripped[len(key) + 1 :]}")
        elif group:
            indices = [i.strip() for i in group.group(1).split(",")]
            out += [f"GPU {i}: {group.group(2)}" for i in indices]
        elif not libs and _FORK_LIBS.match(stripped):
            out += ["Versions of relevant libraries:", line]
            libs = True
        else:
            out.append(line)
    return "\n".join(out)


def _weights() -> dict[str, float]:
    weights = dict.fromkeys(
        (
            "PyTorch version",
            "Is debug build",
            "CUDA used to build PyTorch",
            "ROCM used to build PyTorch",
            "GCC version",
            "Clang version",
            "CMake version",
            "Libc version",
            "Python version",
            "Python platform",
            "Is CUDA available",
            "CUDA runtime version",
            "CUDA_MODULE_LOADING set to",
            "GPU models and configuration",
            "Nvidia driver version",
            "cuDNN version",
            "HIP runtime version",
            "MIOpen runtime version",
            "Is XNNPACK available",
            "Is XPU available",
            "XPU used to build PyTorch",
            "Versions of relevant libraries",
            "CUDA_HOME",
            "NVCC",
            "GPU Topology",
        ),
        1.0,
    )
    # Words other reports print too count for less.
    weights.update({"OS": 0.5, "CPU": 0.5})
    return weights


_INDEX = KeyIndex(_weights())


def collect_env_score(text: str) -> float:
    """How much of ``text`` is collect_env (torch's, vLLM's sectioned layout, or a fork's):
    sure with two of its fixed header lines or its CPU part, else by how many of its keys lines
    start with (five or more: sure; a paste that starts part-way keeps most of them)."""
    text = unfork(unsection(text))
    markers = sum(bool(re.search(rf"(?m)^{re.escape(m)}", text)) for m in MARKERS)
    if markers >= 2 or _CPU_SECTION.match(text) is not None:
        return SURE
    found = keys_found(text, _INDEX)
    return min(SURE, sum(found.values()) / 5)


def looks_like_collect_env(text: str) -> bool:
    """collect_env's own header lines, its CPU part, or enough of its keys (see
    :func:`collect_env_score`)."""
    return collect_env_score(text) >= SURE


def parse_collect_env(text: str, source: Source = SRC) -> Profile:
    """Read collect_env output into a :class:`Profile` (findings and envelope left to callers).

    Raises :class:`CollectEnvError` when neither a header line nor the CPU section is present.
    ``source`` is what the CPU facts carry (:mod:`.lscpu` reads lscpu's own output here).
    """
    return _read(text, source).profile


def _read(text: str, source: Source = SRC) -> Imported:
    flat = unfork(unsection(text))
    top, gpu_lines, cpu_lines = _split(flat)
    if not cpu_lines and not any(_INDEX.match(key) for key in top):
        raise CollectEnvError("no collect_env header lines (PyTorch version: ...)")
    torch = _torch(top)
    gpu_lines, too_many = cap_gpus(gpu_lines)
    gpus = _gpus(top, gpu_lines, torch)
    profile = Profile(
        tool=ToolInfo(version=__version__),
        created_utc=now_utc(),
        cpu=_cpu(cpu_lines, top, source),
        platform=_platform(top),
        nvml=_nvml(top, gpus),
        gpus=gpus,
        frameworks=Frameworks(torch=torch),
    )
    profile.gpu_topology = gpu_topology(flat)
    return Imported(
        profile, truncated=too_many or _cut(flat, top, cpu_lines), unmodelled=accelerators(text)
    )


def _cut(text: str, top: dict[str, str], cpu_lines: list[str]) -> str | None:
    """Where a collect_env report ends early: collect_env always ends with the library
    versions, so a report with its header but not them was cut (a CPU section pasted alone
    is a part, and is cut only if its lscpu block is, see :func:`lscpu_cut`)."""
    if "PyTorch version" not in top:
        return lscpu_cut(cpu_lines)
    if re.search(r"(?m)^Versions of relevant libraries", text):
        return None
    if cpu_lines:
        return "the text ends inside the CPU block, before the library versions"
    return "the text ends before the CPU block and the library versions"


#: Keys only util-linux 2.37 and later print, which also print caches, NUMA and vulnerabilities
#: after the flags (older versions end with the Flags line).
_MODERN_LSCPU = re.compile(r"^(?:CPU\(s\) scaling MHz|Caches \(sum of all\)|Vulnerabilit)")


def lscpu_cut(lines: list[str]) -> str | None:
    """Why an lscpu block (stripped lines) looks cut off, or None: its last line is a key cut
    before its colon, or it ends on the Flags line although its version prints more after it
    (the tree layout's indented keys, or keys only recent versions print)."""
    lines = [line for line in lines if line.strip()]
    if not lines:
        return None
    last = lines[-1]
    if ":" not in last and "=" not in last and len(lines) > 1:
        return f"the lscpu block ends inside a key ({last.strip()[:20]!r})"
    # The tree layout (2.37 and later) indents the keys under their section.
    modern = any(_MODERN_LSCPU.match(line.strip()) or line[:1] in " \t" for line in lines)
    if last.strip().startswith("Flags:") and modern:
        return "the lscpu block ends on its Flags line (caches, NUMA and the rest are missing)"
    return None


#: What says a machine has accelerators that are not GPUs (or GPUs collect_env does not list):
#: vLLM's platform line, and the libraries each kind needs (lower case; plain substrings, so a
#: megabyte of library list is scanned once per word, not by a case-blind regular expression).
_ACCELERATORS = (
    ("TPU", ("detected platform tpu", "torch_xla", "torch-xla", "libtpu")),
    ("Gaudi (HPU)", ("detected platform hpu", "habana", "hl-smi")),
    (
        "AWS Trainium/Inferentia (Neuron)",
        ("detected platform neuron", "torch-neuronx", "torch_neuronx", "neuronx-cc"),
    ),
    ("Intel XPU", ("detected platform xpu",)),
)
_XPU_AVAILABLE = re.compile(r"(?m)^Is XPU available\s*:\s*True")


def accelerators(text: str) -> str | None:
    """The accelerators the text says the machine has that no GPU line lists, with the words
    that say so ("TPU ('detected platform tpu')"), or None."""
    low = text.lower()
    found = []
    for kind, words in _ACCELERATORS:
        word = next((w for w in words if w in low), None)
        if word is None and kind == "Intel XPU" and _XPU_AVAILABLE.search(text[:65536]):
            word = "Is XPU available: True"
        if word is not None:
            found.append(f"{kind} ({word!r})")
    return ", ".join(found) or None


# --------------------------------------------------------------------------------------------


def _split(text: str) -> tuple[dict[str, str], list[str], list[str]]:
    """The header ``key: value`` pairs, the GPU list lines, and the CPU block lines."""
    top: dict[str, str] = {}
    gpu_lines: list[str] = []
    cpu_lines: list[str] = []
    section = "top"
    for raw in text.splitlines():
        line = raw.strip()
        if line == "CPU:":
            section = "cpu"
            continue
        if line.startswith("Versions of relevant libraries"):
            section = "libs"
            continue
        if section == "cpu":
            if line:
                cpu_lines.append(line)
            continue
        if section == "libs":
            continue
        if section == "gpus":
            if _GPU_LINE.match(line):
                gpu_lines.append(line)
                continue
            section = "top"
        match = _KEY_VALUE.match(line)
        if match is None or match.group(1) in top:
            continue  # a path, a legend line, or the second of a repeated key
        key, value = match.group(1), match.group(2).strip()
        # "GPU 0: ..." lines are keyed by the GPU; they belong to the list, not the header.
        if _GPU_LINE.match(line):
            gpu_lines.append(line)
            continue
        top[key] = value
        if key == "GPU models and configuration":
            section = "gpus"
            if _GPU_LINE.match(value):
                gpu_lines.append(value)
    return top, gpu_lines, cpu_lines


def _value(top: dict[str, str], key: str) -> tuple[str | None, str]:
    """The value of ``key``, or None with why there is none."""
    if key not in top:
        return None, MISSING
    value = top[key]
    if value.lower() in _NO_VALUE:
        return None, f"collect_env reports {value or 'nothing'!r}"
    return value, ""


def _str(top: dict[str, str], key: str) -> Fact[str]:
    value, reason = _value(top, key)
    return fact(value, SRC, reason)


def _version(top: dict[str, str], key: str) -> Fact[str]:
    value, reason = _value(top, key)
    if value is None:
        return unknown(reason, SRC)
    match = _VERSION.match(value)
    if match is None:
        return unknown(f"no version number in {value!r}", SRC)
    return fact(match.group(0), SRC)


def _bool(top: dict[str, str], key: str) -> Fact[bool]:
    value, reason = _value(top, key)
    if value is None:
        return unknown(reason, SRC)
    states = {"true": True, "yes": True, "false": False, "no": False}
    state = states.get(value.lower())
    return fact(state, SRC, f"unparseable value {value!r}")


def _torch(top: dict[str, str]) -> TorchInfo:
    if "PyTorch version" not in top:
        # No source on the fact: nothing was asked, so no "not installed" finding either.
        return TorchInfo(installed=False, version=unknown(MISSING))
    version, why = _value(top, "PyTorch version")
    if version is None:
        # collect_env prints N/A when torch cannot be imported.
        return TorchInfo(installed=False, version=unknown(f"PyTorch {why}", SRC))
    cuda = _version(top, "CUDA used to build PyTorch")
    hip = _version(top, "ROCM used to build PyTorch")
    suffix = version.partition("+")[2].lower()
    build: Fact[str]
    if hip.known or suffix.startswith("rocm"):
        build = fact("rocm", SRC)
    elif cuda.known or suffix.startswith("cu"):
        build = fact("cuda", SRC)
    elif suffix.startswith("xpu"):
        build = fact("xpu", SRC)
    elif "CUDA used to build PyTorch" in top:
        # collect_env prints None / Could not collect when torch.version.cuda is None.
        build = fact("cpu", SRC)
    else:
        build = unknown(MISSING, SRC)
    if build.value == "rocm":
        cuda = unknown("ROCm build: the runtime is HIP (see hip_version)", SRC)
    return TorchInfo(
        installed=True,
        version=fact(version, SRC),
        build=build,
        cuda_runtime_version=cuda,
        hip_version=hip,
        cudnn_version=_cudnn(top),
        nccl_version=_version(top, "NCCL version"),
        cuda_available=_bool(top, "Is CUDA available"),
        device_count=unknown(MISSING, SRC),
        arch_list=unknown(MISSING, SRC),
        mps_built=unknown(MISSING, SRC),
        mps_available=unknown(MISSING, SRC),
        xpu_available=_bool(top, "Is XPU available"),
        cpu_capability=unknown(MISSING, SRC),
        num_threads=unknown(MISSING, SRC),
    )


def _cudnn(top: dict[str, str]) -> Fact[str]:
    value, reason = _value(top, "cuDNN version")
    if value is None:
        return unknown(reason, SRC)
    if re.fullmatch(r"\d+(?:\.\d+)*", value):
        return fact(value, SRC)
    # A path or "Probably one of the following": the system's cuDNN files, not torch's cuDNN.
    return unknown("collect_env lists cuDNN library files, not the version torch uses", SRC)


def _gpus(top: dict[str, str], gpu_lines: list[str], torch: TorchInfo) -> list[GpuInfo]:
    rocm = torch.build.value == "rocm"
    names: list[tuple[int, str]] = []
    for line in gpu_lines:
        match = _GPU_LINE.match(line)
        if match:
            names.append((int(match.group(1)), match.group(2).strip()))
    if not names:
        # ROCm builds print the device name(s) inline, without "GPU n:".
        inline, _ = _value(top, "GPU models and configuration")
        if inline is not None and not _GPU_LINE.match(inline):
            names.append((0, inline))
    gpus = []
    for index, name in names:
        amd = rocm or any(word in name for word in ("AMD", "Radeon", "Instinct"))
        gpus.append(
            new_gpu(
                index,
                vendor="amd" if amd else "nvidia",
                backend="rocm" if amd else "cuda",
                source=SRC,
                missing=MISSING,
                name=fact(name, SRC),
            )
        )
    return gpus


def _nvml(top: dict[str, str], gpus: list[GpuInfo]) -> NvmlInfo:
    driver = _str(top, "Nvidia driver version")
    nvidia = [gpu for gpu in gpus if gpu.vendor == "nvidia"]
    # Without a driver version nothing says NVML would work: leave the status unprobed.
    status = NvmlStatus.OK if driver.known else NvmlStatus.ERROR
    return new_nvml(
        source=SRC,
        missing=MISSING,
        status=status,
        driver_version=driver,
        device_count=fact(len(nvidia), SRC) if driver.known else unknown(MISSING, SRC),
    )


def _platform(top: dict[str, str]) -> PlatformInfo:
    os_line, why = _value(top, "OS")
    os_name: Fact[str] = unknown(why, SRC)
    distribution: Fact[str] = unknown(why, SRC)
    if os_line is not None:
        match = _OS_ARCH.match(os_line)
        label = match.group(1) if match else os_line
        if label.startswith("Microsoft Windows"):
            os_name, distribution = fact("Windows", SRC), fact(label, SRC)
        elif label.startswith(("macOS", "Mac OSX", "Mac OS")):
            os_name, distribution = fact("Darwin", SRC), fact(label, SRC)
        else:
            # collect_env prints the distribution's name for Linux (lsb_release / os-release).
            os_name, distribution = fact("Linux", SRC), fact(label, SRC)
    python, why = _value(top, "Python version")
    version = _VERSION.match(python) if python else None
    return PlatformInfo(
        os=os_name,
        distribution=distribution,
        kernel=unknown(MISSING, SRC),
        python_version=fact(version.group(0) if version else None, SRC, why or MISSING),
        python_implementation=unknown(MISSING, SRC),
        container=unknown(MISSING, SRC),
        wsl=_wsl(top),
        rosetta=unknown(MISSING, SRC),
        nvidia_device_nodes=unknown(MISSING, SRC),
    )


def _wsl(top: dict[str, str]) -> Fact[bool]:
    platform_line, why = _value(top, "Python platform")
    if platform_line is None:
        return unknown(why, SRC)
    if not platform_line.startswith("Linux-"):
        return fact(False, SRC)
    return fact("microsoft" in platform_line.lower(), SRC)


# --------------------------------------------------------------------------------------------
# CPU: lscpu on Linux, wmic (Key=Value) on Windows, the brand string alone on macOS


_ARM_CORE = re.compile(r"^(?:Neoverse|Cortex|Ampere-?1|A64FX|ThunderX|Kryo)\b", re.IGNORECASE)


def _cpu(lines: list[str], top: dict[str, str], src: Source = SRC) -> CpuInfo:
    if not lines:
        return new_cpu(source=SRC, missing=MISSING)
    pairs: dict[str, str] = {}
    for line in lines:
        match = _KEY_VALUE.match(line)
        if match and match.group(1) not in pairs:
            pairs[match.group(1)] = match.group(2).strip()
    model = pairs.get("Model name") or pairs.get("Name")
    if model is None and not pairs and len(lines) == 1:
        model = lines[0]  # macOS prints the brand string alone
    vendor_id = pairs.get("Vendor ID") or pairs.get("Manufacturer")
    vendor = _X86_VENDORS.get(vendor_id, vendor_id) if vendor_id else None
    if vendor is None and model and model.startswith("Apple"):
        vendor = "Apple"
    logical = _int(pairs.get("CPU(s)"))
    per_socket = _int(pairs.get("Core(s) per socket") or pairs.get("Core(s) per cluster"))
    sockets = _int(pairs.get("Socket(s)"))
    physical = per_socket * sockets if per_socket and sockets else None
    per_core = _int(pairs.get("Thread(s) per core"))
    if physical is None and logical and per_core and logical % per_core == 0:
        physical = logical // per_core  # "Socket(s)" cut off: CPUs over threads per core
    flags = pairs.get("Flags")
    base = _float(pairs.get("MaxClockSpeed"))  # wmic: the rated clock, in MHz
    max_mhz = _float(pairs.get("CPU max MHz"))
    reason_cores = "the CPU block lacks Core(s) per socket, Socket(s) and Thread(s) per core"
    # On Arm, lscpu's "Model name" is the core design (Neoverse-V2, Cortex-A72): what the
    # FLOP/cycle table is keyed by. On x86 it is the brand string, and the design stays unknown.
    micro = model if model and _ARM_CORE.match(model) else None
    return CpuInfo(
        vendor=fact(vendor, src, MISSING),
        model_name=fact(model, src, MISSING),
        architecture=_architecture(pairs, top, src),
        microarchitecture=fact(micro, src, MISSING),
        sockets=fact(sockets, src, MISSING),
        physical_cores=fact(physical, src, reason_cores),
        logical_cores=fact(logical, src, MISSING),
        performance_cores=unknown(MISSING, src),
        efficiency_cores=unknown(MISSING, src),
        affinity_cpus=unknown(MISSING, src),
        cgroup_cpu_quota=unknown(MISSING, src),
        usable_cpus=unknown(MISSING, src),
        base_frequency_mhz=fact(base, src, MISSING),
        max_frequency_mhz=fact(max_mhz, src, MISSING),
        isa_features=fact(_isa(flags.split()) if flags else None, src, "no Flags line"),
        l1d_cache_bytes=unknown(MISSING, src),
        l2_cache_bytes=unknown(MISSING, src),
        l3_cache_bytes=unknown(MISSING, src),
        numa_nodes=fact(_int(pairs.get("NUMA node(s)")), src, MISSING),
        virtualized=_virtualized(pairs, src),
        hypervisor=fact(pairs.get("Hypervisor vendor"), src, MISSING),
    )


def _architecture(pairs: dict[str, str], top: dict[str, str], src: Source) -> Fact[str]:
    raw = pairs.get("Architecture")
    if raw is not None:
        arch = _WMI_ARCH.get(raw, raw)
        return fact(_MACHINE_ALIASES.get(arch.lower(), arch), src)
    match = _OS_ARCH.match(top.get("OS", ""))
    if match:
        arch = match.group(2)
        return fact(_MACHINE_ALIASES.get(arch.lower(), arch), src)
    return unknown(MISSING, src)


def _virtualized(pairs: dict[str, str], src: Source) -> Fact[bool]:
    if "Hypervisor vendor" in pairs:
        return fact(True, src)
    # lscpu prints "Hypervisor vendor" only under a hypervisor, but only a full block says so.
    return unknown(MISSING, src)


_isa = isa_from_tokens


def _int(text: str | None) -> int | None:
    if text is None or not text.strip().isdigit():
        return None
    return int(text.strip())


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# vLLM's "GPU Topology:" section: nvidia-smi topo -m's matrix, read by its importer


def gpu_topology(text: str) -> list[GpuLink]:
    """The links of the ``nvidia-smi topo -m`` matrix under vLLM's "GPU Topology:" line, or
    none when there is no such section (see :mod:`hwadvisor.importers.nvidia_smi_topo`)."""
    from hwadvisor.importers.nvidia_smi_topo import read_topology

    section = re.search(r"(?m)^\s*GPU Topology\s*:", text)
    topology = read_topology(text[section.end() :]) if section else None
    return topology.links if topology else []


def _near(sample: Sample) -> str | None:
    text = unsection(sample.head)
    found = [m for m in MARKERS if re.search(rf"(?m)^{re.escape(m)}", text)]
    if len(found) == 1:
        return f"looks like collect_env output but has only its {found[0]!r} line"
    return None


FORMAT = Format(
    name="collect_env output",
    source=SRC,
    sniff=lambda sample: looks_like_collect_env(sample.head),
    score=lambda sample: collect_env_score(sample.head),
    parse=lambda sample: _read(sample.text),
    rank=40,
    near=_near,
    example="python -m torch.utils.collect_env",
)
