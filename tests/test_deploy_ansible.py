"""deploy/ansible: the real ansible-playbook runs collect.yml on three inventory hosts.

All three hosts are this machine (``ansible_connection=local``), each with folders of its own
under the test's temporary folder (virtual environment, wheels, profile, facts.d), so they do
not collide. hwadvisor is installed from a wheel built here; its dependencies come from this
interpreter's site-packages through PYTHONPATH in the scan's environment (the role's pip gets
--no-deps --no-index), so nothing is downloaded.

Run 1: alpha scans normally (and gets a wheelhouse), beta's hwadvisor exits 3 (a degraded probe:
the profile must still be collected) and decides on benchmarks by itself (hwadvisor_bench=auto,
with a load threshold no host meets), gamma installs nothing (hwadvisor_install=false: it runs
alpha's copy, installed by the time the scans start) and its scan is given an option hwadvisor
does not have. Run 2: the same hosts again (the install steps must change nothing), gamma's scan
now hangs and must be stopped at its time limit. Then a play of its own reads
``ansible_local.hwadvisor``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.model.load import load_profile
from hwadvisor.probes.system import probe_host
from tests.helpers.wheel import build_wheel
from tests.test_deploy_manifests import docs_machine_id_expression

ROOT = Path(__file__).resolve().parent.parent
PLAYBOOK = ROOT / "deploy" / "ansible" / "collect.yml"
FIXTURES = Path(__file__).parent / "fixtures" / "deploy"
HOSTS = ("alpha", "beta", "gamma")
INSTALLED = ("alpha", "beta")  # gamma: hwadvisor_install=false
INSTALL_TAGS = {"hwadvisor_install", "hwadvisor_fact"}
HOSTILE = "{{{{ lookup('ansible.builtin.pipe', 'touch {marker}') }}}}"

pytestmark = pytest.mark.slow


def _ansible_playbook() -> Path:
    found = Path(sys.executable).parent / "ansible-playbook"
    if not found.is_file():
        pytest.skip(
            f"ansible-playbook is not installed next to {sys.executable} "
            "(pip install ansible-core, or the dev extra)"
        )
    if shutil.which("timeout") is None:
        pytest.skip("coreutils `timeout` is missing (the role runs the scan under it)")
    return found


@dataclass
class Run:
    rc: int
    output: str
    rows: list[dict[str, Any]]

    def results(self, host: str, task: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["host"] == host and r["task"].endswith(task)]

    def failures(self, host: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["host"] == host and r["status"] == "failed"]


@dataclass
class Fleet:
    tmp: Path
    wheel: Path
    deps: list[str]
    first: Run
    second: Run
    facts_play: Run
    first_profiles: dict[str, bytes]
    hang_pid_file: Path

    def host_dir(self, host: str) -> Path:
        return self.tmp / "hosts" / host

    @property
    def collected(self) -> Path:
        return self.tmp / "collected"


def _script(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


def _inventory(
    tmp: Path, wheel: Path, deps: list[str], per_host: dict[str, dict[str, Any]]
) -> Path:
    hosts: dict[str, Any] = {}
    for host in HOSTS:
        base = tmp / "hosts" / host
        hosts[host] = {
            "hwadvisor_venv": str(base / "opt" / "venv"),
            "hwadvisor_stage_dir": str(base / "opt" / "wheels"),
            "hwadvisor_profile_path": str(base / "var" / "profile.json"),
            "hwadvisor_fact_dir": str(base / "etc" / "facts.d"),
            **per_host.get(host, {}),
        }
    inventory = {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "ansible_become": False,
                "hwadvisor_python": sys.executable,
                "hwadvisor_wheel": str(wheel),
                "hwadvisor_pip_extra_args": ["--no-deps", "--no-index"],
                "hwadvisor_scan_environment": {"PYTHONPATH": os.pathsep.join(deps)},
                "hwadvisor_bench": "never",
                "hwadvisor_scan_poll": 2,
                "hwadvisor_output_dir": str(tmp / "collected"),
            },
            "hosts": hosts,
            # beta is in a group: its label group=gpu_servers.
            "children": {"gpu_servers": {"hosts": {"beta": {}}}},
        }
    }
    path = tmp / "inventory.yml"
    path.write_text(json.dumps(inventory, indent=1), encoding="utf-8")  # JSON is YAML
    return path


def _play(tmp: Path, name: str, args: list[str]) -> Run:
    record = tmp / f"{name}-results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    env.update(
        ANSIBLE_CONFIG=str(PLAYBOOK.parent / "ansible.cfg"),
        ANSIBLE_HOME=str(tmp / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-home" / "tmp"),
        ANSIBLE_REMOTE_TMP=str(tmp / "ansible-home" / "remote-tmp"),
        ANSIBLE_ASYNC_DIR=str(tmp / "ansible-home" / "async"),
        ANSIBLE_CALLBACK_PLUGINS=str(FIXTURES / "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="record_results",
        ANSIBLE_NOCOLOR="1",
        RECORD_RESULTS=str(record),
        XDG_CACHE_HOME=str(tmp / "cache"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    done = subprocess.run(
        [str(_ansible_playbook()), *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    rows = json.loads(record.read_text(encoding="utf-8")) if record.exists() else []
    return Run(done.returncode, done.stdout + done.stderr, rows)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    _ansible_playbook()
    tmp = tmp_path_factory.mktemp("fleet")
    wheel = build_wheel(tmp / "dist")
    wheelhouse = tmp / "wheelhouse"
    wheelhouse.mkdir()
    shutil.copy2(wheel, wheelhouse / wheel.name)
    # The dependencies: this interpreter's site-packages folders as plain paths (their .pth
    # files, the editable hook for hwadvisor among them, stay inactive): hwadvisor itself can
    # only come from the wheel installed in each host's virtual environment.
    deps = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]

    # beta's hwadvisor: the real one, then exit 3 (a finished scan with a degraded probe), and a
    # CPU name holding Jinja that would create a file on the controller if Ansible rendered it.
    beta_venv = tmp / "hosts" / "beta" / "opt" / "venv"
    (tmp / "hostile-name").write_text(HOSTILE.format(marker=tmp / "templated"))
    # It also records its arguments and labels, and drops --torch-python PATH (a conda python
    # that is not here; the scan's use of it is tested with its probe).
    degraded = _script(
        tmp / "degraded-hwadvisor",
        "#!/bin/sh\n"
        f'printf "%s | labels=%s\\n" "$*" "${{HWADVISOR_LABELS:-}}" >> "{tmp}/beta-calls"\n'
        "skip=0\n"
        'for arg in "$@"; do\n'
        "  shift\n"
        '  if [ "$skip" = 1 ]; then skip=0; continue; fi\n'
        '  if [ "$arg" = --torch-python ]; then skip=1; continue; fi\n'
        '  set -- "$@" "$arg"\n'
        "done\n"
        f'"{beta_venv}/bin/hwadvisor" "$@" > "{tmp}/beta-scan.json"\n'
        'rc=$?\n[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || exit "$rc"\n'
        f'"{sys.executable}" - "{tmp}/beta-scan.json" "{tmp}/hostile-name" <<EOF\n'
        "import json, sys\n"
        "profile = json.load(open(sys.argv[1]))\n"
        'profile["cpu"]["model_name"]["value"] = open(sys.argv[2]).read()\n'
        "print(json.dumps(profile, indent=2))\n"
        "EOF\n"
        "exit 3\n",
    )
    hang_pid = tmp / "hung-scan.pid"
    hung = _script(tmp / "hung-hwadvisor", f'#!/bin/sh\necho $$ > "{hang_pid}"\nexec sleep 600\n')

    beta = {
        "hwadvisor_command": str(degraded),
        "hwadvisor_torch_python": "/opt/conda/envs/train/bin/python",
        "hwadvisor_labels": {"site": "lab", "rack": ""},  # empty: left out
        "hwadvisor_bench": "auto",
        "hwadvisor_idle_max_load_per_cpu": 0,  # no load is below 0: never idle
    }
    inventory = _inventory(
        tmp,
        wheel,
        deps,
        {
            "alpha": {"hwadvisor_wheelhouse": str(wheelhouse)},
            "beta": beta,
            "gamma": {
                "hwadvisor_install": False,
                "hwadvisor_command": str(
                    tmp / "hosts" / "alpha" / "opt" / "venv" / "bin" / "hwadvisor"
                ),
                "hwadvisor_scan_extra_args": ["--no-such-option"],
            },
        },
    )
    first = _play(tmp, "first", ["-i", str(inventory), str(PLAYBOOK)])
    first_profiles = {
        p.stem: p.read_bytes() for p in (tmp / "collected").glob("*.json") if p.is_file()
    }

    _inventory(
        tmp,
        wheel,
        deps,
        {
            "alpha": {"hwadvisor_wheelhouse": str(wheelhouse)},
            "beta": beta,
            "gamma": {
                "hwadvisor_install": False,
                "hwadvisor_command": str(hung),
                "hwadvisor_scan_timeout": 3,
                "hwadvisor_scan_kill_after": 2,
            },
        },
    )
    second = _play(tmp, "second", ["-i", str(inventory), str(PLAYBOOK)])

    facts_out = tmp / "facts-seen"
    facts_out.mkdir()
    extra = {"facts_out": str(facts_out), "docs_machine_id": docs_machine_id_expression()}
    facts_play = _play(
        tmp,
        "facts",
        ["-i", str(inventory), str(FIXTURES / "read_facts.yml"), "-e", json.dumps(extra)],
    )
    return Fleet(tmp, wheel, deps, first, second, facts_play, first_profiles, hang_pid)


def _expected_identity() -> tuple[str | None, str | None]:
    host = probe_host()
    return host.hostname.value, host.machine_id.value


# --------------------------------------------------------------------------------------------
# Run 1


def test_only_the_broken_host_fails_with_a_clear_message(fleet: Fleet) -> None:
    run = fleet.first
    assert run.rc == 2, run.output  # ansible-playbook: some hosts failed
    assert run.failures("alpha") == [] and run.failures("beta") == [], run.output
    (failure,) = run.failures("gamma")
    assert failure["task"].endswith("Fail clearly when the scan left no profile")
    message = failure["msg"]
    assert message.startswith("hwadvisor scan failed on gamma: exit 2 (usage error")
    assert "No such option: --no-such-option" in message
    assert "Traceback" not in run.output


def test_profiles_are_fetched_flat_and_load(fleet: Fleet) -> None:
    hostname, machine_id = _expected_identity()  # machine_id: None without /etc/machine-id
    assert sorted(fleet.first_profiles) == ["alpha", "beta"]  # none for the failed host
    for host in ("alpha", "beta"):
        fetched = fleet.collected / f"{host}.json"
        profile = load_profile(fetched)
        assert profile.host.hostname.value == hostname
        assert profile.host.machine_id.value == machine_id
        assert profile.benchmarks is None  # never, and auto on a host that is not idle
        # The controller's copy is the host's file, which is hwadvisor's stdout to the byte.
        on_host = fleet.host_dir(host) / "var" / "profile.json"
        assert fetched.read_bytes() == on_host.read_bytes()
        assert on_host.read_bytes().endswith(b"}\n")
        assert not [p for p in on_host.parent.iterdir() if p.name != "profile.json"]


def test_exit_3_still_collects_the_profile(fleet: Fleet) -> None:
    (scan,) = fleet.first.results("beta", "Run hwadvisor scan")
    assert scan["rc"] == 3
    assert scan["status"] != "failed"
    assert fleet.first.results("beta", "Fetch the profile to the controller")[0]["status"] in (
        "ok",
        "changed",
    )
    assert "beta" in fleet.first_profiles


def test_text_from_a_host_is_never_rendered_as_a_template(fleet: Fleet) -> None:
    hostile = (fleet.tmp / "hostile-name").read_text()
    for host_file in (
        fleet.collected / "beta.json",
        fleet.host_dir("beta") / "var" / "profile.json",
    ):
        assert load_profile(host_file).cpu.model_name.value == hostile
    seen = json.loads((fleet.tmp / "facts-seen" / "beta.json").read_text())
    assert seen["local"]["cpu_model"] == hostile
    assert not (fleet.tmp / "templated").exists()


def test_bench_auto_asks_the_idle_check(fleet: Fleet) -> None:
    (said,) = fleet.first.results("beta", "Say whether benchmarks run")
    assert said["msg"].startswith("without benchmarks: 1-minute load")
    assert "per CPU is not below 0" in said["msg"]
    (idle,) = fleet.first.results("alpha", "Check whether the host is idle enough for benchmarks")
    assert idle["status"] == "skipped"  # hwadvisor_bench=never asks nothing


def test_installed_from_the_wheel_into_a_venv_with_system_site_packages(fleet: Fleet) -> None:
    for host in INSTALLED:
        venv = fleet.host_dir(host) / "opt" / "venv"
        assert "include-system-site-packages = true" in (venv / "pyvenv.cfg").read_text()
        where = subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import hwadvisor; print(hwadvisor.__file__)"],
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.pathsep.join(fleet.deps)},
            capture_output=True,
            text=True,
            check=True,
            cwd=fleet.tmp,
        )
        assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
        staged = fleet.host_dir(host) / "opt" / "wheels"
        assert (staged / fleet.wheel.name).read_bytes() == fleet.wheel.read_bytes()
        marker = (venv / ".hwadvisor-wheel").read_text()
        assert marker.strip().endswith(fleet.wheel.name)
    assert (fleet.host_dir("alpha") / "opt" / "wheels" / "wheelhouse" / fleet.wheel.name).is_file()
    assert not (fleet.host_dir("beta") / "opt" / "wheels" / "wheelhouse").exists()
    assert not (fleet.host_dir("gamma") / "opt").exists()  # hwadvisor_install=false


def test_profiles_are_0600_on_the_host_and_the_controller(fleet: Fleet) -> None:
    """Profiles hold serial numbers that only root can read: never world-readable copies."""
    assert fleet.collected.stat().st_mode & 0o777 == 0o700  # made by the role
    for host in ("alpha", "beta"):
        on_host = fleet.host_dir(host) / "var" / "profile.json"
        assert on_host.stat().st_mode & 0o777 == 0o600
        assert on_host.parent.stat().st_mode & 0o777 == 0o700
        assert (fleet.collected / f"{host}.json").stat().st_mode & 0o777 == 0o600


def test_the_scan_gets_the_torch_python_and_the_labels(fleet: Fleet) -> None:
    calls = (fleet.tmp / "beta-calls").read_text().splitlines()
    assert len(calls) == 2  # one a run
    for call in calls:
        arguments, labels = call.split(" | ")
        words = arguments.split()
        assert words[:3] == ["scan", "--json", "-"]
        at = words.index("--torch-python")
        assert words[at + 1] == "/opt/conda/envs/train/bin/python"
        # The inventory group, then hwadvisor_labels, sorted; the empty rack left out.
        assert labels == "labels=group=gpu_servers,site=lab"


# --------------------------------------------------------------------------------------------
# Run 2


def test_second_run_changes_nothing_in_the_install_steps(fleet: Fleet) -> None:
    def install_rows(run: Run) -> list[dict[str, Any]]:
        return [r for r in run.rows if INSTALL_TAGS & set(r["tags"])]

    first, second = install_rows(fleet.first), install_rows(fleet.second)
    # The first run did install (so this check can fail) ...
    for host in INSTALLED:
        changed = {r["task"] for r in first if r["host"] == host and r["status"] == "changed"}
        assert any("Create the virtual environment" in t for t in changed), changed
        assert any("Install hwadvisor from the wheel" in t for t in changed), changed
    # ... and the second one changed nothing there, on any host.
    assert second, fleet.second.output
    assert [r for r in second if r["status"] == "changed"] == []
    assert {r["host"] for r in second} == set(HOSTS)  # gamma: the facts.d steps
    # The profiles were taken again.
    for host in ("alpha", "beta"):
        again = (fleet.collected / f"{host}.json").read_bytes()
        assert (
            json.loads(again)["created_utc"]
            >= json.loads(fleet.first_profiles[host])["created_utc"]
        )
        assert again != fleet.first_profiles[host]


def test_a_hung_scan_is_stopped_at_its_time_limit(fleet: Fleet) -> None:
    run = fleet.second
    assert run.rc == 2, run.output
    assert run.failures("alpha") == [] and run.failures("beta") == []
    (failure,) = run.failures("gamma")
    assert failure["msg"].startswith("hwadvisor scan failed on gamma: it did not finish within 3 s")
    hung = Path(f"/proc/{int(fleet.hang_pid_file.read_text())}")
    deadline = time.monotonic() + 10
    while hung.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not hung.exists(), "the hung scan is still running"


# --------------------------------------------------------------------------------------------
# facts.d


def _fact(fleet: Fleet, host: str) -> dict[str, Any]:
    fact = fleet.host_dir(host) / "etc" / "facts.d" / "hwadvisor.fact"
    done = subprocess.run([str(fact)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_fact_summarises_the_last_profile(fleet: Fleet) -> None:
    found = _fact(fleet, "alpha")
    profile = json.loads((fleet.host_dir("alpha") / "var" / "profile.json").read_text())
    assert "error" not in found
    assert found["machine_id"] == profile["host"]["machine_id"]["value"]
    assert found["hostname"] == profile["host"]["hostname"]["value"]
    assert found["created_utc"] == profile["created_utc"]
    assert found["schema_version"] == profile["schema_version"]
    assert found["gpu_count"] == len(profile["gpus"])
    assert found["findings"] == [f["id"] for f in profile["findings"]]
    assert found["benchmarks"] is False
    assert "profile" not in found  # only with hwadvisor_fact_full


def test_fact_without_a_readable_profile_is_json_with_an_error(fleet: Fleet) -> None:
    gamma_profile = fleet.host_dir("gamma") / "var" / "profile.json"
    assert not gamma_profile.exists()
    missing = _fact(fleet, "gamma")
    assert missing["error"].startswith("no hwadvisor profile at ")
    assert missing["profile_path"] == str(gamma_profile)
    for broken in ("{not json", "[1, 2]", ""):
        gamma_profile.parent.mkdir(parents=True, exist_ok=True)
        gamma_profile.write_text(broken)
        try:
            found = _fact(fleet, "gamma")
        finally:
            gamma_profile.unlink()
        assert set(found) == {"error", "profile_path"}, found


def test_ansible_local_in_a_play_of_its_own(fleet: Fleet) -> None:
    run = fleet.facts_play
    assert run.rc == 0, run.output
    seen = {
        host: json.loads((fleet.tmp / "facts-seen" / f"{host}.json").read_text()) for host in HOSTS
    }
    for host in ("alpha", "beta"):
        profile = load_profile(fleet.collected / f"{host}.json")
        local = seen[host]["local"]
        assert local["machine_id"] == profile.host.machine_id.value
        assert local["hostname"] == profile.host.hostname.value
        assert local["created_utc"] == profile.created_utc
        raw = seen[host]["ansible_machine_id"]
        if raw is None:  # a machine (container) without a machine ID
            assert local["machine_id"] is None
            continue
        # docs/fleet.md's Jinja expression, run by Ansible on ansible_machine_id, gives the
        # machine_id hwadvisor derived: the two inventories join on it.
        assert seen[host]["docs_machine_id"] == local["machine_id"]
        assert local["machine_id"].startswith("sha256:")
        assert raw not in json.dumps(local)  # never the raw ID
    assert seen["gamma"]["local"]["error"].startswith("no hwadvisor profile at ")
