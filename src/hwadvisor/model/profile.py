"""The profile: everything a scan learns about a machine, as one versioned pydantic tree.

Field names carry their unit (``_bytes``, ``_mhz``, ``_watts``, ``_c``). Every leaf that comes from
the machine is a :class:`~hwadvisor.model.facts.Fact`.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import Field, field_validator

from hwadvisor.model.advice import Advice
from hwadvisor.model.bench import Benchmarks
from hwadvisor.model.facts import Fact, StrictModel, unknown
from hwadvisor.model.labels import clean_labels
from hwadvisor.model.schema_version import SCHEMA_VERSION as SCHEMA_VERSION  # re-exported


def _not_probed() -> Fact[Any]:
    return unknown("not probed")


def NotProbed() -> Any:
    """Default for a fact no probe has filled in."""
    return Field(default_factory=_not_probed)


# --------------------------------------------------------------------------------------------
# CPU, memory, storage, platform


class CpuInfo(StrictModel):
    vendor: Fact[str] = NotProbed()
    model_name: Fact[str] = NotProbed()
    architecture: Fact[str] = NotProbed()
    microarchitecture: Fact[str] = NotProbed()
    sockets: Fact[int] = NotProbed()
    physical_cores: Fact[int] = NotProbed()
    logical_cores: Fact[int] = NotProbed()
    performance_cores: Fact[int] = NotProbed()
    """Physical P-cores of a hybrid CPU (Intel cpu_core, Apple perflevel0); null otherwise."""
    efficiency_cores: Fact[int] = NotProbed()
    """Physical E-cores of a hybrid CPU (Intel cpu_atom, Apple perflevel1); null otherwise."""
    affinity_cpus: Fact[int] = NotProbed()
    cgroup_cpu_quota: Fact[float] = NotProbed()
    """CPUs' worth of time the cgroup allows (quota / period); null when unlimited."""
    usable_cpus: Fact[int] = NotProbed()
    """min(logical cores, affinity, ceil(cgroup quota)): what a job here can really use."""
    base_frequency_mhz: Fact[float] = NotProbed()
    max_frequency_mhz: Fact[float] = NotProbed()
    isa_features: Fact[list[str]] = NotProbed()
    """The instruction-set features that matter for deep learning, normalised names."""
    l1d_cache_bytes: Fact[int] = NotProbed()
    l2_cache_bytes: Fact[int] = NotProbed()
    l3_cache_bytes: Fact[int] = NotProbed()
    numa_nodes: Fact[int] = NotProbed()
    virtualized: Fact[bool] = NotProbed()
    hypervisor: Fact[str] = NotProbed()


class MemoryInfo(StrictModel):
    total_bytes: Fact[int] = NotProbed()
    available_bytes: Fact[int] = NotProbed()
    swap_total_bytes: Fact[int] = NotProbed()
    swap_free_bytes: Fact[int] = NotProbed()
    cgroup_limit_bytes: Fact[int] = NotProbed()
    """Memory limit of the container/cgroup; null when unlimited."""


class StorageInfo(StrictModel):
    path: Fact[str] = NotProbed()
    """The output folder the free space was measured at."""
    free_bytes: Fact[int] = NotProbed()
    total_bytes: Fact[int] = NotProbed()


class PlatformInfo(StrictModel):
    os: Fact[str] = NotProbed()
    distribution: Fact[str] = NotProbed()
    kernel: Fact[str] = NotProbed()
    python_version: Fact[str] = NotProbed()
    python_implementation: Fact[str] = NotProbed()
    container: Fact[str] = NotProbed()
    """docker, podman, kubernetes, lxc, or "none"."""
    wsl: Fact[bool] = NotProbed()
    rosetta: Fact[bool] = NotProbed()
    """Python runs translated (x86_64 Python on Apple silicon)."""
    visibility_env: dict[str, str] = Field(default_factory=dict)
    """CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ... as set (unset ones are absent)."""
    nvidia_device_nodes: Fact[list[str]] = NotProbed()
    """``/dev/nvidia*`` nodes: the kernel driver is loaded even if NVML cannot be used."""
    pci_display_devices: list[PciDevice] = Field(default_factory=list)
    """GPUs and accelerators seen on the PCI bus (sysfs), whatever the drivers say."""


