from pathlib import Path

import pytest

from corobench.errors import UsageError
from corobench.suite import load_suite

ROOT = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def test_shipped_suites_load():
    for path in (ROOT / "suites").glob("*.toml"):
        assert load_suite(path).benchmarks, path


def test_seed_chain_is_the_original_sweep():
    suite = load_suite(ROOT / "suites" / "seed-chain.toml")
    combos = {(b.params["workers"], b.params["etype"]) for b in suite.benchmarks}
    assert combos == {(w, t) for w in (100, 1000, 5000, 10000, 50000) for t in ("int", "str", "str_ptr", "str_clone")}
    assert all(b.params["events"] == 10000 and b.params["queue"] == 256 for b in suite.benchmarks)
    assert suite.reps == 5


def test_expansion_and_overrides(tmp_path):
    suite = load_suite(write(tmp_path, '''
reps = 2
[[benchmark]]
scenario = "tasks"
tasks = [1, 10]
sleep_ms = 0
threads = 1
impls = ["go"]
'''))
    assert suite.reps == 2
    assert [b.params for b in suite.benchmarks] == [{"tasks": 1, "sleep_ms": 0}, {"tasks": 10, "sleep_ms": 0}]
    assert all(b.threads == 1 and b.impls == ("go",) for b in suite.benchmarks)


@pytest.mark.parametrize("text,message", [
    ("[[benchmark]\n", "not valid TOML"),
    ("name = 'x'\n", "at least one"),
    ("[[benchmark]]\nworkers = 1\n", "needs a 'scenario'"),
    ("[[benchmark]]\nscenario = 'pingpong'\n", "unknown scenario"),
    ("[[benchmark]]\nscenario = 'chain'\nworkerz = 1\n", "unknown key"),
    ("[[benchmark]]\nscenario = 'chain'\nworkers = 0\n", "workers must be at least 1"),
    ("[[benchmark]]\nscenario = 'chain'\netype = 'float'\n", "unknown etype"),
    ("reps = 0\n[[benchmark]]\nscenario = 'chain'\n", "'reps' must be at least 1"),
    ("colour = 1\n[[benchmark]]\nscenario = 'chain'\n", "unknown key"),
    ("[[benchmark]]\nscenario = 'chain'\nthreads = 0.5\n", "'threads' must be a whole number"),
    ("[[benchmark]]\nscenario = 'chain'\nwarmup = true\n", "'warmup' must be a whole number"),
    ("timeout = inf\n[[benchmark]]\nscenario = 'chain'\n", "'timeout' must be more than 0"),
    ("timeout = nan\n[[benchmark]]\nscenario = 'chain'\n", "'timeout' must be more than 0"),
    ("timeout = 1e300\n[[benchmark]]\nscenario = 'chain'\n", "'timeout' must be more than 0"),
    ("[[benchmark]]\nscenario = 'chain'\nworkers = '1_0'\n", "'workers' must be a number, not a string"),
    ("[[benchmark]]\nscenario = 'chain'\nworkers = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\nevents = "
     "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\nqueue = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\nesize = "
     "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n", "at most 10000"),
])
def test_malformed_suites(tmp_path, text, message):
    with pytest.raises(UsageError, match=message):
        load_suite(write(tmp_path, text))


def test_missing_suite_file(tmp_path):
    with pytest.raises(UsageError, match="cannot read suite"):
        load_suite(tmp_path / "nope.toml")


def test_a_suite_that_is_not_utf8_is_one_clear_error(tmp_path):
    path = tmp_path / "s.toml"
    path.write_bytes(b"name = '\xff\xfe'\n[[benchmark]]\nscenario = 'chain'\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        load_suite(path)
