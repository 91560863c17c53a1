"""DPA: data-pattern-aware error prevention (Guo's thesis, ch. 2).

DPA's pattern-probability-unbalance unit (DPA-PPU, §2.4) re-encodes each page so that most
stored bits are 1 and most MLC cells sit in the erased level L0, which suffers least from
coupling and retention loss. This package is the Python front of the Rust implementation
(``nandlab-core/src/dpa``):

* :func:`codec` -- the page codec (de-correlation or per-chunk scrambling with the best of 64
  polynomials, inversion, tags), exact round trip::

      c = nandlab.dpa.codec(chunk_bytes=8)
      stored, correlated, tags, *_ = c.encode(page)
      assert c.decode(stored, correlated, tags) == page

* :func:`analyze` -- statistics over real files (``nandlab dpa analyze``): ones ratio raw /
  de-correlated / scrambled / stored (Figs. 9, 10), cell level distribution (Fig. 11),
  per-polynomial reduce probability (Table 5), and each configuration's *profile* (stored ones
  ratio, path-A share, tag volume): what a simulator scheme consumes instead of page contents.
* :func:`lifetime` -- eq. 2.5-2.9: per-level error rates of the Vth model reweighted by the
  data's level probabilities, UBER of the thesis's BCH codes against 1e-13, lifetime in P/E;
  the full-pattern Monte Carlo as a diagnostic.

Units: sizes in bytes, rates per bit, lifetimes in P/E cycles. Level probabilities are listed
L0..L3; bit patterns are indexed ``msb*2 + lsb`` (MSB = lower page). Errors in parameters raise
:class:`nandlab.ConfigError` naming the parameter and the allowed values.

What it does not model: the DRAM buffer in front of the codec and DPA-DRM (redundant tag
pages, RAID-5, delayed writes, parallel reads, §2.5) -- those belong to the simulator.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nandlab import _core

#: Chunk sizes of Guo Fig. 10(c), bytes.
CHUNK_SIZES: tuple[int, ...] = (4, 8, 16, 32)
#: Guo Table 3: 4 KiB pages.
PAGE_SIZE_BYTES = 4096
#: Level maps: bit pattern (msb*2 + lsb) of L0..L3. "printed" is Guo §2.1.1 (11, 10, 01, 00),
#: "gray" nandlab's Vth-model default (11, 10, 00, 01).
LEVEL_MAPS: dict[str, tuple[int, int, int, int]] = {
    "printed": (0b11, 0b10, 0b01, 0b00),
    "gray": (0b11, 0b10, 0b00, 0b01),
}
#: Guo §2.2.1 / §2.6: baseline 8-bit BCH per 512 B "(4200,4096,104)"; DPA BCH(4312,4208,8).
BASELINE_CODE = {"n": 4200, "k": 4096, "t": 8, "m": 13}
DPA_CODE = {"n": 4312, "k": 4208, "t": 8, "m": 13}

#: File kinds by extension (Guo Table 1's types and their usual stand-ins).
_KINDS: dict[str, tuple[str, ...]] = {
    "audio": (".mp3", ".oga", ".ogg", ".flac", ".wav", ".m4a", ".opus"),
    "video": (".mp4", ".mkv", ".webm", ".avi", ".mov"),
    "compressed": (".gz", ".tgz", ".bz2", ".xz", ".zst", ".zip", ".7z", ".lz4"),
    "picture": (".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".tif", ".tiff"),
    "pdf": (".pdf",),
    "office": (".ppt", ".pptx", ".odp", ".doc", ".docx", ".odt", ".xls", ".xlsx", ".ods"),
}


def codec(
    chunk_bytes: int = 8, order: int = 16, polynomials: int | None = None, backend: str = "auto"
) -> _core.DpaCodec:
    """A DPA-PPU codec (Guo §2.4, Fig. 7).

    ``chunk_bytes`` in {4, 8, 16, 32}; ``order`` 2..16 with ``polynomials`` (default
    min(64, what the order offers); order 16 = Guo Table 4, more than 64 adds primitive
    polynomials in ascending order); ``backend`` ``auto``/``avx512``/``clmul``/``portable``
    (bit-identical). Raises :class:`nandlab.ConfigError` for values out of range.
    """
    return _core.DpaCodec(chunk_bytes, order, polynomials, backend)


def polynomials(order: int = 16, count: int | None = None) -> list[int]:
    """The scrambling polynomials of an order and count (bit k = coefficient of x^k)."""
    return list(_core.dpa_polynomials(order, count))


def file_kind(path: str | Path) -> str:
    """Guo Table 1-style kind of a file: by extension, else ``text`` when its first 4 KiB are
    printable ASCII, else ``binary``. Unreadable files are ``other``."""
    p = Path(path)
    suf = "".join(p.suffixes[-1:]).lower()
    for kind, exts in _KINDS.items():
        if suf in exts:
            return kind
    if suf == ".jar":
        return "office"  # zip container, like .pptx (the spec's office stand-in)
    try:
        with p.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return "other"
    if head and sum(1 for b in head if b in (9, 10, 13) or 32 <= b < 127) >= 0.95 * len(head):
        return "text"
    return "binary"


def config_list(
    chunks: Iterable[int] = CHUNK_SIZES, order: int = 16, polynomials: int | None = None
) -> list[dict[str, Any]]:
    """Codec configurations for :func:`analyze`: one per chunk size."""
    return [{"chunk_bytes": c, "order": order, "polynomials": polynomials} for c in chunks]


@dataclass
class Analysis:
    """Result of :func:`analyze`: the core's JSON plus timing.

    ``files`` has one entry per file (``error`` set for files that could not be analysed);
    ``configs`` the codec configurations in order; ``cpu_s`` the process CPU time of the call.
    """

    raw: dict[str, Any]
    cpu_s: float
    files: list[dict[str, Any]] = field(default_factory=list)
    configs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def errors(self) -> list[tuple[str, str]]:
        """``(path, message)`` of the files that could not be analysed."""
        return [(f["path"], f["error"]) for f in self.files if f.get("error")]

    @property
    def ok_files(self) -> list[dict[str, Any]]:
        """The files that were analysed."""
        return [f for f in self.files if not f.get("error")]

    @property
    def bytes(self) -> int:
        """Bytes analysed."""
        return int(self.raw.get("bytes", 0))

    def summary(self, paths: Sequence[str] | None = None) -> dict[str, Any]:
        """Counts of the given files (default: all analysed) added up, with one profile per
        configuration (see :func:`summarize`)."""
        sel = self.ok_files if paths is None else [f for f in self.ok_files if f["path"] in paths]
        return summarize(sel)

    def throughput(self) -> list[dict[str, Any]]:
        """Encode throughput of each configuration on one core, MB/s (10^6 B):
        ``encode_mb_per_s`` from the encoding thread's CPU time where the platform gives it
        (Linux), else from the wall clock of the encode loop (``basis`` says which);
        ``wall_mb_per_s`` always from the wall clock."""
        out = []
        for i, c in enumerate(self.configs):
            wall = sum(f["configs"][i]["encode_s"] for f in self.ok_files)
            cpu = sum(f["configs"][i].get("encode_cpu_s", 0.0) for f in self.ok_files)
            basis = cpu if cpu > 0 else wall
            out.append(
                {
                    **c,
                    "encode_s": wall,
                    "encode_cpu_s": cpu,
                    "basis": "thread CPU" if cpu > 0 else "wall clock",
                    "encode_mb_per_s": self.bytes / basis / 1e6 if basis > 0 else None,
                    "wall_mb_per_s": self.bytes / wall / 1e6 if wall > 0 else None,
                }
            )
        return out


def analyze(
    files: Sequence[str | Path],
    *,
    configs: Sequence[Mapping[str, Any]] | None = None,
    page_size_bytes: int = PAGE_SIZE_BYTES,
    max_bytes_per_file: int = 0,
    backend: str = "auto",
    progress: Callable[[int, int], None] | None = None,
) -> Analysis:
    """DPA-PPU statistics of ``files`` (Guo §2.6, Figs. 9-11, Table 5).

    ``configs``: codec configurations (``chunk_bytes``, ``order``, ``polynomials``; default
    :func:`config_list`). Every file is read once, in pages of ``page_size_bytes``; files that
    cannot be read (missing, unreadable, a directory, empty, shorter than a chunk) get an
    ``error`` and the others are analysed. ``progress(bytes_done, bytes_total)`` is called at
    most every 100 ms. Raises :class:`nandlab.ConfigError` for a bad configuration.
    """
    req = {
        "files": [str(f) for f in files],
        "page_size_bytes": page_size_bytes,
        "configs": [dict(c) for c in (configs if configs is not None else config_list())],
        "max_bytes_per_file": max_bytes_per_file,
        "backend": backend,
    }
    t0 = time.process_time()
    raw = json.loads(_core.dpa_analyze(json.dumps(req), progress))
    cpu = time.process_time() - t0
    return Analysis(raw=raw, cpu_s=cpu, files=raw["files"], configs=raw["configs"])


def summarize(files: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Add up analysed files (entries of :attr:`Analysis.files` from one call) and compute
    each configuration's profile: ``{"files", "stats", "profiles"}``. Raises
    :class:`nandlab.ConfigError` when no file has data."""
    return dict(json.loads(_core.dpa_summarize(json.dumps(list(files)))))


