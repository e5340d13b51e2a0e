"""``hwadvisor calibrate-serve``: read what inference tools printed, compare each measured speed
with what the serving model predicts for the same model, quant and engine on the hardware named,
and optionally write the records in the calibration format (``serve_calibration.toml``'s
``[[speed]]``/``[[memory]]`` rows) for the user's own calibration."""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwadvisor.errors import HwAdvisorError, InputError
from hwadvisor.importers.inference_logs import (
    MemoryRecord,
    NotRecognised,
    Parsed,
    SpeedRecord,
    model_from_file,
    parse_text,
)

if TYPE_CHECKING:
    from hwadvisor.advise.serve.speed import DeviceSpeed
    from hwadvisor.catalog.llm_geometry import LlmGeometry
    from hwadvisor.model.profile import Profile

_GPU_BACKENDS = ("CUDA", "ROCM", "HIP", "METAL", "VULKAN", "SYCL", "MUSA", "CANN")


@dataclass(frozen=True)
class Hardware:
    label: str
    speed: DeviceSpeed


@dataclass(frozen=True)
class Comparison:
    record: SpeedRecord
    model: str | None
    """The catalog model it was matched to."""
    hardware: str | None
    bandwidth_gb_s: float | None
    tflops: float | None
    predicted_tok_s: float | None
    ratio: float | None
    """measured / predicted."""
    reason: str = ""
    """Why there is no ratio."""


@dataclass
class FileResult:
    path: str
    parsed: Parsed | None
    error: str | None = None


def read_files(paths: list[Path]) -> list[FileResult]:
    """Each file read and parsed; a file that cannot be is kept with its one-line reason."""
    from hwadvisor.inputfile import read_input

    results: list[FileResult] = []
    for path in paths:
        try:
            results.append(FileResult(str(path), parse_text(read_input(path))))
        except NotRecognised as exc:
            results.append(FileResult(str(path), None, str(exc)))
        except InputError as exc:
            results.append(FileResult(str(path), None, str(exc).removeprefix(f"{path}: ")))
    return results


def match_model(record: SpeedRecord) -> tuple[LlmGeometry | None, str]:
    """The catalog model a record names (by its file name: llama-bench's description gives the
    architecture and size only), or None with the reason."""
    from hwadvisor.catalog.llms import find_llm

    name = model_from_file(record.model_file)
    described = model_from_description(record.model, record.params)
    if not name:
        if described is not None:
            return described, ""
        what = repr(record.model) if record.model else "the output"
        return None, f"{what} names no model file: the catalog model cannot be told"
    try:
        return find_llm(name), ""
    except HwAdvisorError:
        # a file named its own way ("Qwen3-4B-UD-Q4_K_XL"): the description and count say
        if described is not None:
            return described, ""
        return None, f"{name!r} is not in the model catalog"


#: How near a catalog model's parameter count must be to the one a tool printed.
PARAMS_TOLERANCE = 0.02
#: How far a printed count may be off by rounding alone (llama-bench's "6.74 B"): counts nearer
#: than this are not told apart.
PARAMS_ROUNDING = 0.001


def model_from_description(description: str | None, params: float | None) -> LlmGeometry | None:
    """The catalog model a tool's description and parameter count stand for (llama-bench's
    ``llama 7B Q4_0`` with ``6.74 B``: Llama 2 7B): the models within
    :data:`PARAMS_TOLERANCE` of the count, of the description's architecture where one is
    (``qwen3moe`` is a Qwen3); None unless they all have one shape or one is much the nearest
    (a third of the distance of the nearest of another shape, or less)."""
    from hwadvisor.catalog.llms import all_llms, lookup_key

    if not description or not params or params <= 0:
        return None
    arch = re.match(r"[a-z]+", description.strip().lower())
    near = [g for g in all_llms() if abs(g.params_total - params) <= PARAMS_TOLERANCE * params]
    named = [g for g in near if arch and lookup_key(g.name).startswith(arch.group(0)[:4])]

    def shape(g: LlmGeometry) -> tuple[int | None, ...]:
        return (g.layers, g.hidden, g.heads, g.kv_heads, g.head_dim, g.intermediate, g.experts)

    for pool in (named, near):
        if not pool:
            continue
        pool = sorted(pool, key=lambda g: abs(g.params_total - params))
        best = pool[0]
        other = next((g for g in pool if shape(g) != shape(best)), None)
        if other is None:
            return best
        # several shapes: the count tells them apart only where one is much the nearest
        # (Mistral 7B's 7.25 B, not OLMo 2's 7.30 B, for 7.24 B)
        gap = max(abs(best.params_total - params), PARAMS_ROUNDING * params)
        return best if 3 * gap <= abs(other.params_total - params) else None
    return None


