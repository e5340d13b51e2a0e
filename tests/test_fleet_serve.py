"""``fleet advise --serve MODEL``: each host is told whether its own hardware serves a model at
the target speed per user, ranked by decode speed; broken and stale hosts are never counted."""

from __future__ import annotations

import json
import random
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.fleet.advise import ServeRanked, rank_serve, serve_request
from hwadvisor.fleet.store import ingest, open_fleet
from tests.helpers import fleet_synth as fs

pytest.importorskip("duckdb")

NOW = datetime(2026, 11, 23)
A100_40, A100_80, H100, L4, RTX3080, RTX4090, A6000 = fs.GPU_MODELS
#: The eight-GPU fixture measured A100s: an H100 node's figures are theirs made faster by about
#: the ratio of the two cards' memory bandwidth (3.35 / 2.04 TB/s).
H100_OVER_A100 = 1.6


def _node(i: int, kind: str, model: tuple[str, str, int, str] | None = None) -> Any:
    doc = fs.make_host(fs.template(kind), i, random.Random(i), gpu_model=model, day=15)
    if model is H100:
        fs.slow_down(doc, "cuda:0", H100_OVER_A100)
    return doc


def _finding(doc: Any, fid: str, severity: str, title: str) -> None:
    doc["findings"].append(
        {"id": fid, "severity": severity, "title": title, "detail": "d", "fix": "f"}
    )


def _fleet_docs() -> list[Any]:
    """Four configurations: CPU-only (twice), an RTX 3080 10 GB, 8× A100 80GB, 8× H100."""
    return [
        _node(0, "cpu-only"),
        _node(1, "cpu-only"),
        _node(2, "single-gpu", RTX3080),
        _node(3, "eight-gpu", A100_80),
        _node(4, "eight-gpu", H100),
    ]


def _rank(tmp_path: Path, docs: list[Any], model: str, **given: Any) -> tuple[list[Any], int]:
    folder = tmp_path / "p"
    fs.write(folder, iter(docs))
    request, _, _ = serve_request(model, **given)
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [folder], now=NOW)
        return rank_serve(fleet, request, now=NOW)


def _by_name(ranked: list[ServeRanked]) -> dict[str, ServeRanked]:
    return {str(r.hostname): r for r in ranked}


CPU0, CPU1, RTX, A100, H100N = (f"node-{i:05d}" for i in range(5))


def test_an_8b_model_at_q4_is_served_by_every_gpu_host_and_cpu_hosts_rank_after(
    tmp_path: Path,
) -> None:
    ranked, configs = _rank(tmp_path, _fleet_docs(), "llama-3.1-8b", quant="Q4_K_M")
    assert configs == 4  # the two CPU-only hosts share one estimate
    got = _by_name(ranked)
    for name in (RTX, A100, H100N):
        r = got[name]
        assert r.serves and r.verdict == "serves it" and r.fits_memory, name
        assert r.per_user_tok_s is not None and r.per_user_tok_s >= 10.0
        assert r.measured  # from the scan's own bandwidth, not a catalog peak
    for name in (CPU0, CPU1):
        r = got[name]
        assert r.fits_memory and not r.serves and r.verdict == "too slow", name
        assert r.decode_tok_s is not None and 0 < r.decode_tok_s < 10.0
        assert r.users_at_target == 0
    order = [r.hostname for r in ranked]
    # Serving hosts first, fastest per user first; the CPU hosts after every one of them.
    assert order[:3] == [H100N, A100, RTX]
    assert set(order[3:]) == {CPU0, CPU1}
    assert got[CPU0].shared_with == 2 and got[CPU0].decode_tok_s == got[CPU1].decode_tok_s


