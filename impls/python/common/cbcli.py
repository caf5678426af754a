"""Shared helper for the Python implementations of corobench (docs/protocol.md).

Flag parsing and validation, the checksum range check and the one JSON output line.
Bad input => exit 2 with one line on stderr and nothing on stdout (fail());
a refused resource => exit 3 with one line on stderr (refused()).

The parser is hand-written rather than argparse: argparse accepts abbreviated long
flags, silently lets a repeated flag win and prints usage on several lines, all of which
the protocol forbids.
"""

import ipaddress
import json
import os
import re
import sys

MAX_CHECKSUM = (1 << 63) - 1
ETYPES = ("int", "str", "str_ptr", "str_clone")

# Server flags (docs/protocol.md "Servers"), shared by echo and http.
SERVER_FLAGS = (
    ("host", None, "--host", "host", "127.0.0.1"),
    ("port", None, "--port", (0, 65535), 0),
    ("threads", None, "--threads", "count", None),
    ("variant", None, "--variant", "variant", None),
    ("allow_remote", None, "--allow-remote", "switch", False),
)
SERVER_SCENARIOS = ("echo", "http")

# (key, short, long, kind, default); kind: count (>= 1), count0 (>= 0), (min, max) an integer
# range, etype, variant, string, host (an IP literal), switch (a flag without a value)
SPECS = {
    "chain": (
        ("workers", "-w", "--workers", "count", 1000),
        ("events", "-e", "--events", "count", 10000),
        ("queue", "-q", "--queue", "count", 256),
        ("etype", "-t", "--etype", "etype", "int"),
        ("esize", "-s", "--esize", "count", 10),
        ("threads", None, "--threads", "count", None),
        # --warmup 0 is accepted: it is the default and asks for no warm-up pass.
        ("warmup", None, "--warmup", "count0", 0),
        ("cpuprofile", None, "--cpuprofile", "string", None),
    ),
    "tasks": (
        ("tasks", "-n", "--tasks", "count", 10000),
        ("sleep_ms", "-d", "--sleep-ms", "count0", 10000),
        ("threads", None, "--threads", "count", None),
    ),
    "blocking": (
        ("tasks", "-n", "--tasks", "count", 1000),
        ("iterations", "-i", "--iterations", "count", 1000),
        ("bytes", "-b", "--bytes", "count", 10),
        ("variant", None, "--variant", "variant", None),
        ("threads", None, "--threads", "count", None),
    ),
    "echo": SERVER_FLAGS + (
        ("size", None, "--size", (1, 1048576), 17),
        ("uuids", None, "--uuids", (0, 1000), 5),
        # replies after which the server closes a connection; 0: until the client closes it
        ("per_connection", None, "--per-connection", (0, 1000000000), 0),
    ),
    "http": SERVER_FLAGS,
}

_INT_RE = re.compile(r"[+-]?[0-9]+\Z")


def _one_line(msg):
    return " ".join(str(msg).split())


def fail(msg):
    """Bad input: one line on stderr, nothing on stdout, exit 2."""
    sys.stderr.write(_one_line(msg) + "\n")
    sys.stderr.flush()
    raise SystemExit(2)


def refused(msg):
    """The machine refused a resource: one line on stderr, exit 3."""
    sys.stderr.write(_one_line(msg) + "\n")
    sys.stderr.flush()
    raise SystemExit(3)


def refused_now(msg):
    """Like refused(), but exits at once (os._exit) without unwinding: after a MemoryError,
    tearing down a million half-built tasks would itself fail and print a flood of errors."""
    try:
        sys.stderr.write(_one_line(msg) + "\n")
        sys.stderr.flush()
    finally:
        os._exit(3)


def _parse_int(flag, text, minimum):
    if not _INT_RE.match(text):
        fail(f"{flag}: not an integer: '{text}'")
    v = int(text)
    if v < minimum:
        fail(f"{flag}: must not be negative: {text}" if minimum == 0 else f"{flag}: must be positive: {text}")
    if v > MAX_CHECKSUM:
        fail(f"{flag}: too large: {text}")
    return v


def _parse_host(flag, text):
    try:
        ipaddress.ip_address(text)
    except ValueError:
        fail(f"{flag}: not an IP address literal: '{text}'")
    return text


