"""The store's tables, as SQLAlchemy Core metadata (the queries use these; Alembic creates them).

``eval_result`` is shared with answer-quality evaluation, so its first columns keep general
names: ``model_id`` is the retriever identifier, ``grader`` is ``retrieval_hit_rate`` for this
tool's runs, ``prompt_count`` / ``passed_count`` / ``pass_rate`` are questions / top-1 hits /
top-1 hit rate, and ``mean_score`` is the top-3 hit rate. Columns this tool adds are nullable or
defaulted, so other graders can insert rows without knowing them. Free-form values (set, model,
question ids, hard classes) have no length limit: PostgreSQL would reject a long one.

Keep this file and the migrations in ``migrations/versions`` in step; a test compares them.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.dialects.postgresql import JSONB

from retrieval_eval.store.names import GRADER as GRADER
from retrieval_eval.store.names import VERSION_TABLE as VERSION_TABLE

# JSON on SQLite (text), JSONB on PostgreSQL (indexable, compact)
JSONType = JSON().with_variant(JSONB(), "postgresql")

metadata = MetaData()


def _id() -> Column[int]:
    """A table's own key."""
    return Column("id", Integer, primary_key=True, autoincrement=True)


def _owner(column: str, parent: str, name: str) -> Column[int]:
    """``column``: the ``parent`` row this row belongs to, deleted with it (foreign key ``name``)."""
    return Column(
        column, Integer, ForeignKey(f"{parent}.id", ondelete="CASCADE", name=name), nullable=False
    )


def _reference(column: str, parent: str, name: str) -> Column[int]:
    """``column``: a ``parent`` row this row points at, if any; NULL once that row is pruned."""
    return Column(
        column, Integer, ForeignKey(f"{parent}.id", ondelete="SET NULL", name=name), nullable=True
    )


