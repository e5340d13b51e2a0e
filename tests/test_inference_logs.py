"""Inference tools' output read as calibration records (importers/inference_logs.py) and the
``calibrate-serve`` command, on real pastes (tests/fixtures/inference/README.md: their sources)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.advise.serve.calib import speed_rows
from hwadvisor.advise.serve.quant import find_quant
from hwadvisor.advise.serve.speed import DeviceSpeed, estimate_speed, load_rules
from hwadvisor.catalog.llms import find_llm
from hwadvisor.catalog.toml import parse_toml
from hwadvisor.cli import main
from hwadvisor.errors import InputError
from hwadvisor.importers.inference_logs import (
    GIB,
    MIB,
    NotRecognised,
    detect,
    gguf_quant,
    model_from_file,
    parse_text,
)

FIX = Path(__file__).parent / "fixtures" / "inference"
CSV_TG = (119.915244, 0.430617)
JSON_TG = (118.881588, 1.041811)


def parsed(name: str):  # type: ignore[no-untyped-def]
    return parse_text((FIX / name).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------
# llama-bench


def test_llama_bench_table_numbers_and_device() -> None:
    p = parsed("llama_bench_rtx3090ti.md")
    assert p.kind == "llama-bench"
    assert [(s.phase, s.tokens, s.tok_s, s.tok_s_err) for s in p.speed] == [
        ("prefill", 512, 4035.47, 157.68),
        ("decode", 128, 127.43, 0.18),
        ("prefill", 512, 237.84, 10.28),
        ("decode", 128, 59.99, 2.35),
    ]
    first = p.speed[0]
    assert first.device == "NVIDIA GeForce RTX 3090 Ti"
    assert first.model == "llama 7B Q4_0" and first.quant == "Q4_0"
    assert first.size_bytes == pytest.approx(3.56 * GIB)
    assert first.params == pytest.approx(6.74e9)
    assert first.backend == "CUDA" and first.gpu_layers == 99
    assert first.line == 5


def test_truncated_table_keeps_complete_rows_and_says_what_was_cut() -> None:
    p = parsed("llama_bench_rtx4090_truncated.md")
    assert len(p.speed) == 5
    assert p.speed[-1].tok_s == 7979.85 and p.speed[-1].quant == "Q4_0"
    assert p.speed[0].quant == "F16" and p.speed[0].tok_s == 11048.22
    assert p.speed[0].device == "NVIDIA GeForce RTX 4090"
    assert p.notes == ["line 12: a row cut short (1 of 7 cells)"]


def test_table_cut_before_any_row_is_not_a_record() -> None:
    text = (FIX / "llama_bench_rtx4090_truncated.md").read_text().splitlines()[:6]
    with pytest.raises(NotRecognised, match="no complete record"):
        parse_text("\n".join(text))


@pytest.mark.parametrize(
    ("name", "kind", "prefill", "decode"),
    [
        ("llama_bench_rtx4080.csv", "llama-bench-csv", (7285.676949, 100.064434), CSV_TG),
        ("llama_bench_rtx4080.json", "llama-bench-json", (7100.002165, 140.34152), JSON_TG),
    ],
)
def test_llama_bench_csv_and_json(
    name: str, kind: str, prefill: tuple[float, float], decode: tuple[float, float]
) -> None:
    p = parsed(name)
    assert p.kind == kind
    pp, tg = p.speed
    assert (pp.phase, pp.tokens, pp.tok_s, pp.tok_s_err) == ("prefill", 512, *prefill)
    assert (tg.phase, tg.tokens, tg.tok_s, tg.tok_s_err) == ("decode", 128, *decode)
    assert tg.device == "NVIDIA GeForce RTX 4080"
    assert tg.quant == "Q4_K_M" and tg.size_bytes == 4677120000 and tg.params == 7615616512
    assert tg.model_file == "models/Qwen2.5-7B-Instruct-Q4_K_M.gguf"


def test_jsonl_one_object_a_line() -> None:
    objects = json.loads((FIX / "llama_bench_rtx4080.json").read_text())
    p = parse_text("\n".join(json.dumps(o) for o in objects))
    assert [s.tok_s for s in p.speed] == [7100.002165, 118.881588]


@pytest.mark.parametrize(
    ("text", "quant"),
    [
        ("llama 7B Q4_0", "Q4_0"),
        ("qwen2 7B Q4_K - Medium", "Q4_K_M"),
        ("llama 7B mostly Q4_0", "Q4_0"),
        ("granite 3B IQ4_XS - 4.25 bpw", "IQ4_XS"),
        ("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "Q4_K_M"),
        ("llama 7B", None),
    ],
)
def test_gguf_quant(text: str, quant: str | None) -> None:
    assert gguf_quant(text) == quant


def test_model_from_file() -> None:
    assert model_from_file("models/Qwen2.5-7B-Instruct-Q4_K_M.gguf") == "Qwen2.5-7B-Instruct"
    assert model_from_file(None) is None


# --------------------------------------------------------------------------------------------
# vLLM


def test_vllm_v1_startup_fit() -> None:
    p = parsed("vllm_v1_startup.log")
    (m,) = p.memory
    assert p.kind == "vllm" and m.outcome == "fit"
    assert m.model == "neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8"
    assert m.context == 2048
    assert m.figures["weights"] == pytest.approx(67.7229 * GIB)
    assert m.figures["gpu_blocks"] == 1381 and m.figures["max_concurrency"] == 10.79


def test_vllm_kv_too_small_is_out_of_memory_with_figures() -> None:
    (m,) = parsed("vllm_rtx3090_29k_fail.log").memory
    assert m.outcome == "oom" and m.context == 29000
    assert m.figures["kv_tokens"] == 23648
    assert m.figures["total_gpu_memory"] == pytest.approx(23.58 * GIB)
    assert m.figures["kv_cache"] == pytest.approx(2.89 * GIB)
    assert m.figures["gpu_memory_utilization"] == 0.90
    assert m.figures["max_concurrency"] == 0.82


def test_vllm_engine_args_and_value_error() -> None:
    (m,) = parsed("vllm_engine_args_kv_error.log").memory
    assert m.outcome == "oom"
    assert (m.context, m.tensor_parallel, m.dtype) == (4096, 1, "float16")
    assert m.figures == {"gpu_blocks": 229.0, "kv_tokens": 3664.0}


def test_vllm_memory_profile_lines() -> None:
    (m,) = parsed("vllm_memory_profiling_tp.log").memory
    assert m.outcome == "fit"
    assert m.figures["weights"] == pytest.approx(21.21 * GIB)
    assert m.figures["kv_cache"] == pytest.approx(1.57 * GIB)
    assert m.figures["gpu_memory_utilization"] == 0.99


def test_vllm_cuda_oom() -> None:
    text = "Loading model weights took 14.9888 GB\ntorch.OutOfMemoryError: CUDA out of memory."
    (m,) = parse_text(text).memory
    assert m.outcome == "oom" and m.figures["weights"] == pytest.approx(14.9888 * GIB)


# --------------------------------------------------------------------------------------------
# llama.cpp and llama-fit-params


def test_llama_cpp_load_lines() -> None:
    (m,) = parsed("llamacpp_load_8b.log").memory
    assert m.outcome == "fit" and m.context == 8192
    assert m.figures["layers_offloaded"] == 33 and m.figures["layers_total"] == 33
    assert m.figures["weights_on_device"] == pytest.approx(4155.99 * MIB)
    assert m.figures["kv_cache"] == 1024 * MIB


def test_llama_cpp_new_kv_cache_line() -> None:
    (m,) = parsed("llamacpp_kv_cache_q8.log").memory
    assert m.figures["kv_cache"] == pytest.approx(1175.12 * MIB)
    assert m.figures["compute_buffers"] == pytest.approx(298.75 * MIB)  # the host one is not


def test_cudamalloc_out_of_memory() -> None:
    (m,) = parsed("ollama_cudamalloc_oom.log").memory
    assert m.outcome == "oom"
    assert m.figures["failed_allocation"] == pytest.approx(42640.01 * MIB)
    assert "device 1" in m.note


def test_timing_lines() -> None:
    p = parsed("llama_print_timings_cpu.log")
    assert [(s.phase, s.tokens, s.tok_s) for s in p.speed] == [
        ("prefill", 271, 43.05),
        ("decode", 510, 4.43),
    ]
    assert not p.memory
    new = (
        "llama_perf_context_print:        eval time =    1012.10 ms /    39 runs   "
        "(   25.95 ms per token,    38.53 tokens per second)"
    )
    assert parse_text(new).speed[0].tok_s == 38.53


def test_fit_params() -> None:
    p = parsed("fit_params_rtx4090.log")
    (m,) = p.memory
    assert p.kind == "llama-fit-params" and m.outcome == "oom"
    assert m.device == "NVIDIA GeForce RTX 4090" and m.context == 4096
    assert m.figures["projected"] == 61807 * MIB
    assert m.figures["free_device_memory"] == 24077 * MIB
    assert m.figures["fitted_used"] == 19187 * MIB
    assert m.figures["layers_offloaded"] == 48 and m.figures["layers_overflowing"] == 34
    assert m.figures["context_requested"] == 40960


# --------------------------------------------------------------------------------------------
# Detection, garbage


@pytest.mark.parametrize(
    "text", ["", "eggs\nmilk | bread | butter\n", "{}", "[1, 2]", "a,b\n1,2\n"]
)
def test_garbage_is_not_recognised(text: str) -> None:
    assert detect(text) is None
    with pytest.raises(NotRecognised):
        parse_text(text)


def test_a_table_amid_other_text() -> None:
    table = (FIX / "llama_bench_rtx3090ti.md").read_text()
    text = "$ ./llama-bench -m x.gguf\nsome chatter | not a table\n" + table + "\nthe end\n"
    p = parse_text(text)
    assert [s.tok_s for s in p.speed] == [4035.47, 127.43, 237.84, 59.99]
    assert p.notes == []


def test_bench_json_with_a_bad_figure_is_noted() -> None:
    objects = json.loads((FIX / "llama_bench_rtx4080.json").read_text())
    objects[0]["avg_ts"] = "fast"
    p = parse_text(json.dumps(objects))
    assert len(p.speed) == 1 and p.notes and "object 1" in p.notes[0]


# --------------------------------------------------------------------------------------------
# The comparison and the command


def test_ratio_for_a_matched_row(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate-serve", str(FIX / "llama_bench_rtx4080.csv"), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    decode = data["files"][0]["speed"][1]
    cmp = decode["comparison"]
    assert cmp["model"] == "qwen2.5-7b" and cmp["hardware"] == "GeForce RTX 4080"
    # The serving model's own estimate for the same run, built here from the catalog figures.
    est = estimate_speed(
        find_llm("qwen2.5-7b"),
        find_quant("Q4_K_M"),
        context=128,
        engine="llama.cpp",
        device=DeviceSpeed(716.8e9, 97.5e12, "gpu", measured=False),
        rules=load_rules(),
    )
    assert cmp["predicted_tok_s"] == pytest.approx(est.per_user_tok_s)
    assert cmp["ratio"] == pytest.approx(119.915244 / est.per_user_tok_s)
    assert 0.5 < cmp["ratio"] < 2.0


def test_a_description_and_parameter_count_without_a_file_name_the_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # llama-bench printed "llama 7B Q4_0, 6.74 B" and no file: Llama 2 7B's shape
    assert main(["calibrate-serve", str(FIX / "llama_bench_rtx3090ti.md")]) == 0
    out = capsys.readouterr().out
    assert "127 ± 0.18 tok/s" in out and "for llama-2-7b Q4_0 on GeForce RTX 3090 Ti" in out


@pytest.mark.parametrize(
    ("description", "params", "expected"),
    [
        ("llama 7B Q4_0", 6.74e9, "llama-2-7b"),
        ("llama 8B Q4_K - Medium", 8.03e9, "llama-3.1-8b"),  # Llama 3 and 3.1: one shape
        ("llama 7B Q4_0", 7.24e9, "mistral-7b-v0.3"),  # old llama.cpp called Mistral "llama"
        ("qwen3moe 30B.A3B Q4_K - Medium", 30.53e9, "qwen3-30b-a3b"),
        ("llama 7B Q4_0", 3.0e9, None),  # no model of that size
        ("llama 7B Q4_0", None, None),  # no count: not told
        (None, 6.74e9, "llama-2-7b"),
    ],
)
def test_the_model_from_a_description_and_count(
    description: str | None, params: float | None, expected: str | None
) -> None:
    from hwadvisor.calibrate_serve import model_from_description
    from hwadvisor.catalog.llms import find_llm

    geom = model_from_description(description or "", params)
    if expected is None or description is None:
        assert geom is None
        return
    assert geom is not None
    want = find_llm(expected)

    def shape(g: Any) -> tuple[int, ...]:
        return (g.layers, g.hidden, g.heads, g.kv_heads, g.head_dim, g.intermediate, g.vocab)

    assert shape(geom) == shape(want)


def test_a_description_that_fits_several_shapes_is_not_guessed() -> None:
    from hwadvisor.calibrate_serve import PARAMS_ROUNDING, PARAMS_TOLERANCE, model_from_description
    from hwadvisor.catalog.llms import all_llms

    def shape(m: Any) -> tuple[int | None, ...]:
        return (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.intermediate, m.experts)

    models = all_llms()
    for g in models:
        count = g.params_total
        rivals = [
            abs(m.params_total - count)
            for m in models
            if abs(m.params_total - count) <= PARAMS_TOLERANCE * count and shape(m) != shape(g)
        ]
        got = model_from_description("unknownarch 1B", count)
        if any(d < 3 * PARAMS_ROUNDING * count for d in rivals):
            assert got is None, g.name  # two shapes as near as rounding: no guess
        else:  # its own count names its shape, whatever else lies within the tolerance
            assert got is not None and shape(got) == shape(g), g.name


@pytest.mark.parametrize(
    ("description", "params", "expected"),
    [("llama 7B Q4_0", 7.24e9, "mistral-7b-v0.3"),  # not OLMo 2's 7.30 B
     ("phi3 3B Q4_K_M", 3.82e9, "phi-3-mini"),  # not Phi-4-mini's 3.84 B
     ("unknownarch 3B", 3.84e9, "phi-4-mini"),
     ("unknownarch 7B", 7.275e9, None)],  # halfway: neither
)  # fmt: skip
def test_a_count_much_nearer_one_shape_names_it(
    description: str, params: float, expected: str | None
) -> None:
    from hwadvisor.calibrate_serve import model_from_description

    got = model_from_description(description, params)
    assert (got.name if got else None) == expected


def test_bad_files_are_skipped_the_rest_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    files = [FIX / "garbage.txt", folder, tmp_path / "missing.log", FIX / "vllm_v1_startup.log"]
    assert main(["calibrate-serve", *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert f"{FIX / 'garbage.txt'}: skipped: not output of llama-bench" in out
    assert f"{folder}: skipped: is a directory" in out
    assert f"{tmp_path / 'missing.log'}: skipped: cannot be read: no such file" in out
    assert "max_concurrency 10.79" in out


def test_exit_5_when_no_file_could_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate-serve", str(FIX / "garbage.txt"), str(tmp_path / "no.log")]) == 5
    err = capsys.readouterr().err
    assert "no file could be read" in err and len(err.strip().splitlines()) == 1


def test_out_writes_calibration_rows_that_read_back_and_never_overwrites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "mine.toml"
    args = [str(FIX / "llama_bench_rtx4080.json"), str(FIX / "vllm_rtx3090_29k_fail.log")]
    assert main(["calibrate-serve", *args, "--out", str(target)]) == 0
    data = parse_toml(target.read_text(), str(target), InputError)
    rows = speed_rows(data)  # the serving model's own reader takes the file as it is
    assert [(r.geom.name, r.quant, r.decode_tok_s, r.prefill_tok_s) for r in rows] == [
        ("qwen2.5-7b", "Q4_K_M", None, 7100.002165),
        ("qwen2.5-7b", "Q4_K_M", 118.881588, None),
    ]
    assert rows[1].device.bandwidth_bytes_s == pytest.approx(716.8e9)
    (mem,) = data["memory"]
    assert mem["outcome"] == "oom" and mem["context"] == 29000 and mem["total_gib"] == 23.58
    before = target.read_bytes()
    capsys.readouterr()
    assert main(["calibrate-serve", *args, "--out", str(target)]) == 4
    assert target.read_bytes() == before
    assert "already exists" in capsys.readouterr().err


def test_timing_lines_compared_on_the_profile_machine() -> None:
    from hwadvisor.calibrate_serve import Hardware, compare

    log = (
        "llama_model_loader: loaded meta data with 30 key-value pairs and 147 tensors from "
        "models/Llama-3.2-1B-Instruct-Q4_K_M.gguf (version GGUF V3 (latest))\n"
        + (FIX / "llama_print_timings_cpu.log").read_text()
    )
    decode = parse_text(log).speed[1]
    assert decode.quant == "Q4_K_M" and decode.tok_s == 4.43
    cpu = Hardware("this machine: a CPU", DeviceSpeed(40e9, 1e12, "cpu"))
    assert compare(decode, []).reason.startswith("no device named: give --profile")
    c = compare(decode, [cpu])
    est = estimate_speed(
        find_llm("llama-3.2-1b"),
        find_quant("Q4_K_M"),
        context=510,
        engine="llama.cpp",
        device=cpu.speed,
        rules=load_rules(),
    )
    assert c.model == "llama-3.2-1b" and c.hardware == "this machine: a CPU"
    assert c.ratio == pytest.approx(4.43 / est.per_user_tok_s)


def test_runs_with_the_kv_cache_in_ram_or_layers_left_on_the_cpu_are_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The estimate keeps every layer and the KV cache on the GPU: a llama-bench row with
    ``nkvo 1`` or fewer GPU layers than the model has is read, and said not to be compared
    (and so never becomes a calibration row), where the others are compared."""
    table = (FIX / "llama_bench_rtx3090ti.md").read_text()
    partial = tmp_path / "ngl.md"
    partial.write_text(
        "  Device 0: NVIDIA GeForce RTX 3090 Ti, compute capability 8.6, VMM: yes\n"
        "| model | size | params | backend | ngl | test | t/s |\n"
        "| --- | ---: | ---: | --- | --: | --- | ---: |\n"
        "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 20 | tg 128 | 41.20 ± 0.50 |\n"
        "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | tg 128 | 127.43 ± 0.18 |\n"
    )
    assert "nkvo" in table
    assert main(["calibrate-serve", str(FIX / "llama_bench_rtx3090ti.md"), str(partial),
                 "--json", "-"]) == 0  # fmt: skip
    files = json.loads(capsys.readouterr().out)["files"]
    nkvo = [s["comparison"] for s in files[0]["speed"]]
    assert [c["ratio"] is not None for c in nkvo] == [True, True, False, False]
    assert all("nkvo 1" in c["reason"] for c in nkvo[2:])
    ngl = [s["comparison"] for s in files[1]["speed"]]
    assert ngl[0]["ratio"] is None and "20 of llama-2-7b's 32 layers" in ngl[0]["reason"]
    assert ngl[1]["ratio"] == pytest.approx(nkvo[1]["ratio"])
    out = tmp_path / "rows.toml"
    assert main(["calibrate-serve", str(FIX / "llama_bench_rtx3090ti.md"), str(partial),
                 "--out", str(out)]) == 0  # fmt: skip
    assert len(parse_toml(out.read_text(), "rows", InputError)["speed"]) == 3


