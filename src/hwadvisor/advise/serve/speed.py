"""Speed of serving a model, from a device's memory bandwidth and FLOPs.

- decode (batch 1) is memory-bound: each token reads the weights it uses once, each class of
  tensor at the width it is stored (:func:`decode_weight_bytes`: not the input embedding's
  table, the head at its own width), and the KV cache at the context depth;
  ``decode = bandwidth x efficiency / bytes_per_token``;
- prefill is compute-bound: ``2 x params_active`` FLOPs per token plus attention
  (``4 x layers x heads x head_dim x position``, at the prompt's mean position);
  ``prefill = flops x efficiency / flops_per_token``;
- batched decode: one step reads the weights once for the whole batch (a MoE touches
  ``1 - (1 - k/E)^users`` of its experts) and each sequence's KV; it is bounded below by the
  compute of ``2 x params_active x users`` FLOPs;
- partial CPU offload: the offloaded share of the bytes is read at the RAM bandwidth;
- tensor parallel (the vLLM family): the bandwidth and FLOPs of ``count`` devices times a link
  factor; layer split (llama.cpp, Ollama, MLX, transformers): the layers run one device after
  another, so a token takes as long as on one device (the memory of all of them holds it).

The efficiencies are general rules (per engine family x quant family x phase) fitted by
``scripts/fit_serve.py`` on ``catalog/serve_calibration.toml`` and read from
``catalog/serve_model.toml``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from hwadvisor.advise.serve.memory import DeviceMemory, GiB, tensor_bytes, weights_bytes
from hwadvisor.advise.serve.quant import Quant, kv_bytes_per_value
from hwadvisor.advise.serve.search import last_at_or_above_zero
from hwadvisor.catalog.llm_geometry import LlmGeometry
from hwadvisor.catalog.peaks import GpuPeak
from hwadvisor.catalog.toml import packaged_data
from hwadvisor.errors import InputError

PRIOR_DECODE = 0.6
PRIOR_PREFILL = 0.4
NVLINK_FACTOR = 0.85
PCIE_FACTOR = 0.7
FAST_LINK_BYTES_S = 100e9
MAX_USERS = 4096


#: NVIDIA GPUs before Volta (compute capability below 7.0: Pascal, Maxwell, Kepler). llama.cpp
#: and the other engines decode on them at a lower share of their bandwidth (GTX 1050 Ti 0.5x,
#: GTX 1080 Ti 0.75x of the rule fitted on newer cards): their own level of the fit.
LEGACY_GPU = "gpu-legacy"
SCANNED_CPU = "cpu-scanned"
"""This machine's CPU as the scan measured it: its triad and fp32 matmul, not a chip's peaks
(which the other CPU kinds' runs give). llama.cpp on this project's 2-vCPU machine decoded at
1.6-2.0x and prefilled at 2.3-4.0x what the laptop-fitted CPU rule put on those figures: a
triad is what the cores read, and llama.cpp's integer kernels outrun the fp32 matmul. Its own
level under ``cpu``; other engines fall back to ``cpu`` (the eager reference runs)."""
DESKTOP_CPU = "cpu-desktop"
"""A desktop, workstation or server processor on its socket's DIMMs (a Ryzen 7950X, a
Threadripper, an EPYC, a Graviton), sized from the CPU catalog: llama.cpp decodes there at
1.5-2.4x the CPU rule fitted on laptops and mini PCs, which run power-limited and often with
slower memory than their chip takes. Its own level under ``cpu``."""
INTEL_GPU = "gpu-intel"
"""Intel's GPUs (Arc, Data Center GPU Max): a kind of their own, so that runs on them are not
averaged with NVIDIA's and AMD's; where a family has none they fall back to ``gpu`` and the
basis says so."""
HBM_GPU = "gpu-hbm"
"""NVIDIA's data-center GPUs of :data:`HBM_MIN_GBS` or more (A100, H100, H200, B200, GH200 and
their export variants): llama.cpp's kernels, tuned on GeForce cards, read a smaller share of
HBM's bandwidth (an A100 PCIe decodes a 7B F16 at 0.82 and an H100 PCIe a 7B Q4_K_M at 0.65 of
the GPU rule fitted with them), and fitted with the GeForce cards they set its time per step too
long for those. Its own level under ``gpu``: a family with no run on one falls back to ``gpu``."""
HBM_FAMILIES = ("llama.cpp",)
"""The engine families whose runs are told apart on :data:`HBM_GPU`: llama.cpp's (GGUF kernels
written for GeForce cards); vLLM's and the others' treat it as any ``gpu`` (their runs on H100s
are most of their GPU runs, and split off they left the batched-serving fit worse)."""
HBM_MIN_GBS = 1500.0
"""The bandwidth from which an NVIDIA data-center GPU counts as HBM's (the A100 40 GB's 1,555
GB/s; the V100's 900 and the GDDR L40S's 864 stay ``gpu``)."""
INSTINCT_GPU = "gpu-instinct"
"""AMD's GCN and CDNA GPUs (gfx9: the Instinct line, GCN's MI50/MI60 to CDNA's MI100-MI355X,
and Vega/Radeon VII), wave64 where AMD's Radeon cards since RDNA (gfx10-12) are wave32 and
llama.cpp's HIP kernels are tuned for those: two MI50s decode a 14B Q4_0 at 0.47 and eight
MI300X a 70B Q4_K_M at 0.44 of what the GPU rule gives. Its own level under ``gpu``, as Pascal
is."""
AMD_APU = "unified-amd"
"""An AMD APU's GPU on its unified memory (Strix Halo): Radeon kernels on Vulkan or ROCm, not
Apple's Metal; refines ``unified``."""
INTEL_ALCHEMIST_GPU = "gpu-intel-alchemist"
"""Intel's first Arc generation (Xe-HPG, "Alchemist": A770, A750, A380, the A-series laptops,
Flex 170): llama.cpp decodes a 7B there at about a fifth of the bandwidth (A770 30 tok/s, A770M
26), where the next generation (B580, Battlemage) reaches half (66 tok/s on 456 GB/s). Its own
level under ``gpu-intel``, as Pascal is under ``gpu``."""


