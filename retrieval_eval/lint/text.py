"""Text the lint checks compare: content words for form honesty, shingles for near duplicates.

- **Content words** (form honesty): lower-cased word tokens (runs of letters and digits; ``_``
  and punctuation split), the English stop words below removed, one-character tokens removed,
  then stemmed with PyStemmer's English Snowball stemmer (the lexical adapter's stemmer, a
  declared dependency), so "refunds"/"refund" and "running"/"run" count as the same word.
- **Normalised text** (duplicate questions): the same tokens, lower-cased, joined by one space:
  case, punctuation and spacing never make two questions different.
- **Character 3-grams** of the normalised text (questions: short texts, where a changed word
  should lower the similarity a little, not by a whole word shingle out of five).
- **Word 3-shingles** of the lower-cased whitespace-separated words (documents: long texts, where
  word order matters and character n-grams would make any two English pages look alike; split
  at whitespace only, since a punctuation mark changes a word in both copies of a copied page
  alike). A text of fewer than three words is one shingle (:mod:`.minhash`, :mod:`.wordhash`).

The stop-word list is small on purpose: function words and question words only, so a domain
word ("plan", "account") always counts.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_TOKEN_RE = re.compile(r"[^\W_]+")

STOP_WORDS = frozenset(
    " ".join(
        (
            "a about above after again against all am an and any are as at be because been before",
            "being below between both but by can could did do does doing down during each few for",
            "from further had has have having he her here hers herself him himself his how i if",
            "in into is it its itself just me more most my myself no nor not now of off on once",
            "only or other our ours ourselves out over own same she should so some such than that",
            "the their theirs them themselves then there these they this those through to too",
            "under until up very was we were what when where which while who whom why will with",
            "would you your yours yourself yourselves get got gets let lets may might must shall",
            "us also",
        )
    ).split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return _TOKEN_RE.findall(text.lower())


def normalised(text: str) -> str:
    return " ".join(tokens(text))


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: loaded only when a check needs it

    return Stemmer.Stemmer("english")


def content_words(text: str) -> set[str]:
    """The stemmed content words of ``text`` (see the module docstring)."""
    kept = [t for t in set(tokens(text)) if len(t) > 1 and t not in STOP_WORDS]
    return set(_stemmer().stemWords(kept)) if kept else set()
