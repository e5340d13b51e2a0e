"""Redaction: nothing identifying survives, bus ids and versions do, tokens are stable per salt."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from hwadvisor import redact
from hwadvisor.model.facts import Fact, Source
from hwadvisor.model.profile import (
    Finding,
    GpuInfo,
    HostIdentity,
    MigInstance,
    NetInterface,
    NetworkInfo,
    NvmlInfo,
    NvmlStatus,
    PciDevice,
    PlatformInfo,
    Profile,
    Severity,
    StorageInfo,
    SystemInfo,
    ToolInfo,
    TorchDevice,
)

HOST = "gpu-node-17.lab.example.org"
USER = "alice"
MACHINE_ID = "4c4c4544004d3510804cb4c04f4e3732"
SERIALS = ["1324021001234", "1324021005678"]
GPU_UUIDS = [
    "GPU-5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
    "GPU-6b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e",
]
MIG_UUID = "MIG-7c3d4e5f-6a7b-8c9d-0e1f-2a3b4c5d6e7f"
TORCH_UUID = "5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
IPV4 = "10.23.45.67"
IPV6 = "fe80::1c2d:3eff:fe4f:5a6b"
IPV6_FULL = "2001:db8:85a3:0:0:8a2e:370:7334"
MAC = "3c:ec:ef:12:34:56"
MAC_DASH = "3C-EC-EF-AB-CD-EF"
BUS_ID = "00000000:17:00.0"
VERSIONS = ["12.4", "535.104.05", "8.9.2.26", "6.1.0-18-amd64"]
DMI_SERIAL = "S452187X3B20417"
NIC_MAC = "b4:96:91:c2:4e:10"
IB_ADDRESS = "00:00:10:49:fe:80:00:00:00:00:00:00:a0:88:c2:03:00:4b:7e:12"

SEEDED = [HOST, "gpu-node-17", USER, MACHINE_ID, *SERIALS, *GPU_UUIDS, MIG_UUID, TORCH_UUID]
SEEDED += [IPV4, IPV6, IPV6_FULL, MAC, MAC_DASH, "3c:ec:ef", "bob"]
SEEDED += [DMI_SERIAL, NIC_MAC, IB_ADDRESS, "b4:96:91", "a0:88:c2:03"]


def _f(value: object, source: Source = Source.NVML) -> Fact[object]:
    return Fact(value=value, source=source)


def seeded_profile() -> Profile:
    gpus = [
        GpuInfo(
            index=i,
            vendor="nvidia",
            backend="cuda",
            name=_f("NVIDIA H100 80GB HBM3"),
            uuid=_f(GPU_UUIDS[i]),
            serial=_f(SERIALS[i]),
            pci_bus_id=_f(BUS_ID if i == 0 else "00000000:2A:00.0"),
            mig_instances=[MigInstance(index=0, uuid=_f(MIG_UUID))] if i == 0 else [],
        )
        for i in range(2)
    ]
    return Profile(
        tool=ToolInfo(version="0.1.0"),
        created_utc="2026-11-21T10:02:03Z",
        host=HostIdentity(hostname=_f(HOST, Source.OS), machine_id=_f(MACHINE_ID, Source.OS)),
        system=SystemInfo(
            vendor=_f("Supermicro", Source.SYSFS),
            product=_f("SYS-421GE-TNRT", Source.SYSFS),
            serial=_f(DMI_SERIAL, Source.SYSFS),
            bios_version=_f("2.1", Source.SYSFS),
        ),
        network=NetworkInfo(
            interfaces=[
                NetInterface(name="ens2f0", kind="ethernet", mac=_f(NIC_MAC, Source.SYSFS)),
                NetInterface(name="ibp59s0", kind="infiniband", mac=_f(IB_ADDRESS, Source.SYSFS)),
            ],
            reason=None,
        ),
        storage=StorageInfo(path=_f(f"/home/{USER}/runs/out", Source.OS)),
        platform=PlatformInfo(
            kernel=_f(VERSIONS[3], Source.PLATFORM),
            visibility_env={"CUDA_VISIBLE_DEVICES": GPU_UUIDS[1]},
            pci_display_devices=[
                PciDevice(bus_id=BUS_ID, vendor="nvidia", vendor_id="0x10de", device_id="0x2330")
            ],
        ),
        nvml=NvmlInfo(
            status=NvmlStatus.OK,
            message=(
                f"probe on {HOST} ({IPV4}, {IPV6}, [{IPV6_FULL}]) nic {MAC} / {MAC_DASH} "
                f"user {USER} wrote C:\\Users\\bob\\AppData and /Users/bob/x at 10:02:03"
            ),
            driver_version=_f(VERSIONS[1]),
            cuda_driver_version=_f(VERSIONS[0]),
        ),
        gpus=gpus,
        frameworks={  # type: ignore[arg-type]
            "torch": {
                "installed": True,
                "cudnn_version": {"value": VERSIONS[2], "source": "torch"},
                "devices": [TorchDevice(index=0, uuid=_f(TORCH_UUID, Source.TORCH)).model_dump()],
            }
        },
        findings=[
            Finding(
                id="x",
                severity=Severity.INFO,
                title=f"{HOST.split('.')[0]} is fine",
                detail=(
                    f"GPU {GPU_UUIDS[0]} at {BUS_ID}; serial {SERIALS[0]}; board {DMI_SERIAL}; "
                    f"nic {NIC_MAC.upper()}; ib {IB_ADDRESS}"
                ),
                fix="nothing",
            )
        ],
    )


def test_no_seeded_value_survives() -> None:
    redacted = redact.redact_profile(seeded_profile(), "salt-a", users=[USER])
    dumped = redacted.model_dump_json()
    for value in SEEDED:
        assert value.lower() not in dumped.lower(), value
    # The tokens look like tokens.
    assert redacted.host.hostname.value is not None
    assert re.fullmatch(r"redacted-[0-9a-f]{10}", redacted.host.hostname.value)
    assert redacted.gpus[0].mig_instances[0].uuid.value.startswith("redacted-")  # type: ignore[union-attr]
    assert redacted.frameworks.torch.devices[0].uuid.value.startswith("redacted-")  # type: ignore[union-attr]


def test_system_serial_and_hardware_addresses_are_tokens() -> None:
    profile = seeded_profile()
    redacted = redact.redact_profile(profile, "salt-a", users=[USER])
    serial = redacted.system.serial.value
    ether, ib = (nic.mac.value for nic in redacted.network.interfaces)
    for value in (serial, ether, ib):
        assert value is not None and re.fullmatch(r"redacted-[0-9a-f]{10}", value), value
    assert len({serial, ether, ib}) == 3
    # The whole-value token is the one free text gets, whatever the spelling.
    assert serial == redact.token("salt-a", "serial", DMI_SERIAL.lower())
    assert ether == redact.token("salt-a", "mac", NIC_MAC)
    assert ib == redact.token("salt-a", "mac", IB_ADDRESS)
    detail = redacted.findings[0].detail
    assert f"board {serial};" in detail
    assert f"nic {ether};" in detail
    assert f"ib {ib}" in detail
    # What is not identifying stays.
    assert redacted.system.vendor.value == "Supermicro"
    assert redacted.system.product.value == "SYS-421GE-TNRT"
    assert redacted.system.bios_version.value == "2.1"
    assert [nic.name for nic in redacted.network.interfaces] == ["ens2f0", "ibp59s0"]
    # The serial is also among the values a rendered report is scrubbed of.
    assert DMI_SERIAL in redact.profile_secrets(profile, users=[])
    assert IB_ADDRESS in redact.profile_secrets(profile, users=[])


def test_bus_ids_versions_and_structure_survive() -> None:
    redacted = redact.redact_profile(seeded_profile(), "salt-a", users=[USER])
    dumped = redacted.model_dump_json()
    assert redacted.gpus[0].pci_bus_id.value == BUS_ID
    assert redacted.gpus[1].pci_bus_id.value == "00000000:2A:00.0"
    assert redacted.platform.pci_display_devices[0].bus_id == BUS_ID
    assert redacted.nvml.driver_version.value == "535.104.05"
    assert redacted.nvml.cuda_driver_version.value == "12.4"
    assert redacted.frameworks.torch.cudnn_version.value == "8.9.2.26"
    assert redacted.platform.kernel.value == VERSIONS[3]
    assert redacted.gpus[0].name.value == "NVIDIA H100 80GB HBM3"
    assert redacted.nvml.status is NvmlStatus.OK
    assert redacted.gpus[0].serial.source is Source.NVML
    assert "10:02:03" in dumped  # a time of day is not an IPv6 address
    assert redacted.storage.path.value is not None
    assert redacted.storage.path.value.startswith("/home/redacted-")
    assert redacted.storage.path.value.endswith("/runs/out")


def test_tokens_stable_and_salted() -> None:
    profile = seeded_profile()
    a1 = redact.redact_profile(profile, "salt-a", users=[USER])
    a2 = redact.redact_profile(profile, "salt-a", users=[USER])
    b = redact.redact_profile(profile, "salt-b", users=[USER])
    assert a1.model_dump_json() == a2.model_dump_json()
    assert a1.host.hostname.value != b.host.hostname.value
    assert a1.gpus[0].serial.value != b.gpus[0].serial.value
    assert a1.gpus[0].serial.value != a1.gpus[1].serial.value
    # The same UUID gets the same token wherever it appears.
    assert a1.gpus[1].uuid.value == a1.platform.visibility_env["CUDA_VISIBLE_DEVICES"]
    assert a1.gpus[0].uuid.value is not None
    assert a1.gpus[0].uuid.value in a1.findings[0].detail
    assert a1.host.hostname.value is not None
    assert a1.host.hostname.value in (a1.nvml.message or "")
    expected = (
        "redacted-"
        + __import__("hashlib").sha256(("salt-a" + "hostname" + HOST).encode()).hexdigest()[:10]
    )
    assert a1.host.hostname.value == expected
    # The input is left untouched.
    assert profile.host.hostname.value == HOST


def test_default_user_is_current_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redact.getpass, "getuser", lambda: USER)
    redacted = redact.redact_profile(seeded_profile(), "s")
    assert f" {USER} " not in (redacted.nvml.message or "")


def test_more_spellings_of_identifiers() -> None:
    profile = seeded_profile()
    assert profile.nvml.message is not None
    profile.nvml.message += (
        " mail lab.example.org and example.org; cisco 001a.2b3c.4d7f bare 001A2B3C4D8F; "
        "/scratch/carol/data then carol again; 137438953472 bytes; sha 0123456789ab0123456789ab"
    )
    profile.storage.path = Fact(value="/home/carol/x", source=Source.OS)
    dumped = redact.redact_profile(profile, "s", users=[]).model_dump_json()
    for value in ("lab.example.org", "example.org", "001a.2b3c.4d7f", "001A2B3C4D8F", "carol"):
        assert value not in dumped, value
    # Not a MAC: a plain number, and 12 hex digits inside a longer hex run.
    assert "137438953472" in dumped and "0123456789ab0123456789ab" in dumped
    # Every spelling of one MAC is one token.
    r = redact.redact_profiles([seeded_profile()], "s")[0]
    a = redact._Redactor("s", {}).text("3c:ec:ef:12:34:56")
    assert (
        a
        == redact._Redactor("s", {}).text("3cec.ef12.3456")
        == redact._Redactor("s", {}).text("3CECEF123456")
    )
    assert r.host.hostname.value is not None


@pytest.mark.parametrize("host", ["td", "style", "data.lab.example.org", "vm", "the", "node"])
def test_a_host_named_like_markup_or_a_word_leaves_the_report_whole(
    tmp_path: Path, host: str
) -> None:
    from hwadvisor.render.report import write_reports

    profile = seeded_profile()
    profile.host.hostname = Fact(value=host, source=Source.OS)
    profile.findings[0].detail = "running in a VM; the node GPU data is fine"
    plain = write_reports(profile, folder=tmp_path / "a", stem="r", formats=["html"], redact=False)
    red = write_reports(profile, folder=tmp_path / "b", stem="r", formats=["html"], redact=True)
    before = plain.files[0].read_text(encoding="utf-8")
    after = red.files[0].read_text(encoding="utf-8")
    # The markup is untouched: every table cell, the CSS and the charts survive.
    for marker in ("<td", "<style", "</style>", "data:image/svg+xml"):
        assert before.count(marker) == after.count(marker), marker
    assert "running in a VM; the node GPU data is fine" in before
    assert "running in a VM; the node GPU data is fine" in after
    assert f">{host}<" not in after  # the host field itself is a token


def test_diff_redacts_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.cli import main
    from hwadvisor.render.jsonio import to_json

    monkeypatch.setenv("HWADVISOR_REDACT_SALT", "private")
    a, b = seeded_profile(), seeded_profile()
    b.nvml.message = f"now on {HOST} at 10.9.8.7 by {USER}"
    pa = tmp_path / f"{HOST}-a.json"
    pb = tmp_path / f"{HOST}-b.json"
    pa.write_text(to_json(a), encoding="utf-8")
    pb.write_text(to_json(b), encoding="utf-8")
    out_json = tmp_path / "d.json"
    html = tmp_path / "d.html"
    code = main(
        ["diff", str(pa), str(pb), "--redact", "--json", str(out_json), "--html", str(html)]
    )
    term = capsys.readouterr().out
    assert code == 0
    for text in (term, out_json.read_text(encoding="utf-8"), html.read_text(encoding="utf-8")):
        for value in (HOST, "gpu-node-17", "10.9.8.7", IPV4, MAC, SERIALS[0], GPU_UUIDS[0]):
            assert value not in text, value
    # Without --redact the terminal shows the names; the PDF would still be redacted.
    assert main(["diff", str(pa), str(pb)]) == 0
    assert HOST in capsys.readouterr().out


def test_redacting_without_a_kept_salt_warns_and_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.cli import main

    monkeypatch.delenv("HWADVISOR_REDACT_SALT", raising=False)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocker))  # a read-only or missing config home
    monkeypatch.setattr(redact, "_RESOLVED", {})
    source = Path(__file__).parent / "fixtures" / "profiles" / "v1-cpu-only.json"
    code = main(["import", str(source), "--redact", "--json", "-"])
    captured = capsys.readouterr()
    assert code == 3
    assert "one-off salt" in captured.err and "HWADVISOR_REDACT_SALT" in captured.err
    assert captured.out.startswith("{")


def test_salt_env_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HWADVISOR_REDACT_SALT", "from-env")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert redact.resolve_salt() == ("from-env", None)
    assert not (tmp_path / "hwadvisor").exists()


def test_salt_created_once_private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HWADVISOR_REDACT_SALT", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    first = redact.default_salt()
    assert first == redact.default_salt()
    assert len(first) >= 32
    path = tmp_path / "hwadvisor" / "redact-salt"
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_salt_fallback_when_unwritable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HWADVISOR_REDACT_SALT", raising=False)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocker))  # works as root too
    salt, warning = redact.resolve_salt()
    # Never a fixed, public salt (a token would reverse with one sha256): random, this run only.
    assert len(salt) >= 32 and salt != "hwadvisor-redact-fallback-salt-v1"
    assert warning is not None and "HWADVISOR_REDACT_SALT" in warning
    assert "will not match other runs" in warning
    assert redact.default_salt() == salt  # the same all through one run
    assert redact.salt_warning() == warning


def test_a_placeholder_serial_never_takes_a_token_apart() -> None:
    """A serial printed as "REDACTED" (a redacted nvidia-smi dump) is no secret: taken as one,
    it made every token already written into "redacted-<its token>-…"."""
    profile = seeded_profile()
    profile.gpus[1].serial = _f("REDACTED")
    redacted = redact.redact_profile(profile, "salt-a", users=[USER])
    title = redacted.findings[0].title
    assert re.fullmatch(r"redacted-[0-9a-f]{10} is fine", title), title
    assert not re.search(r"redacted-[0-9a-f]{10}-[0-9a-f]{10}", redacted.model_dump_json())


def test_fleet_rows_find_known_names_inside_free_text() -> None:
    """A fleet's host names (with their domains), serials and machine ids inside a finding's
    title get the tokens one host's report gives them, looked up word by word."""
    salt = "salt-a"
    secrets = redact.WordSecrets(
        redact.fleet_secret_values(
            ["gpu-node-17.corp.example.net", "db1"], serial=["SN 55/7", "1321020012345"]
        )
    )
    rows = [
        {
            "hostname": "db1",
            "title": "Xid on gpu-node-17 at corp.example.net (db.corp.example.net, db1-gpu0, "
            "db10); serial 1321020012345 and SN 55/7",
        }
    ]
    (row,) = redact.redact_rows(rows, salt, secrets=secrets)

    def tok(kind: str, value: str) -> str:
        return redact.token(salt, kind, value)

    assert row["hostname"] == tok("hostname", "db1")
    assert row["title"] == (
        f"Xid on {tok('hostname', 'gpu-node-17')} at {tok('hostname', 'corp.example.net')} "
        f"(db.{tok('hostname', 'corp.example.net')}, {tok('hostname', 'db1')}-gpu0, db10); "
        f"serial {tok('serial', '1321020012345')} and {tok('serial', 'sn 55/7')}"
    )


