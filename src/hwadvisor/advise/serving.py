"""Inference sizing: the answer to "will this model run here, how fast, for how many users, and
what should I buy or rent to serve it".

The candidates are this machine (its GPUs, else its CPU and RAM: speed from the bandwidth and
FLOPs the scan measured, else catalog peaks), GPUs the user assumes (``--assume-gpu``), and the
catalog's GPUs in counts of 1 to 8 per machine and more machines beyond. For each: the memory
plan as the engine allocates it (``serve.memory``), decode and prefill speed (``serve.speed``),
prices. The scenario is the smallest class of hardware with an option that holds the model and
gives every user the target speed; the recommendation is that class's cheapest option.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwadvisor.advise.names import ResolvedGpu, resolve_gpu, split_count, varying_memory
from hwadvisor.advise.pricing import Costs, Prices, builtin_prices, option_costs
from hwadvisor.advise.serve.memory import (
    DeviceMemory,
    ServeMemory,
    apple_working_set,
    max_context,
    plan_serve_memory,
)
from hwadvisor.advise.serve.quant import find_quant, kv_bytes_per_value, split_named_quant
from hwadvisor.advise.serve.speed import (
    DESKTOP_CPU,
    MAX_USERS,
    SCANNED_CPU,
    DeviceSpeed,
    catalog_devices,
    estimate_speed,
    fast_matmul_factor,
    int8_dot_factor,
    peak_flops,
    peak_kind,
)
from hwadvisor.catalog.llm_geometry import LlmGeometry
from hwadvisor.catalog.peaks import GpuPeak, catalog_by_name, find_gpu_peak
from hwadvisor.errors import UsageError
from hwadvisor.model.facts import constructed, visible
from hwadvisor.model.serve import InferenceAdvice, InferenceEstimate, ServeMemoryBreakdown

if TYPE_CHECKING:  # a profile's models load with the profile: a what-if answer reads none
    from hwadvisor.model.bench import Measurement
    from hwadvisor.model.profile import Profile

ENGINES = ("llama.cpp", "ollama", "vllm", "sglang", "mlx", "transformers", "tensorrt-llm")

#: GPUs offered as options are those the price catalog prices (to buy or to rent).
_MAX_PER_MACHINE = 8
_MAX_MACHINES = 8


#: Presets (``--serve NAME``): what people most often ask about.
PRESETS: dict[str, dict[str, Any]] = {
    "llama3-8b-chat": {
        "model": "llama-3-8b",
        "quant": "Q4_K_M",
        "context": 8192,
        "engine": "llama.cpp",
        "users": 1,
    },
    "llama3-70b-serve": {
        "model": "llama-3-70b",
        "quant": "fp8",
        "context": 8192,
        "engine": "vllm",
        "users": 32,
    },
    "gpt-oss-20b-local": {
        "model": "gpt-oss-20b",
        "quant": "MXFP4",
        "context": 8192,
        "engine": "llama.cpp",
        "users": 1,
    },
    "qwen3-30b-a3b-local": {
        "model": "qwen3-30b-a3b",
        "quant": "Q4_K_M",
        "context": 8192,
        "engine": "llama.cpp",
        "users": 1,
    },
}


#: The context sized when none is given (a model trained on fewer gets its own window).
DEFAULT_CONTEXT = 8192


@dataclass(frozen=True)
class ServeRequest:
    model: str
    """A catalog name, alias or Hugging Face id, or a local config.json/GGUF/safetensors file."""
    quant: str | None = None
    context: int | None = None
    """Tokens of context each user's KV cache holds (None: :data:`DEFAULT_CONTEXT`, or the
    model's own window where that is shorter)."""
    engine: str = "llama.cpp"
    users: int = 1
    target_tok_s: float = 10.0
    max_ttft_s: float = 10.0
    """The longest wait for a reply's first token (a ``prompt_tokens`` prompt computed) that
    still serves a user: a CPU that decodes an 8B model at 10 tok/s but takes 20 s over its
    prompt is not enough for a chat."""
    prompt_tokens: int = 512
    reply_tokens: int = 256
    """A reply's length: the throughput counts each request's prompt against it."""
    kv_cache: str = "f16"
    assume_gpu: tuple[str, ...] = ()
    gpus: int = 1
    assume_cpu: tuple[str, ...] = ()
    """CPUs of the CPU catalog to size as what-ifs (``Ryzen 9 7950X 64GB``)."""


def build_request(model: str, **given: Any) -> ServeRequest:
    """The request of ``--serve MODEL``: a preset's fields (where MODEL names one), then the
    options given (``None`` values are left to the preset or the defaults)."""
    fields: dict[str, Any] = dict(PRESETS.get(model.lower(), {"model": model}))
    fields.update({k: v for k, v in given.items() if v is not None})
    if "engine" not in fields and not fields.get("quant"):
        # A name that says its format (``Qwen2.5-7B-Instruct-AWQ``) is served by an engine
        # that runs that format when none is named.
        _, named = split_named_quant(str(fields["model"]), "llama.cpp")
        if named is not None and "llama.cpp" not in find_quant(named).engines:
            fields["engine"] = find_quant(named).engines[0]
    return ServeRequest(**fields)


def model_geometry(model: str, engine: str = "llama.cpp") -> tuple[LlmGeometry, str | None]:
    """The model's shape and the quantization a file or a name names (an Ollama tag's
    ``-q4_K_M``, a repository's ``-AWQ``), from a name or a local file."""
    path = Path(model)
    if path.suffix.lower() in (".gguf", ".json", ".safetensors") or path.is_file():
        from hwadvisor.importers.modelfile import geometry_from_file

        if path.exists() or path.suffix.lower() != ".gguf" or len(path.parts) > 1:
            return geometry_from_file(path)
        # a GGUF's file name with no such file here ("Llama-3.1-8B-Instruct-Q4_K_M.gguf", as a
        # repository lists it): the name, where the catalog knows it; else the file's error
        try:
            return model_geometry(path.stem, engine)
        except UsageError:
            return geometry_from_file(path)
    from hwadvisor.catalog.llms import find_llm

    name, named = split_named_quant(model, engine)
    try:
        return find_llm(name), named
    except UsageError:
        if name == model.strip():
            raise
        return find_llm(model), None  # a catalog name that only looks like it names a quant


