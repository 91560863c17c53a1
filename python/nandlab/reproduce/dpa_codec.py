"""DPA's own study (Guo's thesis ch. 2, "DPA: data pattern aware error prevention"), run by
``nandlab reproduce dpa`` before its Fig. 14 trace runs (:mod:`nandlab.reproduce.dpa`): the
DPA-PPU codec's statistics over data -- Fig. 9, Fig. 10 (order, polynomial count, chunk size,
DPA-PPU output), Fig. 11, Table 5 -- and the lifetime model -- Figs. 12-13 (ECC failure rates
and tolerable reads vs P/E), the lifetime headline (thesis: 7.5 K -> 23 K / 30 K P/E, 3x /
4x). It runs in this process, not on the grid (:class:`~nandlab.reproduce.framework.Study`),
and gives Fig. 14 the data's path-A share.

**Data** (the thesis's Table 1 files are not available): by default data that ships with
nandlab or is generated, so that every machine gets the same numbers --

* ``random``: seeded pseudo-random bytes (stand-in for the near-random mp3 / mp4 / jpg /
  compressed types; 8 MiB, 1 MiB with ``--quick``);
* ``compressed``: the bundled gzip trace excerpts (``nandlab/data/*.gz``);
* ``text``: the bundled text files (MSR excerpt, PROVENANCE.md), the packaged configs and
  nandlab's own Python sources (stand-in for system metadata);

plus any ``--data [KIND=]FILE|DIR`` (repeatable; grouped by KIND, else by kind of file:
extension, else text/binary), e.g. the Debian stand-ins of the spec
(``metadata=/etc/services``, ``pdf=/usr/share/doc/libtasn1-doc/libtasn1.pdf`` ...).

**Codec sweeps** (one pass over the data): chunk 4/8/16/32 B (Fig. 10(c)); order 4/8/16 at 8 B
(Fig. 10(a); order 4 has only 8 polynomials, order 8 the first 64 of its 128); 32/64/128/256
polynomials at 8 B (Fig. 10(b); beyond Table 4 further primitive order-16 polynomials).

**Lifetime** (eq. 2.5-2.9, :mod:`nandlab.dpa`): the Vth model of §2.2.1 gives each level's
error rate (uniform neighbours); the data's level probabilities weight them (eq. 2.7); BCH
(4200,4096,8) for the baseline and (4312,4208,8) for DPA against T_uber = 1e-13. Profiles:
the baseline (uniform data), the thesis's Fig. 11 level shares (L0 48 % / 59 %), and ours
(8 B / 4 B stored cells of all our data, and of random data). The full-pattern Monte Carlo
(data-dependent coupling) is a diagnostic. Read disturb (Fig. 12(c), Fig. 13) uses eq. 2.8's
printed coefficients, which shift a cell by volts after one read at any P/E > 0; it is
reported, not part of F. Monte-Carlo points are cached (``~/.cache/nandlab``), so a second
run is fast.

``--quick`` (CI): 1 MiB of random data, the bundled files, P/E 2-8 K at 25 % Monte-Carlo
precision, no full-pattern runs; exits non-zero unless the random-data ones ratios are in the
spec's bands, L0 rises 8 B -> 4 B, text de-correlates, and lifetime 4 B >= 8 B > baseline.
"""

from __future__ import annotations

import csv
import math
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from nandlab import dpa as _dpa
from nandlab.dpa import cli as _dpa_cli
from nandlab.reproduce import framework as fw
from nandlab.reproduce.common import CommonOptions
from nandlab.reproduce.fmt import EXIT_USER_ERROR, err_console, fmt_num, out_console
from nandlab.reproduce.headline import Headline as H
from nandlab.reproduce.headline import headline_rows

#: The preset whose ``[dpa]`` section sets the lifetime model.
CONFIG = "dpa"

