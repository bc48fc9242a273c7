"""The hand-written SVG charts: gaps, single points, empty charts, marks, escaping, formats."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from retrieval_eval.webui import pages
from retrieval_eval.webui.charts import LineChart, Series, line_chart, sparkline

SVG = "{http://www.w3.org/2000/svg}"


def _parse(markup: str) -> ET.Element:
    return ET.fromstring(str(markup))  # well-formed XML, or this raises


def test_a_gap_breaks_the_line_and_draws_no_point() -> None:
    chart = LineChart(
        title="Hit rate",
        x_labels=["a", "b", "c", "d", "e"],
        series=[Series("top-1", [0.5, 0.6, None, 0.7, 0.8])],
    )
    root = _parse(line_chart(chart))
    assert len(root.findall(f".//{SVG}polyline")) == 2  # a-b and d-e
    assert len(root.findall(f".//{SVG}circle")) == 4


def test_rates_map_to_a_fixed_zero_to_hundred_axis() -> None:
    chart = LineChart(title="t", x_labels=["a", "b"], series=[Series("s", [0.0, 1.0])])
    root = _parse(line_chart(chart))
    ys = [float(c.get("cy", "nan")) for c in root.findall(f".//{SVG}circle")]
    assert ys[0] > ys[1]  # 0 % is drawn lower than 100 %
    labels = [t.text for t in root.findall(f".//{SVG}text")]
    assert "0%" in labels and "100%" in labels


def test_one_run_draws_a_dot_and_no_data_says_so() -> None:
    one = _parse(line_chart(LineChart(title="t", x_labels=["a"], series=[Series("s", [0.4])])))
    assert len(one.findall(f".//{SVG}circle")) == 1 and not one.findall(f".//{SVG}polyline")
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
    texts = [t.text for t in _parse(line_chart(chart)).findall(f".//{SVG}text")]
    shown = [t for t in texts if t and re.fullmatch(r"d\d+", t)]
    assert shown[0] == "d0" and shown[-1] == "d29" and len(shown) <= 9


def test_sparkline_marks_regressions_in_red() -> None:
    markup = str(sparkline([0.7, 0.2, 0.7], marks=[1]))
    assert markup.count("#C62828") == 1
    assert "70%, 20%, 70%" in markup  # the tooltip lists the values


def test_number_formats() -> None:
    assert pages.pct(0.8123) == "81.2%"
    assert pages.pct(None) == "–"
    assert pages.pts(-0.565) == "-56.5 pts"
    assert pages.pts(0.0) == "+0.0 pts"
    assert pages.ms(1234.56) == "1,234.6 ms"
    assert pages.state_label(None) == "not checked"
    assert pages.state_label("no_regression") == "no regression"
