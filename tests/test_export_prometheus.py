"""`hwadvisor export prometheus`: node_exporter textfile metrics from profiles.

The output is read back with prometheus_client's parser (the reference for the text format) and
checked line by line for what node_exporter's textfile collector needs: one HELP and TYPE per
family, every family's samples together, no timestamps, finite values, valid names.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from hwadvisor import __version__
from hwadvisor.cli import app, main
from hwadvisor.exitcodes import ExitStatus
from hwadvisor.model.bench import Benchmarks, BenchStatus, Confidence, Disturbance, Measurement
from hwadvisor.model.facts import Source, fact, visible
from hwadvisor.model.load import load_profile, parse_profile
from hwadvisor.model.profile import (
    SCHEMA_VERSION,
    Finding,
    GpuInfo,
    HostIdentity,
    Profile,
    Severity,
    ToolInfo,
)
from hwadvisor.render import prometheus as prom
from hwadvisor.render.jsonio import replace_file
from hwadvisor.render.prometheus import (
    FAMILIES,
    Family,
    latest_per_machine,
    render_prometheus,
)

FIXTURES = Path(__file__).parent / "fixtures"
REPORTS = FIXTURES / "reports"
V1 = FIXTURES / "profiles" / "v1-cpu-only.json"
ALL_FIXTURES = [REPORTS / "cpu-only.json", REPORTS / "single-gpu.json", REPORTS / "eight-gpu.json"]

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


# --------------------------------------------------------------------------------------------
# Helpers


def check_exposition(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Check ``text`` the way node_exporter's textfile collector reads it, and return its
    samples by family (parsed with prometheus_client)."""
    assert text == "" or text.endswith("\n")
    helped: list[str] = []
    typed: list[str] = []
    current: str | None = None
    finished: set[str] = set()
    for line in text.splitlines():
        assert line, "no blank lines"
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert name not in helped, f"second HELP for {name}"
            if current is not None:
                finished.add(current)
            assert name not in finished, f"{name} is split"
            helped.append(name)
            current = name
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name == current and name not in typed, f"TYPE of {name} out of place"
            assert kind == "gauge"
            typed.append(name)
            continue
        assert not line.startswith("#")
        name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line)
        assert name is not None and name.group(0) == current, f"sample outside its family: {line}"
        tail = line[line.rindex("}") + 1 :] if "{" in line else line[len(name.group(0)) :]
        parts = tail.split()
        assert len(parts) == 1, f"a timestamp or garbage after the value: {line!r}"
        assert math.isfinite(float(parts[0]))
    assert helped == typed
    assert all(_NAME.match(n) for n in helped)

    families = list(text_string_to_metric_families(text))
    names = [f.name for f in families]
    assert names == helped, "the parser sees the same families, once each"
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in families:
        assert family.type == "gauge"
        rows = out.setdefault(family.name, [])
        for sample in family.samples:
            assert sample.name == family.name
            assert sample.timestamp is None
            assert math.isfinite(sample.value)
            assert all(_LABEL.match(k) and not k.startswith("__") for k in sample.labels)
            rows.append((dict(sample.labels), sample.value))
        keys = [tuple(sorted(labels.items())) for labels, _ in rows]
        assert len(keys) == len(set(keys)), f"duplicate series in {family.name}"
    return out


def _profile(hostname: str | None = "box-1", **extra: Any) -> Profile:
    return Profile(
        tool=ToolInfo(version=__version__),
        created_utc="2026-11-21T10:02:03Z",
        host=HostIdentity(
            hostname=fact(hostname, Source.OS),
            machine_id=fact(None if hostname is None else f"id-{hostname}", Source.OS),
        ),
        **extra,
    )


def _one(
    samples: dict[str, list[tuple[dict[str, str], float]]], family: str, **match: str
) -> float:
    found = [
        v for labels, v in samples[family] if all(labels.get(k) == x for k, x in match.items())
    ]
    assert len(found) == 1, (family, match, samples.get(family))
    return found[0]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


# --------------------------------------------------------------------------------------------
# The renderer


