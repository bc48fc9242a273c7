"""The figures beside a model judge's labels (:mod:`retrieval_eval.labels.machine`), worded:
who judged the top places, and the hit rate three ways, each with its interval.

Only a run whose set has machine judgments in the store gets them. Every format words the same
document, :meth:`~retrieval_eval.labels.machine.JudgeFigures.contract` (JSON gives it as
``judge_figures``; a compare entry carries it), through the cells here: the run report's text
lines and its Markdown and HTML block, ``compare``'s text and Markdown table (one row per
retriever and depth) and its CSV columns (:func:`csv_header`, :func:`csv_cells`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from retrieval_eval.formats.markdown_text import md_row, md_text
from retrieval_eval.formats.numbers import ci, pct
from retrieval_eval.labels.machine import MIN_CALIBRATION

if TYPE_CHECKING:
    from retrieval_eval.labels.machine import JudgeFigures

# the three hit rates, in the order every format shows them
KINDS = (
    ("human", "people only"),
    ("human_machine", "people + model"),
    ("ppi", "prediction-powered"),
)
NOT_ENOUGH = f"n/a (needs {MIN_CALIBRATION} questions people judged whole)"


def title(document: Mapping[str, Any]) -> str:
    """``Model judgments (judge:a, judge:b)``."""
    return f"Model judgments ({', '.join(document['machine_raters'])})"


def level(document: Mapping[str, Any]) -> str:
    """The intervals' level: ``95%``."""
    return f"{document['confidence']:.0%}"


def shares_cell(document: Mapping[str, Any]) -> str:
    """Who judged the top places: ``people 9.1% / model 40.0% / nobody 50.9%``."""
    shares = document["holes"]["shares"]
    return (
        f"people {pct(shares['human'])} / "
        f"model {pct(shares['machine'])} / nobody {pct(shares['unjudged'])}"
    )


def holes_sentence(document: Mapping[str, Any]) -> str:
    """``Model judgments (judge:a): of the top 10's 460 places, people judged ...``."""
    holes = document["holes"]
    shares = holes["shares"]
    return (
        f"{title(document)}: of the top {holes['depth']}'s {holes['slots']} places, people "
        f"judged {pct(shares['human'])}, a model only {pct(shares['machine'])}, nobody "
        f"{pct(shares['unjudged'])}"
    )


def _rate(rate: Mapping[str, Any] | None, why_none: str) -> str:
    return why_none if rate is None else f"{pct(rate['rate'])} {ci(rate['ci'])}"


def rate_cells(document: Mapping[str, Any], *, over: bool = True) -> list[tuple[int, list[str]]]:
    """Per gated depth, the three hit rates' cells in :data:`KINDS` order; ``over``: people
    only's cell says over how many questions."""
    rows = []
    for key, rates in document["hit_rates"].items():
        human = _rate(rates["human"], "n/a")
        if over and rates["human"] is not None:
            human += f" over {rates['calibration_questions']}"
        combined = _rate(rates["human_machine"], "n/a")
        rows.append(
            (int(key.removeprefix("top")), [human, combined, _rate(rates["ppi"], NOT_ENOUGH)])
        )
    return rows


def _headers(document: Mapping[str, Any]) -> list[str]:
    return [f"{label} [{level(document)} CI]" for _, label in KINDS]


def judge_figures_text(figures: JudgeFigures | None) -> str:
    """The run report's plain-text lines (empty without figures)."""
    if figures is None:
        return ""
    document: dict[str, Any] = figures.contract()
    lines = [holes_sentence(document)]
    for depth, (human, combined, ppi) in rate_cells(document, over=False):
        calibration = document["hit_rates"][f"top{depth}"]["calibration_questions"]
        lines.append(
            f"top-{depth} hit rate ({level(document)} intervals): people only {human} over "
            f"{calibration} questions people judged whole; people + model {combined}; "
            f"prediction-powered {ppi}"
        )
    return "\n".join(lines) + "\n"


