"""Input safety: size limits, YAML parsed within them, lone surrogates, and the redaction of secrets."""
