"""Query samples and replays: query_sample(_item), replay_run, replay_ranking."""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

revision = "0003_replays"
down_revision = "0002_alert_markers"

JSONType = sa.JSON().with_variant(JSONB(), "postgresql")
IdsType = sa.JSON().with_variant(ARRAY(sa.Text), "postgresql")


def upgrade() -> None:
    op.create_table(
        "query_sample",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("privacy", sa.String(16), nullable=False),
        sa.Column("query_count", sa.Integer, nullable=False),
        sa.Column("log_queries", sa.Integer, nullable=False),
        sa.Column("log_traffic", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("name", "fingerprint", name="uq_query_sample_name_fingerprint"),
    )
    op.create_table(
        "query_sample_item",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "sample_id",
            sa.Integer,
            sa.ForeignKey(
                "query_sample.id", ondelete="CASCADE", name="fk_query_sample_item_sample"
            ),
            nullable=False,
        ),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("query_key", sa.String(64), nullable=False),
        sa.Column("query_text", sa.Text, nullable=False),
        sa.Column("query_count", sa.Integer, nullable=False),
        sa.Column("bucket", sa.String(8), nullable=False),
        sa.Column("query_id", sa.String(255), nullable=True),
        sa.UniqueConstraint("sample_id", "query_key", name="uq_query_sample_item_key"),
    )
    op.create_table(
        "replay_run",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_key", sa.String(255), nullable=False),
        sa.Column(
            "sample_id",
            sa.Integer,
            sa.ForeignKey("query_sample.id", ondelete="CASCADE", name="fk_replay_run_sample"),
            nullable=False,
        ),
        sa.Column("sample_name", sa.String, nullable=False),
        sa.Column("retriever", sa.String, nullable=False),
        sa.Column("k", sa.Integer, nullable=False),
        sa.Column("p", sa.Float, nullable=False),
        sa.Column("run_date", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("index_version", sa.String, nullable=True),
        sa.Column("package_version", sa.String(64), nullable=True),
        sa.Column("query_count", sa.Integer, nullable=False),
        sa.Column("error_count", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column(
            "compared_id",
            sa.Integer,
            sa.ForeignKey("replay_run.id", ondelete="SET NULL", name="fk_replay_run_compared"),
            nullable=True,
        ),
        sa.Column("against", sa.String, nullable=True),
        sa.Column("mean_rbo", sa.Float, nullable=True),
        sa.Column("top1_changed", sa.Float, nullable=True),
        sa.Column("weighted_mean_rbo", sa.Float, nullable=True),
        sa.Column("weighted_top1_changed", sa.Float, nullable=True),
        sa.Column("figures", JSONType, nullable=True),
        sa.UniqueConstraint("run_key", name="uq_replay_run_run_key"),
    )
    op.create_index(
        "ix_replay_run_key_date", "replay_run", ["sample_name", "retriever", "run_date"]
    )
    op.create_table(
        "replay_ranking",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "replay_id",
            sa.Integer,
            sa.ForeignKey("replay_run.id", ondelete="CASCADE", name="fk_replay_ranking_replay"),
            nullable=False,
        ),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("query_key", sa.String(64), nullable=False),
        sa.Column("ids", IdsType, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("rbo", sa.Float, nullable=True),
        sa.Column("residual", sa.Float, nullable=True),
        sa.Column("jaccard", sa.Float, nullable=True),
        sa.Column("top1_changed", sa.Boolean, nullable=True),
        sa.Column("overlap3", sa.Integer, nullable=True),
        sa.UniqueConstraint("replay_id", "query_key", name="uq_replay_ranking_key"),
    )


def downgrade() -> None:
    op.drop_table("replay_ranking")
    op.drop_index("ix_replay_run_key_date", table_name="replay_run")
    op.drop_table("replay_run")
    op.drop_table("query_sample_item")
    op.drop_table("query_sample")