#: Thesis numbers (Guo ch. 2).
THESIS = {
    "lifetime_pe": {"baseline": 7500.0, "8 B": 23000.0, "4 B": 30000.0},  # Fig. 5(b), §2.6.1
    "fig11_l0": {"raw": 0.245, "8 B": 0.48, "4 B": 0.59},  # WIN 7
    "fig10c": {4: 0.27, 8: 0.34, 32: 0.42},  # scrambled ones ratio, average
    "fig10a": {4: 0.42, 16: 0.34},  # by order
    "fig10b_drop_32_to_256": 0.115,
    "fig9_metadata": (0.45, 0.27),
}
#: Spec §4 bands of the scrambled ones ratio on random data.
RANDOM_BANDS = {4: (0.28, 0.33), 8: (0.33, 0.38), 32: (0.41, 0.44)}
#: Spec §4: stored L0 share on random data.
RANDOM_L0_MIN = {8: 0.40, 4: 0.47}

CHUNKS = (4, 8, 16, 32)
ORDERS = (4, 8, 16)
COUNTS = (32, 64, 128, 256)
RANDOM_SEED = 20160
RANDOM_MIB = 8
QUICK_RANDOM_MIB = 1
QUICK_PE = [2000.0 + 1000.0 * i for i in range(13)]  # 2-14 K: the calibrated baseline lives 7.5 K
QUICK_REL = 0.25
FULL_REL = 0.05
#: Per-level rates below this need not meet the precision target (they add < 1 % to p_c near
#: the lifetime, where p_c ~ 1e-4).
QUICK_FLOOR = 1e-5
FULL_FLOOR = 1e-6
#: Fig. 13: read counts tried (the tolerable count is the largest with F <= T_uber).
READ_GRID = (1.0, 10.0, 100.0, 1000.0, 5000.0, 10000.0)


# --------------------------------------------------------------------------- data


@dataclass
class DataSet:
    """Files and their group label."""

    files: list[Path] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, p: Path, kind: str) -> None:
        if str(p) not in self.kinds:
            self.files.append(p)
            self.kinds[str(p)] = kind


def _random_file(out: Path, mib: int) -> Path:
    p = out / "data" / f"random-{RANDOM_SEED}-{mib}MiB.bin"
    if not p.is_file() or p.stat().st_size != mib << 20:
        p.parent.mkdir(parents=True, exist_ok=True)
        rng = random.Random(RANDOM_SEED)
        tmp = p.with_suffix(f".tmp{os.getpid()}")
        with tmp.open("wb") as f:
            for _ in range(mib):
                f.write(rng.getrandbits(8 << 20).to_bytes(1 << 20, "little"))
        os.replace(tmp, p)
    return p


def data_set(out: Path, *, quick: bool, extra: Sequence[str | Path]) -> DataSet:
    """The default data (random, bundled compressed and text files) plus ``extra``."""
    import nandlab
    from nandlab.config import presets_dir
    from nandlab.data import data_dir

    ds = DataSet()
    ds.add(_random_file(out, QUICK_RANDOM_MIB if quick else RANDOM_MIB), "random")
    d = data_dir()
    for p in sorted(d.glob("*.gz")):
        ds.add(p, "compressed")
    for p in sorted(d.iterdir()):
        if p.is_file() and p.suffix in (".csv", ".md"):
            ds.add(p, "text")
    for p in sorted(presets_dir().glob("*.toml")):
        ds.add(p, "text")
    pkg = Path(nandlab.__file__).parent
    for p in sorted(pkg.rglob("*.py")):
        ds.add(p, "text")
    for spec in extra:
        kind, e = parse_data_arg(spec)
        if e.is_dir():
            found = sorted(x for x in e.rglob("*") if x.is_file())
            if not found:
                ds.notes.append(f"--data {e}: no files")
            for x in found:
                ds.add(x, kind or _dpa.file_kind(x))
        else:
            ds.add(e, kind or _dpa.file_kind(e))
    return ds


def parse_data_arg(spec: str | Path) -> tuple[str | None, Path]:
    """``KIND=PATH`` (the group label given) or ``PATH`` (kind from the file)."""
    text = str(spec)
    if "=" in text and not Path(text).exists():
        kind, _, path = text.partition("=")
        if kind and "/" not in kind:
            return kind, Path(path)
    return None, Path(text)


