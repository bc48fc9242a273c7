"""Published examples of the secrets and personal data :mod:`retrieval_eval.safety.redaction`
masks, copied verbatim from the secret scanners' own tests (imported as
``safety.scanner_examples``). Each entry: (family, text, the part that must not survive).

Sources and licences:

- gitleaks (https://github.com/gitleaks/gitleaks, MIT licence, Copyright (c) 2019 Zachary Rice),
  commit b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b: the true-positive strings (``tps``) of
  cmd/generate/config/rules/{aws,jwt,stripe,slack,generic}.go;
- detect-secrets (https://github.com/Yelp/detect-secrets, Apache License 2.0, Copyright Yelp,
  Inc.), commit 5e141933554a0b74e7341841f318be21e895339c: the flagged lines of
  tests/plugins/{aws_key,jwt,stripe_key,slack,github_token,ip_public}_test.py;
- IPv6 text forms: RFC 4291 section 2.2 and RFC 4007 section 11 (zone ids), IETF;
- IBANs: the SWIFT IBAN Registry's example IBANs (also in ISO 13616's examples).

Neither scanner covers IPv6 or IBANs; detect-secrets leaves private IPv4 ranges alone, this
policy masks them (a user's address is personal data whichever range it is in).
"""

from __future__ import annotations

GITLEAKS = "gitleaks b58d3f1 (MIT)"
DETECT_SECRETS = "detect-secrets 5e14193 (Apache-2.0)"

JWT_1 = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0"
    "IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
JWT_ACCENTS = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IsWww6HFkcOtIMOWxZHD"
    "qcOoIiwiaWF0IjoxNTE2MjM5MDIyfQ.k5HibI_uLn_RTuPcaCNkaVaQH2y5q6GvJg8GPpGMRwQ"
)
JWT_NO_SIGNATURE = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0"
    "IjoxNTE2MjM5MDIyfQ"
)
JWT_CRLF = (
    "eyJ0eXAiOiJKV1QiLA0KImFsZyI6IkhTMjU2In0.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0"
    "IjoxNTE2MjM5MDIyfQ"
)
JWT_BEARER = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VybmFtZTpib2IifQ.HcfCW67Uda-0gz54ZWTqmtgJnZeN"
    "em0Q757eTa9EZuw"
)
JWT_CLI = (
    "eyJhbGciOiJIUzI1NiJ9.eyJJc3N1ZXIiOiJJc3N1ZXIiLCJVc2VybmFtZSI6IkJhZFNlY3JldHMiLCJleHAiOjE1OTMxMz"
    "M0ODMsImlhdCI6MTQ2NjkwMzA4M30.ovqRikAo_0kKJ0GVrAwQlezymxrLGjcEiW_s3UJMMCo"
)
JWT_NONE = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0LXVzZXIifQ."
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
STRIPE_TEST = (
    "sk_test_51OuEMLAlTWGaDypq4P5cuDHbuKeG4tAGPYHJpEXQ7zE8mKK3jkhTFPvCxnSSK5zB5EQZrJsYdsatNmAHGgb0vSK"
    "D00GTMSWRHs"
)
STRIPE_PROD = (
    "rk_prod_51OuEMLAlTWGaDypquDn9aZigaJOsa9NR1w1BxZXs9JlYsVVkv5XDu6aLmAxwt5Tgun5WcSwQMKzQyqV16c9iD4s"
    "x00BRijuoon"
)
XAPP = "xapp-1-A052FGTS2DL-5171572773297-610b6a11f4b7eb819e87b767d80e6575a3634791acb9a9ead051da879eb5b55e"
XOXE_URL = "xoxe-4726837507825-4848681849303-4856614048758-e0b1f3d4cb371f92260edb0d9444d206"
USER_AUTH = "am9obmRvZTpkMDY5NGIxYi1jMTcxLTQ4ODYt+TMyYS0wMmUwOWQ1/mIwNjc="
CREDENTIALS = "0afae57f3ccfd9d7f5767067bc48b30f719e271ba470488056e37ab35d4b6506"
CLIENT_SECRET = "6da89121079f83b2eb6acccf8219ea982c3d79bccc3e9c6a85856480661f8fde"

