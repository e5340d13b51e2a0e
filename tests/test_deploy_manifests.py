"""deploy/: the role's files, the Kubernetes manifests, the Slurm script and docs/fleet.md.

Everything that runs is run: the idle check with fake load averages and a fake nvidia-smi, the
manifests' container script with a fake hwadvisor, the Slurm script with fake srun and hostname
commands standing for a cluster of three nodes. The Jinja expressions of docs/fleet.md are
checked against hwadvisor's own derivation of machine_id and of its redacted token.
(tests/test_deploy_ansible.py runs the role itself through ansible-playbook.)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jinja2
import psutil
import pytest
import yaml

from hwadvisor.model.facts import Source, fact
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import HostIdentity
from hwadvisor.probes.roots import Roots
from hwadvisor.probes.system import probe_host
from hwadvisor.redact import redact_profile

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
ROLE = DEPLOY / "ansible" / "roles" / "hwadvisor"
DOCS = ROOT / "docs" / "fleet.md"
SLURM = DEPLOY / "slurm" / "collect.sh"
FIXTURES = Path(__file__).parent / "fixtures"


# --------------------------------------------------------------------------------------------
# docs/fleet.md's Jinja expressions


def _docs_expression(variable: str) -> str:
    """The Jinja expression docs/fleet.md gives for ``variable`` (a YAML line of its own)."""
    found = re.findall(rf'^{variable}: "(\{{\{{.*\}}\}})"$', DOCS.read_text(), re.MULTILINE)
    assert len(found) == 1, f"docs/fleet.md should define {variable} once"
    return str(found[0])


def docs_machine_id_expression() -> str:
    """``{{ ... }}`` of docs/fleet.md that derives hwadvisor's machine_id from Ansible's raw
    ``ansible_machine_id`` (test_deploy_ansible runs it through Ansible too)."""
    return _docs_expression("hwadvisor_machine_id")


def _render(expression: str, **variables: Any) -> str:
    """Render with plain Jinja and Ansible's ``hash`` filter (hashlib over the UTF-8 text)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["hash"] = lambda text, kind="sha1": hashlib.new(kind, text.encode()).hexdigest()
    return env.from_string(expression).render(**variables)


@pytest.mark.parametrize(
    ("etc", "dbus"),
    [
        ("3d1219c7c4c5404aaa1f6d2a48adfda4\n", None),
        ("0123456789abcdef0123456789abcdef", "ffffffffffffffffffffffffffffffff\n"),
        (None, "fedcba9876543210fedcba9876543210\n"),
        ("", "fedcba9876543210fedcba9876543210\n"),  # empty: the dbus copy is used
    ],
)
def test_docs_machine_id_expression_is_hwadvisors_derivation(
    tmp_path: Path, etc: str | None, dbus: str | None
) -> None:
    if etc is not None:
        (tmp_path / "etc").mkdir()
        (tmp_path / "etc" / "machine-id").write_text(etc)
    if dbus is not None:
        (tmp_path / "var" / "lib" / "dbus").mkdir(parents=True)
        (tmp_path / "var" / "lib" / "dbus" / "machine-id").write_text(dbus)
    derived = probe_host(Roots.under(tmp_path)).machine_id.value
    raw = (etc or dbus or "").strip()  # what Ansible's ansible_machine_id holds
    assert derived is not None
    assert _render(docs_machine_id_expression(), ansible_machine_id=raw) == derived
    assert derived == f"sha256:{hashlib.sha256(raw.encode()).hexdigest()[:16]}"


def test_no_machine_id_is_null_with_the_reason_the_docs_give(tmp_path: Path) -> None:
    host = probe_host(Roots.under(tmp_path))
    assert host.machine_id.value is None
    prose = " ".join(DOCS.read_text().split())  # Markdown wraps lines anywhere
    assert host.machine_id.reason is not None and f"`{host.machine_id.reason}`" in prose


def test_docs_redacted_machine_id_expression_is_the_redaction_token() -> None:
    profile = load_profile(FIXTURES / "profiles" / "v1-cpu-only.json")
    machine_id = "sha256:0035969ec53f6e7f"
    profile.host = HostIdentity(
        hostname=fact("node1", Source.OS), machine_id=fact(machine_id, Source.OS)
    )
    for salt in ("fleet-salt", "s3cr3t"):
        redacted = redact_profile(profile, salt, users=[])
        token = redacted.host.machine_id.value
        assert token is not None and token.startswith("redacted-")
        expression = _docs_expression("hwadvisor_redacted_machine_id")
        assert _render(expression, salt=salt, hwadvisor_machine_id=machine_id) == token


def test_docs_cover_collection_roll_up_and_scale() -> None:
    text = DOCS.read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    for wanted in ("Rolling up", "100,000 hosts", "machine_id"):
        assert any(wanted in h for h in headings), wanted


def test_docs_collection_sections_come_before_the_roll_up_marker() -> None:
    text = DOCS.read_text()
    assert text.count("<!-- roll-up sections follow -->") == 1
    collecting, _ = text.split("<!-- roll-up sections follow -->")
    headings = re.findall(r"^##+ (.+)$", collecting, re.MULTILINE)
    assert headings == [
        "Collecting profiles",
        "Ansible",
        "`ansible_local.hwadvisor`",
        "Slurm",
        "Kubernetes",
        "systemd timer",
        "How `machine_id` is derived",
    ]


# --------------------------------------------------------------------------------------------
# The Ansible role's files


