"""The shared figure style (issue 19, item 10): absolute reference values on normalised plots,
labelled near-zero bars, no axes zoomed into noise, integer ticks for integer parameters, legends
off the data, PNG + SVG for every figure."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from nandlab import figures


def _draw(fig: object) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()  # type: ignore[arg-type]


def _texts(ax: object) -> list[str]:
    return [t.get_text() for t in ax.texts]  # type: ignore[attr-defined]


def test_near_zero_bars_carry_their_value() -> None:
    fig = figures.grouped_bars_figure(
        {"erases": {"t1": {"base": 100.0, "new": 0.0}, "t2": {"base": 50.0, "new": 40.0}}},
        ["base", "new"],
        reference="base",
        reference_unit="erases",
    )
    ax = fig.axes[0]
    labels = _texts(ax)
    assert "0" in labels, labels  # the zero bar of t1 is labelled, not a gap
    assert "0.8" not in labels  # a visible bar is not
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert any("base 100 erases" in t for t in ticks), ticks  # absolute reference per group


def test_a_flat_line_is_not_zoomed_into_noise() -> None:
    # Xia quick Fig. 6: values 0.272800 ... 0.272820 were drawn with an offset label
    pts = [(1, 0.27280), (2, 0.27281), (3, 0.272815), (4, 0.27282), (5, 0.272805)]
    fig = figures.sweep_lines_figure({"(a)": {"trace": pts}}, xlabel="n")
    _draw(fig)
    ax = fig.axes[0]
    assert ax.yaxis.get_offset_text().get_text() == ""
    lo, hi = ax.get_ylim()
    assert hi - lo >= 0.05 * 0.2728, (lo, hi)
    # integer parameter: integer ticks only
    assert all(float(t).is_integer() for t in ax.get_xticks()), ax.get_xticks()


def test_fractional_parameters_keep_fractional_ticks() -> None:
    fig = figures.sweep_lines_figure(
        {"(a)": {"t": [(0.5, 1.0), (1.5, 2.0), (2.5, 1.5)]}}, xlabel="x"
    )
    _draw(fig)
    assert any(not float(t).is_integer() for t in fig.axes[0].get_xticks())


def _overlaps(a: object, b: object) -> bool:
    return a.overlaps(b)  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["grouped", "stacked", "sweep"])
def test_legends_never_cover_the_data(kind: str) -> None:
    if kind == "grouped":
        fig = figures.grouped_bars_figure(
            {"p": {f"t{i}": {"a": 1.0, "b": 2.0, "c": 3.0} for i in range(4)}}, ["a", "b", "c"]
        )
    elif kind == "stacked":
        fig = figures.stacked_bars_figure(
            {f"t{i}": {"x": 1.0, "y": 2.0} for i in range(4)}, ["x", "y"]
        )
    else:
        fig = figures.sweep_lines_figure(
            {"p": {f"t{i}": [(1, i), (2, i + 1)] for i in range(4)}}, xlabel="m"
        )
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    r = canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends
    for lg in legends:
        box = lg.get_window_extent(r)
        for ax in fig.axes:
            assert not _overlaps(box, ax.get_window_extent(r)), kind


def test_every_figure_is_png_and_svg(tmp_path: Path) -> None:
    paths = figures.stacked_bars({"t": {"x": 1.0}}, ["x"], tmp_path / "f")
    assert sorted(p.suffix for p in paths) == [".png", ".svg"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_efm_fig8_is_in_percent_like_its_table() -> None:
    import inspect

    from nandlab.reproduce import efm

    src = inspect.getsource(efm)  # the reproduction's declared figures (issue 31)
    fig8 = src[src.index('"fig8_lifetime"') : src.index('"fig10_regions"')]
    assert 'ylabel="lifetime gain (%)"' in fig8 and "100.0 * g" in fig8
