"""GPU health facts: VBIOS, ECC error counts, retired pages and remapped rows, from NVML (the fake
pynvml) and from nvidia-smi output; and the readiness findings they (and Xid errors) give."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.importers.detect import import_text
from hwadvisor.importers.nvidia_smi_xml import parse_nvidia_smi_xml
from hwadvisor.model.facts import Fact, Source, fact
from hwadvisor.model.profile import GpuInfo, Profile, Severity, ToolInfo
from hwadvisor.probes.nvml import (
    ECC_OFF,
    GPU_LOST,
    NEEDS_ROOT,
    NO_VALUE,
    NOT_IN_BINDING,
    NOT_ON_GPU,
    REMAP_NOT_ON_GPU,
    RETIRE_NOT_ON_GPU,
    collect_nvml,
)
from hwadvisor.readiness import XID_MEANINGS, assess
from hwadvisor.render.summaries import gpu_health
from tests.fakes import fake_pynvml as fk
from tests.fakes.fake_pynvml import FakeGpu, err, fake_from_nvidia_smi_xml

SMI = Path(__file__).parent / "fixtures" / "nvidia-smi"

HEALTH = (
    "vbios_version",
    "ecc_errors_corrected_volatile",
    "ecc_errors_uncorrected_volatile",
    "ecc_errors_uncorrected_aggregate",
    "retired_pages",
    "retired_pages_pending",
    "remapped_rows_uncorrectable",
    "remapped_rows_pending",
    "remapped_rows_failed",
)

CORR, UNC = fk.NVML_MEMORY_ERROR_TYPE_CORRECTED, fk.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
VOL, AGG = fk.NVML_VOLATILE_ECC, fk.NVML_AGGREGATE_ECC
SBE = fk.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
DBE = fk.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR

HOPPER = {
    "vbios_version": "96.00.74.00.0D",
    "ecc_errors_corrected_volatile": 0,
    "ecc_errors_uncorrected_volatile": 0,
    "ecc_errors_uncorrected_aggregate": 0,
    "retired_pages": None,
    "retired_pages_pending": None,
    "remapped_rows_uncorrectable": 0,
    "remapped_rows_pending": False,
    "remapped_rows_failed": False,
}


def health(gpu: GpuInfo) -> dict[str, Any]:
    return {name: getattr(gpu, name).value for name in HEALTH}


def one(**spec: Any) -> GpuInfo:
    (gpu,) = collect_nvml(fk.make_fake_pynvml([FakeGpu(**spec)])).gpus
    return gpu


def volta(**spec: Any) -> dict[str, Any]:
    """A V100: page retirement, no row remapping."""
    base: dict[str, Any] = {
        "name": "Tesla V100-SXM2-32GB",
        "architecture": fk.NVML_DEVICE_ARCH_VOLTA,
        "cuda_compute_capability": (7, 0),
        "vbios_version": "88.00.80.00.01",
        "retired_pages": {SBE: [0x1F2A000, 0x3C10000], DBE: [0x7700000]},
        "retired_pages_pending": fk.NVML_FEATURE_DISABLED,
        "remapped_rows": err(fk.NVML_ERROR_NOT_SUPPORTED),
    }
    return {**base, **spec}


# --------------------------------------------------------------------------------------------
# NVML


def test_hopper_remaps_rows_and_retires_no_pages() -> None:
    gpu = one()
    assert health(gpu) == HOPPER
    assert gpu.retired_pages.reason == RETIRE_NOT_ON_GPU
    assert gpu.retired_pages_pending.reason == RETIRE_NOT_ON_GPU
    assert all(getattr(gpu, f).source == Source.NVML for f in HEALTH)


def test_volta_retires_pages_and_remaps_no_rows() -> None:
    gpu = one(**volta())
    assert gpu.retired_pages.value == 3  # two single-bit causes, one double-bit
    assert gpu.retired_pages_pending.value is False
    for field in ("remapped_rows_uncorrectable", "remapped_rows_pending", "remapped_rows_failed"):
        f = getattr(gpu, field)
        assert f.value is None
        assert f.reason == "not supported on this GPU (page retirement applies)" == REMAP_NOT_ON_GPU
    assert gpu.vbios_version.value == "88.00.80.00.01"


def test_retirement_pending() -> None:
    gpu = one(**volta(retired_pages_pending=fk.NVML_FEATURE_ENABLED))
    assert gpu.retired_pages_pending.value is True


def test_remapped_rows_with_errors_pending_and_failed() -> None:
    gpu = one(remapped_rows=(12, 3, 1, 1))
    assert gpu.remapped_rows_uncorrectable.value == 3
    assert gpu.remapped_rows_pending.value is True
    assert gpu.remapped_rows_failed.value is True


def test_ecc_counters_by_type_and_counter() -> None:
    counts = {(CORR, VOL): 17, (UNC, VOL): 2, (UNC, AGG): 5, (CORR, AGG): 400}
    gpu = one(ecc_errors=counts)
    assert gpu.ecc_errors_corrected_volatile.value == 17
    assert gpu.ecc_errors_uncorrected_volatile.value == 2
    assert gpu.ecc_errors_uncorrected_aggregate.value == 5


def test_consumer_card_has_no_ecc_counters_and_says_so() -> None:
    gpu = one(
        name="NVIDIA GeForce RTX 4090",
        architecture=fk.NVML_DEVICE_ARCH_ADA,
        ecc_mode=err(fk.NVML_ERROR_NOT_SUPPORTED),
        ecc_errors=err(fk.NVML_ERROR_NOT_SUPPORTED),
        vbios_version="95.02.3C.40.C3",
    )
    for field in HEALTH[1:4]:
        assert getattr(gpu, field).value is None
        assert getattr(gpu, field).reason == NOT_ON_GPU
    # The rest of the card is still read.
    assert gpu.vbios_version.value == "95.02.3C.40.C3"
    assert gpu.remapped_rows_uncorrectable.value == 0
    assert gpu.name.value == "NVIDIA GeForce RTX 4090"


def test_ecc_off_on_a_datacenter_gpu_says_why_there_are_no_counts() -> None:
    gpu = one(
        ecc_mode=(fk.NVML_FEATURE_DISABLED, fk.NVML_FEATURE_DISABLED),
        ecc_errors=err(fk.NVML_ERROR_NOT_SUPPORTED),
    )
    assert gpu.ecc_enabled.value is False
    assert gpu.ecc_errors_uncorrected_volatile.reason == ECC_OFF == "ECC is disabled on this GPU"


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        (
            {"vbios_version": err(fk.NVML_ERROR_UNKNOWN)},
            "vbios_version",
            "NVML error in nvmlDeviceGetVbiosVersion: Unknown Error",
        ),
        (
            {"ecc_errors": {(CORR, VOL): 0, (UNC, VOL): err(fk.NVML_ERROR_NO_PERMISSION)}},
            "ecc_errors_uncorrected_volatile",
            NEEDS_ROOT,
        ),
        (
            {"ecc_errors": {(CORR, VOL): 0, (UNC, VOL): 0, (UNC, AGG): 0xFFFFFFFFFFFFFFFF}},
            "ecc_errors_uncorrected_aggregate",
            NO_VALUE,
        ),
        ({"remapped_rows": (0, "x", 0, 0)}, "remapped_rows_uncorrectable", "unexpected value"),
        (
            {"retired_pages_pending": err(fk.NVML_ERROR_UNKNOWN)},
            "retired_pages_pending",
            "NVML error in nvmlDeviceGetRetiredPagesPendingStatus: Unknown Error",
        ),
    ],
)
def test_one_bad_health_field_hides_nothing_else(
    spec: dict[str, Any], field: str, reason: str
) -> None:
    gpu = one(**spec)
    assert getattr(gpu, field).value is None
    assert (getattr(gpu, field).reason or "").startswith(reason)
    others = {k: v for k, v in health(gpu).items() if k != field}
    expected = {k: v for k, v in HOPPER.items() if k != field}
    if field.startswith("ecc_errors"):
        # The counters given in the spec (all 0 here) are read; one missing pair is unsupported.
        expected = {k: v for k, v in expected.items() if not k.startswith("ecc_errors")}
        others = {k: v for k, v in others.items() if not k.startswith("ecc_errors")}
    assert others == expected
    assert gpu.name.value == "NVIDIA H100 80GB HBM3"
    assert gpu.temperature_c.value == 34
    assert not gpu.lost


def test_one_retirement_cause_failing_nulls_the_total() -> None:
    gpu = one(**volta(retired_pages={SBE: [1, 2], DBE: err(fk.NVML_ERROR_UNKNOWN)}))
    assert gpu.retired_pages.value is None  # half a count would read as a whole one
    assert gpu.retired_pages.reason == "NVML error in nvmlDeviceGetRetiredPages: Unknown Error"
    assert gpu.retired_pages_pending.value is False


@pytest.mark.parametrize(
    ("missing", "fields"),
    [
        ("nvmlDeviceGetVbiosVersion", ("vbios_version",)),
        ("nvmlDeviceGetTotalEccErrors", HEALTH[1:4]),
        (
            "nvmlDeviceGetRemappedRows",
            ("remapped_rows_uncorrectable", "remapped_rows_pending", "remapped_rows_failed"),
        ),
        ("nvmlDeviceGetRetiredPagesPendingStatus", ("retired_pages_pending",)),
    ],
)
def test_function_missing_from_an_old_binding(missing: str, fields: tuple[str, ...]) -> None:
    (gpu,) = collect_nvml(fk.make_fake_pynvml(missing={missing})).gpus
    for field in fields:
        assert getattr(gpu, field).reason == f"{NOT_IN_BINDING} ({missing} missing)"
    assert gpu.pci_bus_id.value == "00000000:17:00.0"
    assert gpu.ecc_enabled.value is True


def test_vbios_as_bytes_from_an_old_binding() -> None:
    fake = fk.make_fake_pynvml([FakeGpu(vbios_version=b"86.00.4D.00.04")], decode_strings=False)
    (gpu,) = collect_nvml(fake).gpus
    assert gpu.vbios_version.value == "86.00.4D.00.04"


def test_gpu_lost_during_the_health_queries() -> None:
    specs = [
        FakeGpu(uuid="GPU-0", bus_id="00000000:17:00.0"),
        FakeGpu(
            uuid="GPU-1",
            bus_id="00000000:18:00.0",
            remapped_rows=err(fk.NVML_ERROR_GPU_IS_LOST),
        ),
    ]
    report = collect_nvml(fk.make_fake_pynvml(specs))
    ok, lost = report.gpus
    assert not ok.lost and health(ok) == HOPPER
    assert lost.lost
    # Read before it fell off the bus:
    assert lost.vbios_version.value == "96.00.74.00.0D"
    assert lost.ecc_errors_uncorrected_volatile.value == 0
    # Not read after:
    for field in ("remapped_rows_uncorrectable", "retired_pages", "retired_pages_pending"):
        assert getattr(lost, field).reason == GPU_LOST, field


# --------------------------------------------------------------------------------------------
# nvidia-smi -q -x and -q text


def _xml(name: str) -> list[GpuInfo]:
    return parse_nvidia_smi_xml((SMI / name).read_text(encoding="utf-8"))[1]


def test_xml_a100_80gb() -> None:
    (gpu,) = _xml("telegraf-a100-sxm4-80gb-mig.xml")
    assert health(gpu) == {
        "vbios_version": "92.00.36.00.02",
        "ecc_errors_corrected_volatile": 0,
        "ecc_errors_uncorrected_volatile": 0,
        "ecc_errors_uncorrected_aggregate": 0,
        "retired_pages": None,
        "retired_pages_pending": None,
        "remapped_rows_uncorrectable": None,
        "remapped_rows_pending": None,
        "remapped_rows_failed": None,
    }
    assert gpu.retired_pages.reason == "nvidia-smi reports N/A"
    # <remapped_rows>N/A</remapped_rows>: the section's own reason.
    assert gpu.remapped_rows_pending.reason == "nvidia-smi reports N/A"
    assert gpu.xid_errors_recent.reason == (
        "nvidia-smi does not show Xid errors (the kernel log does)"
    )


def test_xml_a100_40gb_volatile_na_aggregate_zero() -> None:
    (gpu,) = _xml("netdata-a100-sxm4-40gb-mig.xml")
    assert gpu.vbios_version.value == "92.00.45.00.03"
    assert gpu.ecc_errors_uncorrected_volatile.value is None
    assert gpu.ecc_errors_uncorrected_volatile.reason == "nvidia-smi reports N/A"
    assert gpu.ecc_errors_uncorrected_aggregate.value == 0


def test_xml_dual_rtx_a5000_row_remapper() -> None:
    for gpu in _xml("telegraf-dual-rtx-a5000.xml"):
        assert gpu.vbios_version.value == "94.02.6D.00.0D"
        assert gpu.ecc_enabled.value is False
        assert gpu.remapped_rows_uncorrectable.value == 0
        assert gpu.remapped_rows_pending.value is False
        assert gpu.remapped_rows_failed.value is False
        assert gpu.ecc_errors_corrected_volatile.reason == "nvidia-smi reports N/A"


def test_xml_health_round_trips_through_the_fake() -> None:
    text = (SMI / "telegraf-dual-rtx-a5000.xml").read_text(encoding="utf-8")
    report = collect_nvml(fake_from_nvidia_smi_xml(text))
    assert [g.vbios_version.value for g in report.gpus] == ["94.02.6D.00.0D"] * 2
    assert [g.remapped_rows_pending.value for g in report.gpus] == [False, False]


def _wrap(body: str) -> str:
    return (
        '<?xml version="1.0" ?><nvidia_smi_log><driver_version>418.87.01</driver_version>'
        f'<attached_gpus>1</attached_gpus><gpu id="00000000:3B:00.0">{body}</gpu>'
        "</nvidia_smi_log>"
    )


def test_xml_of_an_old_driver_counts_by_bit() -> None:
    """Drivers before R450: single-bit/double-bit totals, retired pages with a pending flag."""
    ecc = "".join(
        f"<{counter}><single_bit><device_memory>{sbe}</device_memory><total>{sbe}</total>"
        f"</single_bit><double_bit><device_memory>{dbe}</device_memory><total>{dbe}</total>"
        f"</double_bit></{counter}>"
        for counter, sbe, dbe in (("volatile", 4, 1), ("aggregate", 31, 2))
    )
    body = (
        "<product_name>Tesla V100-SXM2-32GB</product_name>"
        "<vbios_version>88.00.80.00.01</vbios_version>"
        f"<ecc_errors>{ecc}</ecc_errors>"
        "<retired_pages><multiple_single_bit_retirement><retired_count>2</retired_count>"
        "</multiple_single_bit_retirement><double_bit_retirement><retired_count>1"
        "</retired_count></double_bit_retirement><pending_retirement>Yes</pending_retirement>"
        "</retired_pages>"
    )
    _, (gpu,) = parse_nvidia_smi_xml(_wrap(body))
    assert health(gpu) == {
        "vbios_version": "88.00.80.00.01",
        "ecc_errors_corrected_volatile": 4,
        "ecc_errors_uncorrected_volatile": 1,
        "ecc_errors_uncorrected_aggregate": 2,
        "retired_pages": 3,
        "retired_pages_pending": True,
        "remapped_rows_uncorrectable": None,
        "remapped_rows_pending": None,
        "remapped_rows_failed": None,
    }


def test_xml_sram_and_dram_are_added_parity_and_secded_too() -> None:
    body = (
        "<ecc_errors><volatile><sram_correctable>3</sram_correctable>"
        "<sram_uncorrectable_parity>1</sram_uncorrectable_parity>"
        "<sram_uncorrectable_secded>2</sram_uncorrectable_secded>"
        "<dram_correctable>10</dram_correctable><dram_uncorrectable>4</dram_uncorrectable>"
        "</volatile><aggregate><sram_correctable>N/A</sram_correctable>"
        "<sram_uncorrectable>N/A</sram_uncorrectable><dram_correctable>N/A</dram_correctable>"
        "<dram_uncorrectable>N/A</dram_uncorrectable></aggregate></ecc_errors>"
    )
    _, (gpu,) = parse_nvidia_smi_xml(_wrap(body))
    assert gpu.ecc_errors_corrected_volatile.value == 13
    assert gpu.ecc_errors_uncorrected_volatile.value == 7
    assert gpu.ecc_errors_uncorrected_aggregate.value is None
    assert gpu.ecc_errors_uncorrected_aggregate.reason == "nvidia-smi reports N/A"


SMI_Q_HEALTH = """
==============NVSMI LOG==============