class PciDevice(StrictModel):
    bus_id: str
    vendor: str
    """nvidia, amd, intel, or the hex vendor id."""
    vendor_id: str
    device_id: str
    driver: str | None = None
    class_id: str | None = None
    """PCI class code, e.g. ``0x030200`` (3D controller) or ``0x120000`` (accelerator)."""


# --------------------------------------------------------------------------------------------
# The system board (DMI/SMBIOS) and the network


class SystemInfo(StrictModel):
    """What the firmware says the machine is (``/sys/class/dmi/id``; ``hw.model`` on macOS)."""

    vendor: Fact[str] = NotProbed()
    product: Fact[str] = NotProbed()
    serial: Fact[str] = NotProbed()
    """The system serial number: identifying (redacted with the host name); root-only on Linux."""
    bios_vendor: Fact[str] = NotProbed()
    bios_version: Fact[str] = NotProbed()
    bios_date: Fact[str] = NotProbed()
    """ISO 8601 (``2023-03-15``) where the firmware writes ``03/15/2023``; else as written."""


class NetInterface(StrictModel):
    """One physical network interface (virtual ones, such as docker0 or veth*, are left out)."""

    name: str
    kind: str
    """ethernet, infiniband (an IPoIB interface), wireless, or other."""
    state: Fact[str] = NotProbed()
    """The kernel's operstate: up, down, dormant, lowerlayerdown, unknown ..."""
    speed_mbps: Fact[int] = NotProbed()
    mtu: Fact[int] = NotProbed()
    driver: Fact[str] = NotProbed()
    mac: Fact[str] = NotProbed()
    """The hardware address: identifying (redacted)."""


class RdmaPort(StrictModel):
    """One port of an RDMA device (``/sys/class/infiniband``): InfiniBand, or RoCE."""

    device: str
    """The RDMA device, e.g. ``mlx5_0``."""
    port: int
    link_layer: Fact[str] = NotProbed()
    """``InfiniBand``, or ``Ethernet`` (RoCE)."""
    rate_gbps: Fact[float] = NotProbed()
    state: Fact[str] = NotProbed()
    """down, init, armed, active, active_defer."""
    netdev: Fact[str] = NotProbed()
    """The network interface of this port (IPoIB, or the RoCE Ethernet interface)."""


class NetworkInfo(StrictModel):
    interfaces: list[NetInterface] = Field(default_factory=list)
    rdma: list[RdmaPort] = Field(default_factory=list)
    reason: str | None = "not probed"
    """Why the lists are empty or incomplete (not probed, no sysfs, only virtual interfaces);
    null when the probe read everything there was."""


# --------------------------------------------------------------------------------------------
# GPUs


class NvmlStatus(str, Enum):
    OK = "ok"
    LIBRARY_NOT_FOUND = "library_not_found"
    DRIVER_NOT_LOADED = "driver_not_loaded"
    VERSION_MISMATCH = "version_mismatch"
    NO_PERMISSION = "no_permission"
    NOT_INSTALLED = "not_installed"
    """The ``pynvml`` module (nvidia-ml-py) is not importable."""
    TIMEOUT = "timeout"
    ERROR = "error"


class NvmlInfo(StrictModel):
    status: NvmlStatus = NvmlStatus.ERROR
    message: str | None = None
    """The error, with the fix, when status is not ok."""
    driver_version: Fact[str] = NotProbed()
    cuda_driver_version: Fact[str] = NotProbed()
    """Highest CUDA version the driver supports, e.g. "12.4"."""
    nvml_version: Fact[str] = NotProbed()
    binding_version: Fact[str] = NotProbed()
    """Version of the nvidia-ml-py package that provided ``pynvml``."""
    device_count: Fact[int] = NotProbed()


