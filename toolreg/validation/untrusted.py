"""A schema from someone else (a mounted MCP server's `inputSchema`): the bounds it must
keep before toolreg compiles it.

A schema toolreg did not write may be built to cost: 20,000 properties take seconds to
check and compile, a 10,000-deep nesting exhausts Python's stack, and a `pattern` such as
`^(a+)+$` makes Python's backtracking `re` spend minutes on 30 characters. So:

- `check_size` refuses a schema past `MAX_SCHEMA_VALUES`, `MAX_SCHEMA_DEPTH` or
  `MAX_SCHEMA_CHARS`, in time proportional to the limits, not to the schema;
- `BoundedPattern` runs its `pattern`s and `patternProperties`: on RE2 (linear time) when
  `google-re2` is installed (`pip install 'toolreg[re2]'`), else on `re` after refusing what
  can backtrack badly (backreferences, lookaround, a quantifier over a group that varies in
  length or has alternatives, two variable quantifiers that can match the same character
  with nothing between them that stops one, more than 256 combinations of alternatives);
- either way a string longer than `MAX_PATTERN_INPUT` is not matched (the value is
  invalid), and one call checks at most `MAX_PATTERN_TEXT` characters against such
  patterns (`pattern_budget`), so that their cost counts against the call's limits.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Final

__all__ = [
    "MAX_PATTERN_INPUT",
    "MAX_PATTERN_LENGTH",
    "MAX_PATTERN_TEXT",
    "MAX_SCHEMA_CHARS",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_VALUES",
    "BoundedPattern",
    "PatternRefused",
    "UntrustedSchemaError",
    "check_patterns_for_re",
    "check_size",
    "pattern_budget",
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
    values, chars, plain = 0, 0, True
    todo: list[tuple[Any, int]] = [(schema, 1)]
    while todo:
        value, depth = todo.pop()
        values += 1
        if values > MAX_SCHEMA_VALUES:
            raise UntrustedSchemaError(
                f"the schema has more than {MAX_SCHEMA_VALUES:,} values (toolreg's limit for "
                "an untrusted schema)"
            )
        kind = type(value)
        if kind is dict or kind is list or isinstance(value, (dict, list)):
            if depth > MAX_SCHEMA_DEPTH:
                raise UntrustedSchemaError(
                    f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels (toolreg's limit "
                    "for an untrusted schema)"
                )
            if isinstance(value, dict):
                for key in value:
                    if type(key) is str:
                        chars += len(key)
                    else:
                        plain = False
                todo.extend((v, depth + 1) for v in value.values())
            else:
                todo.extend((v, depth + 1) for v in value)
        elif kind is str:
            chars += len(value)
        elif not (
            value is None or kind is bool or kind is float or (kind is int and -_BIG < value < _BIG)
        ):
            plain = False  # a long number, or what JSON may not take: dumps decides
        if chars > MAX_SCHEMA_CHARS:  # its text alone: the JSON is longer still
            raise _too_long(f"more than {MAX_SCHEMA_CHARS:,}")
    if plain and _ESCAPED * chars + _PER_VALUE * values <= MAX_SCHEMA_CHARS:
        return  # its JSON cannot be longer than that: no need to write it
    try:  # a few thousand values at most by now: the exact length is cheap
        chars = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
    except (TypeError, ValueError) as exc:
        raise UntrustedSchemaError(f"the schema is not JSON: {exc}") from None
    if chars > MAX_SCHEMA_CHARS:
        raise _too_long(f"{chars:,}")


# Bounds of a plain schema's JSON length: a character of a string or a key is at most 6
# as JSON (a control character, escaped); a value adds at most 32 more (quotes, `":"`, a
# comma, brackets, or a number: a float is at most 24 characters, an int below `_BIG` 16).
_ESCAPED, _PER_VALUE, _BIG = 6, 32, 10**15


def _too_long(length: str) -> UntrustedSchemaError:
    return UntrustedSchemaError(
        f"the schema is {length} characters long as JSON (toolreg's limit for an untrusted "
        f"schema: {MAX_SCHEMA_CHARS:,})"
    )


MAX_PATTERN_LENGTH: Final = 1_000
"""Characters of one `pattern` (or `patternProperties` key)."""
MAX_PATTERN_INPUT: Final = 1_000
"""Characters of one string matched against an untrusted pattern; a longer one is invalid."""
MAX_PATTERN_TEXT: Final = 20_000
"""Characters matched against untrusted patterns in one call, all strings together."""
_MAX_ALTERNATIVES = 256  # combinations of alternatives (`a|b`) in a pattern, on `re`

_BUDGET: ContextVar[list[int] | None] = ContextVar("toolreg_pattern_budget", default=None)


class PatternRefused(Exception):
    """A string an untrusted pattern will not be matched against; the message says why
    (without the pattern: the caller names it)."""


@contextlib.contextmanager
def pattern_budget() -> Iterator[None]:
    """One call's allowance of `MAX_PATTERN_TEXT` characters for untrusted patterns (a
    budget already open, the call's own, goes on)."""
    if _BUDGET.get() is not None:
        yield
        return
    token = _BUDGET.set([MAX_PATTERN_TEXT])
    try:
        yield
    finally:
        _BUDGET.reset(token)