def codec_configs() -> list[dict[str, Any]]:
    """Every configuration of the sweeps, without duplicates: chunk sizes, orders, counts."""
    out: list[dict[str, Any]] = []

    def add(c: int, o: int, n: int | None) -> None:
        cfg = {"chunk_bytes": c, "order": o, "polynomials": n}
        if cfg not in out:
            out.append(cfg)

    for c in CHUNKS:
        add(c, 16, None)
    for o in ORDERS:
        add(8, o, None)
    for n in COUNTS:
        add(8, 16, None if n == 64 else n)
    return out


def _index(configs: Sequence[Mapping[str, Any]], c: int, o: int = 16, n: int | None = None) -> int:
    return [(x["chunk_bytes"], x["order"], x["polynomials"]) for x in configs].index((c, o, n))


# --------------------------------------------------------------------------- analysis


@dataclass
class DataResult:
    """Per group: the figures' numbers."""

    groups: dict[str, dict[str, Any]]
    fig9: dict[str, dict[str, float]]
    fig10a: dict[str, list[tuple[int, float]]]
    fig10b: dict[str, list[tuple[int, float]]]
    fig10c: dict[str, list[tuple[int, float]]]
    fig10d: dict[str, dict[str, float]]
    fig11: dict[str, dict[str, Any]]
    table5: dict[str, list[float]]
    throughput: list[dict[str, Any]]


def analyse_data(
    an: _dpa.Analysis, sums: Mapping[str, Mapping[str, Any]], level_map: str
) -> DataResult:
    cfgs = an.configs
    i4, i8 = _index(cfgs, 4), _index(cfgs, 8)
    fig9, fig10a, fig10b, fig10c, fig10d, fig11, table5 = {}, {}, {}, {}, {}, {}, {}
    for g, s in sums.items():
        prof = s["profiles"]
        fig9[g] = {
            "raw": prof[0]["raw_ones_ratio"],
            "de-correlated": prof[0]["decorrelated_ones_ratio"],
        }
        fig10a[g] = [(o, prof[_index(cfgs, 8, o)]["scrambled_ones_ratio"]) for o in ORDERS]
        fig10b[g] = [
            (n, prof[_index(cfgs, 8, 16, None if n == 64 else n)]["scrambled_ones_ratio"])
            for n in COUNTS
        ]
        fig10c[g] = [(c, prof[_index(cfgs, c)]["scrambled_ones_ratio"]) for c in CHUNKS]
        fig10d[g] = {"4 B": prof[i4]["selected_ones_ratio"], "8 B": prof[i8]["selected_ones_ratio"]}

        def lv(p: Mapping[str, Any] | None, key: str) -> list[float] | None:
            v = p.get(key) if p else None
            return _dpa.levels(v, level_map) if v else None

        fig11[g] = {
            "raw": lv(prof[0], "raw_patterns_paired"),
            "raw_independent": lv(prof[0], "raw_patterns_independent"),
            "8 B": lv(prof[i8], "stored_patterns_paired"),
            "8 B_independent": lv(prof[i8], "stored_patterns_independent"),
            "4 B": lv(prof[i4], "stored_patterns_paired"),
            "4 B_independent": lv(prof[i4], "stored_patterns_independent"),
        }
        cs = s["stats"]["configs"][i8]
        table5[g] = [r / (cs["chunks"] or 1) for r in cs["reduced"]]
    return DataResult(
        dict(sums), fig9, fig10a, fig10b, fig10c, fig10d, fig11, table5, an.throughput()
    )


# --------------------------------------------------------------------------- lifetime


def profiles(
    sums: Mapping[str, Mapping[str, Any]], cfgs: Sequence[Mapping[str, Any]], *, full: bool
) -> list[dict[str, Any]]:
    """Lifetime profiles: baseline, thesis Fig. 11 shares, ours (all data, random data)."""
    i4, i8 = _index(cfgs, 4), _index(cfgs, 8)
    out: list[dict[str, Any]] = [
        {
            "name": "baseline",
            "patterns": [0.25] * 4,
            "code": _dpa.BASELINE_CODE,
            "full_pattern": full,
        }
    ]
    for lab, l0 in (("8 B", 0.48), ("4 B", 0.59)):
        out.append(
            {
                "name": f"{lab} (thesis Fig. 11)",
                "patterns": _dpa.independent_patterns(math.sqrt(l0)),
                "code": _dpa.DPA_CODE,
                "full_pattern": full,
            }
        )
    for grp, tag in (("all", "all data"), ("random", "random data")):
        s = sums.get(grp)
        if s is None:
            continue
        for lab, i in (("8 B", i8), ("4 B", i4)):
            p = s["profiles"][i]
            pat = p.get("stored_patterns_paired") or p["stored_patterns_independent"]
            out.append(
                {
                    "name": f"{lab} ({tag})",
                    "patterns": pat,
                    "code": _dpa.DPA_CODE,
                    "full_pattern": False,
                }
            )
    return out