def test_role_yaml_parses_and_variables_are_documented() -> None:
    for path in sorted((DEPLOY / "ansible").rglob("*.yml")):
        assert yaml.safe_load(path.read_text()) is not None, path
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    assert options["hwadvisor_bench"]["choices"] == ["auto", "always", "never"]
    # Profiles hold root-only serial numbers; the controller's copies go outside the checkout.
    assert defaults["hwadvisor_profile_mode"] == "0600"
    assert defaults["hwadvisor_output_dir"] == "{{ lookup('env', 'HOME') }}/hwadvisor-profiles"
    assert defaults["hwadvisor_torch_python"] == "" and defaults["hwadvisor_labels"] == {}
    assert defaults["hwadvisor_bench"] in options["hwadvisor_bench"]["choices"]
    documented = set(re.findall(r"^\| `(hwadvisor_\w+)` \|", DOCS.read_text(), re.MULTILINE))
    assert documented == set(defaults)
    # Every variable the tasks and the template use is a default, or one the role sets itself.
    used: set[str] = set()
    for path in [*ROLE.rglob("*.yml"), *ROLE.rglob("*.j2")]:
        used |= set(re.findall(r"\b(hwadvisor_[a-z_]+)\b", path.read_text()))
    # (and two names that are not variables: the idle check's file, a tag)
    assert used - set(defaults) <= {"hwadvisor_idle", "hwadvisor_scan"}, used - set(defaults)


def test_playbook_applies_the_role() -> None:
    (play,) = yaml.safe_load((DEPLOY / "ansible" / "collect.yml").read_text())
    assert [r["role"] for r in play["roles"]] == ["hwadvisor"]
    assert (DEPLOY / "ansible" / "roles" / "hwadvisor" / "tasks" / "main.yml").is_file()