def test_distinct_configurations_give_distinct_answers(tmp_path: Path) -> None:
    ranked, _ = _rank(tmp_path, _fleet_docs(), "llama-3.1-8b", quant="Q4_K_M")
    got = _by_name(ranked)
    speeds = [got[n].decode_tok_s for n in (CPU0, RTX, A100, H100N)]
    assert len(set(speeds)) == 4
    assert got[H100N].decode_tok_s > got[A100].decode_tok_s > got[RTX].decode_tok_s  # type: ignore[operator]
    assert "8× NVIDIA H100" in got[H100N].hardware and "8× NVIDIA A100" in got[A100].hardware
    assert "RTX 3080" in got[RTX].hardware and "this machine" not in got[RTX].hardware
    # More GPU memory, more room for the KV cache: the 8-GPU hosts hold far more users.
    assert got[A100].users_at_target > got[RTX].users_at_target > 0  # type: ignore[operator]
    assert len({r.configuration for r in ranked}) == 4


def test_a_70b_model_in_bf16_on_vllm_fits_only_the_eight_gpu_hosts(tmp_path: Path) -> None:
    ranked, _ = _rank(
        tmp_path, _fleet_docs(), "llama-3.1-70b", quant="bf16", engine="vllm", users=4
    )
    got = _by_name(ranked)
    assert {n for n, r in got.items() if r.fits_memory} == {A100, H100N}
    assert {n for n, r in got.items() if r.serves} == {A100, H100N}
    for name in (CPU0, CPU1, RTX):
        r = got[name]
        assert r.verdict == "does not fit" and not r.serves
        # bf16 weights alone are 2 bytes × 70.6e9 parameters.
        assert r.memory_needed_bytes > 140e9 > r.memory_usable_bytes  # type: ignore[operator]
    assert [r.hostname for r in ranked][:2] == [H100N, A100]


def test_too_few_users_is_said_and_ranked_after_those_that_serve(tmp_path: Path) -> None:
    docs = [_node(2, "single-gpu", RTX3080), _node(3, "eight-gpu", A100_80)]
    # 200 users at once: a serving engine splitting each layer over the 8 GPUs (tensor parallel);
    # llama.cpp's layer split reads the GPUs in turn and would not reach it.
    ranked, _ = _rank(tmp_path, docs, "llama-3.1-8b", quant="bf16", engine="vllm", users=200)
    got = _by_name(ranked)
    assert got[A100].serves
    rtx = got[RTX]
    assert not rtx.serves and rtx.verdict in ("too few users", "does not fit")
    assert [r.hostname for r in ranked] == [A100, RTX]


def test_broken_and_stale_hosts_are_held_back_last_with_why(tmp_path: Path) -> None:
    docs = [*_fleet_docs(), _node(5, "eight-gpu", A100_80), _node(6, "eight-gpu", A100_80)]
    _finding(docs[5], "gpu-lost", "error", "GPU 5 has fallen off the bus")
    docs[6]["created_utc"] = "2026-09-01T00:00:00Z"  # 83 days before NOW
    _finding(docs[1], "gpu-ecc-uncorrected", "warning", "GPU 0 has uncorrected ECC errors")
    ranked, _ = _rank(tmp_path, docs, "llama-3.1-8b", quant="Q4_K_M")
    got = _by_name(ranked)
    broken, stale = got["node-00005"], got["node-00006"]
    assert not broken.serves and broken.verdict == "not ready"
    assert broken.held_back == ["GPU 5 has fallen off the bus"]
    assert not stale.serves and stale.verdict == "not confirmed"
    assert stale.held_back == ["last scanned 83 days ago"]
    # Their estimate is their twin's, which serves it; they still rank after the slow CPU host.
    assert broken.decode_tok_s is not None and broken.fits_memory
    # A held-back host that would not serve it anyway keeps its own verdict.
    assert got[CPU1].verdict == "too slow" and got[CPU1].held_back
    order = [r.hostname for r in ranked]
    assert order.index(CPU0) < min(order.index(n) for n in ("node-00005", "node-00006", CPU1))
    assert set(order[-3:]) == {"node-00005", "node-00006", CPU1}
    assert sum(r.serves for r in ranked) == 3