def fig14_path_a(
    sums: Mapping[str, Mapping[str, Any]], cfgs: Sequence[Mapping[str, Any]]
) -> dict[int, float]:
    """The data profile of the Fig. 14 runs: the path-A share (pages de-correlated, no tags)
    of all the analysed data at 8 B and 4 B chunks (0 when unknown)."""
    s = sums.get("all") or (next(iter(sums.values())) if sums else None)
    out: dict[int, float] = {}
    for c in (8, 4):
        v = None
        if s is not None:
            v = s["profiles"][_index(cfgs, c)].get("path_a_share")
        out[c] = float(v) if isinstance(v, (int, float)) and math.isfinite(v) else 0.0
    return out


def lifetime_runs(
    dpa_cfg: Mapping[str, Any],
    profs: list[dict[str, Any]],
    *,
    quick: bool,
    level_map: str,
    threads: int,
) -> tuple[dict[str, Any], dict[float, dict[str, Any]]]:
    """The main lifetime run (F, Fig. 12) and one run per read count of Fig. 13."""
    base = {
        "level_map": level_map,
        "read_ref_margin_v": dpa_cfg["read_ref_margin_v"],
        # K_s fitted to the thesis's baseline endurance (configs/dpa.toml), not to DPA's result
        "retention_ks": dpa_cfg.get("retention_ks"),
        "dvpp_v": dpa_cfg["dvpp_v"],
        "retention_s": dpa_cfg["retention_s"],
        "t_uber": dpa_cfg["t_uber"],
        "rel_half_width": QUICK_REL if quick else FULL_REL,
        "rber_floor": QUICK_FLOOR if quick else FULL_FLOOR,
        "threads": threads,
        "profiles": profs,
    }
    if quick:
        base["pe"] = QUICK_PE
    main = _dpa.lifetime(
        **base, read_disturb_reads=dpa_cfg["read_disturb_reads"], full_pattern=not quick
    )
    reads = (1.0,) if quick else READ_GRID
    rd = {
        r: _dpa.lifetime(
            **base, read_disturb_reads=r, include_read_disturb=True, full_pattern=False
        )
        for r in reads
    }
    return main, rd


def tolerable_reads(
    rd: Mapping[float, Mapping[str, Any]], n_profiles: int
) -> list[list[tuple[float, float]]]:
    """Fig. 13: per profile, (P/E, largest read count of the grid with F <= T_uber; 0 if none)."""
    reads = sorted(rd)
    first = rd[reads[0]]
    out = []
    for i in range(n_profiles):
        pts = []
        for k, pt in enumerate(first["points"]):
            ok = [
                r
                for r in reads
                if rd[r]["points"][k]["profiles"][i]["f"] <= first["request"]["t_uber"]
            ]
            pts.append((pt["pe"], max(ok) if ok else 0.0))
        out.append(pts)
    return out


# --------------------------------------------------------------------------- checks


