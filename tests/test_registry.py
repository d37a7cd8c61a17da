"""ToolRegistry: the verbs, independence, the default registry, options, explicit schemas."""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterator
from typing import Annotated, Any

import pytest

import toolreg
from toolreg import (
    DuplicateToolError,
    Tool,
    ToolDefinitionError,
    ToolRegistry,
    default_registry,
)


def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry()


@pytest.fixture
def default_names() -> Iterator[list[str]]:
    """Names a test registers on the default registry; removed afterwards."""
    before = set(default_registry.names())
    added: list[str] = []
    yield added
    for name in default_registry.names():
        if name not in before:
            default_registry.unregister(name)
    assert set(default_registry.names()) == before


# -- the verbs ----------------------------------------------------------------------------


def test_bare_decorator_returns_the_function_unchanged(reg: ToolRegistry) -> None:
    @reg.register_tool
    def greet(name: str) -> str:
        """Say hello."""
        return f"hello {name}"

    assert greet("x") == "hello x"
    assert greet.__name__ == "greet"
    tool = reg["greet"]
    assert isinstance(tool, Tool)
    assert tool.function is greet
    assert tool.name == "greet"
    assert tool.description == "Say hello."


def test_decorator_with_options_returns_the_function_unchanged(reg: ToolRegistry) -> None:
    def original(name: str) -> str:
        return name

    decorated = reg.register_tool(name="hello", description="Greets.")(original)
    assert decorated is original
    assert reg["hello"].function is original
    assert reg["hello"].description == "Greets."
    assert "original" not in reg


def test_called_on_an_existing_function(reg: ToolRegistry) -> None:
    assert reg.register_tool(add) is add
    assert reg.names() == ["add"]
    assert reg.dispatch_tool("add", '{"a": 1}').content == "3"


def test_lookup_verbs(reg: ToolRegistry) -> None:
    reg.register_tool(add)
    reg.register_tool(shout)
    assert reg.names() == ["add", "shout"]
    assert list(reg) == ["add", "shout"]
    assert len(reg) == 2
    assert "add" in reg
    assert "nope" not in reg
    assert 3 not in reg
    assert ["add"] not in reg  # unhashable: simply not a tool name
    assert reg.get("add") is reg["add"]
    assert reg.get("nope") is None
    with pytest.raises(KeyError):
        reg["nope"]
    assert [t.name for t in reg.tools()] == ["add", "shout"]
    assert [t.name for t in reg.tools(["shout", "add"])] == ["shout", "add"]
    assert "add" in repr(reg)


def test_unregister(reg: ToolRegistry) -> None:
    reg.register_tool(add)
    removed = reg.unregister("add")
    assert removed.function is add
    assert "add" not in reg
    assert len(reg) == 0
    with pytest.raises(KeyError):
        reg.unregister("add")
    reg.register_tool(add)  # the name is free again
    assert "add" in reg


def test_iteration_is_a_snapshot(reg: ToolRegistry) -> None:
    reg.register_tool(add)
    for name in reg:
        reg.unregister(name)  # no "dictionary changed size during iteration"
    assert len(reg) == 0


def test_add_a_ready_tool(reg: ToolRegistry) -> None:
    tool = Tool.from_function(add, name="plus")
    assert reg.add(tool) is tool
    assert reg["plus"] is tool


def test_tools_unknown_name_is_a_key_error(reg: ToolRegistry) -> None:
    reg.register_tool(add)
    with pytest.raises(KeyError, match="nope"):
        reg.tools(["add", "nope"])


def test_tools_by_tag(reg: ToolRegistry) -> None:
    reg.register_tool(tags=["math"])(add)
    reg.register_tool(tags=["text", "loud"])(shout)
    assert [t.name for t in reg.tools(tags=["math"])] == ["add"]
    assert [t.name for t in reg.tools(tags="loud")] == ["shout"]
    assert [t.name for t in reg.tools(tags=["math", "text"])] == ["add", "shout"]
    assert reg.tools(tags=[]) == []
    assert [t.name for t in reg.tools(tags=iter(["text"]))] == ["shout"]


# -- independence and the default registry -------------------------------------------------


def test_fresh_registries_are_independent() -> None:
    first, second = ToolRegistry(), ToolRegistry()
    first.register_tool(add)
    assert "add" in first
    assert "add" not in second
    assert len(second) == 0
    second.register_tool(add)  # same function, other registry: no duplicate
    assert first["add"] is not second["add"]
    assert "add" not in default_registry


