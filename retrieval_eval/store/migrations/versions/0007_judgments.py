"""Relevance judgments: one judgment row per (set, question, document, rater) grade given.

Written by ``sets judge import`` and the dashboard's review queue, read back as judgments-file
rows (``retrieval_eval.labels.judgments.Judgment``). A NULL grade is a skip (the dashboard's
"skip" button). Judgments are labels, not runs: ``prune`` never deletes them.
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_judgments"
down_revision = "0006_depths"


def upgrade() -> None:
    op.create_table(
        "judgment",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("set_identifier", sa.String, nullable=False),
        sa.Column("question_id", sa.String, nullable=True),
        sa.Column("question", sa.Text, nullable=True),
        sa.Column("document_id", sa.String, nullable=False),
        sa.Column("grade", sa.Integer, nullable=True),
        sa.Column("rater", sa.String, nullable=True),
        sa.Column("judged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("note", sa.Text, nullable=True),
        sa.Column("source", sa.Text, nullable=True),
        sa.Column("channel", sa.String(16), nullable=False),
        sa.Column("written_by", sa.String, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "grade IS NULL OR (grade >= 0 AND grade <= 3)", name="ck_judgment_grade"
        ),
        sa.CheckConstraint(
            "question_id IS NOT NULL OR question IS NOT NULL", name="ck_judgment_question"
        ),
    )
    op.create_index(
        "ix_judgment_set_question", "judgment", ["set_identifier", "question_id", "document_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_judgment_set_question", table_name="judgment")
    op.drop_table("judgment")
