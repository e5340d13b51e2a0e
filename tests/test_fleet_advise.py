"""``fleet advise`` gives each host the answer for its own hardware, and never counts a host that
is broken or unheard-of as meeting a workload."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

import pytest

from hwadvisor.fleet.advise import rank
from hwadvisor.fleet.store import ingest, open_fleet
from hwadvisor.workloads import get_workload
from tests.helpers import fleet_synth as fs

pytest.importorskip("duckdb")

NOW = datetime(2026, 11, 23)
A100_40, A100_80, H100, L4, RTX3080, RTX4090, A6000 = fs.GPU_MODELS


def _node(i: int, kind: str, model: tuple[str, str, int, str], gpus: int | None = None) -> Any:
    doc = fs.make_host(fs.template(kind), i, random.Random(i), gpu_model=model, day=15)
    if gpus is not None:
        doc["gpus"] = doc["gpus"][:gpus]
    return doc


def _ranked(tmp_path: Any, docs: list[Any], workload: str = "llm-7b-lora") -> dict[str, Any]:
    folder = tmp_path / "p"
    fs.write(folder, iter(docs))
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [folder], now=NOW)
        ranked, configs = rank(fleet, get_workload(workload), now=NOW)
    return {"configs": configs, **{r.hostname: r for r in ranked}}


def test_distinct_configurations_give_distinct_answers(tmp_path: Any) -> None:
    """Same minimum GPU memory, different hardware: each host is estimated as what it is (an
    A100 80GB node is not an H100 node, a 4090 is not an L4, 7 GPUs are not 8)."""
    docs = [
        _node(0, "eight-gpu", A100_80),
        _node(1, "eight-gpu", H100),
        _node(2, "eight-gpu", H100, gpus=7),
        _node(3, "single-gpu", RTX4090),
        _node(4, "single-gpu", L4),
        _node(6, "eight-gpu", A100_80),  # node 0's twin (driver branch too): shares its estimate
    ]
    got = _ranked(tmp_path, docs)
    assert got["configs"] == 5
    assert "8× NVIDIA A100-SXM4-80GB" in got["node-00000"].hardware
    assert "8× NVIDIA H100 80GB HBM3" in got["node-00001"].hardware
    assert "7× NVIDIA H100 80GB HBM3" in got["node-00002"].hardware
    assert "RTX 4090" in got["node-00003"].hardware and "L4" in got["node-00004"].hardware
    assert got["node-00000"].hardware == got["node-00006"].hardware
    assert got["node-00000"].shared_with == 2 and got["node-00001"].shared_with == 1
    # Different hardware, different times: the H100 node beats the A100 one, 8 beat 7.
    t = {name: r.seconds for name, r in got.items() if name != "configs"}
    assert t["node-00001"] < t["node-00000"] and t["node-00001"] < t["node-00002"]
    assert t["node-00003"] != t["node-00004"]


def _finding(doc: Any, fid: str, severity: str, title: str) -> None:
    doc["findings"].append(
        {"id": fid, "severity": severity, "title": title, "detail": "d", "fix": "f"}
    )


def test_broken_and_stale_hosts_never_meet_a_workload(tmp_path: Any) -> None:
    docs = [_node(i, "eight-gpu", A100_80) for i in range(6)]
    _finding(docs[1], "gpu-ecc-uncorrected", "warning", "GPU 3 has uncorrected ECC errors")
    _finding(docs[2], "gpu-lost", "error", "GPU 5 has fallen off the bus")
    _finding(docs[3], "gpu-xid-48", "error", "Xid 48: double-bit ECC error")
    docs[4]["created_utc"] = "2026-09-01T00:00:00Z"  # 83 days before NOW
    title = "No current PyTorch, JAX or TensorFlow build runs on driver 470.182.03 (CUDA 11.4)"
    _finding(docs[5], "cuda-driver-too-old-for-frameworks", "warning", title)
    got = _ranked(tmp_path, docs, workload="resnet50-imagenet")
    healthy = got["node-00000"]
    assert healthy.sufficient and healthy.verdict == "enough" and not healthy.held_back
    for name, said, verdict in (
        ("node-00001", "uncorrected ECC", "not ready"),
        ("node-00002", "fallen off the bus", "not ready"),
        ("node-00003", "Xid 48", "not ready"),
        ("node-00004", "last scanned 83 days ago", "not confirmed"),
        ("node-00005", "driver 470.182.03", "not ready"),
    ):
        r = got[name]
        assert not r.sufficient and r.verdict == verdict, name
        assert any(said in why for why in r.held_back), (name, r.held_back)
    # The held-back hosts rank after the one that meets it, though their estimate is the same.
    with open_fleet(None, create=True) as fleet:
        ingest(fleet, [tmp_path / "p"], now=NOW)
        order = [r.hostname for r in rank(fleet, get_workload("resnet50-imagenet"), now=NOW)[0]]
    assert order[0] == "node-00000"


def test_the_cli_says_why_a_host_is_held_back(tmp_path: Any, capsys: Any) -> None:
    from hwadvisor.cli import main

    docs = [_node(i, "eight-gpu", A100_80) for i in range(2)]
    _finding(docs[1], "gpu-lost", "error", "GPU 5 has fallen off the bus")
    folder = tmp_path / "p"
    fs.write(folder, iter(docs))
    assert main(["fleet", "advise", str(folder), "-w", "resnet50-imagenet"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "1 of 2 hosts meet it" in out
    assert "not ready: GPU 5 has" in out and "fallen off the bus" in out