def test_a_json_run_with_the_kv_cache_in_ram_is_read_as_such() -> None:
    data = json.loads((FIX / "llama_bench_rtx4080.json").read_text())
    data[0]["no_kv_offload"] = True
    parsed = parse_text(json.dumps(data))
    assert [r.kv_on_host for r in parsed.speed] == [True, *[False] * (len(parsed.speed) - 1)]


# --------------------------------------------------------------------------------------------
# The device and the model file where a paste names them outside the table


def test_a_vulkan_paste_names_its_device_and_its_command_lines_model_file() -> None:
    got = parsed("llama_bench_vulkan_r9_290_depth.md")
    assert [(r.phase, r.tokens, r.depth) for r in got.speed] == [
        ("prefill", 512, 0), ("decode", 128, 0), ("prefill", 512, 5000), ("decode", 128, 5000)
    ]  # fmt: skip
    assert {r.device for r in got.speed} == {"AMD Radeon R9 200 Series"}
    assert {r.model_file for r in got.speed} == {
        "/download/llama/Ministral-3-3B-Instruct-2512-Q5_K_M.gguf"
    }
    assert {r.quant for r in got.speed} == {"Q5_K_M"}
    assert any("cut short" in note for note in got.notes)


def test_an_unsloth_dynamic_file_is_its_model_and_the_vulkan_card_is_compared(
    capsys: pytest.CaptureFixture[str],
) -> None:
    got = parsed("llama_bench_vulkan_rtx2070_ud.md")
    assert {r.device for r in got.speed} == {"NVIDIA GeForce RTX 2070"}
    assert model_from_file(got.speed[0].model_file) == "Qwen3-4B"
    fixture = str(FIX / "llama_bench_vulkan_rtx2070_ud.md")
    assert main(["calibrate-serve", fixture]) == 0
    out = capsys.readouterr().out
    assert out.count("measured/predicted") == 2 and "qwen3-4b Q4_K_M on GeForce RTX 2070" in out


