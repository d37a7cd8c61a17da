"""Docstring parsing: every supported style, detection, and never raising."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg.definition import docstrings as _docstrings
from toolreg.definition.docstrings import EMPTY_DOC, DocInfo, parse_docstring

# (id, docstring, summary, params, returns, style)
CASES: list[tuple[str, str | None, str, dict[str, str], str | None, str]] = [
    # --- no docstring / plain prose
    ("none", None, "", {}, None, "plain"),
    ("empty", "", "", {}, None, "plain"),
    ("blank", "   \n  \n", "", {}, None, "plain"),
    ("one-liner", "Get the weather.", "Get the weather.", {}, None, "plain"),
    ("one-liner-padded", "  Get the weather.  ", "Get the weather.", {}, None, "plain"),
    (
        "plain-long",
        """Get the weather.

        Use it when the user asks about rain,
        temperature or wind.

        Third paragraph.
        """,
        "Get the weather.\n\nUse it when the user asks about rain,\ntemperature or wind."
        "\n\nThird paragraph.",
        {},
        None,
        "plain",
    ),
    (
        "plain-trailing-spaces",
        "Summary.   \n  \n    Details.  \n",
        "Summary.\n\nDetails.",
        {},
        None,
        "plain",
    ),
    (
        "plain-extra-blank-lines",
        "Summary.\n\n\n\n    Details.\n",
        "Summary.\n\nDetails.",
        {},
        None,
        "plain",
    ),
    (
        "plain-mentions-args",
        """Forward the call.

        Args: and keyword arguments are passed through unchanged. Returns: nothing.
        See the Parameters section of the server's manual.
        """,
        "Forward the call.\n\nArgs: and keyword arguments are passed through unchanged. "
        "Returns: nothing.\nSee the Parameters section of the server's manual.",
        {},
        None,
        "plain",
    ),
    (
        "plain-header-not-followed-by-indented-block",
        "Forward the call.\n\nNote:\nthis is prose, not a section.",
        "Forward the call.\n\nNote:\nthis is prose, not a section.",
        {},
        None,
        "plain",
    ),
    (
        "plain-unknown-title",
        "Forward the call.\n\nUsage:\n    forward(x)",
        "Forward the call.\n\nUsage:\n    forward(x)",
        {},
        None,
        "plain",
    ),
    ("plain-chinese", "获取城市的天气。", "获取城市的天气。", {}, None, "plain"),
    (
        "plain-crlf",
        "Line one.\r\n\r\n    Line two.\r\n",
        "Line one.\n\nLine two.",
        {},
        None,
        "plain",
    ),
    # --- Google
    (
        "google-params-untyped",
        """Get the weather.

        Args:
            city: The city.
            unit: The unit.
        """,
        "Get the weather.",
        {"city": "The city.", "unit": "The unit."},
        None,
        "google",
    ),
    (
        "google-full",
        """Get the weather.

        Look the weather up for a city.

        It uses the public API.

        Args:
            city (str): The city,
                e.g. Beijing.
            unit (str, optional): The unit.
            days(int):
                How many days.
            *args: Extra positional values.
            **kwargs (Any): Extra options.

        Returns:
            dict: The weather,
                as a mapping.

        Raises:
            ValueError: If the city is unknown.

        Examples:
            >>> get_weather("Beijing")
            {'temp': 18}
        """,
        "Get the weather.\n\nLook the weather up for a city.\n\nIt uses the public API.",
        {
            "city": "The city, e.g. Beijing.",
            "unit": "The unit.",
            "days": "How many days.",
            "args": "Extra positional values.",
            "kwargs": "Extra options.",
        },
        "The weather, as a mapping.",
        "google",
    ),
    (
        "google-aliases-and-case",
        """Sum.

        ARGUMENTS:

            a: First.
            b (Dict[str, tuple(int, int)]): Second.

        Return:
            Dict[str, int]: The sum.
        """,
        "Sum.",
        {"a": "First.", "b": "Second."},
        "The sum.",
        "google",
    ),
    (
        "google-keyword-args-section",
        "Run.\n\nParameters:\n    x: X.\n\nKeyword Args:\n    timeout: Seconds.",
        "Run.",
        {"x": "X.", "timeout": "Seconds."},
        None,
        "google",
    ),
    (
        "google-returns-without-type",
        "Run.\n\nReturns:\n    The weather: a mapping, see http://example.com.",
        "Run.",
        {},
        "The weather: a mapping, see http://example.com.",
        "google",
    ),
    (
        "google-raises-examples-only",
        """Divide two numbers.

        Raises:
            ZeroDivisionError: When b is 0.

        Example:
            >>> divide(1, 2)
        """,
        "Divide two numbers.",
        {},
        None,
        "google",
    ),
    (
        "google-notes-before-args",
        "Run.\n\nNote:\n    Slow.\n\nArgs:\n    x: X.\n\nTrailing prose is dropped.",
        "Run.",
        {"x": "X."},
        None,
        "google",
    ),
    (
        "google-chinese",
        """获取天气。

        Args:
            city: 城市名称
            unit (str)：温度单位，
                c 或 f
        """,
        "获取天气。",
        {"city": "城市名称", "unit": "温度单位， c 或 f"},
        None,
        "google",
    ),
    (
        "google-no-summary",
        """
        Args:
            city: The city.
        """,
        "",
        {"city": "The city."},
        None,
        "google",
    ),
    (
        "google-header-on-opening-line",
        """Args:
            city: The city.

        Returns:
            The weather.
        """,
        "",
        {"city": "The city."},
        "The weather.",
        "google",
    ),
    (
        "google-loose-lines",
        """Run.

        Args:
            x: First line
            continued at the same indentation.
            : not a parameter
        """,
        "Run.",
        {"x": "First line continued at the same indentation. : not a parameter"},
        None,
        "google",
    ),
    # --- NumPy
    (
        "numpy-full",
        """Get the weather.

        Look the weather up for a city.

        Parameters
        ----------
        city : str
            The city,
            e.g. Beijing.
        unit
            The unit.
        lat, lon : float
            The coordinates.
        *args
            Extra values.
        **kwargs : dict
            Extra options.

        Returns
        -------
        dict
            The weather,
            as a mapping.

        Raises
        ------
        ValueError
            If the city is unknown.

        Examples
        --------
        >>> get_weather("Beijing")
        """,
        "Get the weather.\n\nLook the weather up for a city.",
        {
            "city": "The city, e.g. Beijing.",
            "unit": "The unit.",
            "lat": "The coordinates.",
            "lon": "The coordinates.",
            "args": "Extra values.",
            "kwargs": "Extra options.",
        },
        "The weather, as a mapping.",
        "numpy",
    ),
    (
        "numpy-returns-only-prose",
        "Run.\n\nReturns\n-------\nThe weather.\n\nNotes\n-----\nSlow.",
        "Run.",
        {},
        "The weather.",
        "numpy",
    ),
    (
        "numpy-lines-that-are-not-entries",
        """Run.

        Parameters
        ----------
        system : tuple
        One of:
        * ``(num, den)``: a fraction.
        x
            X.
        """,
        "Run.",
        {"x": "X."},
        None,
        "numpy",
    ),
    (
        "numpy-chinese",
        "获取天气。\n\nParameters\n----------\ncity: str\n    城市名称\n",
        "获取天气。",
        {"city": "城市名称"},
        None,
        "numpy",
    ),
    # --- reST / Sphinx
    (
        "rest-full",
        """Get the weather.

        Look the weather up for a city.

        :param city: The city,
            e.g. Beijing.
        :param str unit: The unit.
        :type city: str
        :parameter days:
            How many days.
        :param *args: Extra values.
        :keyword timeout: Seconds.
        :returns: The weather,
            as a mapping.
        :rtype: dict
        :raises ValueError: If the city is unknown.
        """,
        "Get the weather.\n\nLook the weather up for a city.",
        {
            "city": "The city, e.g. Beijing.",
            "unit": "The unit.",
            "days": "How many days.",
            "args": "Extra values.",
            "timeout": "Seconds.",
        },
        "The weather, as a mapping.",
        "rest",
    ),
    (
        "rest-return-and-raises-only",
        "Run.\n\n:return: Nothing useful.\n:raises KeyError: Never.",
        "Run.",
        {},
        "Nothing useful.",
        "rest",
    ),
    (
        "rest-chinese",
        "获取天气。\n\n:param city: 城市名称\n:returns: 天气",
        "获取天气。",
        {"city": "城市名称"},
        "天气",
        "rest",
    ),
    (
        "rest-inline-role-is-prose",
        "Return a :class:`Tool`.\n:class:`Tool` objects are frozen.",
        "Return a :class:`Tool`.\n:class:`Tool` objects are frozen.",
        {},
        None,
        "plain",
    ),
    # --- Epydoc
    (
        "epydoc-full",
        """Get the weather.

        Look the weather up for a city.

        @param city: The city,
            e.g. Beijing.
        @type city: str
        @param unit: The unit.
        @kwarg timeout: Seconds.
        @return: The weather.
        @rtype: dict
        @raise ValueError: If the city is unknown.
        """,
        "Get the weather.\n\nLook the weather up for a city.",
        {"city": "The city, e.g. Beijing.", "unit": "The unit.", "timeout": "Seconds."},
        "The weather.",
        "epydoc",
    ),
    (
        "epydoc-chinese",
        "获取天气。\n\n@param city: 城市名称\n@returns: 天气",
        "获取天气。",
        {"city": "城市名称"},
        "天气",
        "epydoc",
    ),
]


@pytest.mark.parametrize(
    ("doc", "summary", "params", "returns", "style"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_parse_docstring(
    doc: str | None, summary: str, params: dict[str, str], returns: str | None, style: str
) -> None:
    info = parse_docstring(doc)
    assert info.summary == summary
    assert dict(info.params) == params
    assert info.returns == returns
    assert info.style == style


@pytest.mark.parametrize(
    ("doc", "style"),
    [
        ("Summary.\n\nArgs:\n    x: X.", "google"),
        ("Summary.\n\nParameters\n----------\nx : int\n    X.", "numpy"),
        ("Summary.\n\n:param x: X.", "rest"),
        ("Summary.\n\n@param x: X.", "epydoc"),
    ],
)
def test_summary_and_params_have_no_section_text(doc: str, style: str) -> None:
    info = parse_docstring(doc)
    assert (info.summary, dict(info.params), info.style) == ("Summary.", {"x": "X."}, style)


def test_first_marker_decides_the_style() -> None:
    info = parse_docstring("Run.\n\n:param x: X.\n\nArgs:\n    y: Y.")
    assert info.style == "rest"
    assert info.summary == "Run."


def test_empty_doc() -> None:
    assert parse_docstring(None) is EMPTY_DOC
    assert parse_docstring("") is EMPTY_DOC
    assert DocInfo(summary="", params={}, returns=None, style="plain") == EMPTY_DOC


def test_result_is_immutable() -> None:
    info = parse_docstring("Run.\n\nArgs:\n    x: X.")
    with pytest.raises(AttributeError):
        info.summary = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        info.params["x"] = "changed"  # type: ignore[index]


@pytest.mark.parametrize(
    "doc",
    [
        "Args:",
        "Args:\n",
        "Args:\n    ",
        "Run.\n\nArgs:\n    (((\n    :::\n    ***: x",
        "Parameters\n----------",
        "Parameters\n----------\n: int\n    orphan",
        ":param:",
        ":param : nothing",
        "@param",
        "\t\tArgs:\n\t\t\tx: y",
        "--\n:\n@\n",
        "\x00\n\ufeff Args:\n  x: y",
    ],
)
def test_odd_input_never_raises(doc: str) -> None:
    assert isinstance(parse_docstring(doc), DocInfo)


_PIECES = st.sampled_from(
    ["Args:", "Returns:", "    x: X", "    x (int): y", "Parameters", "----------", "x : int",
     "    desc", ":param x: y", ":returns: z", "@param x: y", "@return: r", "", "  ", "\t",
     "prose", "city：城市", ":", "--", "\r\n", "*", "(", ")", "    *args:", "  (a(b)):"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=16))
def test_any_text_never_raises(parts: list[str]) -> None:
    info = parse_docstring("\n".join(parts))
    assert info.style in {"google", "numpy", "rest", "epydoc", "plain"}
    assert all(name.isidentifier() and desc for name, desc in info.params.items())


def test_not_a_string_gives_empty_doc() -> None:
    assert parse_docstring(42) is EMPTY_DOC  # type: ignore[arg-type]


DOC_FOR_FALLBACK = """Run.

    Args:
        x: X.
    """


def test_parser_failure_falls_back_to_docstring_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(_docstrings, "_parse_google", boom)
    assert parse_docstring(DOC_FOR_FALLBACK) == DocInfo("Run.", {"x": "X."}, None, "plain")


def test_fallback_failure_degrades_to_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    import docstring_parser

    def boom(*args: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(_docstrings, "_parse_google", boom)
    monkeypatch.setattr(docstring_parser, "parse", boom)
    expected = DocInfo("Run.\n\nArgs:\n    x: X.", {}, None, "plain")
    assert parse_docstring(DOC_FOR_FALLBACK) == expected


def _modules_after(code: str) -> str:
    script = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout


def test_import_does_not_import_docstring_parser() -> None:
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import toolreg.definition.docstrings, sys; "
            "assert 'docstring_parser' not in sys.modules",
        ],
        check=True,
    )


@pytest.mark.parametrize(
    "doc",
    [
        "Get the weather.",
        "Get the weather.\n\n    Longer text.\n    ",
        "Run.\n\nArgs:\n    x: X.\n\nReturns:\n    int: Y.",
        "Run.\n\nParameters\n----------\nx : int\n    X.",
        "Run.\n\n:param x: X.",
        "Run.\n\n@param x: X.",
    ],
)
def test_parsing_does_not_import_docstring_parser(doc: str) -> None:
    code = f"from toolreg.definition.docstrings import parse_docstring\nparse_docstring({doc!r})"
    assert "docstring_parser" not in _modules_after(code).split()
