"""The redaction policy against the secret scanners' published examples (gitleaks' and
detect-secrets' own tests, see ``scanner_examples``): each secret is masked by :func:`redact`
(every error, log, report and alert), each secret and piece of personal data by
:func:`redact_personal` (captured queries), and their ordinary negatives stay as they were."""

from __future__ import annotations

import re

import pytest
from safety.scanner_examples import ORDINARY, PERSONAL, SECRETS

from retrieval_eval.safety.redaction import TOKEN_SHAPES, redact, redact_personal


def _id(family: str, text: str) -> str:
    return f"{family}:{text[:24]}"


@pytest.mark.parametrize(
    ("text", "secret"), [(t, s) for _, t, s, _ in SECRETS], ids=[_id(f, t) for f, t, *_ in SECRETS]
)
def test_every_published_secret_is_masked_in_errors_and_queries(text: str, secret: str) -> None:
    for masked in (redact(text), redact_personal(text)):
        assert secret not in masked and "***" in masked, masked
        assert redact(masked) == masked  # idempotent


@pytest.mark.parametrize(
    ("text", "part"), [(t, p) for _, t, p, _ in PERSONAL], ids=[_id(f, t) for f, t, *_ in PERSONAL]
)
def test_ip_addresses_and_ibans_in_captured_queries_are_masked_whole(text: str, part: str) -> None:
    masked = redact_personal(text)
    assert part not in masked, masked
    assert "<ip>" in masked or "<iban>" in masked
    assert not re.search(r"<(?:number|phone)>", masked)  # whole: no prefix or digits left over


@pytest.mark.parametrize("text", [t for t, _ in ORDINARY])
def test_the_scanners_negatives_and_ordinary_texts_stay(text: str) -> None:
    assert redact(text) == text
    if sum(c.isdigit() for c in text) < 8:  # digit runs and phone numbers are masked apart
        assert redact_personal(text) == text


def test_an_iban_with_a_wrong_checksum_is_no_iban() -> None:
    assert "<iban>" not in redact_personal("DE00 3704 0044 0532 0130 00")
    assert redact_personal("DE89 3704 0044 0532 0130 00 IBAN") == "<iban> IBAN"


def test_every_token_family_has_a_published_example() -> None:
    """A shape added to the policy comes with an example from a scanner's tests."""
    tested = {family for family, *_ in SECRETS}
    untested = set(TOKEN_SHAPES) - tested - {"gitlab", "openai", "google-api-key", "npm", "pypi",
                                              "sendgrid", "private-key"}  # fmt: skip
    assert not untested, untested


def test_a_plain_sample_keeps_personal_data_but_never_a_secret() -> None:
    from retrieval_eval.replay.samples import stored_text

    query = "mail ada@example.org the key AKIALALEMEL33243OLIB from 133.133.133.133"
    assert stored_text(query, "plain") == "mail ada@example.org the key *** from 133.133.133.133"
    assert stored_text(query, "redacted", casefold=True) == "mail <email> the key *** from <ip>"
