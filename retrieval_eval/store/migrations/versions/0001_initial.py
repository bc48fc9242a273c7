"""The first schema: eval_result (shared), eval_result_question, eval_result_slice.

Migrations are frozen history: they spell the tables out instead of importing schema.py, so a
later change to schema.py needs a new revision (a test checks the two agree).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001_initial"
down_revision = None

JSONType = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "eval_result",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("set_identifier", sa.String, nullable=False),
        sa.Column("model_id", sa.String, nullable=False),
        sa.Column("grader", sa.String(64), nullable=False),
        sa.Column("prompt_count", sa.Integer, nullable=False),
        sa.Column("passed_count", sa.Integer, nullable=False),
        sa.Column("pass_rate", sa.Float, nullable=True),
        sa.Column("mean_score", sa.Float, nullable=True),
        sa.Column("details", JSONType, nullable=True),
        sa.Column("run_date", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("run_key", sa.String(255), nullable=True),
        sa.Column("status", sa.String(16), nullable=False, server_default="valid"),
        sa.Column("labels_fingerprint", sa.String(128), nullable=True),
        sa.Column("corpus_revision", sa.String, nullable=True),
        sa.Column("error_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("latency_p50_ms", sa.Float, nullable=True),
        sa.Column("latency_p95_ms", sa.Float, nullable=True),
        sa.Column("verdict_state", sa.String(32), nullable=True),
        sa.Column("is_regression", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("accepted_baseline", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("baseline_run_id", sa.Integer, nullable=True),
        sa.ForeignKeyConstraint(
            ["baseline_run_id"],
            ["eval_result.id"],
            ondelete="SET NULL",
            name="fk_eval_result_baseline",
        ),
        sa.UniqueConstraint("run_key", name="uq_eval_result_run_key"),
    )
    op.create_index(
        "ix_eval_result_key_date",
        "eval_result",
        ["set_identifier", "model_id", "grader", "run_date"],
    )
    op.create_index("ix_eval_result_run_date", "eval_result", ["run_date"])

    op.create_table(
        "eval_result_question",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("question_id", sa.String, nullable=False),
        sa.Column("question", sa.Text, nullable=False, server_default=""),
        sa.Column("form", sa.String(16), nullable=False),
        sa.Column("hard_class", sa.String, nullable=True),
        sa.Column("expected_document_ids", JSONType, nullable=False),
        sa.Column("top1_hit", sa.Boolean, nullable=False),
        sa.Column("top3_hit", sa.Boolean, nullable=False),
        sa.Column("first_hit_rank", sa.Integer, nullable=True),
        sa.Column("retrieved", JSONType, nullable=False),
        sa.Column("latency_ms", sa.Float, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["eval_result.id"], ondelete="CASCADE", name="fk_eval_result_question_run"
        ),
        sa.UniqueConstraint("run_id", "question_id", name="uq_eval_result_question_run_question"),
    )

    op.create_table(
        "eval_result_slice",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("dimension", sa.String(16), nullable=False),
        sa.Column("value", sa.String, nullable=False),
        sa.Column("question_count", sa.Integer, nullable=False),
        sa.Column("top1_hits", sa.Integer, nullable=False),
        sa.Column("top3_hits", sa.Integer, nullable=False),
        sa.Column("top1_rate", sa.Float, nullable=True),
        sa.Column("top3_rate", sa.Float, nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["eval_result.id"], ondelete="CASCADE", name="fk_eval_result_slice_run"
        ),
        sa.UniqueConstraint("run_id", "dimension", "value", name="uq_eval_result_slice_run_value"),
    )


def downgrade() -> None:
    op.drop_table("eval_result_slice")
    op.drop_table("eval_result_question")
    op.drop_index("ix_eval_result_run_date", table_name="eval_result")
    op.drop_index("ix_eval_result_key_date", table_name="eval_result")
    op.drop_table("eval_result")