@pytest.mark.parametrize(
    ("line", "device"),
    [  # as llama.cpp builds have printed Metal's device, old to new
        ("ggml_metal_init: found device: Apple M2 Max", "Apple M2 Max"),
        ("ggml_metal_device_init: GPU name:   Apple M3 Pro", "Apple M3 Pro"),
        ("ggml_metal_device_init: GPU name:   MTL0 (Apple M4 Max)", "Apple M4 Max"),
        (
            "ggml_metal_device_init: GPU name:   MTL0\nggml_metal_init: picking default device: "
            "Apple M4",
            "Apple M4",
        ),
        ("ggml_metal_device_init: GPU name:   MTL0", None),
    ],
)
def test_metal_device_lines(line: str, device: str | None) -> None:
    table = (FIX / "llama_bench_rtx3090ti.md").read_text(encoding="utf-8")
    table = "\n".join(x for x in table.splitlines() if not x.lstrip().startswith("Device"))
    got = parse_text(line + "\n" + table)
    assert {r.device for r in got.speed} == {device}


def test_several_model_files_on_the_command_line_name_none() -> None:
    text = (FIX / "llama_bench_vulkan_rtx2070_ud.md").read_text(encoding="utf-8")
    text = text.replace("-fa 1", "-m other/Llama-3.1-8B-Q4_K_M.gguf -fa 1")
    assert {r.model_file for r in parse_text(text).speed} == {None}
