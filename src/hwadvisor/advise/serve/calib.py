"""The serving model's calibration: reading ``serve_calibration.toml``, fitting the efficiency
rules (``scripts/fit_serve.py`` writes them to ``serve_model.toml``) and measuring accuracy
in sample and leaving one source out (``benchmarks/inference_accuracy.py``)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from hwadvisor.advise.serve.memory import DeviceMemory, GiB, ServeMemory, plan_serve_memory
from hwadvisor.advise.serve.quant import find_quant
from hwadvisor.advise.serve.speed import (
    PRIOR_DECODE,
    PRIOR_PREFILL,
    DeviceSpeed,
    Rules,
    ServeSpeed,
    allreduce_hops,
    base_kind,
    catalog_devices,
    device_scale,
    engine_family,
    engine_kind,
    estimate_speed,
    fast_matmul_factor,
    int8_dot_factor,
    peak_kind,
    prefill_flops_per_token,
    prefill_kind,
    quantized_linears,
    ratio_spread,
)
from hwadvisor.catalog.llm_geometry import LlmGeometry
from hwadvisor.catalog.peaks import find_gpu_peak
from hwadvisor.catalog.toml import packaged_data
from hwadvisor.errors import InputError

SHRINK = 1.0
"""Pseudo-rows of the level above that each fitted efficiency is pulled toward: the amount
that predicted each source best when it was left out (root mean square of the decode log ratio
0.263 at 1, 0.267 at 2, 0.271 at 3; docs/inference-model.md)."""

_GEOM_FIELDS = (
    "params_total",
    "params_active",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "vocab",
    "intermediate",
    "experts",
    "experts_active",
    "sliding_window",
    "sliding_layers",
    "kv_lora_rank",
    "rope_head_dim",
    "tied_embeddings",
)


def load_calibration() -> dict[str, Any]:
    return packaged_data("serve_calibration.toml", InputError)


def geometry(name: str, data: dict[str, Any]) -> LlmGeometry:
    """The model ``name`` from the calibration's ``[models]`` table, else from the model
    catalog (``llms.toml``)."""
    spec = data.get("models", {}).get(name)
    if spec is None:
        from hwadvisor.catalog.llms import find_llm
        from hwadvisor.errors import UsageError

        try:
            return find_llm(name)
        except UsageError as exc:
            raise InputError(
                f"serve_calibration.toml: no model {name!r} in [models] or the model catalog"
            ) from exc
    kwargs = {k: spec[k] for k in _GEOM_FIELDS if k in spec}
    return LlmGeometry(name=name, source="serve_calibration.toml", **kwargs)


@dataclass(frozen=True)
class MemoryCase:
    """A documented run that fitted (``fit``) or ran out of memory (``oom``)."""

    geom: LlmGeometry
    quant: str
    engine: str
    context: int
    sequences: int
    kv_cache: str
    device: DeviceMemory
    outcome: str
    reported_concurrency: float | None
    note: str
    source: str

    def plan(self) -> ServeMemory:
        return plan_serve_memory(
            self.geom,
            find_quant(self.quant),
            context=self.context,
            sequences=self.sequences,
            engine=self.engine,
            kv_cache=self.kv_cache,
            device=self.device,
        )


def memory_cases(data: dict[str, Any]) -> list[MemoryCase]:
    """The ``[[memory]]`` rows with an ``outcome``. Optional keys: ``count`` (GPUs, tensor
    parallel), ``sequences``, ``kv_cache``, ``platform``, ``gpu_memory_utilization``."""
    cases = []
    for raw in data.get("memory", []):
        if "outcome" not in raw:
            continue
        outcome = str(raw["outcome"])
        if outcome not in ("fit", "oom"):
            raise InputError(f"serve_calibration.toml: outcome {outcome!r}: use fit or oom")
        device = DeviceMemory(
            kind=raw["kind"],
            total_bytes=float(raw["total_gib"]) * GiB,
            count=int(raw.get("count", 1)),
            platform=str(raw.get("platform", "linux")),
            gpu_memory_utilization=float(raw.get("gpu_memory_utilization", 0.9)),
        )
        concurrency = raw.get("reported_concurrency")
        cases.append(
            MemoryCase(
                geom=geometry(str(raw["model"]), data),
                quant=str(raw["quant"]),
                engine=str(raw["engine"]),
                context=int(raw["context"]),
                sequences=int(raw.get("sequences", 1)),
                kv_cache=str(raw.get("kv_cache", "f16")),
                device=device,
                outcome=outcome,
                reported_concurrency=None if concurrency is None else float(concurrency),
                note=str(raw.get("note", "")),
                source=str(raw["source"]),
            )
        )
    return cases


@dataclass(frozen=True)
class SpeedRow:
    geom: LlmGeometry
    quant: str
    engine: str
    device: DeviceSpeed
    context: int
    batch: int
    decode_tok_s: float | None
    prefill_tok_s: float | None
    prompt_tokens: int
    group: str
    source: str

    @property
    def family(self) -> str:
        return engine_family(self.engine)

    @property
    def kind(self) -> str:
        """The device kind the row's family is fitted under (:func:`engine_kind`)."""
        return engine_kind(self.family, self.device.kind)

    def key(self) -> tuple[str, str, str]:
        return self.family, find_quant(self.quant).family, self.kind


