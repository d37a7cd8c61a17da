"""Validation: JSON Schema compiled once per tool, then run on every call.

- `validator`: `Validator`, the compiler of schemas into checks, and its jsonschema fallback;
- `keywords`: `Problem` and the checks every compiled node shares;
- `coercion`: JSON Schema's view of values (type, equality) and safe coercion of near misses;
- `nulls`: dropping the `null`s strict mode allows for optional nested properties.
"""

from .keywords import Problem
from .validator import Validator, self_contained_node

__all__ = ["Problem", "Validator", "self_contained_node"]