def peak_flops(row: GpuPeak, quant_family: str) -> float | None:
    """The FLOP/s a GPU's catalog row gives for weights of ``quant_family``: FP8's where the
    weights are FP8 or FP4 and the GPU has it, else 16-bit's (FP32's where that is all)."""
    tflops = (
        (row.fp8_tflops if quant_family in ("fp8", "fp4") and row.fp8_tflops else None)
        or row.fp16_tflops
        or row.bf16_tflops
        or row.fp32_tflops
    )
    return tflops * 1e12 if tflops else None


@lru_cache(maxsize=4096)
def catalog_devices(
    row: GpuPeak, count: int, quant_family: str
) -> tuple[DeviceSpeed, DeviceMemory] | None:
    """``count`` of a catalog GPU as the serving model sizes them: its published bandwidth,
    FLOPs for the format, link and memory (None where the catalog lacks one of them)."""
    flops = peak_flops(row, quant_family)
    if not (row.memory_gb and row.bandwidth_gbs and flops):
        return None
    # GGUF engines multiply an FP8/FP4 format (MXFP4) at their FP16 rate, not the FP8 figure
    sixteen = peak_flops(row, "float") or flops
    fast = fast_matmul_factor(row) * sixteen / flops
    speed = DeviceSpeed(
        bandwidth_bytes_s=row.bandwidth_gbs * 1e9,
        flops_s=flops,
        kind=peak_kind(row),
        count=count,
        link_bytes_s=row.gpu_link_gbs * 1e9 if row.gpu_link_gbs else None,
        measured=False,
        fast_matmul=fast,
        int8_dot=int8_dot_factor(row),
    )
    memory = DeviceMemory(
        # a maker's "GB" of GPU memory is binary, as the training answer reads it
        # (rates.catalog_memory): an assumed card holds what the same card scanned holds
        kind="gpu",
        total_bytes=int(row.memory_gb * GiB),
        count=count,
        name=row.name,
    )
    return speed, memory


def base_kind(kind: str) -> str:
    """``gpu``, ``cpu`` or ``unified``: a refined kind (``gpu-legacy``) without its refinement."""
    return kind.split("-", 1)[0]


@lru_cache(maxsize=64)
def kind_chain(kind: str) -> tuple[str, ...]:
    """``kind`` and each coarser kind it refines, most specific first
    (``gpu-intel-alchemist``, ``gpu-intel``, ``gpu``)."""
    parts = kind.split("-")
    return tuple("-".join(parts[:n]) for n in range(len(parts), 0, -1))


def engine_kind(family: str, kind: str) -> str:
    """The device kind ``family``'s efficiencies are looked up and fitted under: ``kind``, but
    ``gpu`` for :data:`HBM_GPU` outside :data:`HBM_FAMILIES`."""
    return "gpu" if kind == HBM_GPU and family not in HBM_FAMILIES else kind


def unified_kind(vendor: str | None) -> str:
    """The device kind of a GPU on unified memory: :data:`AMD_APU` for AMD's, else
    ``unified`` (Apple silicon, NVIDIA's GB10)."""
    return AMD_APU if (vendor or "").lower() == "amd" else "unified"


def peak_kind(row: GpuPeak) -> str:
    """The device kind a catalog GPU is sized and fitted under, wherever it comes from (a
    scan, --assume-gpu, a catalog option, a calibration row): a GPU on unified memory (Apple
    silicon, an APU) by :func:`unified_kind`, a discrete one by :func:`row_kind`."""
    if row.unified_memory or (row.vendor or "").lower() == "apple":
        return unified_kind(row.vendor)
    return row_kind(row)


def row_kind(row: GpuPeak) -> str:
    """:func:`gpu_kind` of a catalog row."""
    return gpu_kind(row.vendor, row.target, row.architecture, row.gpu_class, row.bandwidth_gbs)


