"""The ``nvidia-smi -q -x`` parser, on recorded real dumps and on hostile or broken input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.importers.nvidia_smi_xml import (
    NvidiaSmiXmlError,
    normalize_bus_id,
    parse_nvidia_smi_xml,
)
from hwadvisor.model.facts import Fact, Source
from hwadvisor.model.profile import GpuInfo, NvmlStatus

SMI = Path(__file__).parent / "fixtures" / "nvidia-smi"
MIB = 1024**2


def load(name: str) -> str:
    return (SMI / name).read_text(encoding="utf-8")


def facts(gpu: GpuInfo) -> dict[str, Fact[Any]]:
    return {name: value for name, value in gpu if isinstance(value, Fact)}


def test_every_fixture_is_listed_in_sources_and_small() -> None:
    sources = (SMI / "SOURCES.md").read_text(encoding="utf-8")
    fixtures = sorted(SMI.glob("*.xml"))
    assert len(fixtures) >= 4
    for path in fixtures:
        assert path.name in sources
        assert path.stat().st_size < 200_000


def test_a100_mig_netdata() -> None:
    info, gpus = parse_nvidia_smi_xml(load("netdata-a100-sxm4-40gb-mig.xml"))
    assert info.status == NvmlStatus.OK
    assert info.driver_version.value == "510.47.03"
    assert info.cuda_driver_version.value == "11.6"
    assert info.device_count.value == 1
    assert len(gpus) == 1
    gpu = gpus[0]
    assert gpu.name.value == "NVIDIA A100-SXM4-40GB"
    assert gpu.uuid.value == "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"
    assert gpu.serial.value == "1324321002473"
    assert gpu.pci_bus_id.value == "00000000:00:04.0"
    assert gpu.architecture.value == "Ampere"
    assert gpu.vram_total_bytes.value == 40960 * MIB
    assert gpu.vram_used_bytes.value == 38 * MIB
    assert gpu.vram_free_bytes.value == 40315 * MIB
    # Old drivers: <power_readings> with <enforced_power_limit> and <power_draw>.
    assert gpu.power_limit_watts.value == 400.0
    assert gpu.power_draw_watts.value == 66.92
    assert (gpu.sm_clock_mhz.value, gpu.sm_clock_max_mhz.value) == (1410, 1410)
    assert (gpu.memory_clock_mhz.value, gpu.memory_clock_max_mhz.value) == (1215, 1215)
    assert (gpu.pcie_generation.value, gpu.pcie_generation_max.value) == (4, 4)
    assert (gpu.pcie_width.value, gpu.pcie_width_max.value) == (16, 16)
    assert gpu.temperature_c.value == 36
    assert gpu.ecc_enabled.value is True
    assert gpu.persistence_mode.value is False
    assert gpu.mig_enabled.value is True
    # Under MIG the whole-GPU utilisation is N/A: null with that reason, never 0.
    assert gpu.utilization_percent.value is None
    assert gpu.utilization_percent.reason == "nvidia-smi reports N/A"
    assert [m.index for m in gpu.mig_instances] == [0, 1]
    assert [m.gpu_instance_id.value for m in gpu.mig_instances] == [1, 2]
    assert {m.memory_total_bytes.value for m in gpu.mig_instances} == {19968 * MIB}
    assert {m.multiprocessor_count.value for m in gpu.mig_instances} == {42}
    assert gpu.mig_instances[0].uuid.value is None


def test_a100_80gb_telegraf_new_power_layout_and_truncated_gpu_list() -> None:
    info, gpus = parse_nvidia_smi_xml(load("telegraf-a100-sxm4-80gb-mig.xml"))
    assert info.driver_version.value == "535.54.03"
    assert info.cuda_driver_version.value == "12.2"
    # The recording says 4 GPUs are attached but keeps one <gpu>: both facts survive.
    assert info.device_count.value == 4
    assert len(gpus) == 1
    gpu = gpus[0]
    assert gpu.name.value == "NVIDIA A100-SXM4-80GB"
    assert gpu.vram_total_bytes.value == 81920 * MIB
    # Drivers >= 530: <gpu_power_readings> with <current_power_limit>.
    assert gpu.power_limit_watts.value == 500.0
    assert gpu.power_draw_watts.value == 67.03
    assert gpu.sm_clock_mhz.value == 1275
    assert gpu.sm_clock_max_mhz.value == 1410
    assert gpu.temperature_c.value == 27
    assert len(gpu.mig_instances) == 4
    assert [m.gpu_instance_id.value for m in gpu.mig_instances] == [3, 4, 5, 6]
    assert {m.multiprocessor_count.value for m in gpu.mig_instances} == {14}


def test_dual_rtx_a5000_driver_590() -> None:
    info, gpus = parse_nvidia_smi_xml(load("telegraf-dual-rtx-a5000.xml"))
    assert info.driver_version.value == "590.44.01"
    assert info.cuda_driver_version.value == "13.1"
    assert info.device_count.value == 2
    assert [g.index for g in gpus] == [0, 1]
    assert [g.pci_bus_id.value for g in gpus] == ["00000000:81:00.0", "00000000:C1:00.0"]
    assert [g.uuid.value for g in gpus] == [
        "GPU-12345678-aaaa-bbbb-cccc-0123456789ab",
        "GPU-12345678-aaaa-bbbb-cccc-0123456789cd",
    ]
    # Driver 590 has no <power_draw>: the average draw stands in for it.
    assert [g.power_draw_watts.value for g in gpus] == [6.41, 13.6]
    assert [g.vram_used_bytes.value for g in gpus] == [22437 * MIB, 17253 * MIB]
    for gpu in gpus:
        assert gpu.name.value == "NVIDIA RTX A5000"
        assert gpu.power_limit_watts.value == 230.0
        assert (gpu.pcie_generation.value, gpu.pcie_generation_max.value) == (1, 4)
        assert gpu.sm_clock_max_mhz.value == 2100
        assert gpu.memory_clock_max_mhz.value == 8001
        assert gpu.ecc_enabled.value is False
        assert gpu.persistence_mode.value is True
        assert gpu.mig_enabled.value is None
        assert gpu.mig_enabled.reason == "nvidia-smi reports N/A"
        assert gpu.mig_instances == []


def test_geforce_rtx_3080_consumer_card() -> None:
    info, gpus = parse_nvidia_smi_xml(load("telegraf-geforce-rtx-3080.xml"))
    assert info.driver_version.value == "595.58.03"
    assert info.cuda_driver_version.value == "13.2"
    (gpu,) = gpus
    assert gpu.name.value == "NVIDIA GeForce RTX 3080"
    assert gpu.pci_bus_id.value == "00000000:0C:00.0"
    assert gpu.vram_total_bytes.value == 10240 * MIB
    assert gpu.power_limit_watts.value == 320.0
    assert gpu.power_draw_watts.value == 139.62
    assert gpu.utilization_percent.value == 65
    assert gpu.memory_clock_mhz.value == 9251
    assert gpu.ecc_enabled.value is None
    assert gpu.ecc_enabled.reason == "nvidia-smi reports N/A"


def test_partial_blackwell_dump_with_padded_values() -> None:
    info, gpus = parse_nvidia_smi_xml(load("netdata-rtx-pro-6000-blackwell-partial.xml"))
    assert info.driver_version.value is None
    assert info.driver_version.reason == "not in this nvidia-smi output"
    assert info.device_count.value == 1
    (gpu,) = gpus
    assert gpu.name.value == "NVIDIA RTX PRO 6000 Blackwell"
    assert gpu.temperature_c.value == 37  # " 37 C " in the recording
    # power_draw and average_power_draw are N/A; the instant draw is the value there is.
    assert gpu.power_draw_watts.value == 66.84
    assert gpu.pci_bus_id.value == "00000000:01:00.0"  # from <gpu id=...>
    assert gpu.vram_total_bytes.value is None
    assert gpu.vram_total_bytes.reason == "not in this nvidia-smi output"


@pytest.mark.parametrize("name", sorted(p.name for p in SMI.glob("*.xml")))
def test_every_fact_is_from_nvidia_smi_and_honest(name: str) -> None:
    info, gpus = parse_nvidia_smi_xml(load(name))
    header: list[Fact[Any]] = [info.driver_version, info.cuda_driver_version, info.device_count]
    for f in header:
        assert f.source == Source.NVIDIA_SMI
    for gpu in gpus:
        assert gpu.vendor == "nvidia"
        assert gpu.backend == "cuda"
        for field, value in facts(gpu).items():
            if field in ("catalog_name", "gpu_class"):
                continue  # the catalog's to fill in, after parsing (see test_import_catalog)
            assert value.source == Source.NVIDIA_SMI, field
            assert value.known or value.reason, field
            assert value.reason != "not probed", field
            assert value.value not in ("N/A", "[N/A]", "Not Supported"), field


def wrap(gpu_body: str, head: str = "") -> str:
    return (
        f'<?xml version="1.0" ?>{head}<nvidia_smi_log><driver_version>550.54.15</driver_version>'
        f'<cuda_version>12.4</cuda_version><gpu id="00000000:17:00.0">{gpu_body}</gpu>'
        "</nvidia_smi_log>"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("N/A", "nvidia-smi reports N/A"),
        ("[N/A]", "nvidia-smi reports N/A"),
        ("Not Supported", "nvidia-smi reports Not Supported"),
        ("[Not Supported]", "nvidia-smi reports Not Supported"),
        ("[Unknown Error]", "nvidia-smi reports Unknown Error"),
        ("", "empty in nvidia-smi output"),
        ("fast MHz", "unparseable value 'fast MHz' in nvidia-smi output"),
        ("1.5 GHz", "unparseable value '1.5 GHz' in nvidia-smi output"),
    ],
)
def test_placeholders_become_null_with_reason(text: str, reason: str) -> None:
    _, (gpu,) = parse_nvidia_smi_xml(wrap(f"<clocks><sm_clock>{text}</sm_clock></clocks>"))
    assert gpu.sm_clock_mhz.value is None
    assert gpu.sm_clock_mhz.reason == reason


def test_hostile_name_is_data() -> None:
    body = "<product_name>&lt;script&gt;alert(1)&lt;/script&gt;</product_name>"
    _, (gpu,) = parse_nvidia_smi_xml(wrap(body))
    assert gpu.name.value == "<script>alert(1)</script>"


def test_compute_cap_when_newer_nvidia_smi_reports_it() -> None:
    _, (gpu,) = parse_nvidia_smi_xml(wrap("<compute_cap>9.0</compute_cap>"))
    assert gpu.compute_capability.value == "9.0"


def test_leading_bom_and_newline_are_tolerated() -> None:
    info, _ = parse_nvidia_smi_xml("\ufeff\n  " + wrap(""))
    assert info.driver_version.value == "550.54.15"


def test_external_doctype_written_by_nvidia_smi_is_accepted() -> None:
    head = '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">'
    info, gpus = parse_nvidia_smi_xml(wrap("", head=head))
    assert info.driver_version.value == "550.54.15"
    assert len(gpus) == 1


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [
  <!ENTITY lol "lol">
  <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<nvidia_smi_log><driver_version>&lol3;</driver_version></nvidia_smi_log>"""