Timestamp                                 : Tue Nov 21 10:02:03 2023
Driver Version                            : 535.104.05
CUDA Version                              : 12.2

Attached GPUs                             : 1
GPU 00000000:B1:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    VBIOS Version                         : 92.00.45.00.05
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 12
            DRAM Uncorrectable            : 2
        Aggregate
            SRAM Correctable              : 0
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 40
            DRAM Uncorrectable            : 3
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 2
        Pending                           : Yes
        Remapping Failure Occurred        : No
        Bank Remap Availability Histogram
            Max                           : 638 bank(s)
            High                          : 2 bank(s)
            Partial                       : 0 bank(s)
            Low                           : 0 bank(s)
            None                          : 0 bank(s)
    FB Memory Usage
        Total                             : 81920 MiB
"""


def test_smi_q_text_health_sections() -> None:
    profile = import_text(SMI_Q_HEALTH, "smi-q.txt")
    (gpu,) = profile.gpus
    assert health(gpu) == {
        "vbios_version": "92.00.45.00.05",
        "ecc_errors_corrected_volatile": 12,
        "ecc_errors_uncorrected_volatile": 2,
        "ecc_errors_uncorrected_aggregate": 3,
        "retired_pages": None,
        "retired_pages_pending": None,
        "remapped_rows_uncorrectable": 2,
        "remapped_rows_pending": True,
        "remapped_rows_failed": False,
    }
    # What the paste says is what the import finds wrong.
    ids = {f.id for f in profile.findings}
    assert {"gpu-ecc-uncorrected", "gpu-memory-repair-pending"} <= ids
    assert "gpu-row-remap-failed" not in ids


def test_smi_q_text_of_an_old_driver_retired_pages() -> None:
    text = SMI_Q_HEALTH.replace(
        """    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