def _idle(tmp_path: Path, load: str, *, smi: str | None, threshold: float = 0.5) -> Any:
    loadavg = tmp_path / "loadavg"
    loadavg.write_text(f"{load} 0.50 0.40 1/100 4242\n")
    command = str(tmp_path / "no-such-nvidia-smi")
    if smi is not None:
        command = str(tmp_path / "nvidia-smi")
        Path(command).write_text(f"#!/bin/sh\n{smi}\n")
        Path(command).chmod(0o755)
    done = subprocess.run(
        [
            sys.executable,
            str(ROLE / "files" / "hwadvisor_idle.py"),
            "--max-load-per-cpu",
            str(threshold),
            "--loadavg",
            str(loadavg),
            "--nvidia-smi",
            command,
            "--nvidia-smi-timeout",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_idle_check(tmp_path: Path) -> None:
    cpus = os.cpu_count() or 1
    quiet = _idle(tmp_path, "0.00", smi=None)
    assert quiet["idle"] is True and quiet["reasons"] == [] and quiet["cpus"] == cpus
    assert quiet["gpu_processes"] == 0

    busy = _idle(tmp_path, f"{cpus * 2:.2f}", smi=None)
    assert busy["idle"] is False
    assert busy["load_per_cpu"] == pytest.approx(2.0)
    assert busy["reasons"] == ["1-minute load 2.00 per CPU is not below 0.5"]

    nothing_on_gpus = _idle(tmp_path, "0.00", smi='echo "No running processes found"')
    assert nothing_on_gpus["idle"] is True and nothing_on_gpus["gpu_processes"] == 0

    training = _idle(tmp_path, "0.00", smi="printf '4242\\n4243\\n'")
    assert training["idle"] is False and training["gpu_processes"] == 2
    assert training["reasons"] == ["2 process(es) computing on a GPU"]

    broken = _idle(tmp_path, "0.00", smi="echo 'Failed to initialize NVML' >&2; exit 9")
    assert broken["idle"] is False and broken["gpu_processes"] is None
    assert broken["reasons"] == [
        "GPU use unknown: nvidia-smi failed (exit 9) Failed to initialize NVML"
    ]


# --------------------------------------------------------------------------------------------
# Kubernetes

KUBERNETES = DEPLOY / "kubernetes"
IMAGE_USER = 10001


def _manifest(name: str, kind: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((KUBERNETES / name).read_text()) if d]
    (found,) = [d for d in docs if d["kind"] == kind]
    return dict(found)


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    (container,) = obj["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container["env"]}


def _tolerates_gpu_taint(pod: dict[str, Any]) -> bool:
    return any(
        t["key"] == "nvidia.com/gpu" and t["operator"] == "Exists" for t in pod["tolerations"]
    )


def test_daemonset_observes_every_gpu_without_requesting_them() -> None:
    ds = _manifest("daemonset.yaml", "DaemonSet")
    assert ds["apiVersion"] == "apps/v1"
    template = ds["spec"]["template"]
    labels = template["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= labels.items()
    pod = template["spec"]
    container = _container(ds)
    assert container["image"] == "registry.example.com/hwadvisor:0.1.0"
    assert "hwadvisor scan --json -" in " ".join(container["command"] + container["args"])
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert _tolerates_gpu_taint(pod)
    assert pod["runtimeClassName"] == "nvidia" and pod["hostNetwork"] is True
    resources = container["resources"]
    assert "nvidia.com/gpu" not in {**resources.get("requests", {}), **resources.get("limits", {})}
    assert "cpu" not in resources.get("limits", {})
    env = _env(container)
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    # NVML is in the `utility` capability: no CUDA libraries for an inventory scan.
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"
    assert env["HWADVISOR_SCAN_ARGS"].split() == ["--no-bench"]
    assert int(env["HWADVISOR_INTERVAL_SECONDS"]) > 0
    _check_host_mounts(ds)
    _check_node_label(container)
    namespace = _manifest("daemonset.yaml", "Namespace")
    assert ds["metadata"]["namespace"] == namespace["metadata"]["name"]


def test_job_benchmarks_on_the_gpus_it_requests() -> None:
    job = _manifest("job.yaml", "Job")
    ds = _manifest("daemonset.yaml", "DaemonSet")
    assert job["metadata"]["namespace"] == ds["metadata"]["namespace"]
    assert job["spec"]["backoffLimit"] == 0
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert _tolerates_gpu_taint(pod)
    container = _container(job)
    assert container["image"] == _container(ds)["image"]
    assert int(container["resources"]["limits"]["nvidia.com/gpu"]) >= 1
    env = _env(container)
    assert "NVIDIA_VISIBLE_DEVICES" not in env  # the device plugin sets the allocated GPUs
    assert set(env["NVIDIA_DRIVER_CAPABILITIES"].split(",")) == {"compute", "utility"}
    assert "--no-bench" not in (env["HWADVISOR_SCAN_ARGS"] or "")
    assert env["HWADVISOR_INTERVAL_SECONDS"] == "0"
    assert env["HWADVISOR_PROFILE_FILE"] != _env(_container(ds))["HWADVISOR_PROFILE_FILE"]
    _check_host_mounts(job)
    _check_node_label(container)
    # One script for both: a fix to one cannot miss the other.
    assert container["command"] == _container(ds)["command"] == ["/bin/sh", "-c"]
    assert container["args"] == _container(ds)["args"]


def _check_host_mounts(obj: dict[str, Any]) -> None:
    """The node's files the scan reads are mounted read-only under HWADVISOR_HOST_ROOT; the only
    writable host folder is the profiles' one."""
    pod = obj["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    container = _container(obj)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    root = _env(container)["HWADVISOR_HOST_ROOT"]
    assert root == "/host"
    for name in ("etc/os-release", "etc/machine-id"):
        mount = mounts[f"{root}/{name}"]
        assert mount["readOnly"] is True
        assert volumes[mount["name"]]["hostPath"] == {"path": f"/{name}", "type": "File"}
    assert "/etc/machine-id" not in mounts and "/etc/os-release" not in mounts  # the image's
    out = _env(container)["HWADVISOR_OUT_DIR"]
    assert volumes[mounts[out]["name"]]["hostPath"]["path"] == "/var/lib/hwadvisor"
    writable = [
        path
        for path, mount in mounts.items()
        if "hostPath" in volumes[mount["name"]] and not mount.get("readOnly")
    ]
    assert writable == [out]


def _check_node_label(container: dict[str, Any]) -> None:
    """The node's name reaches the scan as a label: NODE_NAME from the downward API, defined
    before HWADVISOR_LABELS refers to it (Kubernetes expands $(VAR) of earlier entries only)."""
    names = [e["name"] for e in container["env"]]
    (node,) = [e for e in container["env"] if e["name"] == "NODE_NAME"]
    assert node["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert names.index("NODE_NAME") < names.index("HWADVISOR_LABELS")
    labels = dict(
        pair.split("=", 1) for pair in _env(container)["HWADVISOR_LABELS"].split(",") if pair
    )
    assert labels["node"] == "$(NODE_NAME)"


@pytest.mark.parametrize("name", ["daemonset.yaml", "job.yaml"])
def test_pods_run_as_the_images_user_with_a_least_privilege_init_container(name: str) -> None:
    obj = _manifest(name, "Job" if name == "job.yaml" else "DaemonSet")
    pod = obj["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == IMAGE_USER
    assert pod["securityContext"]["runAsGroup"] == IMAGE_USER
    assert pod["automountServiceAccountToken"] is False
    main = _container(obj)["securityContext"]
    assert main["allowPrivilegeEscalation"] is False and main["readOnlyRootFilesystem"] is True
    assert main["capabilities"] == {"drop": ["ALL"]}
    assert "runAsUser" not in main and not main.get("privileged")
    # The init container: root, but with nothing beyond changing the owner and mode of the
    # profiles' folder, and nothing else of the node.
    (init,) = pod["initContainers"]
    security = init["securityContext"]
    assert security["runAsUser"] == 0 and security["runAsNonRoot"] is False
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert set(security["capabilities"]["add"]) == {"CHOWN", "FOWNER"}
    out = _env(_container(obj))["HWADVISOR_OUT_DIR"]
    assert [m["mountPath"] for m in init["volumeMounts"]] == [out]
    script = " ".join(init["command"] + init["args"])
    assert f"chown {IMAGE_USER}:{IMAGE_USER} {out}" in script
    assert f"chmod 0700 {out}" in script


def test_init_container_script_gives_the_folder_to_the_user(tmp_path: Path) -> None:
    """The init container's command, run with fake chown and chmod: both act on the folder."""
    (init,) = _manifest("daemonset.yaml", "DaemonSet")["spec"]["template"]["spec"]["initContainers"]
    log = tmp_path / "calls"
    fake = f'#!/bin/sh\necho "$(basename "$0") $*" >> "{log}"\n'
    env = _fake_bin(tmp_path, {"chown": fake, "chmod": fake})
    subprocess.run([*init["command"], *init["args"]], env=env, check=True, timeout=30)
    assert log.read_text().splitlines() == [
        f"chown {IMAGE_USER}:{IMAGE_USER} /var/lib/hwadvisor",
        "chmod 0700 /var/lib/hwadvisor",
    ]


def test_dockerfile_installs_the_wheel_and_runs_as_the_user() -> None:
    text = (KUBERNETES / "Dockerfile").read_text()
    assert re.search(r"^FROM \S+", text, re.MULTILINE)
    assert "COPY dist/ /tmp/dist/" in text
    assert '"$wheel"' in text and "hwadvisor-*.whl" in text
    assert 'ENTRYPOINT ["hwadvisor"]' in text
    assert "registry.example.com/hwadvisor:0.1.0" in text  # the name the manifests use
    # The last USER is numeric (runAsNonRoot can only check a number) and the manifests' user.
    users = re.findall(r"^USER (\S+)$", text, re.MULTILINE)
    assert users and users[-1] == f"{IMAGE_USER}:{IMAGE_USER}"
    assert text.index("pip install") < text.index(f"USER {IMAGE_USER}")  # installed as root
    assert f"--uid {IMAGE_USER}" in text and f"--gid {IMAGE_USER}" in text


def _strategic_merge(base: Any, patch: Any, key: str | None = None) -> Any:
    """kubectl's strategic merge, as far as the privileged patch uses it: maps merge, ``null``
    deletes, lists of maps merge on ``name`` (volume mounts on ``mountPath``)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for k, v in patch.items():
            if v is None:
                merged.pop(k, None)
            else:
                merged[k] = _strategic_merge(base.get(k), v, k)
        return merged
    if isinstance(base, list) and isinstance(patch, list) and patch and isinstance(patch[0], dict):
        field = "mountPath" if key == "volumeMounts" else "name"
        merged_list = list(base)
        for item in patch:
            at = [i for i, old in enumerate(merged_list) if old.get(field) == item[field]]
            if at:
                merged_list[at[0]] = _strategic_merge(merged_list[at[0]], item)
            else:
                merged_list.append(item)
        return merged_list
    return patch


def test_privileged_variant_reads_the_kernel_log_as_root() -> None:
    base = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    assert base["resources"] == ["daemonset.yaml"]
    kustomization = yaml.safe_load((KUBERNETES / "privileged" / "kustomization.yaml").read_text())
    assert kustomization["resources"] == [".."]
    (patch_ref,) = kustomization["patches"]
    patch = yaml.safe_load((KUBERNETES / "privileged" / patch_ref["path"]).read_text())
    ds = _manifest("daemonset.yaml", "DaemonSet")
    assert patch["kind"] == ds["kind"]
    for key in ("name", "namespace"):
        assert patch["metadata"][key] == ds["metadata"][key]
    merged = _strategic_merge(ds, patch)
    container = _container(merged)
    security = container["securityContext"]
    assert security["privileged"] is True
    assert security["runAsUser"] == 0 and security["runAsNonRoot"] is False  # over the pod's
    assert security["allowPrivilegeEscalation"] is True  # the API rejects privileged with false
    assert "capabilities" not in security
    volumes = {v["name"]: v for v in merged["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/dev/kmsg"]["readOnly"] is True
    assert volumes[mounts["/dev/kmsg"]["name"]]["hostPath"] == {
        "path": "/dev/kmsg",
        "type": "CharDevice",
    }
    # Everything else of the DaemonSet is kept (the script, the other mounts, the env).
    assert container["args"] == _container(ds)["args"] and container["env"] == _container(ds)["env"]
    assert set(mounts) == {m["mountPath"] for m in _container(ds)["volumeMounts"]} | {"/dev/kmsg"}


def _fake_bin(tmp_path: Path, scripts: dict[str, str]) -> dict[str, str]:
    """An environment whose PATH starts with these fake commands."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in scripts.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])
    return {"PATH": path, "LC_ALL": "C"}


FAKE_HWADVISOR = """#!/bin/sh
# hwadvisor for the tests. `scan --json -`: a tiny profile after $FAKE_SLEEP seconds, exit
# $FAKE_RC. `fleet emit [ARGS] PROFILE`: one marked line with the SHA-256 of the profile as it
# is when emit reads it, exit $FAKE_EMIT_RC.
echo "$*" >> "$FAKE_LOG"
case "$1" in
    scan)
        # Like hwadvisor, stop at once on SIGTERM, with whatever it runs.
        if [ "${FAKE_SLEEP:-0}" != 0 ]; then
            trap 'kill "$nap" 2>/dev/null; exit 143' TERM
            sleep "$FAKE_SLEEP" &
            nap=$!
            wait "$nap"
        fi
        printf '{\\n  "schema_version": 6,\\n  "host": "%s"\\n}\\n' "$(hostname)"
        exit "${FAKE_RC:-0}" ;;
    fleet)
        [ "$2" = emit ] || exit 2
        for profile; do :; done
        echo "HWADVISOR-EMIT $(sha256sum < "$profile" | cut -c1-64)"
        exit "${FAKE_EMIT_RC:-0}" ;;
esac
exit 2
"""


def _k8s_script() -> str:
    return str(_container(_manifest("daemonset.yaml", "DaemonSet"))["args"][0])


def _shells() -> list[list[str]]:
    """Every POSIX shell here that the image's /bin/sh may be: sh, dash, busybox sh, bash."""
    found: list[list[str]] = []
    seen: set[str] = set()
    for argv in (["sh"], ["dash"], ["busybox", "sh"], ["bash", "--posix"]):
        path = shutil.which(argv[0])
        if path is None:
            continue
        if argv[0] == "busybox":
            applets = subprocess.run([path, "--list"], capture_output=True, text=True).stdout
            if "sh" not in applets.split():
                continue
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            found.append([path, *argv[1:]])
    return found


SHELLS = _shells()


def _shell() -> list[str]:
    return SHELLS[0]


def _k8s_env(tmp_path: Path, out: Path, **extra: str) -> dict[str, str]:
    env = _fake_bin(tmp_path, {"hwadvisor": FAKE_HWADVISOR})
    env.update(HWADVISOR_OUT_DIR=str(out), FAKE_LOG=str(tmp_path / "calls"), **extra)
    return env


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls"
    return log.read_text().splitlines() if log.exists() else []


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_container_script_writes_the_profile_0600_and_emits_it(tmp_path: Path) -> None:
    out = tmp_path / "var-lib-hwadvisor"
    out.mkdir()
    env = _k8s_env(
        tmp_path,
        out,
        HWADVISOR_PROFILE_FILE="profile.json",
        HWADVISOR_INTERVAL_SECONDS="0",
        HWADVISOR_SCAN_ARGS="--no-bench --probe-timeout 30",
        HWADVISOR_EMIT_ARGS="--full",
        POD_NAME="hwadvisor-x1",
        FAKE_RC="3",  # a degraded probe: the profile counts
    )
    done = subprocess.run(
        [*_shell(), "-c", _k8s_script()], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    saved = out / "profile.json"
    assert json.loads(saved.read_text())["schema_version"] == 6
    assert saved.stat().st_mode & 0o777 == 0o600  # serial numbers: the owner's only
    # The log gets what `fleet emit` printed of the renamed profile, and no raw profile line.
    assert done.stdout.splitlines() == [f"HWADVISOR-EMIT {_digest(saved)}"]
    assert sorted(p.name for p in out.iterdir()) == ["profile.json"]
    assert _calls(tmp_path) == [
        "scan --json - --no-bench --probe-timeout 30",
        f"fleet emit --full {saved}",
    ]

    before = saved.read_bytes()
    env["FAKE_RC"] = "2"  # a failed scan leaves the last profile as it was, and emits nothing
    failed = subprocess.run(
        [*_shell(), "-c", _k8s_script()], env=env, capture_output=True, text=True, timeout=60
    )
    assert failed.returncode == 2 and failed.stdout == ""
    assert "hwadvisor scan failed (exit 2)" in failed.stderr
    assert saved.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["profile.json"]
    assert not any("emit" in call for call in _calls(tmp_path)[2:])


def test_container_script_goes_on_when_emit_fails(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    env = _k8s_env(tmp_path, out, HWADVISOR_INTERVAL_SECONDS="1", FAKE_EMIT_RC="5")
    pod = subprocess.Popen(
        [*_shell(), "-c", _k8s_script()],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: sum("fleet emit" in c for c in _calls(tmp_path)) >= 2, pod)
        pod.send_signal(signal.SIGTERM)
        _, stderr = pod.communicate(timeout=10)
    finally:
        _kill(pod)
    assert pod.returncode == 143
    assert "hwadvisor fleet emit failed (exit 5)" in stderr
    assert [c.split()[0] for c in _calls(tmp_path)][:4] == ["scan", "fleet", "scan", "fleet"]
    assert json.loads((out / "profile.json").read_text())["schema_version"] == 6


def test_container_script_refuses_a_bad_interval(tmp_path: Path) -> None:
    env = _k8s_env(tmp_path, tmp_path, HWADVISOR_INTERVAL_SECONDS="6h")
    done = subprocess.run(
        [*_shell(), "-c", _k8s_script()], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "HWADVISOR_INTERVAL_SECONDS must be a whole number of seconds, got '6h'" in done.stderr
    assert _calls(tmp_path) == []


def _wait_for(condition: Any, pod: subprocess.Popen[str], limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return
        assert pod.poll() is None, f"the script ended early (exit {pod.returncode})"
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the script")


def _kill(pod: subprocess.Popen[str], *also: psutil.Process | None) -> None:
    """The script and whatever it left running (a failed test leaves no sleeping process)."""
    try:
        left = [*psutil.Process(pod.pid).children(recursive=True), *filter(None, also)]
    except psutil.NoSuchProcess:
        left = list(filter(None, also))
    if pod.poll() is None:
        pod.kill()
        pod.wait()
    for process in left:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


def _child_named(pid: int, name: str, *, direct: bool = False) -> psutil.Process | None:
    try:
        children = psutil.Process(pid).children(recursive=not direct)
    except psutil.NoSuchProcess:
        return None
    found = [c for c in children if c.name() == name]
    return found[0] if found else None


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("shell", SHELLS, ids=lambda argv: " ".join(Path(a).name for a in argv))
@pytest.mark.parametrize("where", ["sleep", "scan"])
def test_container_script_ends_at_once_on_sigterm(
    tmp_path: Path, shell: list[str], where: str
) -> None:
    """SIGTERM while the script sleeps between scans (6 hours in the DaemonSet) or while a scan
    runs: exit 143 within 2 s (not at the end of the 30 s grace period), the child stopped, no
    temporary file, the last profile kept."""
    out = tmp_path / "out"
    out.mkdir()
    previous = b'{"schema_version": 6, "host": "before"}\n'
    (out / "profile.json").write_bytes(previous)
    env = _k8s_env(
        tmp_path,
        out,
        HWADVISOR_INTERVAL_SECONDS="600",
        POD_NAME="pod-1",
        FAKE_SLEEP="600" if where == "scan" else "0",
    )
    child: psutil.Process | None = None
    nap: psutil.Process | None = None
    pod = subprocess.Popen(
        [*shell, "-c", _k8s_script()],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if where == "sleep":  # the script's own sleep, after the scan and the emit
            _wait_for(lambda: _child_named(pod.pid, "sleep", direct=True) is not None, pod)
            assert (out / "profile.json").read_bytes() != previous  # the first scan is in
        else:
            _wait_for(lambda: (out / ".profile.json.pod-1").exists() and _calls(tmp_path), pod)
            _wait_for(lambda: _child_named(pod.pid, "sleep") is not None, pod)  # the fake's
        child = _child_named(pod.pid, "sleep" if where == "sleep" else "hwadvisor", direct=True)
        nap = _child_named(pod.pid, "sleep")
        assert child is not None
        sent = time.monotonic()
        pod.send_signal(signal.SIGTERM)
        stdout, stderr = pod.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        _kill(pod, child, nap)
    assert pod.returncode == 143, stderr
    assert took < 2, f"exit {took:.1f} s after SIGTERM"
    deadline = time.monotonic() + 2
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), f"the {where}'s process outlived the script"
    assert sorted(p.name for p in out.iterdir()) == ["profile.json"]  # no temporary file
    if where == "scan":
        assert (out / "profile.json").read_bytes() == previous
        assert stdout == ""
    else:
        assert stdout.splitlines() == [f"HWADVISOR-EMIT {_digest(out / 'profile.json')}"]


# --------------------------------------------------------------------------------------------
# Slurm


def test_slurm_script_parses() -> None:
    subprocess.run(["bash", "-n", str(SLURM)], check=True, timeout=30)
    text = SLURM.read_text()
    assert "#SBATCH --ntasks-per-node=1" in text
    assert text.startswith("#!/usr/bin/env bash\n")


def test_slurm_usage_lists_exactly_the_options_it_takes() -> None:
    shown = subprocess.run(
        ["bash", str(SLURM), "--help"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    documented: set[str] = set()
    for line in shown.split("Options:", 1)[1].splitlines():
        first_column = line.strip().split("  ")[0]
        if first_column.startswith("-"):  # not a continuation of a description
            documented |= set(re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", first_column))
    assert documented == _handled()
    assert "-- SCAN ARGS" in shown


def _handled() -> set[str]:
    """The options the script's argument loop takes (its case patterns)."""
    text = SLURM.read_text()
    start = text.index("while [ $# -gt 0 ]; do")
    loop = text[start : text.index("esac", start)]
    patterns = re.findall(r"^\s+([-\w |]+)\)", loop, re.MULTILINE)
    found = {p.strip() for pattern in patterns for p in pattern.split("|")}
    return {p for p in found if p.startswith("-") and p != "--"}


FAKE_SRUN = """#!/usr/bin/env bash
# srun for the tests: records its arguments, then runs the command once per "node"
# (SLURM_PROCID 0..N-1, which the fake hostname turns into node0, node1, ...; SLURMD_NODENAME
# from the words of $FAKE_NODENAMES, where given).
printf '%s\\n' "$*" >> "$FAKE_SRUN_LOG"
read -r -a names <<< "${FAKE_NODENAMES:-}"
nodes=1
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
    case "$1" in --nodes=*) nodes=${1#--nodes=} ;; esac
    shift
done
rc=0
for ((i = 0; i < nodes; i++)); do
    SLURM_PROCID=$i SLURM_JOB_ID=${SLURM_JOB_ID:-4711} SLURMD_NODENAME=${names[i]:-} "$@" || rc=$?
done
exit "$rc"
"""
# sbatch for the tests: records its arguments; refuses the nodes named in $FAKE_REFUSE; with
# FAKE_SBATCH_RUN=1 runs the job at once, as Slurm would on its node: the script with its
# arguments, in a job of one node with $FAKE_CPUS CPUs, the partition it was given.
FAKE_SBATCH = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$FAKE_SBATCH_LOG"
node="" partition=""
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
    case "$1" in
        --nodelist=*) node=${1#--nodelist=} ;;
        --partition=*) partition=${1#--partition=} ;;
    esac
    shift
done
case " ${FAKE_REFUSE:-} " in *" $node "*) echo "sbatch: error: refused" >&2; exit 1 ;; esac
job=$((1000 + $(wc -l < "$FAKE_SBATCH_LOG")))
echo "$job"
if [ "${FAKE_SBATCH_RUN:-0}" = 1 ]; then
    SLURM_JOB_ID=$job SLURM_JOB_NUM_NODES=1 SLURM_CPUS_ON_NODE=$FAKE_CPUS \\
        SLURM_JOB_CPUS_PER_NODE=$FAKE_CPUS SLURM_JOB_PARTITION=$partition FAKE_NODENAMES=$node \\
        bash "$@" > "$FAKE_DIR/job-$job.out" 2>&1
fi
exit 0
"""
# scontrol for the tests: host lists from $FAKE_HOSTNAMES, a node's Gres= from <node>.gres.
FAKE_SCONTROL = """#!/usr/bin/env bash
case "$1 $2" in
    "show hostnames") printf '%s\\n' $FAKE_HOSTNAMES ;;
    "show node")
        gres=$(cat "$FAKE_DIR/$4.gres" 2>/dev/null || echo "(null)")
        echo "NodeName=$4 Arch=x86_64 CPUTot=64 Gres=$gres State=IDLE Partitions=gpu" ;;
    "show job") echo "JobId=$4 JobName=hwadvisor-scan OverSubscribe=${FAKE_OVERSUBSCRIBE:-OK}" ;;
    *) exit 1 ;;
esac
"""
FAKE_SINFO = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$FAKE_DIR/sinfo-args"
printf '%s\\n' $FAKE_SINFO_NODES
"""
# stat -f -c %T PATH: the filesystem type in $FAKE_FSTYPE; anything else: the real stat.
FAKE_STAT = """#!/bin/sh
if [ "$1" = -f ]; then echo "${FAKE_FSTYPE:-ext2/ext3}"; exit 0; fi
PATH=${PATH#*:} exec stat "$@"  # the fakes' folder is first on PATH
"""
FAKE_HOSTNAME = '#!/bin/sh\necho "node${SLURM_PROCID:-x}"\n'
FAKE_NODE_HWADVISOR = """#!/bin/sh
# Each node's exit status and delay come from files named after it.
host=$(hostname)
echo "$host $*" >> "$FAKE_LOG"
[ -f "$FAKE_DIR/$host.sleep" ] && sleep "$(cat "$FAKE_DIR/$host.sleep")"
printf '{"schema_version": 6, "host": "%s"}\\n' "$host"
[ -f "$FAKE_DIR/$host.rc" ] && exit "$(cat "$FAKE_DIR/$host.rc")"
exit 0
"""


def _slurm(tmp_path: Path, args: list[str], **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = _fake_bin(
        tmp_path,
        {
            "srun": FAKE_SRUN,
            "sbatch": FAKE_SBATCH,
            "scontrol": FAKE_SCONTROL,
            "sinfo": FAKE_SINFO,
            "stat": FAKE_STAT,
            "hostname": FAKE_HOSTNAME,
            "hwadvisor": FAKE_NODE_HWADVISOR,
        },
    )
    env.update(
        FAKE_SRUN_LOG=str(tmp_path / "srun-args"),
        FAKE_SBATCH_LOG=str(tmp_path / "sbatch-args"),
        FAKE_LOG=str(tmp_path / "hwadvisor-calls"),
        FAKE_DIR=str(tmp_path),
        TMPDIR=str(tmp_path),
        **env_extra,
    )
    return subprocess.run(
        ["bash", str(SLURM), *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_slurm_from_a_login_node(tmp_path: Path) -> None:
    out = tmp_path / "shared" / "profiles"
    (tmp_path / "node1.rc").write_text("3")  # degraded: still a profile
    (tmp_path / "node2.rc").write_text("2")  # failed: none
    done = _slurm(tmp_path, ["--nodes", "3", "--exclusive", "-o", str(out), "--", "--budget", "5"])
    assert done.returncode == 1, done.stderr
    srun = (tmp_path / "srun-args").read_text().split()
    for expected in ("--ntasks-per-node=1", "--nodes=3", "--ntasks=3", "--exclusive"):
        assert expected in srun
    assert sorted(p.name for p in out.iterdir()) == ["node0.json", "node1.json"]  # no temp files
    assert json.loads((out / "node1.json").read_text())["host"] == "node1"
    calls = (tmp_path / "hwadvisor-calls").read_text().splitlines()
    assert calls == [f"node{i} scan --json - --no-bench --budget 5" for i in range(3)]
    status = [line for line in done.stdout.splitlines() if line.startswith("hwadvisor-collect:")]
    assert status[0] == f"hwadvisor-collect: ok node0 {out}/node0.json"
    assert status[1].startswith(f"hwadvisor-collect: ok node1 {out}/node1.json (exit 3")
    assert status[2] == "hwadvisor-collect: failed node2: exit 2"
    assert "2 profile(s) written" in done.stderr and "1 node(s) failed" in done.stderr


def test_slurm_inside_a_job_with_benchmarks(tmp_path: Path) -> None:
    out = tmp_path / "profiles"
    done = _slurm(
        tmp_path,
        ["--out", str(out), "--bench", "--exclusive", "--cpus-per-task", "8"],
        SLURM_JOB_ID="99",
        SLURM_JOB_NUM_NODES="2",
    )
    assert done.returncode == 0, done.stderr
    srun = (tmp_path / "srun-args").read_text().split()
    assert "--nodes=2" in srun and "--cpus-per-task=8" in srun
    assert "--exclusive" not in srun  # inside a job, only the allocation can be exclusive
    assert "may share its nodes (OverSubscribe=OK)" in done.stderr  # not submitted --exclusive
    assert sorted(p.name for p in out.iterdir()) == ["node0.json", "node1.json"]
    calls = (tmp_path / "hwadvisor-calls").read_text().splitlines()
    assert calls == ["node0 scan --json -", "node1 scan --json -"]  # benchmarks: no --no-bench


def test_slurm_time_limit(tmp_path: Path) -> None:
    (tmp_path / "node0.sleep").write_text("30")
    started = time.monotonic()
    done = _slurm(tmp_path, ["--nodes", "1", "--out", str(tmp_path / "o"), "--timeout", "1"])
    assert time.monotonic() - started < 20
    assert done.returncode == 1
    assert "hwadvisor-collect: failed node0: did not finish within 1 s" in done.stdout
    assert list((tmp_path / "o").iterdir()) == []


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--nodes", "2"], {}, "--out DIR is required"),
        (["--out", "x"], {}, "outside a Slurm job, --nodes N is required"),
        (["--out", "x", "--nodes", "2", "--timeout", "soon"], {}, "--timeout must be"),
        (["--out", "x", "--frobnicate"], {}, "unknown option '--frobnicate'"),
        (["--out"], {}, "--out needs a value"),
        (["--out", "x"], {"SLURM_JOB_ID": "7"}, "cannot tell how many nodes"),
    ],
)
def test_slurm_usage_errors(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    done = _slurm(tmp_path, args, **env)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "srun-args").exists()


def test_slurm_first_documented_example_records_whole_nodes() -> None:
    """The first sbatch line a reader meets (script header, --help, docs) asks for whole nodes
    and their GPUs: without them a profile shows one CPU and, where devices are constrained,
    no GPU."""
    shown = subprocess.run(
        ["bash", str(SLURM), "--help"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    slurm_docs = DOCS.read_text().split("### Slurm", 1)[1].split("\n### ", 1)[0]
    for text in (SLURM.read_text(), shown, slurm_docs):
        first = next(line for line in text.splitlines() if "sbatch --nodes" in line)
        assert "--exclusive" in first and re.search(r"--gres=gpu:\w+|--gpus-per-node=", first)


def test_slurm_names_profiles_by_slurmd_nodename_with_all_the_jobs_cpus(tmp_path: Path) -> None:
    out = tmp_path / "profiles"
    done = _slurm(
        tmp_path,
        ["--out", str(out)],
        SLURM_JOB_ID="99",
        SLURM_JOB_NUM_NODES="2",
        SLURM_JOB_PARTITION="h100",
        SLURM_JOB_CPUS_PER_NODE="96(x1),64",  # two nodes of different sizes: the smaller
        SLURM_CPUS_ON_NODE="96",
        FAKE_NODENAMES="gpu-a01 gpu-a02",
    )
    assert done.returncode == 0, done.stderr
    srun = (tmp_path / "srun-args").read_text().split()
    assert "--cpus-per-task=64" in srun
    # Slurm's names, not the hosts' (node0, node1); 0600: profiles hold serial numbers.
    assert sorted(p.name for p in out.iterdir()) == ["gpu-a01.json", "gpu-a02.json"]
    for profile in out.iterdir():
        assert profile.stat().st_mode & 0o777 == 0o600
    assert json.loads((out / "gpu-a02.json").read_text())["host"] == "node1"
    calls = (tmp_path / "hwadvisor-calls").read_text().splitlines()
    assert calls == [f"node{i} scan --json - --label partition=h100 --no-bench" for i in range(2)]
    assert f"hwadvisor-collect: ok gpu-a01 {out}/gpu-a01.json" in done.stdout


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"SLURM_CPUS_ON_NODE": "48"}, "--cpus-per-task=48"),  # no per-node list
        ({"SLURM_JOB_CPUS_PER_NODE": "32(x4)"}, "--cpus-per-task=32"),
        ({"SLURM_JOB_CPUS_PER_NODE": "garbage"}, None),  # unknown: Slurm's default
        ({}, None),
    ],
)
def test_slurm_cpus_per_task_inside_a_job(
    tmp_path: Path, env: dict[str, str], expected: str | None
) -> None:
    done = _slurm(
        tmp_path,
        ["--out", str(tmp_path / "o")],
        SLURM_JOB_ID="5",
        SLURM_JOB_NUM_NODES="1",
        **env,
    )
    assert done.returncode == 0, done.stderr
    given = [a for a in (tmp_path / "srun-args").read_text().split() if "cpus-per-task" in a]
    assert given == ([expected] if expected else [])


def test_slurm_explicit_cpus_per_task_wins(tmp_path: Path) -> None:
    done = _slurm(
        tmp_path,
        ["--out", str(tmp_path / "o"), "--cpus-per-task", "8"],
        SLURM_JOB_ID="5",
        SLURM_JOB_NUM_NODES="1",
        SLURM_JOB_CPUS_PER_NODE="96",
    )
    assert done.returncode == 0, done.stderr
    srun = (tmp_path / "srun-args").read_text().split()
    assert "--cpus-per-task=8" in srun and "--cpus-per-task=96" not in srun


@pytest.mark.parametrize(
    ("fstype", "warned"),
    [("nfs", True), ("lustre", True), ("gpfs", True), ("beegfs", True), ("ext2/ext3", False)],
)
def test_slurm_warns_when_hwadvisor_is_on_a_network_filesystem(
    tmp_path: Path, fstype: str, warned: bool
) -> None:
    done = _slurm(tmp_path, ["--nodes", "1", "--out", str(tmp_path / "o")], FAKE_FSTYPE=fstype)
    assert done.returncode == 0, done.stderr
    hwadvisor = tmp_path / "bin" / "hwadvisor"
    warning = f"collect.sh: warning: {hwadvisor} is on a network filesystem ({fstype})"
    assert (warning in done.stderr) is warned
    if warned:
        assert "Install hwadvisor on each node's local disk" in done.stderr


def test_slurm_per_node_submits_one_whole_node_job_per_node(tmp_path: Path) -> None:
    """--per-node: one job per node with that node's GPUs; each job (run here at once by the
    fake sbatch) scans its node with all of its CPUs and writes <node>.json."""
    out = tmp_path / "profiles"
    (tmp_path / "gpu01.gres").write_text("gpu:h100:8(S:0-1)")
    (tmp_path / "gpu02.gres").write_text("gpu:a100:4(S:0),gpu:a100:4(S:1),mps:400")
    done = _slurm(
        tmp_path,
        [
            "--per-node",
            "--nodelist",
            "gpu[01-02],cpu01",
            "--out",
            str(out),
            "--timeout",
            "600",
            "--sbatch-arg",
            "--account=ops",
            "--",
            "--probe-timeout",
            "30",
        ],
        FAKE_HOSTNAMES="gpu01 gpu02 cpu01",
        FAKE_SBATCH_RUN="1",
        FAKE_CPUS="64",
    )
    assert done.returncode == 0, done.stderr
    jobs = (tmp_path / "sbatch-args").read_text().splitlines()
    assert len(jobs) == 3
    for job, (node, gres) in zip(
        jobs, [("gpu01", "gpu:8"), ("gpu02", "gpu:8"), ("cpu01", None)], strict=True
    ):
        words = job.split()
        assert f"--nodelist={node}" in words and "--nodes=1" in words
        assert "--exclusive" in words and "--account=ops" in words
        assert "--time=13" in words  # 600 s, the kill 30 s later, a margin: in minutes
        assert ([w for w in words if w.startswith("--gres=")] or [None])[0] == (
            f"--gres={gres}" if gres else None
        )
        script = words.index(str(SLURM))
        assert words[script + 1 :] == [
            "--out",
            str(out),
            "--timeout",
            "600",
            "--hwadvisor",
            "hwadvisor",
            "--",
            "--probe-timeout",
            "30",
        ]
    assert "hwadvisor-collect: submitted gpu01 job 1001 (8 GPU(s), whole node)" in done.stdout
    assert "hwadvisor-collect: submitted cpu01 job 1003 (0 GPU(s), whole node)" in done.stdout
    # Each job, run on its node: the node's name, all its CPUs.
    assert sorted(p.name for p in out.iterdir()) == ["cpu01.json", "gpu01.json", "gpu02.json"]
    steps = [
        line  # (each srun's arguments end with the node task, a script of many lines)
        for line in (tmp_path / "srun-args").read_text().splitlines()
        if line.startswith("--ntasks-per-node=1 ")
    ]
    assert len(steps) == 3 and all("--cpus-per-task=64" in s.split() for s in steps)
    assert "3 job(s) submitted, 0 refused" in done.stderr


def test_slurm_per_node_by_partition_and_refused_jobs(tmp_path: Path) -> None:
    done = _slurm(
        tmp_path,
        ["--per-node", "--partition", "gpu", "--out", str(tmp_path / "o")],
        FAKE_SINFO_NODES="n2 n1 n2 n3",  # sinfo -N lists a node once per partition
        FAKE_REFUSE="n3",
    )
    assert done.returncode == 1
    assert (tmp_path / "sinfo-args").read_text().split() == ["-h", "-N", "-p", "gpu", "-o", "%N"]
    jobs = (tmp_path / "sbatch-args").read_text().splitlines()
    nodes = [m[1] for j in jobs if (m := re.search(r"--nodelist=(\S+)", j))]
    assert nodes == ["n1", "n2", "n3"]
    assert all("--partition=gpu" in j.split() for j in jobs)
    assert "hwadvisor-collect: failed n3: sbatch refused the job" in done.stdout
    assert "2 job(s) submitted, 1 refused" in done.stderr
    assert not (tmp_path / "srun-args").exists()  # nothing ran here


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--out", "x", "--partition", "gpu", "--nodes", "2"], {}, "go with --per-node"),
        (["--out", "x", "--per-node"], {"SLURM_JOB_ID": "7"}, "run it from a login node"),
        (["--out", "x", "--per-node", "--partition", "a", "--nodelist", "n1"], {}, "not both"),
        (["--out", "x", "--per-node", "--nodes", "2"], {}, "not --nodes"),
    ],
)
def test_slurm_per_node_usage_errors(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    done = _slurm(tmp_path, args, **env)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "sbatch-args").exists() and not (tmp_path / "srun-args").exists()


@pytest.mark.parametrize("which", ["kubernetes", "slurm"])
def test_scripts_are_shellcheck_clean(tmp_path: Path, which: str) -> None:
    shellcheck = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if shellcheck is None:
        pytest.skip("shellcheck is not installed")
    if which == "kubernetes":
        script = tmp_path / "container.sh"
        script.write_text(_k8s_script())
        argv = [shellcheck, "-s", "sh", str(script)]  # the image's /bin/sh: POSIX
    else:
        argv = [shellcheck, str(SLURM)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