XXE = """<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<nvidia_smi_log><driver_version>&xxe;</driver_version></nvidia_smi_log>"""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (BILLION_LAUGHS, "entity"),
        (XXE, "entity"),
        ("<nvidia_smi_log><gpu></nvidia_smi_log>", "not well-formed"),
        ("", "not well-formed"),
        ("nvidia-smi: command not found", "not well-formed"),
        ("<html><body>nope</body></html>", "root element is <html>"),
    ],
)
def test_bad_input_raises_one_line_value_error(text: str, words: str) -> None:
    with pytest.raises(NvidiaSmiXmlError) as caught:
        parse_nvidia_smi_xml(text)
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert words in message
    assert "\n" not in message


def test_bytes_input_is_refused_with_the_error() -> None:
    with pytest.raises(NvidiaSmiXmlError, match="expected the XML as text"):
        parse_nvidia_smi_xml(b"<nvidia_smi_log/>")  # type: ignore[arg-type]


@given(st.text(max_size=300))
def test_any_text_parses_or_raises_the_named_error(text: str) -> None:
    try:
        parse_nvidia_smi_xml(text)
    except NvidiaSmiXmlError as error:
        assert "\n" not in str(error)


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("00000000:17:00.0", "00000000:17:00.0"),
        ("0000:c1:00.0", "00000000:C1:00.0"),
        ("17:00.0", "00000000:17:00.0"),
        ("not-a-bus-id", None),
    ],
)
def test_normalize_bus_id(raw: str, normal: str | None) -> None:
    assert normalize_bus_id(raw) == normal