def check(data: DataResult, life: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The acceptance checks of the issue (spec §4) that apply to parts 1-3."""
    out: list[dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str) -> None:
        out.append({"name": name, "passed": bool(ok), "detail": detail})

    for c, v in data.fig10c.get("random", []):
        if c in RANDOM_BANDS:
            lo, hi = RANDOM_BANDS[c]
            add(f"random data, {c} B chunks: scrambled ones in the spec's band", lo <= v <= hi,
                f"{v:.3f} in [{lo}, {hi}]")  # fmt: skip
    for g in ("random", "all"):
        f11 = data.fig11.get(g)
        if not f11 or not f11.get("8 B") or not f11.get("4 B"):
            continue
        l8, l4 = f11["8 B"][0], f11["4 B"][0]
        good = l4 > l8
        if g == "random":
            good &= l8 > RANDOM_L0_MIN[8] and l4 > RANDOM_L0_MIN[4]
        add(f"{g} data: L0 share rises 8 B -> 4 B", good, f"{l8:.3f} -> {l4:.3f}")
    t = data.fig9.get("text")
    if t:
        add("text de-correlates", t["de-correlated"] < t["raw"],
            f"{t['raw']:.3f} -> {t['de-correlated']:.3f}")  # fmt: skip
    by = {x["name"]: x for x in life["lifetimes"]}
    base = by["baseline"]["lifetime_pe"]
    for tag in ("thesis Fig. 11", "all data"):
        l8 = by.get(f"8 B ({tag})", {}).get("lifetime_pe")
        l4 = by.get(f"4 B ({tag})", {}).get("lifetime_pe")
        add(f"lifetime ({tag}): 4 B >= 8 B > baseline",
            None not in (base, l8, l4) and l4 >= l8 > base,
            f"{fmt_num(l4)} >= {fmt_num(l8)} > {fmt_num(base)}")  # fmt: skip
    return out


# --------------------------------------------------------------------------- output


def lifetime_rows(life: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Lifetime rows: thesis next to ours, per profile."""
    rows = []
    th = THESIS["lifetime_pe"]
    for lt in life["lifetimes"]:
        name = lt["name"]
        key = "baseline" if name == "baseline" else name.split(" (")[0]
        rows.append(
            {
                "profile": name,
                "levels": lt["levels"],
                "thesis_pe": th.get(key),
                "thesis_ratio": th[key] / th["baseline"] if key in th else None,
                "ours_pe": lt["lifetime_pe"],
                "ours_ratio": lt["ratio_to_first"],
                "full_pattern_pe": lt.get("full_pattern_lifetime_pe"),
                "beyond_grid": lt["beyond_grid"],
                "below_grid": lt["below_grid"],
            }
        )
    return rows


#: The thesis's headline numbers of the codec and the lifetime model (§2.5-2.6): rows of the
#: profile they are compared on (``"trace"``: the data profile).
HEADLINE = (
    H("lifetime of the baseline at T_uber 1e-13 (the model's K_s is fitted to it)",
      "§2.6.1, Fig. 5(b)", 7500, "pe", kind="value", unit="P/E", deciders=(),
      when=lambda r: r["trace"] == "baseline", why="the fit's Monte-Carlo precision"),
    *(H(f"lifetime, DPA {c} ({tag})", "§2.6.1, Fig. 12", ratio, "ratio", kind="value",
        unit="x", paper_text=f"{pe / 1000:g} K P/E ({ratio:g}x)", deciders=(),
        when=lambda r, n=f"{c} ({tag})": r["trace"] == n,
        why="L0 is not error-free in the Vth model: its erased tail reaches the first "
            "reference, so moving cells to L0 saves less than the thesis's model implies")
      for c, pe, ratio in (("8 B", 23000, 3.07), ("4 B", 30000, 4.0))
      for tag in ("thesis Fig. 11", "all data")),
    *(H(f"scrambled ones, {c} B chunks", "§2.5, Fig. 10(c)", v, f"ones_{c}", kind="value",
        unit="", deciders=(), when=lambda r: r["trace"] == "all data")
      for c, v in ((4, 0.27), (8, 0.34), (32, 0.42))),
    H("L0 share stored, 4 B chunks", "§2.5, Fig. 11", 59, "l0_4", kind="share", deciders=(),
      when=lambda r: r["trace"] == "all data",
      why="64 polynomials do not reach the thesis's 0.27 ones on our data"),
)  # fmt: skip


def headline_data(data: DataResult, life: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows :data:`HEADLINE` reads: one per lifetime profile and one for all data."""
    rows: list[dict[str, Any]] = [
        {"trace": x["name"], "pe": x["lifetime_pe"], "ratio": x["ratio_to_first"]}
        for x in life["lifetimes"]
    ]
    f10, f11 = dict(data.fig10c.get("all", [])), data.fig11.get("all") or {}
    rows.append({"trace": "all data", **{f"ones_{c}": f10.get(c) for c in CHUNKS},
                 "l0_4": (f11.get("4 B") or [None])[0]})  # fmt: skip
    return rows


def print_results(
    an: _dpa.Analysis,
    data: DataResult,
    life: Mapping[str, Any],
    rows: list[dict[str, Any]],
    tol: list[list[tuple[float, float]]],
    level_map: str,
) -> None:
    _dpa_cli.print_tables(an, data.groups, level_map=level_map, console=out_console)
    t = Table(title="Fig. 10(a, b): scrambled ones ratio, 8 B chunks", title_justify="left")
    t.add_column("group")
    for o in ORDERS:
        t.add_column(f"order {o}", justify="right")
    for n in COUNTS:
        t.add_column(f"{n} poly.", justify="right")
    for g in data.groups:
        t.add_row(
            g,
            *(f"{v:.3f}" for _, v in data.fig10a[g]),
            *(f"{v:.3f}" for _, v in data.fig10b[g]),
        )
    out_console.print(t)
    t = Table(
        title=f"Fig. 11: cell levels L0-L3 ({level_map} map), paired pages [independent bits]",
        title_justify="left",
    )
    t.add_column("group")
    t.add_column("data")
    for k in range(4):
        t.add_column(f"L{k}", justify="right")
    for g, f in data.fig11.items():
        for lab in ("raw", "8 B", "4 B"):
            a, b = f.get(lab), f.get(f"{lab}_independent")
            t.add_row(
                g,
                lab,
                *(f"{100 * a[k]:.1f} % [{100 * b[k]:.1f} %]" if a and b else "—" for k in range(4)),
            )
    out_console.print(t)
    fw.print_table(lifetime_table(rows))
    pts = life["points"]
    pe_list = [p["pe"] for p in pts]
    t = Table(
        title="Per-level bit error rates p_li (uniform neighbours), retention 0 / 1 year",
        title_justify="left",
    )
    t.add_column("P/E", justify="right")
    for k in range(4):
        t.add_column(f"L{k}", justify="right")
    for p in pts:
        t.add_row(
            f"{p['pe']:g}",
            *(
                f"{a['rber']:.2e} / {b['rber']:.2e}"
                for a, b in zip(p["levels_prog"], p["levels_rt"])
            ),
        )
    out_console.print(t)
    zero = [pe for pe, r in tol[0] if r == 0.0]
    out_console.print(
        f"Fig. 13: the baseline tolerates no read (F > T_uber after 1 read) at "
        f"{len(zero)}/{len(pe_list)} P/E points"
        + (f" (from {min(zero):g} P/E)" if zero else "")
        + "; eq. 2.8's printed coefficients shift Vth by volts per read at any P/E > 0."
    )


def make_figures(
    data: DataResult,
    life: Mapping[str, Any],
    tol: list[list[tuple[float, float]]],
    out: Path,
) -> list[Path]:
    """Figs. 9-13 as PNG and SVG in ``out``."""
    from nandlab.figures import PALETTE, _figure, cached, grouped_bars, sweep_lines

    paths: list[Path] = []
    groups = list(data.groups)
    paths += grouped_bars(
        {"ones ratio": {g: data.fig9[g] for g in groups}},
        ["raw", "de-correlated"],
        out / "fig9_decorrelation",
        ylabel="ratio of 1s",
        title="Fig. 9: ones before and after de-correlation",
        average=False,
    )
    paths += sweep_lines(
        {
            "(a) polynomial order": data.fig10a,
            "(b) polynomials": data.fig10b,
            "(c) chunk size (B)": data.fig10c,
        },
        out / "fig10abc_scrambling",
        xlabel="order / count / chunk bytes",
        ylabel="ratio of 1s after scrambling",
        title="Fig. 10(a-c): scrambling efficiency",
    )
    paths += grouped_bars(
        {"0s stored": {g: data.fig10d[g] for g in groups}},
        ["8 B", "4 B"],
        out / "fig10d_dpa_ppu",
        ylabel="ratio of 0s stored",
        title="Fig. 10(d): ratio of 0s under DPA-PPU",
        average=False,
    )

    def fig11() -> Any:
        # Fig. 11: stacked level shares for each group (raw, 8 B, 4 B).
        fig = _figure(max(6.0, 1.6 * len(groups) + 2), 3.6)
        ax = fig.subplots()
        x, labels = 0, []
        for g in groups:
            for lab in ("raw", "8 B", "4 B"):
                v = data.fig11[g].get(lab) or data.fig11[g].get(f"{lab}_independent") or [0.0] * 4
                bottom = 0.0
                for k in range(4):
                    ax.bar(
                        x,
                        v[k],
                        0.7,
                        bottom=bottom,
                        color=PALETTE[k % len(PALETTE)],
                        edgecolor="black",
                        linewidth=0.4,
                        label=f"L{k}" if x == 0 else None,
                    )
                    bottom += v[k]
                labels.append(f"{g}\n{lab}")
                x += 1
            x += 0.5
        ax.set_xticks([i + 0.5 * (i // 3) for i in range(len(labels))])
        ax.set_xticklabels(labels, fontsize=7, rotation=45, ha="right")
        ax.set_ylabel("share of cells")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        ax.set_title("Fig. 11: Vth level distribution after DPA-PPU", fontsize=10)
        return fig

    def fig12() -> Any:
        # Fig. 12 (a)(b)(c): failure rates vs P/E.
        pts = life["points"]
        pe = [p["pe"] for p in pts]
        names = [x["name"] for x in life["request"]["profiles"]]
        fig = _figure(12, 3.6)
        axes = fig.subplots(1, 3)
        for ax, key, title in zip(
            axes,
            ("f_prog", "f_rt", "f_rd"),
            ("(a) program disturb", "(b) retention, 1 year", "(c) read disturb"),
        ):
            for i, n in enumerate(names):
                ys = [p["profiles"][i].get(key) for p in pts]
                xy = [(a, b) for a, b in zip(pe, ys) if isinstance(b, (int, float)) and b > 0]
                if xy:
                    ax.semilogy(
                        [a for a, _ in xy],
                        [b for _, b in xy],
                        label=n,
                        linestyle="--" if "thesis" in n else "-",
                        linewidth=1,
                    )
            ax.axhline(life["request"]["t_uber"], color="black", linestyle=":", linewidth=0.8)
            ax.set_xlabel("P/E cycles")
            ax.set_ylabel("ECC failure rate (UBER)")
            ax.set_title(title, fontsize=10)
            ax.grid(alpha=0.3)
        axes[-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        fig.suptitle("Fig. 12: ECC failure rates under each noise")
        return fig

    def fig13() -> Any:
        # Fig. 13: tolerable reads.
        fig = _figure(6, 3.6)
        ax = fig.subplots()
        for i, n in enumerate(names):
            ax.plot(
                [a for a, _ in tol[i]],
                [b for _, b in tol[i]],
                marker="o",
                markersize=3,
                label=n,
                linewidth=1,
            )
        ax.set_xlabel("P/E cycles")
        ax.set_ylabel("max tolerable reads (grid)")
        ax.set_title("Fig. 13: read count vs P/E at T_uber = 1e-13", fontsize=10)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        ax.grid(alpha=0.3)
        return fig

    pts = life["points"]
    names = [x["name"] for x in life["request"]["profiles"]]
    paths += cached(out / "fig11_levels", ("fig11", data.fig11, groups), fig11)
    paths += cached(out / "fig12_failure_rates", ("fig12", pts, names, life["request"]), fig12)
    paths += cached(out / "fig13_tolerable_reads", ("fig13", tol, names), fig13)

    return paths


def write_table5(data: DataResult, out: Path) -> Path:
    p = out / "table5.csv"
    groups = list(data.table5)
    with p.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["poly", *groups])
        n = len(next(iter(data.table5.values()))) if groups else 0
        for k in range(n):
            w.writerow([k, *(f"{data.table5[g][k]:.6f}" for g in groups)])
    return p


def study(opts: CommonOptions, kw: Mapping[str, Any]) -> fw.Study:
    """The codec and lifetime study (``kw``: the ``--data`` and ``--level-map`` values):
    Figs. 9-13, Table 5, the lifetime headline, and the data's path-A share for Fig. 14
    (:attr:`~nandlab.reproduce.framework.Study.data`). Exits 2 when no data file is readable."""
    from nandlab.config import load_config

    out, quick, quiet = opts.out, opts.quick, opts.quiet
    out.mkdir(parents=True, exist_ok=True)
    cfg = load_config(CONFIG)["dpa"]
    lmap = kw["level_map"] or cfg["level_map"]
    threads = opts.processes or os.cpu_count() or 1
    ds = data_set(out, quick=quick, extra=kw["data"])
    configs = codec_configs()
    if not quiet:
        err_console.print(
            f"dpa: {len(ds.files)} data files, {len(configs)} codec configurations -> {out}"
        )
    an = _dpa_cli.run_analysis(
        ds.files,
        configs,
        page_size_bytes=_dpa.PAGE_SIZE_BYTES,
        max_bytes=0,
        backend="auto",
        progress=None,
    )
    for path, msg in an.errors:
        click.secho(f"error: {path}: {msg}", fg="red", err=True)
    if not an.ok_files:
        raise click.exceptions.Exit(EXIT_USER_ERROR)
    groups = _dpa_cli.group_files(an, "kind", ds.kinds)
    sums = _dpa_cli.summaries(an, groups)
    res = analyse_data(an, sums, lmap)
    if not quiet:
        err_console.print(
            f"dpa: lifetime model ({'quick' if quick else 'full'} grid; Monte-Carlo points "
            "cached after the first run)…"
        )
    profs = profiles(sums, configs, full=not quick)
    life, rd = lifetime_runs(cfg, profs, quick=quick, level_map=lmap, threads=threads)
    tol = tolerable_reads(rd, len(profs))
    rows = lifetime_rows(life)
    hrows = headline_data(res, life)
    head = headline_rows(HEADLINE, hrows, lambda t, n: None, {"all": [r["trace"] for r in hrows]})

    def show() -> None:
        print_results(an, res, life, rows, tol, lmap)
        for n in ds.notes:
            out_console.print(n)

    return fw.Study(
        checks=fw.checks_of(check(res, life)),
        headline=head,
        tables=[lifetime_table(rows)],
        figures=make_figures(res, life, tol, out),
        files=[write_table5(res, out)],
        rows=rows,
        json={
            "data": {
                "files": [str(f) for f in ds.files],
                "kinds": ds.kinds,
                "notes": ds.notes,
                "analysis": _dpa_cli.report_json(an, sums, groups),
            },
            "fig9": res.fig9,
            "fig10a": res.fig10a,
            "fig10b": res.fig10b,
            "fig10c": res.fig10c,
            "fig10d": res.fig10d,
            "fig11": res.fig11,
            "table5": res.table5,
            "lifetime": life,
            "fig13": {"reads": sorted(rd), "tolerable": tol},
            "level_map": lmap,
            "thesis": THESIS,
        },
        show=show,
        summary=f"Monte-Carlo points {life['mc_computed']} computed, {life['mc_cached']} cached",
        failed=bool(an.errors),
        data=fig14_path_a(sums, configs),
    )


def lifetime_table(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The lifetime table as printed (:func:`~nandlab.reproduce.framework.print_table`)."""
    cols = ["profile", "L0", "thesis P/E", "thesis x", "ours P/E", "ours x", "full-pattern P/E"]
    lines = []
    for r in rows:
        pe = fmt_num(r["ours_pe"])
        pe = "> grid" if r["beyond_grid"] else "< grid" if r["below_grid"] else pe
        lines.append([
            r["profile"], f"{100 * r['levels'][0]:.1f} %", fmt_num(r["thesis_pe"]),
            f"{r['thesis_ratio']:.2f}" if r["thesis_ratio"] else "—", pe,
            f"{r['ours_ratio']:.2f}" if r["ours_ratio"] else "—", fmt_num(r["full_pattern_pe"]),
        ])  # fmt: skip
    title = ("Lifetime (eq. 2.5-2.9, T_uber = 1e-13): thesis vs ours (eq. 2.7 with per-level "
             "rates of the Vth model; full-pattern Monte Carlo as a diagnostic)")  # fmt: skip
    return {"title": title, "columns": cols, "rows": lines}


__all__ = ["HEADLINE", "THESIS", "fig14_path_a", "study"]