def run_table(document: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The run report's table (Markdown and HTML): a row per gated depth, the three hit rates."""
    rows = [[f"top-{d}", *cells] for d, cells in rate_cells(document)]
    return ["depth", *_headers(document)], rows


def judge_figures_markdown(figures: JudgeFigures | None) -> tuple[str, list[str]] | None:
    """The run report's Markdown block as (summary, body), folded by the report: the holes
    sentence, then a table of the three hit rates per depth and what each means."""
    if figures is None:
        return None
    document: dict[str, Any] = figures.contract()
    headers, rows = run_table(document)
    table = [md_row(headers), "|---|---:|---:|---:|", *map(md_row, rows)]
    return md_text(holes_sentence(document)), [*table, "", md_text(CAVEAT)]


CAVEAT = (
    "People only: over the questions a person graded whose whole top k people judged (unbiased, "
    "wide). People + model: as biased as the model. Prediction-powered: the model corrected by "
    "its error on those questions (valid when they are a random sample of the set)."
)


def compare_rows(
    entries: Sequence[tuple[str, Mapping[str, Any] | None]],
) -> tuple[list[str], list[list[str]]]:
    """``compare``'s table: one row per retriever and depth, who judged its top places on its
    first row. ``entries``: (name, its ``judge_figures`` or None); rows only for those with."""
    shown = [(name, doc) for name, doc in entries if doc is not None]
    if not shown:
        return [], []
    depths = {doc["holes"]["depth"] for _, doc in shown}
    one = len(depths) == 1
    judged = f"top-{depths.pop()} judged by" if one else "judged by"
    headers = ["retriever", judged, "depth", *_headers(shown[0][1])]
    rows = []
    for name, doc in shown:
        first = shares_cell(doc) + ("" if one else f" (top {doc['holes']['depth']})")
        for i, (depth, cells) in enumerate(rate_cells(doc)):
            rows.append([name if i == 0 else "", first if i == 0 else "", f"top-{depth}", *cells])
    return headers, rows


def compare_title(entries: Sequence[tuple[str, Mapping[str, Any] | None]]) -> str:
    """The compare table's title: the judges of every entry and the intervals' level."""
    docs = [doc for _, doc in entries if doc is not None]
    raters = sorted({r for doc in docs for r in doc["machine_raters"]})
    return title({"machine_raters": raters}) + f", the hit rate three ways ({level(docs[0])} CI)"


# compare's CSV: the holes split, then per depth each hit rate with its interval's bounds
CSV_HOLES = ("depth", "slots", "human_judged", "machine_judged", "unjudged")
CSV_RATE = ("rate", "ci_low", "ci_high")


def csv_depths(documents: Sequence[Mapping[str, Any] | None]) -> list[int]:
    """Every depth any entry's figures give a hit rate at, in order: one group of columns each."""
    keys = {key for doc in documents if doc is not None for key in doc["hit_rates"]}
    return sorted(int(key.removeprefix("top")) for key in keys)


def csv_header(depths: Sequence[int]) -> list[str]:
    """``judge_holes_depth`` ... ``judge_holes_unjudged``, then per depth
    ``judge_top{k}_calibration_questions`` and ``judge_top{k}_{kind}_{rate,ci_low,ci_high}``
    for each kind of :data:`KINDS` (``human``, ``human_machine``, ``ppi``)."""
    header = [f"judge_holes_{key}" for key in CSV_HOLES]
    for depth in depths:
        header.append(f"judge_top{depth}_calibration_questions")
        header += [f"judge_top{depth}_{kind}_{key}" for kind, _ in KINDS for key in CSV_RATE]
    return header


def csv_cells(document: Mapping[str, Any] | None, depths: Sequence[int]) -> list[object]:
    """One entry's cells under :func:`csv_header` (numbers; empty without figures, at a depth
    its run does not gate, or for a rate it cannot give)."""
    if document is None:
        return [None] * len(csv_header(depths))
    holes = document["holes"]
    cells: list[object] = [holes[key] for key in CSV_HOLES]
    for depth in depths:
        rates = document["hit_rates"].get(f"top{depth}")
        cells.append(None if rates is None else rates["calibration_questions"])
        for kind, _ in KINDS:
            rate = None if rates is None else rates[kind]
            cells += [None] * 3 if rate is None else [rate["rate"], *rate["ci"]]
    return cells
