"""cgroup accounting: v1 on this machine where it is usable, v2 code paths against a fake tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from corobench import cgroup
from corobench.cgroup import Hierarchy, RunCgroup, detect


def fake_v2(tmp_path: Path, controllers: str = "cpu memory pids", subtree: str = "") -> Path:
    base = tmp_path / "cgroupfs"
    base.mkdir(parents=True)
    (base / "cgroup.controllers").write_text(controllers + "\n")
    (base / "cgroup.subtree_control").write_text(subtree + "\n")
    return base


def test_detect_v2_and_v1(tmp_path):
    base = fake_v2(tmp_path)
    assert detect(base) == Hierarchy(2, base)
    assert detect(fake_v2(tmp_path / "x", controllers="cpu pids")) is None  # no memory controller
    v1 = tmp_path / "v1"
    (v1 / "memory").mkdir(parents=True)
    (v1 / "memory" / "memory.max_usage_in_bytes").write_text("0\n")
    assert detect(v1) == Hierarchy(1, v1 / "memory")


def test_v2_create_enables_memory_for_the_subtree(tmp_path):
    base = fake_v2(tmp_path)
    (base / "corobench").mkdir()
    (base / "corobench" / "cgroup.subtree_control").write_text("\n")
    group = RunCgroup.create("run-1", Hierarchy(2, base))
    assert group is not None and group.version == 2 and group.path == base / "corobench" / "run-1"
    # the fake files take our writes as the kernel would take "+memory"
    assert (base / "cgroup.subtree_control").read_text() == "+memory"
    assert (base / "corobench" / "cgroup.subtree_control").read_text() == "+memory"


def test_v2_peak_from_memory_peak_and_cpu_from_cpu_stat(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    (path / "memory.peak").write_text("7340032\n")
    (path / "memory.current").write_text("1048576\n")
    (path / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
    group = RunCgroup(path, 2)
    assert group.has_peak_file() and group.peak_bytes() == 7340032
    assert group.cpu_seconds() == 2.5
    assert group.current_bytes() == 1048576


def test_v2_without_memory_peak_uses_the_highest_sampled_current(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    group = RunCgroup(path, 2)
    assert not group.has_peak_file() and group.peak_bytes() is None  # nothing sampled: no figure
    for value in (100, 900, 300):
        (path / "memory.current").write_text(f"{value}\n")
        group.note_sample()
    assert group.peak_bytes() == 900


def test_v2_kill_writes_cgroup_kill(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    (path / "cgroup.kill").write_text("")
    (path / "cgroup.procs").write_text("")
    RunCgroup(path, 2).kill_all()
    assert (path / "cgroup.kill").read_text() == "1"


def test_v2_kill_without_cgroup_kill_signals_each_process(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    victim = subprocess.Popen(["sleep", "60"])
    (path / "cgroup.procs").write_text(f"{victim.pid}\n")
    RunCgroup(path, 2).kill_all()
    assert victim.wait(timeout=10) == -9


def test_a_planted_symlink_is_not_followed(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    target = tmp_path / "precious"
    target.write_text("keep me")
    (path / "cgroup.kill").symlink_to(target)
    (path / "cgroup.procs").write_text("")
    RunCgroup(path, 2).kill_all()
    assert target.read_text() == "keep me"


def test_v1_memory_cgroups_work_here_if_usable():
    usable, why = cgroup.usable()
    if not usable:
        pytest.skip(why)
    assert "cgroup v" in why
    group = RunCgroup.create(f"test-v1-{os.getpid()}")
    assert group is not None
    try:
        assert group.peak_bytes() is not None
        proc = subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True)
        assert proc.returncode == 0
    finally:
        assert group.remove()
    assert not group.path.exists()