class MigInstance(StrictModel):
    index: int
    uuid: Fact[str] = NotProbed()
    name: Fact[str] = NotProbed()
    memory_total_bytes: Fact[int] = NotProbed()
    gpu_instance_id: Fact[int] = NotProbed()
    compute_instance_id: Fact[int] = NotProbed()
    multiprocessor_count: Fact[int] = NotProbed()
    """SMs in this MIG slice: its share of the GPU."""


#: Why the facts of a GPU are null when the source states how many GPUs there are but the text
#: holds fewer ("Attached GPUs : 8" above one GPU's block): such a GPU is listed, every fact
#: unknown with this reason.
NOT_SHOWN = "not in the pasted text"


def assumed_like_shown(gpus: list[GpuInfo]) -> int:
    """How many of ``gpus`` are counted but not shown (:data:`NOT_SHOWN`) and may be taken to be
    the model of the shown ones: all of them where the shown GPUs are one named model, else 0."""
    missing = sum(1 for g in gpus if g.name.reason == NOT_SHOWN)
    names = {g.name.value for g in gpus if g.name.reason != NOT_SHOWN}
    return missing if len(names) == 1 and None not in names else 0


class GpuInfo(StrictModel):
    """One GPU as the vendor library (or torch) sees it."""

    index: int
    vendor: str
    """nvidia, amd, apple, intel."""
    backend: str
    """cuda, rocm, mps, xpu: the framework backend that drives it."""
    name: Fact[str] = NotProbed()
    uuid: Fact[str] = NotProbed()
    serial: Fact[str] = NotProbed()
    pci_bus_id: Fact[str] = NotProbed()
    architecture: Fact[str] = NotProbed()
    compute_capability: Fact[str] = NotProbed()
    vram_total_bytes: Fact[int] = NotProbed()
    vram_free_bytes: Fact[int] = NotProbed()
    vram_used_bytes: Fact[int] = NotProbed()
    multiprocessor_count: Fact[int] = NotProbed()
    power_limit_watts: Fact[float] = NotProbed()
    power_draw_watts: Fact[float] = NotProbed()
    sm_clock_mhz: Fact[int] = NotProbed()
    sm_clock_max_mhz: Fact[int] = NotProbed()
    memory_clock_mhz: Fact[int] = NotProbed()
    memory_clock_max_mhz: Fact[int] = NotProbed()
    pcie_generation: Fact[int] = NotProbed()
    pcie_generation_max: Fact[int] = NotProbed()
    pcie_width: Fact[int] = NotProbed()
    pcie_width_max: Fact[int] = NotProbed()
    temperature_c: Fact[int] = NotProbed()
    utilization_percent: Fact[int] = NotProbed()
    ecc_enabled: Fact[bool] = NotProbed()
    persistence_mode: Fact[bool] = NotProbed()
    mig_enabled: Fact[bool] = NotProbed()
    mig_instances: list[MigInstance] = Field(default_factory=list)
    vbios_version: Fact[str] = NotProbed()
    ecc_errors_corrected_volatile: Fact[int] = NotProbed()
    """Corrected (single-bit) ECC errors since the driver loaded."""
    ecc_errors_uncorrected_volatile: Fact[int] = NotProbed()
    """Uncorrected (double-bit) ECC errors since the driver loaded."""
    ecc_errors_uncorrected_aggregate: Fact[int] = NotProbed()
    """Uncorrected ECC errors over the GPU's life."""
    retired_pages: Fact[int] = NotProbed()
    """Memory pages retired (single-bit and double-bit causes); GPUs before Ampere."""
    retired_pages_pending: Fact[bool] = NotProbed()
    """A page waits to be retired at the next GPU reset."""
    remapped_rows_uncorrectable: Fact[int] = NotProbed()
    """Rows remapped after uncorrectable errors (Ampere and newer)."""
    remapped_rows_pending: Fact[bool] = NotProbed()
    """A row remapping waits for the next GPU reset."""
    remapped_rows_failed: Fact[bool] = NotProbed()
    """A remapping failed: the GPU has no spare rows left."""
    xid_errors_recent: Fact[list[int]] = NotProbed()
    """Xid codes the driver logged for this GPU in the kernel log (as far as it is buffered)."""
    catalog_name: Fact[str] = NotProbed()
    """The row of hwadvisor's GPU catalog this GPU is (what its peaks and the advice use)."""
    gpu_class: Fact[str] = NotProbed()
    """``datacenter``, ``workstation`` or ``consumer`` (from the catalog)."""
    lost: bool = False
    """The device answered ``GpuIsLost``: it fell off the bus; every other field is unknown."""


