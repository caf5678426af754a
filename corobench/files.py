"""Files corobench writes into folders others may share (results/, report/): written safely.

A fixed name opened for writing would follow a symlink someone planted there, and root would
truncate whatever it points to. So every file is first written under a fresh, unique name
(O_EXCL: never an existing file or link) and then renamed over the fixed name; a rename replaces
a planted link itself, not its target. Readers never see a half-written file.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


@contextmanager
def replacing(path: Path, mode: str = "w") -> Iterator[IO]:
    """Write `path` through a unique temporary file in the same folder, renamed over it at the end."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, mode) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_text(path: Path, text: str) -> None:
    with replacing(path) as f:
        f.write(text)


def probe_writable(folder: Path) -> None:
    """Prove the folder takes a new file (OSError if not), without touching any existing name."""
    fd, tmp = tempfile.mkstemp(prefix=".write-test.", dir=folder)
    os.close(fd)
    os.unlink(tmp)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock (flock) on a lock file, for a read-modify-write shared between processes."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_toml(path: Path, what: str) -> dict:
    """A TOML file a person wrote (a suite, a hosts file), or a one-line UsageError saying why not."""
    import tomllib

    from corobench.errors import UsageError

    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path} is not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{what} {path} is not valid TOML: {str(exc)[:200]}") from None
    except RecursionError:
        raise UsageError(f"{what} {path} nests arrays or tables deeper than a {what} can") from None
    refuse_nul(data, f"{what} {path}")
    return data


def refuse_nul(data: dict, source: str) -> None:
    """Exit 2 with one line when a TOML document has a NUL in a string (see nul_in)."""
    from corobench.errors import UsageError

    where = nul_in(data)
    if where is not None:
        raise UsageError(f"{source}: {where} holds a NUL character, which no name, path or option can")


def nul_in(data) -> str | None:
    """Where a TOML document has a string (key or value) with a NUL in it ('\\u0000' is valid
    TOML), or None: such a string would reach a file name, an argv or an address, none of which
    can hold one."""
    stack: list[tuple[str, object]] = [("the file", data)]
    while stack:  # iterative: TOML nests as deep as the parser allows
        where, value = stack.pop()
        if isinstance(value, str):
            if "\0" in value:
                return where
        elif isinstance(value, dict):
            for key, item in value.items():
                if "\0" in key:
                    return f"a key of {where}"
                stack.append((f"'{key}'", item))
        elif isinstance(value, list):
            stack.extend((where, item) for item in value)
    return None
