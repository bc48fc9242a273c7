"""Re-judged runs and set versions, in eval_result.

``rejudged_from``: the run whose stored rankings a re-judged run (``sets rejudge``) scored
against newer labels (NULL on every ordinary run; SET NULL if that run is pruned: the re-judged
run keeps its own question rows). ``set_version``: the set file's version (``sets promote``) the
run's labels come from; NULL for an unversioned set and for runs stored before. The other
columns keep their meaning: a re-judged run's ``run_date`` is its original's (when the rankings
were taken), ``created_at`` when it was re-judged, ``labels_fingerprint`` the labels it was
judged against.
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_rejudged"
down_revision = "0008_grades"


def upgrade() -> None:
    with op.batch_alter_table("eval_result") as batch:  # SQLite adds a foreign key by copying
        batch.add_column(sa.Column("rejudged_from", sa.Integer, nullable=True))
        batch.add_column(sa.Column("set_version", sa.Integer, nullable=True))
        batch.create_foreign_key(
            "fk_eval_result_rejudged_from",
            "eval_result",
            ["rejudged_from"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("eval_result") as batch:
        batch.drop_constraint("fk_eval_result_rejudged_from", type_="foreignkey")
        batch.drop_column("set_version")
        batch.drop_column("rejudged_from")