class GpuLink(StrictModel):
    """How two GPUs are connected (NVML topology)."""

    gpu_a: int
    gpu_b: int
    link: str
    """nvlink, same_board, pcie_switch, pcie_switches, host_bridge, numa_node, system."""
    nvlink_count: int = 0
    pcie_link: str | None = None
    """The PCIe path (same_board ... system) even where NVLink also joins them; null if unknown."""
    reason: str | None = None
    """Why ``link`` is ``unknown``, or why part of the topology could not be read."""


# --------------------------------------------------------------------------------------------
# Frameworks


class TorchDevice(StrictModel):
    index: int
    name: Fact[str] = NotProbed()
    total_memory_bytes: Fact[int] = NotProbed()
    multiprocessor_count: Fact[int] = NotProbed()
    compute_capability: Fact[str] = NotProbed()
    uuid: Fact[str] = NotProbed()
    pci_bus_id: Fact[str] = NotProbed()
    architecture: Fact[str] = NotProbed()
    """ROCm only: the GPU's gfx target as HIP names it (``gfx90a:sramecc+:xnack-``)."""


class TorchInfo(StrictModel):
    installed: bool = False
    import_error: str | None = None
    """Set when torch is installed but ``import torch`` failed (broken CUDA libraries ...)."""
    version: Fact[str] = NotProbed()
    build: Fact[str] = NotProbed()
    """cuda, rocm, xpu, or cpu: what this torch binary was built for."""
    cuda_runtime_version: Fact[str] = NotProbed()
    hip_version: Fact[str] = NotProbed()
    cudnn_version: Fact[str] = NotProbed()
    nccl_version: Fact[str] = NotProbed()
    cuda_available: Fact[bool] = NotProbed()
    cuda_warnings: list[str] = Field(default_factory=list)
    """What ``torch.cuda.is_available()`` warned (``CUDA unknown error``, driver too old ...)."""
    cuda_init_warnings: list[str] = Field(default_factory=list)
    """What CUDA initialisation warned while devices were read (unsupported compute capability)."""
    device_count: Fact[int] = NotProbed()
    devices: list[TorchDevice] = Field(default_factory=list)
    arch_list: Fact[list[str]] = NotProbed()
    mps_built: Fact[bool] = NotProbed()
    mps_available: Fact[bool] = NotProbed()
    xpu_available: Fact[bool] = NotProbed()
    cpu_capability: Fact[str] = NotProbed()
    """The SIMD level torch's CPU kernels dispatch to (``AVX512``, ``AVX2``, ``DEFAULT``)."""
    num_threads: Fact[int] = NotProbed()


class Frameworks(StrictModel):
    torch: TorchInfo = Field(default_factory=TorchInfo)


# --------------------------------------------------------------------------------------------
# Findings and diagnostics


