"""A small chunked corpus and a deterministic embedding for the vector-store adapter tests.

The embedding is a hashed bag of words (MD5 of each lowercased word picks one of ``DIM``
dimensions), so rankings are the same on every machine and no model is downloaded. The config
names it as ``embedding: retrievers.vector_corpus:embed``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

DIM = 64
EMBEDDING = "retrievers.vector_corpus:embed"

# (chunk id, document id, text): guide.md comes in two chunks, the others whole
CHUNKS: list[tuple[str, str, str]] = [
    ("guide.md#0", "guide.md", "install the package with pip and create a virtual environment"),
    ("guide.md#1", "guide.md", "configure the retriever in the yaml config file"),
    ("billing.md#0", "billing.md", "invoices are sent monthly and refunds take five days"),
    ("security.md#0", "security.md", "rotate api keys every ninety days and enable two factor"),
    ("airflow.md#0", "airflow.md", "the nightly dag runs each evaluation as mapped airflow tasks"),
    ("lint.md#0", "lint.md", "lint finds near duplicate questions and dead labels"),
]
DOCUMENTS = list(dict.fromkeys(doc for _, doc, _ in CHUNKS))

# question -> the document it is about (every question shares words with only that one)
QUESTIONS = {
    "how do I install the package with pip": "guide.md",
    "where do refunds and invoices come from": "billing.md",
    "how often should api keys rotate": "security.md",
    "what does the nightly dag run": "airflow.md",
    "which questions does lint find": "lint.md",
}


def embed(texts: Sequence[str], dim: int = DIM) -> np.ndarray:
    """One L2-normalised hashed bag-of-words vector per text."""
    matrix = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            matrix[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def embed_wide(texts: Sequence[str]) -> np.ndarray:
    """The same embedding in twice as many dimensions: a model the collections were not built with."""
    return embed(texts, dim=2 * DIM)


def expected_top(question: str) -> str:
    return QUESTIONS[question]
