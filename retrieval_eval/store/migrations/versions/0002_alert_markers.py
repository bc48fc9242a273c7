"""Alert markers: one row per (run key, channel), so an alert is sent once per DAG run."""

import sqlalchemy as sa
from alembic import op

revision = "0002_alert_markers"
down_revision = "0001_initial"


def upgrade() -> None:
    op.create_table(
        "eval_alert",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_key", sa.String(255), nullable=False),
        sa.Column("channel", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("run_key", "channel", name="uq_eval_alert_run_channel"),
    )


def downgrade() -> None:
    op.drop_table("eval_alert")
