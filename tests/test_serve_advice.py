"""advise --serve: the inference answer from the scan's own figures, its JSON contract, and the
verdicts practitioners know (a 7-8B model at 4 bits runs on an 8-12 GB card; 70B at 16 bits
needs several 80 GB GPUs)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.advise.serving import (
    PRESETS,
    ServeRequest,
    build_request,
    model_geometry,
    serve_advice,
)
from hwadvisor.cli import main
from hwadvisor.model.load import load_profile

FIXTURES = Path(__file__).parent / "fixtures" / "reports"
PROFILE = FIXTURES / "single-gpu.json"  # an RTX 3080 (10 GB) with measured bandwidth
CPU_ONLY = FIXTURES / "cpu-only.json"
KEYS = (
    "hardware",
    "origin",
    "fits_memory",
    "memory_needed_bytes",
    "decode_tok_s",
    "prefill_tok_s",
    "throughput_tok_s",
)


def _advice(**fields: Any) -> Any:
    return serve_advice(load_profile(PROFILE), ServeRequest(**fields))


def test_the_json_has_the_documented_keys_and_answers_fast(capsys: Any) -> None:
    argv = [
        "advise", "-p", str(PROFILE), "--serve", "meta-llama/Meta-Llama-3-8B", "--quant",
        "Q4_K_M", "--context", "8192", "--assume-gpu", "RTX 3070", "--json", "-",
    ]  # fmt: skip
    t = time.perf_counter()
    assert main(argv) == 0
    elapsed = time.perf_counter() - t
    doc = json.loads(capsys.readouterr().out)
    estimates = doc["inference"]["estimates"]
    assert estimates and all(all(k in e for k in KEYS) for e in estimates)
    assumed = [e for e in estimates if e["origin"] == "assumed"]
    assert len(assumed) == 1 and "3070" in assumed[0]["hardware"]
    assert assumed[0]["fits_memory"] and assumed[0]["decode_tok_s"] > 10
    assert elapsed < 5  # the benchmark holds it to 0.3 s; a loaded test machine gets slack


@pytest.mark.parametrize(
    ("context", "tokens"), [("128k", 131072), ("32K", 32768), ("8192", 8192), ("1.5k", 1536)]
)
def test_a_context_is_given_as_people_write_it(context: str, tokens: int, capsys: Any) -> None:
    argv = ["advise", "-p", str(PROFILE), "--serve", "llama-3.1-8b", "--context", context]
    assert main([*argv, "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["inference"]["context"] == tokens


@pytest.mark.parametrize("context", ["abc", "0", "2.5", "-8k", "8kk"])
def test_a_context_that_is_not_a_count_of_tokens_is_a_usage_error(
    context: str, capsys: Any
) -> None:
    argv = ["advise", "-p", str(PROFILE), "--serve", "llama-3.1-8b", "--context", context]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--context" in err and "Traceback" not in err


def test_a_count_typed_with_the_assumed_gpu_sizes_that_many(capsys: Any) -> None:
    """ "8x H200" is eight H200s, as --assume-gpu H200 --gpus 8 is; the training advice reads
    it too."""
    base = ["advise", "-p", str(PROFILE), "--serve", "llama-3.1-70b", "--engine", "vllm"]
    answers = []
    for extra in (["--assume-gpu", "8x H200"], ["--assume-gpu", "H200", "--gpus", "8"]):
        assert main([*base, *extra, "--json", "-"]) == 0
        doc = json.loads(capsys.readouterr().out)
        answers.append([e for e in doc["inference"]["estimates"] if e["origin"] == "assumed"])
    assert answers[0] == answers[1] and answers[0][0]["gpus"] == 8
    train = ["advise", "-p", str(PROFILE), "--workload", "llama3-8b-qlora"]
    assert main([*train, "--assume-gpu", "2x RTX 3090", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assumed = [e for e in doc["estimates"] if e["origin"] == "assumed"]
    assert assumed and "2× GeForce RTX 3090" in assumed[0]["hardware"]


def test_this_machine_uses_its_measured_bandwidth() -> None:
    a = _advice(model="llama-3.1-8b", quant="Q4_K_M")
    here = a.this_machine
    assert here is not None and here.measured and here.gpus == 1 and here.fits_memory
    # Decode is memory-bound: never faster than the bandwidth over the weights read per token.
    profile = load_profile(PROFILE)
    triad = max(
        m.best
        for m in profile.benchmarks.measurements  # type: ignore[union-attr]
        if m.case in ("triad", "device_copy") and m.device != "cpu" and m.best
    )
    assert here.decode_tok_s is not None
    assert here.decode_tok_s < triad * 1e9 / here.memory.weights_bytes


@pytest.mark.parametrize("quant", ["Q4_K_M", "Q8_0", "F16"])
def test_more_bits_need_more_memory_and_decode_slower(quant: str) -> None:
    small = _advice(model="llama-3.1-8b", quant="Q4_K_M").this_machine
    other = _advice(model="llama-3.1-8b", quant=quant).this_machine
    assert small is not None and other is not None
    assert other.memory_needed_bytes >= small.memory_needed_bytes
    if other.fits_memory and other.decode_tok_s and small.decode_tok_s:
        assert other.decode_tok_s <= small.decode_tok_s * 1.001


def test_seventy_billion_at_16_bits_needs_several_big_gpus_or_one_huge() -> None:
    a = _advice(model="llama-3.1-70b", quant="bf16", engine="vllm", users=8)
    assert a.this_machine is not None and not a.this_machine.fits_memory
    r = a.recommendation
    assert r is not None and r.fits_memory and r.meets_target
    assert r.memory.weights_bytes > 130e9  # 70.6 B parameters at 2 bytes
    # One GPU only if it holds it all (an MI300X's 192 GB); else several.
    assert r.gpus >= 2 or r.memory_available_bytes > 140e9
    assert a.scenario_class == r.scenario_class >= 2


def test_what_does_not_fit_says_what_to_change() -> None:
    a = _advice(model="llama-3.1-70b", quant="Q4_K_M")
    here = a.this_machine
    assert here is not None and not here.fits_memory
    assert any("offload" in s or "quantization" in s for s in here.suggestions)


def test_a_small_model_at_four_bits_needs_one_gpu_at_most() -> None:
    a = _advice(model="llama-3.1-8b", quant="Q4_K_M")
    assert a.scenario_class in (1, 2)
    r = a.recommendation
    assert r is not None and r.meets_target and r.memory_needed_bytes < 12 * 2**30


def test_more_users_never_need_less_hardware() -> None:
    classes = [
        _advice(model="llama-3.1-8b", quant="fp8", engine="vllm", users=u).scenario_class or 5
        for u in (1, 8, 64, 512)
    ]
    assert classes == sorted(classes)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_answers(preset: str, capsys: Any) -> None:
    assert main(["advise", "-p", str(PROFILE), "--serve", preset]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Serving ") and ("Scenario" in out or "No option" in out)


def test_the_terminal_answer_fits_80_columns(capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["advise", "-p", str(CPU_ONLY), "--serve", "qwen3-30b-a3b-local"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Serving qwen3-30b-a3b")
    assert any(line.startswith("Recommended: ") for line in lines[:4])


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--serve", "no-such-model-xyz"], "no-such-model-xyz"),
        (["--serve", "llama-3.1-8b", "--context", "0"], "--context"),
        (["--serve", "llama-3.1-8b", "--engine", "vlm"], "--engine"),
        (["--serve", "llama-3.1-8b", "--quant", "Q3_Z"], "Q3_Z"),
        (["--serve", "llama-3.1-8b", "--target-tok-s", "nan"], "--target-tok-s"),
        (["--quant", "Q4_K_M", "-w", "small-cnn"], "--serve"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], said: str, capsys: Any) -> None:
    assert main(["advise", "-p", str(PROFILE), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and "Traceback" not in err


def test_a_profile_without_measurements_says_this_machine_is_not_sized(capsys: Any) -> None:
    unmeasured = Path(__file__).parent / "fixtures" / "profiles" / "v1-cpu-only.json"
    assert main(["advise", "-p", str(unmeasured), "--serve", "llama3-8b-chat"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "This machine: not sized" in out and "hwadvisor scan" in out


def test_a_machine_that_serves_it_is_told_so_before_any_purchase(capsys: Any) -> None:
    assert main(["advise", "-p", str(PROFILE), "--serve", "llama3-8b-chat"]) == 0
    lines = " ".join(capsys.readouterr().out.split())
    here = lines.index("serves it, nothing to buy")
    assert "Recommended:" not in lines
    assert here < lines.index("Cheapest other option that serves it:")


def test_the_json_never_replaces_a_file_and_a_full_disk_is_exit_4(
    tmp_path: Path, capsys: Any
) -> None:
    kept = tmp_path / "answer.json"
    kept.write_text("mine")
    argv = ["advise", "-p", str(PROFILE), "--serve", "llama3-8b-chat", "--json"]
    assert main([*argv, str(kept)]) == 4
    assert kept.read_text() == "mine"
    assert "never overwrites" in capsys.readouterr().err
    if Path("/dev/full").exists():
        import subprocess
        import sys

        done = subprocess.run(
            [sys.executable, "-m", "hwadvisor", *argv, "-"],
            stdout=open("/dev/full", "w"),  # noqa: SIM115 - the process owns it
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
        assert done.returncode == 4, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_figures_taken_on_a_busy_machine_never_size_it() -> None:
    """A scan with another load beside it measures that load's leftovers: such figures are
    not the machine's speed (low-confidence ones, from blocks that disagreed, still are)."""
    from hwadvisor.model.bench import Disturbance

    quiet = load_profile(CPU_ONLY)
    sized = serve_advice(quiet, ServeRequest(model="llama-3.2-1b")).this_machine
    assert sized is not None and sized.measured and sized.decode_tok_s
    busy = load_profile(CPU_ONLY)
    assert busy.benchmarks is not None
    for m in busy.benchmarks.measurements:
        m.disturbances = [Disturbance.CPU_CONTENDED]
    assert serve_advice(busy, ServeRequest(model="llama-3.2-1b")).this_machine is None