def hardware_for(record: SpeedRecord, machine: list[Hardware]) -> tuple[Hardware | None, str]:
    """The device the record names (the GPU catalog's peak figures), or else the profile's
    machine (its measured figures): its GPU for a GPU backend, its CPU for the CPU."""
    from hwadvisor.advise.serve.speed import base_kind, catalog_devices
    from hwadvisor.catalog.peaks import find_gpu_peak

    backend = (record.backend or "").upper()
    on_gpu = any(b in backend for b in _GPU_BACKENDS) or (not backend and bool(record.device))
    if record.device and on_gpu:
        peak = find_gpu_peak(record.device)
        if peak is None:
            return None, f"GPU {record.device!r} is not in the GPU catalog"
        devices = catalog_devices(peak, 1, "float")
        if devices is None:
            return None, f"the GPU catalog has no bandwidth, FLOPs or memory for {peak.name}"
        speed = devices[0]
        return Hardware(peak.name, speed), ""
    want = "gpu" if on_gpu else "cpu"
    for hw in machine:
        kind = base_kind(hw.speed.kind)
        if kind == want or (want == "cpu" and kind == "unified"):
            return hw, ""
    if not machine:
        return None, "no device named: give --profile, the scan of the machine it ran on"
    return None, f"the profile has no measured {want.upper()} figures"


def machine_from_profile(profile: Profile) -> list[Hardware]:
    """The profile's devices as the serving advice sees them (measured bandwidth and FLOPs)."""
    from hwadvisor.advise.serving import machine_options

    return [Hardware(c.hardware, c.speed) for c in machine_options(profile)]


def compare(record: SpeedRecord, machine: list[Hardware]) -> Comparison:
    """measured / predicted for one record; the reason where it cannot be made."""
    from hwadvisor.advise.serve.calib import predict
    from hwadvisor.advise.serve.quant import find_quant
    from hwadvisor.advise.serve.speed import load_rules

    geom, why = match_model(record)
    hw, hw_why = hardware_for(record, machine)

    def miss(reason: str) -> Comparison:
        return Comparison(
            record,
            geom.name if geom else None,
            hw.label if hw else None,
            hw.speed.bandwidth_bytes_s / 1e9 if hw else None,
            hw.speed.flops_s / 1e12 if hw else None,
            None,
            None,
            reason,
        )

    if geom is None:
        return miss(f"could not be matched: {why}")
    if hw is None:
        return miss(hw_why)
    if not record.quant:
        return miss("no quantization named")
    # what the estimate does not model: it keeps every layer and the KV cache on the device
    if record.kv_on_host and hw.speed.kind != "cpu":
        return miss(
            "the KV cache was kept in the host's RAM (nkvo 1), which the estimate does not model"
        )
    layers = record.gpu_layers
    if layers is not None and hw.speed.kind != "cpu" and 0 <= layers < geom.layers:
        return miss(
            f"{layers} of {geom.name}'s {geom.layers} layers on the GPU "
            f"(-ngl {layers}); the estimate keeps them all there"
        )
    try:
        find_quant(record.quant)
    except HwAdvisorError:
        return miss(f"quantization {record.quant} is not one the serving model knows")
    row = _row(record, geom, record.quant, hw)
    ratio = predict(row, load_rules(), record.phase)
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return miss("no prediction")
    return Comparison(
        record,
        geom.name,
        hw.label,
        hw.speed.bandwidth_bytes_s / 1e9,
        hw.speed.flops_s / 1e12,
        record.tok_s / ratio,
        ratio,
    )


def _row(record: SpeedRecord, geom: LlmGeometry, quant: str, hw: Hardware) -> Any:
    from hwadvisor.advise.serve.calib import SpeedRow

    decode = record.phase == "decode"
    return SpeedRow(
        geom=geom,
        quant=quant,
        engine="llama.cpp",
        device=hw.speed,
        context=record.depth + record.tokens,
        batch=1,
        decode_tok_s=record.tok_s if decode else None,
        prefill_tok_s=None if decode else record.tok_s,
        prompt_tokens=record.tokens if not decode else 512,
        group="user",
        source="user",
    )