def _parse_etype(flag, text):
    if text in ("0", "1", "2", "3"):
        return ETYPES[int(text)]
    if text in ETYPES:
        return text
    fail(f"{flag}: unknown event type '{text}' (expected 0-3 or {', '.join(ETYPES)})")


def parse_args(argv, prog_id, variants=None, single_threaded=True, cpuprofile=False):
    """Parse `<scenario> [flags]` into a dict (plus 'expected', the predicted checksum, for the
    batch scenarios). `variants` maps a scenario to its variants, the first being the default."""
    if not argv:
        fail(f"missing scenario (expected one of: {', '.join(SPECS)})")
    scenario = argv[0]
    spec = SPECS.get(scenario)
    if spec is None:
        fail(f"unknown scenario '{scenario}' (expected one of: {', '.join(SPECS)})")

    by_name = {}
    for f in spec:
        by_name[f[2]] = f
        if f[1]:
            by_name[f[1]] = f
    seen = {}
    i = 1
    while i < len(argv):
        arg = argv[i]
        name, value = arg, None
        if arg.startswith("--"):
            if "=" in arg:
                name, value = arg.split("=", 1)
        elif not arg.startswith("-") or len(arg) == 1:
            fail(f"unexpected argument '{arg}'")
        f = by_name.get(name)
        if f is None:
            fail(f"unknown flag '{name}' for scenario {scenario}")
        if f[0] in seen:
            fail(f"flag {f[2]} given more than once")
        if f[3] == "switch":
            if value is not None:
                fail(f"flag {f[2]} takes no value")
            value = ""
        elif value is None:
            if i + 1 >= len(argv):
                fail(f"flag {name} needs a value")
            i += 1
            value = argv[i]
        seen[f[0]] = value
        i += 1

    out = {"scenario": scenario}
    for key, _short, flag, kind, default in spec:
        given = key in seen
        text = seen.get(key)
        if kind == "count":
            out[key] = _parse_int(flag, text, 1) if given else default
        elif kind == "count0":
            out[key] = _parse_int(flag, text, 0) if given else default
        elif isinstance(kind, tuple):
            out[key] = _parse_int(flag, text, kind[0]) if given else default
            if out[key] > kind[1]:
                fail(f"{flag}: out of range {kind[0]} .. {kind[1]}: {text}")
        elif kind == "etype":
            out[key] = _parse_etype(flag, text) if given else default
        elif kind == "host":
            out[key] = _parse_host(flag, text) if given else default
        elif kind == "switch":
            out[key] = given
        elif kind == "variant":
            names = (variants or {}).get(scenario, ())
            out["variant_given"] = given
            if not given:
                out[key] = names[0] if names else None
            elif text in names:
                out[key] = text
            elif not names:
                fail(f"{flag}: {prog_id} has no variants of {scenario} (got '{text}')")
            else:
                fail(f"{flag}: unknown variant '{text}' for {prog_id} (expected one of: {', '.join(names)})")
        elif kind == "string":
            if given and text == "":
                fail(f"{flag}: empty value")
            out[key] = text if given else default
        else:
            raise AssertionError(kind)

    if out.get("cpuprofile") is not None and not cpuprofile:
        fail(f"--cpuprofile is not supported by {prog_id}")
    if out.get("threads") is not None and single_threaded and out["threads"] != 1:
        fail(f"--threads {out['threads']}: {prog_id} is single-threaded by design (only --threads 1 is accepted)")

    if scenario in SERVER_SCENARIOS:
        if not out["allow_remote"] and not ipaddress.ip_address(out["host"]).is_loopback:
            fail(f"--host {out['host']}: not a loopback address (give --allow-remote to serve other addresses)")
        return out

    if scenario == "chain":
        expected = out["workers"] * out["events"] * out["esize"]
    elif scenario == "tasks":
        expected = out["tasks"]
    else:
        expected = out["tasks"] * out["iterations"] * out["bytes"]
    if expected > MAX_CHECKSUM:
        fail(f"expected checksum {expected} is beyond 2^63-1")
    out["expected"] = expected
    return out


def emit(obj):
    """Print the result line on stdout (the only thing ever printed there)."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()
