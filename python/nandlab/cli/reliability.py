"""``nandlab rber`` and ``nandlab ecc``: the reliability model's tables (RBER from the Vth
model, LDPC soft-sensing levels) and the ECC model's costs (BCH latency, CRC, LDPC, UBER)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from rich.table import Table

from nandlab import _core
from nandlab.cli_common import ByteSize, err_console, json_option, out_console, write_json_out

_DUR_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|h|d|w|mo|y)?\s*$", re.IGNORECASE)
_DUR_S = {
    "": 1.0,
    "s": 1.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
    "mo": 2592000.0,
    "y": 31536000.0,
}


def _floats(text: str, what: str, durations: bool = False) -> list[float]:
    out: list[float] = []
    for part in text.split(","):
        if durations:
            m = _DUR_RE.match(part)
            if not m:
                raise click.BadParameter(f"{part!r}: expected a duration like 0, 1h, 1d, 1w, 1mo")
            out.append(float(m.group(1)) * _DUR_S[(m.group(2) or "").lower()])
        else:
            try:
                out.append(float(part))
            except ValueError:
                raise click.BadParameter(f"{part!r} in {what}: not a number") from None
    return out


def _dur_label(s: float) -> str:
    for unit, k in (
        ("y", 31536000.0),
        ("mo", 2592000.0),
        ("w", 604800.0),
        ("d", 86400.0),
        ("h", 3600.0),
    ):
        if s >= k and s % k == 0:
            return f"{int(s // k)}{unit}"
    return f"{s:g}s"


@click.command("rber")
@click.option(
    "--cell",
    type=click.Choice(["mlc", "tlc"]),
    default="mlc",
    show_default=True,
    help="Cell type of the Vth model (MLC: Guo's calibration; TLC: our extrapolation).",
)
@click.option(
    "--pe",
    default="2000,3000,4000,5000,6000",
    show_default=True,
    help="P/E cycles, comma separated.",
)
@click.option(
    "--retention",
    default="0,1d,2d,1w,1mo",
    show_default=True,
    help="Retention times (s, h, d, w, mo, y), comma separated.",
)
@click.option(
    "--mode",
    "dvpp",
    default="0.15",
    show_default=True,
    help="Program modes by ISPP step ΔVpp in volts, comma separated.",
)
@click.option(
    "--levels",
    default="normal,nunma1,nunma2,nunma3",
    show_default=True,
    help="Level configurations (Guo Table 10).",
)
@click.option(
    "--read-ref-margin",
    type=click.FloatRange(0.0, 0.5),
    default=0.05,
    show_default=True,
    help="Normal-state gap between each level's verify voltage and its lower read reference, "
    "V. Guo gives none; 0.05 is our default reading, 0 the alternative that reproduces "
    "Table 11's baseline > NUNMA 1 ordering but not RBER rising with ΔVpp.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="RBER table cache (default $NANDLAB_CACHE_DIR or ~/.cache/nandlab).",
)
@json_option
def rber(
    cell: str,
    pe: str,
    retention: str,
    dvpp: str,
    levels: str,
    read_ref_margin: float,
    cache_dir: Path | None,
    json_out: str | None,
) -> None:
    """RBER from the Vth model (Guo Table 11 layout) and LDPC soft-sensing levels (Table 6)."""
    req = {
        "cell": cell,
        "pe": _floats(pe, "--pe"),
        "retention_s": _floats(retention, "--retention", durations=True),
        "dvpp_v": _floats(dvpp, "--mode"),
        "levels": [x.strip() for x in levels.split(",") if x.strip()],
        "cache_dir": str(cache_dir) if cache_dir else "",
        "read_ref_margin_v": read_ref_margin,
    }
    with err_console.status("RBER table (Monte-Carlo Vth model; cached after the first run)…"):
        out = json.loads(_core.rber_table(json.dumps(req)))
    write_json_out(json_out, out)
    if json_out == "-":
        return
    rets = req["retention_s"]
    for d in req["dvpp_v"]:
        t = Table(
            title=f"RBER, {cell.upper()}, ΔVpp {d:g} V (table cache: {out['table_cache']})",
            title_justify="left",
        )
        t.add_column("P/E")
        t.add_column("levels")
        for r in rets:
            t.add_column(_dur_label(r), justify="right")
        for p in req["pe"]:
            for lv in req["levels"]:
                vals = {
                    row["retention_s"]: row["rber"]
                    for row in out["rows"]
                    if row["dvpp_v"] == d and row["level"] == lv and row["pe"] == p
                }
                t.add_row(f"{p:g}", lv, *(f"{vals.get(r, float('nan')):.2e}" for r in rets))
        out_console.print(t)
    soft = out.get("soft_sensing")
    if not soft:
        out_console.print(
            "Guo Table 6 (extra LDPC soft-sensing levels) is of MLC: no comparison for TLC"
        )
    else:
        # always Table 6's own grid, state and step, whatever --pe / --retention / --mode asked
        t = Table(
            title="Extra LDPC soft-sensing levels on Guo Table 6's grid (normal state, ΔVpp "
            f"{soft['dvpp_v']:g} V): model \\[thesis]; "
            f"{soft['exact']}/25 exact, {soft['within_one']}/25 within one level",
            title_justify="left",
        )
        t.add_column("P/E")
        cols = sorted({c["retention_s"] for c in soft["cells"]})
        for r in cols:
            t.add_column(_dur_label(r), justify="right")
        for p in sorted({c["pe"] for c in soft["cells"]}):
            cells = {c["retention_s"]: c for c in soft["cells"] if c["pe"] == p}
            t.add_row(f"{p:g}", *(f"{cells[r]['levels']} [{cells[r]['guo_levels']}]" for r in cols))
        out_console.print(t)


@click.command("ecc")
@click.option(
    "--page-size-bytes",
    type=ByteSize(),
    default="8KiB",
    show_default=True,
    help="Page (codeword data) size the BCH code protects (binary units: 8KiB).",
)
@click.option(
    "--t",
    "t_list",
    default="6,12,24,40",
    show_default=True,
    help="BCH correction capabilities, comma separated.",
)
@click.option(
    "--rber",
    "rber_list",
    default="1e-5,1e-4,1e-3,4e-3",
    show_default=True,
    help="RBERs for the UBER columns, comma separated.",
)
@json_option
def ecc(page_size_bytes: int, t_list: str, rber_list: str, json_out: str | None) -> None:
    """BCH decode latency (FlexECC eq. 4-5), CRC and LDPC costs, and UBER at given RBERs."""
    ts = _floats(t_list, "--t")
    bad_t = [x for x in ts if x != int(x) or not 1 <= x <= 1000]
    if bad_t:
        raise click.BadParameter(
            f"{bad_t[0]:g}: a BCH code corrects a whole number of bits, 1 to 1000",
            param_hint="--t",
        )
    rbers = _floats(rber_list, "--rber")
    bad_r = [x for x in rbers if not 0 <= x <= 0.5]
    if bad_r:
        raise click.BadParameter(f"{bad_r[0]:g}: an RBER is in 0 ..= 0.5", param_hint="--rber")
    req = {"page_size_bytes": page_size_bytes, "t": [int(x) for x in ts], "rber": rbers}
    out = json.loads(_core.ecc_table(json.dumps(req)))
    write_json_out(json_out, out)
    if json_out == "-":
        return
    t = Table(title=f"BCH over a {page_size_bytes} B page", title_justify="left")
    for c in (
        "t",
        "n",
        "m",
        "encode µs",
        "decode clean µs",
        "decode corrupted µs",
        "CRC speed-up (clean / corrupted)",
    ):
        t.add_column(c, justify="right")
    for r in req["rber"]:
        t.add_column(f"UBER @ {r:g}", justify="right")
    for row in out["rows"]:
        if row["code"] != "bch":
            continue
        t.add_row(
            str(row["t"]),
            str(row["n"]),
            str(row["m"]),
            f"{row['encode_us']:.3f}",
            f"{row['decode_clean_us']:.3f}",
            f"{row['decode_corrupted_us']:.3f}",
            f"{row['crc_speedup_correct']:.2f} / {row['crc_speedup_error']:.2f}",
            *(f"{u['uber']:.2e}" for u in row["uber"]),
        )
    out_console.print(t)
    for row in out["rows"]:
        if row["code"] == "crc":
            out_console.print(f"CRC: detect only, {row['detect_us']} µs")
        if row["code"] == "ldpc":
            out_console.print(
                f"LDPC: hard-decision limit RBER {row['hard_limit_rber']:g}; each extra "
                f"soft level +{row['sense_us_per_level']:g} µs sensing, "
                f"+{row['transfer_us_per_level']:g} µs transfer (Guo §3.6)"
            )
