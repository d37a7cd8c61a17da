"""Descriptions: every source, the precedence between them, and the tool description.

Parameter description sources: a plain string in `Annotated`, the ChatGLM3 triple
`Annotated[T, "description", required]`, `Param(description=...)`, `typing_extensions.Doc`,
and the docstring's parameter section (Google, NumPy, reST/Sphinx, Epydoc; auto-detected).
The most local source wins: anything in `Annotated` beats the docstring; inside one
`Annotated`, the last description wins.
"""

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any, NamedTuple, Optional

import jsonschema
import pytest
from typing_extensions import Doc, NotRequired, TypedDict

from toolreg import Param, Tool, ToolRegistry


def tool_of(fn: Callable[..., Any], **options: Any) -> Tool:
    reg = ToolRegistry()
    reg.register_tool(fn, **options)
    (name,) = reg.names()
    tool = reg[name]
    jsonschema.Draft202012Validator.check_schema(tool.parameters)
    return tool


# ----------------------------------------------------------------------------------------
# One source at a time


def s_plain(city: Annotated[str, "City name, e.g. Beijing"]) -> None: ...


def s_chatglm3(city: Annotated[str, "City name, e.g. Beijing", True]) -> None: ...


def s_param(city: Annotated[str, Param(description="City name, e.g. Beijing")]) -> None: ...


def s_doc(city: Annotated[str, Doc("City name, e.g. Beijing")]) -> None: ...


def s_google(city: str) -> None:
    """Look up a city.

    Args:
        city: City name, e.g. Beijing
    """


def s_numpy(city: str) -> None:
    """Look up a city.

    Parameters
    ----------
    city : str
        City name, e.g. Beijing
    """


def s_rest(city: str) -> None:
    """Look up a city.

    :param city: City name, e.g. Beijing
    :type city: str
    """


def s_epydoc(city: str) -> None:
    """Look up a city.

    @param city: City name, e.g. Beijing
    @type city: str
    """


SOURCES = [
    pytest.param(s_plain, id="Annotated-string"),
    pytest.param(s_chatglm3, id="ChatGLM3-triple"),
    pytest.param(s_param, id="Param"),
    pytest.param(s_doc, id="Doc"),
    pytest.param(s_google, id="docstring-google"),
    pytest.param(s_numpy, id="docstring-numpy"),
    pytest.param(s_rest, id="docstring-rest"),
    pytest.param(s_epydoc, id="docstring-epydoc"),
]


@pytest.mark.parametrize("fn", SOURCES)
def test_every_description_source(fn: Callable[..., Any]) -> None:
    assert tool_of(fn).parameters == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name, e.g. Beijing"}},
        "required": ["city"],
        "additionalProperties": False,
    }


# ----------------------------------------------------------------------------------------
# Docstring styles, with the tool description (summary + long description, no sections)


def d_google(city: str, days: int = 3, unit: str = "c") -> dict[str, Any]:
    """Get the weather forecast of a city.

    Use it when the user asks about rain, temperature
    or wind in the coming days.

    Args:
        city: The city name.
        days: How many days,
            at most 7.
        unit (str, optional): "c" or "f".

    Returns:
        dict: The forecast.

    Raises:
        ValueError: For an unknown city.
    """
    raise NotImplementedError


def d_numpy(city: str, days: int = 3, unit: str = "c") -> dict[str, Any]:
    """Get the weather forecast of a city.

    Use it when the user asks about rain, temperature
    or wind in the coming days.

    Parameters
    ----------
    city : str
        The city name.
    days : int, optional
        How many days,
        at most 7.
    unit : str
        "c" or "f".

    Returns
    -------
    dict
        The forecast.

    Raises
    ------
    ValueError
        For an unknown city.
    """
    raise NotImplementedError


def d_rest(city: str, days: int = 3, unit: str = "c") -> dict[str, Any]:
    """Get the weather forecast of a city.

    Use it when the user asks about rain, temperature
    or wind in the coming days.

    :param city: The city name.
    :type city: str
    :param int days: How many days,
        at most 7.
    :param unit: "c" or "f".
    :returns: The forecast.
    :rtype: dict
    :raises ValueError: For an unknown city.
    """
    raise NotImplementedError


def d_epydoc(city: str, days: int = 3, unit: str = "c") -> dict[str, Any]:
    """Get the weather forecast of a city.

    Use it when the user asks about rain, temperature
    or wind in the coming days.

    @param city: The city name.
    @type city: str
    @param days: How many days,
        at most 7.
    @param unit: "c" or "f".
    @return: The forecast.
    @raise ValueError: For an unknown city.
    """
    raise NotImplementedError