def default_quant(engine: str) -> str:
    """The quantization an engine runs when none is named."""
    return "Q4_K_M" if engine in ("llama.cpp", "ollama") else "bf16"


@dataclass
class _Candidate:
    hardware: str
    origin: str
    scenario_class: int
    gpus: int
    memory: DeviceMemory
    speed: DeviceSpeed
    price_gpu: str | None
    cores: int | None = None
    nodes: int = 1
    vendor: str | None = None
    """The GPU's maker (``nvidia``, ``amd``, ``intel``, ``apple``), ``cpu`` for a computer's
    cores, None where unknown (then every engine is taken to run on it)."""
    whole: bool = False
    """Bought as a whole computer (a Mac), not cards with a host around them."""
    target: str | None = None
    """The GPU's compute capability (NVIDIA) or gfx target (AMD), where known."""


#: The hardware each engine runs on, by GPU maker (``cpu``: a computer's cores): MLX is Apple's;
#: TensorRT-LLM NVIDIA's; vLLM and SGLang run on NVIDIA, AMD and Intel GPUs and on CPUs (not on
#: Apple silicon's GPU). llama.cpp, Ollama and transformers run on all.
ENGINE_HARDWARE: dict[str, tuple[str, ...]] = {
    "mlx": ("apple",),
    "tensorrt-llm": ("nvidia",),
    "vllm": ("nvidia", "amd", "intel", "cpu"),
    "sglang": ("nvidia", "amd", "intel", "cpu"),
}
_MAKERS = {"nvidia": "NVIDIA GPUs", "amd": "AMD GPUs", "intel": "Intel GPUs",
           "apple": "Apple silicon", "cpu": "CPUs"}  # fmt: skip


def engine_runs_on(engine: str, vendor: str | None) -> bool:
    """Whether ``engine`` runs on hardware of ``vendor`` (unknown: yes)."""
    makers = ENGINE_HARDWARE.get(engine)
    return makers is None or vendor is None or vendor.lower() in makers


#: TensorRT-LLM runs FP8 on NVIDIA's Ada, Hopper and Blackwell GPUs only (compute capability 8.9
#: on); vLLM and SGLang run an FP8 checkpoint on older GPUs too, as weight-only FP8 (Marlin).
FP8_MIN_CAPABILITY = {"tensorrt-llm": 8.9}


#: Formats whose kernels run on some makers' hardware only: bitsandbytes' 4-bit has CUDA,
#: ROCm, Intel (XPU) and CPU kernels, none for Apple's Metal.
FORMAT_HARDWARE = {"nf4": ("nvidia", "amd", "intel", "cpu")}


def format_runs_on(
    engine: str, quant_family: str, target: str | None, vendor: str | None = None
) -> bool:
    """Whether ``engine`` runs a ``quant_family`` format on a GPU of compute capability
    ``target`` made by ``vendor`` (unknown: yes)."""
    makers = FORMAT_HARDWARE.get(quant_family)
    if makers is not None and vendor is not None and vendor.lower() not in makers:
        return False
    need = FP8_MIN_CAPABILITY.get(engine) if quant_family == "fp8" else None
    if need is None or not target:
        return True
    try:
        return float(target) >= need
    except ValueError:
        return True


def format_words(engine: str, quant_family: str) -> str:
    """What a format needs, in words: ``"tensorrt-llm runs FP8 on GPUs of compute capability
    8.9 on only"``, ``"bitsandbytes' 4-bit runs on NVIDIA GPUs, ... and CPUs only"``."""
    if quant_family in FORMAT_HARDWARE:
        what = [_MAKERS[m] for m in FORMAT_HARDWARE[quant_family]]
        return f"bitsandbytes' 4-bit runs on {', '.join(what[:-1])} and {what[-1]} only"
    return f"{engine} runs FP8 on GPUs of compute capability {FP8_MIN_CAPABILITY[engine]:g} on only"


@lru_cache(maxsize=1024)
def _stand_in_ok(engine: str, quant_family: str, gpu: str) -> bool:
    """Whether a cloud GPU may stand in for one no cloud rents under ``engine`` and format."""
    peak = find_gpu_peak(gpu)
    if peak is None:
        return False
    return engine_runs_on(engine, peak.vendor) and format_runs_on(
        engine, quant_family, peak.target, peak.vendor
    )


def runs_on_words(engine: str) -> str:
    """``"mlx runs on Apple silicon only"``: what an engine needs, in words."""
    makers = ENGINE_HARDWARE.get(engine, ())
    what = [_MAKERS[m] for m in makers]
    listed = what[0] if len(what) == 1 else ", ".join(what[:-1]) + " and " + what[-1]
    return f"{engine} runs on {listed}{' only' if len(what) == 1 else ''}"


def _undisturbed(m: Measurement) -> bool:
    from hwadvisor.model.bench import BenchStatus

    return m.status == BenchStatus.OK and not m.disturbances


def _best(
    profile: Profile, case: str, cpu: bool, precisions: tuple[str | None, ...]
) -> float | None:
    """The best figure of ``case`` the machine's own speed may rest on, in the first precision
    that has one (``None``: triad, which has no precision), in its unit: a trusted one
    (``Measurement.trusted``), else one of low confidence (blocks that disagreed) but never one
    taken while the machine was busy or a GPU disturbed — that would size the other load."""
    bench = profile.benchmarks
    if bench is None:
        return None
    for strict in (True, False):
        for precision in precisions:
            rows = [
                m.best
                for m in bench.measurements
                if m.case == case
                and (m.device == "cpu") == cpu
                and m.precision == precision
                and m.best
                and (m.trusted if strict else _undisturbed(m))
            ]
            if rows:
                return max(rows)
    return None


