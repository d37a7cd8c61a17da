"""One tool cannot crowd out the rest of a search: what a definition puts in the index is
bounded (repeats per term, distinct terms, length), checked as properties over the 524 real
tool definitions and their questions in `benchmarks/data/search_corpus.json`."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg import ToolDefinitionError, ToolRegistry
from toolreg.toolsets.search import SearchIndex, terms, tool_fields

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "search_corpus.json"
STUFFED = "zz_helper"
QUERIES = 200  # questions aimed at the corpus's tools, none at the stuffed one


def _noop(**kwargs: Any) -> None:
    return None


@cache
def _corpus() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    return data["tools"], data["questions"][:QUERIES]


def _catalog() -> ToolRegistry:
    """The corpus's tools, registered the way `benchmarks/search.py` does."""
    registry = ToolRegistry()
    for tool in _corpus()[0]:
        schema = tool["parameters"]
        if not (isinstance(schema, dict) and schema.get("type") == "object"):
            schema = {"type": "object"}
        try:
            registry.register_schema(tool["name"], schema, _noop, description=tool["description"])
        except ToolDefinitionError:
            loose = {
                k: {"description": str(v.get("description", ""))}
                for k, v in schema.get("properties", {}).items()
            }
            registry.register_schema(
                tool["name"],
                {"type": "object", "properties": loose},
                _noop,
                description=tool["description"],
            )
    return registry


@cache
def _shared() -> ToolRegistry:
    return _catalog()


@cache
def _vocabularies() -> tuple[list[str], list[str]]:
    """The catalog's terms (most common first) and the questions' terms (likewise)."""
    catalog: Counter[str] = Counter()
    for tool in _shared().tools():
        catalog.update({w for words in tool_fields(tool).values() for w in words})
    asked: Counter[str] = Counter()
    for question in _corpus()[1]:
        asked.update(set(terms(question["question"])))
    return [w for w, _ in catalog.most_common()], [w for w, _ in asked.most_common()]


def _stuffed_hits(registry: ToolRegistry, definition: dict[str, Any]) -> tuple[int, int]:
    """How many of the questions put the stuffed tool in their top 5, and how many still
    find their own tool there."""
    registry.register_schema(STUFFED, _noop_schema(definition), _noop, **_options(definition))
    try:
        hits = found = 0
        for question in _corpus()[1]:
            top = [t.name for t in registry.search_tools(question["question"], limit=5)]
            hits += STUFFED in top
            found += bool(set(question["gold"]) & set(top))
        return hits, found
    finally:
        registry.unregister(STUFFED)


def _noop_schema(definition: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": definition.get("properties", {})}


def _options(definition: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"description": definition.get("description", "")}
    if definition.get("title"):
        out["title"] = definition["title"]
    if definition.get("tags"):
        out["tags"] = set(definition["tags"])
    return out


def _baseline() -> int:
    registry = _shared()
    return sum(
        bool(set(q["gold"]) & {t.name for t in registry.search_tools(q["question"], limit=5)})
        for q in _corpus()[1]
    )


@st.composite
def _stuffing(draw: st.DrawFn) -> dict[str, Any]:
    """A definition that repeats the catalog's vocabulary: any slice of it (the most common
    terms, or a random pick), any number of times, in any of the fields a definition has."""
    catalog, _ = _vocabularies()
    size = draw(st.integers(1, len(catalog)))
    if draw(st.booleans()):
        words = catalog[:size]
    else:
        words = draw(st.lists(st.sampled_from(catalog), min_size=1, max_size=size, unique=True))
    text = " ".join(words * draw(st.integers(1, 60)))
    definition: dict[str, Any] = {}
    where = draw(st.sets(st.sampled_from(["description", "title", "tags", "params"]), min_size=1))
    if "description" in where:
        definition["description"] = text
    if "title" in where:
        definition["title"] = text[:2000]
    if "tags" in where:
        definition["tags"] = [w for w in words[:200] if w.isidentifier()][:50] or ["x"]
    if "params" in where:
        definition["properties"] = {
            f"p{i}": {"type": "string", "description": text, "enum": words[i * 50 : i * 50 + 50]}
            for i in range(draw(st.integers(1, 30)))
            if words[i * 50 : i * 50 + 50]
        } or {"p": {"type": "string", "description": text}}
    return definition


@pytest.mark.slow
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(_stuffing())
def test_a_definition_stuffed_with_the_catalogs_words_does_not_win_the_searches(
    definition: dict[str, Any],
) -> None:
    hits, found = _stuffed_hits(_shared(), definition)
    assert hits <= QUERIES // 20, f"the stuffed tool is in the top 5 of {hits} of {QUERIES}"
    assert found >= _baseline() - 2  # the questions' own tools are still found


@pytest.mark.parametrize("size", [32, 64, 128, 300])
def test_repeating_words_never_gains_a_tool_anything(size: int) -> None:
    """The questions' most common terms, written once, then again and again: each repeat
    only makes the tool longer (so weaker), never more frequent in the answers."""
    _, asked = _vocabularies()
    words = asked[:size]
    once, _ = _stuffed_hits(_shared(), {"description": " ".join(words)})
    for times in (3, 20):
        again, _ = _stuffed_hits(_shared(), {"description": " ".join(words * times)})
        assert again <= once, (times, again, once)
    assert _stuffed_hits(_shared(), {"description": " ".join(words * 20)})[0] <= QUERIES // 20


def test_what_one_tool_puts_in_the_index_is_bounded() -> None:
    from toolreg.toolsets.search import index

    registry = ToolRegistry()
    vocabulary = " ".join(f"word{i}" for i in range(5000))
    registry.register_schema(
        "stuffed",
        {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(500)}},
        _noop,
        description=vocabulary * 3,
        title=" ".join(f"title{i}" for i in range(100)),
    )
    built = SearchIndex()
    built.add(registry["stuffed"])
    assert len(built) == 1
    held = built._terms["stuffed"]
    assert len(held) == index.MAX_TERMS
    assert sum(w.startswith("title") for w in held) <= index.MAX_NAME_TERMS
    assert all(tf <= index.MAX_REPEATS * max(index.WEIGHTS.values()) for tf in _tfs(built))
    assert built._lengths["stuffed"] <= index.MAX_READ * max(index.WEIGHTS.values())
    # the name and the description are kept first: a description's own words are found
    assert built.search("word3") == ["stuffed"]


def _tfs(built: SearchIndex) -> list[float]:
    return [tf for posting in built._postings.values() for tf in posting.values()]


def test_the_corpus_is_still_searched_as_well() -> None:
    """The bounds leave natural definitions alone: the questions' own tools are found as
    before (94% in the top 5 on the whole corpus; here its first 200 questions)."""
    assert _baseline() >= 0.93 * QUERIES