def gpu_kind(
    vendor: str | None,
    target: str | None,
    architecture: str | None = None,
    gpu_class: str | None = None,
    bandwidth_gbs: float | None = None,
) -> str:
    """``gpu-legacy`` for an NVIDIA GPU of compute capability below 7.0, ``gpu-hbm`` for its
    data-center GPUs of HBM bandwidth, ``gpu-instinct`` for AMD's data-center line (gfx9),
    ``gpu-intel`` for an Intel GPU (``gpu-intel-alchemist`` for its first Arc generation),
    else ``gpu``."""
    if (vendor or "").lower() == "intel":
        arch = (architecture or "").lower()
        if "alchemist" in arch or ("xe-hpg" in arch and "xe2" not in arch):
            return INTEL_ALCHEMIST_GPU
        return INTEL_GPU
    gfx = (target or "").lower()
    if (vendor or "").lower() == "amd" and gfx.startswith("gfx9") and gfx != "gfx90c":
        return INSTINCT_GPU  # gfx90c: the Vega iGPU of Ryzen 4000/5000 APUs
    if (vendor or "").lower() == "nvidia" and target:
        try:
            if float(target) < 7.0:
                return LEGACY_GPU
        except ValueError:
            pass
    if (
        (vendor or "").lower() == "nvidia"
        and gpu_class == "datacenter"
        and (bandwidth_gbs or 0.0) >= HBM_MIN_GBS
    ):
        return HBM_GPU
    return "gpu"


def fast_matmul_factor(row: GpuPeak | None) -> float:
    """How many times the catalog's FLOPs figure a GPU runs the matmuls GGUF engines (llama.cpp,
    Ollama) use in prefill: FP16 with FP16 accumulation and INT8 dot products, where the
    figure is another rate. 2 for a GeForce RTX card (Turing on; its tensor figure is FP32
    accumulation, half the FP16-accumulate rate, as the catalog's notes say; not the TITAN
    RTX, whose figure is the full rate) and for AMD's Radeon (RDNA: the catalog gives the FP32
    vector rate; packed FP16 and RDNA 3's WMMA run at twice it, RDNA 4's WMMA at four times);
    else 1. The same GPU measured by the scan is capped at its catalog figure, so the factor
    holds for it too."""
    if row is None:
        return 1.0
    vendor = (row.vendor or "").lower()
    arch = (row.architecture or "").upper()
    if vendor == "amd" and arch.startswith("RDNA"):
        # FP16 FLOPs a clock a compute unit: RDNA 2 and 3 512 (twice the FP32 figure's 256
        # with RDNA 3's dual issue counted), RDNA 4's WMMA 1024 (AMD's 779 INT8 TOPS with
        # sparsity for the RX 9070 XT is 389 dense, 194.7 TFLOPS FP16 at 48.7 FP32)
        return 4.0 if arch.startswith("RDNA 4") else 2.0
    if (
        vendor == "nvidia"
        and row.gpu_class == "consumer"
        and row.fp16_tflops
        and not row.name.upper().startswith("TITAN")
    ):
        try:
            return 2.0 if float(row.target or 0) >= 7.5 else 1.0
        except ValueError:
            return 1.0
    return 1.0


def int8_dot_factor(row: GpuPeak | None) -> float | None:
    """How many times its catalog figure (FP32: FP16 runs at 1/64) an NVIDIA GPU of compute
    capability 6.1 to 6.x (Pascal's GeForce 10, Tesla P4/P40, Quadro P) runs llama.cpp's
    quantized matmuls: with DP4A, four 8-bit products a lane a clock, where the FP32 figure
    counts one fused multiply-add; a P40's 7B Q4_0 prompt ran at 12 TFLOPS of work on an
    11.8 TFLOPS FP32 part. None elsewhere (tensor cores and fast FP16 are ``fast_matmul``;
    a P100, compute capability 6.0, has no DP4A)."""
    if row is None or (row.vendor or "").lower() != "nvidia":
        return None
    try:
        capability = float(row.target or 0)
    except ValueError:
        return None
    return 4.0 if 6.1 <= capability < 7.0 else None


def quantized_gguf(quant: Quant) -> bool:
    """Weights llama.cpp multiplies as integers (its MMQ kernels): every GGUF type but the
    16- and 32-bit floats."""
    return quant.family.startswith("gguf") or quant.name == "MXFP4"


def quantized_linears(geom: LlmGeometry) -> int:
    """The Linear layers a forward pass runs: four for attention (query, key, value, output)
    and three for each MLP it runs (gate, up, down: a MoE's active experts'), a layer."""
    return geom.layers * (4 + 3 * (max(1, geom.experts_active) if geom.moe else 1))


def prefill_kind(family: str, kind: str, device: DeviceSpeed, quant: Quant) -> str:
    """The device kind a prompt's efficiency is fitted and looked up under: ``kind``, but
    ``gpu`` for an NVIDIA GPU before Volta where llama.cpp's integer kernels do not run on
    DP4A (16-bit weights; a P100 or a Maxwell card, which have none): those go through
    cuBLAS at the FP16 or FP32 rate as on other GPUs, and the kind's prompt rows (a P40's
    quantized runs) measure the integer kernels' pace."""
    if (
        family == "llama.cpp"
        and kind == LEGACY_GPU
        and not (device.int8_dot is not None and quantized_gguf(quant))
    ):
        return "gpu"
    return kind


