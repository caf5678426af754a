"""An implementation's manifest (impls/<language>/<runtime>/manifest.toml), parsed and checked.

The harness knows nothing about any language: everything it needs to build, probe and run an
implementation is declared here (see docs/protocol.md).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from corobench import validate
from corobench.errors import UsageError
from corobench.files import refuse_nul

ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")
VARIANT_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*$")  # e.g. block_in_place, as the API is called
KNOWN_KEYS = {
    "id", "language", "runtime", "description", "scenarios", "requires", "check", "version", "info",
    "build", "build_inputs", "build_outputs", "run", "threads", "warmup", "timeout_factor",
    "variants", "env", "system_packages", "notes",
}


@dataclass(frozen=True)
class ThreadControl:
    """How `--threads N` reaches the runtime: a flag, an environment variable, or not at all."""

    mode: str  # "flag" | "env" | "none"
    env_var: str | None = None


@dataclass(frozen=True)
class Manifest:
    id: str
    language: str
    runtime: str
    folder: Path
    scenarios: tuple[str, ...]
    run: tuple[str, ...]
    version: tuple[str, ...]
    description: str = ""
    info: tuple[str, ...] = ()  # prints runtime settings (GC, heap, pools)
    requires: tuple[str, ...] = ()
    check: tuple[str, ...] = ()
    build: tuple[str, ...] = ()
    build_inputs: tuple[str, ...] = (".",)
    build_outputs: tuple[str, ...] = ()
    threads: ThreadControl = ThreadControl("flag")
    warmup: int = 0
    timeout_factor: float = 1.0
    variants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    apt_packages: tuple[str, ...] = ()
    notes: str = ""

    def resolve(self, argv: tuple[str, ...]) -> list[str]:
        """Make ./ and ../ argv elements absolute against the manifest's folder."""
        return [str((self.folder / a).resolve()) if a.startswith(("./", "../")) else a for a in argv]

    def variants_of(self, scenario: str) -> tuple[str, ...]:
        return self.variants.get(scenario, ())


ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# Debian package names (policy 5.6.1), optionally with an architecture: never an apt option
APT_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]{1,100}(:[a-z0-9-]+)?$")


def _strings(data: dict, key: str, path: Path, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    """A list of strings (a bare string is an error: `scenarios = "x"` is a typo for `["x"]`)."""
    value = data.get(key, list(default))
    if not isinstance(value, list) or not all(isinstance(v, str) and "\0" not in v for v in value):
        raise UsageError(f"{path}: '{key}' must be a list of strings")
    return tuple(value)


def _text(data: dict, key: str, path: Path, default: str = "") -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise UsageError(f"{path}: '{key}' must be a string, not {type(value).__name__}")
    return value


def _threads(value: object, path: Path) -> ThreadControl:
    if value in ("flag", "none"):
        return ThreadControl(str(value))
    if isinstance(value, dict) and set(value) == {"env"} and isinstance(value["env"], str) \
            and ENV_NAME.match(value["env"]):
        return ThreadControl("env", value["env"])
    raise UsageError(f"{path}: 'threads' must be \"flag\", \"none\" or {{env = \"NAME\"}} with NAME a valid "
                     "environment variable name")


def parse_manifest(path: Path, known_scenarios: set[str]) -> Manifest:
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: not a readable TOML manifest: {exc}") from None
    refuse_nul(data, str(path))
    unknown = set(data) - KNOWN_KEYS
    if unknown:
        raise UsageError(f"{path}: unknown key(s): {', '.join(sorted(unknown))}")
    for key in ("id", "language", "runtime", "scenarios", "run", "version"):
        if key not in data:
            raise UsageError(f"{path}: missing required key '{key}'")
    impl_id = data["id"]
    if not isinstance(impl_id, str) or not ID_PATTERN.match(impl_id):
        raise UsageError(f"{path}: id must match {ID_PATTERN.pattern}")
    scenarios = _strings(data, "scenarios", path)
    bad = [s for s in scenarios if s not in known_scenarios]
    if bad:
        raise UsageError(f"{path}: unknown scenario(s): {', '.join(bad)}")
    run = _strings(data, "run", path)
    if not run:
        raise UsageError(f"{path}: 'run' must not be empty")
    variants_raw = data.get("variants", {})
    if not isinstance(variants_raw, dict):
        raise UsageError(f"{path}: 'variants' must be a table of scenario = [names]")
    variants: dict[str, tuple[str, ...]] = {}
    for scenario, names in variants_raw.items():
        if scenario not in scenarios:
            raise UsageError(f"{path}: variants for '{scenario}', which the manifest does not list")
        names = _strings(variants_raw, scenario, path)
        if not names or not all(VARIANT_PATTERN.match(n) for n in names):
            raise UsageError(f"{path}: variants of '{scenario}' must be non-empty names [a-z0-9_-]")
        variants[scenario] = names
    try:
        warmup = validate.warmup(data.get("warmup", 0), "'warmup'")
        factor = validate.factor("'timeout_factor'", data.get("timeout_factor", 1.0))
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None
    env = data.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and ENV_NAME.match(k) and isinstance(v, str)
                                            and "\0" not in v for k, v in env.items()):
        raise UsageError(f"{path}: 'env' must be a table of NAME = \"value\" strings, NAME a valid environment "
                         "variable name")
    packages = data.get("system_packages", {})
    if not isinstance(packages, dict) or set(packages) - {"apt"}:
        raise UsageError(f"{path}: 'system_packages' must be a table with an 'apt' list")
    apt = _strings(packages, "apt", path)
    bad = [name for name in apt if not APT_PACKAGE.match(name)]
    if bad:
        raise UsageError(f"{path}: system_packages.apt: '{bad[0][:60]}' is not a Debian package name")
    return Manifest(
        id=impl_id,
        language=_text(data, "language", path),
        runtime=_text(data, "runtime", path),
        folder=path.parent.resolve(),
        scenarios=scenarios,
        run=run,
        version=_strings(data, "version", path),
        info=_strings(data, "info", path),
        description=_text(data, "description", path),
        requires=_strings(data, "requires", path),
        check=_strings(data, "check", path),
        build=_strings(data, "build", path),
        build_inputs=_strings(data, "build_inputs", path, (".",)),
        build_outputs=_strings(data, "build_outputs", path),
        threads=_threads(data.get("threads", "flag"), path),
        warmup=warmup,
        timeout_factor=float(factor),
        variants=variants,
        env=dict(env),
        apt_packages=apt,
        notes=_text(data, "notes", path),
    )