def speed_rows(data: dict[str, Any]) -> list[SpeedRow]:
    rows = []
    for raw in data.get("speed", []):
        kind = str(raw["kind"])
        peak = (
            find_gpu_peak(str(raw.get("hardware", "")), fallback=kind == "gpu")
            if kind in ("gpu", "unified")
            else None
        )
        if peak is not None:
            kind = peak_kind(peak)  # as an estimate for the same hardware takes it
        device = DeviceSpeed(
            bandwidth_bytes_s=float(raw["bandwidth_gb_s"]) * 1e9,
            flops_s=float(raw["tflops"]) * 1e12,
            kind=kind,
            count=int(raw.get("count", 1)),
            measured=False,
            fast_matmul=fast_matmul_factor(peak),
            int8_dot=int8_dot_factor(peak),
        )
        rows.append(
            SpeedRow(
                geom=geometry(str(raw["model"]), data),
                quant=str(raw["quant"]),
                engine=str(raw["engine"]),
                device=device,
                context=int(raw.get("context", 512)),
                batch=int(raw.get("batch", 1)),
                decode_tok_s=raw.get("decode_tok_s"),
                prefill_tok_s=raw.get("prefill_tok_s"),
                prompt_tokens=int(raw.get("prompt_tokens", 512)),
                group=str(raw.get("group", raw["source"])),
                source=str(raw["source"]),
            )
        )
    return rows


@dataclass(frozen=True)
class ServingRow:
    """A batched serving benchmark (``[[serving]]``): ``concurrency`` requests in flight, each
    ``input_tokens`` in and ``output_tokens`` out, and the replies' tokens per second."""

    geom: LlmGeometry
    quant: str
    engine: str
    device: DeviceSpeed
    memory: DeviceMemory
    concurrency: int
    input_tokens: int
    output_tokens: int
    output_tok_s: float
    group: str
    source: str
    tpot_s: float | None = None
    """The benchmark's mean time per output token, where it printed one."""

    @property
    def family(self) -> str:
        return engine_family(self.engine)


#: Batching servers the calibration has runs of that the CLI does not offer, sized as the
#: engine they work like (a paged KV cache and continuous batching).
SERVED_AS = {"lmdeploy": "vllm"}


def serving_rows(data: dict[str, Any]) -> list[ServingRow]:
    """The ``[[serving]]`` rows, their GPUs' figures from the GPU catalog (a row names a GPU
    the catalog knows: an unknown one is an input error, not a row quietly left out)."""
    rows = []
    for raw in data.get("serving", []):
        name = str(raw["hardware"])
        peak = find_gpu_peak(name, None, fallback=False)
        if peak is None or not (peak.memory_gb and peak.bandwidth_gbs):
            raise InputError(f"serve_calibration.toml: [[serving]] GPU {name!r} is not known")
        engine = SERVED_AS.get(str(raw["engine"]), str(raw["engine"]))
        quant = find_quant(str(raw["quant"]), engine)
        devices = catalog_devices(peak, int(raw.get("count", 1)), quant.family)
        if devices is None:
            raise InputError(f"serve_calibration.toml: the catalog has no FLOP/s for {name!r}")
        rows.append(
            ServingRow(
                geom=geometry(str(raw["model"]), data),
                quant=str(raw["quant"]),
                engine=engine,
                device=devices[0],
                memory=devices[1],
                concurrency=int(raw["concurrency"]),
                input_tokens=int(raw["input_tokens"]),
                output_tokens=int(raw["output_tokens"]),
                output_tok_s=float(raw["output_tok_s"]),
                group=str(raw.get("group", raw["source"])),
                source=str(raw["source"]),
                tpot_s=float(raw["mean_tpot_ms"]) / 1e3 if raw.get("mean_tpot_ms") else None,
            )
        )
    return rows


