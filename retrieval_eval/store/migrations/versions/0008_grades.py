"""Graded labels: each stored question keeps the grades it was judged with.

``eval_result_question.grades`` holds a graded question's judged grades (``{doc-id: 0..3}``,
nDCG's gains); NULL for an ungraded question and for every row stored before, which reads back
as "every target grade 1", as those runs were scored.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0008_grades"
down_revision = "0007_judgments"

JSONType = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    # nullable, no default: ALTER TABLE ADD COLUMN on SQLite and PostgreSQL alike, no rewrite
    op.add_column("eval_result_question", sa.Column("grades", JSONType, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("eval_result_question") as batch:  # SQLite drops by copying
        batch.drop_column("grades")