@pytest.mark.parametrize("fn", [d_google, d_numpy, d_rest, d_epydoc])
def test_docstring_styles(fn: Callable[..., Any]) -> None:
    tool = tool_of(fn)
    assert tool.description == (
        "Get the weather forecast of a city.\n\n"
        "Use it when the user asks about rain, temperature\n"
        "or wind in the coming days."
    )
    assert tool.description_source == "docstring"
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city name."},
            "days": {"type": "integer", "description": "How many days, at most 7.", "default": 3},
            "unit": {"type": "string", "description": '"c" or "f".', "default": "c"},
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_docstring_starting_with_a_section() -> None:
    def f(x: int) -> None:
        """
        Args:
            x: The x.
        """

    tool = tool_of(f)
    assert tool.parameters["properties"] == {"x": {"type": "integer", "description": "The x."}}
    assert (tool.description, tool.description_source) == ("", "none")


def test_docstring_entry_for_an_unknown_or_injected_parameter_is_ignored() -> None:
    def f(x: int, **extra: str) -> None:
        """Do it.

        Args:
            x: The x.
            y: Not a parameter.
            extra: Extra labels.
        """

    assert tool_of(f).parameters == {
        "type": "object",
        "properties": {"x": {"type": "integer", "description": "The x."}},
        "required": ["x"],
        "additionalProperties": {"type": "string"},
    }


# ----------------------------------------------------------------------------------------
# Precedence: the most local source wins


def precedence(
    a: Annotated[str, Param(description="from Param")],
    b: Annotated[str, "from Annotated"],
    c: Annotated[str, Doc("from Doc")],
    d: Annotated[str, "from the ChatGLM3 triple", True],
    e: str,
    f: Annotated[str, Param(min_length=1)],
    g: Annotated[str, Param(description="first"), "second"],
    h: Annotated[str, "first", Param(description="second")],
    i: Annotated[Optional[int], "from Annotated"] = None,
) -> None:
    """Check the precedence.

    Args:
        a: from the docstring
        b: from the docstring
        c: from the docstring
        d: from the docstring
        e: from the docstring
        f: from the docstring
        g: from the docstring
        h: from the docstring
        i: from the docstring
    """


def test_precedence_most_local_wins() -> None:
    assert tool_of(precedence).parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "string", "description": "from Param"},
            "b": {"type": "string", "description": "from Annotated"},
            "c": {"type": "string", "description": "from Doc"},
            "d": {"type": "string", "description": "from the ChatGLM3 triple"},
            "e": {"type": "string", "description": "from the docstring"},  # the only source
            "f": {"type": "string", "minLength": 1, "description": "from the docstring"},
            "g": {"type": "string", "description": "second"},  # last in Annotated wins
            "h": {"type": "string", "description": "second"},
            "i": {
                "anyOf": [{"type": "integer"}, {"type": "null"}],
                "description": "from Annotated",
                "default": None,
            },
        },
        "required": ["a", "b", "c", "d", "e", "f", "g", "h"],
        "additionalProperties": False,
    }


def test_precedence_docstring_describes_a_class_typed_parameter() -> None:
    class Point(NamedTuple):
        x: float
        y: float

    def f(p: Point, q: Annotated[Point, "from Annotated"]) -> None:
        """Move.

        Args:
            p: from the docstring
            q: from the docstring
        """

    params = tool_of(f).parameters
    assert params["properties"] == {
        "p": {"$ref": "#/$defs/Point", "description": "from the docstring"},
        "q": {"$ref": "#/$defs/Point", "description": "from Annotated"},
    }


# ----------------------------------------------------------------------------------------
# Descriptions inside types: list items, dict values, TypedDict and dataclass fields


class Address(TypedDict):
    """A postal address.

    Args:
        street: from the class docstring
        city: from the class docstring
    """

    street: Annotated[str, "Street and number"]
    city: str
    zip_code: NotRequired[Annotated[str, Param(description="Postal code", pattern=r"^\d+$")]]
    note: NotRequired[Annotated[str, "A note"]]


@dataclasses.dataclass
class Contact:
    """Someone to call.

    Use the phone number first.

    Args:
        name: from the class docstring
    """

    name: str
    phone: Annotated[str, Doc("Phone number with country code")]
    tags: list[Annotated[str, "A tag"]] = dataclasses.field(default_factory=list)


def nested(
    tags: list[Annotated[str, "A tag, e.g. urgent"]],
    scores: dict[str, Annotated[float, "A score from 0 to 1"]],
    address: Address,
    contacts: Annotated[list[Contact], "People to call"],
) -> None:
    """Nested descriptions.

    Args:
        tags: The tags.
        scores: Scores by name.
    """