@pytest.mark.parametrize("path", [*ALL_FIXTURES, V1], ids=lambda p: p.stem)
def test_fixtures_render_as_valid_exposition(path: Path) -> None:
    profile = load_profile(path)
    samples = check_exposition(render_prometheus([profile]))
    info = _one(samples, "hwadvisor_info")
    assert info == 1
    assert samples["hwadvisor_info"][0][0]["version"] == profile.tool.version
    # Findings are counted for every severity, 0 included, so `> 0` alerts work.
    counts = {labels["severity"]: v for labels, v in samples["hwadvisor_findings"]}
    assert set(counts) == {s.value for s in Severity}
    assert sum(counts.values()) == len(profile.findings)
    order = [f.name for f in FAMILIES]
    assert [order.index(n) for n in samples] == sorted(order.index(n) for n in samples)


def test_single_gpu_figures() -> None:
    profile = load_profile(REPORTS / "single-gpu.json")
    gpu = profile.gpus[0]
    samples = check_exposition(render_prometheus([profile]))
    uuid = gpu.uuid.value
    assert uuid is not None and uuid.startswith("GPU-")
    (labels, value), *_ = samples["hwadvisor_gpu_info"]
    assert value == 1
    # DCGM exporter's label names: gpu (index) and UUID, so that the two join on(UUID).
    assert labels["gpu"] == "0" and labels["UUID"] == uuid
    assert labels["name"] == gpu.name.value
    assert labels["pci_bus_id"] == gpu.pci_bus_id.value
    assert labels["driver_version"] == profile.nvml.driver_version.value
    assert labels["cuda_driver_version"] == profile.nvml.cuda_driver_version.value
    assert (
        _one(samples, "hwadvisor_gpu_memory_total_bytes", UUID=uuid) == gpu.vram_total_bytes.value
    )
    assert _one(samples, "hwadvisor_gpu_power_limit_watts", gpu="0") == gpu.power_limit_watts.value
    assert _one(samples, "hwadvisor_gpu_pcie_link_width", gpu="0", state="max") == 16
    assert _one(samples, "hwadvisor_gpu_pcie_link_generation", gpu="0", state="current") == 4
    assert profile.benchmarks is not None
    m = next(
        m
        for m in profile.benchmarks.measurements
        if (m.case, m.device, m.precision) == ("matmul", "cuda:0", "fp32")
    )
    key = {"case": "matmul", "device": "cuda:0", "precision": "fp32", "unit": "GFLOP/s"}
    assert _one(samples, "hwadvisor_benchmark_best", **key) == m.best
    assert _one(samples, "hwadvisor_benchmark_efficiency_ratio", **key) == m.efficiency
    assert _one(samples, "hwadvisor_benchmark_trusted", **key) == 1
    assert profile.advice is not None
    assert _one(samples, "hwadvisor_advice_scenario") == profile.advice.scenario.id
    assert samples["hwadvisor_advice_scenario"][0][0]["workload"] == profile.advice.workload.name


def test_cpu_only_figures() -> None:
    profile = load_profile(REPORTS / "cpu-only.json")
    samples = check_exposition(render_prometheus([profile]))
    assert "hwadvisor_gpu_info" not in samples
    for rows in samples.values():  # every sample names its machine
        assert all(labels["hostname"] == "build-7" for labels, _ in rows)
        assert all(labels["machine_id"] == profile.host.machine_id.value for labels, _ in rows)
    assert _one(samples, "hwadvisor_cpu_usable_cpus") == profile.cpu.usable_cpus.value
    assert _one(samples, "hwadvisor_memory_total_bytes") == profile.memory.total_bytes.value
    assert _one(samples, "hwadvisor_torch_cuda_available") == 0
    assert _one(samples, "hwadvisor_finding", id="no-gpu", severity="info") == 1
    assert _one(samples, "hwadvisor_findings", severity="info") == 1
    assert _one(samples, "hwadvisor_findings", severity="error") == 0
    info = samples["hwadvisor_info"][0][0]
    assert info["kernel"] == profile.platform.kernel.value
    assert info["cpu_model"] == profile.cpu.model_name.value
    assert info["schema_version"] == str(profile.schema_version)
    assert _one(samples, "hwadvisor_scan_timestamp_seconds") == 1795242941  # 2026-11-21T...


