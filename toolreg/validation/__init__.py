"""Validation: JSON Schema compiled once per tool, then run on every call.

- `validator`: `Validator`, the compiler of schemas into checks, and its jsonschema fallback;
- `keywords`: `Problem` and the checks every compiled node shares;
- `coercion`: JSON Schema's view of values (type, equality) and safe coercion of near misses;
- `nulls`: dropping the `null`s strict mode allows for optional nested properties;
- `drafts`: `normalize_schema`, older JSON Schema drafts' keywords rewritten as 2020-12;
- `metaschema`: `conforms`, the 2020-12 metaschema's check, fast;
- `untrusted`: the bounds of a schema from someone else, and its patterns run bounded.
"""

from .drafts import DraftError, Normalized, normalize_schema
from .keywords import Problem
from .validator import Validator, self_contained_node

__all__ = [
    "DraftError",
    "Normalized",
    "Problem",
    "Validator",
    "normalize_schema",
    "self_contained_node",
]