def engine_family(engine: str) -> str:
    """The rule family of an engine: ``llama.cpp`` (with Ollama), ``vllm`` (the batching
    servers: SGLang, TensorRT-LLM), ``mlx``, ``torch`` (transformers)."""
    if engine in ("llama.cpp", "ollama", "lm-studio"):
        return "llama.cpp"
    if engine in ("vllm", "sglang", "tensorrt-llm"):
        return "vllm"
    if engine == "mlx":
        return "mlx"
    return "torch"


@dataclass(frozen=True)
class DeviceSpeed:
    """One device's (or ``count`` devices') speed figures."""

    bandwidth_bytes_s: float
    flops_s: float
    kind: str
    """``gpu``, ``cpu`` or ``unified``."""
    count: int = 1
    link_bytes_s: float | None = None
    """Between the devices when ``count > 1`` (NVLink about 450e9, PCIe 4 x16 about 25e9)."""
    measured: bool = True
    """Measured on the machine (scan) rather than taken from the catalog."""
    note: str | None = None
    """How a measured figure became the bandwidth used (said in ``basis``)."""
    fast_matmul: float = 1.0
    """GGUF engines' prefill runs at ``flops_s`` times it: :func:`fast_matmul_factor` of the
    GPU, over FP16's figure where ``flops_s`` is FP8's (an FP8 or FP4 format)."""
    int8_dot: float | None = None
    """Where set, GGUF engines' quantized matmuls (not F16/BF16 weights) run at ``flops_s``
    times it instead: :func:`int8_dot_factor` of the GPU."""


@dataclass(frozen=True)
class Rules:
    """The fitted efficiencies (``serve_model.toml``)."""

    decode: dict[str, float]
    prefill: dict[str, float]
    decode_low: float
    decode_high: float
    prefill_low: float
    prefill_high: float
    overhead_s: dict[str, float] = field(default_factory=dict)
    """Fixed time per decode step (sampling, kernel launches, the server), per engine family
    and per ``family/kind`` where a device kind's runs fit their own: CUDA graphs launch a
    step's kernels in a fraction of the time an Intel or a Pascal card's runtime takes."""
    moe: dict[str, float] = field(default_factory=dict)
    """A MoE's decode efficiency relative to a dense model's, per engine family (routing,
    more and smaller kernels); ``*`` for a family with no MoE run, fitted on every family's."""
    moe_prefill: dict[str, float] = field(default_factory=dict)
    """A MoE's prefill efficiency relative to a dense model's, per engine family (a prompt's
    tokens are spread over the experts: many small matmuls, not one large one); no ``*``: a
    family with no MoE prompt measured keeps a dense model's efficiency."""
    host_s: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Eager engines (transformers): the host's time per forward pass, ``fixed + per_layer x
    layers`` seconds, per ``family/kind``. On a GPU the host launches kernels while the GPU
    runs the earlier ones, so a step takes the longer of the two; on a CPU the same cores do
    both, so the times add. Where a family has one, it replaces ``overhead_s``."""

    eager_linear_s: dict[str, float] = field(default_factory=dict)
    """Eager engines, per quant family whose weights are dequantized before each matmul
    (bitsandbytes' ``nf4``): the time each quantized Linear adds to a forward pass (the
    dequantizing kernel and its launch), on top of ``host_s``; :func:`quantized_linears`
    counts them."""

    per_sequence_s: dict[str, float] = field(default_factory=dict)
    """A batched decode step's time per sequence beyond the first (scheduling, sampling, the
    attention kernels' per-sequence work), per engine family; ``*`` for a family with no
    batched run, fitted on every family's."""
    allreduce_s: dict[str, float] = field(default_factory=dict)
    """Tensor parallelism: one hop of an all-reduce between the devices (``count - 1`` hops
    an all-reduce, two all-reduces a layer), per family that splits a layer's matmuls across
    devices (vLLM's). Per hop, not per all-reduce: two and four H100s wait less than eight."""

    prefill_flops_max: dict[str, float] = field(default_factory=dict)
    """Per engine family: twice the largest FLOPs (per device) its prefill was measured at. A
    faster device's prefill is estimated at that figure, not far beyond the evidence:
    llama.cpp's quantized kernels, measured on GeForce cards, do not scale to a data-center
    GPU's tensor peak."""

    @cached_property
    def measured_kinds(self) -> frozenset[tuple[str, str]]:
        """The (engine family, device kind) pairs the efficiency tables have a row for."""
        keys = (k.split("/") for k in (*self.decode, *self.prefill) if "/" in k)
        return frozenset((parts[0], parts[-1]) for parts in keys)

    def step_overhead(self, family: str, kind: str) -> float:
        """The fixed time per decode step of ``family`` on ``kind``: the kind's own (or the
        coarser kind's it refines), else the family's, else the prior."""
        table = self.overhead_s
        for k in kind_chain(kind):
            found = table.get(f"{family}/{k}")
            if found is not None:
                return found
        return table.get(family, table.get("*", 0.0))

    def host_time(
        self, family: str, kind: str, layers: int, quant_family: str = "", linears: int = 0
    ) -> float | None:
        rule = self.host_s.get(f"{family}/{kind}") or self.host_s.get(f"{family}/{base_kind(kind)}")
        if rule is None:
            return None
        return rule[0] + rule[1] * layers + self.eager_linear_s.get(quant_family, 0.0) * linears

    def efficiency(self, phase: str, family: str, quant_family: str, kind: str) -> float:
        table = self.decode if phase == "decode" else self.prefill
        # the device kind before the quant family: a quantization measured only on GPUs says
        # less of a CPU than the CPU's rows in other quantizations do; a refined kind before
        # the kinds it refines
        for key in _lookup_keys(family, quant_family, kind):
            if key in table:
                return table[key]
        return table.get("*", PRIOR_DECODE if phase == "decode" else PRIOR_PREFILL)