#: What a healthy GPU's measured figures are of its spec-sheet peaks: a device-to-device copy
#: about 0.9 of the memory bandwidth (H200 0.89 and H100 0.90 on real runs, docs/validation.md),
#: the scan's bf16/fp16 matmul about 0.7 of the dense tensor peak (H200 0.69). The serving
#: efficiencies are fitted against peaks, so a measured figure is used as its peak equivalent:
#: a GPU that measures as healthy ones do is sized at its peak, a slower one (power-capped,
#: throttled, shared, an older driver) proportionally lower.
COPY_SHARE = 0.9
MATMUL_SHARE = 0.7


def peak_equivalent(measured: float, share: float, peak: float | None) -> float:
    """``measured / share``, never above the spec-sheet ``peak`` where there is one."""
    equivalent = measured / share
    return min(equivalent, peak) if peak else equivalent


def gpu_figures(
    row: GpuPeak | None, copy_gbs: float | None, matmul_gflops: float | None
) -> tuple[float | None, float | None, str | None]:
    """A GPU's (bandwidth B/s, FLOP/s, how) for the serving model: its measured copy and matmul
    as peak equivalents where measured, else the catalog's peaks."""
    peak_bw = row.bandwidth_gbs * 1e9 if row and row.bandwidth_gbs else None
    peak_fl = peak_flops(row, "float") if row is not None else None
    bandwidth = peak_equivalent(copy_gbs * 1e9, COPY_SHARE, peak_bw) if copy_gbs else peak_bw
    flops = (
        peak_equivalent(matmul_gflops * 1e9, MATMUL_SHARE, peak_fl) if matmul_gflops else peak_fl
    )
    note = (
        f"measured copy {copy_gbs:,.0f} GB/s ÷ {COPY_SHARE}: a healthy GPU's copy reaches "
        f"{COPY_SHARE} of its peak"
        if copy_gbs
        else None
    )
    return bandwidth, flops, note


def _apple(profile: Profile) -> bool:
    return (profile.platform.os.value or "").lower() in ("darwin", "macos")


def machine_options(profile: Profile) -> list[_Candidate]:
    """This machine as serving options: its GPUs, and its CPU with its RAM (measured figures
    where the scan has them)."""
    from hwadvisor.model.profile import assumed_like_shown

    out: list[_Candidate] = []
    gpus = [g for g in profile.gpus if g.vram_total_bytes.value and not g.lost]
    if gpus:
        first = gpus[0]
        name = first.name.value or "GPU"
        vram = int(first.vram_total_bytes.value or 0)
        row = find_gpu_peak(name, vram)
        copy = _best(profile, "device_copy", False, (None,)) or _best(
            profile, "triad", False, (None,)
        )
        matmul = _best(profile, "matmul", False, ("bf16", "fp16", "tf32", "fp32"))
        bandwidth, flops, note = gpu_figures(row, copy, matmul)
        measured = copy is not None
        slice_name = None
        slices = [m for m in first.mig_instances if m.memory_total_bytes.value]
        if first.mig_enabled.value and slices:
            # A process runs on one MIG slice: its memory, and a share of the GPU's bandwidth
            # (memory slices) and FLOPs (SMs). A measured copy was taken on the slice already.
            big = max(slices, key=lambda m: int(m.memory_total_bytes.value or 0))
            share = int(big.memory_total_bytes.value or 0) / vram
            if copy is None and bandwidth:
                bandwidth *= share
            if matmul is None and flops:
                flops *= share
            vram = int(big.memory_total_bytes.value or 0)
            slice_name = big.name.value or f"{vram / 2**30:.0f} GiB MIG slice"
        if bandwidth and flops:
            # With the GPUs an import counts but does not show, where the shown are one model;
            # a MIG slice is one device (no tensor parallelism across slices).
            assumed = 0 if slice_name else assumed_like_shown(profile.gpus)
            n = 1 if slice_name else len(gpus) + assumed
            out.append(
                _Candidate(
                    hardware=(f"this machine: {n}× {name}" if n > 1 else f"this machine: {name}")
                    + (f" (one MIG slice: {slice_name})" if slice_name else "")
                    + (
                        f" ({assumed} not in the imported text, assumed to be the same)"
                        if assumed
                        else ""
                    ),
                    origin="this machine",
                    scenario_class=2 if n == 1 else 3,
                    gpus=n,
                    memory=DeviceMemory(kind="gpu", total_bytes=vram, count=n, name=name),
                    speed=DeviceSpeed(
                        bandwidth_bytes_s=bandwidth,
                        flops_s=flops,
                        kind=peak_kind(row) if row else "gpu",
                        count=n,
                        link_bytes_s=(row.gpu_link_gbs * 1e9) if row and row.gpu_link_gbs else None,
                        measured=measured,
                        note=note,
                        fast_matmul=fast_matmul_factor(row),
                        int8_dot=int8_dot_factor(row),
                    ),
                    price_gpu=row.name if row else None,
                    vendor=(row.vendor or None) if row else None,
                    target=row.target if row else None,
                )
            )
    ram = profile.memory.total_bytes.value
    cpu_triad = _best(profile, "triad", True, (None,))
    cpu_matmul = _best(profile, "matmul", True, ("bf16", "fp32"))
    apple_note = None
    if _apple(profile):
        # Apple silicon: the GPU decodes (Metal, MLX) and reads unified memory faster than the
        # CPU cores' triad can; the scan's MPS copy and matmul measure what the GPU sees.
        mps_copy = _best(profile, "device_copy", False, (None,))
        mps_matmul = _best(profile, "matmul", False, ("fp16", "bf16", "fp32"))
        if mps_copy:
            cpu_triad = mps_copy / COPY_SHARE
            apple_note = (
                f"measured GPU copy {mps_copy:,.0f} GB/s ÷ {COPY_SHARE}, as for a discrete GPU"
            )
        if mps_matmul:
            cpu_matmul = max(cpu_matmul or 0.0, mps_matmul)
    if ram and cpu_triad and cpu_matmul:
        cpu = profile.cpu.model_name.value or "CPU"
        out.append(
            _Candidate(
                hardware=f"this machine: {cpu} ({int(ram) / 2**30:.0f} GiB RAM)",
                origin="this machine",
                scenario_class=1,
                gpus=0,
                memory=DeviceMemory(
                    kind="unified" if _apple(profile) else "cpu",
                    total_bytes=int(ram),
                    name=cpu,
                    platform="macos" if _apple(profile) else "linux",
                ),
                speed=DeviceSpeed(
                    bandwidth_bytes_s=cpu_triad * 1e9,
                    flops_s=cpu_matmul * 1e9,
                    kind="unified" if apple_note else SCANNED_CPU,
                    measured=True,
                    note=apple_note,
                ),
                price_gpu=None,
                cores=profile.cpu.physical_cores.value,
                vendor="apple" if apple_note or _apple(profile) else "cpu",
            )
        )
    return out


