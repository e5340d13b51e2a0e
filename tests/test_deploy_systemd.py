"""deploy/systemd: the timer, the unit and the script it runs.

The script is run for real with a fake hwadvisor (and, for one fault, a fake cp) on PATH and
temporary folders standing for /var/lib/hwadvisor, the shared folder and object storage. The
unit files are parsed for the settings the collection relies on, and checked by
``systemd-analyze verify`` where it exists.
"""

from __future__ import annotations

import configparser
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSTEMD = ROOT / "deploy" / "systemd"
SCRIPT = SYSTEMD / "hwadvisor-scan.sh"
PROFILE = '{\n  "schema_version": 6,\n  "host": "fresh"\n}\n'

FAKE_HWADVISOR = """#!/bin/sh
# hwadvisor for the tests: its arguments and labels to $FAKE_LOG; `scan` prints a profile after
# $FAKE_SLEEP seconds and exits $FAKE_RC; like hwadvisor, it stops at once on SIGTERM.
echo "$* | labels=${HWADVISOR_LABELS:-}" >> "$FAKE_LOG"
trap 'kill "$nap" 2>/dev/null; exit 143' TERM
sleep "${FAKE_SLEEP:-0}" &
nap=$!
wait "$nap"
[ "${FAKE_EMPTY:-0}" = 1 ] || printf '%s' "$FAKE_PROFILE"
exit "${FAKE_RC:-0}"
"""
FAKE_UNAME = '#!/bin/sh\n[ "$1" = -n ] && echo "gpu-node-07" && exit 0\nexit 1\n'
# cp that writes half of the file, then fails (a full disk, a lost NFS server).
FAKE_CP_HALF = """#!/bin/sh
for last; do :; done
head -c 10 "$2" > "$last"
echo "cp: error writing '$last': No space left on device" >&2
exit 1
"""