@lru_cache(maxsize=512)
def _lookup_keys(family: str, quant_family: str, kind: str) -> tuple[str, ...]:
    """The keys an efficiency is looked up by, most specific first; a format with no runs of
    its own in a family takes its kin's (:data:`QUANT_KIN`) before the kind's."""
    quants = (quant_family, *((QUANT_KIN[quant_family],) if quant_family in QUANT_KIN else ()))
    keys = []
    for k in kind_chain(kind):
        keys += [f"{family}/{q}/{k}" for q in quants]
        keys.append(f"{family}/*/{k}")
    return (*keys, *(f"{family}/{q}" for q in quants), family)


#: A format whose kernels are closest to another's where a family has no run of its own:
#: bitsandbytes' 4-bit in vLLM reads its 4 bits a weight as AWQ's and GPTQ's kernels do, not
#: as a 16-bit model (one published vLLM run: about 20 tok/s where AWQ did 30).
QUANT_KIN = {"nf4": "int4"}


def rules_from_data(data: dict[str, Any]) -> Rules:
    """Parse the rules; a missing or malformed number is an input error."""
    try:
        rng = data.get("range", {})
        return Rules(
            decode={str(k): float(v) for k, v in data["decode"].items()},
            prefill={str(k): float(v) for k, v in data["prefill"].items()},
            decode_low=float(rng.get("decode_low", 0.8)),
            decode_high=float(rng.get("decode_high", 1.25)),
            prefill_low=float(rng.get("prefill_low", 0.67)),
            prefill_high=float(rng.get("prefill_high", 1.5)),
            overhead_s={str(k): float(v) for k, v in data.get("overhead_s", {}).items()},
            moe={str(k): float(v) for k, v in data.get("moe", {}).items()},
            moe_prefill={str(k): float(v) for k, v in data.get("moe_prefill", {}).items()},
            host_s={str(k): (float(v[0]), float(v[1])) for k, v in data.get("host_s", {}).items()},
            eager_linear_s={str(k): float(v) for k, v in data.get("eager_linear_s", {}).items()},
            prefill_flops_max={
                str(k): float(v) for k, v in data.get("prefill_flops_max", {}).items()
            },
            per_sequence_s={str(k): float(v) for k, v in data.get("per_sequence_s", {}).items()},
            allreduce_s={str(k): float(v) for k, v in data.get("allreduce_s", {}).items()},
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"serve_model.toml: malformed efficiency table ({exc})") from exc


@lru_cache(maxsize=1)
def load_rules() -> Rules:
    """The shipped rules."""
    return rules_from_data(packaged_data("serve_model.toml", InputError))


@dataclass(frozen=True)
class ServeSpeed:
    decode_tok_s: float
    decode_low: float
    decode_high: float
    prefill_tok_s: float
    ttft_s: float
    throughput_tok_s: float
    per_user_tok_s: float
    users: int
    users_at_target: int | None
    bytes_per_token: float
    basis: str
    step_s: float
    """One decode step at ``users`` (``per_user_tok_s`` is its inverse without a reply
    length)."""
    reply_tokens: int | None = None
    """The reply length ``throughput_tok_s`` counts each request's prompt against (None:
    decode alone)."""
    decode_full_context_tok_s: float | None = None
    """One user's decode with the whole context in the KV cache (None: the depth timed is the
    context)."""


def decode_weight_bytes(geom: LlmGeometry, quant: Quant, engine: str, users: int = 1) -> float:
    """The weight bytes one decode step of ``users`` sequences reads, each class of tensor at
    the width the engine stores it (``memory.tensor_bytes``): the layers' tensors, the output
    head, and a MoE's routed experts as the step's tokens touch them; not the input embedding
    (one row a token: untied, its vocab x hidden table is never read whole). Never more than
    the weights the engine holds (a GGUF's average bits already count its wider head)."""
    return _step_weights(geom, quant, engine)(users)


@lru_cache(maxsize=1024)
def _step_weights(geom: LlmGeometry, quant: Quant, engine: str) -> Callable[[int], float]:
    """:func:`decode_weight_bytes` as a function of the step's sequences, its parts worked out
    once per model, format and engine (an answer asks it for each of its options, each for
    several batch sizes)."""
    t = tensor_bytes(geom, quant, engine)
    head = min(float(geom.vocab * geom.hidden), geom.params_active)
    embedding = 0.0 if geom.tied_embeddings else head
    routed = _routed_params(geom)
    body = max(geom.params_active - routed - head - embedding, 0.0)
    fixed = body * t.body + head * t.head
    held = weights_bytes(geom, quant, engine)
    if not routed:
        dense = min(fixed, held)
        return lambda users: dense
    routed_total = geom.params_total - (geom.params_active - routed)

    def weights(users: int) -> float:
        experts = max(routed_total * _expert_share(geom, users), routed)
        return min(fixed + experts * t.expert, held)

    return weights