def test_timestamp_is_created_utc() -> None:
    samples = check_exposition(render_prometheus([_profile()]))
    assert _one(samples, "hwadvisor_scan_timestamp_seconds") == 1795255323  # 2026-11-21T10:02:03Z
    broken = _profile().model_copy(update={"created_utc": "yesterday"})
    assert "hwadvisor_scan_timestamp_seconds" not in check_exposition(render_prometheus([broken]))


def test_untrusted_and_failed_measurements() -> None:
    bench = Benchmarks(
        measurements=[
            Measurement(case="matmul", device="cpu", precision="fp32", unit="GFLOP/s", best=9.0),
            Measurement(
                case="triad",
                device="cpu",
                unit="GB/s",
                best=5.0,
                disturbances=[Disturbance.CPU_CONTENDED],
            ),
            Measurement(case="h2d", device="cpu", unit="GB/s", best=5.0, confidence=Confidence.LOW),
            Measurement(case="conv2d", device="cpu", status=BenchStatus.FAILED, best=3.0),
        ]
    )
    samples = check_exposition(render_prometheus([_profile(benchmarks=bench)]))
    trusted = {labels["case"]: v for labels, v in samples["hwadvisor_benchmark_trusted"]}
    assert trusted == {"matmul": 1, "triad": 0, "h2d": 0, "conv2d": 0}
    best = {labels["case"] for labels, _ in samples["hwadvisor_benchmark_best"]}
    assert best == {"matmul", "triad", "h2d"}  # a failed case has no figure
    assert "hwadvisor_benchmark_efficiency_ratio" not in samples  # no peak known


def test_unknown_facts_are_left_out_never_zero_or_nan() -> None:
    bare = _profile(hostname=None, gpus=[GpuInfo(index=0, vendor="nvidia", backend="cuda")])
    text = render_prometheus([bare])
    samples = check_exposition(text)
    assert "NaN" not in text and "Inf" not in text
    for family in (
        "hwadvisor_cpu_usable_cpus",
        "hwadvisor_memory_total_bytes",
        "hwadvisor_gpu_memory_total_bytes",
        "hwadvisor_gpu_power_limit_watts",
        "hwadvisor_gpu_pcie_link_width",
        "hwadvisor_torch_cuda_available",
        "hwadvisor_torch_info",
        "hwadvisor_benchmark_best",
        "hwadvisor_advice_scenario",
    ):
        assert family not in samples
    info = samples["hwadvisor_info"][0][0]
    assert "hostname" not in info and "machine_id" not in info and "kernel" not in info
    assert samples["hwadvisor_gpu_info"] == [
        ({"gpu": "0", "vendor": "nvidia", "backend": "cuda"}, 1.0)
    ]


def test_non_finite_figures_from_a_hand_edited_profile_are_left_out() -> None:
    data = json.loads((REPORTS / "single-gpu.json").read_text())
    data["benchmarks"]["measurements"][0]["best"] = float("nan")
    data["benchmarks"]["measurements"][1]["efficiency"] = float("inf")
    data["memory"]["total_bytes"] = {"value": float("inf"), "source": "psutil", "reason": None}
    profile = parse_profile(json.dumps(data))  # Python's json writes and reads NaN/Infinity
    text = render_prometheus([profile])
    samples = check_exposition(text)
    assert "NaN" not in text and "Inf" not in text
    assert (
        len(samples["hwadvisor_benchmark_best"])
        == len(
            [m for m in profile.benchmarks.measurements if m.best is not None]
            if profile.benchmarks
            else []
        )
        - 1
    )
    assert "hwadvisor_memory_total_bytes" not in samples


HOSTILE = 'a"b\\c\nd\x1b[31mred\x07\u202eevil ünïcødé 日本 🙂 }{ ,= \\n \\" '