def _served_users(row: ServingRow) -> int:
    """The requests that ran at once: the benchmark's concurrency, or fewer where the KV
    pool holds fewer whole requests (the server queues the rest)."""
    plan = plan_serve_memory(
        row.geom,
        find_quant(row.quant, row.engine),
        context=row.input_tokens + row.output_tokens,
        engine=row.engine,
        device=row.memory,
    )
    pool = plan.max_concurrency
    return max(1, min(row.concurrency, int(pool))) if pool else row.concurrency


def serving_estimate(row: ServingRow, rules: Rules) -> ServeSpeed:
    """The model's estimate for a serving row: its users at the mean depth of a reply."""
    return estimate_speed(
        row.geom,
        find_quant(row.quant, row.engine),
        context=row.input_tokens + row.output_tokens // 2,
        engine=row.engine,
        device=row.device,
        users=_served_users(row),
        prompt_tokens=row.input_tokens,
        reply_tokens=row.output_tokens,
        rules=rules,
    )


def predict_serving(row: ServingRow, rules: Rules) -> float:
    """measured / predicted output tokens per second."""
    return row.output_tok_s / serving_estimate(row, rules).throughput_tok_s


def predict_pace(row: ServingRow, rules: Rules) -> float | None:
    """measured / predicted pace of one user (1 / mean TPOT), where the run printed its TPOT."""
    if not row.tpot_s:
        return None
    return (1.0 / row.tpot_s) / serving_estimate(row, rules).per_user_tok_s


PER_SEQUENCE_GRID_S = tuple(i * 5e-6 for i in range(0, 61))
"""A batched step's time per sequence beyond the first tried: 0 to 300 us."""
ALLREDUCE_GRID_S = tuple(i * 1e-6 for i in range(0, 31))
"""One hop of a tensor-parallel all-reduce tried: 0 to 30 us."""


def _fit_batching(
    rows: list[ServingRow], rules: Rules, split: list[SpeedRow] | None = None
) -> tuple[dict[str, float], dict[str, float]]:
    """The time per sequence and per all-reduce that fit the serving rows best under the
    efficiencies of ``rules`` (fitted on the batch-1 rows). A step's time is the estimate
    without them plus ``per_sequence x (users - 1) + allreduce_hops x allreduce``. The time per
    sequence is fitted per engine family, and pooled over every run (``*``, for a family with
    none); the all-reduce's latency per family. One time for the engines of a family: one per
    engine (TensorRT-LLM's C++ runtime 30 us, vLLM 105, SGLang 90) fitted its own runs better
    but left each source out worse (49 % / 70 % within 1.25x / 1.5x against 52 % / 74 %).
    A grid over the latency, and under each latency each key's best time. The ``split`` rows
    (one user on devices split tensor-parallel) count in the all-reduce's fit too: a latency
    fitted on eight-GPU batches alone made one user's step on four H100s 4 ms slower than
    measured."""
    if not rows:
        return {}, {}
    bare = replace(rules, per_sequence_s={}, allreduce_s={})
    parts = []
    for row in rows:
        est = serving_estimate(row, bare)
        # the estimate has the all-reduces' time on the wire already, not their latency
        tp = row.device.count > 1 and device_scale(row.device, row.family) > 1.0
        reduces = allreduce_hops(row.device, row.geom) if tp else 0
        parts.append((row, est.step_s, est.prefill_tok_s, est.users, reduces))
    singles = []
    for one in split or []:
        if one.decode_tok_s and device_scale(one.device, one.family) > 1.0:
            est = estimate_speed(
                one.geom,
                find_quant(one.quant),
                context=one.context,
                engine=one.engine,
                device=one.device,
                prompt_tokens=one.prompt_tokens,
                rules=bare,
            )
            hops = allreduce_hops(one.device, one.geom)
            singles.append((float(one.decode_tok_s), est.step_s, hops))

    def err(mine: list[Any], per_seq: float, allreduce: float) -> float:
        total = 0.0
        for row, step, prefill, users, reduces in mine:
            t = step + per_seq * (users - 1) + reduces * allreduce
            out = row.output_tokens / (row.input_tokens / prefill + row.output_tokens * t / users)
            total += math.log(row.output_tok_s / out) ** 2
        return total

    def best(grid: tuple[float, ...], cost: Any) -> float:
        return min(grid, key=lambda x: (round(cost(x), 12), x))

    keys = sorted({row.family for row in rows})
    by_key = {k: [p for p in parts if p[0].family == k] for k in keys}
    # given the all-reduce's latency, each key's time per sequence is fitted on its own runs:
    # the whole grid over the latency, each key's best time under it
    fits = []
    for a in ALLREDUCE_GRID_S:
        seq = {k: best(PER_SEQUENCE_GRID_S, lambda x, k=k, a=a: err(by_key[k], x, a)) for k in keys}
        total = sum(err(by_key[k], seq[k], a) for k in keys) + sum(
            math.log(m * (t + hops * a)) ** 2 for m, t, hops in singles
        )
        fits.append((round(total, 12), a, seq))
    _, allreduce, per_seq = min(fits, key=lambda f: (f[0], f[1]))
    pooled = best(PER_SEQUENCE_GRID_S, lambda x: err(parts, x, allreduce))
    return (
        {"*": round(pooled, 7)} | {k: round(v, 7) for k, v in sorted(per_seq.items())},
        {k: round(allreduce, 7) for k in keys},
    )