def prefill_flops_per_token(geom: LlmGeometry, prompt_tokens: int) -> float:
    """FLOPs per prompt token: the matmuls and the attention at the mean position."""
    attention = 4.0 * geom.layers * geom.heads * geom.head_dim * (prompt_tokens / 2.0)
    return 2.0 * geom.params_active + attention


def _scale(device: DeviceSpeed) -> float:
    """Multi-device speed-up factor: ``count`` times the link's cost."""
    if device.count <= 1:
        return 1.0
    link = device.link_bytes_s
    factor = NVLINK_FACTOR if link is None or link >= FAST_LINK_BYTES_S else PCIE_FACTOR
    return device.count * factor


def _expert_share(geom: LlmGeometry, users: int) -> float:
    """The share of a MoE's routed experts that ``users`` tokens touch in one step."""
    if not geom.moe or geom.experts_active <= 0:
        return 1.0
    return 1.0 - (1.0 - geom.experts_active / geom.experts) ** users


def estimate_speed(
    geom: LlmGeometry,
    quant: Quant,
    *,
    context: int,
    engine: str,
    device: DeviceSpeed,
    users: int = 1,
    prompt_tokens: int = 512,
    target_tok_s: float | None = None,
    offload_fraction: float = 0.0,
    ram_bandwidth_bytes_s: float | None = None,
    kv_cache: str = "f16",
    rules: Rules | None = None,
    reply_tokens: int | None = None,
    depth: int | None = None,
    users_cap: int | None = None,
) -> ServeSpeed:
    """Decode, prefill, time to first token and batched throughput of ``geom`` on ``device``.
    With ``reply_tokens`` the throughput is the replies' tokens per second of requests of
    ``prompt_tokens`` in and ``reply_tokens`` out: each request's prompt is computed too
    (``reply / (prompt / prefill + reply x step / users)``), as a serving benchmark counts
    it; without, decode alone (``users / step``). Each sequence's KV cache is read at
    ``depth`` tokens (default ``context``, never more); below the context, one user's decode
    with the whole context is given too. ``users_cap``: the most users the memory holds, which
    ``users_at_target`` never exceeds."""
    rules = rules or load_rules()
    family = engine_family(engine)
    kind = engine_kind(family, device.kind)
    eff_d = rules.efficiency("decode", family, quant.family, kind)
    eff_p = rules.efficiency(
        "prefill", family, quant.family, prefill_kind(family, kind, device, quant)
    )
    moe_prefill = rules.moe_prefill.get(family, 1.0) if geom.moe else 1.0
    if geom.moe:
        eff_d *= rules.moe.get(family, rules.moe.get("*", 1.0))
        eff_p *= moe_prefill
    overhead = rules.step_overhead(family, kind)
    host = rules.host_time(family, kind, geom.layers, quant.family, quantized_linears(geom))
    if host is not None:
        overhead = 0.0
    overlaps = base_kind(device.kind) == "gpu"
    # an eager engine's host time is per forward pass, whatever the batch
    per_sequence = (
        0.0
        if host is not None
        else rules.per_sequence_s.get(family, rules.per_sequence_s.get("*", 0.0))
    )
    # a tensor-parallel step waits for two all-reduces a layer (after attention, after the MLP)
    tensor_parallel = device.count > 1 and device_scale(device, family) > 1.0

    def comm(n: int) -> float:
        if not tensor_parallel:
            return 0.0
        latency = allreduce_hops(device, geom) * rules.allreduce_s.get(family, 0.0)
        return latency + allreduce_wire_s(device, geom, n)

    # Only tensor parallelism reads the devices' memories at once; a layer split reads them in
    # turn (llama.cpp's default --split-mode layer: 8 GPUs decode no faster than one).
    scale = device_scale(device, family)
    bandwidth = device.bandwidth_bytes_s * scale * eff_d
    matmul = 1.0
    if family == "llama.cpp":
        matmul = device.fast_matmul
        if device.int8_dot is not None and quantized_gguf(quant):
            matmul = device.int8_dot
    peak = device.flops_s * matmul
    flops = peak * scale * eff_p
    # The most FLOP/s the family's prefill was ever measured doing bounds what one device is
    # estimated to do (a data-center GPU's tensor peak is not what llama.cpp's kernels reach).
    ceiling = rules.prefill_flops_max.get(family)
    if ceiling is not None:
        # a MoE's kernels top out lower, by the same factor as its efficiency
        ceiling *= moe_prefill
    capped = ceiling is not None and peak * eff_p > ceiling
    prefill_flops = (min(peak * eff_p, ceiling) if ceiling else peak * eff_p) * scale
    offload = min(max(offload_fraction, 0.0), 1.0)
    ram_bw = (ram_bandwidth_bytes_s or device.bandwidth_bytes_s) * eff_d

    at = context if depth is None else max(0, min(depth, context))
    kv_one = geom.kv_bytes(at, kv_bytes_per_value(kv_cache))
    step_weights = _step_weights(geom, quant, engine)
    w_active = step_weights(1)

    def read_time(nbytes: float) -> float:
        return nbytes * (1.0 - offload) / bandwidth + nbytes * offload / ram_bw

    steps: dict[int, float] = {}  # the step at the reply's depth, per batch (asked again)

    def step_time(n: int, kv: float | None = None) -> float:
        if kv is None:
            known = steps.get(n)
            if known is not None:
                return known
        # weights a batched step reads: the shared part always, the routed experts as touched
        weights = step_weights(n) if geom.moe else w_active
        memory = read_time(weights + n * (kv_one if kv is None else kv))
        compute = 2.0 * geom.params_active * n / flops
        t = (
            _with_host(max(memory, compute), host, overlaps)
            + overhead
            + comm(n)
            + per_sequence * (n - 1)
        )
        if kv is None:
            steps[n] = t
        return t

    per_token = w_active + kv_one
    decode = 1.0 / step_time(1)
    decode_full = (
        1.0 / step_time(1, geom.kv_bytes(context, kv_bytes_per_value(kv_cache)))
        if at < context
        else None
    )
    prefill = prefill_flops / prefill_flops_per_token(geom, prompt_tokens)
    if offload > 0:
        # the CPU computes its layers' share of the prompt too (at the same efficiency)
        prefill = 1.0 / ((1.0 - offload) / prefill + offload / prefill * 4.0)
    if host is not None:  # one forward pass over the prompt
        prefill = prompt_tokens / _with_host(prompt_tokens / prefill, host, overlaps)
    users = max(1, users)
    t_users = step_time(users)
    reply = reply_tokens if reply_tokens is not None and reply_tokens > 0 else None

    def per_user(n: int) -> float:
        """A user's pace between tokens: the step, and with a reply length the other users'
        prompts computed in between (a reply waits for the n - 1 prompts that arrive while it
        is written; measured TPOT agreed better: 31 runs 87 % within 1.5x, worst 1.87x,
        against 81 % and 2.39x for the step alone)."""
        t = step_time(n)
        if reply is None:
            return 1.0 / t
        return reply / ((n - 1) * prompt_tokens / prefill + reply * t)

    throughput = users / t_users
    if reply is not None:
        throughput = reply / (prompt_tokens / prefill + reply * t_users / users)
    users_at_target: int | None = None
    if target_tok_s is not None and target_tok_s > 0:
        users_at_target = _largest_users(per_user, target_tok_s, users_cap)
    basis = (
        (
            f"bandwidth {device.bandwidth_bytes_s / 1e9:,.0f} GB/s ({device.note})"
            if device.note
            else f"{'measured' if device.measured else 'catalog'} bandwidth "
            f"{device.bandwidth_bytes_s / 1e9:,.0f} GB/s"
        )
        + f" and {peak / 1e12:.1f} TFLOPS"
        + (
            f" ({device.flops_s / 1e12:.1f} listed x {peak / device.flops_s:.0f}: "
            + (
                "the INT8 dot-product (DP4A) rate GGUF's integer kernels reach on it)"
                if matmul == device.int8_dot
                else "the FP16 rate GGUF kernels reach on it)"
            )
            if peak != device.flops_s
            else ""
        )
        + f"{f' x {device.count}' if device.count > 1 else ''}; "
        f"efficiency {family}/{quant.family}: decode {eff_d:.2f}, prefill {eff_p:.2f}, "
        + (
            f"host {host * 1e3:.1f} ms a forward pass"
            + (
                f", {dequant * 1e3:.1f} ms of it dequantizing {quantized_linears(geom)} Linear "
                "layers"
                if (
                    dequant := rules.eager_linear_s.get(quant.family, 0.0) * quantized_linears(geom)
                )
                else ""
            )
            + (" (overlapping the GPU's)" if overlaps else " (added)")
            if host is not None
            else f"{overhead * 1e3:.2f} ms a step"
        )
        + (f"; {comm(users) * 1e3:.1f} ms of all-reduces a step" if tensor_parallel else "")
        + (
            f"; {per_sequence * 1e3:.2f} ms a step for each user beyond the first"
            if per_sequence and users > 1
            else ""
        )
        + (f"; {offload:.0%} of the weights in RAM" if offload else "")
        + (
            f"; prefill at {ceiling / 1e12:.0f} TFLOPS, the most {family}'s prefill was "
            "measured doing on any GPU"
            if capped and ceiling
            else ""
        )
        + _unmeasured_kind(rules, family, kind)
        + _unmeasured_format(rules, family, quant.family)
    )
    return ServeSpeed(
        decode_tok_s=decode,
        decode_low=decode * rules.decode_low,
        decode_high=decode * rules.decode_high,
        prefill_tok_s=prefill,
        ttft_s=prompt_tokens / prefill,
        throughput_tok_s=throughput,
        per_user_tok_s=per_user(users),
        step_s=t_users,
        users=users,
        users_at_target=users_at_target,
        bytes_per_token=per_token,
        basis=basis,
        reply_tokens=reply,
        decode_full_context_tok_s=decode_full,
    )


