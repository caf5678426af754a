from pathlib import Path

import pytest

from corobench.discover import discover, discover_all, select_programs
from corobench.errors import UsageError
from corobench.manifest import parse_manifest
from corobench.scenarios import SCENARIOS

MINIMAL = '''
id = "demo-rt"
language = "demo"
runtime = "rt"
scenarios = ["chain", "blocking"]
version = ["demo", "--version"]
run = ["./bin/demo"]
'''


def write(tmp_path: Path, text: str, sub: str = "demo/rt") -> Path:
    folder = tmp_path / sub
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.toml"
    path.write_text(text)
    return path


def test_minimal_manifest_defaults(tmp_path):
    m = parse_manifest(write(tmp_path, MINIMAL), set(SCENARIOS))
    assert m.id == "demo-rt" and m.scenarios == ("chain", "blocking")
    assert m.threads.mode == "flag" and m.warmup == 0 and m.build == ()
    assert m.resolve(m.run) == [str(tmp_path / "demo/rt/bin/demo")]


def test_full_manifest(tmp_path):
    text = MINIMAL + '''
threads = {env = "DEMO_THREADS"}
warmup = 1
build = ["make"]
build_outputs = ["bin/demo"]
[variants]
blocking = ["fs", "pool"]
[env]
X = "1"
[system_packages]
apt = ["libdemo-dev"]
'''
    m = parse_manifest(write(tmp_path, text), set(SCENARIOS))
    assert m.threads.mode == "env" and m.threads.env_var == "DEMO_THREADS"
    assert m.variants_of("blocking") == ("fs", "pool") and m.variants_of("chain") == ()
    assert m.apt_packages == ("libdemo-dev",) and m.env == {"X": "1"} and m.warmup == 1


@pytest.mark.parametrize("change,message", [
    (lambda t: t.replace('id = "demo-rt"', 'id = "Demo RT"'), "id must match"),
    (lambda t: t.replace('scenarios = ["chain", "blocking"]', 'scenarios = ["pingpong"]'), "unknown scenario"),
    (lambda t: t.replace('run = ["./bin/demo"]', ''), "missing required key 'run'"),
    (lambda t: t + 'colour = "blue"\n', "unknown key"),
    (lambda t: t + 'threads = "lots"\n', "'threads' must be"),
    (lambda t: t + 'warmup = -1\n', "'warmup'"),
    (lambda t: t + 'warmup = true\n', "'warmup' must be a whole number"),
    (lambda t: t + 'timeout_factor = nan\n', "'timeout_factor' must be more than 0"),
    (lambda t: t + 'timeout_factor = inf\n', "'timeout_factor' must be more than 0"),
    (lambda t: t.replace('runtime = "rt"', 'runtime = 5'), "'runtime' must be a string"),
    (lambda t: t.replace('scenarios = ["chain", "blocking"]', 'scenarios = "chain"'), "'scenarios' must be a list"),
    (lambda t: t + '[env]\n"A=B" = "1"\n', "'env' must be a table"),
    (lambda t: t + 'threads = {env = "A=B"}\n', "'threads' must be"),
    (lambda t: t + '[system_packages]\napt = ["-o", "DPkg::Pre-Invoke::=touch /tmp/x", "--allow-unauthenticated", "x"]\n',
     "'-o' is not a Debian package name"),
    (lambda t: t + '[variants]\ntasks = ["a"]\n', "does not list"),
    (lambda t: t + 'id2 = [\n', "not a readable TOML"),
    (lambda t: t.replace('run = ["./bin/demo"]', 'run = ["./bin/demo\\u0000x"]'), "'run' holds a NUL character"),
])
def test_bad_manifests(tmp_path, change, message):
    with pytest.raises(UsageError, match=message):
        parse_manifest(write(tmp_path, change(MINIMAL)), set(SCENARIOS))


def test_discover_finds_nested_manifests_and_lists_duplicates_as_broken(tmp_path):
    write(tmp_path, MINIMAL, "a/one")
    write(tmp_path, MINIMAL.replace("demo-rt", "demo-two"), "b/two")
    assert [m.id for m in discover([tmp_path])] == ["demo-rt", "demo-two"]
    write(tmp_path, MINIMAL, "c/three")
    manifests, broken = discover_all([tmp_path])
    assert [m.id for m in manifests] == ["demo-rt", "demo-two"]
    assert len(broken) == 1 and "duplicate implementation id 'demo-rt'" in broken[0].reason


def test_one_broken_manifest_does_not_stop_the_others(tmp_path):
    write(tmp_path, MINIMAL, "a/one")
    write(tmp_path, "id = \"x\"\nthis is not toml", "b/broken")
    (tmp_path / "c/latin1").mkdir(parents=True)
    (tmp_path / "c/latin1/manifest.toml").write_bytes(MINIMAL.replace("demo-rt", "demo-l").encode() + b"# \xe9\n")
    manifests, broken = discover_all([tmp_path])
    assert [m.id for m in manifests] == ["demo-rt"]
    reasons = sorted(b.reason for b in broken)
    assert any("not a readable TOML" in r for r in reasons) and any("not UTF-8" in r for r in reasons)


def test_variants_become_programs(tmp_path):
    write(tmp_path, MINIMAL + '[variants]\nblocking = ["fs", "pool"]\n')
    manifests = discover([tmp_path])
    assert [p.name for p in select_programs(manifests, "blocking", [])] == ["demo-rt:fs", "demo-rt:pool"]
    assert [p.name for p in select_programs(manifests, "blocking", ["demo-rt:pool"])] == ["demo-rt:pool"]
    assert [p.name for p in select_programs(manifests, "chain", ["demo-rt"])] == ["demo-rt"]
    with pytest.raises(UsageError, match="no variant"):
        select_programs(manifests, "blocking", ["demo-rt:nope"])
    with pytest.raises(UsageError, match="unknown implementation"):
        select_programs(manifests, "chain", ["nope"])
    with pytest.raises(UsageError, match="implements"):
        select_programs(manifests, "tasks", ["demo-rt"])


def test_real_manifests_parse():
    manifests = discover()
    assert {"go", "rust-tokio", "kotlin-coroutines"} <= {m.id for m in manifests}
