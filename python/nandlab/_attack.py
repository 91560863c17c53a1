"""Robustness attack (issue 20): mutated traces and config overrides through ``nandlab run`` in
subprocesses with an address-space cap and a CPU-time limit (60 CPU s; 600 s of wall time for
a case that blocks), each case classified.

``python -m nandlab._attack --traces N --configs N [--seed S] [--jobs J] [--json OUT]``

Classes: ``clean_error`` (exit 2, one line ``error: …``), ``accepted`` (exit 0 with a report),
and the failures ``panic``, ``traceback``, ``hang``, ``over_memory``, ``abort``, ``other``. The
corpus is generated from the bundled traces and the packaged presets by a seeded RNG, so a
failing case is reproducible from its seed and index; nothing is checked in.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import gzip
import json
import random
import resource
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

FAILURES = ("panic", "traceback", "hang", "over_memory", "abort", "other")
CAP_BYTES = 4 << 30
#: A case that uses this much CPU time is a hang (RLIMIT_CPU: CPU time, so a case on a
#: machine shared with builds is not called a hang for waiting for a core).
TIMEOUT_S = 60.0
#: Wall-clock limit for a case that blocks without using CPU (a deadlock, a read that never
#: returns).
WALL_TIMEOUT_S = 600.0

_HOSTILE = [
    "0", "-1", "18446744073709551615", "18446744073709551616", "9999999999999999999",
    "4294967296", "1e308", "nan", "inf", "1e-300", "", "\"\"", "\"x\"", "[]", "[1, -2]",
    "true", "{}", "281474976710656", "68719476737", "0.0", "-0.0", "1e6", "65536",
]  # fmt: skip
_FIELD_HOSTILE = [
    "0", "-1", "18446744073709551615", "9999999999999999999", "4611686018427387904",
    "1152921504606846976", "1e9", "nan", "", " ", "R", "W", "D", "x", "\ufeff", "2", "0.5",
]  # fmt: skip


def _data_dir() -> Path:
    return Path(__file__).resolve().parent / "data"


def _seed_lines() -> list[tuple[str, list[str]]]:
    """(name, first lines) of every bundled trace and test sample."""
    out: list[tuple[str, list[str]]] = []
    dirs = [
        _data_dir(),
        Path(__file__).resolve().parents[2] / "crates/nandlab-core/tests/data/trace",
    ]
    for d in dirs:
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if p.suffix == ".md":
                continue
            opener: Any = gzip.open if p.suffix == ".gz" else open
            with opener(p, "rt", errors="replace") as f:
                lines = [ln.rstrip("\n") for _, ln in zip(range(200), f)]
            out.append((p.name, lines))
    return out


def mutate_trace(rng: random.Random, seeds: list[tuple[str, list[str]]]) -> bytes:
    """One mutated trace: a seed's lines with a few field- and byte-level mutations."""
    name, lines = rng.choice(seeds)
    lines = list(lines[: rng.randint(1, len(lines))])
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        sep = "," if "," in lines[i] else None
        fields = lines[i].split(sep)
        kind = rng.randrange(8)
        if kind == 0 and fields:
            fields[rng.randrange(len(fields))] = rng.choice(_FIELD_HOSTILE)
        elif kind == 1 and fields:
            del fields[rng.randrange(len(fields))]
        elif kind == 2:
            fields.insert(rng.randrange(len(fields) + 1), rng.choice(_FIELD_HOSTILE))
        elif kind == 3:
            lines.insert(i, lines[i])
        elif kind == 4:
            lines[i] = "".join(chr(rng.randrange(256)) for _ in range(rng.randint(0, 60)))
            continue
        elif kind == 5:
            rng.shuffle(lines)
        elif kind == 6:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
            continue
        lines[i] = (sep or " ").join(fields)
    text = "\n".join(lines) + "\n"
    end = rng.randrange(10)
    if end == 0:
        text = text.replace("\n", "\r")
    elif end == 1:
        text = text.replace("\n", "\r\n")
    elif end == 2:
        text = "\ufeff" + text
    data = text.encode("utf-8", errors="replace")
    if name.endswith(".gz") and rng.random() < 0.3:
        data = gzip.compress(data)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]  # truncated stream
    return data