# --------------------------------------------------------------------------------------------
# Output


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value < 10 else f"{value:.1f}"


def _bytes(value: float) -> str:
    return f"{value / 2**30:.2f} GiB"


def render_text(results: list[FileResult], comparisons: list[Comparison]) -> str:
    lines: list[str] = []
    by_record = {id(c.record): c for c in comparisons}
    for result in results:
        if result.parsed is None:
            lines.append(f"{result.path}: skipped: {result.error}")
            continue
        parsed = result.parsed
        lines.append(
            f"{result.path}: {parsed.kind}: {len(parsed.speed)} speed, "
            f"{len(parsed.memory)} memory record(s)"
        )
        for note in parsed.notes:
            lines.append(f"  note: {note}")
        for rec in parsed.speed:
            err = f" ± {_num(rec.tok_s_err)}" if rec.tok_s_err is not None else ""
            depth = f" @ depth {rec.depth}" if rec.depth else ""
            what = rec.model or "model not named"
            where = rec.device or rec.backend or "device not named"
            lines.append(
                f"  {rec.phase} {rec.tokens} tok{depth}: {_num(rec.tok_s)}{err} tok/s  "
                f"[{what}; {where}]"
            )
            c = by_record.get(id(rec))
            if c is None:
                continue
            if c.ratio is not None and c.predicted_tok_s is not None:
                lines.append(
                    f"    predicted {_num(c.predicted_tok_s)} tok/s for {c.model} {rec.quant} on "
                    f"{c.hardware}: measured/predicted = {c.ratio:.2f}"
                )
            else:
                lines.append(f"    no comparison: {c.reason}")
        for mem in parsed.memory:
            head = {"fit": "fitted", "oom": "OUT OF MEMORY", "unknown": "sizes"}[mem.outcome]
            about = ", ".join(
                p
                for p in (
                    mem.model,
                    mem.device,
                    f"context {mem.context}" if mem.context else None,
                    f"TP {mem.tensor_parallel}" if mem.tensor_parallel else None,
                )
                if p
            )
            lines.append(f"  memory: {head}" + (f" ({about})" if about else ""))
            shown = [
                f"{k} {_bytes(v)}" if _is_size(k) else f"{k} {v:g}" for k, v in mem.figures.items()
            ]
            if shown:
                lines.append("    " + "; ".join(shown))
            if mem.note:
                lines.append(f"    {mem.note}")
    return "\n".join(lines) + "\n"


_PLAIN = {
    "gpu_memory_utilization",
    "max_concurrency",
    "gpu_blocks",
    "kv_tokens",
    "layers_offloaded",
    "layers_total",
    "layers_overflowing",
    "context_requested",
}


def _is_size(key: str) -> bool:
    return key not in _PLAIN


def to_json(results: list[FileResult], comparisons: list[Comparison]) -> str:
    by_record = {id(c.record): c for c in comparisons}
    files = []
    for r in results:
        entry: dict[str, Any] = {"path": r.path}
        if r.parsed is None:
            entry["skipped"] = r.error
        else:
            entry["kind"] = r.parsed.kind
            entry["notes"] = r.parsed.notes
            speed = []
            for rec in r.parsed.speed:
                item = asdict(rec)
                c = by_record.get(id(rec))
                if c is not None:
                    item["comparison"] = {
                        "model": c.model,
                        "hardware": c.hardware,
                        "bandwidth_gb_s": c.bandwidth_gb_s,
                        "tflops": c.tflops,
                        "predicted_tok_s": c.predicted_tok_s,
                        "ratio": c.ratio,
                        "reason": c.reason or None,
                    }
                speed.append(item)
            entry["speed"] = speed
            entry["memory"] = [asdict(m) for m in r.parsed.memory]
        files.append(entry)
    return json.dumps({"files": files}, indent=2) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(round(value, 6))
    return json.dumps(str(value), ensure_ascii=False)