def _unmeasured_format(rules: Rules, family: str, quant_family: str) -> str:
    """The basis's word on a format sized at its kin's efficiency (:data:`QUANT_KIN`): none
    of ``family``'s runs in it was fitted."""
    kin = QUANT_KIN.get(quant_family)
    key = f"{family}/{quant_family}"
    if kin is None or key in rules.decode or key in rules.prefill:
        return ""
    return (
        f"; no {family} run in {quant_family} was fitted: sized at {kin}'s efficiency (one "
        "published run of vLLM's bitsandbytes decoded at 0.62 of that; an estimate to check)"
    )


def _unmeasured_kind(rules: Rules, family: str, kind: str) -> str:
    """The basis's word on a refined device kind no run of ``family`` was measured on."""
    if kind == base_kind(kind) or (family, kind) in rules.measured_kinds:
        return ""
    what = {
        INTEL_GPU: "Intel GPUs",
        INTEL_ALCHEMIST_GPU: "Intel's first Arc generation (Alchemist)",
        LEGACY_GPU: "NVIDIA GPUs before Volta",
        HBM_GPU: "NVIDIA's data-center GPUs with HBM",
        INSTINCT_GPU: "AMD Instinct GPUs",
        DESKTOP_CPU: "desktop and server CPUs",
        SCANNED_CPU: "a CPU sized from its scan",
    }.get(kind, kind)
    return (
        f"; no {family} run was measured on {what}: the efficiencies are other "
        f"{'CPUs' if base_kind(kind) == 'cpu' else 'GPUs'}' "
        "(an estimate to check)"
    )