def test_default_registry_behind_module_functions(default_names: list[str]) -> None:
    @toolreg.register_tool(name="toolreg_test_default_add")
    def default_add(a: int, b: int = 2) -> int:
        return a + b

    assert "toolreg_test_default_add" in default_registry
    exported = [t["function"]["name"] for t in toolreg.get_tools()]
    assert "toolreg_test_default_add" in exported
    result = toolreg.dispatch_tool("toolreg_test_default_add", '{"a": 40}')
    assert result.ok
    assert result.content == "42"
    assert "toolreg_test_default_add" not in ToolRegistry()


def test_module_functions_are_the_default_registrys_methods() -> None:
    assert toolreg.register_tool == default_registry.register_tool
    assert toolreg.get_tools == default_registry.get_tools
    assert toolreg.dispatch_tool == default_registry.dispatch_tool
    assert toolreg.register_schema == default_registry.register_schema


def test_default_registry_register_schema(default_names: list[str]) -> None:
    toolreg.register_schema(
        "toolreg_test_schema_echo",
        {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
        lambda x: x,
        description="Echo.",
    )
    assert toolreg.dispatch_tool("toolreg_test_schema_echo", '{"x": "hi"}').content == "hi"


# -- duplicates ----------------------------------------------------------------------------


def test_duplicate_name_is_an_error(reg: ToolRegistry) -> None:
    reg.register_tool(add)

    def other(a: int) -> int:
        return a

    with pytest.raises(DuplicateToolError) as info:
        reg.register_tool(name="add")(other)
    err = info.value
    assert isinstance(err, ToolDefinitionError)
    assert err.name == "add"
    assert err.existing is not None
    assert err.existing.endswith(".add")
    assert err.function is not None
    assert err.function.endswith("other")
    assert "replace=True" in str(err)
    assert reg["add"].function is add  # the first one is kept, loudly


def test_duplicate_by_add_and_schema(reg: ToolRegistry) -> None:
    reg.register_tool(add)
    with pytest.raises(DuplicateToolError):
        reg.add(Tool.from_function(add))
    with pytest.raises(DuplicateToolError):
        reg.register_schema("add", {"type": "object"}, add)


def test_replace_true_swaps_the_tool(reg: ToolRegistry) -> None:
    reg.register_tool(add)

    def add_v2(a: int) -> int:
        return a * 100

    assert reg.register_tool(name="add", replace=True)(add_v2) is add_v2
    assert reg["add"].function is add_v2
    assert reg.names() == ["add"]
    assert reg.dispatch_tool("add", '{"a": 2}').content == "200"
    replacement = reg.register_schema("add", {"type": "object"}, lambda: "v3", replace=True)
    assert reg["add"] is replacement


# -- options ---------------------------------------------------------------------------------


def _keep(value: Any) -> Any:
    return value


def test_every_option_is_stored_on_the_tool(reg: ToolRegistry) -> None:
    @reg.register_tool(
        name="wipe_disk",
        description="Erase a disk.",
        strict=True,
        read_only=False,
        destructive=True,
        requires_confirmation=True,
        timeout=2.5,
        return_direct=True,
        max_result_chars=100,
        tags=["admin", "disk"],
        result_filter=_keep,
        coerce=False,
    )
    def wipe(device: str) -> str:
        return device

    tool = reg["wipe_disk"]
    assert tool.name == "wipe_disk"
    assert tool.description == "Erase a disk."
    assert tool.description_source == "argument"
    assert tool.strict is True
    assert tool.read_only is False
    assert tool.destructive is True
    assert tool.requires_confirmation is True
    assert tool.needs_confirmation is True
    assert tool.timeout == 2.5
    assert tool.return_direct is True
    assert tool.max_result_chars == 100
    assert tool.tags == frozenset({"admin", "disk"})
    assert tool.result_filter is _keep
    assert tool.coerce is False
    assert tool.function is wipe


def test_option_defaults(reg: ToolRegistry) -> None:
    reg.register_tool(add)
    tool = reg["add"]
    assert (tool.strict, tool.read_only, tool.destructive, tool.requires_confirmation) == (
        False,
        False,
        False,
        False,
    )
    assert (tool.timeout, tool.return_direct, tool.max_result_chars) == (None, False, None)
    assert (tool.tags, tool.result_filter, tool.coerce) == (frozenset(), None, None)
    assert tool.needs_confirmation is False


def test_read_only_option(reg: ToolRegistry) -> None:
    reg.register_tool(read_only=True)(add)
    assert reg["add"].read_only is True


def test_tool_is_frozen(reg: ToolRegistry) -> None:
    reg.register_tool(add)
    with pytest.raises(AttributeError):
        reg["add"].name = "other"  # type: ignore[misc]


BAD_OPTIONS: list[tuple[str, dict[str, Any], str]] = [
    ("timeout-zero", {"timeout": 0}, "timeout"),
    ("timeout-negative", {"timeout": -1}, "timeout"),
    ("timeout-nan", {"timeout": float("nan")}, "timeout"),
    ("timeout-inf", {"timeout": float("inf")}, "timeout"),
    ("timeout-string", {"timeout": "5"}, "timeout"),
    ("timeout-bool", {"timeout": True}, "timeout"),
    ("max-result-zero", {"max_result_chars": 0}, "max_result_chars"),
    ("max-result-float", {"max_result_chars": 10.5}, "max_result_chars"),
    ("max-result-string", {"max_result_chars": "10"}, "max_result_chars"),
    ("strict-not-bool", {"strict": "yes"}, "strict"),
    ("read-only-not-bool", {"read_only": 1}, "read_only"),
    ("destructive-not-bool", {"destructive": None}, "destructive"),
    ("confirmation-not-bool", {"requires_confirmation": "no"}, "requires_confirmation"),
    ("return-direct-not-bool", {"return_direct": 0}, "return_direct"),
    ("coerce-not-bool", {"coerce": "yes"}, "coerce"),
    ("coerce-int", {"coerce": 1}, "coerce"),
    ("tags-one-string", {"tags": "admin"}, "tags"),
    ("tags-not-strings", {"tags": ["ok", 3]}, "tags"),
    ("tags-empty-string", {"tags": [""]}, "tags"),
    ("result-filter-not-callable", {"result_filter": "upper"}, "result_filter"),
    ("description-not-string", {"description": 42}, "description"),
    ("name-empty", {"name": ""}, "name"),
    ("name-with-space", {"name": "get weather"}, "name"),
    ("name-not-string", {"name": 7}, "name"),
    ("name-too-long", {"name": "x" * 129}, "name"),
    ("unknown-option", {"timout": 5}, "timout"),
    ("internal-field", {"is_async": True}, "is_async"),
]


@pytest.mark.parametrize(
    ("options", "word"), [c[1:] for c in BAD_OPTIONS], ids=[c[0] for c in BAD_OPTIONS]
)
def test_invalid_option_values_are_rejected(
    reg: ToolRegistry, options: dict[str, Any], word: str
) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        reg.register_tool(**options)(add)
    err = info.value
    assert word in str(err)
    assert err.function is not None
    assert "add" in err.function
    assert err.fix
    assert len(reg) == 0


def test_name_positionally_is_a_clear_error(reg: ToolRegistry) -> None:
    with pytest.raises(ToolDefinitionError, match=r"name='get_weather'"):
        reg.register_tool("get_weather")  # type: ignore[call-overload]


def test_lambda_needs_a_name(reg: ToolRegistry) -> None:
    with pytest.raises(ToolDefinitionError, match="lambda") as info:
        reg.register_tool(lambda: 1)
    assert "name=" in (info.value.fix or "")
    assert reg.register_tool(name="one")(lambda: 1)() == 1


def test_name_for_one_provider_only_is_accepted(reg: ToolRegistry) -> None:
    # "a.b" is fine for MCP and Gemini; each export checks its own rule (see test_formats).
    reg.register_tool(name="a.b")(add)
    assert "a.b" in reg


# -- register_schema (ChatGLM3 / YAML definitions) ------------------------------------------

# A tool definition as ChatGLM3's demo (or a YAML file) writes it: name, description and an
# existing JSON Schema; the implementation is a separate callable.
CHATGLM3_STYLE = {
    "name": "track",
    "description": "追踪指定股票的实时价格",
    "parameters": {
        "type": "object",
        "properties": {
            "symbol": {"description": "需要追踪的股票代码", "type": "string"},
            "days": {"type": "integer", "minimum": 1, "default": 1},
        },
        "required": ["symbol"],
    },
}


def test_register_schema_from_a_chatglm3_definition(reg: ToolRegistry) -> None:
    calls: list[dict[str, Any]] = []

    def track(**kwargs: Any) -> dict[str, Any]:
        calls.append(kwargs)
        return {"symbol": kwargs["symbol"], "price": 12.5}

    definition: dict[str, Any] = CHATGLM3_STYLE
    tool = reg.register_schema(
        definition["name"],
        definition["parameters"],
        track,
        description=definition["description"],
    )
    assert reg["track"] is tool
    assert tool.parameters == definition["parameters"]
    assert tool.description == "追踪指定股票的实时价格"
    assert reg.get_tools("chatglm3") == [definition]

    result = reg.dispatch_tool("track", '{"symbol": "600519"}')
    assert result.ok, result.content
    assert calls == [{"symbol": "600519"}]
    assert '"price": 12.5' in result.content

    bad = reg.dispatch_tool("track", '{"days": 0}')
    assert not bad.ok
    assert bad.error_kind == "invalid_arguments"
    assert "symbol" in bad.content


def test_register_schema_copies_the_callers_schema(reg: ToolRegistry) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    tool = reg.register_schema("echo", schema, lambda a="": a)
    schema["properties"]["a"]["type"] = "integer"
    assert tool.parameters["properties"]["a"] == {"type": "string"}


def test_register_schema_options(reg: ToolRegistry) -> None:
    tool = reg.register_schema(
        "rm",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        lambda path: None,
        description="Remove a file.",
        destructive=True,
        timeout=3,
        tags=["fs"],
    )
    assert (tool.destructive, tool.timeout, tool.tags) == (True, 3, frozenset({"fs"}))
    assert tool.description_source == "argument"


INVALID_SCHEMAS: list[tuple[str, Any, str]] = [
    ("unknown-type-name", {"type": "object", "properties": {"a": {"type": "strin"}}}, "a"),
    ("required-not-array", {"type": "object", "required": "a"}, "required"),
    ("properties-not-object", {"type": "object", "properties": ["a"]}, "properties"),
    ("minimum-not-number", {"type": "object", "properties": {"n": {"minimum": "1"}}}, "n"),
    ("not-an-object-schema", {"type": "string"}, "object"),
    ("no-type", {"properties": {}}, "object"),
    ("not-a-mapping", ["type", "object"], "object"),
]


@pytest.mark.parametrize(
    ("schema", "where"), [c[1:] for c in INVALID_SCHEMAS], ids=[c[0] for c in INVALID_SCHEMAS]
)
def test_register_schema_rejects_invalid_schemas(
    reg: ToolRegistry, schema: Any, where: str
) -> None:
    def impl(**kwargs: Any) -> None:
        return None

    with pytest.raises(ToolDefinitionError) as info:
        reg.register_schema("t", schema, impl)
    assert where in info.value.problem
    assert info.value.function is not None
    assert "impl" in info.value.function
    assert "t" not in reg


def test_register_schema_strict_checks_at_registration(reg: ToolRegistry) -> None:
    open_object = {"type": "object", "properties": {"a": {"type": "string"}}}
    with pytest.raises(ToolDefinitionError, match="cannot be strict"):
        reg.register_schema("t", open_object, lambda a: a, strict=True)
    closed = {**open_object, "additionalProperties": False}
    assert reg.register_schema("t", closed, lambda a: a, strict=True).strict


def test_register_schema_rejects_a_non_callable(reg: ToolRegistry) -> None:
    with pytest.raises(ToolDefinitionError, match="callable"):
        reg.register_schema("t", {"type": "object"}, "not a function")  # type: ignore[arg-type]


# -- threads ---------------------------------------------------------------------------------


def _make(i: int) -> Any:
    def fn(x: int) -> int:
        return x + i

    return fn


def test_registration_from_many_threads(reg: ToolRegistry) -> None:
    threads, per_thread = 8, 20
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def register_many(t: int) -> None:
        barrier.wait()
        try:
            for i in range(per_thread):
                reg.register_tool(name=f"t{t}_{i}")(_make(i))
                reg.get_tools()  # exports interleave with registrations
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def export_all() -> None:
        barrier.wait()
        for _ in range(50):
            reg.get_tools()

    workers = [threading.Thread(target=register_many, args=(t,)) for t in range(threads)]
    workers.append(threading.Thread(target=export_all))
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert len(reg) == threads * per_thread
    assert len(reg.get_tools()) == threads * per_thread
    assert reg.dispatch_tool("t3_4", '{"x": 1}').content == "5"


def test_one_name_from_many_threads_wins_once(reg: ToolRegistry) -> None:
    threads = 16
    barrier = threading.Barrier(threads)
    outcomes: list[str] = []
    lock = threading.Lock()

    def register(i: int) -> None:
        barrier.wait()
        try:
            reg.register_tool(name="same")(_make(i))
            outcome = "ok"
        except DuplicateToolError:
            outcome = "duplicate"
        with lock:
            outcomes.append(outcome)

    workers = [threading.Thread(target=register, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(outcomes) == ["duplicate"] * (threads - 1) + ["ok"]
    assert reg.names() == ["same"]


# -- misc ----------------------------------------------------------------------------------


def test_annotated_description_reaches_the_tool(reg: ToolRegistry) -> None:
    @reg.register_tool
    def weather(city: Annotated[str, "City name"]) -> str:
        return city

    assert reg["weather"].parameters["properties"]["city"]["description"] == "City name"


@pytest.mark.parametrize(
    "settings",
    [
        {"max_payload_bytes": 0},
        {"max_depth": -1},
        {"max_concurrency": 0},
        {"max_result_chars": 0},
        {"max_depth": True},
        {"max_concurrency": 2.5},
    ],
)
def test_registry_settings_are_checked(settings: dict[str, Any]) -> None:
    (key,) = settings
    with pytest.raises(ValueError, match=rf"ToolRegistry\({key}=.*must be a whole number >= 1"):
        ToolRegistry(**settings)


class Size(enum.Enum):
    S = "s"
    L = "l"


def test_the_call_plan_is_built_at_registration_and_typed() -> None:
    from toolreg.tool import CallPlan
    from toolreg.validation import Validator

    reg = ToolRegistry()

    @reg.register_tool
    def order(item: str, size: Size = Size.S, /, *, note: str | None = None) -> str:
        """Order an item."""
        return item

    plan = reg["order"].plan
    assert isinstance(plan, CallPlan)
    assert isinstance(plan.validator, Validator)
    assert [name for name, _ in plan.converters] == ["size"]
    assert plan.positional == (("item", None), ("size", Size.S))
    assert plan.binds is True
    assert not hasattr(reg["order"], "runtime")  # no untyped, lazily filled state
    with pytest.raises(ToolDefinitionError, match="cannot be validated"):
        reg.register_schema(
            "dangling", {"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}, print
        )
    assert "dangling" not in reg


def test_misuse_raises_toolreg_errors_that_are_also_builtin_errors() -> None:
    from toolreg import ToolNotFoundError, ToolregError, UsageError

    reg = ToolRegistry()
    with pytest.raises(ToolNotFoundError, match=r"no tool named 'nope' \(registered: none\)"):
        reg["nope"]
    with pytest.raises(KeyError):
        reg.unregister("nope")
    with pytest.raises(UsageError, match="max_depth=0"):
        ToolRegistry(max_depth=0)
    with pytest.raises(ValueError, match="max_concurrency"):
        ToolRegistry(max_concurrency=-1)
    with pytest.raises(TypeError, match="a call must be"):
        reg.dispatch_many([42])  # type: ignore[list-item]
    assert issubclass(ToolNotFoundError, ToolregError)
    assert issubclass(UsageError, ToolregError)
    assert str(ToolNotFoundError("no tool named 'x'")) == "no tool named 'x'"


def test_the_dispatch_verbs_are_declared_once_in_the_dispatcher() -> None:
    """`registry.dispatch_tool` is the registry's Dispatcher's own bound method: one
    signature, one docstring, async where it is async; the unbound form works too."""
    import asyncio
    import inspect

    from toolreg.dispatch import Dispatcher

    registry = ToolRegistry()

    @registry.register_tool
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    for verb in ("dispatch_tool", "adispatch_tool", "dispatch_many", "adispatch_many"):
        bound = getattr(registry, verb)
        assert bound.__self__ is registry.dispatcher
        assert bound.__func__ is getattr(Dispatcher, verb)
        assert inspect.signature(bound) == inspect.signature(getattr(registry.dispatcher, verb))
        assert getattr(ToolRegistry, verb).__doc__ == getattr(Dispatcher, verb).__doc__
        assert inspect.iscoroutinefunction(bound) == verb.startswith("a")
    assert registry.dispatch_tool("double", {"x": 2}).content == "4"
    assert ToolRegistry.dispatch_tool(registry, "double", {"x": 3}).content == "6"
    assert asyncio.run(registry.adispatch_tool("double", {"x": 4})).content == "8"