def to_calibration_toml(results: list[FileResult], comparisons: list[Comparison]) -> str:
    """The records as ``serve_calibration.toml`` rows: ``[[speed]]`` for each record compared
    with a catalog model on its hardware (with that model's ``[models]`` shape, so the file
    reads on its own), ``[[memory]]`` for each load."""
    from hwadvisor.advise.serve.calib import _GEOM_FIELDS
    from hwadvisor.catalog.llms import find_llm

    out = [
        "# Your own measurements, in the serving model's calibration format (hwadvisor",
        "# calibrate-serve). [[speed]] rows: hardware figures are the GPU catalog's peaks, or the",
        "# scan's measured figures with --profile.",
        "",
    ]
    rows: list[str] = []
    models: dict[str, Any] = {}
    for c in comparisons:
        # a run the estimate was compared with: not one it does not model (layers or the KV
        # cache left in RAM), whose figure would teach it the wrong thing
        if c.model is None or c.bandwidth_gb_s is None or c.tflops is None or c.ratio is None:
            continue
        rec = c.record
        geom = find_llm(c.model)
        models[geom.name] = geom
        kind = "cpu" if c.hardware and "RAM" in c.hardware else "gpu"
        fields: list[tuple[str, Any]] = [
            ("hardware", c.hardware or ""),
            ("kind", kind),
            ("bandwidth_gb_s", float(c.bandwidth_gb_s)),
            ("tflops", float(c.tflops)),
            ("count", 1),
            ("model", geom.name),
            ("quant", rec.quant or ""),
            ("engine", "llama.cpp"),
            ("context", rec.depth + rec.tokens),
            ("batch", 1),
        ]
        if rec.phase == "decode":
            fields.append(("decode_tok_s", float(rec.tok_s)))
        else:
            fields += [("prefill_tok_s", float(rec.tok_s)), ("prompt_tokens", rec.tokens)]
        fields += [("group", f"user:{c.hardware}"), ("source", _source(rec, results))]
        rows += ["[[speed]]", *(f"{k} = {_toml_value(v)}" for k, v in fields), ""]
    for name, geom in models.items():
        out.append(f"[models.{json.dumps(name)}]")
        for key in _GEOM_FIELDS:
            value = getattr(geom, key, None)
            if value is not None:
                out.append(f"{key} = {_toml_value(value)}")
        out.append("")
    out += rows
    for r in results:
        for mem in r.parsed.memory if r.parsed else ():
            if mem.outcome in ("fit", "oom"):  # sizes alone say nothing of a fit
                out += ["[[memory]]", *_memory_fields(mem, r.path), ""]
    return "\n".join(out)


def _source(rec: SpeedRecord, results: list[FileResult]) -> str:
    for r in results:
        if r.parsed and any(s is rec for s in r.parsed.speed):
            where = f" line {rec.line}" if rec.line else ""
            return f"{Path(r.path).name}{where} ({rec.tool})"
    return rec.tool


def _memory_fields(mem: MemoryRecord, path: str) -> list[str]:
    fields: list[tuple[str, Any]] = []
    if mem.model:
        fields.append(("model", mem.model))
    fields.append(("engine", "vllm" if mem.tool == "vllm" else "llama.cpp"))
    if mem.context:
        fields.append(("context", mem.context))
    fields.append(("kind", "gpu"))
    if "total_gpu_memory" in mem.figures:
        fields.append(("total_gib", round(mem.figures["total_gpu_memory"] / 2**30, 3)))
    elif "free_device_memory" in mem.figures:
        fields.append(("total_gib", round(mem.figures["free_device_memory"] / 2**30, 3)))
    fields.append(("count", mem.tensor_parallel or 1))
    fields.append(("outcome", mem.outcome))
    if "max_concurrency" in mem.figures:
        fields.append(("reported_concurrency", mem.figures["max_concurrency"]))
    for key, value in mem.figures.items():
        if key in ("total_gpu_memory", "max_concurrency"):
            continue
        fields.append(
            (
                f"reported_{key}_gib" if _is_size(key) else f"reported_{key}",
                (round(value / 2**30, 4) if _is_size(key) else value),
            )
        )
    if mem.device:
        fields.append(("device", mem.device))
    note = mem.note or ("sizes only" if mem.outcome == "unknown" else "")
    if note:
        fields.append(("note", note))
    fields.append(("source", f"{Path(path).name} ({mem.tool})"))
    return [f"{k} = {_toml_value(v)}" for k, v in fields]
