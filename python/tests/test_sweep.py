"""`nandlab sweep`: grid files, bad grids, local vs Dask, Slurm job scripts, SIGKILL/resume,
per-run outputs."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from _helpers import generate, run_cli

import nandlab
from nandlab import experiment
from nandlab.cli import cli
from nandlab.experiment import ExperimentError, GridStats, RunSpec, load_runs, run_grid
from nandlab.grid import GridError, load_grid

HAS_DASK = importlib.util.find_spec("distributed") is not None
HAS_JOBQUEUE = importlib.util.find_spec("dask_jobqueue") is not None

#: 3 schemes x 4 bundled traces x 2 settings = 24 runs, each a few thousand requests.
GRID24 = """
configs = ["xia-diffecc"]
schemes = ["baseline", "diffecc_wa", "agcr"]
traces = ["Financial1_first10000", "msr_hm_0_sample1000", "WebSearch1_first24783",
          "pgbench_rw_slice"]

[set]
"host.max_requests" = 2000
"device.dies_per_chip" = [1, 2]
"""

#: Report fields that measure the machine, not the model.
WALL = ("timing", "wall_s")


def write_grid(tmp_path: Path, text: str, name: str = "grid.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def result_rows(df: pl.DataFrame) -> list[dict[str, Any]]:
    """The rows' results, without what depends on when, where or how fast they ran."""
    out = []
    for r in df.sort("key").iter_rows(named=True):
        rep = json.loads(r["report"]) if r["report"] else None
        if rep is not None:
            for k in WALL:
                rep.pop(k, None)
        keep = {k: v for k, v in r.items() if k not in (*WALL, "report", *experiment.META_COLUMNS)}
        keep["report"] = rep
        out.append(keep)
    return out


# --------------------------------------------------------------------------- grid files


def test_grid_axes_product_zip_seeds_and_labels(tmp_path: Path) -> None:
    (tmp_path / "tr").mkdir()
    generate(tmp_path / "tr" / "a.csv", requests=50, seed=1)
    generate(tmp_path / "tr" / "b.csv.gz", requests=50, seed=2)
    g = load_grid(
        write_grid(
            tmp_path,
            """
configs = ["xia-diffecc"]
schemes = ["baseline", "agcr"]
traces = ["tr/*.csv*", "msr_hm_0_sample1000"]
seeds = [1, 2]
[set]
ftl.gc_threshold_pct = [5, 10, 15]
"host.max_requests" = 100
[zip]
"device.channels" = [4, 8]
"device.chips_per_channel" = [2, 1]
""",
        )
    )
    # 3 traces x 1 config x 2 schemes x 3 [set] x 2 [zip] x 2 seeds
    assert len(g.specs) == 3 * 2 * 3 * 2 * 2 == 72
    assert g.axes["traces"] == ["a", "b", "msr_hm_0_sample1000"]
    assert g.varying == [
        "ftl.gc_threshold_pct",
        "device.channels",
        "device.chips_per_channel",
        "seed",
    ]
    s = g.specs[0]
    assert s.overrides == {
        "ftl.gc_threshold_pct": 5,
        "host.max_requests": 100,
        "device.channels": 4,
        "device.chips_per_channel": 2,
        "seed": 1,
    }
    assert s.label == (
        "baseline ftl.gc_threshold_pct=5 device.channels=4 device.chips_per_channel=2 seed=1"
    )
    # zipped values stay together
    assert {
        (x.overrides["device.channels"], x.overrides["device.chips_per_channel"]) for x in g.specs
    } == {
        (4, 2),
        (8, 1),
    }
    assert g.outputs.latency_cdf and not g.outputs.request_log
    # no schemes: each config's own scheme
    g2 = load_grid({"configs": ["efm"], "traces": ["msr_hm_0_sample1000"]})
    assert [x.scheme for x in g2.specs] == ["efm"]


