"""Robustness attack (issues 20 and 28): mutated traces and config overrides through ``nandlab
run`` in subprocesses with an address-space cap and a CPU-time limit (60 CPU s; 600 s of wall
time for a case that blocks), each case classified.

``python -m nandlab._attack --traces N --framing N --configs N [--seed S] [--jobs J]
[--seeds DIR]... [--json OUT]``

Three kinds of case: ``trace`` (field- and byte-level mutations of a trace: values may change,
so only the outcome is classified), ``framing`` (issue 28: damage a strict reader must either
undo or refuse — two records glued by a lost line break, line endings mixed after the first
4 KiB, a file cut inside its last line, a damaged first line, damaged blkparse events; each
mutant is compared with the trace it came from) and ``config`` (hostile ``--set`` values).

Classes: ``clean_error`` (exit 2, one line ``error: …``), ``accepted`` (exit 0 with a report;
for a ``framing`` case, with the original's request count and byte total), and the failures
``silent`` (a ``framing`` mutant accepted with another request count or byte total than the
original: a request lost or changed), ``panic``, ``traceback``, ``hang``, ``over_memory``,
``abort``, ``other``. The corpus is generated from the bundled traces, the test samples (and
the files of ``--seeds DIR``) and the packaged presets by a seeded RNG, so a failing case is
reproducible from its seed and index; nothing is checked in. ``framing`` cases run on a
1 GiB device with offsets folded onto it and nothing preconditioned (the reader is under test,
not the device model).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import gzip
import json
import random
import re
import resource
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

FAILURES = ("silent", "panic", "traceback", "hang", "over_memory", "abort", "other")
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


def _seed_lines(extra: list[Path] | None = None) -> list[tuple[str, list[str]]]:
    """(name, first lines) of every bundled trace and test sample, and of the trace files in
    the ``extra`` directories."""
    out: list[tuple[str, list[str]]] = []
    dirs = [
        _data_dir(),
        Path(__file__).resolve().parents[2] / "crates/nandlab-core/tests/data/trace",
        *(extra or []),
    ]
    for d in dirs:
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if p.suffix in (".md", ".json") or not p.is_file() or p.name.endswith(".jsonl.gz"):
                continue
            opener: Any = gzip.open if p.suffix == ".gz" else open
            with opener(p, "rt", errors="replace", newline="") as f:
                lines = [ln.rstrip("\r\n") for _, ln in zip(range(200), f)]
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


FRAMING = ("glued", "mixed_endings", "cut_last_line", "damaged_first_line", "blkparse_event")

#: Letters that are no digit, hex digit, op letter or blkparse action: a first character
#: replaced by one of them can only be a damaged record.
_NOT_A_VALUE = "ghijklnopqtuvxyzHJKLNOVYZ!$%&*<>?@^_~"


def _is_blkparse(lines: list[str]) -> bool:
    return any(re.match(r"^\s*\d+,\d+\s+\d+\s+\d+\s+[\d.]+\s+\d+\s+\S+", ln) for ln in lines)


def _data_index(lines: list[str]) -> int | None:
    """The first line that is neither blank nor a comment."""
    return next((i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith("#")), None)


def mutate_framing(rng: random.Random, seeds: list[tuple[str, list[str]]]) -> tuple[str, str, str]:
    """One framing mutant: (kind, original text, mutated text). The original is a seed's first
    lines, LF-terminated; a strict reader reads the mutant exactly as the original or refuses
    it (`glued` with a `\r` between the two lines and `mixed_endings` must be read)."""
    blk = [s for s in seeds if _is_blkparse(s[1])]
    kind = rng.choice(FRAMING if blk else FRAMING[:-1])
    _, lines = rng.choice(blk if kind == "blkparse_event" else seeds)
    lines = list(lines[: rng.randint(min(3, len(lines)), len(lines))])
    orig = "\n".join(lines) + "\n"
    if kind == "glued":
        i = rng.randrange(max(1, len(lines) - 1))
        sep = rng.choice(["", "", "", "", "\r", " ", ",", "\t"])
        lines[i : i + 2] = [sep.join(lines[i : i + 2])]
        text = "\n".join(lines) + "\n"
    elif kind == "mixed_endings":
        # LF for the first 4 KiB (or a random share of a shorter text), then other endings.
        at = 4096 if len(orig) > 4096 + 200 else rng.randrange(len(orig))
        head_end = orig.find("\n", at) + 1 or len(orig)
        head, tail = orig[:head_end], orig[head_end:]
        style = rng.choice(["cr", "crlf", "mix"])
        parts = tail.split("\n")
        ends = [
            {"cr": "\r", "crlf": "\r\n", "mix": rng.choice(["\r", "\r\n", "\n"])}[style]
            for _ in parts[:-1]
        ]
        tail = "".join(p + e for p, e in zip(parts, ends)) + parts[-1]
        if rng.random() < 0.3:  # the reverse: CR-only first, LF later
            head = head.replace("\n", "\r")
        text = head + tail
    elif kind == "cut_last_line":
        last = lines[-1]
        keep = rng.randint(1, len(last)) if last else 0
        text = "\n".join([*lines[:-1], last[:keep]])
    elif kind == "damaged_first_line":
        i = _data_index(lines)
        if i is None:
            return mutate_framing(rng, seeds)
        ln = lines[i]
        lead = len(ln) - len(ln.lstrip())
        how = rng.randrange(3)
        if how == 0:  # the first character replaced
            ln = ln[:lead] + rng.choice(_NOT_A_VALUE) + ln[lead + 1 :]
        elif how == 1:  # garbage before it
            ln = ln[:lead] + "".join(rng.choices(_NOT_A_VALUE, k=rng.randint(1, 4))) + ln[lead:]
        else:  # the first field replaced by a word
            sep = "," if "," in ln else " "
            fields = ln[lead:].split(sep)
            fields[0] = rng.choice(["x", "Time", "header", "-", "N/A"])
            ln = ln[:lead] + sep.join(fields)
        lines[i] = ln
        text = "\n".join(lines) + "\n"
    else:  # blkparse_event: damage an event line so that it cannot parse
        events = [i for i, ln in enumerate(lines) if _is_blkparse([ln])]
        i = rng.choice(events)
        tok = lines[i].split()
        how = rng.randrange(7)
        if how == 0:
            tok[6] = rng.choice(["X", "Q", "WR", "K", "w", "RW", "Z"])  # RWBS
        elif how == 1:
            del tok[3]  # the time
        elif how == 2:
            tok[5] = rng.choice(["K", "DD", "d", "E", "Y", "QQ"])  # action
        elif how == 3:
            tok = ["".join(rng.choices(_NOT_A_VALUE + "0123456789 ,.", k=rng.randint(1, 40)))]
        elif how == 4:
            tok[0] = tok[0].replace(",", rng.choice([".", ";", ""]))  # maj,min
        elif how == 5 and "+" in tok:
            k = tok.index("+")
            if k + 1 < len(tok) and len(tok[k + 1]) > 1:
                tok[k + 1] = tok[k + 1][0] + " " + tok[k + 1][1:]  # nsectors split
            else:
                del tok[k]
        else:
            tok.insert(rng.randint(1, len(tok)), rng.choice(["7", "x", "+", "0,0"]))
        lines[i] = "  " + " ".join(tok)
        text = "\n".join(lines) + "\n"
    return kind, orig, text


#: Framing cases test the reader: a small device (1 GiB, offsets folded onto it, nothing
#: preconditioned) keeps each run short and within the memory cap whatever the trace's span.
_FRAMING_SETS = (
    "--set", 'precondition.fill="none"',
    "--set", 'device.logical_capacity_bytes="1GiB"',
    "--set", "ftl.wrap_offsets=true",
)  # fmt: skip


def _totals(path: Path) -> tuple[int, int] | None:
    """(requests, bytes) of a trace as the reader reads it, or None if it refuses it."""
    from nandlab import _core

    try:
        out = json.loads(_core.parse_only(str(path), "{}"))
    except Exception:
        return None
    return int(out["requests"]), int(out["bytes"])


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


def classify(args: list[str], expect: tuple[int, int] | None = None) -> tuple[str, str]:
    """Run ``nandlab run ARGS`` capped; returns (class, detail). With ``expect`` (requests,
    bytes), a run accepted with other totals is ``silent``."""
    cls, detail, report = _run_capped(args)
    if cls == "accepted" and expect is not None and report is not None:
        host = report.get("host", {})
        nbytes = host.get("read_bytes", 0) + host.get("write_bytes", 0)
        got = (int(host.get("requests", -1)), nbytes)
        if got != expect:
            return "silent", f"{got[0]} requests, {got[1]} bytes; the original {expect}"
    return cls, detail


def _run_capped(args: list[str]) -> tuple[str, str, dict[str, Any] | None]:
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "r.json"
        cmd = [sys.executable, "-m", "nandlab", "run", *args, "--json", str(out), "--no-progress"]
        try:
            p = subprocess.run(
                cmd, capture_output=True, text=True, timeout=WALL_TIMEOUT_S, preexec_fn=_cap
            )
        except subprocess.TimeoutExpired:
            return "hang", " ".join(args), None
        if p.returncode in (-24, -9, 152):  # SIGXCPU (or SIGKILL at the hard limit)
            return "hang", f"over {TIMEOUT_S:g} CPU s: " + " ".join(args), None
        err = p.stderr.strip()
        if "panicked" in err:
            return "panic", err[-300:], None
        if "Traceback" in err:
            return ("over_memory" if "MemoryError" in err else "traceback"), err[-300:], None
        if "memory allocation" in err:
            return "over_memory", err[-300:], None
        if p.returncode == 0:
            try:
                report = json.loads(out.read_text())
            except (OSError, ValueError):
                return "other", "exit 0 without a report", None
            return "accepted", "", report
        if p.returncode == 2:
            lines = [ln for ln in err.splitlines() if ln.strip()]
            if len(lines) == 1 and lines[0].startswith("error:"):
                return "clean_error", lines[0][:200], None
            return "other", err[-300:], None
        if p.returncode in (-6, 134):
            return "abort", err[-300:], None
        return "other", f"exit {p.returncode}: {err[-300:]}", None


def attack(
    n_traces: int,
    n_configs: int,
    seed: int,
    jobs: int,
    n_framing: int = 0,
    seed_dirs: list[Path] | None = None,
    keep: Path | None = None,
) -> dict[str, Any]:
    """Run the attack; returns counts per kind and class (and per framing mutation), and the
    failing cases. ``keep``: write the framing mutants there (else a temporary directory)."""
    from nandlab import _core

    rng = random.Random(seed)
    seeds = _seed_lines(seed_dirs)
    keys = list(_core.config_keys())
    small = str(_data_dir() / "msr_hm_0_sample1000.csv")
    with tempfile.TemporaryDirectory() as td:
        work = keep or Path(td)
        work.mkdir(parents=True, exist_ok=True)
        cases: list[tuple[str, list[str], tuple[int, int] | None]] = []
        for i in range(n_traces):
            p = work / f"t{i}.trace"
            p.write_bytes(mutate_trace(rng, seeds))
            cases.append(("trace", ["--trace", str(p)], None))
        kinds: list[str] = []
        while len(kinds) < n_framing:
            kind, orig, text = mutate_framing(rng, seeds)
            i = len(kinds)
            po = work / f"f{i}.orig"
            po.write_bytes(orig.encode("utf-8", errors="replace"))
            expect = _totals(po)
            if expect is None:  # the original is refused (e.g. no request): draw again
                continue
            p = work / f"f{i}.{kind}"
            p.write_bytes(text.encode("utf-8", errors="replace"))
            kinds.append(kind)
            cases.append(("framing", ["--trace", str(p), *_FRAMING_SETS], expect))
        for _ in range(n_configs):
            sets = mutate_config(rng, keys)
            cases.append(
                ("config", ["--trace", small, *[a for s in sets for a in ("--set", s)]], None)
            )
        counts: dict[str, Counter[str]] = {"trace": Counter(), "framing": Counter(),
                                           "config": Counter()}  # fmt: skip
        by_mutation: dict[str, Counter[str]] = {k: Counter() for k in FRAMING}
        failures: list[dict[str, str]] = []
        with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
            results = ex.map(lambda c: classify(c[1], c[2]), cases)
            framing = iter(kinds)
            for (kind, args, _), (cls, detail) in zip(cases, results):
                counts[kind][cls] += 1
                if kind == "framing":
                    by_mutation[next(framing)][cls] += 1
                if cls in FAILURES:
                    failures.append({"kind": kind, "class": cls, "args": " ".join(args),
                                     "detail": detail})  # fmt: skip
    return {
        "seed": seed,
        "counts": {k: dict(v) for k, v in counts.items() if v},
        "framing": {k: dict(v) for k, v in by_mutation.items() if v},
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nandlab._attack", description=__doc__)
    ap.add_argument("--traces", type=int, default=100)
    ap.add_argument("--framing", type=int, default=100)
    ap.add_argument("--configs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--seeds", type=Path, action="append", default=[], metavar="DIR",
        help="more trace files to mutate (their first 200 lines), e.g. shared/traces/other",
    )  # fmt: skip
    ap.add_argument("--keep", type=Path, default=None, help="write the mutants here")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    res = attack(a.traces, a.configs, a.seed, a.jobs, a.framing, a.seeds, a.keep)
    text = json.dumps(res, indent=1)
    if a.json:
        a.json.write_text(text)
    print(json.dumps(res["counts"]))
    print(json.dumps(res["framing"]))
    for f in res["failures"][:20]:
        print(f"{f['kind']} {f['class']}: {f['args']}\n  {f['detail']}")
    return 1 if res["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