def allreduce_hops(device: DeviceSpeed, geom: LlmGeometry) -> int:
    """A tensor-parallel step's all-reduce hops one after another: two all-reduces a layer
    (after attention, after the MLP), each ``count - 1`` hops of a ring's reduce and as many
    of its gather taken as one latency each way (``Rules.allreduce_s`` is one hop's)."""
    return 2 * geom.layers * max(0, device.count - 1)


def allreduce_wire_s(device: DeviceSpeed, geom: LlmGeometry, users: int) -> float:
    """A tensor-parallel step's all-reduces on the wire: two a layer, each of the users'
    activations (``hidden`` values at 2 bytes), a ring sending ``2 (n - 1) / n`` of them over
    the link between the devices; their latency is ``Rules.allreduce_s``."""
    if device.count <= 1:
        return 0.0
    link = device.link_bytes_s or FAST_LINK_BYTES_S
    ring = 2.0 * (device.count - 1) / device.count
    return 2 * geom.layers * users * geom.hidden * 2.0 * ring / link


def device_scale(device: DeviceSpeed, family: str) -> float:
    """How many devices' worth of bandwidth and FLOPs an engine family gets from ``device``:
    tensor parallelism (vLLM) reads them at once, a layer split (llama.cpp) one after another."""
    return _scale(device) if family == "vllm" else 1.0


def _with_host(device_s: float, host_s: float | None, overlaps: bool) -> float:
    """A forward pass's time with the host's: the longer where they overlap, else the sum."""
    if host_s is None:
        return device_s
    return max(device_s, host_s) if overlaps else device_s + host_s


def _routed_params(geom: LlmGeometry) -> float:
    """Parameters in the routed experts one token uses (the rest of ``params_active`` is shared):
    ``(total - active) / (E - k) x k`` since the unused experts are the same size."""
    if not geom.moe or geom.experts <= geom.experts_active:
        return 0.0
    per_expert = (geom.params_total - geom.params_active) / (geom.experts - geom.experts_active)
    return per_expert * geom.experts_active


def _largest_users(per_user: Any, target: float, cap: int | None = None) -> int:
    """The largest concurrency, at most ``cap`` (default :data:`MAX_USERS`), whose per-user
    speed stays at ``target`` (0: not even one): where the time between a user's tokens, which
    grows with the users, crosses the target's (:mod:`.search`)."""
    most = MAX_USERS if cap is None else max(0, min(cap, MAX_USERS))
    if most < 1:
        return 0

    def spare(n: int) -> float:
        """Seconds a user's token could still take: the guess's figure, its sign exactly
        whether ``per_user(n) >= target`` (the rounding of the reciprocals never flips it)."""
        speed = per_user(n)
        left = 1.0 / target - (1.0 / speed if speed > 0 else math.inf)
        if speed >= target:
            return max(left, 0.0)
        return left if left < 0 else -math.ulp(0.0)

    one = spare(1)
    if not one >= 0:
        return 0
    if most == 1:
        return 1
    at_most = spare(most)
    if at_most >= 0:
        return most
    return last_at_or_above_zero(spare, 1, most, one, at_most)


def ratio_spread(ratios: list[float]) -> tuple[float, float]:
    """The 10th and 90th percentile of measured/predicted ratios (the range's factors)."""
    if not ratios:
        return 1.0, 1.0
    s = sorted(ratios)

    def q(p: float) -> float:
        i = p * (len(s) - 1)
        lo = math.floor(i)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (i - lo)

    return q(0.1), q(0.9)