class BoundedPattern:
    """An untrusted `pattern`, compiled on RE2 if installed, else checked and run on `re`.

    Raises `UntrustedSchemaError` for a pattern it will not run; `search` raises
    `PatternRefused` for a string past the limits."""

    __slots__ = ("_search", "engine", "pattern")

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise UntrustedSchemaError(
                f"the pattern {_quoted(pattern)} is longer than {MAX_PATTERN_LENGTH:,} characters"
            )
        self.pattern = pattern
        re2 = _re2()
        if re2 is not None:
            options = re2.Options()
            options.log_errors = False  # RE2 would write to the process's stderr
            options.never_capture = True
            try:
                self._search = re2.compile(pattern, options=options).search
            except re2.error as exc:
                reason = (
                    exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
                )
                raise UntrustedSchemaError(
                    f"the pattern {_quoted(pattern)} cannot run on RE2 ({reason})"
                ) from None
            self.engine = "re2"
        else:
            _check_for_re(
                pattern,
                "; install google-re2 (pip install 'toolreg[re2]') to run it in linear time",
            )
            self._search = re.compile(pattern).search
            self.engine = "re"

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in `text`."""
        if len(text) > MAX_PATTERN_INPUT:
            raise PatternRefused(f"longer than {MAX_PATTERN_INPUT:,} characters")
        budget = _BUDGET.get()
        if budget is not None:
            budget[0] -= len(text)
            if budget[0] < 0:
                raise PatternRefused(
                    f"the call already had {MAX_PATTERN_TEXT:,} characters checked against "
                    "the tool's patterns"
                )
        return self._search(text) is not None


def _check_for_re(pattern: str, advice: str = "", exponential_only: bool = False) -> None:
    """Raise `UntrustedSchemaError` if `pattern` is invalid on `re`, or `re` could backtrack
    on it for a long time (`advice` ends that message; `exponential_only`: only for nested
    quantifiers, exponential in the text's length)."""
    try:
        parsed = _PARSER.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise UntrustedSchemaError(f"the pattern {_quoted(pattern)} is invalid: {exc}") from None
    reason = _backtracking(parsed)
    if reason is not None and (reason == _NESTED or not exponential_only):
        raise UntrustedSchemaError(
            f"the pattern {_quoted(pattern)} could backtrack for a long time ({reason}){advice}"
        )


def check_patterns_for_re(
    schema: Any, max_length: int | None = MAX_PATTERN_LENGTH, exponential_only: bool = False
) -> None:
    """Raise `UntrustedSchemaError` for a pattern of `schema` (a `pattern`, a
    `patternProperties` name) longer than `max_length` (None: any length) or that `re` could
    backtrack on for a long time: for an untrusted schema that something else checks with
    `re`, whatever engine toolreg has (the MCP SDK checks a tool's structured content against
    its `outputSchema` with jsonschema). The analysis is conservative; `exponential_only`
    keeps to its surest finding, nested quantifiers (`toolreg lint`, on the author's own
    patterns). Call `check_size` first: the walk is not bounded."""
    todo = [schema]
    while todo:
        value = todo.pop()
        if isinstance(value, list):
            todo.extend(value)
            continue
        if not isinstance(value, dict):
            continue
        found = value.get("pattern")
        patterns = [found] if isinstance(found, str) else []
        named = value.get("patternProperties")
        if isinstance(named, dict):
            patterns += [key for key in named if isinstance(key, str)]
        for pattern in patterns:
            if max_length is not None and len(pattern) > max_length:
                raise UntrustedSchemaError(
                    f"the pattern {_quoted(pattern)} is longer than {max_length:,} characters"
                )
            _check_for_re(pattern, exponential_only=exponential_only)
        todo.extend(value.values())  # everywhere, `const` and `default` too: conservative


def _quoted(pattern: str) -> str:
    """`pattern` for a message or a log line: escaped, at most 60 characters."""
    shown = json.dumps(pattern[:60])
    return shown[:-1] + '..."' if len(pattern) > 60 else shown


def _re2() -> Any:
    """The `re2` module of google-re2, or None (looked up each time: it is cached anyway)."""
    try:
        return importlib.import_module("re2")
    except ImportError:
        return None


# Python's own regex parser (`re._parser`, `sre_parse` before 3.11): a tree of (op, value).
_PARSER: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")
_MAXREPEAT: Any = _PARSER.MAXREPEAT
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
_REFUSED = {
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "GROUPREF_IGNORE": "a backreference",
    "GROUPREF_LOC_IGNORE": "a backreference",
    "GROUPREF_UNI_IGNORE": "a backreference",
    "ASSERT": "a lookaround",
    "ASSERT_NOT": "a lookaround",
}
# Character classes that share no character (`\d` and `\s`, `\w` and `\s`, each and its opposite).
_DISJOINT = {
    frozenset({"CATEGORY_DIGIT", "CATEGORY_SPACE"}),
    frozenset({"CATEGORY_WORD", "CATEGORY_SPACE"}),
    frozenset({"CATEGORY_DIGIT", "CATEGORY_NOT_DIGIT"}),
    frozenset({"CATEGORY_SPACE", "CATEGORY_NOT_SPACE"}),
    frozenset({"CATEGORY_WORD", "CATEGORY_NOT_WORD"}),
}
_CATEGORY_TESTS = {
    "CATEGORY_DIGIT": re.compile(r"\d").fullmatch,
    "CATEGORY_SPACE": re.compile(r"\s").fullmatch,
    "CATEGORY_WORD": re.compile(r"\w").fullmatch,
    "CATEGORY_NOT_DIGIT": re.compile(r"\D").fullmatch,
    "CATEGORY_NOT_SPACE": re.compile(r"\S").fullmatch,
    "CATEGORY_NOT_WORD": re.compile(r"\W").fullmatch,
}
# A set of characters: ranges of code points, category names, or None for "any character".
_Chars = tuple[tuple[tuple[int, int], ...], frozenset[str]] | None


_NESTED = "a quantifier over a group that varies in length (nested quantifiers)"
"""The reason for exponential time (`(a+)+`); the others are polynomial, or unknown."""


def _backtracking(parsed: Any) -> str | None:
    """Why `re` could take more than polynomial-in-a-small-degree time on this pattern, or
    None. Conservative: a pattern it cannot analyse is refused."""
    ignore_case = bool(parsed.state.flags & re.IGNORECASE)
    combinations = [1]
    try:
        return _sequence(list(parsed), ignore_case, combinations, inside_repeat=False)
    except (TypeError, ValueError, AttributeError, RecursionError):
        return "a construct toolreg cannot analyse"


def _sequence(
    items: list[Any], ignore_case: bool, combinations: list[int], inside_repeat: bool
) -> str | None:
    open_sets: list[_Chars] = []  # variable quantifiers nothing has closed off yet
    for op, value in items:
        name = str(op)
        if name in _REFUSED:
            return _REFUSED[name]
        if name == "AT":  # an anchor: matches no character
            continue
        if name in _REPEATS:
            low, high, body = value
            width = body.getwidth()
            if high != 1 and (width[0] != width[1] or _has(body, {"BRANCH", *_REPEATS})):
                return _NESTED
            reason = _sequence(list(body), ignore_case, combinations, inside_repeat=True)
            if reason is not None:
                return reason
            chars = _chars_of(list(body), ignore_case)
            if low != high:
                first = _first_chars(list(body), ignore_case)
                if any(_overlap(first, other) for other in open_sets):
                    return "two variable quantifiers can match the same characters in a row"
                open_sets = _still_open(open_sets, chars) if low > 0 and width[0] > 0 else open_sets
                open_sets.append(chars)
            elif low > 0 and width[0] > 0:
                open_sets = _still_open(open_sets, chars)
            continue
        if name == "BRANCH":
            alternatives = value[1]
            combinations[0] *= len(alternatives)
            if inside_repeat or combinations[0] > _MAX_ALTERNATIVES:
                return f"more than {_MAX_ALTERNATIVES} combinations of alternatives"
            for alternative in alternatives:
                reason = _sequence(list(alternative), ignore_case, combinations, inside_repeat)
                if reason is not None:
                    return reason
            chars = _chars_of([(op, value)], ignore_case)
            if _varies([(op, value)]):
                first = _first_chars([(op, value)], ignore_case)
                if any(_overlap(first, other) for other in open_sets):
                    return "two variable quantifiers can match the same characters in a row"
                open_sets.append(chars)
            else:
                open_sets = _still_open(open_sets, chars)
            continue
        if name in ("SUBPATTERN", "ATOMIC_GROUP"):
            body = value[-1] if name == "SUBPATTERN" else value
            reason = _sequence(list(body), ignore_case, combinations, inside_repeat)
            if reason is not None:
                return reason
            chars = _chars_of(list(body), ignore_case)
            if _varies(list(body)):
                first = _first_chars(list(body), ignore_case)
                if any(_overlap(first, other) for other in open_sets):
                    return "two variable quantifiers can match the same characters in a row"
                open_sets.append(chars)
            elif body.getwidth()[0] > 0:
                open_sets = _still_open(open_sets, chars)
            continue
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN", "CATEGORY"):
            open_sets = _still_open(open_sets, _chars_of([(op, value)], ignore_case))
            continue
        return "a construct toolreg cannot analyse"
    return None


def _varies(items: list[Any]) -> bool:
    return bool(_PARSER.SubPattern(_PARSER.State(), items).getwidth()[0] != _width_max(items))


def _width_max(items: list[Any]) -> int:
    return int(_PARSER.SubPattern(_PARSER.State(), items).getwidth()[1])


def _has(body: Any, names: set[str]) -> bool:
    for op, value in body:
        if str(op) in names:
            return True
        for part in value if isinstance(value, (tuple, list)) else ():
            if isinstance(part, _PARSER.SubPattern) and _has(part, names):
                return True
            if isinstance(part, list) and any(
                isinstance(p, _PARSER.SubPattern) and _has(p, names) for p in part
            ):
                return True
    return False


def _still_open(open_sets: list[_Chars], mandatory: _Chars) -> list[_Chars]:
    """The variable quantifiers a required item does not close off: those that can match
    what it matches (they could take its characters and backtrack over them)."""
    return [chars for chars in open_sets if _overlap(chars, mandatory)]


def _chars_of(items: list[Any], ignore_case: bool) -> _Chars:
    """Every character `items` can match, as ranges and categories; None for any."""
    ranges: list[tuple[int, int]] = []
    categories: set[str] = set()
    todo = list(items)
    while todo:
        op, value = todo.pop()
        name = str(op)
        if name == "LITERAL":
            ranges.append((value, value))
        elif name == "RANGE":
            ranges.append((value[0], value[1]))
        elif name == "CATEGORY":
            categories.add(str(value))
        elif name == "IN":
            todo.extend(value)
        elif name in _REPEATS:
            todo.extend(value[2])
        elif name == "SUBPATTERN":
            todo.extend(value[-1])
        elif name == "ATOMIC_GROUP":
            todo.extend(value)
        elif name == "BRANCH":
            for alternative in value[1]:
                todo.extend(alternative)
        elif name == "AT":
            continue
        else:  # ANY, NOT_LITERAL, NEGATE...: (nearly) anything
            return None
    if ignore_case and ranges:
        return None
    return tuple(ranges), frozenset(categories)


def _first_chars(items: list[Any], ignore_case: bool) -> _Chars:
    r"""The characters a match of `items` can start with (None: any).

    What a variable quantifier after another can trade with it is its first characters only:
    in `\d+(\.\d*)?` the group must start with `.`, which `\d+` cannot take. What it
    leaves open for what follows stays all of its characters (`_chars_of`): conservative."""
    found: _Chars = ((), frozenset())
    for op, value in items:
        name = str(op)
        if name == "AT":  # an anchor: no character
            continue
        if name in _REPEATS:
            low, _, body = value
            first = _first_chars(list(body), ignore_case)
            empty = low == 0 or body.getwidth()[0] == 0
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            body = value[-1] if name == "SUBPATTERN" else value
            first = _first_chars(list(body), ignore_case)
            empty = body.getwidth()[0] == 0
        elif name == "BRANCH":
            first = ((), frozenset())
            for alternative in value[1]:
                first = _union(first, _first_chars(list(alternative), ignore_case))
            empty = any(alternative.getwidth()[0] == 0 for alternative in value[1])
        elif name in ("LITERAL", "NOT_LITERAL", "ANY", "IN", "CATEGORY"):
            first, empty = _chars_of([(op, value)], ignore_case), False
        else:
            return None
        found = _union(found, first)
        if not empty:
            return found
    return found


def _union(a: _Chars, b: _Chars) -> _Chars:
    if a is None or b is None:
        return None
    return a[0] + b[0], a[1] | b[1]


def _overlap(a: _Chars, b: _Chars) -> bool:
    if a is None or b is None:
        return True
    (ranges_a, cats_a), (ranges_b, cats_b) = a, b
    for lo, hi in ranges_a:
        if any(lo <= y and x <= hi for x, y in ranges_b):
            return True
    for cat_a in cats_a:
        if any(frozenset({cat_a, cat_b}) not in _DISJOINT for cat_b in cats_b):
            return True
    return _ranges_meet(ranges_a, cats_b) or _ranges_meet(ranges_b, cats_a)


def _ranges_meet(ranges: tuple[tuple[int, int], ...], categories: frozenset[str]) -> bool:
    for name in categories:
        test = _CATEGORY_TESTS.get(name)
        for lo, hi in ranges:
            if test is None or hi - lo > 4096:  # too many to try: assume they meet
                return True
            if any(test(chr(c)) for c in range(lo, hi + 1)):
                return True
    return False