def test_hosts_without_an_estimate_say_why(tmp_path: Path) -> None:
    """A CPU-only scan without benchmarks: no measured bandwidth, no catalog GPU."""
    bare = _node(7, "cpu-only")
    bare["benchmarks"] = None
    ranked, _ = _rank(tmp_path, [bare, _node(2, "single-gpu", RTX3080)], "llama-3.1-8b")
    got = _by_name(ranked)
    r = got["node-00007"]
    assert r.verdict == "no estimate" and r.fits_memory is None and not r.serves
    assert "bandwidth" in r.reasons[0]
    assert [x.hostname for x in ranked] == [RTX, "node-00007"]


def test_an_unreadable_stored_profile_is_no_estimate(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    fs.write(folder, iter(_fleet_docs()[:3]))
    request, _, _ = serve_request("llama-3.1-8b")
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [folder], now=NOW)
        fleet.con.execute(
            "UPDATE scans SET doc = ? WHERE scan_id IN "
            "(SELECT scan_id FROM hosts WHERE hostname = ?)",
            [b"not zlib", RTX],
        )
        ranked, _ = rank_serve(fleet, request, now=NOW)
    got = _by_name(ranked)
    assert got[RTX].verdict == "no estimate" and "unreadable" in got[RTX].reasons[0]
    assert got[CPU0].verdict == "too slow"  # the others are still estimated


# --- the command --------------------------------------------------------------------------------