def test_descriptions_inside_types() -> None:
    assert tool_of(nested).parameters == {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string", "description": "A tag, e.g. urgent"},
                "description": "The tags.",
            },
            "scores": {
                "type": "object",
                "additionalProperties": {"type": "number", "description": "A score from 0 to 1"},
                "description": "Scores by name.",
            },
            "address": {"$ref": "#/$defs/Address"},
            "contacts": {
                "type": "array",
                "items": {"$ref": "#/$defs/Contact"},
                "description": "People to call",
            },
        },
        "required": ["tags", "scores", "address", "contacts"],
        "additionalProperties": False,
        "$defs": {
            "Address": {
                "description": "A postal address.",
                "type": "object",
                "properties": {
                    "street": {"type": "string", "description": "Street and number"},
                    "city": {"type": "string", "description": "from the class docstring"},
                    "zip_code": {
                        "type": "string",
                        "pattern": r"^\d+$",
                        "description": "Postal code",
                    },
                    "note": {"type": "string", "description": "A note"},
                },
                "required": ["street", "city"],
                "additionalProperties": False,
            },
            "Contact": {
                "description": "Someone to call.\n\nUse the phone number first.",
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "from the class docstring"},
                    "phone": {"type": "string", "description": "Phone number with country code"},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string", "description": "A tag"},
                    },
                },
                "required": ["name", "phone"],
                "additionalProperties": False,
            },
        },
    }


def test_generated_dataclass_docstring_is_not_a_description() -> None:
    @dataclasses.dataclass
    class Plain:
        x: int

    def f(p: Plain) -> None: ...

    assert tool_of(f).parameters["$defs"] == {
        "Plain": {
            "type": "object",
            "properties": {"x": {"type": "integer"}},
            "required": ["x"],
            "additionalProperties": False,
        }
    }


# ----------------------------------------------------------------------------------------
# The tool description


def no_docstring(x: int) -> None: ...


def one_line(x: int) -> None:
    """Add one to x."""


def only_sections(x: int) -> int:
    """Args:
        x: The x.

    Returns:
        x + 1.
    """
    return x + 1


TOOL_DESCRIPTIONS = [
    pytest.param(no_docstring, {}, "", "none", id="no-docstring"),
    pytest.param(one_line, {}, "Add one to x.", "docstring", id="one-line"),
    pytest.param(only_sections, {}, "", "none", id="only-sections"),
    pytest.param(d_google, {}, None, "docstring", id="google-sections-removed"),
    pytest.param(one_line, {"description": "Given."}, "Given.", "argument", id="option-wins"),
    pytest.param(no_docstring, {"description": "Given."}, "Given.", "argument", id="option"),
    pytest.param(one_line, {"description": ""}, "", "argument", id="option-empty-on-purpose"),
]


@pytest.mark.parametrize(("fn", "options", "description", "source"), TOOL_DESCRIPTIONS)
def test_tool_description(
    fn: Callable[..., Any], options: dict[str, Any], description: str | None, source: str
) -> None:
    tool = tool_of(fn, **options)
    if description is None:  # the long google docstring: no section text may leak
        for leaked in ("Args", "Returns", "Raises", "The city name", "ValueError"):
            assert leaked not in tool.description
        assert tool.description.startswith("Get the weather forecast of a city.")
    else:
        assert tool.description == description
    assert tool.description_source == source


def test_description_option_does_not_change_parameter_descriptions() -> None:
    tool = tool_of(s_google, description="Something else.")
    assert tool.description == "Something else."
    assert tool.parameters["properties"]["city"] == {
        "type": "string",
        "description": "City name, e.g. Beijing",
    }


def test_callable_object_uses_its_class_docstring() -> None:
    class Search:
        """Search the catalogue.

        Args:
            query: Words to look for.
        """

        def __call__(self, query: str) -> list[str]:
            raise NotImplementedError

    tool = tool_of(Search(), name="search")
    assert (tool.description, tool.description_source) == ("Search the catalogue.", "docstring")
    assert tool.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Words to look for."}},
        "required": ["query"],
        "additionalProperties": False,
    }


def test_bound_method_uses_its_docstring() -> None:
    class Shop:
        def price(self, item: str) -> float:
            """Price of an item.

            Args:
                item: The item name.
            """
            raise NotImplementedError

    tool = tool_of(Shop().price)
    assert (tool.name, tool.description) == ("price", "Price of an item.")
    assert tool.parameters == {
        "type": "object",
        "properties": {"item": {"type": "string", "description": "The item name."}},
        "required": ["item"],
        "additionalProperties": False,
    }
