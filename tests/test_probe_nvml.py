"""The NVML probe against the fake pynvml: failures at start, per field, per GPU, topology."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.importers.nvidia_smi_xml import COMPARABLE_FIELDS, parse_nvidia_smi_xml
from hwadvisor.model.facts import Fact, Source
from hwadvisor.model.profile import GpuInfo, NvmlStatus
from hwadvisor.probes.nvml import (
    GPU_LOST,
    NEEDS_ROOT,
    NO_VALUE,
    NOT_IN_BINDING,
    NOT_ON_GPU,
    NvmlReport,
    collect_nvml,
    nvml_child,
)
from tests.fakes import fake_pynvml as fk
from tests.fakes.fake_pynvml import FakeGpu, FakeMig, err, fake_from_nvidia_smi_xml

SMI = Path(__file__).parent / "fixtures" / "nvidia-smi"

H100 = {
    "name": "NVIDIA H100 80GB HBM3",
    "uuid": "GPU-00000000-0000-0000-0000-000000000000",
    "serial": "1650000000001",
    "pci_bus_id": "00000000:17:00.0",
    "architecture": "Hopper",
    "compute_capability": "9.0",
    "vram_total_bytes": 85520809984,
    "vram_free_bytes": 84987871232,
    "vram_used_bytes": 532938752,
    "multiprocessor_count": None,
    "power_limit_watts": 700.0,
    "power_draw_watts": 71.5,
    "sm_clock_mhz": 1980,
    "sm_clock_max_mhz": 1980,
    "memory_clock_mhz": 2619,
    "memory_clock_max_mhz": 2619,
    "pcie_generation": 5,
    "pcie_generation_max": 5,
    "pcie_width": 16,
    "pcie_width_max": 16,
    "temperature_c": 34,
    "utilization_percent": 0,
    "ecc_enabled": True,
    "persistence_mode": True,
    "mig_enabled": False,
    "vbios_version": "96.00.74.00.0D",
    "ecc_errors_corrected_volatile": 0,
    "ecc_errors_uncorrected_volatile": 0,
    "ecc_errors_uncorrected_aggregate": 0,
    # Hopper remaps rows: page retirement answers NotSupported.
    "retired_pages": None,
    "retired_pages_pending": None,
    "remapped_rows_uncorrectable": 0,
    "remapped_rows_pending": False,
    "remapped_rows_failed": False,
}


#: Filled in after the probes, not by NVML: from the catalog (hwadvisor.catalog.identify), and
#: from the kernel log (hwadvisor.probes.xid, by the pipeline).
CATALOG_FIELDS = ("catalog_name", "gpu_class", "xid_errors_recent")


def facts(gpu: GpuInfo) -> dict[str, Fact[Any]]:
    return {
        name: value for name, value in gpu if isinstance(value, Fact) and name not in CATALOG_FIELDS
    }


def values(gpu: GpuInfo) -> dict[str, Any]:
    return {name: f.value for name, f in facts(gpu).items()}


def bus(i: int) -> str:
    return f"00000000:{0x17 + i:02X}:00.0"


def gpus(n: int) -> list[FakeGpu]:
    return [FakeGpu(uuid=f"GPU-{i:08d}", bus_id=bus(i)) for i in range(n)]


# --------------------------------------------------------------------------------------------
# Start-up


def test_healthy_h100_every_field() -> None:
    fake = fk.make_fake_pynvml()
    report = collect_nvml(fake)
    assert isinstance(report, NvmlReport)
    assert report.nvml.status == NvmlStatus.OK
    assert report.nvml.message is None
    assert report.nvml.driver_version.value == "550.54.15"
    assert report.nvml.cuda_driver_version.value == "12.4"
    assert report.nvml.nvml_version.value == "12.550.54.15"
    assert report.nvml.device_count.value == 1
    (gpu,) = report.gpus
    assert (gpu.index, gpu.vendor, gpu.backend, gpu.lost) == (0, "nvidia", "cuda", False)
    assert values(gpu) == H100
    # NVML gives the whole-GPU SM count only for MIG devices: null, with why.
    assert gpu.multiprocessor_count.reason == NOT_ON_GPU
    assert all(f.source == Source.NVML for f in facts(gpu).values())
    assert report.topology == []
    assert (fake.init_calls, fake.shutdown_calls, fake.initialized) == (1, 1, 0)
    # MIG is off: its instances are never asked for.
    assert "nvmlDeviceGetMaxMigDeviceCount" not in fake.calls


@pytest.mark.parametrize(
    ("code", "status", "words"),
    [
        (
            fk.NVML_ERROR_LIBRARY_NOT_FOUND,
            NvmlStatus.LIBRARY_NOT_FOUND,
            "install the NVIDIA driver",
        ),
        (fk.NVML_ERROR_DRIVER_NOT_LOADED, NvmlStatus.DRIVER_NOT_LOADED, "nvidia kernel module"),
        (fk.NVML_ERROR_LIB_RM_VERSION_MISMATCH, NvmlStatus.VERSION_MISMATCH, "reboot or reload"),
        (fk.NVML_ERROR_NO_PERMISSION, NvmlStatus.NO_PERMISSION, "/dev/nvidia"),
        (fk.NVML_ERROR_UNKNOWN, NvmlStatus.ERROR, "Unknown Error"),
    ],
)
def test_init_failure_becomes_status_and_one_line_fix(
    code: int, status: NvmlStatus, words: str
) -> None:
    fake = fk.make_fake_pynvml(init_error=err(code))
    report = collect_nvml(fake)
    assert report.nvml.status == status
    message = report.nvml.message or ""
    assert words in message
    assert "continuing without NVIDIA GPUs" in message
    assert "\n" not in message
    assert report.gpus == []
    assert report.topology == []
    assert report.nvml.device_count.value is None
    assert report.nvml.device_count.reason
    # nvmlShutdown only follows a successful nvmlInit.
    assert (fake.init_calls, fake.shutdown_calls) == (1, 0)


def test_error_classes_mirror_the_binding() -> None:
    error = fk.NVMLError(fk.NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    assert type(error).__name__ == "NVMLError_LibRmVersionMismatch"
    assert isinstance(error, fk.NVMLError_LibRmVersionMismatch)  # type: ignore[attr-defined]
    assert error.value == fk.NVML_ERROR_LIB_RM_VERSION_MISMATCH
    assert fk.NVMLError_GpuIsLost().value == fk.NVML_ERROR_GPU_IS_LOST  # type: ignore[attr-defined]


def test_real_binding_errors_are_matched_by_code() -> None:
    pynvml = pytest.importorskip("pynvml")
    fake = fk.make_fake_pynvml()
    # A fake whose error class is the real one: matching must go by .value, not by class.
    fake.NVMLError = pynvml.NVMLError
    fake.init_error = pynvml.NVMLError(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    report = collect_nvml(fake)
    assert report.nvml.status == NvmlStatus.DRIVER_NOT_LOADED


def test_module_not_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    report = collect_nvml()
    assert report.nvml.status == NvmlStatus.NOT_INSTALLED
    assert "pip install nvidia-ml-py" in (report.nvml.message or "")
    assert report.gpus == []
    assert report.nvml.binding_version.value is None


def test_binding_without_nvmlinit() -> None:
    fake = fk.make_fake_pynvml(missing={"nvmlInit"})
    report = collect_nvml(fake)
    assert report.nvml.status == NvmlStatus.ERROR
    assert "nvidia-ml-py" in (report.nvml.message or "")
    assert report.gpus == []


def test_shutdown_runs_even_when_collection_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = fk.make_fake_pynvml()

    def boom() -> int:
        raise RuntimeError("unexpected")

    monkeypatch.setattr(fake, "nvmlDeviceGetCount", boom)
    with pytest.raises(RuntimeError):
        collect_nvml(fake)
    assert fake.shutdown_calls == 1


def test_device_count_failure_is_an_error_status() -> None:
    fake = fk.make_fake_pynvml(missing={"nvmlDeviceGetCount"})
    report = collect_nvml(fake)
    assert report.nvml.status == NvmlStatus.ERROR
    assert "could not count the GPUs" in (report.nvml.message or "")
    assert report.nvml.driver_version.value == "550.54.15"
    assert fake.shutdown_calls == 1


@pytest.mark.parametrize(
    ("raw", "text"), [(12040, "12.4"), (11080, "11.8"), (12090, "12.9"), (13000, "13.0")]
)
def test_cuda_driver_version(raw: int, text: str) -> None:
    report = collect_nvml(fk.make_fake_pynvml(cuda_driver_version=raw))
    assert report.nvml.cuda_driver_version.value == text


def test_cuda_driver_version_falls_back_to_v1() -> None:
    fake = fk.make_fake_pynvml(missing={"nvmlSystemGetCudaDriverVersion_v2"})
    assert collect_nvml(fake).nvml.cuda_driver_version.value == "12.4"
    assert "nvmlSystemGetCudaDriverVersion" in fake.calls


@pytest.mark.parametrize(
    ("missing", "called"),
    [
        (set(), "nvmlDeviceGetTemperatureV"),
        ({"nvmlDeviceGetTemperatureV"}, "nvmlDeviceGetTemperature"),
    ],
)
def test_temperature_prefers_the_versioned_call(missing: set[str], called: str) -> None:
    fake = fk.make_fake_pynvml(missing=missing)
    assert collect_nvml(fake).gpus[0].temperature_c.value == 34
    assert called in fake.calls


def test_temperature_falls_back_when_the_driver_lacks_the_versioned_call() -> None:
    fake = fk.make_fake_pynvml()

    def not_in_driver(handle: Any, sensor: int) -> int:
        raise fk.NVMLError(fk.NVML_ERROR_FUNCTION_NOT_FOUND)

    fake.nvmlDeviceGetTemperatureV = not_in_driver
    assert collect_nvml(fake).gpus[0].temperature_c.value == 34
    assert "nvmlDeviceGetTemperature" in fake.calls


# --------------------------------------------------------------------------------------------
# The binding's version


def test_binding_version_of_the_installed_nvidia_ml_py() -> None:
    pynvml = pytest.importorskip("pynvml")
    report = collect_nvml(pynvml)  # fails to start without a driver; the version is still read
    assert report.nvml.binding_version.value == importlib.metadata.version("nvidia-ml-py")


def test_binding_version_unknown_for_a_stand_in() -> None:
    report = collect_nvml(fk.make_fake_pynvml())
    assert report.nvml.binding_version.value is None
    assert "not an installed module" in (report.nvml.binding_version.reason or "")


def test_binding_version_unknown_for_a_pynvml_from_elsewhere(tmp_path: Path) -> None:
    fake = fk.make_fake_pynvml()
    fake.__file__ = str(tmp_path / "pynvml.py")
    (tmp_path / "pynvml.py").write_text("")
    binding = collect_nvml(fake).nvml.binding_version
    assert binding.value is None
    assert "not nvidia-ml-py" in (binding.reason or "")


# --------------------------------------------------------------------------------------------
# One field at a time


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ({"serial": err(fk.NVML_ERROR_NOT_SUPPORTED)}, "serial", NOT_ON_GPU),
        (
            {"power_usage_mw": err(fk.NVML_ERROR_FUNCTION_NOT_FOUND)},
            "power_draw_watts",
            NOT_IN_BINDING,
        ),
        ({"temperature_c": err(fk.NVML_ERROR_NO_PERMISSION)}, "temperature_c", NEEDS_ROOT),
        (
            {"utilization": err(fk.NVML_ERROR_UNKNOWN)},
            "utilization_percent",
            "NVML error in nvmlDeviceGetUtilizationRates: Unknown Error",
        ),
        ({"ecc_mode": err(fk.NVML_ERROR_NOT_SUPPORTED)}, "ecc_enabled", NOT_ON_GPU),
        ({"temperature_c": 0xFFFFFFFF}, "temperature_c", NO_VALUE),
        ({"architecture": 99}, "architecture", "architecture code 99 is unknown to hwadvisor"),
        (
            {"cuda_compute_capability": "garbage"},
            "compute_capability",
            "unexpected value from NVML: 'garbage'",
        ),
        ({"bus_id": "nonsense"}, "pci_bus_id", "unexpected value from NVML"),
    ],
)
def test_one_bad_field_hides_nothing_else(spec: dict[str, Any], field: str, reason: str) -> None:
    report = collect_nvml(fk.make_fake_pynvml([FakeGpu(**spec)]))
    (gpu,) = report.gpus
    got = facts(gpu)
    assert got[field].value is None
    assert (got[field].reason or "").startswith(reason)
    expected = {k: v for k, v in H100.items() if k != field}
    assert {k: v for k, v in values(gpu).items() if k != field} == expected
    assert not gpu.lost


@pytest.mark.parametrize(
    ("missing", "field"),
    [
        ("nvmlDeviceGetArchitecture", "architecture"),
        ("nvmlDeviceGetCudaComputeCapability", "compute_capability"),
        ("nvmlDeviceGetMaxPcieLinkWidth", "pcie_width_max"),
    ],
)
def test_function_missing_from_binding(missing: str, field: str) -> None:
    report = collect_nvml(fk.make_fake_pynvml(missing={missing}))
    (gpu,) = report.gpus
    assert facts(gpu)[field].value is None
    assert facts(gpu)[field].reason == f"{NOT_IN_BINDING} ({missing} missing)"
    assert gpu.name.value == H100["name"]
    assert gpu.temperature_c.value == H100["temperature_c"]


def test_only_the_max_sm_clock_missing() -> None:
    gpu_spec = FakeGpu(max_clocks_mhz={fk.NVML_CLOCK_MEM: 2619})
    (gpu,) = collect_nvml(fk.make_fake_pynvml([gpu_spec])).gpus
    assert gpu.sm_clock_max_mhz.value is None
    assert gpu.sm_clock_max_mhz.reason == NOT_ON_GPU
    assert gpu.memory_clock_max_mhz.value == 2619
    assert gpu.sm_clock_mhz.value == 1980


# --------------------------------------------------------------------------------------------
# Lost GPUs


def test_one_lost_gpu_among_three() -> None:
    specs = gpus(3)
    specs[1].handle_error = err(fk.NVML_ERROR_GPU_IS_LOST)
    report = collect_nvml(fk.make_fake_pynvml(specs))
    assert report.nvml.status == NvmlStatus.OK
    assert [g.index for g in report.gpus] == [0, 1, 2]
    assert [g.lost for g in report.gpus] == [False, True, False]
    for i in (0, 2):
        got = values(report.gpus[i])
        assert got == {**H100, "uuid": f"GPU-{i:08d}", "pci_bus_id": bus(i)}
    lost = report.gpus[1]
    assert all(f.value is None and f.reason == GPU_LOST for f in facts(lost).values())
    links = {(link.gpu_a, link.gpu_b): link for link in report.topology}
    assert set(links) == {(0, 1), (0, 2), (1, 2)}
    assert links[(0, 2)].link == "system"
    assert links[(0, 1)].link == links[(1, 2)].link == "unknown"
    assert "GPU 1" in (links[(0, 1)].reason or "")


def test_gpu_lost_midway_keeps_what_was_read() -> None:
    specs = gpus(2)
    specs[1].memory = err(fk.NVML_ERROR_GPU_IS_LOST)
    report = collect_nvml(fk.make_fake_pynvml(specs))
    lost = report.gpus[1]
    assert lost.lost
    assert lost.name.value == H100["name"]  # read before it fell off the bus
    assert lost.vram_total_bytes.reason == GPU_LOST
    assert lost.temperature_c.value is None
    assert lost.temperature_c.reason == GPU_LOST
    assert values(report.gpus[0])["temperature_c"] == 34


# --------------------------------------------------------------------------------------------
# Strings


@pytest.mark.parametrize(
    ("raw", "decode_strings", "name"),
    [
        ("Tesla T4", True, "Tesla T4"),
        (b"Tesla T4", False, "Tesla T4"),
        (b"Tesla T4", True, "Tesla T4"),
        # WSL: invalid UTF-8. The strict binding raises UnicodeDecodeError; the probe retries
        # the undecorated call and decodes with replacement.
        (b"NVIDIA \xff\xfe GPU", True, "NVIDIA \ufffd\ufffd GPU"),
        (b"NVIDIA \xff\xfe GPU", False, "NVIDIA \ufffd\ufffd GPU"),
    ],
)
def test_names_as_bytes_str_and_invalid_utf8(raw: Any, decode_strings: bool, name: str) -> None:
    fake = fk.make_fake_pynvml([FakeGpu(name=raw)], decode_strings=decode_strings)
    (gpu,) = collect_nvml(fake).gpus
    assert gpu.name.value == name
    assert gpu.uuid.value == H100["uuid"]


def test_the_fake_decodes_strictly_like_the_binding() -> None:
    fake = fk.make_fake_pynvml([FakeGpu(name=b"\xff")])
    fake.nvmlInit()
    handle = fake.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(UnicodeDecodeError):
        fake.nvmlDeviceGetName(handle)
    fake.nvmlShutdown()


def test_hostile_name_is_kept_as_data() -> None:
    hostile = "<script>alert(1)</script>"
    report = collect_nvml(fk.make_fake_pynvml([FakeGpu(name=hostile)]))
    assert report.gpus[0].name.value == hostile
    assert json.loads(report.model_dump_json())["gpus"][0]["name"]["value"] == hostile


# --------------------------------------------------------------------------------------------
# MIG


def test_mig_instances() -> None:
    spec = FakeGpu(
        mig_mode=(fk.NVML_DEVICE_MIG_ENABLE, fk.NVML_DEVICE_MIG_ENABLE),
        utilization=err(fk.NVML_ERROR_NOT_SUPPORTED),
        mig_devices={
            0: FakeMig(
                uuid="MIG-aaaa",
                name="NVIDIA H100 MIG 3g.40gb",
                memory_total=40 * 1024**3,
                gpu_instance_id=1,
                multiprocessor_count=60,
            ),
            # Slots 1-2 empty: the GPU is only partly carved up.
            3: FakeMig(
                uuid=b"MIG-bbbb", memory_total=err(fk.NVML_ERROR_NO_PERMISSION), gpu_instance_id=9
            ),
        },
    )
    (gpu,) = collect_nvml(fk.make_fake_pynvml([spec])).gpus
    assert gpu.mig_enabled.value is True
    assert gpu.utilization_percent.reason == NOT_ON_GPU
    assert [m.index for m in gpu.mig_instances] == [0, 1]
    first, second = gpu.mig_instances
    assert first.uuid.value == "MIG-aaaa"
    assert first.name.value == "NVIDIA H100 MIG 3g.40gb"
    assert first.memory_total_bytes.value == 40 * 1024**3
    assert first.gpu_instance_id.value == 1
    assert first.compute_instance_id.value == 0
    assert first.multiprocessor_count.value == 60
    assert second.uuid.value == "MIG-bbbb"
    assert second.memory_total_bytes.value is None
    assert second.memory_total_bytes.reason == NEEDS_ROOT
    assert second.gpu_instance_id.value == 9


def test_mig_mode_unsupported_is_null_not_false() -> None:
    spec = FakeGpu(mig_mode=err(fk.NVML_ERROR_NOT_SUPPORTED))
    (gpu,) = collect_nvml(fk.make_fake_pynvml([spec])).gpus
    assert gpu.mig_enabled.value is None
    assert gpu.mig_enabled.reason == NOT_ON_GPU
    assert gpu.mig_instances == []


# --------------------------------------------------------------------------------------------
# Topology


def test_four_gpus_all_to_all_nvlink() -> None:
    specs = gpus(4)
    # Each GPU: 4 links to each of the 3 others (links 0-11), as on an HGX board.
    for i, spec in enumerate(specs):
        others = [j for j in range(4) if j != i]
        spec.nvlinks = {link: bus(others[link // 4]) for link in range(12)}
    fake = fk.make_fake_pynvml(specs, default_topology=fk.NVML_TOPOLOGY_NODE)
    report = collect_nvml(fake)
    assert len(report.topology) == 6
    for link in report.topology:
        assert (link.link, link.nvlink_count, link.pcie_link) == ("nvlink", 4, "numa_node")
        assert link.reason is None


def test_nvlink_pairs_and_pcie_between_them() -> None:
    specs = gpus(4)
    specs[0].nvlinks = {0: bus(1), 1: bus(1)}
    specs[1].nvlinks = {0: bus(0), 1: bus(0)}
    specs[2].nvlinks = {5: bus(3)}
    specs[3].nvlinks = {5: bus(2)}
    topology = {
        (0, 1): fk.NVML_TOPOLOGY_SINGLE,
        (2, 3): fk.NVML_TOPOLOGY_SINGLE,
        (0, 2): fk.NVML_TOPOLOGY_HOSTBRIDGE,
        (0, 3): fk.NVML_TOPOLOGY_HOSTBRIDGE,
        (1, 2): fk.NVML_TOPOLOGY_HOSTBRIDGE,
        (1, 3): fk.NVML_TOPOLOGY_HOSTBRIDGE,
    }
    report = collect_nvml(fk.make_fake_pynvml(specs, topology=topology))
    links = {
        (lk.gpu_a, lk.gpu_b): (lk.link, lk.nvlink_count, lk.pcie_link) for lk in report.topology
    }
    assert links == {
        (0, 1): ("nvlink", 2, "pcie_switch"),
        (2, 3): ("nvlink", 1, "pcie_switch"),
        (0, 2): ("host_bridge", 0, "host_bridge"),
        (0, 3): ("host_bridge", 0, "host_bridge"),
        (1, 2): ("host_bridge", 0, "host_bridge"),
        (1, 3): ("host_bridge", 0, "host_bridge"),
    }


@pytest.mark.parametrize(
    ("level", "name"),
    [
        (fk.NVML_TOPOLOGY_INTERNAL, "same_board"),
        (fk.NVML_TOPOLOGY_SINGLE, "pcie_switch"),
        (fk.NVML_TOPOLOGY_MULTIPLE, "pcie_switches"),
        (fk.NVML_TOPOLOGY_HOSTBRIDGE, "host_bridge"),
        (fk.NVML_TOPOLOGY_NODE, "numa_node"),
        (fk.NVML_TOPOLOGY_SYSTEM, "system"),
    ],
)
def test_pcie_topology_levels(level: int, name: str) -> None:
    report = collect_nvml(fk.make_fake_pynvml(gpus(2), default_topology=level))
    (link,) = report.topology
    assert (link.gpu_a, link.gpu_b, link.link, link.nvlink_count) == (0, 1, name, 0)
    assert link.pcie_link == name
    assert link.reason is None


def test_topology_failures_are_guarded() -> None:
    specs = gpus(3)
    specs[0].nvlink_error = err(fk.NVML_ERROR_UNKNOWN)
    topology = {(1, 2): err(fk.NVML_ERROR_NOT_SUPPORTED)}
    report = collect_nvml(fk.make_fake_pynvml(specs, topology=topology))
    links = {(lk.gpu_a, lk.gpu_b): lk for lk in report.topology}
    assert links[(0, 1)].link == "system"
    assert "NVLink of GPU 0 unknown" in (links[(0, 1)].reason or "")
    assert links[(1, 2)].link == "unknown"
    assert links[(1, 2)].pcie_link is None
    assert "PCIe path unknown" in (links[(1, 2)].reason or "")
    assert all(not g.lost for g in report.gpus)


def test_single_gpu_has_no_topology_calls() -> None:
    fake = fk.make_fake_pynvml()
    assert collect_nvml(fake).topology == []
    assert "nvmlDeviceGetTopologyCommonAncestor" not in fake.calls
    assert "nvmlDeviceGetNvLinkState" not in fake.calls


# --------------------------------------------------------------------------------------------
# The child entry point


def test_nvml_child_returns_json_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fk.make_fake_pynvml(gpus(2)))
    data = nvml_child()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["nvml"]["status"] == "ok"
    assert [g["pci_bus_id"]["value"] for g in data["gpus"]] == [bus(0), bus(1)]
    assert NvmlReport.model_validate(data).gpus[1].uuid.value == "GPU-00000001"


# --------------------------------------------------------------------------------------------
# Recorded nvidia-smi -> fake -> probe: the probe reproduces what nvidia-smi showed


@pytest.mark.parametrize("name", sorted(p.name for p in SMI.glob("*.xml")))
def test_xml_round_trip_through_the_fake(name: str) -> None:
    text = (SMI / name).read_text(encoding="utf-8")
    info, expected = parse_nvidia_smi_xml(text)
    report = collect_nvml(fake_from_nvidia_smi_xml(text))
    assert report.nvml.status == NvmlStatus.OK
    assert report.nvml.driver_version.value == info.driver_version.value
    assert report.nvml.cuda_driver_version.value == info.cuda_driver_version.value
    assert len(report.gpus) == len(expected)
    for got, want in zip(report.gpus, expected, strict=True):
        assert values(got) == values(want), name
        assert len(got.mig_instances) == len(want.mig_instances)
        for mig_got, mig_want in zip(got.mig_instances, want.mig_instances, strict=True):
            assert mig_got.memory_total_bytes.value == mig_want.memory_total_bytes.value
            assert mig_got.gpu_instance_id.value == mig_want.gpu_instance_id.value
            assert mig_got.multiprocessor_count.value == mig_want.multiprocessor_count.value


def test_round_trip_is_not_vacuous() -> None:
    text = (SMI / "telegraf-dual-rtx-a5000.xml").read_text(encoding="utf-8")
    report = collect_nvml(fake_from_nvidia_smi_xml(text))
    assert [g.power_draw_watts.value for g in report.gpus] == [6.41, 13.6]
    assert report.gpus[1].pci_bus_id.value == "00000000:C1:00.0"
    assert report.topology[0].link == "system"


# --------------------------------------------------------------------------------------------
# On a real GPU machine: the probe agrees with nvidia-smi


@pytest.mark.gpu
def test_probe_matches_nvidia_smi_on_this_machine() -> None:
    smi = shutil.which("nvidia-smi")
    assert smi is not None
    text = subprocess.run(
        [smi, "-q", "-x"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    info, expected = parse_nvidia_smi_xml(text)
    report = collect_nvml()
    assert report.nvml.status == NvmlStatus.OK, report.nvml.message
    assert report.nvml.driver_version.value == info.driver_version.value
    assert report.nvml.cuda_driver_version.value == info.cuda_driver_version.value
    assert len(report.gpus) == len(expected)
    for got, want in zip(report.gpus, expected, strict=True):
        g, w = values(got), values(want)
        for field in COMPARABLE_FIELDS:
            if w[field] is None:
                continue  # nvidia-smi could not show it; nothing to compare
            if isinstance(w[field], float):
                assert g[field] == pytest.approx(w[field], abs=0.5), field
            else:
                assert g[field] == w[field], field