def _cli(args: list[str], capsys: Any) -> tuple[int, str, str]:
    from hwadvisor.cli import main

    code = main(["fleet", "advise", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_prints_the_answer_and_why(tmp_path: Path, capsys: Any) -> None:
    docs = [*_fleet_docs(), _node(6, "eight-gpu", A100_80)]  # node 3's twin
    _finding(docs[5], "gpu-lost", "error", "GPU 5 has fallen off the bus")
    folder = tmp_path / "p"
    fs.write(folder, iter(docs))
    code, out, _ = _cli([str(folder), "--serve", "llama-3.1-8b", "--quant", "Q4_K_M"], capsys)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    flat = " ".join(out.split())
    assert flat.startswith(
        "llama-3.1-8b: 3 of 6 hosts serve it at ≥ 10 tok/s per user (4 configurations estimated)"
    )
    assert "Q4_K_M, 8,192-token context, llama.cpp, 1 user at once" in flat
    assert "not ready: GPU 5 has fallen off the bus" in flat
    assert flat.count("serves it") == 3
    assert flat.count("too slow") == 2

    code, out, _ = _cli(
        [str(folder), "--serve", "llama-3.1-70b", "--quant", "bf16", "--engine", "vllm"], capsys
    )
    flat = " ".join(out.split())
    assert code == 0 and "3 of 6 hosts" not in flat and "2 of 6 hosts serve it" in flat
    assert "needs 1" in flat and "usable" in flat  # the memory needed against what there is


def test_the_cli_json_has_every_host(tmp_path: Path, capsys: Any) -> None:
    docs = [*_fleet_docs(), _node(6, "eight-gpu", A100_80)]  # node 3's twin
    _finding(docs[5], "gpu-lost", "error", "GPU 5 has fallen off the bus")
    folder = tmp_path / "p"
    fs.write(folder, iter(docs))
    args = [str(folder), "--serve", "llama3-8b-chat", "--users", "2", "--target-tok-s", "20"]
    code, out, _ = _cli([*args, "--json", "--limit", "1"], capsys)
    assert code == 0
    doc = json.loads(out)
    # The preset's model and quantization, with the options given on top.
    assert doc["model"] == "llama-3-8b" and doc["quant"] == "Q4_K_M"
    assert doc["users"] == 2 and doc["target_tok_s"] == 20.0 and doc["engine"] == "llama.cpp"
    assert doc["hosts"] == 6 and doc["serve"] == 3 and doc["configurations"] == 4
    assert len(doc["ranking"]) == 6  # --limit is for the table only
    row = doc["ranking"][0]
    for key in (
        "host_key",
        "hostname",
        "configuration",
        "hardware",
        "fits_memory",
        "memory_needed_bytes",
        "memory_usable_bytes",
        "decode_tok_s",
        "per_user_tok_s",
        "prefill_tok_s",
        "throughput_tok_s",
        "users_at_target",
        "serves",
        "verdict",
        "held_back",
        "shared_with",
    ):
        assert key in row, key
    assert "rank_class" not in row
    last = doc["ranking"][-1]
    assert last["hostname"] == "node-00006" and last["held_back"] == [
        "GPU 5 has fallen off the bus"
    ]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--serve", "llama-3.1-8b", "-w", "resnet50-imagenet"], "--serve and --workload"),
        (["--serve", "llama-3.1-8b", "--deadline", "4"], "--deadline"),
        (["-w", "resnet50-imagenet", "--quant", "Q4_K_M"], "--quant size inference"),
        ([], "--workload NAME"),
        (["--serve", "llama-3.1-8b", "--engine", "magic"], "--engine 'magic'"),
        (["--serve", "llama-3.1-8b", "--users", "0"], "--users must be at least 1"),
        (["--serve", "llama-3.1-8b", "--target-tok-s", "nan"], "--target-tok-s"),
        (["--serve", "no-such-model-xyz"], "no-such-model-xyz"),
        (["--serve", "llama-3.1-8b", "--quant", "Q9_Z"], "Q9_Z"),
        (["--serve", "llama-3.1-8b", "--kv-cache", "q3"], "'q3'"),
        (["--serve", "llama-3.1-8b", "--prompt-tokens", "0"], "--prompt-tokens"),
        (["-w", "resnet50-imagenet", "--kv-cache", "fp8"], "--kv-cache size inference"),
    ],
)
def test_bad_command_lines_are_usage_errors(
    tmp_path: Path, capsys: Any, args: list[str], said: str
) -> None:
    """Exit 2 with one line, before any database is opened (there is none here)."""
    code, out, err = _cli(["--db", str(tmp_path / "none.duckdb"), *args], capsys)
    assert code == 2, (out, err)
    assert said in err and "Traceback" not in err
    assert not (tmp_path / "none.duckdb").exists()


def test_a_smaller_kv_cache_needs_less_memory_on_every_host(tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "p"
    fs.write(folder, iter(_fleet_docs()))
    needed = {}
    for kv in ("f16", "q4_0"):
        args = [str(folder), "--serve", "llama-3.1-8b", "--context", "32768", "--kv-cache", kv]
        code, out, _ = _cli([*args, "--json"], capsys)
        assert code == 0
        rows = json.loads(out)["ranking"]
        needed[kv] = {r["hostname"]: r["memory_needed_bytes"] for r in rows}
    assert needed["f16"].keys() == needed["q4_0"].keys()
    for host, small in needed["q4_0"].items():
        if small is not None:
            # 32k tokens of Llama 3.1 8B's KV cache: 4 GiB at f16, under a third of it at q4_0.
            assert needed["f16"][host] - small > 2.5 * 2**30, host


def test_hosts_an_engine_does_not_run_on_say_so(tmp_path: Path) -> None:
    """MLX on a Linux fleet: every host has no estimate, and says why (not 'no GPU known')."""
    ranked, _ = _rank(tmp_path, _fleet_docs(), "llama-3.1-8b", quant="4bit", engine="mlx")
    assert len(ranked) == 5
    for r in ranked:
        assert r.verdict == "no estimate" and not r.serves
        (reason,) = r.reasons
        assert reason.startswith("no estimate: mlx runs on Apple silicon only (this machine: ")
