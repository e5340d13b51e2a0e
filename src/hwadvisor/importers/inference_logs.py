"""What inference tools print, read as calibration records for the serving model.

Pure functions on text (no file, no network). Four kinds of output are recognised by their
content:

- **llama-bench**: the markdown table (``| model | size | params | backend | ngl | test |
  t/s |``), its CSV (``-o csv``) and its JSON (``-o json``, ``-o jsonl``): one speed record a
  row; ``pp N`` is prefill of an N-token prompt, ``tg N`` decode of N tokens (``@ dD``: at a KV
  depth of D). The device line printed before the table (CUDA and ROCm's ``Device 0: NVIDIA
  GeForce RTX 4090, compute capability 8.9``, Vulkan's ``ggml_vulkan: 0 = AMD Radeon RX 7900
  XTX (RADV NAVI31) (radv) | ...``, Metal's ``GPU name: MTL0 (Apple M4 Max)``) names the
  hardware, and the one ``-m`` file on a pasted ``llama-bench`` command line the model; CSV and
  JSON carry ``gpu_info`` and ``model_filename``.
- **vLLM start-up lines**: the engine arguments (``model='...'``, ``max_model_len``,
  ``tensor_parallel_size``, ``dtype``), ``Loading model weights took X GB``, the memory
  profile (``total_gpu_memory``, ``gpu_memory_utilization``, ``kv_cache_size``, the V1 "model
  weights take ...; the rest of the memory reserved for KV Cache is X GiB"), ``Available KV
  cache memory``, ``# GPU blocks``, ``Maximum concurrency for N tokens per request: X x``, and
  the failures (``CUDA out of memory``, "max seq len (N) is larger than the maximum number of
  tokens that can be stored in KV cache (M)"): one memory record a log, fit or out of memory.
- **llama.cpp load lines** (llama-server, llama-cli, Ollama): layers offloaded, model and KV
  buffers, ``model size``, compute buffers and ``cudaMalloc failed: out of memory``: one memory
  record; its timing lines (``llama_perf_context_print`` / ``llama_print_timings`` /
  ``print_timings``: ``eval time`` and ``prompt eval time``) give speed records.
- **llama-fit-params**: the projected device memory against the free memory, and the fitted
  layers and context: one memory record.

Sizes are bytes: llama.cpp's ``MiB``/``GiB`` and vLLM's ``GiB`` are binary; vLLM's older
"took X GB" is GiB too (it divides by 2**30)."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

MIB = 2**20
GIB = 2**30

_UNIT = {"kib": 2**10, "mib": MIB, "gib": GIB, "gb": GIB, "mb": MIB, "b": 1}


@dataclass(frozen=True)
class SpeedRecord:
    """One measured speed: decode or prefill tokens/s."""

    tool: str
    """``llama-bench``, ``llama.cpp`` (timing lines)."""
    phase: str
    """``decode`` or ``prefill``."""
    tokens: int
    """Tokens generated (decode) or in the prompt (prefill)."""
    tok_s: float
    tok_s_err: float | None = None
    """The ± (standard deviation over repetitions) where printed."""
    depth: int = 0
    """Tokens already in the KV cache when the test started (llama-bench ``@ dN``)."""
    model: str | None = None
    """The tool's model description (``llama 7B Q4_0``, ``qwen2 7B Q4_K - Medium``)."""
    model_file: str | None = None
    quant: str | None = None
    """The quantization as the serving model names it (``Q4_K_M``), where recognised."""
    size_bytes: float | None = None
    params: float | None = None
    backend: str | None = None
    device: str | None = None
    gpu_layers: int | None = None
    kv_on_host: bool = False
    """The KV cache was kept in the host's RAM (llama-bench ``nkvo 1``, ``--no-kv-offload``)."""
    line: int = 0
    """Line (1-based) in the text it came from; 0 where the format has no lines (JSON)."""