H200 = Path(__file__).parent / "fixtures" / "validation" / "h200-2026-11-27.json"


def _h200(copy_scale: float = 1.0, drop_copy: bool = False) -> Any:
    profile = load_profile(H200)
    assert profile.benchmarks is not None
    kept = []
    for m in profile.benchmarks.measurements:
        if m.case == "device_copy":
            if drop_copy:
                continue
            m.best = (m.best or 0) * copy_scale
        kept.append(m)
    profile.benchmarks.measurements = kept
    return serve_advice(profile, ServeRequest(model="llama-3.1-8b", engine="vllm", quant="bf16"))


def test_a_real_gpu_scan_is_sized_from_its_measured_copy() -> None:
    """The first real GPU run (an H200) had measured its device copy, yet the answer said the
    speed came from catalog peaks: the GPU's measured bandwidth is its device copy."""
    advice = _h200()
    here = advice.this_machine
    assert here is not None and here.measured and here.gpus == 1
    assert "measured copy 4,269 GB/s" in here.basis
    assert not any("from catalog peaks" in c for c in advice.caveats)
    # a healthy copy (0.89 of the 4.8 TB/s peak) sizes it at its peak, never above
    assert here.decode_tok_s is not None
    assert here.decode_tok_s < 4.8e12 / here.memory.weights_bytes


@pytest.mark.parametrize("scale", [0.25, 0.5, 0.75])
def test_a_gpu_that_copies_slower_than_healthy_ones_decodes_slower(scale: float) -> None:
    healthy, slow = _h200().this_machine, _h200(scale).this_machine
    assert healthy is not None and slow is not None
    assert healthy.decode_tok_s is not None and slow.decode_tok_s is not None
    assert slow.decode_tok_s < healthy.decode_tok_s
    # memory-bound at one user: the step's bytes go at the bandwidth, plus a fixed overhead
    assert slow.decode_tok_s > healthy.decode_tok_s * scale * 0.9


def test_a_gpu_scan_without_a_copy_figure_falls_back_to_the_catalog_and_says_so() -> None:
    advice = _h200(drop_copy=True)
    here = advice.this_machine
    assert here is not None and not here.measured
    assert any("from catalog peaks" in c for c in advice.caveats)


def test_a_gpu_split_into_mig_slices_serves_from_one_slice() -> None:
    """An A100 40GB in two 20 GB MIG slices: a process sees one slice, so a model that needs
    about 25 GB (16 GB of weights, 8 GB of KV cache) does not fit though the card has 40 GB."""
    from hwadvisor.importers.detect import import_file

    mig = Path(__file__).parent / "fixtures" / "nvidia-smi" / "netdata-a100-sxm4-40gb-mig.xml"
    profile = import_file(mig)
    whole = import_file(mig)
    for g in whole.gpus:
        g.mig_instances = []
    request = ServeRequest(model="llama-3.1-8b", quant="bf16", engine="vllm", context=65536)
    sliced = serve_advice(profile, request).this_machine
    full = serve_advice(whole, request).this_machine
    assert sliced is not None and full is not None
    assert "MIG slice" in sliced.hardware and "MIG" not in full.hardware
    assert sliced.memory_available_bytes < 21e9 < full.memory_available_bytes
    assert full.fits_memory and not sliced.fits_memory
    assert sliced.gpus == 1


@pytest.mark.parametrize("after", ["--help", "-h", "--quant"])
def test_serve_without_a_model_is_a_usage_error_naming_it(
    after: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["advise", "-p", str(PROFILE), "--serve", after]) == 2
    err = capsys.readouterr().err
    assert "--serve needs a model" in err and len(err.strip().splitlines()) == 1


def test_an_unknown_model_is_said_before_any_machine_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no reports/ here: the machine would be detected
    assert main(["advise", "--serve", "nosuchmodel-3b"]) == 2
    err = capsys.readouterr().err
    assert "not in the model catalog" in err and "detecting this machine" not in err