eval_result = Table(
    "eval_result",
    metadata,
    _id(),
    Column("set_identifier", String, nullable=False),
    Column("model_id", String, nullable=False),
    Column("grader", String(64), nullable=False),
    Column("prompt_count", Integer, nullable=False),
    Column("passed_count", Integer, nullable=False),
    Column("pass_rate", Float, nullable=True),
    Column("mean_score", Float, nullable=True),
    Column("details", JSONType, nullable=True),
    Column("run_date", DateTime(timezone=True), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # added by retrieval-eval
    Column("run_key", String(255), nullable=True),
    Column("status", String(16), nullable=False, server_default="valid"),
    Column("labels_fingerprint", String(128), nullable=True),
    Column("corpus_revision", String, nullable=True),
    Column("error_count", Integer, nullable=False, server_default="0"),
    Column("latency_p50_ms", Float, nullable=True),
    Column("latency_p95_ms", Float, nullable=True),
    Column("verdict_state", String(32), nullable=True),
    Column("is_regression", Boolean, nullable=False, server_default=false()),
    Column("accepted_baseline", Boolean, nullable=False, server_default=false()),
    _reference("baseline_run_id", "eval_result", "fk_eval_result_baseline"),
    # the index build measured (an asset event's extra, or --index-version) and the
    # retrieval-eval version that scored the run; NULL on runs stored before 0004
    Column("index_version", String, nullable=True),
    Column("package_version", String(64), nullable=True),
    # a re-judged run (sets rejudge): the run whose rankings it scored against newer labels;
    # and the set file's version its labels come from (sets promote); NULL before 0009_rejudged
    _reference("rejudged_from", "eval_result", "fk_eval_result_rejudged_from"),
    Column("set_version", Integer, nullable=True),
    UniqueConstraint("run_key", name="uq_eval_result_run_key"),
    Index("ix_eval_result_key_date", "set_identifier", "model_id", "grader", "run_date"),
    Index("ix_eval_result_run_date", "run_date"),
)

eval_result_question = Table(
    "eval_result_question",
    metadata,
    _id(),
    _owner("run_id", "eval_result", "fk_eval_result_question_run"),
    Column("position", Integer, nullable=False),
    Column("question_id", String, nullable=False),
    Column("question", Text, nullable=False, server_default=""),
    Column("form", String(16), nullable=False),
    Column("hard_class", String, nullable=True),
    Column("expected_document_ids", JSONType, nullable=False),
    Column("grades", JSONType, nullable=True),  # a graded question's grades (0008_grades)
    Column("top1_hit", Boolean, nullable=False),
    Column("top3_hit", Boolean, nullable=False),
    Column("first_hit_rank", Integer, nullable=True),
    Column("retrieved", JSONType, nullable=False),
    Column("latency_ms", Float, nullable=True),
    Column("error", Text, nullable=True),
    UniqueConstraint("run_id", "question_id", name="uq_eval_result_question_run_question"),
    # the run page: each outcome's questions in the set's order (store/questions.py)
    Index(
        "ix_eval_result_question_listing",
        "run_id",
        "top3_hit",
        "top1_hit",
        "position",
        "question_id",
        "form",
    ),
)

eval_result_slice = Table(
    "eval_result_slice",
    metadata,
    _id(),
    _owner("run_id", "eval_result", "fk_eval_result_slice_run"),
    Column("position", Integer, nullable=False),
    Column("dimension", String(16), nullable=False),  # "form" or "hard_class"
    Column("value", String, nullable=False),
    Column("question_count", Integer, nullable=False),
    Column("top1_hits", Integer, nullable=False),
    Column("top3_hits", Integer, nullable=False),
    Column("top1_rate", Float, nullable=True),
    Column("top3_rate", Float, nullable=True),
    UniqueConstraint("run_id", "dimension", "value", name="uq_eval_result_slice_run_value"),
)

# Hits at every gated depth (top-1 and top-3 included), for the whole run (dimension "overall",
# value "") and each form and hard-class slice; runs stored before have none (see rows.py)
eval_result_depth = Table(
    "eval_result_depth",
    metadata,
    _id(),
    _owner("run_id", "eval_result", "fk_eval_result_depth_run"),
    Column("dimension", String(16), nullable=False),  # "overall", "form" or "hard_class"
    Column("value", String, nullable=False, server_default=""),
    Column("depth", Integer, nullable=False),
    Column("hits", Integer, nullable=False),
    Column("question_count", Integer, nullable=False),
    UniqueConstraint(
        "run_id", "dimension", "value", "depth", name="uq_eval_result_depth_run_scope"
    ),
)

# One row per (DAG run, alert channel): a retried or re-run alert task finds it and does not send
# again. ``state`` is ``sending`` while the message is on its way, ``sent`` once it was delivered.
eval_alert = Table(
    "eval_alert",
    metadata,
    _id(),
    Column("run_key", String(255), nullable=False),
    Column("channel", String(255), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("state", String(16), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_key", "channel", name="uq_eval_alert_run_channel"),
)

# Query samples (retrieval_eval.replay): frozen once per (name, fingerprint); the text is the
# stored form (redacted, a keyed hash, or plain), never more.
query_sample = Table(
    "query_sample",
    metadata,
    _id(),
    Column("name", String, nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("privacy", String(16), nullable=False),
    Column("query_count", Integer, nullable=False),
    Column("log_queries", Integer, nullable=False),
    Column("log_traffic", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("name", "fingerprint", name="uq_query_sample_name_fingerprint"),
)

query_sample_item = Table(
    "query_sample_item",
    metadata,
    _id(),
    _owner("sample_id", "query_sample", "fk_query_sample_item_sample"),
    Column("position", Integer, nullable=False),
    Column("query_key", String(64), nullable=False),
    Column("query_text", Text, nullable=False),
    Column("query_count", Integer, nullable=False),
    Column("bucket", String(8), nullable=False),
    Column("query_id", String(255), nullable=True),
    UniqueConstraint("sample_id", "query_key", name="uq_query_sample_item_key"),
)

# One replay of a sample by a retriever, compared with an earlier replay (``compared_id``).
replay_run = Table(
    "replay_run",
    metadata,
    _id(),
    Column("run_key", String(255), nullable=False),
    _owner("sample_id", "query_sample", "fk_replay_run_sample"),
    Column("sample_name", String, nullable=False),
    Column("retriever", String, nullable=False),
    Column("k", Integer, nullable=False),
    Column("p", Float, nullable=False),
    Column("run_date", DateTime(timezone=True), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("index_version", String, nullable=True),
    Column("package_version", String(64), nullable=True),
    Column("query_count", Integer, nullable=False),
    Column("error_count", Integer, nullable=False),
    Column("state", String(16), nullable=False),
    _reference("compared_id", "replay_run", "fk_replay_run_compared"),
    Column("against", String, nullable=True),
    Column("mean_rbo", Float, nullable=True),
    Column("top1_changed", Float, nullable=True),
    Column("weighted_mean_rbo", Float, nullable=True),
    Column("weighted_top1_changed", Float, nullable=True),
    Column("figures", JSONType, nullable=True),
    UniqueConstraint("run_key", name="uq_replay_run_run_key"),
    Index("ix_replay_run_key_date", "sample_name", "retriever", "run_date"),
)

# One row per query and replay: its top-k distinct ids (a JSON array), or its error, and how it
# moved against the compared replay. ``json`` on PostgreSQL, not an array or ``jsonb``: the save
# COPYs each ranking as the text orjson makes, which the server only checks. No key, unique index
# or foreign key of its own: a replay's rankings are written only by ``store.replays.save``, with their
# replay, in one transaction (one per query of a sample whose keys are unique, checked there), and
# ``prune`` deletes them before their replay. They are found by replay: a BRIN index on PostgreSQL
# (a replay's rows are written together, so its blocks are contiguous), a B-tree on SQLite.
replay_ranking = Table(
    "replay_ranking",
    metadata,
    Column("replay_id", Integer, nullable=False),
    Column("position", Integer, nullable=False),
    Column("query_key", String(64), nullable=False),
    Column("ids", JSON, nullable=False),
    Column("error", Text, nullable=True),
    Column("rbo", Float, nullable=True),
    Column("residual", Float, nullable=True),
    Column("jaccard", Float, nullable=True),
    Column("top1_changed", Boolean, nullable=True),
    Column("overlap3", Integer, nullable=True),
    Index("ix_replay_ranking_replay", "replay_id", postgresql_using="brin"),
)

# Relevance judgments (``sets judge import``, the dashboard's review queue): one row per grade
# given, read back as judgments-file rows (store/judgments.py). A NULL grade is a skip. Labels,
# not runs: prune leaves them alone.
judgment = Table(
    "judgment",
    metadata,
    _id(),
    Column("set_identifier", String, nullable=False),
    Column("question_id", String, nullable=True),  # NULL: a new question, given by its text
    Column("question", Text, nullable=True),
    Column("document_id", String, nullable=False),
    Column("grade", Integer, nullable=True),
    Column("rater", String, nullable=True),
    Column("judged_at", DateTime(timezone=True), nullable=True),  # the file's ``time``
    Column("note", Text, nullable=True),
    Column("source", Text, nullable=True),  # where the candidate came from ("bm25 #2", a check)
    Column("channel", String(16), nullable=False),  # "import" or "dashboard"
    Column("written_by", String, nullable=False),  # the Airflow user, or the importing OS user
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    # a model judge's row (channel "judge", rater "judge:<name>"); NULL on people's rows
    Column("judge_identity", String, nullable=True),
    Column("model", String, nullable=True),
    Column("prompt_fingerprint", String, nullable=True),
    Column("input_tokens", Integer, nullable=True),
    Column("output_tokens", Integer, nullable=True),
    Column("cost_usd", Float, nullable=True),
    CheckConstraint("grade IS NULL OR (grade >= 0 AND grade <= 3)", name="ck_judgment_grade"),
    CheckConstraint("question_id IS NOT NULL OR question IS NOT NULL", name="ck_judgment_question"),
    Index("ix_judgment_set_question", "set_identifier", "question_id", "document_id"),
)


judge_answer = Table(
    "judge_answer",
    metadata,
    _id(),
    # sha256 of (judge identity, question text, document text): a second run asks nothing asked
    Column("key", String(64), nullable=False),
    Column("judge_identity", String, nullable=False),
    Column("grade", Integer, nullable=True),  # NULL: the answer could not be read
    Column("reason", Text, nullable=True),  # why it is not a grade
    Column("model", String, nullable=True),
    Column("input_tokens", Integer, nullable=True),
    Column("output_tokens", Integer, nullable=True),
    Column("cost_usd", Float, nullable=True),
    Column("answered_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("key", name="uq_judge_answer_key"),
)

judge_calibration = Table(
    "judge_calibration",
    metadata,
    _id(),
    Column("set_identifier", String, nullable=False),
    Column("judge", String, nullable=False),  # the config's name
    Column("judge_identity", String, nullable=False),
    Column("model", String, nullable=True),
    Column("prompt_fingerprint", String, nullable=True),
    Column("pairs", Integer, nullable=False),  # the people-graded pairs compared
    Column("seed", Integer, nullable=False),
    Column("kappa", Float, nullable=True),  # quadratic-weighted Cohen's kappa
    Column("kappa_low", Float, nullable=True),
    Column("kappa_high", Float, nullable=True),
    Column("tau", Float, nullable=True),  # Kendall's tau of retriever rankings, human vs machine
    Column("min_kappa", Float, nullable=False),
    Column("passed", Boolean, nullable=False),
    Column("figures", JSONType, nullable=False),  # confusion matrix, per-grade agreement, runs
    Column("written_by", String, nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Index("ix_judge_calibration_set_judge", "set_identifier", "judge"),
)