@dataclass
class Host:
    tmp: Path
    env: dict[str, str]

    @property
    def state(self) -> Path:
        return self.tmp / "var-lib-hwadvisor"

    @property
    def shared(self) -> Path:
        return self.tmp / "shared"

    @property
    def bucket(self) -> Path:
        return self.tmp / "bucket"

    def calls(self) -> list[str]:
        log = self.tmp / "calls"
        return log.read_text().splitlines() if log.exists() else []

    def run(self, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", str(SCRIPT)],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def fake(self, name: str, body: str) -> None:
        path = self.tmp / "bin" / name
        path.write_text(body)
        path.chmod(0o755)


@pytest.fixture
def host(tmp_path: Path) -> Host:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    found = Host(tmp_path, {})
    found.fake("hwadvisor", FAKE_HWADVISOR)
    found.fake("uname", FAKE_UNAME)
    found.shared.mkdir()
    found.bucket.mkdir()
    found.env = {
        "PATH": os.pathsep.join([str(bin_dir), os.environ["PATH"]]),
        "LC_ALL": "C",
        "FAKE_LOG": str(tmp_path / "calls"),
        "FAKE_PROFILE": PROFILE,
        "HWADVISOR_STATE_DIR": str(found.state),
        "HWADVISOR_SCAN_ARGS": "--probe-timeout 30",
        "HWADVISOR_LABELS": "site=paris,rack=r12",
    }
    return found


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_scan_writes_the_profile_0600_then_the_shared_copy_and_the_upload(host: Host) -> None:
    upload = 'cp "$1" "$BUCKET/$2.json" && echo "$HWADVISOR_LABELS" > "$BUCKET/labels"'
    done = host.run(
        HWADVISOR_SHARED_DIR=str(host.shared),
        HWADVISOR_UPLOAD_COMMAND=upload,
        BUCKET=str(host.bucket),
    )
    assert done.returncode == 0, done.stderr
    profile = host.state / "profile.json"
    assert profile.read_text() == PROFILE
    assert _mode(profile) == 0o600 and _mode(host.state) == 0o700
    # Detection only, the extra words split, the labels passed on in the environment.
    (call,) = host.calls()
    assert call == "scan --json - --no-bench --probe-timeout 30 | labels=site=paris,rack=r12"
    # The shared copy is named after the host (uname -n), 0600 by default.
    assert _names(host.shared) == ["gpu-node-07.json"]
    assert (host.shared / "gpu-node-07.json").read_text() == PROFILE
    assert _mode(host.shared / "gpu-node-07.json") == 0o600
    # The upload command got the profile as $1 and the name as $2.
    assert (host.bucket / "gpu-node-07.json").read_text() == PROFILE
    assert _names(host.state) == ["profile.json"]  # no temporary file
    assert done.stderr.splitlines() == [
        f"hwadvisor-scan: profile written to {profile}",
        f"hwadvisor-scan: copied to {host.shared}/gpu-node-07.json",
        "hwadvisor-scan: uploaded by HWADVISOR_UPLOAD_COMMAND",
    ]


def test_exit_3_is_a_profile(host: Host) -> None:
    done = host.run(FAKE_RC="3", HWADVISOR_SHARED_DIR=str(host.shared), HWADVISOR_NAME="n1")
    assert done.returncode == 0, done.stderr
    assert (host.state / "profile.json").read_text() == PROFILE
    assert (host.shared / "n1.json").read_text() == PROFILE
    assert "(exit 3: a probe was degraded, see diagnostics.probes)" in done.stderr


def _previous(host: Host) -> bytes:
    """A profile from an earlier scan, on the host and in the shared folder."""
    host.state.mkdir(mode=0o700, exist_ok=True)
    old = b'{"schema_version": 6, "host": "earlier"}\n'
    (host.state / "profile.json").write_bytes(old)
    (host.shared / "gpu-node-07.json").write_bytes(old)
    return old


@pytest.mark.parametrize(
    ("env", "rc", "why"),
    [
        ({"FAKE_RC": "2"}, 2, "exit 2"),
        ({"FAKE_RC": "1"}, 1, "exit 1"),
        ({"FAKE_EMPTY": "1"}, 1, "exit 0 but no profile on standard output"),
        ({"HWADVISOR_COMMAND": "nothing-here"}, 127, "cannot run nothing-here (exit 127)"),
    ],
)
def test_a_failed_scan_leaves_the_previous_profile(
    host: Host, env: dict[str, str], rc: int, why: str
) -> None:
    old = _previous(host)
    upload_marker = host.bucket / "called"
    done = host.run(
        HWADVISOR_SHARED_DIR=str(host.shared),
        HWADVISOR_UPLOAD_COMMAND=f"touch {upload_marker}",
        **env,
    )
    assert done.returncode == rc
    assert done.stderr.splitlines()[-1] == (
        f"hwadvisor-scan: scan failed ({why}): {host.state}/profile.json not updated"
    )
    assert (host.state / "profile.json").read_bytes() == old
    assert (host.shared / "gpu-node-07.json").read_bytes() == old
    assert _names(host.state) == ["profile.json"] and _names(host.shared) == ["gpu-node-07.json"]
    assert not upload_marker.exists()


def test_a_scan_past_its_time_limit_is_stopped(host: Host) -> None:
    old = _previous(host)
    started = time.monotonic()
    done = host.run(FAKE_SLEEP="60", HWADVISOR_SCAN_TIMEOUT="1")
    assert time.monotonic() - started < 20
    assert done.returncode == 124
    assert "scan failed (it did not finish within 1 s)" in done.stderr
    assert (host.state / "profile.json").read_bytes() == old
    assert _names(host.state) == ["profile.json"]


def test_the_shared_copy_replaces_the_old_one_atomically(host: Host) -> None:
    old = _previous(host)
    target = host.shared / "gpu-node-07.json"
    inode = target.stat().st_ino
    with target.open("rb") as reader:  # a collector that opened the old copy
        done = host.run(HWADVISOR_SHARED_DIR=str(host.shared), HWADVISOR_SHARED_MODE="0640")
        assert done.returncode == 0, done.stderr
        assert reader.read() == old  # still the whole old file: it was replaced, not rewritten
    assert target.stat().st_ino != inode
    assert target.read_text() == PROFILE and _mode(target) == 0o640
    assert _names(host.shared) == ["gpu-node-07.json"]


def test_a_failed_shared_copy_leaves_the_old_copy_whole(host: Host) -> None:
    old = _previous(host)
    host.fake("cp", FAKE_CP_HALF)
    done = host.run(HWADVISOR_SHARED_DIR=str(host.shared))
    assert done.returncode == 4
    assert f"cannot copy the profile to {host.shared}/gpu-node-07.json" in done.stderr
    assert (host.shared / "gpu-node-07.json").read_bytes() == old  # never half a file
    assert _names(host.shared) == ["gpu-node-07.json"]  # the half-written temporary file is gone
    assert (host.state / "profile.json").read_text() == PROFILE  # the host's profile is new


def test_a_missing_shared_folder_is_an_error_not_a_new_folder(host: Host) -> None:
    missing = host.tmp / "not-mounted"
    done = host.run(HWADVISOR_SHARED_DIR=str(missing))
    assert done.returncode == 4
    assert "is it mounted" in done.stderr.replace(f"is {missing} mounted", "is it mounted")
    assert not missing.exists()


def test_a_failed_upload_is_reported_with_its_status(host: Host) -> None:
    done = host.run(HWADVISOR_UPLOAD_COMMAND="echo 'access denied' >&2; exit 7")
    assert done.returncode == 7
    assert "access denied" in done.stderr
    assert "hwadvisor-scan: HWADVISOR_UPLOAD_COMMAND failed (exit 7)" in done.stderr
    assert (host.state / "profile.json").read_text() == PROFILE


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"HWADVISOR_SCAN_TIMEOUT": "10m"}, "HWADVISOR_SCAN_TIMEOUT must be a whole number"),
        ({"HWADVISOR_UPLOAD_TIMEOUT": "-1"}, "HWADVISOR_UPLOAD_TIMEOUT must be a whole number"),
        ({"HWADVISOR_SHARED_MODE": "rw-r-----"}, "HWADVISOR_SHARED_MODE must be an octal"),
        ({"HWADVISOR_NAME": "../etc/passwd"}, "cannot name the shared copy '../etc/passwd'"),
        ({"HWADVISOR_NAME": ".hidden"}, "cannot name the shared copy '.hidden'"),
    ],
)
def test_bad_settings_are_refused_before_scanning(
    host: Host, env: dict[str, str], message: str
) -> None:
    done = host.run(**env)
    assert done.returncode == 2
    assert message in done.stderr
    assert host.calls() == []