# (family, text, what must not survive, source)
SECRETS: list[tuple[str, str, str, str]] = [
    ("jwt", JWT_1, JWT_1, DETECT_SECRETS),
    ("jwt", JWT_ACCENTS, JWT_ACCENTS, DETECT_SECRETS),
    ("jwt", JWT_NO_SIGNATURE, JWT_NO_SIGNATURE, DETECT_SECRETS),
    ("jwt", JWT_CRLF, JWT_CRLF, DETECT_SECRETS),
    ("jwt", f'"Authorization": "Bearer {JWT_BEARER}"', JWT_BEARER, GITLEAKS),
    ("jwt", f"python examples/cli.py {JWT_CLI}", JWT_CLI, GITLEAKS),
    ("jwt", f'String tokenWithNoneAlg = "{JWT_NONE}";', JWT_NONE[:-1], GITLEAKS),
    ("aws-access-key-id", "AKIAZZZZZZZZZZZZZZZZ", "AKIAZZZZZZZZZZZZZZZZ", DETECT_SECRETS),
    ("aws-access-key-id", "A3T0ZZZZZZZZZZZZZZZZ", "A3T0ZZZZZZZZZZZZZZZZ", DETECT_SECRETS),
    ("aws-access-key-id", "ABIAZZZZZZZZZZZZZZZZ", "ABIAZZZZZZZZZZZZZZZZ", DETECT_SECRETS),
    ("aws-access-key-id", "ACCAZZZZZZZZZZZZZZZZ", "ACCAZZZZZZZZZZZZZZZZ", DETECT_SECRETS),
    ("aws-access-key-id", "ASIAZZZZZZZZZZZZZZZZ", "ASIAZZZZZZZZZZZZZZZZ", DETECT_SECRETS),
    ("aws-access-key-id", "AKIALALEMEL33243OLIB", "AKIALALEMEL33243OLIB", GITLEAKS),
    ("aws-secret", f'aws_access_key = "{AWS_SECRET}"', AWS_SECRET, DETECT_SECRETS),
    ("stripe", "sk_live_ReTllpYQYfIZu2Jnf2lAPFjD", "ReTllpYQYfIZu2Jnf2lAPFjD", DETECT_SECRETS),
    ("stripe", "rk_live_5TcWfjKmJgpql9hjpRnwRXbT", "5TcWfjKmJgpql9hjpRnwRXbT", DETECT_SECRETS),
    ("stripe", STRIPE_TEST, STRIPE_TEST[8:], GITLEAKS),
    ("stripe", STRIPE_PROD, STRIPE_PROD[8:], GITLEAKS),
    (
        "github",
        "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",
        "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx",
        DETECT_SECRETS,
    ),
    ("slack", "xoxp-523423-234243-234233-e039d02840a0b9379c", "e039d02840a0b9379c", DETECT_SECRETS),
    ("slack", "xoxo-523423-234243-234233-e039d02840a0b9379c", "e039d02840a0b9379c", DETECT_SECRETS),
    ("slack", "xoxs-523423-234243-234233-e039d02840a0b9379c", "e039d02840a0b9379c", DETECT_SECRETS),
    (
        "slack",
        "xoxa-511111111-31111111111-3111111111111-e039d02840a0b9379c",
        "e039d02840a0b9379c",
        DETECT_SECRETS,
    ),
    (
        "slack",
        "xoxa-2-511111111-31111111111-3111111111111-e039d02840a0b9379c",
        "e039d02840a0b9379c",
        DETECT_SECRETS,
    ),
    ("slack", "xoxr-523423-234243-234233-e039d02840a0b9379c", "e039d02840a0b9379c", DETECT_SECRETS),
    ("slack", "xoxb-34532454-e039d02840a0b9379c", "e039d02840a0b9379c", DETECT_SECRETS),
    (
        "slack",
        '"bot_token1": "xoxb-781236542736-2364535789652-GkwFDQoHqzXDVsC6GzqYUypD"',
        "GkwFDQoHqzXDVsC6GzqYUypD",
        GITLEAKS,
    ),
    (
        "slack",
        '"bot_token3": "xoxb-4614724432022-5152386766518-O5WzjWGLG0wcCm2WPrjEmnys"',
        "O5WzjWGLG0wcCm2WPrjEmnys",
        GITLEAKS,
    ),
    (
        "slack",
        '"bot_token2": "xoxb-282029623751-BVtmnS3BQitmjZvjpQL7PSGP"',
        "BVtmnS3BQitmjZvjpQL7PSGP",
        GITLEAKS,
    ),
    (
        "slack",
        '"user_token2": "xoxp-283316862324-298911817009-298923149681-'
        '44f585044dace54f5701618e97cd1c0b"',
        "44f585044dace54f5701618e97cd1c0b",
        GITLEAKS,
    ),
    ("slack", f'"token1": "{XAPP}"', XAPP[20:], GITLEAKS),
    (
        "slack",
        '"url_private": "https:\\/\\/files.slack.com\\/files-pri\\/T04MCQMEXQ9-F04MAA1PKE3'
        f'\\/image.png?t={XOXE_URL}"',
        XOXE_URL,
        GITLEAKS,
    ),
    (
        "slack-webhook",
        "https://hooks.slack.com/services/Txxxxxxxx/Bxxxxxxxx/xxxxxxxxxxxxxxxxxxxxxxxx",
        "xxxxxxxxxxxxxxxxxxxxxxxx",
        DETECT_SECRETS,
    ),
    (
        "slack-webhook",
        "http://hooks.slack.com/services/T024TTTTT/BBB72BBL/AZAAA9u0pA4ad666eMgbi555",
        "AZAAA9u0pA4ad666eMgbi555",
        GITLEAKS,
    ),
    (
        "slack-webhook",
        "https://hooks.slack.com/services/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",
        "bJtrpFi1fO1JMCcwLx8uZyAg",
        GITLEAKS,
    ),
    ("generic", f'"user_auth": "{USER_AUTH}"', USER_AUTH, GITLEAKS),
    ("generic", f'"credentials" : "{CREDENTIALS}"', CREDENTIALS, GITLEAKS),
    ("generic", f'"client_secret" : "{CLIENT_SECRET}",', CLIENT_SECRET, GITLEAKS),
    (
        "generic",
        ' utils.GetEnvOrDefault("api_token", "dafa7817-e246-48f3-91a7-e87653d587b8")',
        "dafa7817-e246-48f3-91a7-e87653d587b8",
        GITLEAKS,
    ),
    ("generic", "'access_token': 'eyJ0eXAioiJKV1slS3oASx=='", "eyJ0eXAioiJKV1slS3oASx", GITLEAKS),
]