def _assumed_candidate(
    resolved: ResolvedGpu, name: str, count: int, family: str
) -> tuple[_Candidate, str | None]:
    """The GPU the user assumes, and a note on what was assumed of it; a row whose memory
    varies (an Apple chip as unified memory) sized as :func:`varying_memory` says. What cannot
    be sized is said, never dropped."""
    row = resolved.peak
    apple = (row.vendor or "").lower() == "apple"
    gib, note = varying_memory(resolved)
    if apple and gib is None:
        raise UsageError(
            f"--assume-gpu {name!r}: an Apple chip's unified memory varies per machine: "
            f"give it in the name, for example {row.name + ' 64GB'!r}"
        )
    if apple and count > 1:
        raise UsageError(f"--assume-gpu {name!r}: --gpus counts discrete GPUs, not Macs")
    if gib:  # a row whose memory varies: the size named, or the least sold
        row = dataclasses.replace(row, memory_gb=gib)
    c = _catalog_candidate(row, count, "assumed", family)
    if c is None:
        raise UsageError(
            f"--assume-gpu {name!r}: the catalog lacks its memory, bandwidth or FLOPs "
            "(a memory size in the name, such as '24GB', supplies the first)"
        )
    if apple and gib:
        _as_mac(c, _labelled(row.name, f"{gib:.0f} GiB unified memory"))
    elif row.unified_memory:
        # an APU or GB10: the computer's RAM, less what the OS keeps (an AMD APU's carve-out
        # and GTT are said in the memory's note)
        size = f"{row.memory_gb:.0f} GiB"
        c.hardware = _labelled(row.name, f"{size} unified memory")
        c.memory = dataclasses.replace(
            c.memory, kind="unified", apu=(row.vendor or "").lower() == "amd"
        )
    return c, note


def _cannot_run_note(engine: str, quant_family: str, cannot: list[_Candidate]) -> str:
    """Why this machine is not sized: the engine (or the format) does not run on its parts."""
    need = (
        runs_on_words(engine)
        if any(not engine_runs_on(engine, c.vendor) for c in cannot)
        else format_words(engine, quant_family)
    )
    # a part as the note names it: its GPU, or its CPU without the RAM
    parts = ", ".join(c.hardware.removeprefix("this machine: ").split(" (")[0] for c in cannot)
    return f"not sized: {need} (this machine: {parts})"


def _labelled(name: str, memory: str) -> str:
    """``name`` with its memory, one parenthesis: "Apple M1 Max (24-core GPU, 32 GiB ...)"."""
    return f"{name[:-1]}, {memory})" if name.endswith(")") else f"{name} ({memory})"


def _as_mac(c: _Candidate, label: str) -> None:
    """``c`` as a Mac: unified memory (Metal's working-set limit) and the unified-memory
    efficiency."""
    c.hardware = label
    c.memory, c.speed = _mac_devices(c.memory, c.speed)


@lru_cache(maxsize=256)
def _mac_devices(memory: DeviceMemory, speed: DeviceSpeed) -> tuple[DeviceMemory, DeviceSpeed]:
    """A catalog row's devices as a Mac's, made once per row (what is worked out per device,
    its usable memory, is then worked out once too)."""
    return (
        dataclasses.replace(memory, kind="unified", platform="macos"),
        dataclasses.replace(speed, kind="unified"),
    )


def _mac_options(prices: Prices, catalog: dict[str, GpuPeak], family: str) -> list[_Candidate]:
    """The Macs the price catalog sells (``[[system]]`` rows with an Apple chip and its unified
    memory), each an option of its own: bought whole, no host around it."""
    out = []
    for system in prices.systems:
        row = catalog.get(system.gpu or "")
        if row is None or not system.memory_gb or (row.vendor or "").lower() != "apple":
            continue
        c = _catalog_candidate(_with_memory(row, system.memory_gb), 1, "catalog", family)
        if c is not None:
            _as_mac(c, system.key)
            c.whole = True
            out.append(c)
    return out


def _resolve_gpu_or_say_cpu(name: str) -> ResolvedGpu:
    """``name`` as a GPU; a name the GPU catalog lacks and the CPU catalog has is a usage
    error that points to --assume-cpu."""
    try:
        return resolve_gpu(name)
    except UsageError as exc:
        from hwadvisor.catalog.cpus import find_cpu

        cpu = find_cpu(name)
        if cpu is None:
            raise
        raise UsageError(
            f"--assume-gpu {name!r}: {cpu.name} is a CPU: --assume-cpu {name!r} sizes it"
        ) from exc


def _assumed_cpu(typed: str, engine: str, family: str, notes: list[str]) -> _Candidate:
    """A CPU of the CPU catalog as the user named it (its RAM and memory speed read from the
    name), sized at its peaks: a desktop or server chip under :data:`DESKTOP_CPU`'s
    efficiencies, a laptop's or a board's under the CPU kind's; an engine or format that
    does not run on CPUs is a usage error."""
    from hwadvisor.catalog.cpus import resolve_cpu

    cpu = resolve_cpu(typed)
    if not engine_runs_on(engine, "cpu"):
        raise UsageError(f"--assume-cpu {typed!r}: {runs_on_words(engine)}")
    if not format_runs_on(engine, family, None, "cpu"):
        raise UsageError(f"--assume-cpu {typed!r}: {format_words(engine, family)}")
    if cpu.note:
        notes.append(f"{cpu.spec.name}: {cpu.note}")
    return _Candidate(
        hardware=f"{cpu.spec.name} with {cpu.memory_gb:g} GB RAM",
        origin="assumed",
        scenario_class=1,
        gpus=0,
        memory=_cpu_memory(cpu.spec.name, cpu.memory_gb),
        speed=_cpu_speed(
            cpu.bandwidth_gbs,
            cpu.spec.fp32_tflops,
            DESKTOP_CPU if cpu.spec.segment in ("desktop", "server") else "cpu",
        ),
        price_gpu=None,
        cores=cpu.spec.cores,
        vendor="cpu",
    )


