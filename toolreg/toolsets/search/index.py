"""`SearchIndex`: an inverted BM25F index over tool definitions, updated tool by tool.

Each tool is a document with four fields: its name (and title, tags), its description,
its parameter names and its parameter descriptions (with enum values). A term's frequency
in a document is the weighted sum of its frequencies in the fields (`WEIGHTS`, measured on
`benchmarks/search.py`'s corpus), and so is the document's length; the score is Okapi BM25
over those (BM25F with one length normalisation).

What one tool can put in the index is bounded, so that a definition stuffed with the
catalog's vocabulary cannot push itself into every answer: a term counts at most
`MAX_REPEATS` times per field, a tool holds at most `MAX_TERMS` distinct terms (its name
field at most `MAX_NAME_TERMS`; fields are read in the order of `WEIGHTS`, so a name and a
description are kept before parameter descriptions), at most `MAX_READ` of its words are
read, and its length counts every word read (repeats too): past `LONG` times the average
length, each further word lowers its score in full (BM25's usual `b` only in part). Natural
definitions are far inside these bounds (on `benchmarks/search.py`'s 524 tools: at most 145
distinct terms, a term at most 11 times, half of them under 20 terms).

Adding or removing a tool only notes it (registration stays as cheap as without an
index); the next query indexes what was noted, touching only those tools' postings. A
query reads the postings of its terms only; the score of a term in a document is cached
per term until the index next changes (the collection statistics it depends on change).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...tool import Tool
from .text import identifier_terms, terms

__all__ = [
    "K1",
    "LONG",
    "MAX_NAME_TERMS",
    "MAX_READ",
    "MAX_REPEATS",
    "MAX_TERMS",
    "WEIGHTS",
    "B",
    "SearchIndex",
    "tool_fields",
]

WEIGHTS: Mapping[str, float] = {
    "name": 3.0,
    "description": 1.0,
    "parameters": 0.5,
    "parameter_descriptions": 0.3,
}
"""Field weights (see `benchmarks/search.py`, which measures alternatives)."""
K1 = 0.9  # measured with WEIGHTS (k1 1.2 / b 0.75, Okapi's usual, ranked GitHub's tools worse)
B = 0.4
MAX_QUERY_TERMS = 64  # a longer question is cut: its first terms say what it is about
MAX_REPEATS = 2  # times a term counts in one field of a tool
MAX_TERMS = 64  # distinct terms of one tool, all fields together
MAX_NAME_TERMS = 16  # distinct terms of a tool's name field (name, title, tags)
MAX_READ = 4096  # words of one tool read at most (its length counts no more)
LONG = 3.0  # times the average length past which a tool's length counts in full


def tool_fields(tool: Tool) -> dict[str, list[str]]:
    """The terms of each field of `tool`, from its exported definition (so a mounted tool,
    or one from an explicit schema, is read like any other)."""
    name = identifier_terms(tool.name)
    if tool.title:
        name += terms(tool.title)
    for tag in sorted(tool.tags):
        name += identifier_terms(tag)
    properties = tool.parameters.get("properties")
    params: list[str] = []
    described: list[str] = []
    if isinstance(properties, dict):
        for key, schema in properties.items():
            params += identifier_terms(str(key))
            if isinstance(schema, dict):
                described += _schema_terms(schema)
    return {
        "name": name,
        "description": terms(tool.description),
        "parameters": params,
        "parameter_descriptions": described,
    }


def _schema_terms(schema: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("description", "title"):
        text = schema.get(key)
        if isinstance(text, str):
            out += terms(text)
    values = schema.get("enum")
    if isinstance(values, list):
        for value in values[:50]:
            if isinstance(value, str):
                out += identifier_terms(value)
    return out


class SearchIndex:
    """Tools by the words of their definitions: `add`, `remove`, `search`.

    `weights` maps each field of `tool_fields` to its weight (see `WEIGHTS`). Not
    thread-safe by itself: the registry holds its lock around every call.

    Args:
        weights: each field's weight (`WEIGHTS` by default).
        k1: BM25's term-frequency saturation.
        b: BM25's length normalisation (0: none, 1: full).
    """

    def __init__(
        self, weights: Mapping[str, float] | None = None, *, k1: float = K1, b: float = B
    ) -> None:
        self.weights = dict(WEIGHTS if weights is None else weights)
        self.k1, self.b = k1, b
        self._postings: dict[str, dict[str, float]] = {}  # term -> tool name -> weighted tf
        self._lengths: dict[str, float] = {}  # tool name -> weighted length
        self._terms: dict[str, tuple[str, ...]] = {}  # tool name -> its distinct terms
        self._total = 0.0
        # term -> (tool name -> its score for the term, the best of them); until a change
        self._scores: dict[str, tuple[dict[str, float], float]] = {}
        self._pending: dict[str, Tool | None] = {}  # noted changes: a tool, or None: removed

    def __len__(self) -> int:
        self._apply()
        return len(self._lengths)

    def __contains__(self, name: object) -> bool:
        self._apply()
        return name in self._lengths

    def add(self, tool: Tool) -> None:
        """Index `tool` (replacing a tool of the same name) before the next query."""
        self._pending[tool.name] = tool

    def remove(self, name: str) -> None:
        """Forget the tool `name` before the next query (nothing if it is not indexed)."""
        self._pending[name] = None

    def _apply(self) -> None:
        """Index the tools noted since the last query, forget the removed ones."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        for name, tool in pending.items():
            self._forget(name)
            if tool is not None:
                self._index(tool)
        self._scores = {}

    def _index(self, tool: Tool) -> None:
        frequencies: dict[str, float] = {}
        length = 0.0
        read = 0
        for field, words in tool_fields(tool).items():
            weight = self.weights.get(field, 0.0)
            if weight <= 0 or read >= MAX_READ:
                continue
            words = words[: MAX_READ - read]
            read += len(words)
            length += weight * len(words)  # every word read: repeats make a tool long
            counts: dict[str, int] = {}
            for word in words:
                counts[word] = counts.get(word, 0) + 1
            room = MAX_NAME_TERMS if field == "name" else MAX_TERMS
            for word, count in counts.items():
                if word not in frequencies:
                    if len(frequencies) >= MAX_TERMS or room <= 0:
                        continue
                    frequencies[word] = 0.0
                room -= 1
                frequencies[word] += weight * min(count, MAX_REPEATS)
        name = tool.name
        for word, tf in frequencies.items():
            self._postings.setdefault(word, {})[name] = tf
        self._lengths[name] = length
        self._terms[name] = tuple(frequencies)
        self._total += length

    def _forget(self, name: str) -> None:
        length = self._lengths.pop(name, None)
        if length is None:
            return
        for word in self._terms.pop(name):
            posting = self._postings[word]
            del posting[name]
            if not posting:
                del self._postings[word]
        self._total -= length

    def update(self, tools: Iterable[Tool]) -> None:
        for tool in tools:
            self.add(tool)

    def scores(
        self, query: str, *, accept: Callable[[str], bool] | None = None
    ) -> dict[str, float]:
        """Tool name -> BM25F score for every tool that shares a term with `query` (and
        that `accept`, if given, accepts)."""
        total: dict[str, float] = {}
        for scored, _ in self._query_terms(query):
            total = _merged(total, scored)
        if accept is not None:
            total = {name: s for name, s in total.items() if accept(name)}
        return total

    def search(
        self, query: str, limit: int = 5, *, accept: Callable[[str], bool] | None = None
    ) -> list[str]:
        """The names of the `limit` best tools for `query`, best first (ties: by name).

        Exact, but not every posting is read (MaxScore): the terms are taken best first,
        and once the terms left cannot lift a tool that has not been seen yet into the
        best `limit`, they only add to the tools that still can get there."""
        if limit <= 0:
            return []
        if accept is not None:
            scored = self.scores(query, accept=accept)
            return [name for name, _ in heapq.nsmallest(limit, scored.items(), key=_rank)]
        entries = sorted(self._query_terms(query), key=lambda e: -e[1])
        left = [0.0] * (len(entries) + 1)  # what terms i.. can add to a tool, at most
        for i in range(len(entries) - 1, -1, -1):
            left[i] = left[i + 1] + entries[i][1]
        total: dict[str, float] = {}
        for i, (scored, _) in enumerate(entries):
            if len(total) >= limit and len(total) <= _PRUNE_AT:
                kth = heapq.nlargest(limit, total.values())[-1]
                if left[i] < kth:  # no tool outside `total` can make the best `limit`
                    return _finish(total, entries[i:], kth - left[i], limit)
            total = _merged(total, scored)
        return [name for name, _ in heapq.nsmallest(limit, total.items(), key=_rank)]

    def _query_terms(self, query: str) -> list[tuple[dict[str, float], float]]:
        """Each distinct term of `query` the index has: its scores by tool, and the best."""
        self._apply()
        out = []
        for word in dict.fromkeys(terms(query)[:MAX_QUERY_TERMS]):  # repeats count once
            entry = self._scores.get(word)
            if entry is None:
                entry = self._term_scores(word)
            if entry[0]:
                out.append(entry)
        return out

    def _term_scores(self, word: str) -> tuple[dict[str, float], float]:
        posting = self._postings.get(word)
        if not posting:
            return {}, 0.0
        n = len(self._lengths)
        df = len(posting)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        average = self._total / n if n and self._total > 0 else 1.0
        k1, b, lengths = self.k1, self.b, self._lengths
        base = k1 * (1.0 - b)
        per_length = k1 * b / average
        long = LONG * average  # past it, each word weighs fully (k1 / average), not k1 b
        past = k1 * (1.0 - b) / average
        scored = {
            name: idf
            * tf
            * (k1 + 1.0)
            / (tf + base + per_length * lengths[name] + past * max(0.0, lengths[name] - long))
            for name, tf in posting.items()
        }
        if len(self._scores) > 4096:  # a flood of distinct queries cannot grow it forever
            self._scores = {}
        entry = self._scores[word] = (scored, max(scored.values()))
        return entry


_PRUNE_AT = 4096  # candidates at most for which the pruning test is worth its cost


def _merged(total: dict[str, float], scored: dict[str, float]) -> dict[str, float]:
    """`total` plus `scored` (a cached term's scores, never changed): the larger of the two
    is copied (in C) and the smaller added to it, one by one."""
    if len(scored) > len(total):
        merged = dict(scored)
        get = merged.get
        for name, score in total.items():
            merged[name] = get(name, 0.0) + score
        return merged
    get = total.get
    for name, score in scored.items():
        total[name] = get(name, 0.0) + score
    return total


def _finish(
    total: dict[str, float],
    rest: list[tuple[dict[str, float], float]],
    floor: float,
    limit: int,
) -> list[str]:
    """The best `limit` of the tools in `total` that can still reach `floor` + what `rest`
    adds, with `rest` added to them only."""
    alive = {name: score for name, score in total.items() if score >= floor}
    for scored, _ in rest:
        get = scored.get
        for name in alive:
            alive[name] += get(name, 0.0)
    return [name for name, _ in heapq.nsmallest(limit, alive.items(), key=_rank)]


def _rank(item: tuple[str, float]) -> tuple[float, str]:
    return (-item[1], item[0])