def test_an_assumed_gpu_without_a_saved_profile_is_answered_without_detecting_this_machine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hwadvisor.pipeline

    def no_scan(*_: object, **__: object) -> None:
        raise AssertionError("this machine was detected")

    monkeypatch.setattr(hwadvisor.pipeline, "run_scan", no_scan)
    monkeypatch.chdir(tmp_path)  # no reports/ here
    args = ["advise", "--serve", "meta-llama/Meta-Llama-3-8B", "--quant", "Q4_K_M"]
    assert main([*args, "--assume-gpu", "RTX 3070", "--json", "-"]) == 0
    out, err = capsys.readouterr()
    inference = json.loads(out)["inference"]
    assert inference["this_machine"] is None
    assert "no saved profile" in inference["this_machine_note"]
    assert [e["hardware"] for e in inference["estimates"] if e["origin"] == "assumed"] == [
        "GeForce RTX 3070"
    ]
    assert "leaves this machine out" in err and not (tmp_path / "reports").exists()
    # The terminal says the same as the JSON.
    assert main([*args, "--assume-gpu", "RTX 3070"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "This machine: not sized: no saved profile was read" in shown
    # Without --assume-gpu the question is this machine: it is detected.
    assert main(args) == 1  # an internal error: the detection was reached
    assert "this machine was detected" in capsys.readouterr().err


def test_an_assumed_gpu_is_put_beside_the_newest_saved_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scanned = Path(__file__).parent / "fixtures" / "validation" / "h200-2026-11-27.json"
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "box.json").write_bytes(scanned.read_bytes())
    monkeypatch.chdir(tmp_path)
    args = ["advise", "--serve", "llama3-8b-chat", "--assume-gpu", "RTX 3070", "--json", "-"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    inference = json.loads(out)["inference"]
    assert inference["this_machine"]["origin"] == "this machine"
    assert inference["this_machine_note"] is None and "box.json" in err


@pytest.mark.parametrize(
    ("typed", "model", "quant", "engine"),
    [
        ("qwen2.5:7b-instruct-q4_K_M", "qwen2.5-7b", "Q4_K_M", "llama.cpp"),
        ("llama3.1:8b-instruct-fp16", "llama-3.1-8b", "F16", "llama.cpp"),
        ("llama3.1:8b-instruct-q8_0", "llama-3.1-8b", "Q8_0", "llama.cpp"),
        ("mistral:7b-instruct-v0.3-q5_K_M", "mistral-7b-v0.3", "Q5_K_M", "llama.cpp"),
        ("hf.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M", "llama-3.1-8b", "Q4_K_M",
         "llama.cpp"),
        ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "llama-3.1-8b", "Q4_K_M", "llama.cpp"),
        ("Qwen/Qwen2.5-7B-Instruct-AWQ", "qwen2.5-7b", "AWQ", "vllm"),
        ("llama3:latest", "llama-3-8b", "Q4_K_M", "llama.cpp"),
        ("gpt-oss:latest", "gpt-oss-20b", "MXFP4", "llama.cpp"),
        ("gpt-oss:120b", "gpt-oss-120b", "MXFP4", "llama.cpp"),
        ("qwen3:30b-a3b-q4_K_M", "qwen3-30b-a3b", "Q4_K_M", "llama.cpp"),
    ],
)  # fmt: skip
def test_names_as_people_type_them_give_the_model_its_format_and_an_engine_that_runs_it(
    typed: str, model: str, quant: str, engine: str
) -> None:
    from hwadvisor.advise.serving import build_request, check_request

    request = build_request(typed)
    geom, q = check_request(request)
    assert (geom.name, q.name, request.engine) == (model, quant, engine)


def test_a_model_released_quantized_is_served_in_its_own_format_where_the_engine_runs_it() -> None:
    from hwadvisor.advise.serving import build_request, check_request

    assert check_request(build_request("deepseek-r1", engine="vllm"))[1].name == "fp8"
    # llama.cpp does not run fp8 checkpoints: its own default
    assert check_request(build_request("deepseek-r1"))[1].name == "Q4_K_M"
    # a quantization given wins over the name and the model's own format
    assert check_request(build_request("gpt-oss-20b", quant="Q8_0"))[1].name == "Q8_0"
    assert check_request(build_request("qwen2.5:7b-q8_0", quant="Q4_0"))[1].name == "Q4_0"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--serve", "llama-3.1-8b", "--quant", "AWQ", "--engine", "llama.cpp"], "--quant"),
        (["--serve", "llama-3.1-8b", "--quant", "Q4_K_M", "--engine", "vllm"], "--quant"),
        (["--serve", "Qwen/Qwen2.5-7B-Instruct-AWQ", "--engine", "ollama"], "the model's name"),
    ],
)
def test_a_format_the_engine_does_not_run_is_one_line_naming_both(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["advise", "-p", str(PROFILE), *args]) == 2
    err = capsys.readouterr().err
    assert f"({said}) is not a format" in err and len(err.strip().splitlines()) == 1


def test_an_assumed_apple_chip_is_sized_as_unified_memory_of_the_size_its_name_gives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["advise", "-p", str(PROFILE), "--serve", "llama-3.1-70b", "--quant", "Q4_K_M"]
    assert main([*args, "--assume-gpu", "Apple M2 Ultra 192GB", "--json", "-"]) == 0
    inference = json.loads(capsys.readouterr().out)["inference"]
    (mac,) = [e for e in inference["estimates"] if e["origin"] == "assumed"]
    assert mac["hardware"] == "Apple M2 Ultra (192 GiB unified memory)" and mac["fits_memory"]
    # Metal wires at most 3/4 of 192 GiB; the speed uses the unified-memory rule
    assert mac["memory"]["usable_bytes"] == pytest.approx(0.75 * 192 * 2**30, rel=0.01)
    assert "efficiency llama.cpp/gguf-k" in mac["basis"] and 5 < mac["decode_tok_s"] < 30
    # too small a Mac: does not fit, and says so
    assert main([*args, "--assume-gpu", "Apple M4 Pro 24GB", "--json", "-"]) == 0
    inference = json.loads(capsys.readouterr().out)["inference"]
    (small,) = [e for e in inference["estimates"] if e["origin"] == "assumed"]
    assert not small["fits_memory"]