def _cpu_options(prices: Prices) -> list[_Candidate]:
    """The computers without a GPU the price catalog sells with their memory's bandwidth and
    their cores' FLOPs (``[[system]]`` rows with ``memory_bandwidth_gbs``): each the CPU
    option (class 1), bought whole, a desktop sized at its peaks x :data:`DESKTOP_CPU`'s
    efficiencies."""
    out = []
    for system in prices.systems:
        if system.gpu or not (
            system.memory_gb and system.memory_bandwidth_gbs and system.cpu_tflops
        ):
            continue
        out.append(
            _Candidate(
                hardware=system.key,
                origin="catalog",
                scenario_class=1,
                gpus=0,
                # a "32 GB" kit is binary gigabytes, as a GPU's memory is read
                memory=_cpu_memory(system.key, system.memory_gb),
                # the CPU option is a desktop computer
                speed=_cpu_speed(system.memory_bandwidth_gbs, system.cpu_tflops, DESKTOP_CPU),
                price_gpu=None,
                cores=system.cores,
                vendor="cpu",
                whole=True,
            )
        )
    return out


@lru_cache(maxsize=64)
def _cpu_memory(name: str, memory_gb: float) -> DeviceMemory:
    return DeviceMemory(kind="cpu", total_bytes=int(memory_gb * 2**30), name=name)


@lru_cache(maxsize=64)
def _cpu_speed(bandwidth_gbs: float, tflops: float, kind: str) -> DeviceSpeed:
    return DeviceSpeed(
        bandwidth_bytes_s=bandwidth_gbs * 1e9, flops_s=tflops * 1e12, kind=kind, measured=False
    )


@lru_cache(maxsize=256)
def _with_memory(row: GpuPeak, memory_gb: float) -> GpuPeak:
    """``row`` with ``memory_gb`` (a Mac's unified memory): one row per size, so that what is
    worked out per row (its devices) is worked out once."""
    return dataclasses.replace(row, memory_gb=memory_gb)


def _catalog_candidate(row: GpuPeak, count: int, origin: str, family: str) -> _Candidate | None:
    devices = catalog_devices(row, count, family)
    if devices is None:
        return None
    speed, memory = devices
    nodes = max(1, math.ceil(count / _MAX_PER_MACHINE))
    per_node = min(count, _MAX_PER_MACHINE)
    cls = 2 if count == 1 else 3 if nodes == 1 else 4
    label = f"{count}× {row.name}" if count > 1 else row.name
    if nodes > 1:
        label = f"{nodes} machines of {per_node}× {row.name}"
    return _Candidate(
        hardware=label,
        origin=origin,
        scenario_class=cls,
        gpus=count,
        memory=memory,
        speed=speed,
        price_gpu=row.name,
        nodes=nodes,
        vendor=row.vendor or None,
        target=row.target,
    )


def _obtained_class(c: _Candidate, costs: Costs) -> int | None:
    """The option's scenario class as it can be had: one GPU sold only on a multi-GPU
    baseboard and rented only in multi-GPU instances (an MI300X, 8 at a time) is one
    multi-GPU machine or instance, not "one GPU"."""
    if c.scenario_class != 2 or c.origin == "this machine":
        return c.scenario_class
    lots = [n for n in (costs.lot, costs.rented_gpus if not costs.rented_stand_in else None) if n]
    return 3 if lots and min(lots) > c.gpus else c.scenario_class


