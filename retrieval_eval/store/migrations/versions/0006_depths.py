"""Hits at every gated depth: one eval_result_depth row per run, scope and depth.

The scope is the whole run (``dimension`` ``overall``, ``value`` empty) or one form or hard
class slice. Runs stored before hold none: they gated top-1 and top-3, whose hits the
``eval_result`` and ``eval_result_slice`` columns have, and are read back from those.
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_depths"
down_revision = "0005_run_versions"


def upgrade() -> None:
    op.create_table(
        "eval_result_depth",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "run_id",
            sa.Integer,
            sa.ForeignKey("eval_result.id", ondelete="CASCADE", name="fk_eval_result_depth_run"),
            nullable=False,
        ),
        sa.Column("dimension", sa.String(16), nullable=False),
        sa.Column("value", sa.String, nullable=False, server_default=""),
        sa.Column("depth", sa.Integer, nullable=False),
        sa.Column("hits", sa.Integer, nullable=False),
        sa.Column("question_count", sa.Integer, nullable=False),
        sa.UniqueConstraint(
            "run_id", "dimension", "value", "depth", name="uq_eval_result_depth_run_scope"
        ),
    )


def downgrade() -> None:
    op.drop_table("eval_result_depth")
