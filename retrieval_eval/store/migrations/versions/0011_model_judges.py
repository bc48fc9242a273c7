"""Model judges: their judgments' audit columns, the answers' cache, their calibrations.

``judgment`` gains nullable columns a model judge's row fills (``judge_identity``, ``model``,
``prompt_fingerprint``, tokens and cost); people's rows leave them NULL. ``judge_answer`` caches
every answer by (judge identity, question text, document text), so a second ``sets judge auto``
asks nothing already asked. ``judge_calibration`` keeps each ``sets judge calibrate``: the
judge's identity, κ with its interval, τ and the figures; the gate reads the latest one.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011_model_judges"
down_revision = "0010_replay_rows"

AUDIT = (
    ("judge_identity", sa.String),
    ("model", sa.String),
    ("prompt_fingerprint", sa.String),
    ("input_tokens", sa.Integer),
    ("output_tokens", sa.Integer),
    ("cost_usd", sa.Float),
)


def upgrade() -> None:
    for name, kind in AUDIT:
        op.add_column("judgment", sa.Column(name, kind, nullable=True))
    op.create_table(
        "judge_answer",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("judge_identity", sa.String, nullable=False),
        sa.Column("grade", sa.Integer, nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("model", sa.String, nullable=True),
        sa.Column("input_tokens", sa.Integer, nullable=True),
        sa.Column("output_tokens", sa.Integer, nullable=True),
        sa.Column("cost_usd", sa.Float, nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("key", name="uq_judge_answer_key"),
    )
    op.create_table(
        "judge_calibration",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("set_identifier", sa.String, nullable=False),
        sa.Column("judge", sa.String, nullable=False),
        sa.Column("judge_identity", sa.String, nullable=False),
        sa.Column("model", sa.String, nullable=True),
        sa.Column("prompt_fingerprint", sa.String, nullable=True),
        sa.Column("pairs", sa.Integer, nullable=False),
        sa.Column("seed", sa.Integer, nullable=False),
        sa.Column("kappa", sa.Float, nullable=True),
        sa.Column("kappa_low", sa.Float, nullable=True),
        sa.Column("kappa_high", sa.Float, nullable=True),
        sa.Column("tau", sa.Float, nullable=True),
        sa.Column("min_kappa", sa.Float, nullable=False),
        sa.Column("passed", sa.Boolean, nullable=False),
        sa.Column("figures", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("written_by", sa.String, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_judge_calibration_set_judge", "judge_calibration", ["set_identifier", "judge"]
    )


def downgrade() -> None:
    op.drop_index("ix_judge_calibration_set_judge", table_name="judge_calibration")
    op.drop_table("judge_calibration")
    op.drop_table("judge_answer")
    with op.batch_alter_table("judgment") as batch:  # SQLite drops a column by copying
        for name, _ in reversed(AUDIT):
            batch.drop_column(name)