@pytest.mark.parametrize("to", ["the script", "every process"])
def test_sigterm_stops_the_scan_at_once_and_keeps_the_last_profile(host: Host, to: str) -> None:
    """systemctl stop or a shutdown sends SIGTERM to every process of the unit (KillMode=
    control-group); `kill PID` or KillMode=mixed, to the script alone: both end it at once."""
    old = _previous(host)
    unit = subprocess.Popen(
        ["sh", str(SCRIPT)],
        env={**host.env, "FAKE_SLEEP": "600"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    tree: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            tree = psutil.Process(unit.pid).children(recursive=True)
            if host.calls() and any(p.name() == "sleep" for p in tree):
                break
            time.sleep(0.05)
        assert host.calls(), "the scan did not start"
        sent = time.monotonic()
        unit.send_signal(signal.SIGTERM)
        for process in tree if to == "every process" else []:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(signal.SIGTERM)
        _, stderr = unit.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if unit.poll() is None:
            unit.kill()
        for process in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        unit.wait()
    assert unit.returncode == 143, stderr
    assert took < 2, f"exit {took:.1f} s after SIGTERM"
    assert not [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert (host.state / "profile.json").read_bytes() == old
    assert _names(host.state) == ["profile.json"]


# --------------------------------------------------------------------------------------------
# The unit files


def _unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string((SYSTEMD / name).read_text())
    return parser


def test_service_is_a_detection_only_oneshot_at_idle_priority_and_hardened() -> None:
    unit = _unit("hwadvisor-scan.service")
    service = unit["Service"]
    assert service["Type"] == "oneshot"
    assert service["ExecStart"] == "/usr/local/libexec/hwadvisor-scan"
    assert service["EnvironmentFile"] == "-/etc/hwadvisor/hwadvisor.env"  # optional
    assert service["Nice"] == "19" and service["IOSchedulingClass"] == "idle"
    assert service["UMask"] == "0077"
    assert service["StateDirectory"] == "hwadvisor" and service["StateDirectoryMode"] == "0700"
    assert service["ProtectSystem"] == "strict"
    assert service["PrivateTmp"] == "yes" and service["NoNewPrivileges"] == "yes"
    # The time limit is a backstop above the script's own (600 s) limit.
    limit = service["TimeoutStartSec"]
    assert limit.endswith("min") and int(limit[:-3]) * 60 > 600
    # Settings that would hide the GPUs (/dev/nvidia*) or the kernel log (Xid errors).
    for hides in ("PrivateDevices", "DevicePolicy", "DeviceAllow", "ProtectClock"):
        assert hides not in service, hides
    assert "ProtectKernelLogs" not in service
    assert "User" not in service  # root: DMI serials and the kernel log are root's


def test_timer_spreads_the_scans_of_a_fleet() -> None:
    unit = _unit("hwadvisor-scan.timer")
    timer = unit["Timer"]
    assert timer["OnBootSec"] == "5min"
    assert timer["OnUnitActiveSec"] == "6h"
    assert timer["RandomizedDelaySec"] == "1h"
    assert timer["Unit"] == "hwadvisor-scan.service"
    assert unit["Install"]["WantedBy"] == "timers.target"


def test_the_units_install_lines_match_the_files() -> None:
    service = (SYSTEMD / "hwadvisor-scan.service").read_text()
    for line in (
        "install -m 0755 hwadvisor-scan.sh /usr/local/libexec/hwadvisor-scan",
        "install -m 0644 hwadvisor-scan.service hwadvisor-scan.timer /etc/systemd/system/",
        "install -D -m 0600 hwadvisor.env /etc/hwadvisor/hwadvisor.env",
        "systemctl enable --now hwadvisor-scan.timer",
    ):
        assert line in service, line
    for name in ("hwadvisor-scan.sh", "hwadvisor.env"):
        assert (SYSTEMD / name).is_file()
    assert os.access(SCRIPT, os.X_OK)
    assert SCRIPT.read_text().startswith("#!/bin/sh\n")


def _env_file(text: str) -> dict[str, str]:
    """systemd's EnvironmentFile= reading of unquoted values: KEY=VALUE, the value as it is
    (quotes and $ inside it kept), comments and blank lines skipped."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        assert sep, line
        assert value[:1] not in ("'", '"', "\\"), line  # kept simple: no leading quote
        values[key.strip()] = value.strip()
    return values


def test_environment_file_example_sets_only_what_the_script_or_the_scan_reads() -> None:
    text = (SYSTEMD / "hwadvisor.env").read_text()
    script = SCRIPT.read_text()
    # Every setting, commented or not, is one the script or hwadvisor scan reads.
    shown = {
        line.lstrip("#").split("=", 1)[0]
        for line in text.splitlines()
        if line.lstrip("#").startswith("HWADVISOR_") and "=" in line
    }
    read_by_the_scan = {"HWADVISOR_LABELS", "HWADVISOR_TORCH_PYTHON"}
    assert read_by_the_scan <= shown
    for name in shown - read_by_the_scan:
        assert f"${{{name}:-" in script, name
    active = _env_file(text)
    assert active == {"HWADVISOR_COMMAND": "/opt/hwadvisor/venv/bin/hwadvisor"}
    # The example upload command, uncommented, reaches sh with its quotes and $1/$2 intact.
    (upload,) = [
        line.lstrip("#") for line in text.splitlines() if "HWADVISOR_UPLOAD_COMMAND=" in line
    ]
    command = _env_file(upload)["HWADVISOR_UPLOAD_COMMAND"]
    assert '"$1"' in command and "$2.json" in command


def test_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    # verify checks that ExecStart= exists: point it at the script in the repository. An
    # unknown key or a bad value is only a warning: any line naming the units fails the test.
    service = (SYSTEMD / "hwadvisor-scan.service").read_text()
    assert "ExecStart=/usr/local/libexec/hwadvisor-scan\n" in service
    service = service.replace("ExecStart=/usr/local/libexec/hwadvisor-scan", f"ExecStart={SCRIPT}")
    (tmp_path / "hwadvisor-scan.service").write_text(service)
    shutil.copy(SYSTEMD / "hwadvisor-scan.timer", tmp_path)
    done = subprocess.run(
        [analyze, "verify", *(str(tmp_path / f"hwadvisor-scan.{k}") for k in ("timer", "service"))],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "notice"},
    )
    mine = [line for line in done.stderr.splitlines() if "hwadvisor" in line]
    assert done.returncode == 0 and mine == [], done.stderr


def test_script_is_shellcheck_clean() -> None:
    shellcheck = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if shellcheck is None:
        pytest.skip("shellcheck is not installed")
    done = subprocess.run(
        [shellcheck, "-s", "sh", str(SCRIPT)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout
