"""The experiment runner: run keys, resumable grids, error rows, finding traces."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from nandlab import experiment
from nandlab.config import presets_dir
from nandlab.data import data_dir
from nandlab.experiment import (
    RUNS_FILE,
    ExperimentError,
    GridStats,
    RunSpec,
    TraceDigests,
    default_trace_dirs,
    find_traces,
    load_runs,
    run_grid,
    run_key,
)

#: Windows FILETIME of 2007-02-22 17:00:00 (MSR Cambridge timestamps are 100-ns ticks).
_T0 = 128166372000000000


def write_msr(path: Path, n: int = 200, seed: int = 1) -> Path:
    """A tiny MSR Cambridge CSV trace: mixed 4-16 KiB reads and writes over 1 GiB."""
    lines = []
    x = seed
    for i in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)
        op = "Write" if x % 3 else "Read"
        off = (x % 262144) * 4096
        size = 4096 * (1 + x % 4)
        lines.append(f"{_T0 + i * 20000},hm,0,{op},{off},{size},100")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def msr_trace(tmp_path: Path) -> Path:
    return write_msr(tmp_path / "tiny_msr.csv")


def specs3(trace: Path) -> list[RunSpec]:
    return [
        RunSpec(trace, "tiny", "baseline", "xia-diffecc", {"host.max_requests": n}, f"first {n}")
        for n in (50, 100, 150)
    ]


_REAL_EXECUTE = experiment._execute


class Counter:
    """Wraps experiment._execute to count (and optionally fail) inline runs."""

    def __init__(self, fail: set[str] | None = None) -> None:
        self.calls: list[str] = []
        self.fail = fail or set()
        self.real = _REAL_EXECUTE

    def __call__(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(payload["label"])
        if payload["label"] in self.fail:
            row = {k: payload[k] for k in experiment._TEXT_COLUMNS if k in payload}
            row["error"] = "SimError: injected failure"
            return row
        return self.real(payload)


# --------------------------------------------------------------------------- run_key


def test_run_key_stable(msr_trace: Path, tmp_path: Path) -> None:
    s = specs3(msr_trace)[0]
    k1 = run_key(s)
    assert k1 == run_key(s)
    # a fresh digest cache, and the preset given by path instead of by name
    cache = TraceDigests(tmp_path / "d.json")
    by_path = RunSpec(msr_trace, "other name", "baseline", str(presets_dir() / "xia-diffecc.toml"))
    by_path.overrides = dict(s.overrides)
    assert run_key(by_path, cache) == k1
    # override order does not matter
    a = RunSpec(msr_trace, "t", "baseline", overrides={"a.x": 1, "b.y": 2})
    b = RunSpec(msr_trace, "t", "baseline", overrides={"b.y": 2, "a.x": 1})
    assert run_key(a) == run_key(b)
    assert len(k1) == 64


def test_run_key_sensitive(msr_trace: Path, tmp_path: Path) -> None:
    base = RunSpec(msr_trace, "t", "baseline", "xia-diffecc", {"host.max_requests": 50})
    k = run_key(base)
    other_override = RunSpec(msr_trace, "t", "baseline", "xia-diffecc", {"host.max_requests": 51})
    other_scheme = RunSpec(msr_trace, "t", "diffecc_wa", "xia-diffecc", {"host.max_requests": 50})
    cfg = tmp_path / "cfg.toml"
    cfg.write_text((presets_dir() / "xia-diffecc.toml").read_text() + "\n# edited\n")
    other_config = RunSpec(msr_trace, "t", "baseline", str(cfg), {"host.max_requests": 50})
    keys = {k, run_key(other_override), run_key(other_scheme), run_key(other_config)}
    assert len(keys) == 4
    # changing the trace's content changes the key (also through the on-disk digest cache)
    cache = TraceDigests(tmp_path / ".trace_digests.json")
    k_cached = run_key(base, cache)
    cache.save()
    assert k_cached == k
    write_msr(msr_trace, n=201, seed=2)
    assert run_key(base, TraceDigests(tmp_path / ".trace_digests.json")) != k
    assert run_key(base) != k


def test_trace_digest_cache_hashes_once(msr_trace: Path, tmp_path: Path) -> None:
    cache_file = tmp_path / ".trace_digests.json"
    d = TraceDigests(cache_file)
    first = d.digest(msr_trace)
    d.save()
    saved = json.loads(cache_file.read_text())
    entry = saved[str(msr_trace.resolve())]
    assert entry["sha256"] == first and entry["size"] == msr_trace.stat().st_size
    # a cached entry is trusted while (size, mtime_ns) match: prove it by planting a fake digest
    entry["sha256"] = "f" * 64
    cache_file.write_text(json.dumps(saved))
    assert TraceDigests(cache_file).digest(msr_trace) == "f" * 64


# --------------------------------------------------------------------------- run_grid


def test_grid_rows_and_resume(msr_trace: Path, tmp_path: Path, monkeypatch: Any) -> None:
    out = tmp_path / "out"
    counter = Counter()
    monkeypatch.setattr(experiment, "_execute", counter)
    st = GridStats()
    df = run_grid(specs3(msr_trace), out, processes=1, progress=False, stats=st)
    assert (st.total, st.executed, st.skipped, st.failed) == (3, 3, 0, 0)
    assert df.height == 3
    for col in (
        "key",
        "trace",
        "scheme",
        "label",
        "params",
        "report",
        "error",
        "host.mean_us",
        "host.read_mean_us",
        "host.write_mean_us",
        "host.read_p99_us",
        "host.write_p99_us",
        "flash.erases",
        "flash.reads",
        "flash.programs",
        "write_amplification",
        "rewrites",
        "wall_s",
    ):
        assert col in df.columns, col
    assert df["label"].to_list() == ["first 50", "first 100", "first 150"]
    assert [json.loads(p) for p in df["params"]] == [
        {"host.max_requests": n} for n in (50, 100, 150)
    ]
    assert df["error"].null_count() == 3
    reports = [json.loads(r) for r in df["report"]]
    assert [r["host"]["requests"] for r in reports] == [50, 100, 150]
    assert df["host.mean_us"].to_list() == [r["host"]["mean_us"] for r in reports]
    on_disk = pl.read_parquet(out / RUNS_FILE)
    assert on_disk.height == 3
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]

    # second time: nothing runs
    counter.calls.clear()
    st2 = GridStats()
    df2 = run_grid(specs3(msr_trace), out, processes=1, progress=False, stats=st2)
    assert counter.calls == []
    assert (st2.executed, st2.skipped) == (0, 3)
    assert df2["key"].to_list() == df["key"].to_list()


def test_interrupted_grid_runs_only_the_rest(
    msr_trace: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    out = tmp_path / "out"
    specs = specs3(msr_trace)
    # an experiment that was interrupted after its first run: the parquet holds 1 of 3 rows
    run_grid(specs[:1], out, processes=1, progress=False)
    assert load_runs(out).height == 1
    counter = Counter()
    monkeypatch.setattr(experiment, "_execute", counter)
    st = GridStats()
    df = run_grid(specs, out, processes=1, progress=False, stats=st)
    assert counter.calls == ["first 100", "first 150"]
    assert (st.executed, st.skipped) == (2, 1)
    assert df.height == 3 and load_runs(out).height == 3


def test_parquet_rewritten_after_each_run(
    msr_trace: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    out = tmp_path / "out"
    seen: list[int] = []
    real = _REAL_EXECUTE

    def spy(payload: dict[str, Any]) -> dict[str, Any]:
        seen.append(load_runs(out).height)  # rows on disk when this run starts
        return real(payload)

    monkeypatch.setattr(experiment, "_execute", spy)
    run_grid(specs3(msr_trace), out, processes=1, progress=False)
    assert seen == [0, 1, 2]


def test_error_rows_recorded_and_retried(msr_trace: Path, tmp_path: Path, monkeypatch: Any) -> None:
    out = tmp_path / "out"
    flaky = Counter(fail={"first 100"})
    monkeypatch.setattr(experiment, "_execute", flaky)
    st = GridStats()
    df = run_grid(specs3(msr_trace), out, processes=1, progress=False, stats=st)
    assert (st.executed, st.failed) == (3, 1)
    err = df.filter(pl.col("label") == "first 100")
    assert err["error"].item() == "SimError: injected failure"
    assert err["report"].item() is None and err["host.mean_us"].item() is None
    # the failure does not stop the grid, and is retried next time (and now succeeds)
    fixed = Counter()
    monkeypatch.setattr(experiment, "_execute", fixed)
    st2 = GridStats()
    df2 = run_grid(specs3(msr_trace), out, processes=1, progress=False, stats=st2)
    assert fixed.calls == ["first 100"]
    assert (st2.executed, st2.skipped, st2.failed) == (1, 2, 0)
    assert df2["error"].null_count() == 3


def test_real_failure_is_an_error_row(msr_trace: Path, tmp_path: Path) -> None:
    """A failed run is a row with its error, and run_grid warns (never a silent empty row;
    issue 33: a scheme parameter the scheme does not read)."""
    from nandlab.experiment import FailedRunsWarning

    bad = RunSpec(msr_trace, "tiny", "no_such_scheme", "xia-diffecc")
    with pytest.warns(FailedRunsWarning, match="1 of 2 runs failed.*no_such_scheme"):
        df = run_grid([bad, *specs3(msr_trace)[:1]], tmp_path / "o", processes=1, progress=False)
    assert df.height == 2
    err = df["error"].to_list()
    assert err[0] is not None and "no_such_scheme" in err[0] and err[1] is None
    wrong_param = RunSpec(msr_trace, "tiny", "baseline", "xia-diffecc", {"scheme.params.m": 0})
    with pytest.warns(FailedRunsWarning, match=r"scheme\.params\.m|\bm\b"):
        df = run_grid([wrong_param], tmp_path / "p", processes=1, progress=False)
    assert df["error"][0] is not None and df["host.mean_us"][0] is None


def test_duplicate_specs_run_once(msr_trace: Path, tmp_path: Path) -> None:
    s = specs3(msr_trace)
    dup = RunSpec(s[0].trace, "tiny", "baseline", "xia-diffecc", dict(s[0].overrides), "again")
    st = GridStats()
    df = run_grid([*s, dup], tmp_path / "o", processes=1, progress=False, stats=st)
    assert (st.total, st.duplicates, df.height) == (3, 1, 3)


def test_process_pool(msr_trace: Path, tmp_path: Path) -> None:
    st = GridStats()
    df = run_grid(specs3(msr_trace), tmp_path / "o", processes=2, progress=True, stats=st)
    assert st.executed == 3 and df["error"].null_count() == 3
    inline = run_grid(specs3(msr_trace), tmp_path / "o2", processes=1, progress=False)
    assert df["host.mean_us"].to_list() == inline["host.mean_us"].to_list()


def test_scheduler_without_dask_is_a_clear_error(
    msr_trace: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if not installed
    with pytest.raises(ExperimentError, match=r"pip install 'nandlab\[dask\]'"):
        run_grid(specs3(msr_trace), tmp_path / "o", scheduler="tcp://127.0.0.1:8786")


# --------------------------------------------------------------------------- finding traces


def test_find_traces_by_usual_names(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "msr" / "deep").mkdir(parents=True)
    (b / "umass").mkdir(parents=True)
    (a / "msr" / "deep" / "hm_0.csv.gz").write_bytes(b"")
    (a / "msr" / "CAMRESHMSA01-lvm1.csv").write_text("")
    (b / "umass" / "FINANCIAL1.SPC").write_text("")
    (b / "hm_0.csv").write_text("")  # a later directory loses
    (a / "msr" / "hm_0.stats.json").write_text("")
    wanted = {
        "hm_0": ["hm_0.csv*", "CAMRESHMSA01-lvm0.csv*"],
        "hm_1": ["hm_1.csv*", "CAMRESHMSA01-lvm1.csv*"],
        "Financial1": ["Financial1.spc*", "Financial1.ascii*"],
        "web_3": ["web_3.csv*"],
    }
    found, missing = find_traces([a, b, tmp_path / "does-not-exist"], wanted)
    assert found == {
        "hm_0": a / "msr" / "deep" / "hm_0.csv.gz",
        "hm_1": a / "msr" / "CAMRESHMSA01-lvm1.csv",
        "Financial1": b / "umass" / "FINANCIAL1.SPC",
    }
    assert missing == ["web_3"]


def test_default_trace_dirs(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("NANDLAB_SHARED_TRACES", raising=False)
    dirs = default_trace_dirs()
    assert dirs[0] == data_dir()
    (tmp_path / "captured").mkdir()
    monkeypatch.setenv("NANDLAB_SHARED_TRACES", str(tmp_path))
    assert default_trace_dirs() == [data_dir(), tmp_path / "captured"]
    found, _ = find_traces(default_trace_dirs(), {"hm0": ["msr_hm_0_sample1000.csv*"]})
    assert found["hm0"].parent == data_dir()


def test_load_runs_tolerates_missing_file(tmp_path: Path) -> None:
    df = load_runs(tmp_path)
    assert df.height == 0 and "key" in df.columns
    (tmp_path / RUNS_FILE).write_text("not parquet")
    with pytest.raises(ExperimentError, match="cannot read results"):
        load_runs(tmp_path)
    os.remove(tmp_path / RUNS_FILE)
