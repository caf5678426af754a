"""`corobench setup`: install the Debian packages that the manifests declare (root only)."""

from __future__ import annotations

import os
import shutil
import subprocess

from corobench.manifest import Manifest


def missing_packages(manifests: list[Manifest]) -> list[str]:
    wanted = sorted({p for m in manifests for p in m.apt_packages})
    if not wanted or shutil.which("dpkg-query") is None:
        return wanted if shutil.which("dpkg-query") is None else []
    missing = []
    for pkg in wanted:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "--", pkg], capture_output=True, text=True)
        if "install ok installed" not in proc.stdout:
            missing.append(pkg)
    return missing


def install(packages: list[str]) -> tuple[bool, str]:
    """apt-get install as root; elsewhere say what to install."""
    if not packages:
        return True, "all declared system packages are installed"
    if shutil.which("apt-get") is None:
        return False, f"no apt-get here: install {' '.join(packages)} by hand"
    if os.geteuid() != 0:
        return False, f"not root: run 'sudo apt-get install {' '.join(packages)}'"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    update = subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, text=True)
    if update.returncode != 0:
        return False, f"apt-get update failed: {update.stderr.strip().splitlines()[-1:]}"
    # names are checked against Debian's package-name rule when manifests are read, and `--` ends
    # the options: nothing a manifest says can become an apt-get option
    proc = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "--", *packages],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:]
        return False, f"apt-get install failed: {' '.join(tail)}"
    return True, f"installed {' '.join(packages)}"
