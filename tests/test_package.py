"""The package as a whole: a light import, a complete sorted `__all__`, and the layering rule."""

from __future__ import annotations
import __future__

import ast
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import toolreg

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "toolreg"

# -- import --------------------------------------------------------------------------------

HEAVY = (
    "openai",
    "anthropic",
    "jsonschema",
    "docstring_parser",
    "pydantic",
    "httpx",
    "annotated_types",
    "mcp",
    "mcp_types",
    "uvicorn",
    "starlette",
    "anyio",
    "pydantic_ai",
    "agents",
    "langchain_core",
    "langchain_openai",
)

PROBE = f"""
import logging, sys, warnings
filters_before = list(warnings.filters)
import toolreg
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})
print("---")
print(__import__("json").dumps({{
    "loaded": loaded,
    "root_handlers": len(logging.getLogger().handlers),
    "toolreg_handlers": len(logging.getLogger("toolreg").handlers),
    "warning_filters_changed": warnings.filters != filters_before,
}}))
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )


# Loaded on first use, not by `import toolreg` (about 8 ms of it): the standard library's
# value types, whose records the type table makes when a type of theirs first appears, and
# typing_extensions, whose forms are recognised once the application has loaded it.
DEFERRED = ("datetime", "uuid", "decimal", "pathlib", "platform", "typing_extensions")

LATE = """
import sys
import toolreg
print(sorted(m for m in {deferred!r} if m in sys.modules))
import datetime, decimal, uuid, pathlib
from typing_extensions import Annotated, Doc, Literal, NotRequired, ReadOnly, TypedDict

class Line(TypedDict):
    sku: ReadOnly[str]
    note: NotRequired[Annotated[str, Doc("a remark")]]

@toolreg.register_tool
def order(
    line: Line,
    day: datetime.date,
    price: Annotated[decimal.Decimal, toolreg.Param(gt=0)],
    id: uuid.UUID,
    where: pathlib.Path,
    mode: Literal["a", "b"] = "a",
) -> str:
    \"\"\"Order.\"\"\"
    return f"{{line}} {{day!r}} {{price!r}} {{id}} {{where}} {{mode}}"

