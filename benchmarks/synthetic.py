"""A synthetic golden set with 12-id rankings, the same input for every scorer.

Deterministic (seeded). Each question has 1-3 targets among 20,000 documents; its ranking of 12
distinct ids holds some of them at random ranks about half the time, so every metric has
something to count. Forms alternate; one question in ten has a hard class.
"""

from __future__ import annotations

import random

from retrieval_eval.golden.models import GoldenQuestion

DOCUMENTS = 20_000
RANKING = 12


def synthetic(count: int, seed: int = 7) -> tuple[list[GoldenQuestion], list[list[str]]]:
    rng = random.Random(seed)
    questions: list[GoldenQuestion] = []
    rankings: list[list[str]] = []
    for i in range(count):
        targets = [f"d{n}" for n in rng.sample(range(DOCUMENTS), rng.randint(1, 3))]
        ranking = [f"d{n}" for n in rng.sample(range(DOCUMENTS), RANKING)]
        for target in targets:
            if rng.random() < 0.5:
                ranking[rng.randrange(RANKING)] = target
        ranking = list(dict.fromkeys(ranking))  # distinct: pytrec_eval and ranx hold a dict
        questions.append(
            GoldenQuestion(
                id=f"q{i}",
                question=f"synthetic question {i}",
                form="gap" if i % 2 else "match",
                hard_class=f"class{i % 7}" if i % 10 == 0 else None,
                expected_document_ids=targets,
            )
        )
        rankings.append(ranking)
    return questions, rankings
