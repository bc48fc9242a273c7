"""Every JSON document the project emits, written by orjson.

- Indented by two spaces (``OPT_INDENT_2``) unless ``indent=False`` (compact, no spaces).
- Non-ASCII text is kept as UTF-8, as ``json.dumps(ensure_ascii=False)`` keeps it.
- NaN and the infinities are not JSON: they are written ``null``.
- Keys that are not strings (ints, enums) are written as strings, as :mod:`json` writes them.
- A string that is no Unicode text (a lone surrogate) is refused with a :class:`TypeError`
  (``orjson.JSONEncodeError``): it could not be written as UTF-8.
"""

from __future__ import annotations

from typing import Any

import orjson

_COMPACT = orjson.OPT_NON_STR_KEYS
_INDENTED = orjson.OPT_NON_STR_KEYS | orjson.OPT_INDENT_2


def dumps(document: Any, *, indent: bool = True) -> str:
    """``document`` as JSON text (no trailing newline)."""
    return orjson.dumps(document, option=_INDENTED if indent else _COMPACT).decode("utf-8")