def test_hostile_label_values_round_trip() -> None:
    profile = _profile(
        hostname=HOSTILE,
        gpus=[
            GpuInfo(
                index=0,
                vendor="nvidia",
                backend="cuda",
                name=fact(HOSTILE + "gpu", Source.NVML),
                uuid=fact('GPU-"\\\n', Source.NVML),
            )
        ],
        findings=[
            Finding(id=HOSTILE, severity=Severity.WARNING, title="t", detail="d", fix="f"),
        ],
    )
    shown = profile.host.hostname.value
    assert shown == visible(HOSTILE) and "\x1b" not in shown and "\n" in shown
    text = render_prometheus([profile])
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    samples = check_exposition(text)
    for rows in samples.values():
        assert all(labels["hostname"] == shown for labels, _ in rows)
    gpu = samples["hwadvisor_gpu_info"][0][0]
    assert gpu["name"] == shown + "gpu" and gpu["UUID"] == 'GPU-"\\\n'
    assert _one(samples, "hwadvisor_finding", id=shown) == 1
    assert _one(samples, "hwadvisor_findings", severity="warning") == 1


def test_lone_surrogates_become_replacement_characters() -> None:
    data = json.loads(V1.read_text())
    data["host"]["hostname"] = {"value": "bad\udc80name", "source": "os", "reason": None}
    profile = parse_profile(json.dumps(data))
    text = render_prometheus([profile])
    text.encode("utf-8")  # no UnicodeEncodeError when written
    samples = check_exposition(text)
    assert samples["hwadvisor_info"][0][0]["hostname"] == "bad\ufffdname"


def test_duplicate_series_in_a_profile_are_written_once() -> None:
    twice = Finding(id="x", severity=Severity.ERROR, title="t", detail="d", fix="f")
    samples = check_exposition(render_prometheus([_profile(findings=[twice, twice])]))
    assert samples["hwadvisor_finding"] == [
        ({"hostname": "box-1", "machine_id": "id-box-1", "id": "x", "severity": "error"}, 1.0)
    ]
    assert _one(samples, "hwadvisor_findings", severity="error") == 2


def test_several_profiles_group_families_and_keep_machines_apart() -> None:
    cpu, one, eight = (load_profile(p) for p in ALL_FIXTURES)
    dgx = eight.model_copy(update={"host": HostIdentity(hostname=fact("dgx", Source.OS))})
    profiles = [cpu, one, dgx, _profile("a"), _profile("b")]
    text = render_prometheus(profiles)
    samples = check_exposition(text)  # fails if a family were split across profiles
    hosts = [labels.get("hostname") for labels, _ in samples["hwadvisor_info"]]
    assert hosts == ["build-7", None, "dgx", "a", "b"]
    assert len(samples["hwadvisor_findings"]) == 3 * len(profiles)
    assert len(samples["hwadvisor_gpu_info"]) == 1 + 8
    assert {labels.get("hostname") for labels, _ in samples["hwadvisor_gpu_info"]} == {None, "dgx"}


def test_profiles_without_identity_are_one_machine() -> None:
    # single-gpu and eight-gpu were imported from nvidia-smi/collect_env: no hostname, no id.
    profiles = [load_profile(p) for p in ALL_FIXTURES[1:]]
    samples = check_exposition(render_prometheus(profiles))
    assert len(samples["hwadvisor_info"]) == 1
    assert len(samples["hwadvisor_gpu_info"]) == 8  # the later one given (same created_utc)


def test_latest_per_machine() -> None:
    old = _profile("a")
    new = _profile("a").model_copy(update={"created_utc": "2026-12-01T00:00:00Z"})
    other = _profile("b")
    kept, dropped = latest_per_machine([new, other, old])
    assert kept == [new, other] and dropped == [2]
    kept, dropped = latest_per_machine([old, other, new])
    assert kept == [other, new] and dropped == [0]
    # Two profiles of one machine still make a valid file (the first of each series is kept).
    check_exposition(render_prometheus([old, new]))


def test_a_new_family_is_one_entry() -> None:
    extra = Family("hwadvisor_storage_free_bytes", "Free space.", "gauge", lambda p: [({}, 5.0)])
    samples = check_exposition(render_prometheus([_profile()], [*FAMILIES, extra]))
    assert _one(samples, "hwadvisor_storage_free_bytes") == 5
    with pytest.raises(ValueError, match="metric name"):
        render_prometheus([_profile()], [Family("bad-name", "x", "gauge", lambda p: [({}, 1.0)])])
    with pytest.raises(ValueError, match="label name"):
        render_prometheus(
            [_profile()], [Family("ok", "x", "gauge", lambda p: [({"a-b": "1"}, 1.0)])]
        )