UNIT = Rules(
    decode={"*": 1.0},
    prefill={"*": 1.0},
    decode_low=1.0,
    decode_high=1.0,
    prefill_low=1.0,
    prefill_high=1.0,
)

OVERHEAD_GRID_S = tuple(i * 1e-4 for i in range(0, 31))
"""Fixed time per decode step tried for each engine family: 0 to 3 ms."""
KIND_OVERHEAD_GRID_S = tuple(i * 2e-4 for i in range(0, 51))
MIN_SIZE_SPAN = 3.0
"""A kind's own fixed time per step needs runs of models this many times apart in size."""
"""... and for each device kind of a family: 0 to 10 ms (an Intel or Pascal card's runtime
takes several)."""
MAX_EFFICIENCY = 1.2
PRIOR_OVERHEAD_S = 1e-3
"""The fixed time per decode step of a family with too few rows to fit its own."""
MIN_ROWS_FOR_OVERHEAD = 5


def _estimate(row: SpeedRow, rules: Rules) -> ServeSpeed:
    """The model's estimate for the row's model, quantization, engine and device."""
    return estimate_speed(
        row.geom,
        find_quant(row.quant),
        context=row.context,
        engine=row.engine,
        device=row.device,
        users=row.batch,
        prompt_tokens=row.prompt_tokens,
        rules=rules,
    )


def raw_ratio(row: SpeedRow, phase: str, overhead_s: float = 0.0) -> float | None:
    """The row's own efficiency: ideal time at efficiency 1 over the measured time (less the
    fixed time per step for decode)."""
    est = _estimate(row, UNIT)
    if phase == "decode" and row.decode_tok_s:
        spare = 1.0 / float(row.decode_tok_s) - overhead_s
        ideal = 1.0 / est.per_user_tok_s
        return MAX_EFFICIENCY if spare <= ideal / MAX_EFFICIENCY else ideal / spare
    if phase == "prefill" and row.prefill_tok_s:
        return float(row.prefill_tok_s) / est.prefill_tok_s
    return None


#: Engine families that run eagerly from Python: their decode is the host's time per forward
#: pass where that is longer than the device's (speed.Rules.host_s), fitted per device kind.
HOST_FAMILIES = ("torch",)
HOST_FIXED_GRID_S = tuple(i * 5e-4 for i in range(0, 41))
"""The host's fixed time per forward pass tried: 0 to 20 ms."""
HOST_LAYER_GRID_S = tuple(i * 5e-5 for i in range(0, 81))
"""The host's time per layer tried: 0 to 4 ms."""


def reference_run(row: SpeedRow) -> bool:
    """A run of this project's own reference scripts (group ``reference...``): fitted like any
    row, scored apart from the published runs (one machine, measured as the scan measures it),
    so that the leave-one-source-out figures stay those of sources the project did not make."""
    return row.group.startswith("reference")