def _outputs_carry_no_host(files: list[Path], redacted: set[str]) -> None:
    import io

    from pypdf import PdfReader

    names = {HOST, "gpu-node-17", "lab.example.org"}
    for path in files:
        if path.suffix[1:] not in redacted:
            continue
        assert path.name.startswith("redacted-"), path.name
        if path.suffix == ".pdf":
            reader = PdfReader(io.BytesIO(path.read_bytes()))
            text = "\n".join(page.extract_text() or "" for page in reader.pages)
            text += "\n" + "\n".join(str(v) for v in (reader.metadata or {}).values())
        else:
            text = path.read_text(encoding="utf-8")
        for name in names:
            assert name not in path.name.lower() and name not in text, (path.name, name)


@pytest.mark.parametrize(
    ("flag", "redacted"),
    [([], {"pdf"}), (["--redact"], {"json", "html", "pdf"}), (["--no-redact"], set())],
)
def test_a_redacted_output_is_named_by_the_token_not_the_host(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flag: list[str],
    redacted: set[str],
) -> None:
    """The file that is safe to send does not give the host away by its name: a scan's stem
    (host + time), re-rendered by `report` or re-read by `import`, becomes token + time."""
    from hwadvisor.cli import main
    from hwadvisor.render.jsonio import to_json
    from hwadvisor.render.report import file_stem, redacted_stem

    monkeypatch.setenv("HWADVISOR_REDACT_SALT", "private")
    profile = seeded_profile()
    stem = file_stem(profile)
    assert stem.startswith(HOST)
    token = redact.redact_profile(profile, "private").host.hostname.value
    assert token and redacted_stem(stem, profile, "private") == token + stem[len(HOST) :]
    saved = tmp_path / f"{stem}.json"
    saved.write_text(to_json(profile), encoding="utf-8")

    out = tmp_path / "report"
    assert main(["report", str(saved), "-f", "json,html,pdf", "-o", str(out), *flag]) == 0
    files = sorted(out.iterdir())
    assert {p.suffix[1:] for p in files} == {"json", "html", "pdf"}
    _outputs_carry_no_host(files, redacted)
    for path in files:  # what is not redacted keeps its name, as before
        if path.suffix[1:] not in redacted:
            assert path.name.startswith(HOST)

    out = tmp_path / "import"
    assert main(["import", str(saved), "-f", "json,html,pdf", "-o", str(out), "-q", *flag]) == 0
    _outputs_carry_no_host(sorted(out.iterdir()), redacted)
    capsys.readouterr()


def test_a_redacted_name_never_keeps_the_host_in_another_spelling() -> None:
    from hwadvisor.render.report import redacted_stem

    profile = seeded_profile()
    token = redact.redact_profile(profile, "s").host.hostname.value
    for stem in ("report-of-GPU-NODE-17", "x_gpu-node-17.lab.example.org_y", "alice-notes"):
        named = redacted_stem(stem, profile, "s")
        assert "gpu-node-17" not in named.lower() and "alice" not in named, named
    assert redacted_stem("box", profile, "s") == "box"  # nothing identifying: left as it is
    profile.host.hostname = Fact(value=None, source=Source.OS, reason="unknown")
    assert redacted_stem("box", profile, "s") == "box"
    assert token