@dataclass(frozen=True)
class MemoryRecord:
    """One load: did it fit, and the sizes the tool reported (bytes)."""

    tool: str
    """``vllm``, ``llama.cpp`` or ``llama-fit-params``."""
    outcome: str
    """``fit``, ``oom`` or ``unknown`` (sizes reported, no sign of either)."""
    figures: dict[str, float] = field(default_factory=dict)
    """Named sizes in bytes (``weights``, ``kv_cache``, ``total_gpu_memory``, ...) and plain
    numbers (``gpu_memory_utilization``, ``max_concurrency``, ``gpu_blocks``, ``layers_offloaded``,
    ``layers_total``, ``kv_tokens``)."""
    model: str | None = None
    device: str | None = None
    context: int | None = None
    tensor_parallel: int | None = None
    dtype: str | None = None
    note: str = ""


@dataclass
class Parsed:
    """What one text held."""

    kind: str
    """``llama-bench``, ``llama-bench-csv``, ``llama-bench-json``, ``vllm``, ``llama.cpp``,
    ``llama-fit-params``."""
    speed: list[SpeedRecord] = field(default_factory=list)
    memory: list[MemoryRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What was skipped and why (a truncated row, an unreadable number)."""


class NotRecognised(ValueError):
    """The text is none of the formats this module reads; the message says what was looked for."""


# --------------------------------------------------------------------------------------------
# Shared helpers

_NUM = r"[0-9]+(?:\.[0-9]+)?"
_DEVICE = re.compile(r"^\s*Device \d+: (?P<name>[^,\n]+?)(?:,|$)", re.M)
#: Vulkan's device line ("ggml_vulkan: 0 = AMD Radeon RX 7900 XTX (RADV NAVI31) (radv) | uma:
#: 0 | ..."), less the driver's names in parentheses.
_VULKAN_DEVICE = re.compile(r"^\s*ggml_vulkan: \d+ = (?P<name>[^|\n]+?)\s*(?:\||$)", re.M)
_DRIVER_NOTES = re.compile(r"(?:\s*\([^()]*\))+$")
#: Metal's, as builds have printed it: "GPU name:   Apple M2 Max", "GPU name:   MTL0 (Apple M4
#: Max)", "found device: Apple M4 Max", "picking default device: Apple M4"; a bare "MTL0" names
#: nothing.
_METAL_DEVICE = re.compile(
    r"^\s*ggml_metal\w*: (?:GPU name|found device|picking default device):\s*(?P<name>.+?)\s*$",
    re.M,
)
_METAL_INDEX = re.compile(r"MTL\d+(?:\s*\((?P<inner>[^()]+)\))?")


def _device_name(pattern: re.Pattern[str], name: str) -> str | None:
    if pattern is _VULKAN_DEVICE:
        return _DRIVER_NOTES.sub("", name).strip() or None
    if pattern is _METAL_DEVICE and (index := _METAL_INDEX.fullmatch(name)):
        return index.group("inner")
    return name.strip() or None


def _size(value: str, unit: str) -> float:
    return float(value) * _UNIT[unit.lower()]


def _first_device(text: str) -> str | None:
    """The first device a CUDA/ROCm, Vulkan or Metal back end names."""
    found = sorted(
        (m.start(), p, m.group("name"))
        for p in (_DEVICE, _VULKAN_DEVICE, _METAL_DEVICE)
        for m in p.finditer(text)
    )
    return next((n for _, p, name in found if (n := _device_name(p, name))), None)


#: The model file on llama-bench's command line, where the paste has it.
_BENCH_MODEL = re.compile(r"(?:^|\s)(?:-m|--model)[ =](\S+\.gguf)\b", re.I)


def _bench_model_file(text: str) -> str | None:
    """The one model file the pasted llama-bench command lines name (none where they name
    several: the rows do not say which is whose)."""
    files: set[str] = set()
    for line in text.splitlines():
        if "llama-bench" in line:
            files |= set(_BENCH_MODEL.findall(line))
    return files.pop() if len(files) == 1 else None


_GGUF_QUANT = re.compile(
    r"\b(?P<q>I?Q[0-9]_(?:K|[0-9]|XXS|XS|S|M|NL)(?:_[SML])?|F16|BF16|F32|MXFP4)"
    r"(?:\s*-\s*(?P<size>Small|Medium|Large)|\s+[0-9.]+\s*bpw)?",
    re.I,
)


def gguf_quant(description: str) -> str | None:
    """The quant in a llama.cpp model description or file name: ``llama 7B Q4_0`` → ``Q4_0``,
    ``qwen2 7B Q4_K - Medium`` → ``Q4_K_M``, ``Qwen2.5-7B-Instruct-Q4_K_M.gguf`` →
    ``Q4_K_M``; None when none is named."""
    match = _GGUF_QUANT.search(description)
    if not match:
        return None
    q = match.group("q").upper()
    size = match.group("size")
    if size and q.endswith("_K"):
        q += "_" + size[0].upper()
    return q


def model_from_file(path: str | None) -> str | None:
    """The model name in a GGUF file path, less the folder, the extension and the quant:
    ``models/Qwen2.5-7B-Instruct-Q4_K_M.gguf`` → ``Qwen2.5-7B-Instruct``."""
    if not path:
        return None
    stem = re.split(r"[\\/]", path.strip())[-1]
    stem = re.sub(r"(-\d{5}-of-\d{5})?\.gguf$", "", stem, flags=re.I)
    match = _GGUF_QUANT.search(stem)
    if match and match.start() > 0:
        stem = stem[: match.start()]
    stem = stem.rstrip("-_. ")
    # the quantizer's marks before the quant: unsloth's dynamic "UD-", an imatrix "i1-"
    stem = re.sub(r"[-_.](?:ud|i1|imat|imatrix)$", "", stem, flags=re.I)
    return stem or None


# --------------------------------------------------------------------------------------------
# llama-bench


_TEST = re.compile(r"^(?P<kind>pp|tg)\s*(?P<n>\d+)(?:\s*@\s*d(?P<depth>\d+))?$")
_TS = re.compile(rf"^(?P<ts>{_NUM})(?:\s*±\s*(?P<err>{_NUM}))?$")
_SIZE = re.compile(rf"^(?P<v>{_NUM})\s*(?P<u>[KMG]iB)$")
_PARAMS = re.compile(rf"^(?P<v>{_NUM})\s*(?P<u>[KMBT])$")
_PARAM_SCALE = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def parse_llama_bench_table(text: str) -> Parsed:
    """The markdown tables of llama-bench in ``text``; rows cut short are noted, not read."""
    lines = text.splitlines()
    out = Parsed("llama-bench")
    device = _first_device(text)
    model_file = _bench_model_file(text)
    header: list[str] | None = None
    for number, line in enumerate(lines, start=1):
        if not line.lstrip().startswith("|"):
            header = None if not line.strip() else header
            continue
        cells = _cells(line)
        low = [c.lower() for c in cells]
        if "model" in low and "test" in low:
            header = low
            continue
        if header is None or all(set(c) <= set("-: ") for c in cells):
            continue
        if len(cells) != len(header):
            out.notes.append(
                f"line {number}: a row cut short ({len(cells)} of {len(header)} cells)"
            )
            continue
        row = dict(zip(header, cells, strict=True))
        record = _bench_row(row, device, number, model_file)
        if isinstance(record, str):
            out.notes.append(f"line {number}: {record}")
        else:
            out.speed.extend(record)
    if header is None and not out.speed and not out.notes:
        raise NotRecognised("no llama-bench table (a '| model | ... | test | t/s |' header)")
    return out


def _bench_row(
    row: dict[str, str], device: str | None, line: int, model_file: str | None = None
) -> list[SpeedRecord] | str:
    test = _TEST.match(row.get("test", "").replace(" @ ", " @ ").strip())
    if not test:
        return f"test {row.get('test', '')!r} is neither 'pp N' nor 'tg N'"
    kind, n, depth = test.group("kind"), int(test.group("n")), int(test.group("depth") or 0)
    # Newer tables split the figure into "prompt t/s" and "gen t/s" columns.
    column = "t/s" if "t/s" in row else ("prompt t/s" if kind == "pp" else "gen t/s")
    ts = _TS.match(row.get(column, ""))
    if not ts:
        return f"t/s {row.get(column, '')!r} is not a number"
    size = _SIZE.match(row.get("size", ""))
    params = _PARAMS.match(row.get("params", ""))
    model = row.get("model") or None
    ngl = row.get("ngl") or row.get("n_gpu_layers")
    nkvo = (row.get("nkvo") or row.get("no_kv_offload") or "").strip().lower()
    return [
        SpeedRecord(
            tool="llama-bench",
            phase="prefill" if kind == "pp" else "decode",
            tokens=n,
            depth=depth,
            tok_s=float(ts.group("ts")),
            tok_s_err=float(ts.group("err")) if ts.group("err") else None,
            model=model,
            model_file=model_file,
            quant=gguf_quant(model or "") or gguf_quant(model_file or ""),
            size_bytes=_size(size.group("v"), size.group("u")) if size else None,
            params=float(params.group("v")) * _PARAM_SCALE[params.group("u")] if params else None,
            backend=row.get("backend") or None,
            device=device,
            gpu_layers=int(ngl) if ngl and ngl.lstrip("-").isdigit() else None,
            kv_on_host=nkvo in ("1", "true", "yes"),
            line=line,
        )
    ]


def _bench_object(obj: dict[str, Any], line: int) -> SpeedRecord | str:
    try:
        n_prompt, n_gen = int(obj.get("n_prompt", 0)), int(obj.get("n_gen", 0))
        if n_gen and not n_prompt:
            phase, tokens = "decode", n_gen
        elif n_prompt and not n_gen:
            phase, tokens = "prefill", n_prompt
        else:
            return f"a combined test (n_prompt {n_prompt}, n_gen {n_gen}) is not one phase"
        ts = float(obj["avg_ts"])
        err = obj.get("stddev_ts")
        model = str(obj.get("model_type") or "") or None
        model_file = str(obj.get("model_filename") or "") or None
        ngl = obj.get("n_gpu_layers")
        return SpeedRecord(
            tool="llama-bench",
            phase=phase,
            tokens=tokens,
            depth=int(obj.get("n_depth", 0) or 0),
            tok_s=ts,
            tok_s_err=float(err) if err not in (None, "") else None,
            model=model,
            model_file=model_file,
            quant=gguf_quant(model or "") or gguf_quant(model_file or ""),
            size_bytes=float(obj["model_size"]) if obj.get("model_size") else None,
            params=float(obj["model_n_params"]) if obj.get("model_n_params") else None,
            backend=str(obj.get("backends") or obj.get("backend") or "") or None,
            device=str(obj.get("gpu_info") or "").strip() or None,
            gpu_layers=int(ngl) if ngl not in (None, "") else None,
            kv_on_host=str(obj.get("no_kv_offload", "")).strip().lower() in ("1", "true"),
            line=line,
        )
    except (KeyError, TypeError, ValueError) as exc:
        return f"unreadable figure ({exc})"


def parse_llama_bench_csv(text: str) -> Parsed:
    reader = csv.DictReader(io.StringIO(text.strip()))
    if not reader.fieldnames or not {"avg_ts", "model_type"} <= set(reader.fieldnames):
        raise NotRecognised("no llama-bench CSV (a header with model_type and avg_ts)")
    out = Parsed("llama-bench-csv")
    for index, row in enumerate(reader, start=2):
        if None in row or any(v is None for v in row.values()):
            out.notes.append(f"line {index}: a row cut short")
            continue
        record = _bench_object(dict(row), index)
        if isinstance(record, str):
            out.notes.append(f"line {index}: {record}")
        else:
            out.speed.append(record)
    return out


def parse_llama_bench_json(text: str) -> Parsed:
    """``-o json`` (an array of objects) or ``-o jsonl`` (one object a line)."""
    stripped = text.strip()
    objects: list[Any]
    try:
        loaded = json.loads(stripped)
        objects = loaded if isinstance(loaded, list) else [loaded]
    except json.JSONDecodeError:
        try:
            objects = [json.loads(line) for line in stripped.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise NotRecognised(f"not llama-bench JSON ({exc.msg}, line {exc.lineno})") from exc
    if not objects or not all(isinstance(o, dict) and "avg_ts" in o for o in objects):
        raise NotRecognised("no llama-bench JSON (objects with avg_ts)")
    out = Parsed("llama-bench-json")
    for index, obj in enumerate(objects):
        record = _bench_object(obj, 0)
        if isinstance(record, str):
            out.notes.append(f"object {index + 1}: {record}")
        else:
            out.speed.append(record)
    return out


# --------------------------------------------------------------------------------------------
# vLLM


_V_ENGINE_MODEL = re.compile(r"\bmodel='(?P<m>[^']+)'")
_V_MAXLEN = re.compile(r"\b(?:max_model_len|max_seq_len)=(?P<n>\d+)")
_V_TP = re.compile(r"\btensor_parallel_size=(?P<n>\d+)")
_V_DTYPE = re.compile(r"\bdtype=(?:torch\.)?(?P<d>[a-z0-9_]+)")
_V_SERVE = re.compile(r"\bvllm serve (?P<m>\S+)")
_V_SERVE_LEN = re.compile(r"--max-model-len[ =](?P<n>\d+)")
_V_SERVE_TP = re.compile(r"(?:--tensor-parallel-size|-tp)[ =](?P<n>\d+)")
_V_WEIGHTS = re.compile(rf"(?:Loading )?model weights (?:took|take) (?P<v>{_NUM}) ?(?P<u>GiB|GB)")
_V_AVAILABLE = re.compile(rf"Available KV cache memory: (?P<v>{_NUM}) ?(?P<u>GiB|GB)")
_V_BLOCKS = re.compile(r"# GPU blocks: (?P<n>\d+)")
_V_KV_TOKENS = re.compile(r"GPU KV cache size: (?P<n>[\d,]+) tokens")
_V_CONC = re.compile(rf"Maximum concurrency for (?P<t>[\d,]+) tokens per request: (?P<x>{_NUM})x")
_V_TOTAL = re.compile(rf"total_gpu_memory[ =(]+(?P<v>{_NUM}) ?(?P<u>GiB|GB)")
_V_UTIL = re.compile(rf"gpu_memory_utilization[ =(]+(?P<v>{_NUM})")
_V_KVSIZE = re.compile(rf"kv_cache_size=(?P<v>{_NUM}) ?(?P<u>GiB|GB)")
_V_KV_REST = re.compile(rf"reserved for KV Cache is (?P<v>{_NUM}) ?(?P<u>GiB|GB)")
_V_TOO_LONG = re.compile(
    r"max seq len \((?P<want>\d+)\) is larger than the maximum number of tokens that can be "
    r"stored in KV cache \((?P<have>\d+)\)"
)
_V_KV_ERR = re.compile(r"ValueError: .*KV cache.*(?:larger than the available|insufficient)", re.I)
_V_OOM = re.compile(r"CUDA out of memory|torch\.OutOfMemoryError|OutOfMemoryError", re.I)
_V_MARKERS = (_V_BLOCKS, _V_CONC, _V_WEIGHTS, _V_AVAILABLE, _V_TOO_LONG, _V_KV_REST, _V_KVSIZE)


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    matches = list(pattern.finditer(text))
    return matches[-1] if matches else None


def parse_vllm(text: str) -> Parsed:
    if not any(p.search(text) for p in _V_MARKERS) and "vllm" not in text.lower():
        raise NotRecognised("no vLLM start-up lines (# GPU blocks, Maximum concurrency, ...)")
    figures: dict[str, float] = {}
    for key, pattern in (
        ("weights", _V_WEIGHTS),
        ("kv_cache", _V_AVAILABLE),
        ("kv_cache", _V_KVSIZE),
        ("kv_cache", _V_KV_REST),
        ("total_gpu_memory", _V_TOTAL),
    ):
        if m := _last(pattern, text):
            figures[key] = _size(m.group("v"), m.group("u"))
    if m := _last(_V_UTIL, text):
        figures["gpu_memory_utilization"] = float(m.group("v"))
    if m := _last(_V_BLOCKS, text):
        figures["gpu_blocks"] = float(m.group("n"))
    if m := _last(_V_KV_TOKENS, text):
        figures["kv_tokens"] = float(m.group("n").replace(",", ""))
    context: int | None = None
    if m := _last(_V_CONC, text):
        figures["max_concurrency"] = float(m.group("x"))
        context = int(m.group("t").replace(",", ""))
    model = tp = dtype = None
    if (m := _V_ENGINE_MODEL.search(text)) or (m := _V_SERVE.search(text)):
        model = m.group("m")
    if m := _V_MAXLEN.search(text) or _V_SERVE_LEN.search(text):
        context = int(m.group("n"))
    if m := _V_TP.search(text) or _V_SERVE_TP.search(text):
        tp = int(m.group("n"))
    if m := _V_DTYPE.search(text):
        dtype = m.group("d")
    too_long = _last(_V_TOO_LONG, text)
    if too_long:
        context = int(too_long.group("want"))
        figures["kv_tokens"] = float(too_long.group("have"))
    if too_long or _V_KV_ERR.search(text) or _V_OOM.search(text):
        outcome = "oom"
        note = (
            f"max seq len {too_long.group('want')} > KV cache {too_long.group('have')} tokens"
            if too_long
            else "out of memory"
        )
    elif {"max_concurrency", "gpu_blocks", "kv_cache"} & set(figures):
        outcome, note = "fit", ""
    else:
        outcome, note = "unknown", "sizes only: no KV cache allocation or failure in the text"
    if not figures and outcome == "unknown":
        raise NotRecognised("vLLM text with no figures in it")
    record = MemoryRecord(
        tool="vllm",
        outcome=outcome,
        figures=figures,
        model=model,
        context=context,
        tensor_parallel=tp,
        dtype=dtype,
        note=note,
    )
    return Parsed("vllm", memory=[record])


# --------------------------------------------------------------------------------------------
# llama.cpp load and timing lines

_L_OFFLOADED = re.compile(r"offloaded (?P<n>\d+)/(?P<m>\d+) layers to GPU")
_L_MODEL_BUF = re.compile(
    rf"load_tensors:\s+(?P<dev>CUDA\d+|ROCm\d+|Metal|Vulkan\d+|SYCL\d+|MTL\d+)(?: model)? buffer "
    rf"size =\s*(?P<v>{_NUM}) (?P<u>MiB|GiB)"
)
_L_MODEL_SIZE = re.compile(rf"model size\s*=\s*(?P<v>{_NUM}) (?P<u>GiB|MiB)")
_L_KV_SIZE = re.compile(
    rf"(?:llama_kv_cache(?:_unified)?: size|KV self size)\s*=\s*(?P<v>{_NUM}) (?P<u>MiB|GiB)"
)
_L_KV_BUF = re.compile(rf"(?P<dev>\S+) KV buffer size =\s*(?P<v>{_NUM}) (?P<u>MiB|GiB)")
_L_COMPUTE = re.compile(
    rf"(?P<dev>CUDA\d+|ROCm\d+|Metal|Vulkan\d+|SYCL\d+|MTL\d+) compute buffer size =\s*"
    rf"(?P<v>{_NUM}) (?P<u>MiB|GiB)"
)
_L_NCTX = re.compile(r"\bn_ctx\s*=\s*(?P<n>\d+)")
_L_OOM = re.compile(
    rf"allocating (?P<v>{_NUM}) (?P<u>MiB|GiB) on device (?P<d>\d+): "
    r"cudaMalloc failed: out of memory"
)
_L_OOM_OTHER = re.compile(r"unable to allocate \S+ buffer|failed to allocate .*buffer", re.I)
_L_MODEL_FILE = re.compile(r"(?:tensors from |loading model '?)(?P<f>[^'\s]+\.gguf)")
_L_USING = re.compile(r"using device \S+ \((?P<name>[^)]+)\)")
_L_TIMING = re.compile(
    rf"(?P<tag>llama_perf_context_print|llama_print_timings|print_timings):\s*"
    rf"(?P<what>prompt eval|eval) time =\s*{_NUM} ms /\s*(?P<n>\d+) (?:tokens|runs)\s*\(\s*"
    rf"{_NUM} ms per token,\s*(?P<ts>{_NUM}) tokens per second\)"
)
_L_MARKERS = (_L_OFFLOADED, _L_MODEL_BUF, _L_KV_SIZE, _L_KV_BUF, _L_OOM, _L_TIMING, _L_MODEL_SIZE)


def parse_llama_cpp(text: str) -> Parsed:
    if not any(p.search(text) for p in _L_MARKERS):
        raise NotRecognised("no llama.cpp load or timing lines")
    out = Parsed("llama.cpp")
    device = _first_device(text)
    if device is None and (m := _L_USING.search(text)):
        device = m.group("name").strip()
    model_file = m.group("f") if (m := _L_MODEL_FILE.search(text)) else None
    for number, line in enumerate(text.splitlines(), start=1):
        if m := _L_TIMING.search(line):
            out.speed.append(
                SpeedRecord(
                    tool="llama.cpp",
                    phase="prefill" if m.group("what") == "prompt eval" else "decode",
                    tokens=int(m.group("n")),
                    tok_s=float(m.group("ts")),
                    model_file=model_file,
                    quant=gguf_quant(model_file or ""),
                    device=device,
                    line=number,
                )
            )
    figures: dict[str, float] = {}
    if m := _last(_L_OFFLOADED, text):
        figures["layers_offloaded"] = float(m.group("n"))
        figures["layers_total"] = float(m.group("m"))
    model_bufs = {
        m.group("dev"): _size(m.group("v"), m.group("u")) for m in _L_MODEL_BUF.finditer(text)
    }
    if model_bufs:
        figures["weights_on_device"] = sum(model_bufs.values())
    if m := _last(_L_MODEL_SIZE, text):
        figures["weights"] = _size(m.group("v"), m.group("u"))
    if m := _last(_L_KV_SIZE, text):
        figures["kv_cache"] = _size(m.group("v"), m.group("u"))
    kv_dev = {
        m.group("dev"): _size(m.group("v"), m.group("u"))
        for m in _L_KV_BUF.finditer(text)
        if not m.group("dev").upper().startswith("CPU")
    }
    if kv_dev:
        figures["kv_cache_on_device"] = sum(kv_dev.values())
    compute = {m.group("dev"): _size(m.group("v"), m.group("u")) for m in _L_COMPUTE.finditer(text)}
    if compute:
        figures["compute_buffers"] = sum(compute.values())
    oom = _last(_L_OOM, text)
    if oom:
        figures["failed_allocation"] = _size(oom.group("v"), oom.group("u"))
    context = int(m.group("n")) if (m := _last(_L_NCTX, text)) else None
    if oom or _L_OOM_OTHER.search(text):
        outcome = "oom"
        note = (
            f"cudaMalloc of {oom.group('v')} {oom.group('u')} on device {oom.group('d')} failed"
            if oom
            else "a buffer could not be allocated"
        )
    elif "kv_cache" in figures or "kv_cache_on_device" in figures:
        outcome, note = "fit", ""
    else:
        outcome, note = "unknown", "no KV cache allocation or failure in the text"
    if figures:
        out.memory.append(
            MemoryRecord(
                tool="llama.cpp",
                outcome=outcome,
                figures=figures,
                device=device,
                context=context,
                note=note,
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# llama-fit-params

_F_PROJECTED = re.compile(
    r"projected to use (?P<use>\d+) MiB of device memory vs\. "
    r"(?P<free>\d+) MiB of free device memory"
)
_F_CTX = re.compile(r"context size reduced from (?P<a>\d+) to (?P<b>\d+)")
_F_DEVICE = re.compile(
    r"- (?P<dev>\S+) \((?P<name>[^)]+)\):\s*(?P<layers>\d+) layers"
    r"(?: \((?P<over>\d+) overflowing\))?,"
    r"\s*(?P<used>\d+) MiB used,\s*(?P<free>\d+) MiB free"
)
_F_ARGS = re.compile(r"^-c (?P<c>\d+)(?: -ngl (?P<ngl>\d+))?", re.M)


def parse_fit_params(text: str) -> Parsed:
    if "llama_params_fit" not in text:
        raise NotRecognised("no llama-fit-params lines (llama_params_fit...)")
    figures: dict[str, float] = {}
    first = _F_PROJECTED.search(text)
    if first:
        figures["projected"] = int(first.group("use")) * MIB
        figures["free_device_memory"] = int(first.group("free")) * MIB
    device = _first_device(text)
    dev_lines = list(_F_DEVICE.finditer(text))
    for dev in dev_lines:
        figures["fitted_used"] = figures.get("fitted_used", 0.0) + int(dev.group("used")) * MIB
        layers = int(dev.group("layers"))
        figures["layers_offloaded"] = figures.get("layers_offloaded", 0.0) + layers
        if dev.group("over"):
            over = int(dev.group("over"))
            figures["layers_overflowing"] = figures.get("layers_overflowing", 0.0) + over
        device = device or dev.group("name")
    context = None
    if cut := _F_CTX.search(text):
        figures["context_requested"] = float(cut.group("a"))
        context = int(cut.group("b"))
    if args := _F_ARGS.search(text):
        context = int(args.group("c"))
    fits_as_asked = first is not None and int(first.group("use")) <= int(first.group("free"))
    changed = bool(dev_lines) or "context_requested" in figures
    note = (
        "fits as asked"
        if fits_as_asked
        else "did not fit as asked; fitted by "
        + ", ".join(
            part
            for part, on in (
                (f"context {context}", "context_requested" in figures),
                ("layers overflowing to system memory", "layers_overflowing" in figures),
            )
            if on
        )
        if changed
        else "did not fit as asked"
    )
    record = MemoryRecord(
        tool="llama-fit-params",
        outcome="fit" if fits_as_asked else "oom",
        figures=figures,
        device=device,
        context=context,
        note=note,
    )
    return Parsed("llama-fit-params", memory=[record])


# --------------------------------------------------------------------------------------------
# Detection


def detect(text: str) -> str | None:
    """Which format ``text`` is, by its content; None when none."""
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")) and '"avg_ts"' in text:
        return "llama-bench-json"
    first = stripped.splitlines()[0] if stripped else ""
    if "avg_ts" in first and "model_type" in first and "," in first:
        return "llama-bench-csv"
    if "llama_params_fit" in text:
        return "llama-fit-params"
    if re.search(r"^\s*\|.*\bmodel\b.*\|.*\btest\b.*\|", text, re.M | re.I):
        return "llama-bench"
    if any(p.search(text) for p in _V_MARKERS):
        return "vllm"
    if any(p.search(text) for p in _L_MARKERS):
        return "llama.cpp"
    return None


_PARSERS = {
    "llama-bench": parse_llama_bench_table,
    "llama-bench-csv": parse_llama_bench_csv,
    "llama-bench-json": parse_llama_bench_json,
    "llama-fit-params": parse_fit_params,
    "vllm": parse_vllm,
    "llama.cpp": parse_llama_cpp,
}


def parse_text(text: str) -> Parsed:
    """The records in ``text``, its format detected by content; :class:`NotRecognised` when it
    is none of them or holds no record."""
    kind = detect(text)
    if kind is None:
        raise NotRecognised(
            "not output of llama-bench, llama.cpp, llama-fit-params or vLLM (no table, "
            "timing, load or start-up line found)"
        )
    parsed = _PARSERS[kind](text)
    if not parsed.speed and not parsed.memory:
        why = f" ({parsed.notes[0]})" if parsed.notes else ""
        raise NotRecognised(f"{kind} output with no complete record{why}")
    return parsed
