"""replay_ranking without a key, unique index or foreign key, its ids a JSON array everywhere.

A save writes a replay's rankings with their replay in one transaction, and prune deletes them
before their replay; what the table checked per row (the foreign key's trigger query, the key and
the unique index) cost more than the COPY of the rows itself. The ids were ``text[]`` on
PostgreSQL, which psycopg builds row by row in Python; they are ``json`` now (SQLite's were JSON
already). One index finds a replay's rows: BRIN on PostgreSQL, a B-tree on SQLite. Rows are kept,
in their order; a downgrade gives them their serial ids again.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision = "0010_replay_rows"
down_revision = "0009_rejudged"

COLUMNS = (
    "replay_id, position, query_key, ids, error, rbo, residual, jaccard, top1_changed, overlap3"
)


def _figures() -> list[sa.Column]:
    return [
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("rbo", sa.Float, nullable=True),
        sa.Column("residual", sa.Float, nullable=True),
        sa.Column("jaccard", sa.Float, nullable=True),
        sa.Column("top1_changed", sa.Boolean, nullable=True),
        sa.Column("overlap3", sa.Integer, nullable=True),
    ]


def _copy(source: str, ids: str, rest: str) -> None:
    """The rows of ``source`` into replay_ranking, ``ids`` converted by the SQL given."""
    select = COLUMNS.replace(" ids,", f" {ids},")
    op.execute(f"INSERT INTO replay_ranking ({COLUMNS}) SELECT {select} FROM {source} {rest}")


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.rename_table("replay_ranking", "replay_ranking_0006")
    op.create_table(
        "replay_ranking",
        sa.Column("replay_id", sa.Integer, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("query_key", sa.String(64), nullable=False),
        sa.Column("ids", sa.JSON, nullable=False),
        *_figures(),
    )
    _copy("replay_ranking_0006", "to_json(ids)" if postgres else "ids", "ORDER BY id")
    op.drop_table("replay_ranking_0006")
    op.create_index(
        "ix_replay_ranking_replay", "replay_ranking", ["replay_id"], postgresql_using="brin"
    )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.drop_index("ix_replay_ranking_replay", table_name="replay_ranking")
    op.rename_table("replay_ranking", "replay_ranking_old")
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
        sa.Column("ids", sa.JSON().with_variant(ARRAY(sa.Text), "postgresql"), nullable=False),
        *_figures(),
        sa.UniqueConstraint("replay_id", "query_key", name="uq_replay_ranking_key"),
    )
    # the foreign key is back: a ranking whose replay is gone (none should be) is left behind
    _copy(
        "replay_ranking_old",
        "ARRAY(SELECT json_array_elements_text(ids))" if postgres else "ids",
        "WHERE replay_id IN (SELECT id FROM replay_run) ORDER BY replay_id, position",
    )
    op.drop_table("replay_ranking_old")