# (family, text, what must not survive, source): masked in captured queries (redact_personal)
PERSONAL: list[tuple[str, str, str, str]] = [
    ("ipv4", "133.133.133.133", "133.133", DETECT_SECRETS),
    (
        "ipv4",
        "This line has an IP address 133.133.133.133@something else",
        "133.133",
        DETECT_SECRETS,
    ),
    ("ipv4", "133.133.133.133:8080", "133.133", DETECT_SECRETS),
    (
        "ipv4",
        "This line has an IP address: 133.133.133.133:8080@something else",
        "133.133",
        DETECT_SECRETS,
    ),
    ("ipv4", "1.1.1.1", "1.1.1.1", DETECT_SECRETS),
    ("ipv4", "10.0.0.1", "10.0.0.1", DETECT_SECRETS),  # not flagged there: private range
    ("ipv4", "192.168.0.1", "192.168.0.1", DETECT_SECRETS),  # likewise
    ("ipv6", "2001:DB8:0:0:8:800:200C:417A", "200C:417A", "RFC 4291 2.2"),
    ("ipv6", "2001:DB8::8:800:200C:417A", "200C:417A", "RFC 4291 2.2"),
    ("ipv6", "FF01::101", "FF01", "RFC 4291 2.2"),
    ("ipv6", "::13.1.68.3", "13.1.68.3", "RFC 4291 2.2"),
    ("ipv6", "::FFFF:129.144.52.38", "129.144", "RFC 4291 2.2"),
    ("ipv6", "fe80::1%eth0 is my address", "fe80", "RFC 4007 11"),
    ("ipv6", "why is [2001:db8::1]:8080 slow", "2001:db8", "RFC 4291 2.2"),
    ("iban", "DE89 3704 0044 0532 0130 00", "DE89", "SWIFT IBAN Registry"),
    ("iban", "refund to GB29 NWBK 6016 1331 9268 19 please", "GB29", "SWIFT IBAN Registry"),
    ("iban", "FR1420041010050500013M02606", "FR14", "SWIFT IBAN Registry"),
    ("iban", "iban NL91ABNA0417164300 SEPA", "NL91", "SWIFT IBAN Registry"),
]

# left alone: the scanners' own negatives that are ordinary text, and the project's
ORDINARY: list[tuple[str, str]] = [
    ("pk_live_j5krY8XTgIcDaHDb3YrsAfCl", DETECT_SECRETS),  # a publishable key is public
    ("sk_live_", DETECT_SECRETS),
    ("akiazzzzzzzzzzzzzzzz", DETECT_SECRETS),
    ("AKIAZZZ", DETECT_SECRETS),
    ("foo_wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx", DETECT_SECRETS),
    ("xoxb-xxx", GITLEAKS),
    ("TODAYINASIAASACKOFRICEFELLOVER", GITLEAKS),
    ("eyJAAAA.eyJBBB", DETECT_SECRETS),
    ("127.0.0.1", DETECT_SECRETS),
    ("256.256.256.256", DETECT_SECRETS),
    ("1.2.3", DETECT_SECRETS),
    ("1.2.3.4.5.6", DETECT_SECRETS),
    ("1.2.3.04", DETECT_SECRETS),
    ("github.com", DETECT_SECRETS),
    ("expected key=value pairs, got 'sort_key=title'", "project"),
    ("retriever: handbook_bm25_top1", "project"),
    ("run key df352120290448a4a9f6de10479c7388", "project"),
    ('"run_key": "df352120290448a4a9f6de10479c7388"', "project"),
    ("aws_access_key_id: ASIAexampleNotAKey0001 named", "project"),
    ("the meeting is at 10:30:00 on ::1", "project"),
    ("std::vector<int> in C++", "project"),
    ("how to reset my password", "project"),
    ("api docs for the token endpoint", "project"),
    ("DE89 is not an IBAN", "project"),
]