def levels(patterns: Sequence[float], level_map: str = "printed") -> list[float]:
    """Level probabilities L0..L3 from bit-pattern probabilities (index msb*2 + lsb)."""
    return [float(patterns[v]) for v in LEVEL_MAPS[level_map]]


def independent_patterns(ones_ratio: float) -> list[float]:
    """Bit-pattern probabilities of independent bits with P(1) = ``ones_ratio`` (Guo §2.2.1:
    p0 = p(1)p(1), ...), index msb*2 + lsb."""
    p1, p0 = ones_ratio, 1.0 - ones_ratio
    return [p0 * p0, p0 * p1, p1 * p0, p1 * p1]


def lifetime(**request: Any) -> dict[str, Any]:
    """Run the lifetime model (Guo eq. 2.5-2.9); keyword arguments are the fields of
    ``LifetimeRequest`` (``pe``, ``profiles`` = list of ``{"name", "patterns", "code"}``,
    ``level_map``, ``retention_s``, ``read_disturb_reads``, ``rel_half_width``, ``threads``,
    ``cache_dir``, ...). Monte-Carlo points are cached (``~/.cache/nandlab`` or
    ``$NANDLAB_CACHE_DIR``). Raises :class:`nandlab.ConfigError` for bad values."""
    return dict(json.loads(_core.dpa_lifetime(json.dumps(request))))


__all__ = [
    "BASELINE_CODE",
    "CHUNK_SIZES",
    "DPA_CODE",
    "LEVEL_MAPS",
    "PAGE_SIZE_BYTES",
    "Analysis",
    "analyze",
    "codec",
    "config_list",
    "file_kind",
    "independent_patterns",
    "levels",
    "lifetime",
    "polynomials",
    "summarize",
]
