"""Input safety: size limits, YAML parsed within them, lone surrogates, the redaction of secrets,
a bounded 'did you mean' for an unknown name; and the files a user keeps, written whole or not
at all."""
