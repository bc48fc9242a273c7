"""The index build and the retrieval-eval version of each labelled run, in eval_result.

``index_version`` and ``package_version`` (replay_run has both since 0003); rows stored before
stay NULL, which reads back as "not recorded".
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_run_versions"
down_revision = "0004_question_listing"


def upgrade() -> None:
    # nullable, no default: ALTER TABLE ADD COLUMN on SQLite and PostgreSQL alike, no rewrite
    op.add_column("eval_result", sa.Column("index_version", sa.String, nullable=True))
    op.add_column("eval_result", sa.Column("package_version", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("eval_result") as batch:  # SQLite drops columns by copying
        batch.drop_column("package_version")
        batch.drop_column("index_version")
