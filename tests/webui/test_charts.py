"""The hand-written SVG charts: gaps, single points, empty charts, marks, escaping, formats, tick
labels that never repeat, invalid-run and baseline markers, interval bands, coincident lines and
the sparkline's scale."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET

import pytest

from retrieval_eval.formats import numbers
from retrieval_eval.store import open_store
from retrieval_eval.webui import pages
from retrieval_eval.webui.chart_axis import CHAR_W, tick_positions, unique_labels
from retrieval_eval.webui.charts import SPREAD, LineChart, Series, line_chart
from retrieval_eval.webui.sparkline import SPARK_MIN_SPAN, spark_range, sparkline
from retrieval_eval.webui.views import History, history
from webui.busy import BM25, SET, Busy

SVG = "{http://www.w3.org/2000/svg}"


def _parse(markup: str) -> ET.Element:
    return ET.fromstring(str(markup))  # well-formed XML, or this raises


def _points(root: ET.Element) -> list[ET.Element]:
    return [p for p in root.iter(f"{SVG}path") if p.get("class") == "point"]


def _centre(point: ET.Element) -> tuple[float, float]:
    """The centre of a circle marker path ``M{x-r},{y}a...``: x + r, y."""
    match = re.match(r"M([\d.]+),([\d.]+)a([\d.]+)", point.get("d", ""))
    assert match, point.get("d")
    left, y, r = (float(g) for g in match.groups())
    return left + r, y


def _ticks(root: ET.Element) -> list[str]:
    return [" ".join(t.itertext()) for t in root.iter(f"{SVG}text") if t.get("class") == "tick"]


def test_a_gap_breaks_the_line_and_draws_no_point() -> None:
    chart = LineChart(
        title="Hit rate",
        x_labels=["a", "b", "c", "d", "e"],
        series=[Series("top-1", [0.5, 0.6, None, 0.7, 0.8])],
    )
    root = _parse(line_chart(chart))
    assert len(root.findall(f".//{SVG}polyline")) == 2  # a-b and d-e
    assert len(_points(root)) == 4


def test_rates_map_to_a_fixed_zero_to_hundred_axis() -> None:
    chart = LineChart(title="t", x_labels=["a", "b"], series=[Series("s", [0.0, 1.0])])
    root = _parse(line_chart(chart))
    ys = [_centre(p)[1] for p in _points(root)]
    assert ys[0] > ys[1]  # 0 % is drawn lower than 100 %
    labels = [t.text for t in root.findall(f".//{SVG}text")]
    assert "0%" in labels and "100%" in labels


def test_one_run_draws_a_dot_and_no_data_says_so() -> None:
    one = _parse(line_chart(LineChart(title="t", x_labels=["a"], series=[Series("s", [0.4])])))
    assert len(_points(one)) == 1 and not one.findall(f".//{SVG}polyline")
    empty = line_chart(LineChart(title="t", x_labels=["a"], series=[Series("s", [None])]))
    assert "no data" in empty


def test_regressions_are_marked_at_their_runs() -> None:
    chart = LineChart(
        title="t", x_labels=["a", "b", "c"], series=[Series("s", [0.8, 0.2, 0.8])], marks=[1]
    )
    root = _parse(line_chart(chart))
    marks = [r for r in root.findall(f".//{SVG}rect") if r.get("class") == "mark"]
    assert len(marks) == 1
    assert "regression: b" in "".join(marks[0].itertext())


def test_latency_axis_scales_to_a_round_maximum() -> None:
    chart = LineChart(
        title="Latency", x_labels=["a", "b"], series=[Series("p95", [12.0, 37.0])], percent=False
    )
    labels = [t.text for t in _parse(line_chart(chart)).findall(f".//{SVG}text")]
    assert "50" in labels and "25" in labels  # ceiling of 37 is 50, ticks every 12.5


@pytest.mark.parametrize("largest", [0.0123, 0.02, 0.3, 0.9, 2.4, 7.0, 37.0, 240.0, 12_345.0])
def test_latency_ticks_read_apart_and_say_their_value(largest: float) -> None:
    # hundredths of a millisecond wrote 0, 0.01, 0.01, 0.01, 0.02 with two decimals for every step
    chart = LineChart(
        title="Latency", x_labels=["a", "b"], series=[Series("p95", [largest / 3, largest])],
        percent=False, unit="ms",
    )  # fmt: skip
    ticks = [t.text or "" for t in _parse(line_chart(chart)).iter(f"{SVG}text")
             if t.get("class") == "y-tick"]  # fmt: skip
    assert len(ticks) == 5 and len(set(ticks)) == 5, ticks
    values = [float(t.replace(",", "")) for t in ticks]
    step = values[1]
    assert values[0] == 0 and values[-1] >= largest
    assert all(v == pytest.approx(step * i, rel=1e-9) for i, v in enumerate(values))


def test_every_text_is_escaped() -> None:
    evil = '<script>alert("x")</script>'
    chart = LineChart(title=evil, x_labels=[evil, "b"], series=[Series(evil, [0.1, 0.2])])
    markup = str(line_chart(chart))
    assert "<script>" not in markup
    root = _parse(markup)
    assert evil in "".join(root.itertext())  # shown as text, intact
    spark = str(sparkline([0.1, None, 0.3], label=evil))
    assert "<script>" not in spark
    _parse(spark)


def test_x_labels_stay_few_and_include_the_newest_run() -> None:
    labels = [f"d{i}" for i in range(30)]
    chart = LineChart(title="t", x_labels=labels, series=[Series("s", [0.5] * 30)])
    shown = _ticks(_parse(line_chart(chart)))
    assert shown[0] == "d0" and shown[-1] == "d29" and len(shown) <= 30
    assert len(shown) == len(set(shown))


def test_sparkline_marks_regressions_in_red() -> None:
    markup = str(sparkline([0.7, 0.2, 0.7], marks=[1]))
    assert markup.count("#C62828") == 1
    assert "70%, 20%, 70%" in markup  # the tooltip lists the values


def test_two_runs_in_the_same_minute_get_distinct_tick_labels() -> None:
    from datetime import UTC, datetime

    from retrieval_eval.webui.pages import short_date

    same = datetime(2026, 11, 30, 16, 24, 5, tzinfo=UTC)
    later = datetime(2026, 11, 30, 16, 24, 50, tzinfo=UTC)
    dates = [short_date(same), short_date(later)]
    assert dates[0] == dates[1]  # what the issue saw: "11-30 16:24" twice
    # named by run id and date, as the history page does: distinct, and both shown
    labels = [f"#7\n{dates[0]}", f"#8\n{dates[1]}"]
    chart = LineChart(title="t", x_labels=labels, series=[Series("s", [0.5, 0.6])])
    assert _ticks(_parse(line_chart(chart))) == [f"#7 {dates[0]}", f"#8 {dates[1]}"]
    # even labels that are the same text are told apart
    bare = LineChart(title="t", x_labels=dates, series=[Series("s", [0.5, 0.6])])
    shown = _ticks(_parse(line_chart(bare)))
    assert len(shown) == 2 and shown[0] != shown[1]


def test_unique_labels_never_collide_with_an_existing_label() -> None:
    labels = ["a", "a", "a ·2", "b", "a"]
    out = unique_labels(labels)
    assert len(set(out)) == len(out)
    assert out[0] == "a" and out[2] == "a ·2" and out[3] == "b"


def test_crowded_ticks_are_thinned_never_duplicated_never_overlapping() -> None:
    for count in (2, 7, 60, 200):
        labels = [f"#{i}\n11-30 16:{i % 60:02d}" for i in range(count)]
        label_w = max(len(line) for label in labels for line in label.split("\n")) * CHAR_W
        for room in (300.0, 648.0, 2000.0):
            shown = tick_positions(labels, room)
            assert shown[0] == 0 and shown[-1] == count - 1
            assert len(shown) == len(set(shown)) and shown == sorted(shown)
            xs = [room * i / (count - 1) for i in shown]
            gaps = [b - a for a, b in itertools.pairwise(xs)]
            # end labels are anchored inwards: neighbours need 1.5 label widths between them
            assert min(gaps) >= 1.5 * label_w, (count, room, shown)
    assert tick_positions(["only"], 300.0) == [0] and tick_positions([], 300.0) == []


def _legend_kinds(root: ET.Element) -> list[str]:
    return [
        g.get("data-kind", "") for g in root.iter(f"{SVG}g") if g.get("class") == "legend-entry"
    ]


def test_invalid_runs_and_accepted_baselines_are_marked_with_legend_entries() -> None:
    chart = LineChart(
        title="t",
        x_labels=["a", "b", "c", "d"],
        series=[Series("top-1", [0.8, 0.2, 0.8, 0.7])],
        marks=[2],
        baselines=[0],
        invalid=[1],
    )
    root = _parse(line_chart(chart))
    classes = [e.get("class") for e in root.iter()]
    assert classes.count("mark-invalid") == 1 and classes.count("mark-baseline") == 1
    assert classes.count("mark") == 1
    assert _legend_kinds(root) == ["series", "regression", "baseline", "invalid"]
    invalid_point = _points(root)[1]
    assert invalid_point.get("fill") == "#fff"  # hollow
    assert "invalid run" in "".join(invalid_point.itertext())
    plain = _parse(line_chart(LineChart(title="t", x_labels=["a"], series=[Series("s", [0.5])])))
    assert _legend_kinds(plain) == ["series"]  # no entry for a mark that is not there


def test_runs_whose_labels_need_attention_are_marked_beside_the_other_marks() -> None:
    """The dead-label story on the chart: its own glyph and legend entry, beside a regression's
    glyph at the same run, never instead of it."""
    chart = LineChart(
        title="t",
        x_labels=["a", "b", "c"],
        series=[Series("top-1", [0.8, 0.5, 0.8])],
        marks=[1],
        dead_labels=[1, 2],
    )
    root = _parse(line_chart(chart))
    marks = [e for e in root.iter() if e.get("class") == "mark-labels"]
    assert len(marks) == 2
    assert "labels need attention (dead ids): b" in "".join(marks[0].itertext())
    assert _legend_kinds(root) == ["series", "regression", "labels"]
    # at run b the regression's ▼ and the labels glyph sit side by side, 12 px apart
    (down,) = [e for e in root.iter(f"{SVG}text") if e.get("class") == "mark-regression"]
    glyph = re.match(r"M([\d.]+),", marks[0][0].get("d", ""))
    assert glyph and float(glyph.group(1)) - float(down.get("x", "0")) == pytest.approx(12)
    spark = _parse(sparkline([0.7, 0.4, 0.7], marks=[1], dead_labels=[1]))
    classes = [e.get("class") for e in spark.iter()]
    assert classes.count("spark-labels") == 1 and classes.count("spark-regression") == 1


def test_the_interval_band_is_drawn_between_low_and_high() -> None:
    band = [(0.4, 0.6), None, (0.5, 0.9)]
    chart = LineChart(
        title="t", x_labels=["a", "b", "c"], series=[Series("s", [0.5, None, 0.7], band=band)]
    )
    root = _parse(line_chart(chart))
    polygons = [p for p in root.iter(f"{SVG}polygon") if p.get("class") == "band"]
    assert len(polygons) == 2  # the gap breaks the band too
    ys = [float(xy.split(",")[1]) for xy in polygons[1].get("points", "").split()]
    point_y = _centre(_points(root)[1])[1]
    assert min(ys) < point_y < max(ys)  # the value lies inside its band
    assert "band" in _legend_kinds(root)
    no_band = _parse(line_chart(LineChart(title="t", x_labels=["a"], series=[Series("s", [0.5])])))
    assert not list(no_band.iter(f"{SVG}polygon"))


def test_coincident_lines_stay_apart_with_their_own_dash_and_marker() -> None:
    chart = LineChart(
        title="t",
        x_labels=["a", "b"],
        series=[Series("top-1", [0.5, 0.5]), Series("top-3", [0.5, 0.5])],
    )
    root = _parse(line_chart(chart))
    lines = root.findall(f".//{SVG}polyline")
    assert lines[0].get("points") != lines[1].get("points")
    assert lines[0].get("stroke-dasharray") != lines[1].get("stroke-dasharray")
    ys = [float(p.split(",")[1]) for line in lines for p in line.get("points", "").split()[:1]]
    assert abs(ys[0] - ys[1]) == SPREAD  # apart by a few pixels, not more
    shapes = {p.get("d", "")[:1] + str("a" in p.get("d", "")) for p in _points(root)}
    assert len(shapes) == 2  # a circle and a square
    assert _legend_kinds(root) == ["series", "series"]


def test_sparkline_scale_shows_a_collapse_and_not_a_wobble() -> None:
    def ys(values: list[float | None]) -> list[float]:
        root = _parse(sparkline(values, height=28))
        line = root.find(f"{SVG}polyline")
        assert line is not None
        return [float(p.split(",")[1]) for p in line.get("points", "").split()]

    collapse = ys([0.8, 0.8, 0.6])
    assert collapse[2] - collapse[0] >= 0.9 * (28 - 8)  # nearly the full drawable height
    wobble = ys([0.8, 0.805, 0.8])
    assert abs(wobble[1] - wobble[0]) < 0.05 * (28 - 8)
    assert spark_range([0.8, 0.805]) == pytest.approx((0.7025, 0.9025))
    assert spark_range([0.01, 0.02]) == (0.0, SPARK_MIN_SPAN)  # kept within 0-100 %
    assert spark_range([0.99, 1.0]) == (1.0 - SPARK_MIN_SPAN, 1.0)
    assert spark_range([0.1, 0.9]) == (0.1, 0.9)
    assert "axis 60–80%" in str(sparkline([0.8, 0.6]))


def test_sparkline_marks_invalid_runs_and_baselines() -> None:
    root = _parse(sparkline([0.7, 0.2, 0.7], baselines=[0], invalid=[1]))
    classes = [e.get("class") for e in root.iter()]
    assert classes.count("spark-baseline") == 1 and classes.count("spark-invalid") == 1


def test_number_formats() -> None:
    assert numbers.pct(0.8123) == "81.2%"
    assert numbers.pct(None) == "–"
    assert numbers.pts(-0.565) == "-56.5 pts"
    assert numbers.pts(0.0) == "+0.0 pts"
    assert numbers.ms(1234.56) == "1,234.6 ms"
    assert pages.state_label(None) == "not checked"
    assert pages.state_label("no_regression") == "no regression"


def test_history_charts_draw_interval_bands_overall_and_for_few_slices(busy_sqlite: Busy) -> None:
    with open_store(busy_sqlite.url) as store:
        data = history(store, SET, BM25, 60)
    latest = data.runs[-1]
    assert latest.top1_hit_rate_ci is not None  # read from the stored details
    low, high = latest.top1_hit_rate_ci
    assert low < (latest.top1_hit_rate or 0) < high

    assert bands_of(data, "overall") == [2, 0]  # top-1 and top-3 in one piece each; latency none
    assert bands_of(data, "form") == [2, 2, 0]  # two forms, on the top-1 and the top-3 chart
    assert bands_of(data, "hard_class") == [0, 0, 0]  # three classes: more than MAX_BANDS


def bands_of(data: History, dim: str) -> list[int]:
    """Band polygons per chart, counted in its wide copy (each chart is drawn wide, then narrow)."""
    return [
        str(c).split('<svg class="chart-narrow"')[0].count('class="band"')
        for c in pages.history_charts(data, dim)
    ]
