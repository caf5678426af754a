"""Input validation in one place: every number from the CLI, a suite or a manifest comes through here.

Each check takes the value as given (a string from the command line, or a TOML value), insists on
the right type (no bools for numbers, no floats for counts, ASCII digits only), finiteness and a
sane range, and raises UsageError with one line naming what is wrong.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from corobench.errors import UsageError

WHOLE = re.compile(r"-?[0-9]{1,19}")
DECIMAL = re.compile(r"[0-9]{1,12}(\.[0-9]{1,9})?")

MAX_REPS = 10_000
MAX_THREADS = 65_536
MAX_WARMUP = 1_000
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: past that a "timeout" protects nothing
MIN_TIMEOUT_S = 0.1  # below this no program even starts: every run would fail
MAX_CPU = 1023  # glibc's CPU_SETSIZE: the launcher pins with a cpu_set_t


def whole(name: str, value: object, lo: int, hi: int) -> int:
    """A whole number in [lo, hi]: an int (not a bool), or a string of ASCII digits."""
    if isinstance(value, bool) or isinstance(value, float):
        raise UsageError(f"{name} must be a whole number, not {value!r}")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        if not WHOLE.fullmatch(text):
            raise UsageError(f"{name} must be a whole number, not {text[:40]!r}")
        number = int(text)
    if number < lo:
        raise UsageError(f"{name} must be at least {lo}, not {number}")
    if number > hi:
        raise UsageError(f"{name} must be at most {hi}, not {number}")
    return number


def seconds(name: str, value: object, lo_exclusive: float = 0.0, hi: float = MAX_TIMEOUT_S) -> float:
    """A finite number of seconds in (lo, hi]: an int or float (not a bool), or a decimal string."""
    if isinstance(value, bool):
        raise UsageError(f"{name} must be a number of seconds, not {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = str(value).strip()
        if not DECIMAL.fullmatch(text):
            raise UsageError(f"{name} must be a number of seconds like 30 or 2.5, not {text[:40]!r}")
        number = float(text)
    if not math.isfinite(number) or not lo_exclusive < number <= hi:
        raise UsageError(f"{name} must be more than {lo_exclusive:g} and at most {hi:g} seconds, not {number:g}")
    return number


def factor(name: str, value: object, hi: float = 1000.0) -> float:
    """A positive finite multiplier (a manifest's timeout_factor)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{name} must be a number, not {value!r}")
    number = float(value)
    if not math.isfinite(number) or not 0 < number <= hi:
        raise UsageError(f"{name} must be more than 0 and at most {hi:g}, not {number:g}")
    return number


def reps(value: object) -> int:
    return whole("--reps", value, 1, MAX_REPS)


def threads(value: object, name: str = "--threads") -> int:
    return whole(name, value, 1, MAX_THREADS)


def warmup(value: object, name: str = "--warmup") -> int:
    return whole(name, value, 0, MAX_WARMUP)


def cpu_list(text: str, name: str = "--cpus") -> set[int]:
    """A CPU list like 0,2 or 0-3, each CPU one this process may use."""
    cpus: set[int] = set()
    for part in str(text).split(","):
        lo, dash, hi = part.strip().partition("-")
        if not lo.isascii() or not lo.isdigit() or (dash and (not hi.isascii() or not hi.isdigit())):
            raise UsageError(f"{name} takes a list like 0,1 or 0-3, not '{str(text)[:40]}'")
        first, last = int(lo), int(hi) if dash else int(lo)
        if last < first or last > MAX_CPU:  # checked before the range is built: 0-999999999 is no set
            raise UsageError(f"{name} {text}: CPUs go from 0 to at most {MAX_CPU}, low to high")
        cpus.update(range(first, last + 1))
    allowed = os.sched_getaffinity(0)
    if not cpus <= allowed:
        raise UsageError(f"{name} {text}: this machine offers CPUs {','.join(map(str, sorted(allowed)))}")
    return cpus


def comma_list(value: str) -> list[str]:
    """A comma list whose items are all non-empty: `--impl ,` names nothing and is an error."""
    items = [v.strip() for v in str(value).split(",")]
    if not items or any(not v for v in items):
        raise UsageError(f"empty item in the list '{value[:60]}'")
    return items


MAX_NAME = 255  # bytes in one file name (NAME_MAX)


def results_path(path: Path) -> Path:
    """A results folder's path, checked before anything touches it: it must be text the file
    system and the database can hold (no stray bytes), with no part longer than a file name may be."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"--results: the path has bytes that are not UTF-8 text: {text.encode('utf-8', 'backslashreplace').decode()[:80]}") from None
    long = [part for part in path.parts if len(part.encode()) > MAX_NAME]
    if long:
        raise UsageError(f"--results: a part of the path is longer than {MAX_NAME} bytes ({long[0][:40]}…)")
    return path


def folder_path(path: Path, name: str) -> Path:
    """A folder given on the command line, resolved; a symlink loop or an unusable path is bad input."""
    try:
        text = str(path)
        text.encode("utf-8")
        return path.resolve(strict=False)
    except UnicodeEncodeError:
        raise UsageError(f"{name}: the path has bytes that are not UTF-8 text") from None
    except (RuntimeError, OSError) as exc:
        raise UsageError(f"{name} {str(path)[:80]}: {getattr(exc, 'strerror', None) or exc}") from None


def fraction(name: str, value: object) -> float:
    """A change like 2%, 0.5% or 0.02 as a fraction in [0, 1)."""
    text = str(value).strip()
    percent = text.endswith("%")
    number = text[:-1].strip() if percent else text
    if not DECIMAL.fullmatch(number):
        raise UsageError(f"{name} takes a change like 2% or 0.02, not {text[:40]!r}")
    result = float(number) / (100 if percent else 1)
    if not 0 <= result < 1:
        raise UsageError(f"{name} must be from 0% to under 100%, not {text[:40]}")
    return result