""",
        """    Retired Pages
        Single Bit ECC                    : 5
        Double Bit ECC                    : 1
        Pending                           : Yes
""",
    )
    (gpu,) = import_text(text, "smi-q.txt").gpus
    assert gpu.retired_pages.value == 6
    assert gpu.retired_pages_pending.value is True


def test_recorded_smi_q_pastes_give_the_vbios() -> None:
    folder = Path(__file__).parent / "fixtures" / "import"
    expected = {
        "smi-q-390-8x-gtx1080ti.txt": "86.02.39.00.22",
        "smi-q-396-k80-azure.txt": "80.21.1F.00.06",
        "smi-q-470-a100-sxm4-80gb.txt": "92.00.45.00.05",
        "smi-q-510-a10g.txt": "94.02.75.00.01",
    }
    for name, vbios in expected.items():
        profile = import_text((folder / name).read_text(encoding="utf-8"), name)
        assert profile.gpus[0].vbios_version.value == vbios, name


# --------------------------------------------------------------------------------------------
# Findings


def _profile(*gpus: GpuInfo) -> Profile:
    return Profile(tool=ToolInfo(version="0"), created_utc="2026-11-21T10:00:00Z", gpus=list(gpus))


def _gpu(index: int = 0, **facts: Any) -> GpuInfo:
    fields: dict[str, Fact[Any]] = {"name": fact("NVIDIA A100-SXM4-80GB", Source.NVML)}
    fields.update({k: fact(v, Source.NVML) for k, v in facts.items()})
    return GpuInfo(index=index, vendor="nvidia", backend="cuda", **fields)


def _by_id(profile: Profile) -> dict[str, Any]:
    return {f.id: f for f in assess(profile)}


HEALTH_IDS = {
    "gpu-ecc-uncorrected",
    "gpu-memory-repair-pending",
    "gpu-row-remap-failed",
    "gpu-ecc-disabled",
}


def test_a_healthy_gpu_has_no_health_findings() -> None:
    profile = _profile(_gpu(**{**HOPPER, "ecc_enabled": True, "xid_errors_recent": []}))
    found = _by_id(profile)
    assert not HEALTH_IDS & set(found)
    assert not [i for i in found if i.startswith("gpu-xid")]


def test_unknown_health_facts_never_trigger_a_finding() -> None:
    found = _by_id(_profile(_gpu()))  # every health fact "not probed"
    assert not HEALTH_IDS & set(found)


def test_uncorrected_ecc_errors_are_a_warning() -> None:
    found = _by_id(_profile(_gpu(0, ecc_errors_uncorrected_volatile=2), _gpu(1)))
    finding = found["gpu-ecc-uncorrected"]
    assert finding.severity == Severity.WARNING
    assert "GPU 0 (NVIDIA A100-SXM4-80GB): 2 since the driver loaded" in finding.detail
    assert "GPU 1" not in finding.detail
    assert "reset the GPU" in finding.fix and "\n" not in finding.fix


@pytest.mark.parametrize(
    ("facts", "what"),
    [
        ({"remapped_rows_pending": True}, "row remapping"),
        ({"retired_pages_pending": True}, "page retirement"),
    ],
)
def test_pending_repair_asks_for_a_reset(facts: dict[str, Any], what: str) -> None:
    finding = _by_id(_profile(_gpu(**facts)))["gpu-memory-repair-pending"]
    assert finding.severity == Severity.WARNING
    assert finding.fix.startswith(f"reset the GPU to apply pending {what} (drain the node first)")


def test_failed_row_remapping_is_an_rma() -> None:
    finding = _by_id(_profile(_gpu(remapped_rows_failed=True)))["gpu-row-remap-failed"]
    assert finding.severity == Severity.ERROR
    assert finding.fix.startswith("the GPU has run out of spare rows: RMA")


def test_ecc_off_on_a_datacenter_gpu_only() -> None:
    datacenter = _gpu(ecc_enabled=False, gpu_class="datacenter")
    workstation = _gpu(1, ecc_enabled=False, gpu_class="workstation")
    found = _by_id(_profile(datacenter, workstation))
    finding = found["gpu-ecc-disabled"]
    assert finding.severity == Severity.INFO
    assert "GPU 0" in finding.detail and "GPU 1" not in finding.detail
    assert "gpu-ecc-disabled" not in _by_id(_profile(workstation))


@pytest.mark.parametrize(
    ("code", "severity", "words"),
    [
        (79, Severity.ERROR, "fallen off the bus"),
        (48, Severity.ERROR, "double-bit ECC"),
        (74, Severity.ERROR, "NVLink"),
        (63, Severity.WARNING, "row remapping"),
        (64, Severity.ERROR, "row remapping failed"),
        (92, Severity.WARNING, "single-bit ECC error rate"),
        (94, Severity.WARNING, "contained ECC"),
        (95, Severity.ERROR, "uncontained ECC"),
        (13, Severity.INFO, "application fault"),
        (31, Severity.INFO, "application fault"),
        (43, Severity.INFO, "application fault"),
    ],
)
def test_xid_findings_from_the_table(code: int, severity: Severity, words: str) -> None:
    finding = _by_id(_profile(_gpu(xid_errors_recent=[code])))[f"gpu-xid-{code}"]
    assert finding.severity == severity
    assert words in finding.title
    assert finding.title.startswith(f"Xid {code} in the kernel log: ")
    assert finding.fix == XID_MEANINGS[code].fix
    assert "GPU 0 (NVIDIA A100-SXM4-80GB)" in finding.detail


def test_one_finding_per_code_naming_every_gpu() -> None:
    found = _by_id(
        _profile(
            _gpu(0, xid_errors_recent=[79, 94]),
            _gpu(1, xid_errors_recent=[94]),
            _gpu(2, xid_errors_recent=[]),
        )
    )
    assert re.search(r"GPU 0 \(.*\), GPU 1 \(", found["gpu-xid-94"].detail)
    assert "GPU 1" not in found["gpu-xid-79"].detail
    assert "GPU 2" not in found["gpu-xid-94"].detail


def test_xid_codes_without_a_meaning_are_reported_together() -> None:
    found = _by_id(_profile(_gpu(0, xid_errors_recent=[999, 1001]), _gpu(1)))
    finding = found["gpu-xid-other"]
    assert finding.severity == Severity.INFO
    assert "Xid 999 on GPU 0" in finding.detail and "Xid 1001 on GPU 0" in finding.detail
    assert not any(i in found for i in ("gpu-xid-999", "gpu-xid-1001"))


def test_findings_are_ordered_errors_first() -> None:
    findings = assess(_profile(_gpu(xid_errors_recent=[13, 79], remapped_rows_pending=True)))
    ranks = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    severities = [ranks[Severity(f.severity)] for f in findings]
    assert severities == sorted(severities)
    assert [f.id for f in findings if f.id.startswith("gpu-")][:1] == ["gpu-xid-79"]


# --------------------------------------------------------------------------------------------
# What the reports show


def test_gpu_health_line() -> None:
    gpu = _gpu(
        vbios_version="96.00.74.00.0D",
        ecc_enabled=True,
        ecc_errors_uncorrected_volatile=0,
        remapped_rows_uncorrectable=2,
        remapped_rows_pending=True,
        xid_errors_recent=[63, 94],
    )
    assert gpu_health(gpu) == (
        "VBIOS 96.00.74.00.0D; 0 uncorrected ECC errors; 2 rows remapped, reset pending; Xid 63, 94"
    )
    old = _gpu(vbios_version="88.00.80.00.01", ecc_enabled=False, retired_pages=3)
    assert gpu_health(old) == "VBIOS 88.00.80.00.01; ECC off; 3 pages retired"
    assert gpu_health(_gpu()) == "VBIOS unknown"


def test_html_report_shows_gpu_health() -> None:
    from hwadvisor.render.html import render_html

    gpu = _gpu(vbios_version="96.00.74.00.0D", xid_errors_recent=[])
    html = render_html(_profile(gpu), source_sha256="0" * 64)
    table = html[html.index('<table class="gpus">') :]
    table = table[: table.index("</table>")]
    assert "VBIOS, memory health" in table
    assert "VBIOS 96.00.74.00.0D; no Xid errors" in table