def test_every_family_is_named_and_helped() -> None:
    names = [f.name for f in FAMILIES]
    assert len(names) == len(set(names))
    for family in FAMILIES:
        assert family.name.startswith("hwadvisor_") and _NAME.match(family.name)
        assert family.type == "gauge" and family.help and "\n" not in family.help


def test_value_formatting() -> None:
    assert prom.format_value(3.0) == "3"
    assert prom.format_value(0.781) == "0.781"
    assert float(prom.format_value(1e300)) == 1e300
    assert prom.number(True) == 1 and prom.number([1, 2]) == 2 and prom.number("x") is None
    assert prom.number(float("nan")) is None and prom.number(None) is None


def _health_profile() -> dict[str, Any]:
    data = json.loads((REPORTS / "single-gpu.json").read_text())
    data["schema_version"] = SCHEMA_VERSION
    data["gpus"][0].update(
        {
            "vbios_version": {"value": "94.02.42.00.A9", "source": "nvml"},
            "ecc_errors_corrected_volatile": {"value": 7, "source": "nvml"},
            "ecc_errors_uncorrected_volatile": {"value": 2, "source": "nvml"},
            "ecc_errors_uncorrected_aggregate": {"value": None, "reason": "not supported"},
            "retired_pages": {"value": 3, "source": "nvml"},
            "remapped_rows_pending": {"value": True, "source": "nvml"},
            "remapped_rows_failed": {"value": False, "source": "nvml"},
            "xid_errors_recent": {"value": [79, 13, 79], "source": "procfs"},
        }
    )
    data["system"] = {
        "vendor": {"value": "Supermicro", "source": "sysfs"},
        "product": {"value": "SYS-4029GP", "source": "sysfs"},
        "serial": {"value": "S123456", "source": "sysfs"},
        "bios_version": {"value": "3.4", "source": "sysfs"},
    }
    data["network"] = {
        "interfaces": [
            {
                "name": "eth0",
                "kind": "ethernet",
                "speed_mbps": {"value": 25000, "source": "sysfs"},
                "driver": {"value": "mlx5_core", "source": "sysfs"},
                "mac": {"value": "00:11:22:33:44:55", "source": "sysfs"},
            },
            {"name": "eth1", "kind": "ethernet", "speed_mbps": {"value": -1, "source": "sysfs"}},
        ],
        "rdma": [
            {
                "device": "mlx5_0",
                "port": 1,
                "link_layer": {"value": "InfiniBand", "source": "sysfs"},
                "rate_gbps": {"value": 200.0, "source": "sysfs"},
                "state": {"value": "active", "source": "sysfs"},
            }
        ],
        "reason": None,
    }
    return data


def test_gpu_health_system_and_network_families() -> None:
    fields = GpuInfo.model_fields
    if "ecc_errors_uncorrected_volatile" not in fields or "system" not in Profile.model_fields:
        pytest.skip("this profile schema has no GPU health facts yet")
    profile = parse_profile(json.dumps(_health_profile()))
    samples = check_exposition(render_prometheus([profile]))
    uuid = profile.gpus[0].uuid.value
    assert samples["hwadvisor_gpu_info"][0][0]["vbios_version"] == "94.02.42.00.A9"
    assert _one(samples, "hwadvisor_gpu_ecc_errors_uncorrected_volatile", UUID=uuid) == 2
    assert _one(samples, "hwadvisor_gpu_ecc_errors_corrected_volatile", UUID=uuid) == 7
    assert "hwadvisor_gpu_ecc_errors_uncorrected_aggregate" not in samples  # unknown
    assert _one(samples, "hwadvisor_gpu_retired_pages", gpu="0") == 3
    assert _one(samples, "hwadvisor_gpu_remapped_rows_pending", gpu="0") == 1
    assert _one(samples, "hwadvisor_gpu_remapped_rows_failed", gpu="0") == 0
    assert _one(samples, "hwadvisor_gpu_xid_errors_recent", gpu="0") == 3
    assert _one(samples, "hwadvisor_gpu_xid_error_recent", gpu="0", xid="79") == 2
    assert _one(samples, "hwadvisor_gpu_xid_error_recent", gpu="0", xid="13") == 1
    system = samples["hwadvisor_system_info"][0][0]
    assert system["vendor"] == "Supermicro" and system["bios_version"] == "3.4"
    assert "S123456" not in json.dumps(samples)  # the serial is no label
    if "network" in Profile.model_fields:
        assert samples["hwadvisor_network_interface_speed_bytes_per_second"] == [
            ({"interface": "eth0"}, 25000 * 1e6 / 8)
        ]
        assert _one(samples, "hwadvisor_network_interface_info", interface="eth0") == 1
        assert "00:11:22:33:44:55" not in json.dumps(samples)
        assert _one(samples, "hwadvisor_rdma_port_rate_bytes_per_second", port="1") == 25e9
        rdma = samples["hwadvisor_rdma_port_info"][0][0]
        assert rdma["rdma_device"] == "mlx5_0" and rdma["link_layer"] == "InfiniBand"


