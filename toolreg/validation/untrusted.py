"""A schema from someone else (a mounted MCP server's `inputSchema`): the bounds it must
keep before toolreg compiles it.

A schema toolreg did not write may be built to cost: 20,000 properties take seconds to
check and compile, a 10,000-deep nesting exhausts Python's stack. `check_size` refuses a
schema past any of these limits, in time proportional to the limits, not to the schema:
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = [
    "MAX_SCHEMA_CHARS",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_VALUES",
    "UntrustedSchemaError",
    "check_size",
]

MAX_SCHEMA_VALUES: Final = 5_000
"""JSON values in the schema (objects, arrays, strings, numbers...): a rich real schema has a
few hundred; 5,000 compile in well under a second."""
MAX_SCHEMA_DEPTH: Final = 32
"""Objects and arrays inside one another (a property of an object in an array is 4 deep)."""
MAX_SCHEMA_CHARS: Final = 200_000
"""Characters of the schema as compact JSON (descriptions included)."""


class UntrustedSchemaError(ValueError):
    """An untrusted schema toolreg refuses to compile; the message says which bound."""


def check_size(schema: Any) -> None:
    """Raise `UntrustedSchemaError` if `schema` has more than `MAX_SCHEMA_VALUES` values,
    nests deeper than `MAX_SCHEMA_DEPTH` or is longer than `MAX_SCHEMA_CHARS` as JSON."""
    values, chars = 0, 0
    todo: list[tuple[Any, int]] = [(schema, 1)]
    while todo:
        value, depth = todo.pop()
        values += 1
        if values > MAX_SCHEMA_VALUES:
            raise UntrustedSchemaError(
                f"the schema has more than {MAX_SCHEMA_VALUES:,} values (toolreg's limit for "
                "an untrusted schema)"
            )
        if isinstance(value, (dict, list)):
            if depth > MAX_SCHEMA_DEPTH:
                raise UntrustedSchemaError(
                    f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels (toolreg's limit "
                    "for an untrusted schema)"
                )
            if isinstance(value, dict):
                chars += sum(len(k) for k in value if isinstance(k, str))
                todo.extend((v, depth + 1) for v in value.values())
            else:
                todo.extend((v, depth + 1) for v in value)
        elif isinstance(value, str):
            chars += len(value)
        if chars > MAX_SCHEMA_CHARS:  # its text alone: the JSON is longer still
            raise _too_long(f"more than {MAX_SCHEMA_CHARS:,}")
    try:  # a few thousand values at most by now: the exact length is cheap
        chars = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
    except (TypeError, ValueError) as exc:
        raise UntrustedSchemaError(f"the schema is not JSON: {exc}") from None
    if chars > MAX_SCHEMA_CHARS:
        raise _too_long(f"{chars:,}")


def _too_long(length: str) -> UntrustedSchemaError:
    return UntrustedSchemaError(
        f"the schema is {length} characters long as JSON (toolreg's limit for an untrusted "
        f"schema: {MAX_SCHEMA_CHARS:,})"
    )
