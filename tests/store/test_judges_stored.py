"""Model judges in the store (0011_model_judges), on SQLite and PostgreSQL: machine judgments
with their audit, written once per identity and pair; the answers' cache; calibrations and the
gate store.judgments.read applies (latest calibration of an identity on a set)."""

from __future__ import annotations

from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.store import Store
from retrieval_eval.store.judges import Audit, CachedAnswer

PEOPLE = [Judgment(question_id="q1", document_id="d1", grade=2, rater="ada")]
MACHINE = [
    Judgment(question_id="q1", document_id="d2", grade=3, rater="judge:gpt"),
    Judgment(
        question="a new one?",
        document_id="d3",
        grade=None,
        rater="judge:gpt",
        note="unreadable answer",
    ),
]
AUDIT = Audit("id-1", "gpt-x", "fp-1", 200, 5, 0.11)


def _calibration(identity: str, passed: bool) -> dict[str, object]:
    return {
        "set_identifier": "s",
        "judge": "gpt",
        "judge_identity": identity,
        "model": "gpt-x",
        "prompt_fingerprint": "fp-1",
        "pairs": 10,
        "seed": 0,
        "kappa": 0.7 if passed else 0.3,
        "kappa_low": 0.5,
        "kappa_high": 0.8,
        "tau": None,
        "min_kappa": 0.6,
        "passed": passed,
        "figures": {"confusion": [[1, 0], [0, 1]]},
        "written_by": "test",
    }


def test_machine_rows_carry_their_audit_are_written_once_and_wait_for_a_passing_calibration(
    store: Store,
) -> None:
    store.judgments.add("s", PEOPLE, channel="import", written_by="alice")
    assert store.judges.add("s", [(r, AUDIT) for r in MACHINE], written_by="bob") == 2
    assert store.judges.add("s", [(r, AUDIT) for r in MACHINE], written_by="bob") == 0
    stored = store.judgments.stored("s")
    assert [(s.channel, s.judge_identity) for s in stored] == [
        ("import", None),
        ("judge", "id-1"),
        ("judge", "id-1"),
    ]
    # not calibrated: only people's rows count
    assert store.judgments.read("s") == PEOPLE
    assert store.judgments.read("s", gated=False, skips=True) == PEOPLE + MACHINE

    store.judges.add_calibration(_calibration("id-1", passed=True))
    assert store.judges.trusted_identities("s") == {"id-1"}
    assert store.judges.trusted_identities("other") == set()  # per set
    assert store.judgments.read("s") == PEOPLE + MACHINE[:1]

    # a person's grade of a pair wins: the judge's row of that pair is left out
    overruled = Judgment(question_id="q1", document_id="d1", grade=0, rater="judge:gpt")
    store.judges.add("s", [(overruled, AUDIT)], written_by="bob")
    assert store.judgments.read("s") == PEOPLE + MACHINE[:1]
    assert overruled in store.judgments.read("s", gated=False)

    store.judges.add_calibration(_calibration("id-1", passed=False))  # the latest decides
    assert store.judges.trusted_identities("s") == set()
    assert store.judgments.read("s") == PEOPLE
    found = store.judges.calibrations("s", "gpt")
    assert [c.passed for c in found] == [True, False]
    assert found[0].figures == {"confusion": [[1, 0], [0, 1]]}


def test_the_cache_keeps_the_first_answer_of_a_key(store: Store) -> None:
    first = CachedAnswer("k1", "id-1", 2, None, "gpt-x", 200, 5, 0.11)
    unreadable = CachedAnswer("k2", "id-1", None, "unreadable answer: 'maybe'")
    assert store.judges.save_answers([first, unreadable]) == 2
    assert store.judges.save_answers([CachedAnswer("k1", "id-1", 0, None)]) == 0
    assert store.judges.cached_answers(["k1", "k2", "k3"]) == {"k1": first, "k2": unreadable}