BAD_GRIDS = {
    "unknown key": (
        'schemez = ["baseline"]\ntraces = ["pgbench_rw_slice"]\n',
        ["unknown key `schemez`", "allowed: configs, schemes, traces"],
    ),
    "empty list": (
        'schemes = []\ntraces = ["pgbench_rw_slice"]\n',
        ["`schemes` is an empty list"],
    ),
    "unknown scheme": (
        'schemes = ["baseline", "flexfoo"]\ntraces = ["pgbench_rw_slice"]\n',
        ["unknown scheme `flexfoo`", "allowed: baseline, diffecc_wa"],
    ),
    "missing trace": (
        'schemes = ["baseline"]\ntraces = ["no/such/trace.csv"]\n',
        ["`no/such/trace.csv` is not a bundled trace name", "bundled names: "],
    ),
    "unmatched glob": (
        'schemes = ["baseline"]\ntraces = ["nothing/*.csv"]\n',
        ["matches no file"],
    ),
    "unknown config key": (
        'schemes = ["baseline"]\ntraces = ["pgbench_rw_slice"]\n[set]\n"ftl.gc_treshold" = [1]\n',
        ["unknown field `gc_treshold`", "gc_threshold_pct"],
    ),
    "value out of range": (
        'traces = ["pgbench_rw_slice"]\n[set]\n"device.channels" = [4, 0]\n',
        ["device.channels", "allowed range is 1 ..= 1024"],
    ),
    "empty setting": (
        'traces = ["pgbench_rw_slice"]\n[set]\n"device.channels" = []\n',
        ['set."device.channels" is an empty list'],
    ),
    "zip lengths": (
        'traces = ["pgbench_rw_slice"]\n[zip]\n"device.channels" = [4, 8]\n'
        '"device.chips_per_channel" = [1]\n',
        ["[zip] lists must have the same length"],
    ),
    "unknown config": (
        'configs = ["nope"]\ntraces = ["pgbench_rw_slice"]\n',
        ["configs: `nope`", "presets: default"],
    ),
    "outputs key": (
        'traces = ["pgbench_rw_slice"]\n[outputs]\ntimeseries = true\n',
        ["outputs: unknown key `timeseries`", "allowed: request_log, timeseries_interval_ms"],
    ),
    "cluster key": (
        'traces = ["pgbench_rw_slice"]\n[cluster]\npartition = "x"\n',
        ["[cluster]: unknown key `partition`", "allowed: queue, account, cores"],
    ),
    "output key in set": (
        'traces = ["pgbench_rw_slice"]\n[set]\n"stats.request_log" = ["x.csv"]\n',
        ["per-run outputs go in [outputs]"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_GRIDS), ids=list(BAD_GRIDS))
def test_bad_grid_is_one_line_exit_2_before_any_run(runner, tmp_path: Path, case: str) -> None:
    text, wanted = BAD_GRIDS[case]
    grid = write_grid(tmp_path, text)
    out = tmp_path / "out"
    res = runner.invoke(cli, ["sweep", str(grid), "--out", str(out)])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    assert lines[0].startswith(f"error: {grid}:"), lines[0]
    for w in wanted:
        assert w in lines[0], lines[0]
    assert not out.exists()  # nothing started


def test_bad_grid_exit_status_in_a_real_process(tmp_path: Path) -> None:
    grid = write_grid(tmp_path, 'schemes = ["nope"]\ntraces = ["pgbench_rw_slice"]\n')
    r = run_cli("sweep", grid, "--out", tmp_path / "out")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "unknown scheme `nope`" in r.stderr
    assert "Traceback" not in r.stderr


def test_dry_run_lists_runs(runner, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, GRID24)
    res = runner.invoke(cli, ["sweep", str(grid), "--out", str(tmp_path / "o"), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "24 runs; nothing run" in res.output
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- local vs Dask


@pytest.mark.skipif(not HAS_DASK, reason="dask.distributed not installed")
def test_24_runs_local_and_on_a_tcp_localcluster_give_identical_rows(tmp_path: Path) -> None:
    from dask.distributed import LocalCluster

    grid = write_grid(tmp_path, GRID24)
    st_local = GridStats()
    local = nandlab.sweep(grid, tmp_path / "local", workers=2, stats=st_local)
    assert local.height == 24 and local["error"].null_count() == 24
    assert st_local.executed == 24 and st_local.where == "local (2 processes)"
    # the setting changes the results (so equality below is not vacuous)
    assert local["device.dies_per_chip"].to_list().count(2) == 12
    assert len(set(local["host.mean_us"].to_list())) > 12

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        protocol="tcp",
        dashboard_address=None,
    ) as cluster:
        addr = cluster.scheduler_address
        assert addr.startswith("tcp://127.0.0.1:")
        st = GridStats()
        dask_df = nandlab.sweep(grid, tmp_path / "dask", scheduler=addr, stats=st)
        assert st.executed == 24 and st.where == f"dask {addr}"
        # the CLI flag goes the same way
        r = run_cli("sweep", grid, "--out", tmp_path / "cli", "--scheduler", addr, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "24 executed" in r.stdout and f"on dask {addr}" in r.stdout
    workers = set(dask_df["worker"].to_list())
    assert len(workers) >= 1 and all(not w.endswith(f":{os.getpid()}") for w in workers)
    assert result_rows(dask_df) == result_rows(local)
    assert result_rows(load_runs(tmp_path / "cli")) == result_rows(load_runs(tmp_path / "local"))


def test_missing_dask_is_a_one_line_error_naming_the_extra(
    runner, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    grid = write_grid(tmp_path, 'traces = ["msr_hm_0_sample1000"]\n')
    for sched in ("tcp://127.0.0.1:8786", "slurm"):
        res = runner.invoke(
            cli, ["sweep", str(grid), "--out", str(tmp_path / "o"), "--scheduler", sched]
        )
        assert res.exit_code == 2, res.output
        assert res.output.strip().splitlines()[-1] == (
            f"error: --scheduler {sched} needs dask.distributed: pip install 'nandlab[dask]'"
        )
    assert load_runs(tmp_path / "o").height == 0
    spec = RunSpec(nandlab.default_trace(), "pg", "baseline")
    with pytest.raises(ExperimentError, match=r"pip install 'nandlab\[dask\]'"):
        run_grid([spec], tmp_path / "o2", scheduler="tcp://127.0.0.1:8786", progress=False)


@pytest.mark.skipif(not HAS_DASK, reason="dask.distributed not installed")
def test_bad_scheduler_address_and_workers_with_tcp(runner, tmp_path: Path) -> None:
    grid = write_grid(tmp_path, 'traces = ["msr_hm_0_sample1000"]\n')
    res = runner.invoke(
        cli, ["sweep", str(grid), "--out", str(tmp_path / "o"), "--scheduler", "nohost"]
    )
    assert res.exit_code == 2 and "expected local, slurm or a Dask scheduler address" in res.output
    res = runner.invoke(
        cli,
        [
            "sweep",
            str(grid),
            "--out",
            str(tmp_path / "o"),
            "--scheduler",
            "tcp://127.0.0.1:1",
            "-j",
            "3",
        ],
    )
    assert res.exit_code == 2 and "--workers applies to --scheduler local or slurm" in res.output


# --------------------------------------------------------------------------- Slurm


@pytest.mark.skipif(not (HAS_DASK and HAS_JOBQUEUE), reason="dask-jobqueue not installed")
def test_slurm_job_script_carries_the_cluster_table(tmp_path: Path, monkeypatch: Any) -> None:
    import dask.distributed

    from nandlab.cluster import slurm_cluster

    grid = write_grid(
        tmp_path,
        """
traces = ["msr_hm_0_sample1000"]
[cluster]
queue = "compute"
account = "lab42"
cores = 8
processes = 4
memory = "16GiB"
walltime = "02:30:00"
jobs = 3
job_name = "nandlab-sweep"
job_extra_directives = ["--exclusive", "--constraint=ssd"]
job_script_prologue = ["module load python/3.11"]
""",
    )
    g = load_grid(grid)
    cluster = slurm_cluster(g.cluster)
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    for line in (
        "#SBATCH -J nandlab-sweep",
        "#SBATCH -p compute",
        "#SBATCH -A lab42",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --mem=16G",
        "#SBATCH -t 02:30:00",
        "#SBATCH --exclusive",
        "#SBATCH --constraint=ssd",
        "module load python/3.11",
        "--nworkers 4",
    ):
        assert line in script, f"{line!r} not in\n{script}"

    # `jobs` (or --workers) is how many Slurm jobs the sweep submits (with the fake sbatch of
    # test_slurm.py; its jobs stay pending until the runner's close cancels them)
    fake_bin = Path(__file__).resolve().parent / "fake_slurm"
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_PENDING", "1")

    class FakeClient:
        def __init__(self, c: Any) -> None:
            self.scheduler = type("S", (), {"address": "tcp://fake:1"})()

        def close(self) -> None:
            pass

    monkeypatch.setattr(dask.distributed, "Client", FakeClient)
    for workers, want in ((None, 3), (5, 5)):
        state = tmp_path / f"slurm-{workers}"
        monkeypatch.setenv("FAKE_SLURM_DIR", str(state))
        r = experiment._runner("slurm", workers, g.cluster)
        jobs = list((state / "jobs").iterdir())
        r.close()
        assert len(jobs) == want
        assert {(j / "state").read_text().strip() for j in jobs} == {"CA"}


def test_slurm_without_cluster_table_is_an_error(runner, tmp_path: Path) -> None:
    if not (HAS_DASK and HAS_JOBQUEUE):
        pytest.skip("dask-jobqueue not installed")
    grid = write_grid(tmp_path, 'traces = ["msr_hm_0_sample1000"]\n')
    res = runner.invoke(
        cli, ["sweep", str(grid), "--out", str(tmp_path / "o"), "--scheduler", "slurm"]
    )
    assert res.exit_code == 2
    assert "--scheduler slurm needs a [cluster] table" in res.output


# --------------------------------------------------------------------------- kill and resume


def test_sigkill_then_resume_keeps_finished_runs(tmp_path: Path) -> None:
    """SIGKILL a running sweep after >= 3 finished runs; the restart redoes none of them."""
    grid = write_grid(
        tmp_path,
        """
traces = ["pgbench_rw_slice"]
schemes = ["baseline", "diffecc_wa"]
configs = ["xia-diffecc"]
seeds = [1, 2, 3, 4, 5, 6, 7, 8]
""",
    )
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "nandlab", "sweep", str(grid), "--out", str(out), "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    finished: dict[str, tuple[str, str]] = {}
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            df = load_runs(out) if out.exists() else None
            if df is not None and df.height >= 3:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the sweep ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its worker processes
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    done = load_runs(out)
    assert 3 <= done.height < 16, done.height
    assert done["error"].null_count() == done.height
    finished = {r["key"]: (r["started_at"], r["finished_at"]) for r in done.iter_rows(named=True)}

    r = run_cli("sweep", grid, "--out", out, "-j", "2", "--no-progress", timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{16 - len(finished)} executed, {len(finished)} already done, 0 failed" in r.stdout
    final = load_runs(out)
    assert final.height == 16 and final["error"].null_count() == 16
    assert final["key"].n_unique() == 16
    for row in final.iter_rows(named=True):
        if row["key"] in finished:
            assert (row["started_at"], row["finished_at"]) == finished[row["key"]]
    assert not (out / experiment.JOURNAL_FILE).exists()  # folded into runs.parquet


def test_torn_journal_line_is_ignored_and_lock_is_exclusive(tmp_path: Path) -> None:
    spec = RunSpec(nandlab.default_trace(), "pg", "baseline", "default", {"host.max_requests": 500})
    run_grid([spec], tmp_path, processes=1, progress=False)
    with (tmp_path / experiment.JOURNAL_FILE).open("a") as f:
        f.write('{"key": "abc", "trace": "x"')  # a kill mid-write
    assert load_runs(tmp_path).height == 1
    with (
        experiment._DirLock(tmp_path),
        pytest.raises(ExperimentError, match="in use by nandlab pid"),
    ):
        run_grid([spec], tmp_path, processes=1, progress=False)


# --------------------------------------------------------------------------- per-run outputs


def test_per_run_outputs_are_parquet_and_rerun_when_asked_for(tmp_path: Path) -> None:
    trace = generate(tmp_path / "t.csv", requests=3000, iops=4000.0, span_bytes=1 << 28, seed=3)
    grid = {
        "schemes": ["baseline", "diffecc_wa"],
        "configs": ["xia-diffecc"],
        "traces": [str(trace)],
        "outputs": {"request_log": True, "timeseries_interval_ms": 50},
    }
    out = tmp_path / "out"
    df = nandlab.sweep(grid, out, workers=1)
    assert df.height == 2 and df["error"].null_count() == 2
    for r in df.iter_rows(named=True):
        rep = json.loads(r["report"])
        log = pl.read_parquet(out / r["request_log"])
        assert log.columns == [
            "arrival_ns",
            "op",
            "offset_bytes",
            "len_bytes",
            "wait_ns",
            "service_ns",
            "response_ns",
        ]
        assert log.height == rep["host"]["requests"] == 3000
        assert log["response_ns"].mean() / 1e3 == pytest.approx(rep["host"]["mean_us"], rel=1e-12)
        assert (log["wait_ns"] + log["service_ns"] == log["response_ns"]).all()
        ts = pl.read_parquet(out / r["timeseries"])
        assert ts["reads"].sum() + ts["writes"].sum() == 3000
        assert ts["duration_s"][0] == pytest.approx(0.05)
        busy = (ts["die_utilization"] * ts["duration_s"]).sum() / rep["sim"]["span_s"]
        assert busy == pytest.approx(rep["flash"]["die_utilization"], rel=1e-9)
        assert (
            ts.filter(pl.col("reads") + pl.col("writes") == 0)["mean_us"].null_count()
            == ts.filter(pl.col("reads") + pl.col("writes") == 0).height
        )
        # the report names the kept Parquet file, and carries the CDF
        assert rep["config"]["stats"]["timeseries"] == str((out / r["timeseries"]).resolve())
        assert len(rep["host"]["cdf"]["all_us"]) == len(rep["host"]["cdf"]["quantiles"])
        assert not list((out / r["timeseries"]).parent.glob(".*.csv"))
    # same runs, same outputs: nothing to do; a new interval: the runs write it again
    st = GridStats()
    nandlab.sweep(grid, out, workers=1, stats=st)
    assert (st.executed, st.skipped) == (0, 2)
    grid["outputs"] = {"timeseries_interval_ms": 100}
    st = GridStats()
    df2 = nandlab.sweep(grid, out, workers=1, stats=st)
    assert st.executed == 2
    assert pl.read_parquet(out / df2["timeseries"][0])["duration_s"][0] == pytest.approx(0.1)
    assert df2["key"].to_list() == df["key"].to_list()  # outputs do not enter the key


def test_failed_run_is_a_row_and_exit_1(runner, tmp_path: Path) -> None:
    trace = generate(tmp_path / "t.csv", requests=200, seed=3)
    grid = write_grid(
        tmp_path,
        f'traces = ["{trace}"]\n[set]\n"device.logical_capacity_bytes" = [17179869184, 67108864]\n',
    )
    res = runner.invoke(cli, ["sweep", str(grid), "--out", str(tmp_path / "o"), "-j", "1"])
    assert res.exit_code == 1, res.output
    df = load_runs(tmp_path / "o")
    assert df.height == 2 and df["error"].null_count() == 1
    err = df.filter(pl.col("error").is_not_null())["error"].item()
    # a 64 MiB device cannot hold the trace with room for GC: found only when the run sizes it
    assert "\n" not in err and err.startswith("ConfigError:") and "no room for GC" in err
    assert "1 run(s) failed" in res.output


def test_grid_error_type_is_value_error() -> None:
    with pytest.raises(GridError):
        load_grid({"traces": []})
    assert issubclass(GridError, ValueError)
