"""probes/cgroup.py: CPU quota and memory limit from cgroup v1 and v2 trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.model.facts import Source
from hwadvisor.probes.cgroup import cpu_quota, memory_limit, own_cgroup_paths
from hwadvisor.probes.roots import Roots

FIXTURES = Path(__file__).parent / "fixtures"


def tree(name: str) -> Roots:
    return Roots.under(FIXTURES / "cgroup" / name)


def write_tree(base: Path, files: dict[str, str]) -> Roots:
    for relative, text in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Roots.under(base)


V2 = "sys/fs/cgroup"


def test_v2_quota_is_the_smallest_along_the_path() -> None:
    quota = cpu_quota(tree("v2-quota-2cpu"))
    assert quota.value == 2.0  # leaf 2.0, pod "max", parent 4.0
    assert quota.source == Source.CGROUP
    limit = memory_limit(tree("v2-quota-2cpu"))
    assert limit.value == 4 * 1024**3  # leaf 4 GiB, pod 8 GiB
    assert limit.source == Source.CGROUP


def test_v2_stricter_parent_wins(tmp_path: Path) -> None:
    roots = write_tree(
        tmp_path,
        {
            "proc/self/cgroup": "0::/a/b\n",
            f"{V2}/cgroup.controllers": "cpu memory\n",
            f"{V2}/a/cpu.max": "50000 100000\n",
            f"{V2}/a/memory.max": "536870912\n",
            f"{V2}/a/b/cpu.max": "max 100000\n",
            f"{V2}/a/b/memory.max": "max\n",
        },
    )
    assert cpu_quota(roots).value == 0.5
    assert memory_limit(roots).value == 512 * 1024**2


def test_v2_max_is_no_quota() -> None:
    quota = cpu_quota(tree("v2-max"))
    assert quota.value is None
    assert quota.reason == "no CPU quota (cpu.max = max)"
    limit = memory_limit(tree("v2-max"))
    assert limit.value is None
    assert limit.reason == "no memory limit (memory.max = max)"


def test_v2_hidden_host_path_falls_back_to_the_mount_root() -> None:
    assert cpu_quota(tree("v2-host-path-hidden")).value == 1.5
    assert memory_limit(tree("v2-host-path-hidden")).value == 1024**3


def test_v1_quota_and_limit() -> None:
    assert cpu_quota(tree("v1-quota")).value == 1.5
    assert memory_limit(tree("v1-quota")).value == 2 * 1024**3


def test_v1_recorded_vm_has_no_limits() -> None:
    roots = Roots.under(FIXTURES / "cpu" / "amd-epyc-kvm")
    quota = cpu_quota(roots)
    assert quota.value is None
    assert quota.reason == "no CPU quota (cpu.cfs_quota_us = -1)"
    limit = memory_limit(roots)
    assert limit.value is None
    assert "9223372036854771712, i.e. unlimited" in (limit.reason or "")


def test_no_cgroup_filesystem(tmp_path: Path) -> None:
    roots = Roots.under(tmp_path)
    assert cpu_quota(roots).reason == "no cgroup filesystem"
    assert memory_limit(roots).reason == "no cgroup filesystem"
    assert cpu_quota(roots).source == Source.CGROUP


def test_cgroup_without_limit_files(tmp_path: Path) -> None:
    roots = write_tree(tmp_path, {f"{V2}/cgroup.controllers": "\n", "proc/self/cgroup": "0::/\n"})
    assert cpu_quota(roots).reason == "no CPU quota (the cgroup sets none)"
    assert memory_limit(roots).reason == "no memory limit (the cgroup sets none)"


def test_missing_proc_self_cgroup_still_reads_the_root(tmp_path: Path) -> None:
    roots = write_tree(tmp_path, {f"{V2}/cgroup.controllers": "cpu\n", f"{V2}/cpu.max": "300000"})
    assert cpu_quota(roots).value == 3.0  # period defaults to 100000


@pytest.mark.parametrize("text", ["garbage", "100000 0", "-5 100000", "", "max"])
def test_bad_cpu_max_is_not_a_quota(tmp_path: Path, text: str) -> None:
    roots = write_tree(tmp_path, {f"{V2}/cgroup.controllers": "cpu\n", f"{V2}/cpu.max": text})
    quota = cpu_quota(roots)
    assert quota.value is None
    assert quota.reason


def test_bad_v1_files_are_skipped(tmp_path: Path) -> None:
    roots = write_tree(
        tmp_path,
        {
            "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "lots\n",
            "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
            "sys/fs/cgroup/memory/memory.limit_in_bytes": "-1\n",
        },
    )
    assert cpu_quota(roots).value is None
    assert memory_limit(roots).value is None


def test_own_paths_and_path_traversal(tmp_path: Path) -> None:
    roots = write_tree(
        tmp_path,
        {
            "proc/self/cgroup": "12:memory:/docker/x\n4:cpu,cpuacct:/docker/x\n0::/../../etc\n",
            f"{V2}/cgroup.controllers": "cpu\n",
            f"{V2}/cpu.max": "100000 100000\n",
            # A cpu.max outside the mount must never be read.
            "sys/fs/etc/cpu.max": "10000 100000\n",
        },
    )
    assert own_cgroup_paths(roots) == {
        "memory": "/docker/x",
        "cpu": "/docker/x",
        "cpuacct": "/docker/x",
        "": "/../../etc",
    }
    assert cpu_quota(roots).value == 1.0