class Severity(str, Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class Finding(StrictModel):
    """Something a person should know or fix, with the fix in one line."""

    id: str
    severity: Severity
    title: str
    detail: str
    fix: str


class ProbeStatus(str, Enum):
    OK = "ok"
    PARTIAL = "partial"
    """Ran, but some facts could not be read (see their reasons)."""
    FAILED = "failed"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"


class ProbeRun(StrictModel):
    name: str
    status: ProbeStatus
    seconds: float
    message: str | None = None


class Diagnostics(StrictModel):
    probes: list[ProbeRun] = Field(default_factory=list)
    duration_seconds: float = 0.0


# --------------------------------------------------------------------------------------------
# The envelope


class ToolInfo(StrictModel):
    name: str = "hwadvisor"
    version: str


class HostIdentity(StrictModel):
    hostname: Fact[str] = NotProbed()
    machine_id: Fact[str] = NotProbed()
    """A stable per-machine id (hash of /etc/machine-id or the like), for fleet de-duplication."""
    labels: dict[str, str] | None = None
    """Where the machine stands, as its operators name it (``site``, ``rack``, ``group``, ...):
    set by ``scan --label KEY=VALUE`` or ``HWADVISOR_LABELS``, not probed; null when none were
    given. Keys ``[a-z0-9_.-]{1,63}``, values ``[A-Za-z0-9_.-]{0,63}``; a loaded profile keeps
    the well-formed ones."""

    @field_validator("labels", mode="before")
    @classmethod
    def _well_formed_labels(cls, value: Any) -> Any:
        return clean_labels(value)


class ImportedFile(StrictModel):
    """One input of ``hwadvisor import``."""

    file: str
    """As named on the command line."""
    format: str
    """The format it was read as ("nvidia-smi -q text")."""
    source: str
    """The ``source`` its facts carry in this profile."""
    taken_utc: str | None = None
    """The time the source printed, where it printed one."""
    truncated: str | None = None
    """Why it looks cut off, where it does."""


class ImportConflict(StrictModel):
    """Two inputs that disagree on one fact, and which was kept."""

    fact: str
    """Where in the profile (``gpus[0].vram_total_bytes``)."""
    kept: str
    """The value kept, and from which file."""
    dropped: str
    """The value set aside, and from which file."""


class ImportInfo(StrictModel):
    """How an imported profile came to be: the files, and where they disagreed."""

    imported_utc: str
    """When the import ran (``created_utc`` is the sources' own time where they print one)."""
    files: list[ImportedFile] = Field(default_factory=list)
    conflicts: list[ImportConflict] = Field(default_factory=list)


class Profile(StrictModel):
    """What ``hwadvisor scan`` writes: the envelope and every section."""

    schema_version: int = SCHEMA_VERSION
    tool: ToolInfo
    created_utc: str
    """ISO 8601, UTC, seconds precision, e.g. ``2026-11-21T10:02:03Z``."""
    host: HostIdentity = Field(default_factory=HostIdentity)
    system: SystemInfo = Field(default_factory=SystemInfo)
    cpu: CpuInfo = Field(default_factory=CpuInfo)
    memory: MemoryInfo = Field(default_factory=MemoryInfo)
    storage: StorageInfo = Field(default_factory=StorageInfo)
    platform: PlatformInfo = Field(default_factory=PlatformInfo)
    network: NetworkInfo = Field(default_factory=NetworkInfo)
    nvml: NvmlInfo = Field(default_factory=NvmlInfo)
    gpus: list[GpuInfo] = Field(default_factory=list)
    gpu_topology: list[GpuLink] = Field(default_factory=list)
    frameworks: Frameworks = Field(default_factory=Frameworks)
    findings: list[Finding] = Field(default_factory=list)
    benchmarks: Benchmarks | None = None
    """What the machine measurably does; null when the scan ran with ``--no-bench`` (or the
    profile predates schema 2)."""
    advice: Advice | None = None
    """The answer for one workload (``scan --workload`` / ``advise``); null otherwise."""
    diagnostics: Diagnostics = Field(default_factory=Diagnostics)
    imported: ImportInfo | None = None
    """What ``hwadvisor import`` read this profile from; null for a scan."""


PlatformInfo.model_rebuild(raise_errors=False)