def _host_ratio(
    row: SpeedRow,
    phase: str,
    host: dict[str, tuple[float, float]],
    eager_linear: dict[str, float] | None = None,
) -> float | None:
    """A host-family row's own efficiency once the host's time is taken out; None where the
    host's time hides the device's (a GPU that waits for its launches says nothing of it)."""
    measured = row.prefill_tok_s if phase == "prefill" else row.decode_tok_s
    rules = Rules({}, {}, 1.0, 1.0, 1.0, 1.0, host_s=host, eager_linear_s=eager_linear or {})
    t_host = rules.host_time(
        row.family, row.kind, row.geom.layers, find_quant(row.quant).family,
        quantized_linears(row.geom),
    )  # fmt: skip
    if t_host is None or not measured:
        return None
    tokens = row.prompt_tokens if phase == "prefill" else 1
    spent = tokens / float(measured)
    on_gpu = base_kind(row.device.kind) == "gpu"
    spare = spent - t_host if not on_gpu else spent
    est = _estimate(row, UNIT)
    ideal = tokens / (est.prefill_tok_s if phase == "prefill" else est.per_user_tok_s)
    if spare <= 0 or (on_gpu and t_host >= 0.5 * spent):
        return None
    return min(MAX_EFFICIENCY, ideal / spare)


#: Quant families an eager engine dequantizes before each matmul (bitsandbytes): their runs
#: fit the time that adds a Linear (:func:`_fit_eager_linear`), not the host's time.
DEQUANTIZED = ("nf4",)
EAGER_LINEAR_GRID_S = tuple(i * 2e-6 for i in range(0, 101))
"""The time a dequantized Linear adds to a forward pass, tried: 0 to 200 us."""


def _fit_host(rows: list[SpeedRow]) -> dict[str, tuple[float, float]]:
    """Per host family and device kind with two rows or more: the (fixed, per layer) host time
    that fits their decode best at the family's prior efficiency (16-bit runs: a dequantized
    format's add their own time, :func:`_fit_eager_linear`)."""
    out: dict[str, tuple[float, float]] = {}
    for family in HOST_FAMILIES:
        for kind in sorted({r.kind for r in rows if r.family == family}):
            mine = [r for r in rows if r.family == family and r.kind == kind]
            mine = [r for r in mine if r.decode_tok_s]
            mine = [r for r in mine if find_quant(r.quant).family not in DEQUANTIZED]
            if len(mine) < 2:
                continue
            key = f"{family}/{kind}"
            best, best_err = (0.0, 0.0), math.inf
            for fixed in HOST_FIXED_GRID_S:
                for per_layer in HOST_LAYER_GRID_S:
                    trial = Rules(
                        {"*": PRIOR_DECODE}, {"*": PRIOR_PREFILL}, 1.0, 1.0, 1.0, 1.0,
                        host_s={key: (fixed, per_layer)},
                    )  # fmt: skip
                    err = sum(
                        math.log(r) ** 2 for row in mine if (r := predict(row, trial, "decode"))
                    )
                    if err < best_err - 1e-12:
                        best, best_err = (fixed, per_layer), err
            out[key] = (round(best[0], 6), round(best[1], 6))
    return out


def _fit_eager_linear(
    rows: list[SpeedRow], host: dict[str, tuple[float, float]]
) -> dict[str, float]:
    """Per dequantized quant family with eager runs: the time a quantized Linear adds to a
    forward pass that fits their decode best, on top of the host's fitted time, at the
    family's prior efficiency (as the host's time is fitted)."""
    out: dict[str, float] = {}
    for quant_family in DEQUANTIZED:
        mine = [
            r
            for r in rows
            if r.family in HOST_FAMILIES
            and r.decode_tok_s
            and find_quant(r.quant).family == quant_family
            and f"{r.family}/{r.kind}" in host
        ]
        if not mine:
            continue
        best, best_err = 0.0, math.inf
        for per_linear in EAGER_LINEAR_GRID_S:
            trial = Rules(
                {"*": PRIOR_DECODE}, {"*": PRIOR_PREFILL}, 1.0, 1.0, 1.0, 1.0,
                host_s=host, eager_linear_s={quant_family: per_linear},
            )  # fmt: skip
            err = sum(math.log(r) ** 2 for row in mine if (r := predict(row, trial, "decode")))
            if err < best_err - 1e-12:
                best, best_err = per_linear, err
        out[quant_family] = round(best, 7)
    return out


