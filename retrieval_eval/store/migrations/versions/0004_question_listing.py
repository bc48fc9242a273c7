"""The run page's index: a run's questions by outcome, then in the set's order.

The dashboard lists a run's questions a page at a time in SQL (``store/questions.py``): misses
first, each outcome in the set's order. With ``(run_id, top3_hit, top1_hit, position)`` leading,
each outcome's page is a range of this index read in order and stopped after the page;
``question_id`` and ``form`` ride along, so excluding the flipped questions and the form filter
need no table row.
"""

from alembic import op

revision = "0004_question_listing"
down_revision = "0003_replays"

COLUMNS = ["run_id", "top3_hit", "top1_hit", "position", "question_id", "form"]


def upgrade() -> None:
    op.create_index("ix_eval_result_question_listing", "eval_result_question", COLUMNS)


def downgrade() -> None:
    op.drop_index("ix_eval_result_question_listing", table_name="eval_result_question")