schema = toolreg.get_tools()[0]["function"]["parameters"]
print(schema["$defs"]["Line"]["required"], schema["$defs"]["Line"]["properties"]["note"])
print(schema["properties"]["day"], schema["properties"]["mode"])
print(toolreg.dispatch_tool("order", {{
    "line": {{"sku": "a1"}}, "day": "2026-12-01", "price": "0.10",
    "id": "12345678-1234-5678-1234-567812345678", "where": "/tmp", "mode": "b",
}}).content)
print(toolreg.dispatch_tool("order", {{
    "line": {{}}, "day": "x", "price": "0", "id": "1", "where": "/tmp",
}}).content)
"""


def test_import_defers_the_library_types_and_typing_extensions_to_first_use() -> None:
    proc = _run(LATE.format(deferred=DEFERRED))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "[]"  # none of them loaded by `import toolreg`
    # loaded afterwards, they work as if they had been there from the start
    assert lines[1] == "['sku'] {'type': 'string', 'description': 'a remark'}"
    assert lines[2] == (
        "{'type': 'string', 'format': 'date'} {'type': 'string', 'enum': ['a', 'b'], "
        "'default': 'a'}"
    )
    assert lines[3] == (
        "{'sku': 'a1'} datetime.date(2026, 12, 1) Decimal('0.10') "
        "12345678-1234-5678-1234-567812345678 /tmp b"
    )
    assert lines[4:] == [
        "Invalid arguments for tool 'order':",
        "- line: missing required property 'sku'",
        "- day: expected an ISO 8601 date, e.g. 2024-05-01",
        "- price: must be > 0",
        "- id: expected a UUID",
    ]


def test_import_is_light_and_quiet() -> None:
    proc = _run(PROBE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    printed, _, report = proc.stdout.partition("---\n")
    assert printed == ""  # nothing printed while importing
    facts = json.loads(report)
    assert facts["loaded"] == []
    assert facts["root_handlers"] == 0
    assert facts["toolreg_handlers"] == 0
    assert facts["warning_filters_changed"] is False


def test_registering_and_exporting_stay_light() -> None:
    code = (
        "import sys, toolreg\n"
        "reg = toolreg.ToolRegistry()\n"
        "@reg.register_tool\n"
        "def f(a: int, b: str = 'x') -> str:\n"
        "    '''Do f.\n\n    Args:\n        a: the number\n    '''\n"
        "    return b * a\n"
        "reg.get_tools(); reg.get_tools('gemini'); reg.get_tools(strict=True)\n"
        "print(reg.dispatch_tool('f', '{\"a\": 2}').content)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'pydantic')))\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["xx", "[]"]


def test_py_typed_is_shipped() -> None:
    assert (PACKAGE / "py.typed").is_file()


def test_version_matches_pyproject() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^version = "([^"]+)"', text, re.MULTILINE)
    assert match is not None
    assert toolreg.__version__ == match.group(1)


# -- __all__ ---------------------------------------------------------------------------------


def test_all_is_sorted_and_unique() -> None:
    assert list(toolreg.__all__) == sorted(toolreg.__all__)
    assert len(set(toolreg.__all__)) == len(toolreg.__all__)


def test_every_name_in_all_is_importable() -> None:
    for name in toolreg.__all__:
        assert hasattr(toolreg, name), name
    namespace: dict[str, object] = {}
    exec("from toolreg import *", namespace)
    assert set(toolreg.__all__) <= set(namespace)


def test_every_public_name_is_in_all() -> None:
    public = {
        name
        for name, value in vars(toolreg).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)  # submodules bound by import
        and not isinstance(value, __future__._Feature)  # `from __future__ import annotations`
    }
    assert public - set(toolreg.__all__) == set()


def test_init_only_reexports() -> None:
    """`__init__` holds imports, the default registry's verbs, `__version__` and `__all__`,
    and the PEP 562 hooks that load the conversation driver on first use."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            assert node.name in ("__getattr__", "__dir__"), node.name
            continue
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` imports for type checkers
            assert ast.unparse(node.test) == "_typing.TYPE_CHECKING"
            assert all(isinstance(n, ast.ImportFrom) for n in node.body)
            continue
        assert isinstance(node, (ast.Expr, ast.ImportFrom, ast.Import, ast.Assign)), ast.dump(node)
        if isinstance(node, ast.Assign):
            (target,) = node.targets
            assert isinstance(target, ast.Name)
            value = node.value
            plain = isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Set))
            bound = isinstance(value, ast.Attribute) and ast.unparse(value).startswith(
                "default_registry."
            )
            assert plain or bound, ast.unparse(node)


def test_conversation_driver_loads_on_first_use() -> None:
    code = (
        "import sys, toolreg\n"
        "assert 'toolreg.conversation' not in sys.modules\n"
        "assert 'asyncio' not in sys.modules\n"
        "assert toolreg.Conversation.__name__ == 'Conversation'\n"
        "assert 'toolreg.conversation' in sys.modules\n"
        "assert all(hasattr(toolreg, name) for name in toolreg.__all__)\n"
        "assert set(toolreg.__all__) <= set(dir(toolreg))\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_adapters_load_their_framework_only_when_used() -> None:
    """`toolreg.adapters` and its shared base load no framework; each framework module loads
    its own framework and no other."""
    frameworks = ("pydantic_ai", "agents", "langchain_core")
    code = (
        "import sys, toolreg.adapters, toolreg.adapters.base\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {frameworks!r}))\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# -- layering --------------------------------------------------------------------------------

# DESIGN.md's layers, lowest first. A module may import modules of its own layer or of lower
# layers only. Subpackages are placed whole (every toolreg.definition.* module is layer
# "definition"). Every module of the package must be placed: a new one fails until it is.
LAYERS: list[set[str]] = [
    {"errors"},
    {"params", "result", "jsonvalues", "idempotency", "content"},
    {"types"},
    {"validation"},
    {"definition"},
    {"tool", "observe", "asking"},
    {"dispatch"},
    {"formats"},
    {"toolsets", "search"},  # toolreg.search: the shim of toolreg.toolsets.search
    {"registry"},
    {"conversation", "stores", "telemetry", "compat", "mcp", "sources", "adapters"},
    {"durable"},
    {"testing"},
    {"cli", "__main__"},
    {"__init__"},  # the package: re-exports only
]
LAYER_OF = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _layer_key(module: str) -> str:
    """`toolreg.x.y` -> the name used in LAYERS."""
    if module == "toolreg":
        return "__init__"
    return module.split(".")[1]


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _imports(module: str) -> set[str]:
    """toolreg modules that `module` imports, anywhere: top level, functions, TYPE_CHECKING."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    package = module if _is_package(module) else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in MODULES else base)
    return {name for name in found if name in MODULES}


def test_layer_table_is_sane() -> None:
    placed = [name for layer in LAYERS for name in layer]
    assert len(placed) == len(set(placed)), "a module is in two layers"


def test_every_module_is_placed_in_a_layer() -> None:
    unplaced = sorted(m for m in MODULES if _layer_key(m) not in LAYER_OF)
    assert unplaced == [], f"add these modules to LAYERS in {__file__}: {unplaced}"
    stale = sorted(set(LAYER_OF) - {_layer_key(m) for m in MODULES})
    assert stale == [], f"LAYERS names modules that do not exist: {stale}"


def test_the_import_parser_resolves_relative_imports() -> None:
    assert "toolreg.errors" in _imports("toolreg.tool")
    assert "toolreg.tool" in _imports("toolreg.formats.openai")
    assert "toolreg.formats.anthropic" in _imports("toolreg.formats")
    assert "toolreg.registry" in _imports("toolreg")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_point_down(module: str) -> None:
    """Within a layer, imports may go sideways; across layers, only down."""
    here = LAYER_OF.get(_layer_key(module))
    if here is None:
        pytest.skip("not placed (reported by test_every_module_is_placed_in_a_layer)")
    upward = sorted(
        f"{target} (layer {LAYER_OF[_layer_key(target)]})"
        for target in _imports(module)
        if _layer_key(target) in LAYER_OF and LAYER_OF[_layer_key(target)] > here
    )
    assert upward == [], f"{module} (layer {here}) imports a higher layer: {upward}"


# The conversation's rooms (docs/contributing.md draws them), lowest first: the same rule
# inside toolreg.conversation. The core holds the collaborators (Offer, Approvals, the
# state codec and resume checks), built from explicit inputs: none of them imports it.
CONVERSATION_ROOMS: list[set[str]] = [
    {"reply", "output", "policies", "eager", "endpoints", "signing", "events"},  # records
    {"providers", "tracing", "history", "stream", "responses_api"},  # the wire, observing
    {"guardrails", "options"},  # what a conversation is given
    {"asking"},  # a tool's questions (ctx.ask): answered from a call's replayed answers
    {"loop", "offer", "runs"},  # the sans-I/O turn; what each model call is offered
    {"state", "stored"},  # the codec of a saved conversation; its stores
    {"approvals", "resume"},  # paused calls and decisions; saved options on resume
    {"core"},  # construction, the turn flows, store flows, observation
    {"drivers"},  # the two I/O shells
    {"__init__"},
]
ROOM_OF = {name: i for i, room in enumerate(CONVERSATION_ROOMS) for name in room}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else "__init__"


def test_every_conversation_module_has_a_room() -> None:
    held = {_room(m) for m in MODULES if m.startswith("toolreg.conversation")}
    assert held == set(ROOM_OF), (
        f"CONVERSATION_ROOMS in {__file__}: unplaced {sorted(held - set(ROOM_OF))}, "
        f"stale {sorted(set(ROOM_OF) - held)}"
    )


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if m.startswith("toolreg.conversation"))
)
def test_conversation_imports_only_point_down(module: str) -> None:
    here = ROOM_OF[_room(module)]
    upward = sorted(
        f"{target} (room {ROOM_OF[_room(target)]})"
        for target in _imports(module)
        if target.startswith("toolreg.conversation") and ROOM_OF[_room(target)] > here
    )
    assert upward == [], f"{module} (room {here}) imports a higher room: {upward}"


def test_there_is_no_import_cycle() -> None:
    """No module imports itself through others, inside a subpackage or across the package
    (imports under TYPE_CHECKING and inside functions count too)."""
    graph = {module: _imports(module) - {module} for module in MODULES}
    # a package's __init__ re-exports its modules: an edge from a module to its own
    # package is the module reaching its siblings, so follow it as such
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