def _shrunk(logs: list[float], prior: float) -> float:
    return math.exp((sum(logs) + SHRINK * math.log(prior)) / (len(logs) + SHRINK))


def _tables(
    rows: list[SpeedRow],
    phase: str,
    prior: float,
    overhead: dict[str, float],
    host: dict[str, tuple[float, float]] | None = None,
    eager_linear: dict[str, float] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """Efficiency tables from the dense rows, and each family's MoE factor from the MoE rows.
    A host family's rows count with the host's time taken out, where it does not hide the
    device's; its decode rows fit the host's time instead (``_fit_host``).

    Levels: the family; under it the device kind (``family/*/kind``: a CPU's cores, a GPU and
    Apple's unified memory differ more than quantizations do) and the quant family
    (``family/quant``, for a kind with no rows); and ``family/quant/kind``, shrunk toward its
    kind."""
    host = host or {}
    by_f: dict[str, list[float]] = defaultdict(list)
    by_fq: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_fk: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_fqk: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    moe_rows: list[tuple[SpeedRow, float]] = []
    for row in rows:
        if row.family in HOST_FAMILIES:
            if phase == "decode":
                continue
            r = _host_ratio(row, phase, host, eager_linear)
        else:
            r = raw_ratio(row, phase, _overhead_of(overhead, row) if phase == "decode" else 0.0)
        if r is None or r <= 0:
            continue
        if row.geom.moe:
            moe_rows.append((row, r))
            continue
        f, q, k = row.key()
        if phase == "prefill":
            k = prefill_kind(f, k, row.device, find_quant(row.quant))
        by_f[f].append(math.log(r))
        by_fq[(f, q)].append(math.log(r))
        by_fk[(f, k)].append(math.log(r))
        by_fqk[(f, q, k)].append(math.log(r))
    table: dict[str, float] = {"*": prior}
    for f, logs in by_f.items():
        table[f] = _shrunk(logs, prior)
    for (f, q), logs in by_fq.items():
        table[f"{f}/{q}"] = _shrunk(logs, table[f])
    for (f, k), logs in by_fk.items():
        table[f"{f}/*/{k}"] = _shrunk(logs, table[f])
    for (f, q, k), logs in by_fqk.items():
        table[f"{f}/{q}/{k}"] = _shrunk(logs, table[f"{f}/*/{k}"])
    base = Rules(table, table, 1.0, 1.0, 1.0, 1.0)
    moe_logs: dict[str, list[float]] = defaultdict(list)
    for row, r in moe_rows:
        f, q, k = row.key()
        if phase == "prefill":
            k = prefill_kind(f, k, row.device, find_quant(row.quant))
        moe_logs[f].append(math.log(r / base.efficiency(phase, f, q, k)))
    # each family's MoE factor from its own MoE runs; ``*``, from every family's, for an engine
    # with none (MLX's factor was 1 until an M1 Ultra's MoE runs came at 0.4-0.7 of it)
    every = [x for logs in moe_logs.values() for x in logs]
    moe = {"*": _shrunk(every, 1.0)} if every else {}
    moe |= {f: _shrunk(logs, 1.0) for f, logs in moe_logs.items()}
    return table, moe


#: How far past the fastest prefill a family was measured at (in FLOP/s done) an estimate may
#: reach.
PREFILL_EXTRAPOLATION = 1.0


def _prefill_ceilings(rows: list[SpeedRow]) -> dict[str, float]:
    """Per served-engine family with prefill rows: the most FLOP/s any of them did (its
    measured tokens/s x FLOPs per token). An RTX 4090 and an A100 both prefill at 100-150
    TFLOPS in llama.cpp although their peaks are 165 and 312: the kernels, not the chip,
    set the pace at the top, so an estimate goes no further than what was seen. Per device (a
    tensor-parallel run's FLOP/s over its devices' share), and only for a family measured on
    MIN_MACHINES_FOR_CEILING machines or more: two runs do not say where a family tops out."""
    out: dict[str, float] = {}
    machines: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if row.prefill_tok_s and row.family not in HOST_FAMILIES:
            done = float(row.prefill_tok_s) * prefill_flops_per_token(row.geom, row.prompt_tokens)
            done /= device_scale(row.device, row.family)
            out[row.family] = max(out.get(row.family, 0.0), done)
            machines[row.family].add(row.group)
    return {
        k: v * PREFILL_EXTRAPOLATION
        for k, v in sorted(out.items())
        if len(machines[k]) >= MIN_MACHINES_FOR_CEILING
    }


MIN_MACHINES_FOR_CEILING = 5


def fit_rules(
    rows: list[SpeedRow],
    spread: dict[str, float] | None = None,
    serving: list[ServingRow] | None = None,
) -> Rules:
    """Efficiencies per engine family, per family x device kind, per family x quant family, and
    per family x quant family x device kind (each shrunk toward the level above: the last toward
    its device kind, the top toward the prior), a MoE factor per family, and per family the
    fixed time per decode step that fits best; from the ``serving`` rows (batched runs), a
    batched step's time per sequence and per tensor-parallel all-reduce."""
    overhead: dict[str, float] = {}
    for family in sorted({row.family for row in rows} - set(HOST_FAMILIES)):
        mine = [row for row in rows if row.family == family and row.decode_tok_s]
        if len(mine) < MIN_ROWS_FOR_OVERHEAD:
            overhead[family] = PRIOR_OVERHEAD_S
            continue
        best, best_err = 0.0, math.inf
        for t0 in OVERHEAD_GRID_S:
            table, moe = _tables(mine, "decode", PRIOR_DECODE, {family: t0})
            trial = Rules(table, {"*": PRIOR_PREFILL}, 1.0, 1.0, 1.0, 1.0, {family: t0}, moe)
            err = sum(math.log(r) ** 2 for row in mine if (r := predict(row, trial, "decode")))
            if err < best_err - 1e-12:
                best, best_err = t0, err
        overhead[family] = best
        overhead |= _kind_overheads(mine, family, best)
    host = _fit_host(rows)
    eager_linear = _fit_eager_linear(rows, host)
    decode, moe = _tables(rows, "decode", PRIOR_DECODE, overhead)
    prefill, moe_prefill = _tables(rows, "prefill", PRIOR_PREFILL, {}, host, eager_linear)
    # a family with no MoE prompt measured is not slowed by another's: MLX's MoE prefill runs
    # at a dense model's efficiency where llama.cpp's runs at about half of it
    moe_prefill.pop("*", None)
    spread = spread or {}
    rules = Rules(
        decode={k: round(v, 4) for k, v in sorted(decode.items())},
        prefill={k: round(v, 4) for k, v in sorted(prefill.items())},
        decode_low=spread.get("decode_low", 0.8),
        decode_high=spread.get("decode_high", 1.25),
        prefill_low=spread.get("prefill_low", 0.67),
        prefill_high=spread.get("prefill_high", 1.5),
        overhead_s={"*": PRIOR_OVERHEAD_S} | {k: round(v, 6) for k, v in sorted(overhead.items())},
        moe={k: round(v, 4) for k, v in sorted(moe.items())},
        moe_prefill={k: round(v, 4) for k, v in sorted(moe_prefill.items())},
        host_s=dict(sorted(host.items())),
        eager_linear_s=eager_linear,
        prefill_flops_max=_prefill_ceilings(rows),
    )
    per_sequence, allreduce = _fit_batching(serving or [], rules, rows)
    return replace(rules, per_sequence_s=per_sequence, allreduce_s=allreduce)


def _overhead_of(overhead: dict[str, float], row: SpeedRow) -> float:
    return Rules({}, {}, 1, 1, 1, 1, overhead_s=overhead).step_overhead(row.family, row.kind)


def _kind_overheads(rows: list[SpeedRow], family: str, family_s: float) -> dict[str, float]:
    """Per device kind with MIN_ROWS_FOR_OVERHEAD dense single-device rows or more of
    ``family``, of models MIN_SIZE_SPAN apart in size or more: the fixed time per step that
    fits them best, shrunk toward the family's. Runs of one size cannot tell a fixed time
    from a lower efficiency (a desktop CPU's 7-14B runs put it at 9 ms, which would have
    halved a 1B model's speed): such a kind takes the coarser kind's."""
    out: dict[str, float] = {}
    for kind in sorted({row.kind for row in rows}):
        mine = [r for r in rows if r.kind == kind and not r.geom.moe and r.device.count == 1]
        if len(mine) < MIN_ROWS_FOR_OVERHEAD:
            continue
        sizes = [r.geom.params_active for r in mine]
        if max(sizes) < MIN_SIZE_SPAN * min(sizes):
            continue

        def err(t0: float, mine: list[SpeedRow] = mine) -> float:
            table, _ = _tables(mine, "decode", PRIOR_DECODE, {family: t0})
            trial = Rules(table, {"*": PRIOR_PREFILL}, 1.0, 1.0, 1.0, 1.0, {family: t0})
            return sum(math.log(r) ** 2 for row in mine if (r := predict(row, trial, "decode")))

        # the grid's every fifth point, then the points around the best of those
        coarse = KIND_OVERHEAD_GRID_S[::5]
        best = min(coarse, key=err)
        near = [t for t in KIND_OVERHEAD_GRID_S if abs(t - best) < 5 * KIND_OVERHEAD_GRID_S[1]]
        best = min(near, key=err)
        out[f"{family}/{kind}"] = (len(mine) * best + SHRINK * family_s) / (len(mine) + SHRINK)
    return out


def predict(row: SpeedRow, rules: Rules, phase: str) -> float | None:
    """measured / predicted under ``rules`` (None when the row has no such figure)."""
    est = _estimate(row, rules)
    if phase == "decode" and row.decode_tok_s:
        return float(row.decode_tok_s) / est.per_user_tok_s
    if phase == "prefill" and row.prefill_tok_s:
        return float(row.prefill_tok_s) / est.prefill_tok_s
    return None


def in_sample(
    rows: list[SpeedRow], phase: str, serving: list[ServingRow] | None = None
) -> list[float]:
    rules = fit_rules(rows, serving=serving)
    return [r for row in rows if (r := predict(row, rules, phase)) is not None]


def serving_one_out(rows: list[SpeedRow], serving: list[ServingRow]) -> list[float]:
    """Each serving source predicted with its batching times fitted without it (the
    efficiencies from every batch-1 row: the serving rows do not fit them)."""
    base = fit_rules(rows)
    ratios: list[float] = []
    for group in sorted({row.group for row in serving}):
        train = [row for row in serving if row.group != group]
        per_sequence, allreduce = _fit_batching(train, base, rows)
        rules = replace(base, per_sequence_s=per_sequence, allreduce_s=allreduce)
        ratios += [predict_serving(row, rules) for row in serving if row.group == group]
    return ratios


def leave_one_source_out(
    rows: list[SpeedRow], phases: tuple[str, ...], serving: list[ServingRow] | None = None
) -> dict[str, list[float]]:
    """Per phase: each group's rows predicted by rules fitted without it (the batching times
    from ``serving`` and the other batch-1 rows), one fit per group for every phase."""
    ratios: dict[str, list[float]] = {phase: [] for phase in phases}
    for group in sorted({row.group for row in rows}):
        train = [row for row in rows if row.group != group]
        rules = fit_rules(train, serving=serving)
        for phase in phases:
            for row in rows:
                if row.group == group and (r := predict(row, rules, phase)) is not None:
                    ratios[phase].append(r)
    return ratios


@dataclass(frozen=True)
class Accuracy:
    n: int
    within_125: float
    within_150: float
    worst: float
    """The worst factor either way (max of ratio and 1/ratio)."""


def accuracy(ratios: list[float]) -> Accuracy:
    if not ratios:
        return Accuracy(0, 0.0, 0.0, 0.0)
    factors = [max(r, 1.0 / r) for r in ratios]
    return Accuracy(
        n=len(ratios),
        within_125=sum(f <= 1.25 for f in factors) / len(factors),
        within_150=sum(f <= 1.5 for f in factors) / len(factors),
        worst=max(factors),
    )


def spread_from(loso_decode: list[float], loso_prefill: list[float]) -> dict[str, float]:
    d_lo, d_hi = ratio_spread(loso_decode)
    p_lo, p_hi = ratio_spread(loso_prefill) if loso_prefill else (0.67, 1.5)
    return {
        "decode_low": round(min(d_lo, 1.0), 3),
        "decode_high": round(max(d_hi, 1.0), 3),
        "prefill_low": round(min(p_lo, 1.0), 3),
        "prefill_high": round(max(p_hi, 1.0), 3),
    }