def mutate_config(rng: random.Random, keys: list[str]) -> list[str]:
    """One to three ``--set`` overrides of real keys with hostile values."""
    return [
        f"{rng.choice(keys).replace('[]', '')}={rng.choice(_HOSTILE)}"
        for _ in range(rng.randint(1, 3))
    ]


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))
    cpu = int(TIMEOUT_S)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


def classify(args: list[str]) -> tuple[str, str]:
    """Run ``nandlab run ARGS`` capped; returns (class, detail)."""
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "r.json"
        cmd = [sys.executable, "-m", "nandlab", "run", *args, "--json", str(out), "--no-progress"]
        try:
            p = subprocess.run(
                cmd, capture_output=True, text=True, timeout=WALL_TIMEOUT_S, preexec_fn=_cap
            )
        except subprocess.TimeoutExpired:
            return "hang", " ".join(args)
        if p.returncode in (-24, -9, 152):  # SIGXCPU (or SIGKILL at the hard limit)
            return "hang", f"over {TIMEOUT_S:g} CPU s: " + " ".join(args)
        err = p.stderr.strip()
        if "panicked" in err:
            return "panic", err[-300:]
        if "Traceback" in err:
            return ("over_memory" if "MemoryError" in err else "traceback"), err[-300:]
        if "memory allocation" in err:
            return "over_memory", err[-300:]
        if p.returncode == 0:
            try:
                json.loads(out.read_text())
            except (OSError, ValueError):
                return "other", "exit 0 without a report"
            return "accepted", ""
        if p.returncode == 2:
            lines = [ln for ln in err.splitlines() if ln.strip()]
            if len(lines) == 1 and lines[0].startswith("error:"):
                return "clean_error", lines[0][:200]
            return "other", err[-300:]
        if p.returncode in (-6, 134):
            return "abort", err[-300:]
        return "other", f"exit {p.returncode}: {err[-300:]}"


def attack(n_traces: int, n_configs: int, seed: int, jobs: int) -> dict[str, Any]:
    """Run the attack; returns counts per kind and class, and the failing cases."""
    from nandlab import _core

    rng = random.Random(seed)
    seeds = _seed_lines()
    keys = list(_core.config_keys())
    small = str(_data_dir() / "msr_hm_0_sample1000.csv")
    with tempfile.TemporaryDirectory() as td:
        cases: list[tuple[str, list[str]]] = []
        for i in range(n_traces):
            p = Path(td) / f"t{i}.trace"
            p.write_bytes(mutate_trace(rng, seeds))
            cases.append(("trace", ["--trace", str(p)]))
        for _ in range(n_configs):
            sets = mutate_config(rng, keys)
            cases.append(("config", ["--trace", small, *[a for s in sets for a in ("--set", s)]]))
        counts: dict[str, Counter[str]] = {"trace": Counter(), "config": Counter()}
        failures: list[dict[str, str]] = []
        with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
            for (kind, args), (cls, detail) in zip(cases, ex.map(lambda c: classify(c[1]), cases)):
                counts[kind][cls] += 1
                if cls in FAILURES:
                    failures.append({"kind": kind, "class": cls, "args": " ".join(args),
                                     "detail": detail})  # fmt: skip
    return {
        "seed": seed,
        "counts": {k: dict(v) for k, v in counts.items()},
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nandlab._attack", description=__doc__)
    ap.add_argument("--traces", type=int, default=100)
    ap.add_argument("--configs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    res = attack(a.traces, a.configs, a.seed, a.jobs)
    text = json.dumps(res, indent=1)
    if a.json:
        a.json.write_text(text)
    print(json.dumps(res["counts"]))
    for f in res["failures"][:20]:
        print(f"{f['kind']} {f['class']}: {f['args']}\n  {f['detail']}")
    return 1 if res["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
