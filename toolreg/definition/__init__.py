"""Definition: a function (or a class's fields) -> the records and JSON Schema of a tool.

- `signature`: a callable's parameters, resolved hints and `Annotated` metadata as records;
- `docstrings`: summary and parameter descriptions (Google, NumPy, reST, Epydoc);
- `fields`: the fields of TypedDicts, dataclasses, NamedTuples and pydantic models;
- `schema` (with `constraints`): types and `Param` metadata -> JSON Schema;
- `conversion`: the converters that turn validated JSON into the annotated types;
- `strict`: the strict form of a schema (OpenAI structured outputs);
- `names`: each provider's rule for tool names.

Everything here runs at registration; nothing here runs per call.
"""