def _estimate(
    c: _Candidate,
    geom: LlmGeometry,
    quant: Any,
    req: ServeRequest,
    prices: Prices,
) -> InferenceEstimate:
    plan = plan_serve_memory(
        geom,
        quant,
        context=_context(req),
        sequences=req.users,
        engine=req.engine,
        kv_cache=req.kv_cache,
        device=c.memory,
    )
    speed = estimate_speed(
        geom,
        quant,
        context=_context(req),
        depth=reply_depth(req),
        engine=req.engine,
        device=c.speed,
        users=req.users,
        prompt_tokens=req.prompt_tokens,
        reply_tokens=req.reply_tokens,
        target_tok_s=req.target_tok_s,
        users_cap=users_memory_holds(plan),
    )
    per_user = speed.per_user_tok_s
    users_at_target = speed.users_at_target
    meets = bool(
        plan.fits
        and per_user is not None
        and per_user >= req.target_tok_s
        and speed.ttft_s <= req.max_ttft_s
        and (users_at_target is None or users_at_target >= req.users)
    )
    gpus = max(1, c.gpus // c.nodes) if c.gpus else 0
    family = getattr(quant, "family", "float")
    mac = c.memory.kind == "unified"
    costs = prices.remembered(
        ("serve", c.price_gpu, gpus, c.cores, c.nodes, mac, req.engine, family),
        lambda: option_costs(
            prices,
            gpu=c.price_gpu,
            gpus=gpus,
            cores=c.cores,
            nodes=c.nodes,
            seconds=3600.0,
            # a GPU no cloud rents is stood in for by one the engine runs the format on; a Mac
            # by none (no cloud GPU holds its unified memory)
            stand_in_ok=(lambda gpu: False) if mac else partial(_stand_in_ok, req.engine, family),
        ),
    )
    if c.origin == "catalog" and not c.gpus and c.whole:
        # A cloud's vCPUs are a share of a server's memory channels, not this computer's
        # bandwidth: the CPU option is bought, not rented.
        costs = dataclasses.replace(
            costs, hourly=None, rent_as=None, rented_stand_in=False, rented_gpus=None
        )
    elif c.origin == "assumed" and not c.gpus:
        costs = Costs()  # an assumed CPU: no price book prices a computer around it
    tokens_per_hour = (speed.throughput_tok_s or 0.0) * 3600
    rented = costs.hourly / tokens_per_hour * 1e6 if costs.hourly and tokens_per_hour > 0 else None
    owned = (
        costs.watts / 1000 * prices.kwh_price / tokens_per_hour * 1e6
        if costs.watts and tokens_per_hour > 0
        else None
    )
    # Built from trusted figures (no user string): constructed without re-validation, which
    # was a fifth of a sweep's time.
    return constructed(
        InferenceEstimate,
        hardware=c.hardware,
        origin=c.origin,
        scenario_class=_obtained_class(c, costs),
        gpus=c.gpus,
        fits_memory=plan.fits,
        memory_needed_bytes=int(plan.total_bytes),
        memory_available_bytes=int(plan.usable_bytes),
        memory=constructed(
            ServeMemoryBreakdown,
            weights_bytes=int(plan.weights_bytes),
            kv_bytes=int(plan.kv_bytes),
            buffers_bytes=int(plan.buffers_bytes),
            runtime_bytes=int(plan.runtime_bytes),
            total_bytes=int(plan.total_bytes),
            usable_bytes=int(plan.usable_bytes),
            headroom_bytes=int(plan.headroom_bytes),
            max_context_that_fits=getattr(plan, "max_context_that_fits", None),
            usable_note=getattr(plan, "usable_note", None),
        ),
        decode_tok_s=speed.decode_tok_s,
        decode_low_tok_s=speed.decode_low,
        decode_high_tok_s=speed.decode_high,
        decode_full_context_tok_s=speed.decode_full_context_tok_s,
        prefill_tok_s=speed.prefill_tok_s,
        time_to_first_token_s=speed.ttft_s,
        throughput_tok_s=speed.throughput_tok_s,
        per_user_tok_s=per_user,
        users_at_target=users_at_target,
        meets_target=meets,
        measured=c.speed.measured,
        basis=speed.basis,
        purchase_cost=costs.purchase,
        hourly_cost=costs.hourly,
        rent_as=costs.rent_as,
        rented_stand_in=costs.rented_stand_in,
        rented_gpus=costs.rented_gpus,
        bought_gpus=costs.bought_gpus,
        bought_whole=c.whole,
        cost_per_million_tokens_rented=rented,
        cost_per_million_tokens_owned=owned,
        price_date=costs.date,
        price_source=costs.source,
        suggestions=list(plan.suggestions) if not plan.fits else [],
    )


def users_memory_holds(plan: ServeMemory) -> int:
    """How many users' whole contexts the memory left after the weights, buffers and runtime
    holds (a speed that would serve more is no use past it)."""
    if plan.kv_per_sequence_bytes <= 0:
        return MAX_USERS
    pool = plan.usable_bytes - plan.weights_bytes - plan.buffers_bytes - plan.runtime_bytes
    return max(0, min(MAX_USERS, int(pool // plan.kv_per_sequence_bytes)))


def _cost_key(e: InferenceEstimate) -> tuple[bool, float, float]:
    price = e.purchase_cost if e.purchase_cost is not None else math.inf
    hourly = e.hourly_cost if e.hourly_cost is not None else math.inf
    return (price == math.inf and hourly == math.inf, price, hourly)


def with_context(request: ServeRequest, geom: LlmGeometry) -> ServeRequest:
    """``request`` with its context settled: the one given, else :data:`DEFAULT_CONTEXT` or
    the model's own window where that is shorter (Llama 2's 4,096)."""
    if request.context is not None:
        return request
    window = geom.max_context or DEFAULT_CONTEXT
    return dataclasses.replace(request, context=min(DEFAULT_CONTEXT, window))


def _engine_default_note(
    geom: LlmGeometry, quant: Any, request: ServeRequest, hardware: list[_Candidate]
) -> str | None:
    """With Ollama, :func:`_ollama_default_note`. With vLLM: where no --context was given and
    vLLM would start at the model's whole window (its
    ``--max-model-len`` defaults to it) but the first machine in question (this one, or the
    GPU assumed) does not hold one sequence that long, though it holds the context sized:
    vLLM then refuses to start ("the model's max seq len is larger than the maximum number of
    tokens that can be stored in KV cache"), so the answer says which ``--max-model-len`` to
    start it with."""
    if request.engine == "ollama":
        return _ollama_default_note(geom, quant, request, hardware)
    window = geom.max_context
    if request.engine != "vllm" or not window or window <= _context(request):
        return None
    for c in hardware:
        longest = max_context(geom, quant, 1, request.engine, request.kv_cache, c.memory, window)
        if _context(request) <= longest < window:
            return (
                f"vllm serve without --max-model-len takes {geom.name}'s whole "
                f"{window:,}-token window, which {c.hardware} does not hold ({longest:,} "
                f"tokens at most): start it with --max-model-len {_context(request)}, the "
                "context sized here"
            )
        if longest < window:
            return None  # the context sized does not fit either: the suggestions say so
    return None


#: Ollama's context when none is set, by the GPU memory it finds (its context-length page:
#: "< 24 GiB VRAM: 4k context, 24-48 GiB VRAM: 32k context, >= 48 GiB VRAM: 256k context").
#: Its server (server/routes.go, August 2026) sums the GPUs' total memory and starts the tiers
#: at 23 and 47 GiB "to account for small differences" (an RTX 4090 reports 24,564 MiB); it
#: caps the context at the model's trained length (llm/server.go).
OLLAMA_DEFAULT_CONTEXTS = ((23 * 2**30, 4096), (47 * 2**30, 32768), (math.inf, 262144))


def ollama_default_context(memory: DeviceMemory, window: int | None) -> int:
    """The context Ollama gives a model on ``memory`` when none is set: by the GPU memory it
    finds (Apple silicon's Metal working set; none on a CPU), never past the model's window."""
    if memory.kind == "cpu":
        vram = 0.0
    elif memory.kind == "unified":
        vram = apple_working_set(memory.total_bytes)
    else:
        vram = float(memory.total_bytes * memory.count)
    context = next(tokens for below, tokens in OLLAMA_DEFAULT_CONTEXTS if vram < below)
    return min(context, window) if window else context


def _ollama_default_note(
    geom: LlmGeometry, quant: Any, request: ServeRequest, hardware: list[_Candidate]
) -> str | None:
    """Where no --context was given: the context Ollama would give the model on the first
    machine in question when none is set, where that is not the one sized, and whether it
    fits there (where it does not, Ollama keeps part of the model in RAM and decodes slower)."""
    if not hardware:
        return None
    c = hardware[0]
    default = ollama_default_context(c.memory, geom.max_context)
    sized = _context(request)
    if default == sized:
        return None
    head = (
        f"ollama gives {geom.name} a {default:,}-token context by default on {c.hardware} "
        "(4k under 24 GiB of GPU memory, 32k to 48, 256k above), not the "
        f"{sized:,} sized here"
    )
    if default < sized:
        return (
            f"{head}: it runs with the shorter context unless OLLAMA_CONTEXT_LENGTH={sized} "
            "(or num_ctx) asks for what is sized here"
        )
    plan = plan_serve_memory(
        geom, quant, context=default, sequences=request.users, engine=request.engine,
        kv_cache=request.kv_cache, device=c.memory,
    )  # fmt: skip
    if plan.fits:
        return f"{head}: that fits too ({plan.total_bytes / 2**30:.1f} GiB)"
    return (
        f"{head}, and does not fit ({plan.total_bytes / 2**30:.1f} GiB of "
        f"{plan.usable_bytes / 2**30:.1f}): Ollama would keep part of the model in RAM and "
        f"decode slower; OLLAMA_CONTEXT_LENGTH={sized} keeps what is sized here"
    )


def reply_depth(request: ServeRequest) -> int:
    """The KV depth decode is timed at: a reply's middle (its prompt and half the reply),
    as the serving benchmarks the model is fitted to count it, never past the context."""
    return min(_context(request), request.prompt_tokens + request.reply_tokens // 2)


def _context(request: ServeRequest) -> int:
    return request.context if request.context is not None else DEFAULT_CONTEXT


def check_request(request: ServeRequest) -> tuple[LlmGeometry, Any]:
    """The model's shape and the quantization the answer will use; a bad engine, number,
    model, quantization or KV-cache type is a usage error (exit 2), raised before any work."""
    if request.engine not in ENGINES:
        raise UsageError(f"--engine {request.engine!r}: choose one of {', '.join(ENGINES)}")
    for name, value in (
        ("--context", _context(request)),
        ("--users", request.users),
        ("--prompt-tokens", request.prompt_tokens),
        ("--reply-tokens", request.reply_tokens),
    ):
        if value < 1:
            raise UsageError(f"{name} must be at least 1, got {value}")
    if not (request.target_tok_s > 0 and math.isfinite(request.target_tok_s)):
        raise UsageError(f"--target-tok-s must be a positive number, got {request.target_tok_s}")
    if not (request.max_ttft_s > 0 and math.isfinite(request.max_ttft_s)):
        raise UsageError(
            f"--max-ttft must be a positive number of seconds, got {request.max_ttft_s}"
        )
    kv_bytes_per_value(request.kv_cache)  # an unknown KV-cache type is refused here
    geom, file_quant = model_geometry(request.model, request.engine)
    native = geom.native_quant
    if native is not None and request.engine not in find_quant(native).engines:
        native = None  # DeepSeek's fp8 in llama.cpp: the engine's own default
    quant = find_quant(
        request.quant or file_quant or native or default_quant(request.engine), request.engine
    )
    if request.engine not in quant.engines and not (
        request.engine == "ollama" and "llama.cpp" in quant.engines
    ):
        path = Path(request.model)
        a_file = path.suffix.lower() in (".gguf", ".json", ".safetensors") or path.is_file()
        said = "--quant" if request.quant else "the file" if a_file else "the model's name"
        raise UsageError(
            f"{quant.name} ({said}) is not a format {request.engine} runs ("
            f"{', '.join(quant.engines)} do): give --engine, or another --quant"
        )
    return geom, quant


def serve_advice(
    profile: Profile | None,
    request: ServeRequest,
    prices: Prices | None = None,
    checked: tuple[LlmGeometry, Any] | None = None,
) -> InferenceAdvice:
    """The whole inference answer for ``request`` on the machine of ``profile`` (``None``:
    assumed and catalog hardware only); ``checked`` is what :func:`check_request` already
    returned for it (a model file is read once)."""
    geom, quant = checked if checked is not None else check_request(request)
    context_given = request.context is not None
    request = with_context(request, geom)
    prices = prices or builtin_prices()
    family = getattr(quant, "family", "float")
    candidates = machine_options(profile) if profile is not None else []
    # this machine's parts the engine cannot run on are left out, and said
    cannot = [
        c
        for c in candidates
        if not engine_runs_on(request.engine, c.vendor)
        or not format_runs_on(request.engine, family, c.target, c.vendor)
    ]
    candidates = [c for c in candidates if c not in cannot]
    notes: list[str] = []
    for typed in request.assume_cpu:
        candidates.append(_assumed_cpu(typed, request.engine, family, notes))
    for typed in request.assume_gpu:
        name, count = split_count(typed, request.gpus)  # "8x H200", or --gpus
        resolved = _resolve_gpu_or_say_cpu(name)  # "3090", "M1 Max 24-core", "A6000"
        assumed = resolved.peak
        if resolved.note:
            notes.append(resolved.note)
        if not engine_runs_on(request.engine, assumed.vendor):
            raise UsageError(
                f"--assume-gpu {name!r}: {runs_on_words(request.engine)} "
                "(--engine llama.cpp runs on every GPU)"
            )
        if not format_runs_on(request.engine, family, assumed.target, assumed.vendor):
            raise UsageError(
                f"--assume-gpu {name!r}: {format_words(request.engine, family)} "
                + (
                    "(--engine llama.cpp runs GGUF's 4-bit formats on every GPU)"
                    if family in FORMAT_HARDWARE
                    else f"(this is {assumed.target}; --engine vllm runs FP8 weights on it)"
                )
            )
        candidate, note = _assumed_candidate(resolved, name, count, family)
        candidates.append(candidate)
        if note:
            notes.append(note)
    estimates = [_estimate(c, geom, quant, request, prices) for c in candidates]
    catalog = catalog_by_name()
    priced = set(prices.cards) | {r.gpu for r in prices.instances if r.gpu}
    # What any option must hold at least: the weights and every user's KV cache.
    weights = geom.params_total * quant.bits_per_weight / 8 + geom.kv_bytes(
        _context(request), kv_bytes_per_value(request.kv_cache), request.users
    )
    for name in sorted(priced):
        row = catalog.get(name)
        if row is None or not engine_runs_on(request.engine, row.vendor):
            continue
        if not format_runs_on(request.engine, family, row.target, row.vendor):
            continue
        for count in (1, 2, 4, 8, 16, 32, 64):
            if count > _MAX_PER_MACHINE * _MAX_MACHINES:
                break
            if count > 1 and row.gpu_class == "consumer" and count > 4:
                break  # consumer cards: at most 4 in one workstation
            if row.memory_gb and count * row.memory_gb * 1e9 < weights:
                continue  # the weights and KV cache alone do not fit: no plan needed
            c = _catalog_candidate(row, count, "catalog", family)
            if c is None:
                break
            estimate = _estimate(c, geom, quant, request, prices)
            estimates.append(estimate)
            if estimate.meets_target:
                break  # more of this GPU only costs more: the fewest that serve it
    if engine_runs_on(request.engine, "cpu") and format_runs_on(
        request.engine, family, None, "cpu"
    ):
        estimates += [_estimate(c, geom, quant, request, prices) for c in _cpu_options(prices)]
    if engine_runs_on(request.engine, "apple") and format_runs_on(
        request.engine, family, None, "apple"
    ):
        estimates += [
            _estimate(c, geom, quant, request, prices)
            for c in _mac_options(prices, catalog, family)
        ]
    here = next((e for e in estimates if e.origin == "this machine" and e.gpus), None) or next(
        (e for e in estimates if e.origin == "this machine"), None
    )
    meeting = [e for e in estimates if e.meets_target and e.origin != "this machine"]
    scenario = min((e.scenario_class for e in meeting), default=None)
    if here is not None and here.meets_target:
        scenario = min(scenario or here.scenario_class, here.scenario_class)
    recommendation = cheapest_to_rent = None
    if scenario is not None:
        same = [e for e in meeting if e.scenario_class == scenario]
        # One count per GPU model: the fewest cards of it that serve the model.
        fewest: dict[str, InferenceEstimate] = {}
        for e in sorted(same, key=lambda e: e.gpus):
            fewest.setdefault(e.hardware.split("× ")[-1], e)
        recommendation = min(fewest.values(), key=_cost_key, default=None)
        # Renting is by the hour whatever the class: the cheapest instance that serves the
        # target, of any class (a one-GPU class whose only rental is an 8-GPU instance must
        # not hide a 4-GPU one at a tenth of the price). What one rents is the instance: a GPU
        # no cloud offers is not "rented" through a faster stand-in (that GPU's own option is
        # there).
        any_class: dict[str, InferenceEstimate] = {}
        for e in sorted(meeting, key=lambda e: e.gpus):
            any_class.setdefault(e.hardware.split("× ")[-1], e)
        rented = [
            e for e in any_class.values() if e.hourly_cost is not None and not e.rented_stand_in
        ]
        cheapest_to_rent = min(
            rented, key=lambda e: (e.hourly_cost, e.purchase_cost or math.inf), default=None
        )
    note = None
    if here is None:
        note = (
            "not sized: no saved profile was read (`hwadvisor scan`, or -p FILE, puts this "
            "machine beside the assumed hardware)"
            if profile is None
            else _cannot_run_note(request.engine, family, cannot)
            if cannot
            else "not sized: its profile has no trusted measurement of its memory bandwidth "
            "(none, or taken while it was busy): `hwadvisor scan` on an idle machine measures it"
        )
    caveats = list(notes)
    if not context_given and (default := _engine_default_note(geom, quant, request, candidates)):
        caveats.append(default)
    if geom.max_context and _context(request) > geom.max_context:
        caveats.append(
            f"{geom.name} was trained on a {geom.max_context:,}-token window: "
            f"{_context(request):,} tokens are sized as asked, but past its window it needs "
            "RoPE scaling and answers worse"
        )
    if request.engine in ENGINE_HARDWARE and not any(e.origin == "catalog" for e in estimates):
        caveats.append(
            f"{runs_on_words(request.engine)}, and the price catalog holds none to compare: "
            "--assume-gpu (for example 'Apple M4 Max 64GB') sizes one; --engine llama.cpp "
            "compares the GPUs to buy"
        )
    if here is not None and not here.measured:
        caveats.append(
            "this machine's speed is from catalog peaks: `hwadvisor scan` measures its bandwidth"
        )
    if any(not e.measured for e in estimates):
        caveats.append(
            "catalog hardware: speed from its published bandwidth and FLOPs × the efficiencies "
            "fitted to published measurements (docs/inference-model.md)"
        )
    # Built from figures the advice computed and names it checked: constructed, with every
    # string made visible as validation would (a model file's name is input).
    return constructed(
        InferenceAdvice,
        model=visible(geom.name),
        model_source=visible(geom.source),
        params_total=float(geom.params_total),
        params_active=float(geom.params_active),
        quant=quant.name,
        bits_per_weight=float(quant.bits_per_weight),
        context=_context(request),
        engine=request.engine,
        users=request.users,
        target_tok_s=float(request.target_tok_s),
        max_ttft_s=float(request.max_ttft_s),
        prompt_tokens=request.prompt_tokens,
        reply_tokens=request.reply_tokens,
        kv_cache=request.kv_cache,
        decode_depth_tokens=reply_depth(request),
        scenario_class=scenario,
        this_machine=here,
        this_machine_note=None if note is None else visible(note),
        recommendation=recommendation,
        cheapest_to_rent=cheapest_to_rent,
        estimates=estimates,
        currency=prices.currency,
        kwh_price=float(prices.kwh_price),
        caveats=[visible(caveat) for caveat in caveats],
    )
