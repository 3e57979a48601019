"""Lone UTF-16 surrogates in parsed JSON: text that UTF-8, and so Parquet, cannot store.

JSON may spell a surrogate half as an escape (\\ud800), which Python's parser accepts;
both JSON readers reject such a record with the same reason instead of failing at write time.
"""

from __future__ import annotations

import json
import re

__all__ = ["SURROGATE_ESCAPE", "holds_lone_surrogate", "surrogate_reason"]

SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A surrogate escape in raw JSON text: text without one needs no further check."""


def holds_lone_surrogate(value: object) -> bool:
    """True when a parsed value holds text that UTF-8 cannot store (a lone surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def surrogate_reason(where: str) -> str:
    """The rejection reason for `where` ("line 3", "element 2") holding a lone surrogate."""
    return (
        f"{where} holds a lone UTF-16 surrogate escape (\\ud800 to \\udfff), which is not "
        "valid Unicode text; fix the exporter to write whole characters"
    )