def test_a_profile_without_health_facts_has_no_health_families() -> None:
    samples = check_exposition(render_prometheus([load_profile(REPORTS / "single-gpu.json")]))
    assert not [n for n in samples if "ecc_errors" in n or "xid" in n or "remapped" in n]


# --------------------------------------------------------------------------------------------
# Writing the file


def test_replace_file_is_atomic(tmp_path: Path) -> None:
    target = tmp_path / "hwadvisor.prom"
    target.write_text("old\n")
    before = target.stat().st_ino
    replace_file(target, "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_ino != before  # renamed into place, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hwadvisor.prom"]


def test_replace_file_keeps_the_old_file_when_the_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.errors import OutputError

    target = tmp_path / "hwadvisor.prom"
    target.write_text("old\n")

    def broken(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("hwadvisor.render.jsonio.os.replace", broken)
    with pytest.raises(OutputError, match="No space left"):
        replace_file(target, "new\n")
    monkeypatch.undo()
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hwadvisor.prom"]


def test_replaced_file_is_readable_by_others(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        replace_file(tmp_path / "m.prom", "x 1\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m.prom").stat().st_mode) == 0o644


# --------------------------------------------------------------------------------------------
# The command


def test_cli_to_stdout(runner: CliRunner) -> None:
    paths = [REPORTS / "cpu-only.json", REPORTS / "single-gpu.json", V1]
    result = runner.invoke(app, ["export", "prometheus", *map(str, paths)])
    assert result.exit_code == 0, result.output
    samples = check_exposition(result.stdout)
    assert len(samples["hwadvisor_info"]) == 3
    assert result.stderr == ""  # nothing else: a cron job mails what it prints


def test_cli_out_replaces_atomically(runner: CliRunner, tmp_path: Path) -> None:
    target = tmp_path / "textfile" / "hwadvisor.prom"
    result = runner.invoke(
        app, ["export", "prometheus", str(REPORTS / "cpu-only.json"), "--out", str(target)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    first = target.read_text()
    assert 'hostname="build-7"' in first
    inode = target.stat().st_ino
    result = runner.invoke(
        app, ["export", "prometheus", str(REPORTS / "single-gpu.json"), "-o", str(target)]
    )
    assert result.exit_code == 0, result.output
    assert target.stat().st_ino != inode
    assert "build-7" not in target.read_text()
    check_exposition(target.read_text())
    assert [p.name for p in target.parent.iterdir()] == ["hwadvisor.prom"]


def test_cli_keeps_the_newest_profile_of_a_machine(runner: CliRunner, tmp_path: Path) -> None:
    data = json.loads((REPORTS / "cpu-only.json").read_text())
    older = tmp_path / "older.json"
    data["created_utc"] = "2020-01-01T00:00:00Z"
    data["cpu"]["usable_cpus"]["value"] = 1
    older.write_text(json.dumps(data))
    result = runner.invoke(
        app, ["export", "prometheus", str(older), str(REPORTS / "cpu-only.json")]
    )
    assert result.exit_code == 0, result.output
    samples = check_exposition(result.stdout)
    assert _one(samples, "hwadvisor_cpu_usable_cpus") == 2


def test_cli_warns_about_profiles_without_identity(runner: CliRunner) -> None:
    # single-gpu and eight-gpu were imported from nvidia-smi/collect_env: no hostname, no id.
    paths = [str(REPORTS / "single-gpu.json"), str(REPORTS / "eight-gpu.json")]
    result = runner.invoke(app, ["export", "prometheus", *paths])
    assert result.exit_code == 0, result.output
    assert "no hostname or machine id" in result.stderr
    assert len(check_exposition(result.stdout)["hwadvisor_info"]) == 1


def test_cli_redact(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HWADVISOR_REDACT_SALT", "test-salt")
    cpu, gpu = load_profile(REPORTS / "cpu-only.json"), load_profile(REPORTS / "single-gpu.json")
    secrets = [cpu.host.hostname.value, cpu.host.machine_id.value, gpu.gpus[0].uuid.value]
    plain = runner.invoke(app, ["export", "prometheus", str(REPORTS / "cpu-only.json")])
    assert plain.exit_code == 0 and 'hostname="build-7"' in plain.stdout  # default: not redacted
    paths = [str(REPORTS / "cpu-only.json"), str(REPORTS / "single-gpu.json")]
    result = runner.invoke(app, ["export", "prometheus", "--redact", *paths])
    assert result.exit_code == 0, result.output
    for secret in secrets:
        assert secret and secret not in result.stdout
    samples = check_exposition(result.stdout)
    info = [labels for labels, _ in samples["hwadvisor_info"] if "hostname" in labels]
    assert info[0]["hostname"].startswith("redacted-")
    assert info[0]["machine_id"].startswith("redacted-")
    assert samples["hwadvisor_gpu_info"][0][0]["UUID"].startswith("redacted-")
    again = runner.invoke(app, ["export", "prometheus", "--redact", *paths])
    assert again.stdout == result.stdout  # stable tokens: the series survive the next run


def _bad_inputs(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    yield "cannot be read", tmp_path / "missing.json"
    not_profile = tmp_path / "other.json"
    not_profile.write_text('{"hello": "world"}')
    yield "not an hwadvisor profile", not_profile
    future = tmp_path / "future.json"
    data = json.loads(V1.read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    future.write_text(json.dumps(data))
    yield "newer hwadvisor", future
    yield "is a directory", tmp_path


def test_cli_bad_input_is_exit_5_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out" / "hwadvisor.prom"
    for said, bad in list(_bad_inputs(tmp_path)):
        args = ["export", "prometheus", str(REPORTS / "cpu-only.json"), str(bad)]
        assert main([*args, "--out", str(target)]) == ExitStatus.INPUT_ERROR
        assert not target.exists()
        captured = capsys.readouterr()
        assert captured.out == ""
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hwadvisor: error: ") and said in lines[0]
        # An existing file stays as it was.
        target.parent.mkdir(exist_ok=True)
        target.write_text("old\n")
        assert main([*args, "--out", str(target)]) == ExitStatus.INPUT_ERROR
        assert target.read_text() == "old\n"
        target.unlink()
        assert "Traceback" not in capsys.readouterr().err


def test_cli_usage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["export", "prometheus"]) == ExitStatus.USAGE
    assert main(["export", "prometheus", str(V1), "--out", str(tmp_path)]) == ExitStatus.USAGE
    assert main(["export", "--help"]) == ExitStatus.OK
    assert "prometheus" in capsys.readouterr().out


def test_cli_unwritable_out_is_exit_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["export", "prometheus", str(V1), "--out", str(blocker / "x.prom")]) == 4
    assert capsys.readouterr().err.startswith("hwadvisor: error: ")


def test_replace_file_refuses_a_folder_and_leaves_it_alone(tmp_path: Path) -> None:
    from hwadvisor.errors import OutputError

    (tmp_path / "textfiles").mkdir()
    (tmp_path / "textfiles" / "other.prom").write_text("kept 1\n")
    with pytest.raises(OutputError, match="is a folder"):
        replace_file(tmp_path / "textfiles", "x 1\n")
    assert [p.name for p in (tmp_path / "textfiles").iterdir()] == ["other.prom"]