@pytest.mark.parametrize(
    ("assumed", "said"),
    [
        (["--assume-gpu", "Apple M2 Ultra 192GB", "--gpus", "2"], "not Macs"),
        (["--assume-gpu", "M1 Max 48-core"], "at most 32 GPU cores"),
        (["--assume-gpu", "RTX 4090 Ti"], "unknown GPU"),
    ],
)
def test_an_assumed_gpu_that_cannot_be_sized_is_said_never_dropped(
    assumed: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["advise", "-p", str(PROFILE), "--serve", "llama3-8b-chat", *assumed]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("preset", ["llama3-8b-chat", "llama3-70b-serve", "qwen3-30b-a3b-local"])
def test_the_answer_names_the_cheapest_rental_of_any_class_beside_the_cheapest_purchase(
    preset: str,
) -> None:
    from hwadvisor.advise.serving import build_request
    from hwadvisor.present.serve import serve_context, verdict_lines

    answer = serve_advice(load_profile(PROFILE), build_request(preset))
    rec, rent = answer.recommendation, answer.cheapest_to_rent
    assert rec is not None and rent is not None and rent.hourly_cost is not None
    rentable = [
        e.hourly_cost
        for e in answer.estimates
        if e.meets_target
        and e.origin != "this machine"
        and e.hourly_cost is not None
        and not e.rented_stand_in
    ]
    # renting is by the hour: the cheapest instance that serves the target, whatever its class
    assert rent.hourly_cost == min(rentable)
    assert not rent.rented_stand_in and rent.meets_target
    # the terminal and the report say it in the same words, with its class where it differs
    lines = verdict_lines(answer)
    said = [line for line in lines if line.startswith("Cheapest to rent:")]
    if rent is rec:
        assert said == []
    else:
        assert len(said) == 1 and rent.hardware in said[0]
        assert said[0] in serve_context(answer)["verdict"]
        assert ("(one multi-GPU machine)" in said[0]) == (
            rent.scenario_class == 3 != answer.scenario_class
        )


def test_a_gpu_had_only_eight_at_a_time_is_a_multi_gpu_machine_not_one_gpu() -> None:
    """A 70B fp8 service for 32 users: one MI300X holds it, but an MI300X is sold only on its
    8-GPU baseboard and rented only as an 8-GPU instance ($48/h). The answer was "Scenario 2:
    one GPU" with one MI300X "to buy with a computer to hold it" at $15,623: it is one
    multi-GPU machine, and the cheapest such purchase and rental are named."""
    from hwadvisor.advise.serving import build_request

    answer = serve_advice(None, build_request("llama3-70b-serve"))
    mi300x = next(e for e in answer.estimates if e.hardware == "AMD Instinct MI300X")
    assert mi300x.meets_target and mi300x.gpus == 1 and mi300x.rented_gpus == 8
    assert mi300x.scenario_class == 3 and mi300x.purchase_cost is None  # no host for 8 priced
    assert answer.scenario_class == 3
    rec, rent = answer.recommendation, answer.cheapest_to_rent
    assert rec is not None and rent is not None and rec.hardware != mi300x.hardware
    assert rent.hourly_cost is not None and mi300x.hourly_cost is not None
    assert rent.hourly_cost < mi300x.hourly_cost / 4
    meeting = [e for e in answer.estimates if e.meets_target and e.origin == "catalog"]
    assert all(e.scenario_class >= 3 for e in meeting)


def test_a_stderr_that_cannot_be_written_loses_the_note_not_the_answer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    class Broken(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(5, "Input/output error")

    monkeypatch.chdir(tmp_path)  # no reports/: the note would be said on stderr
    monkeypatch.setattr(sys, "stderr", Broken())
    args = ["advise", "--serve", "llama3-8b-chat", "--assume-gpu", "RTX 3070", "--json", "-"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["inference"]["this_machine"] is None


# --- which engines run on which hardware ---------------------------------------------------


@pytest.mark.parametrize("engine", ["llama.cpp", "ollama", "vllm", "mlx",
                                    "tensorrt-llm", "transformers"])  # fmt: skip
def test_no_option_is_sized_on_hardware_its_engine_does_not_run_on(engine: str) -> None:
    """MLX is Apple's, TensorRT-LLM NVIDIA's; vLLM and SGLang run on NVIDIA, AMD and Intel
    GPUs: an option of another maker is neither sized nor rented as a stand-in."""
    from hwadvisor.advise.serving import ENGINE_HARDWARE, build_request
    from hwadvisor.catalog.peaks import find_gpu_peak

    quant = {"mlx": "4bit", "tensorrt-llm": "fp8"}.get(engine)
    request = build_request("llama-3.1-8b", engine=engine, **({"quant": quant} if quant else {}))
    answer = serve_advice(load_profile(PROFILE), request)
    makers = ENGINE_HARDWARE.get(engine)
    catalog = [e for e in answer.estimates if e.origin == "catalog"]
    assert catalog
    if engine == "mlx":
        assert answer.this_machine is None  # an RTX 3080 machine
        assert answer.this_machine_note and "Apple silicon only" in answer.this_machine_note
        assert all(e.bought_whole and e.hardware.startswith("Mac") for e in catalog)
    for e in catalog:
        if e.bought_whole:  # a Mac, or the computer without a GPU, from the price catalog
            maker = "apple" if e.gpus else "cpu"
        else:
            peak = find_gpu_peak(e.hardware.split("× ")[-1].split(" machines of ")[-1])
            assert peak is not None, e.hardware
            maker = (peak.vendor or "").lower()
        assert makers is None or maker in makers, (engine, e.hardware)


def test_an_assumed_gpu_the_engine_does_not_run_on_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["advise", "--serve", "llama-3.1-8b", "--engine", "mlx",
                 "--assume-gpu", "RTX 4090"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == (
        "hwadvisor: error: --assume-gpu 'RTX 4090': mlx runs on Apple silicon only "
        "(--engine llama.cpp runs on every GPU)"
    )


def test_a_mac_is_never_rented_as_a_cloud_gpu() -> None:
    """No cloud GPU holds a Mac's unified memory (an RTX 3090 had stood in for a 96 GB Mac
    serving a 70B), and MLX runs on none."""
    from hwadvisor.advise.serving import build_request

    for engine, quant in (("mlx", "4bit"), ("llama.cpp", None)):
        answer = serve_advice(None, build_request("llama-3.1-70b", engine=engine, quant=quant,
                                                  assume_gpu=("Apple M4 Max 64GB",)))  # fmt: skip
        macs = [
            e for e in answer.estimates if "unified" in e.hardware or (e.bought_whole and e.gpus)
        ]
        assert len(macs) == 4  # the assumed chip and the three Macs of the price catalog
        assert all(e.hourly_cost is None and not e.rented_stand_in for e in macs)
    # a GPU no cloud rents is still stood in for (llama.cpp: the Intel Arc B580 by an RTX)
    chat = serve_advice(None, build_request("llama3-8b-chat"))
    b580 = next(e for e in chat.estimates if e.hardware == "Intel Arc B580")
    assert b580.rented_stand_in and b580.hourly_cost is not None


def test_with_no_option_the_terminal_prints_no_empty_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A price file in another currency stands alone: with no Mac in it, MLX has no option."""
    prices = tmp_path / "eur.toml"
    prices.write_text(
        'currency = "EUR"\n[[card]]\ngpu = "GeForce RTX 4090"\nprice = 1900.0\n'
        'source = "a shop"\ndate = "2026-10"\n',
        encoding="utf-8",
    )
    code = main(["advise", "-p", str(PROFILE), "--serve", "llama-3.1-8b", "--engine", "mlx",
                 "--prices", str(prices)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "No option in the price catalog runs mlx: see the note below." in out
    assert "option" not in out.split("see the note below.")[1].split("Note:")[0]
    assert "the price catalog holds none to compare" in " ".join(out.split())


def test_macs_from_the_price_catalog_are_options_bought_whole() -> None:
    """A 70B at Q4_K_M on llama.cpp: a 96 GB Mac Studio holds it and is priced as itself,
    without 'a computer to hold it'; an 8B fits the 16 GB Mac mini."""
    from hwadvisor.advise.serving import build_request
    from hwadvisor.present.serve import verdict_lines

    answer = serve_advice(None, build_request("llama-3.1-70b"))
    macs = {e.hardware: e for e in answer.estimates if e.bought_whole and e.gpus}
    studio = macs["Mac Studio (M3 Ultra, 96 GB)"]
    assert studio.fits_memory and studio.purchase_cost == 3999.0
    assert not macs["Mac mini (M4, 16 GB)"].fits_memory
    assert not macs["Mac Studio (M4 Max, 36 GB)"].fits_memory
    for line in verdict_lines(answer):
        if "Mac Studio" in line and "to buy" in line:
            assert "with a computer to hold it" not in line.split("to buy")[1][:30]
    small = serve_advice(None, build_request("llama3-8b-chat"))
    mini = next(e for e in small.estimates if e.hardware == "Mac mini (M4, 16 GB)")
    assert mini.fits_memory and mini.meets_target and mini.purchase_cost == 599.0
    # vLLM does not run on Apple silicon: no Mac is an option
    vllm = serve_advice(None, build_request("llama3-70b-serve"))
    assert not any(e.bought_whole and e.gpus for e in vllm.estimates)


def test_advise_serve_uses_the_users_electricity_price(capsys: pytest.CaptureFixture[str]) -> None:
    """--kwh-price (and --prices) reach the serving answer, as they reach the training one."""
    owned = {}
    for kwh in ("0.1", "0.4"):
        code = main(["advise", "-p", str(PROFILE), "--serve", "llama3-8b-chat",
                     "--kwh-price", kwh, "--json", "-"])  # fmt: skip
        assert code == 0
        doc = json.loads(capsys.readouterr().out)["inference"]
        card = next(e for e in doc["estimates"] if e["hardware"] == "GeForce RTX 3090")
        owned[kwh] = card["cost_per_million_tokens_owned"]
        assert doc["kwh_price"] == float(kwh)
    assert owned["0.4"] == pytest.approx(4 * owned["0.1"])


def test_tensorrt_llm_fp8_is_never_sized_or_rented_on_a_gpu_before_ada(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """TensorRT-LLM runs FP8 from compute capability 8.9 (Ada, Hopper, Blackwell); vLLM runs an
    FP8 checkpoint on Ampere too (weight-only)."""
    from hwadvisor.advise.serving import build_request
    from hwadvisor.catalog.peaks import find_gpu_peak

    answer = serve_advice(
        load_profile(PROFILE), build_request("llama-3.1-8b", engine="tensorrt-llm", quant="fp8")
    )
    assert answer.this_machine is None  # an RTX 3080 (8.6)
    assert answer.this_machine_note and "compute capability 8.9" in answer.this_machine_note
    catalog = [e for e in answer.estimates if e.origin == "catalog"]
    assert catalog
    for e in catalog:
        peak = find_gpu_peak(e.hardware.split("× ")[-1].split(" machines of ")[-1])
        assert peak is not None and peak.target is not None
        assert float(peak.target) >= 8.9, e.hardware
        if e.rented_stand_in and e.rent_as:
            stand_in = find_gpu_peak(e.rent_as.split("1x ")[-1].split(" (")[0])
            assert stand_in is None or float(stand_in.target or 9) >= 8.9, e.rent_as
    code = main(["advise", "--serve", "llama-3.1-8b", "--engine", "tensorrt-llm",
                 "--quant", "fp8", "--assume-gpu", "RTX 3090"])  # fmt: skip
    assert code == 2
    assert "compute capability 8.9" in capsys.readouterr().err
    vllm = serve_advice(None, build_request("llama-3.1-8b", engine="vllm", quant="fp8",
                                            assume_gpu=("RTX 3090",)))  # fmt: skip
    assert any(e.origin == "assumed" and e.decode_tok_s for e in vllm.estimates)


def test_the_default_context_is_the_models_window_where_that_is_shorter() -> None:
    llama2 = _advice(model="llama-2-7b", quant="Q4_0")
    assert llama2.context == 4096  # Llama 2 was trained on 4,096 tokens
    assert not any("window" in c for c in llama2.caveats)
    assert _advice(model="llama-3.1-8b", quant="Q4_K_M").context == 8192
    asked = _advice(model="llama-2-7b", quant="Q4_0", context=16384)
    assert asked.context == 16384  # what the user asked for is sized, and the caveat says why
    assert any("4,096-token window" in c for c in asked.caveats)
    assert asked.this_machine is not None and llama2.this_machine is not None
    assert asked.this_machine.memory.kv_bytes == 4 * llama2.this_machine.memory.kv_bytes


def test_decode_is_at_a_replys_middle_and_the_full_context_figure_is_beside_it() -> None:
    a = _advice(
        model="llama-2-7b", quant="Q4_0", context=4096, prompt_tokens=1000, reply_tokens=200
    )
    assert a.decode_depth_tokens == 1100  # the prompt and half the reply
    for e in a.estimates:
        if not e.fits_memory or e.decode_tok_s is None:
            continue
        assert e.decode_full_context_tok_s is not None
        assert e.decode_full_context_tok_s < e.decode_tok_s
    # a prompt past the context: decode is at the context, and no second figure
    b = _advice(model="llama-2-7b", quant="Q4_0", context=512, prompt_tokens=1000)
    assert b.decode_depth_tokens == 512
    assert all(e.decode_full_context_tok_s is None for e in b.estimates)


@pytest.mark.parametrize("users", [1, 8])
@pytest.mark.parametrize("context", [2048, 32768, 131072])
def test_users_at_target_never_exceed_the_contexts_the_memory_holds(
    users: int, context: int
) -> None:
    a = _advice(model="llama-3.1-8b", quant="Q4_K_M", context=context, users=users, target_tok_s=1)
    for e in a.estimates:
        if e.users_at_target is None:
            continue
        m = e.memory
        kv_one = m.kv_bytes / users
        held = m.weights_bytes + m.buffers_bytes + m.runtime_bytes + e.users_at_target * kv_one
        assert held <= m.usable_bytes * (1 + 1e-9), e.hardware
        if e.meets_target:
            assert e.users_at_target >= users


def test_an_assumed_gpu_gets_its_own_verdict_line() -> None:
    from hwadvisor.present.serve import verdict_lines

    a = serve_advice(
        None, ServeRequest(model="llama-3.1-8b", quant="Q4_K_M", assume_gpu=("RTX 3070",))
    )
    lines = verdict_lines(a)
    own = [line for line in lines if line.startswith("GeForce RTX 3070 ")]
    assert len(own) == 1 and "serves it: fits" in own[0] and "decode" in own[0]
    big = serve_advice(
        None, ServeRequest(model="llama-3.1-70b", quant="F16", assume_gpu=("RTX 3070",))
    )
    own = [line for line in verdict_lines(big) if line.startswith("GeForce RTX 3070 ")]
    assert len(own) == 1 and "is not enough: does not fit" in own[0]


@pytest.mark.parametrize(
    ("typed", "hardware", "least"),
    [
        ("M2 Ultra", "Apple M2 Ultra", 64),
        ("Mac Studio M2 Ultra", "Apple M2 Ultra", 64),
        ("MacBook Pro M3 Max 30-core GPU", "Apple M3 Max (30-core GPU", 36),
        ("M1 Pro 14 GPU cores", "Apple M1 Pro (14-core GPU", 16),
        ("V100", "V100 SXM2", 16),
    ],
)
def test_hardware_named_as_people_type_it_is_sized_with_the_least_memory_it_was_sold_with(
    typed: str, hardware: str, least: float
) -> None:
    a = serve_advice(None, ServeRequest(model="llama-3.1-8b", quant="Q4_K_M", assume_gpu=(typed,)))
    (e,) = [e for e in a.estimates if e.origin == "assumed"]
    assert e.hardware.startswith(hardware)
    # the memory assumed is the least the product was sold with, and the answer says so
    assert any(f"{least:g} GB assumed, the least it was sold with" in c for c in a.caveats)
    named = serve_advice(
        None,
        ServeRequest(
            model="llama-3.1-8b", quant="Q4_K_M", assume_gpu=(f"{typed} {4 * least:g}GB",)
        ),
    )
    (bigger,) = [e for e in named.estimates if e.origin == "assumed"]
    assert bigger.memory_available_bytes > e.memory_available_bytes
    assert not any("the least it was sold with" in c for c in named.caveats)


@pytest.mark.parametrize(
    ("typed", "apu"),
    [("Strix Halo 128GB", True), ("Ryzen AI Max+ 395", True), ("DGX Spark", False)],
)
def test_a_gpu_that_shares_the_computers_ram_is_sized_as_unified_memory(
    typed: str, apu: bool
) -> None:
    a = serve_advice(None, ServeRequest(model="gpt-oss-120b", assume_gpu=(typed,)))
    (e,) = [e for e in a.estimates if e.origin == "assumed"]
    assert "unified memory" in e.hardware
    note = e.memory.usable_note or ""
    # the OS keeps a share of the RAM; an AMD APU's carve-out and GTT are said
    assert "unified memory less an OS reserve" in note
    assert ("AMD APU" in note) == apu
    # the size named, the catalog's (GB10: 128 GB) or the least a Ryzen AI Max+ 395 was sold
    # with (32), each binary, as RAM and GPU memory are sold
    total = 128 * 2**30 if "128" in typed or not apu else 32 * 2**30
    assert e.memory.usable_bytes < total


def test_sglang_is_an_engine_and_sized_as_the_batching_servers_are() -> None:
    a = serve_advice(
        None,
        ServeRequest(model="llama-3.1-8b", quant="bf16", engine="sglang", assume_gpu=("H100",)),
    )
    b = serve_advice(
        None,
        ServeRequest(model="llama-3.1-8b", quant="bf16", engine="vllm", assume_gpu=("H100",)),
    )
    (sg,) = [e for e in a.estimates if e.origin == "assumed"]
    (vl,) = [e for e in b.estimates if e.origin == "assumed"]
    # one family of rules, one memory plan (its KV pool from --gpu-memory-utilization)
    assert sg.decode_tok_s == pytest.approx(vl.decode_tok_s)
    assert sg.memory.usable_bytes == pytest.approx(vl.memory.usable_bytes)
    assert "gpu-memory-utilization" in (sg.memory.usable_note or "")


def test_a_gguf_file_name_with_no_such_file_here_is_read_as_a_name() -> None:
    from hwadvisor.advise.serving import model_geometry
    from hwadvisor.errors import InputError

    # as a repository lists it: the catalog model, with the quantization the name says
    geom, quant = model_geometry("Meta-Llama-3.1-8B-Instruct-Q6_K.gguf")
    assert geom.name == "llama-3.1-8b" and quant == "Q6_K"
    # a name the catalog does not know, or a path with a folder: the file's own error
    for missing in ("no-such-model-Q4_K_M.gguf", "models/Llama-3.1-8B-Instruct-Q4_K_M.gguf"):
        with pytest.raises(InputError, match="no such file"):
            model_geometry(missing)


def test_a_cards_memory_is_read_alike_by_the_serving_and_the_training_answers() -> None:
    """A maker's "GB" of GPU memory is binary: every catalog card holds as many bytes when a
    model is served on it as when one is trained on it, and a size typed in the name ("RTX
    4060 Ti 16GB") is read as the catalog's own sizes are (an RTX 4080's 16 GB)."""
    from hwadvisor.advise.rates import catalog_memory
    from hwadvisor.advise.serve.speed import catalog_devices
    from hwadvisor.catalog.peaks import load_catalog

    rows = [row for row in load_catalog() if row.memory_gb and row.bandwidth_gbs]
    assert len(rows) > 200
    for row in rows:
        found = catalog_devices(row, 1, "float")
        if found is not None:
            assert found[1].total_bytes == catalog_memory(row), row.name
    typed, listed = (
        next(
            e.memory.usable_bytes
            for e in serve_advice(
                None, ServeRequest(model="llama-3.1-8b", assume_gpu=(g,))
            ).estimates
            if e.origin == "assumed"
        )
        for g in ("RTX 4060 Ti 16GB", "RTX 4080")
    )
    assert typed == listed


@pytest.mark.parametrize("quant", ["Q4_K_M", "F16"])
@pytest.mark.parametrize("context", [4096, 131072])
def test_the_fast_construction_of_estimates_is_pydantics_own(quant: str, context: int) -> None:
    """``constructed`` (a sweep builds 70,000 estimates) makes what ``model_construct`` makes:
    the same model, the same JSON, the same fields set; with a field left out, it is
    ``model_construct`` (its defaults)."""
    from hwadvisor.model.facts import constructed
    from hwadvisor.model.serve import InferenceEstimate, ServeMemoryBreakdown

    answer = _advice(model="qwen3-30b-a3b", quant=quant, context=context)
    assert answer.estimates
    for estimate in answer.estimates:
        assert type(estimate.memory) is ServeMemoryBreakdown
        for model in (estimate, estimate.memory):
            values = dict(model.__dict__)
            slow = type(model).model_construct(**values)
            fast = constructed(type(model), **values)
            assert fast == slow
            assert fast.model_dump_json() == slow.model_dump_json()
            assert fast.model_fields_set == slow.model_fields_set
        partial = {k: v for k, v in estimate.__dict__.items() if k != "suggestions"}
        fallback = constructed(InferenceEstimate, **partial)
        assert fallback == InferenceEstimate.model_construct(**partial)
        assert "suggestions" not in fallback.model_fields_set


GRID = [
    (profile, model, quant, engine, assume)
    for profile in (PROFILE, CPU_ONLY, None)
    for model, quant, engine in (
        ("llama-3.1-8b", "Q4_K_M", "llama.cpp"),
        ("qwen3-30b-a3b", "Q8_0", "llama.cpp"),
        ("llama-3.1-70b", "fp8", "vllm"),
        ("gpt-oss-20b", "MXFP4", "llama.cpp"),
        ("deepseek-v3", "Q4_K_M", "llama.cpp"),
        ("gemma-3-27b", "Q8_0", "mlx"),
    )
    for assume in ((), ("RTX 3070",), ("M2 Max",))
    if not (engine == "mlx" and assume == ("RTX 3070",))
    and not (engine == "vllm" and assume == ("M2 Max",))
]


@pytest.mark.parametrize(("profile", "model", "quant", "engine", "assume"), GRID)
def test_the_answer_and_its_json_are_what_validating_it_gives(
    profile: Path | None, model: str, quant: str, engine: str, assume: tuple[str, ...]
) -> None:
    """The answer is constructed (no validation) and written without pydantic's serializer:
    both as the validated model and its ``model_dump(mode="json")``, types included (7 and
    7.0 are told apart)."""
    from hwadvisor.model.facts import plain_json
    from hwadvisor.model.serve import InferenceAdvice

    answer = serve_advice(
        load_profile(profile) if profile else None,
        ServeRequest(model=model, quant=quant, engine=engine, assume_gpu=assume, context=8192),
    )
    validated = InferenceAdvice(**answer.__dict__)
    assert answer == validated
    assert json.dumps(plain_json(answer)) == json.dumps(validated.model_dump(mode="json"))


def test_a_model_files_name_reaches_the_answer_visible(tmp_path: Path) -> None:
    from hwadvisor.model.facts import plain_json

    folder = tmp_path / "evil\x1b[2J\x07model"
    folder.mkdir()
    (folder / "config.json").write_bytes(
        (
            Path(__file__).parent / "fixtures" / "modelfiles" / "llama-3.1-8b.config.json"
        ).read_bytes()
    )
    answer = serve_advice(
        load_profile(PROFILE), ServeRequest(model=str(folder / "config.json"), quant="Q4_K_M")
    )
    assert "\x1b" not in answer.model and "\x07" not in answer.model
    assert "model" in answer.model
    assert "\x1b" not in json.dumps(plain_json(answer), ensure_ascii=False)


@pytest.mark.parametrize("host_for_8", [False, True])
def test_a_lot_larger_than_the_option_says_how_many_gpus_its_prices_are_for(
    tmp_path: Path, host_for_8: bool
) -> None:
    """An MI300X is rented only as an 8-GPU instance and sold only on its 8-GPU baseboard: the
    one-GPU option's hourly price is that instance's and its purchase (where a host for 8 is
    priced) that of 8 cards and the host; the table and its footnote say so, and a one-GPU
    rental's price stands alone."""
    from hwadvisor.advise.pricing import builtin_prices, load_prices
    from hwadvisor.present.serve import footnote, option_cells, shown_options, verdict_lines

    prices = builtin_prices()
    if host_for_8:
        own = tmp_path / "prices.toml"
        own.write_text(
            'currency = "USD"\n[[host]]\ngpus = 8\nprice = 40000.0\nwhat = "w"\n'
            'source = "s"\ndate = "2026-11-01"\n',
            encoding="utf-8",
        )
        prices = load_prices(own)
    answer = serve_advice(
        load_profile(FIXTURES.parent / "validation" / "h200-2026-11-27.json"),
        ServeRequest(model="llama-3.1-70b", quant="Q4_K_M", assume_gpu=("MI300X", "H100 PCIe")),
        prices,
    )
    shown = {e.hardware: e for e in shown_options(answer)}
    mi300x, h100 = shown["AMD Instinct MI300X"], shown["H100 PCIe"]
    assert (mi300x.gpus, mi300x.rented_gpus) == (1, 8) and "8×" in (mi300x.rent_as or "")
    assert (h100.gpus, h100.rented_gpus) == (1, 1)
    assert option_cells(answer, mi300x)["rent"].endswith("/h for 8")
    assert option_cells(answer, h100)["rent"].endswith("/h")
    assert "H100" not in footnote(answer)
    if host_for_8:
        assert mi300x.bought_gpus == 8
        assert mi300x.purchase_cost == pytest.approx(
            8 * prices.cards[mi300x.hardware].price + 40000
        )
        assert option_cells(answer, mi300x)["buy"].endswith(" for 8")
        assert "AMD Instinct MI300X is sold and rented only 8 at a time" in footnote(answer)
    else:
        assert mi300x.purchase_cost is None and mi300x.bought_gpus is None
        assert option_cells(answer, mi300x)["buy"] == "-"
        assert "AMD Instinct MI300X is rented only 8 at a time" in footnote(answer)
    assert not option_cells(answer, h100)["buy"].endswith(" for 1")
    assert any("H100 PCIe" in line for line in verdict_lines(answer))
    for e in answer.estimates:  # never fewer than the option's own
        assert e.rented_gpus is None or e.rented_gpus >= e.gpus or e.rented_stand_in
        assert e.bought_gpus is None or e.bought_gpus >= e.gpus


GRID_MODELS = ("llama-3.2-3b", "llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-27b", "llama-3.1-70b",
               "gpt-oss-120b", "deepseek-r1", "llama-3.1-405b")  # fmt: skip


@pytest.mark.parametrize("model", GRID_MODELS)
def test_the_answer_holds_together_over_a_grid(model: str) -> None:
    """Over models, engines, formats and loads: the scenario is the smallest class of hardware
    that serves it, the recommendation is of that class, serves it and is its cheapest to buy;
    no option that can only be had several GPUs at a time is called "one GPU"; the first line
    of the verdict names the same scenario."""
    from hwadvisor.advise.serving import _cost_key
    from hwadvisor.present.serve import verdict_lines

    for engine, quant, users in (
        ("llama.cpp", "Q4_K_M", 1),
        ("vllm", "fp8", 1),
        ("vllm", "bf16", 32),
    ):
        a = serve_advice(None, ServeRequest(model=model, quant=quant, engine=engine, users=users))
        meeting = [e for e in a.estimates if e.meets_target]
        assert a.scenario_class == min((e.scenario_class for e in meeting), default=None)
        lines = verdict_lines(a)
        if a.scenario_class is not None:
            assert f"Scenario {a.scenario_class}:" in "\n".join(lines)
        rec = a.recommendation
        assert (rec is None) == (a.scenario_class is None)
        if rec is not None:
            assert rec.meets_target and rec.scenario_class == a.scenario_class
            same = [e for e in meeting if e.scenario_class == rec.scenario_class]
            assert all(_cost_key(rec) <= _cost_key(e) for e in same if e.gpus == rec.gpus)
        for e in a.estimates:
            lots = [n for n in (e.bought_gpus, None if e.rented_stand_in else e.rented_gpus) if n]
            if e.origin == "catalog" and e.scenario_class == 2:
                assert e.gpus == 1 and (not lots or min(lots) == 1), e.hardware


def test_a_scanned_apu_is_sized_as_the_same_chip_assumed() -> None:
    """A scanned Strix Halo (its GPU named as ROCm names it) takes the APUs' kind, as the same
    chip typed with --assume-gpu does and as its calibration rows are fitted: not a discrete
    Radeon's."""
    from hwadvisor.advise.names import resolve_gpu
    from hwadvisor.advise.serving import _assumed_candidate, machine_options
    from hwadvisor.model.profile import Profile

    doc = json.loads((FIXTURES.parent / "validation" / "h200-2026-11-27.json").read_text())
    gpu = doc["gpus"][0]
    gpu["name"]["value"], gpu["vendor"] = "AMD Radeon 8060S Graphics", "amd"
    gpu["vram_total_bytes"]["value"] = 96 * 2**30
    here = machine_options(Profile.model_validate(doc))[0]
    chip, _ = _assumed_candidate(resolve_gpu("8060S 128GB"), "8060S 128GB", 1, "gguf-k")
    assert here.speed.kind == chip.speed.kind == "unified-amd"
    assert here.speed.fast_matmul == chip.speed.fast_matmul == pytest.approx(2.0)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen2.5-14b", "gemma-3-12b", "mistral-7b"])
@pytest.mark.parametrize("gpu", ["RTX 3060", "RTX 4090", "A100 80GB", "H100"])
def test_vllm_is_told_its_max_model_len_where_the_window_does_not_fit(model: str, gpu: str) -> None:
    """vLLM starts at the model's whole window unless --max-model-len is given, and refuses
    to start where one sequence that long does not fit: with no --context, the answer says so
    exactly where the window does not fit on the GPU in question and the context sized does
    (where neither fits, the suggestions speak), naming that context; the most it says fits
    does fit."""
    asked = dict(engine="vllm", quant="fp8", assume_gpu=(gpu,))
    advice = serve_advice(None, build_request(model, **asked))
    notes = [c for c in advice.caveats if "--max-model-len" in c]
    window = model_geometry(model)[0].max_context or 0
    assert window > advice.context  # each of these models' windows is longer than 8k
    whole = serve_advice(None, build_request(model, context=window, **asked))
    at_window = next(e for e in whole.estimates if e.origin == "assumed")
    sized = next(e for e in advice.estimates if e.origin == "assumed")
    assert bool(notes) == (sized.fits_memory and not at_window.fits_memory)
    if notes:
        assert f"{window:,}-token window" in notes[0]
        assert f"--max-model-len {advice.context}" in notes[0]
        most = at_window.memory.max_context_that_fits or 0
        assert f"{most:,} tokens at most" in notes[0] and advice.context <= most < window
        held = serve_advice(None, build_request(model, context=most, **asked))
        assert next(e for e in held.estimates if e.origin == "assumed").fits_memory
    given = serve_advice(None, build_request(model, context=advice.context, **asked))
    assert not any("--max-model-len" in c for c in given.caveats)  # the user chose a context
    llama = serve_advice(None, build_request(model, assume_gpu=(gpu,)))
    assert not any("--max-model-len" in c for c in llama.caveats)  # llama.cpp's -c is 4k-8k


@pytest.mark.parametrize(
    "repo",
    [
        "unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit",
        "unsloth/Llama-3.1-8B-Instruct-unsloth-bnb-4bit",
        "unsloth/llama-3.1-8b-instruct-bnb-4bit",
        "someone/Llama-3.1-8B-Instruct-nf4",
    ],
)
def test_a_bitsandbytes_4bit_repository_is_sized_in_its_format(repo: str) -> None:
    """bitsandbytes' 4-bit checkpoints (unsloth's "-bnb-4bit" repositories) are NF4 with
    double quantization: 4.127 bits a weight, the embedding and head at 16 bits, run by
    transformers (or vLLM), never sized on Apple silicon, which bitsandbytes has no kernels
    for. unsloth's Meta-Llama-3.1-8B-Instruct-bnb-4bit stores 5.70 GB."""
    advice = serve_advice(None, build_request(repo, assume_gpu=("RTX 4090",)))
    assert advice.model == "llama-3.1-8b" and advice.quant == "bnb-4bit"
    assert advice.engine == "transformers"
    assumed = next(e for e in advice.estimates if e.origin == "assumed")
    assert assumed.memory.weights_bytes == pytest.approx(5.70e9, rel=0.03)
    assert not any("Mac" in e.hardware or "Apple" in e.hardware for e in advice.estimates)
    vllm = serve_advice(None, build_request(repo, engine="vllm", assume_gpu=("RTX 4090",)))
    assert vllm.quant == "bnb-4bit"


def test_bitsandbytes_is_refused_on_apple_silicon_and_by_gguf_engines(capsys: Any) -> None:
    repo = "unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit"
    assert main(["advise", "--serve", repo, "--assume-gpu", "M4 Max"]) == 2
    err = capsys.readouterr().err
    assert "bitsandbytes' 4-bit runs on" in err and "Traceback" not in err
    assert [line for line in err.splitlines() if "error" in line] == [
        line for line in err.splitlines() if line.startswith("hwadvisor: error: --assume-gpu")
    ]
    for engine in ("llama.cpp", "ollama"):
        assert main(["advise", "--serve", repo, "--engine", engine]) == 2
        assert "not a format" in capsys.readouterr().err
    for typed in ("nf4", "bitsandbytes", "BNB-4bit"):
        assert build_request("llama-3.1-8b", quant=typed).quant == typed  # taken as typed
        a = serve_advice(None, build_request("llama-3.1-8b", quant=typed, engine="vllm",
                                             assume_gpu=("RTX 3060",)))  # fmt: skip
        assert a.quant == "bnb-4bit"


CPU_OPTION = "desktop PC without a GPU (6-core Zen 4, 32 GB DDR5, 2 TB NVMe)"


@pytest.mark.parametrize(
    "model", ["llama-3.2-1b", "qwen2.5-1.5b", "llama-3.2-3b", "llama-3.1-8b", "qwen3-30b-a3b"]
)
@pytest.mark.parametrize("target", [3.0, 10.0, 30.0])
def test_a_cpu_is_enough_exactly_where_the_catalogs_computer_without_a_gpu_serves_it(
    model: str, target: float
) -> None:
    """The price catalog's computer without a GPU is the CPU option (class 1): sized at its
    memory's bandwidth and its cores' FLOPs under the CPU kind, bought whole and never rented
    (a cloud's vCPUs are a share of a server's memory channels). The answer reads "a CPU is
    enough", and recommends it, exactly where it serves the request."""
    advice = serve_advice(None, build_request(model, target_tok_s=target, assume_gpu=("RTX 3060",)))
    cpu = next(e for e in advice.estimates if e.hardware == CPU_OPTION)
    assert cpu.scenario_class == 1 and cpu.gpus == 0 and cpu.bought_whole
    assert cpu.purchase_cost == 623.0 and cpu.hourly_cost is None and cpu.rent_as is None
    assert "memory" in cpu.basis or "bandwidth" in cpu.basis
    assert (advice.scenario_class == 1) == cpu.meets_target
    if cpu.meets_target:
        assert advice.recommendation is not None
        assert advice.recommendation.hardware == CPU_OPTION
    elif advice.recommendation is not None:
        assert advice.recommendation.scenario_class >= 2


def test_the_cpu_option_reads_like_a_desktop_and_is_left_out_where_the_engine_needs_a_gpu() -> None:
    small = serve_advice(None, build_request("llama-3.2-1b", assume_gpu=("RTX 3060",)))
    assert small.scenario_class == 1  # a 1B at 4 bits: any desktop's memory reads it fast enough
    cpu = next(e for e in small.estimates if e.hardware == CPU_OPTION)
    # 83 GB/s at the share desktop CPUs read, 0.8 GB a token
    assert 30 < (cpu.decode_tok_s or 0) < 80
    eight = serve_advice(None, build_request("llama-3.1-8b", assume_gpu=("RTX 3060",)))
    desk = next(e for e in eight.estimates if e.hardware == CPU_OPTION)
    # an 8B decodes at about 10 tok/s there, but its 512-token prompt takes 20 s: a GPU
    assert (desk.time_to_first_token_s or 0) > 10 and eight.scenario_class == 2
    big = serve_advice(None, build_request("llama-3.1-70b", target_tok_s=1.0))
    assert not next(e for e in big.estimates if e.hardware == CPU_OPTION).fits_memory
    for engine, quant in (("mlx", "4bit"), ("tensorrt-llm", "fp8")):
        other = serve_advice(None, build_request("llama-3.2-1b", engine=engine, quant=quant))
        assert not any(e.hardware == CPU_OPTION for e in other.estimates)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen2.5-32b", "llama-2-7b"])
@pytest.mark.parametrize(
    ("gpu", "tier"),
    [("RTX 3060", 4096), ("RTX 4090", 32768), ("RTX 3090", 32768), ("RTX 6000 Ada", 262144),
     ("A100 80GB", 262144), ("M4 Max 64GB", 262144), ("M4 Max 36GB", 32768)],
)  # fmt: skip
def test_ollama_is_told_the_context_it_would_give_the_model_by_default(
    model: str, gpu: str, tier: int
) -> None:
    """Ollama gives a model a context by the GPU memory it finds (4k under 24 GiB, 32k to 48,
    256k above; never past the model's window) where none is set: with no --context, the
    answer says which, where it is not the one sized, and whether it fits there."""
    asked = dict(engine="ollama", assume_gpu=(gpu,))
    advice = serve_advice(None, build_request(model, **asked))
    window = model_geometry(model)[0].max_context or tier
    default = min(tier, window)
    notes = [c for c in advice.caveats if c.startswith("ollama gives")]
    assert bool(notes) == (default != advice.context)
    if notes:
        assert f"a {default:,}-token context by default" in notes[0]
        at_default = serve_advice(None, build_request(model, context=default, **asked))
        fits = next(e for e in at_default.estimates if e.origin == "assumed").fits_memory
        if default < advice.context:
            assert f"OLLAMA_CONTEXT_LENGTH={advice.context}" in notes[0]
        else:
            assert ("that fits too" in notes[0]) == fits
            assert ("does not fit" in notes[0]) == (not fits)
    given = serve_advice(None, build_request(model, context=advice.context, **asked))
    assert not any(c.startswith("ollama gives") for c in given.caveats)
    llama = serve_advice(None, build_request(model, assume_gpu=(gpu,)))
    assert not any(c.startswith("ollama gives") for c in llama.caveats)


@pytest.mark.parametrize("model", ["llama-3.2-1b", "llama-3.1-8b", "qwen3-30b-a3b"])
@pytest.mark.parametrize("max_ttft", [2.0, 10.0, 60.0])
def test_an_option_serves_only_where_its_first_token_comes_in_time(
    model: str, max_ttft: float
) -> None:
    """Serving a user needs the decode speed and a first token within --max-ttft (a
    --prompt-tokens prompt computed first): a CPU that decodes an 8B model at 10 tok/s but
    takes 18 s over a 512-token prompt does not serve a chat. Every option that serves meets
    both; one fast enough but late says how long its prompt waits."""
    from hwadvisor.present.serve import verdict_lines

    advice = serve_advice(
        None,
        build_request(model, max_ttft_s=max_ttft, assume_cpu=("8600G 32GB",),
                      assume_gpu=("RTX 3060",)),
    )  # fmt: skip
    assert advice.max_ttft_s == max_ttft
    for e in advice.estimates:
        fast = e.fits_memory and (e.per_user_tok_s or 0) >= advice.target_tok_s
        in_time = (e.time_to_first_token_s or 0) <= max_ttft
        assert e.meets_target == (fast and in_time), e.hardware
    text = "\n".join(verdict_lines(advice))
    assert f"first token ≤ {max_ttft:g} s" in text
    for e in advice.estimates:
        if e.origin != "assumed":
            continue
        fast = e.fits_memory and (e.per_user_tok_s or 0) >= advice.target_tok_s
        late = fast and (e.time_to_first_token_s or 0) > max_ttft
        said = f"waits {e.time_to_first_token_s or 0:.0f} s for its first token"
        assert any(line.startswith(e.hardware) for line in text.split("\n")), e.hardware
        assert (said in text) == late, e.hardware


def test_max_ttft_changes_the_scenario_and_bad_values_are_usage_errors(capsys: Any) -> None:
    argv = ["advise", "--serve", "llama3-8b-chat", "--assume-cpu", "8600G 32GB"]
    assert main([*argv, "--json", "-"]) == 0
    strict = json.loads(capsys.readouterr().out)["inference"]
    assert main([*argv, "--max-ttft", "60", "--json", "-"]) == 0
    patient = json.loads(capsys.readouterr().out)["inference"]
    assert strict["scenario_class"] == 2 and patient["scenario_class"] == 1
    for bad in ("0", "-3", "nan", "inf"):
        assert main([*argv, "--max-ttft", bad]) == 2
        assert "--max-ttft" in capsys.readouterr().err
