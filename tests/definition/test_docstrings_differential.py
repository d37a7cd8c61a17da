"""Our docstring parser against docstring-parser, over real documented functions.

The functions of a few large installed packages (the SDK, pydantic, hypothesis,
OpenTelemetry, ...) are parsed by both; the parameter descriptions must agree for at least
99% of the docstrings that have any. docstring-parser is asked in the style our parser
detected (its own auto-detection picks whichever style yields the most), docstrings it
cannot read in that style are left out, and its representation is normalized where ours
differs by design: `a, b : int` is two parameters, `Attributes:` are not parameters.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Iterator
from types import ModuleType

import docstring_parser
import pytest

from toolreg.definition.docstrings import parse_docstring

PACKAGES = ("openai", "pydantic", "hypothesis", "opentelemetry", "jsonschema", "httpx", "anyio")
STYLES = {
    "google": docstring_parser.DocstringStyle.GOOGLE,
    "numpy": docstring_parser.DocstringStyle.NUMPYDOC,
    "rest": docstring_parser.DocstringStyle.REST,
    "epydoc": docstring_parser.DocstringStyle.EPYDOC,
}


def _modules(name: str) -> Iterator[ModuleType]:
    """The package and every module below it that imports here.

    A module that fails to import in any way is passed over, a package with it: openai's
    `helpers` package raises its own MissingDependencyError (not an ImportError) where numpy
    is absent, which `pkgutil.walk_packages` would let escape, so the walk is done here.
    """
    try:
        module = importlib.import_module(name)
    except BaseException:  # optional dependencies missing, platform modules...
        return
    yield module
    for info in pkgutil.iter_modules(getattr(module, "__path__", None) or [], name + "."):
        if any(part in info.name for part in ("test", "conftest", "__main__", "cli")):
            continue
        yield from _modules(info.name)


def _docstrings() -> list[str]:
    seen: set[int] = set()
    docs: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for package in PACKAGES:
            for module in _modules(package):
                for value in list(vars(module).values()):
                    candidates = [value]
                    if inspect.isclass(value):
                        candidates += [v for v in vars(value).values() if inspect.isfunction(v)]
                    for fn in candidates:
                        if (
                            inspect.isfunction(fn)
                            and fn.__doc__
                            and id(fn) not in seen
                            and str(getattr(fn, "__module__", "")).startswith(package)
                        ):
                            seen.add(id(fn))
                            docs.append(fn.__doc__)
    return docs


def _reference(doc: str, style: str) -> dict[str, str] | None:
    try:
        parsed = docstring_parser.parse(doc, style=STYLES[style]) if style in STYLES else None
        parsed = parsed or docstring_parser.parse(doc)
    except Exception:
        return None  # docstring-parser cannot read it: nothing to compare with
    params: dict[str, str] = {}
    for p in parsed.params:
        if p.args and p.args[0] == "attribute":
            continue
        for name in (n.strip().lstrip("*") for n in p.arg_name.split(",")):
            if p.description and name.isidentifier() and name not in params:
                params[name] = " ".join(p.description.split())
    return params


@pytest.mark.slow
def test_parameter_descriptions_agree_with_docstring_parser() -> None:
    compared = agreed = 0
    disagreements: list[str] = []
    for doc in _docstrings():
        ours = parse_docstring(doc)
        reference = _reference(doc, ours.style)
        if reference is None or (not reference and not ours.params):
            continue
        compared += 1
        if dict(ours.params) == reference:
            agreed += 1
        elif len(disagreements) < 5:
            disagreements.append(doc[:300])
    assert compared >= 1000, f"only {compared} documented functions found"
    assert agreed / compared >= 0.99, (agreed, compared, disagreements)


# -- the rules the differential test found ------------------------------------------------------


def test_an_example_after_the_last_entry_at_the_sections_indentation_is_not_part_of_it() -> None:
    # As generated docstrings often are: the header on the first line, and a closing fence at
    # column 0, so cleaning leaves the body as it is: the example sits at the section's own
    # indentation (less than the entries'), and belongs to no parameter.
    doc = (
        "Args:\n"
        "        size: How big it is.\n"
        "        mode: How it runs.\n\n"
        "    ```python\n"
        '    >>> configure(size=3, mode="fast")\n'
        "```"
    )
    assert dict(parse_docstring(doc).params) == {"size": "How big it is.", "mode": "How it runs."}


def test_a_section_header_inside_the_block_is_not_a_parameter() -> None:
    doc = """Make a config.

    Args:
        vocab_size: The vocabulary size.
        Returns:
            A config.
        Example:
            make(1)
    """
    info = parse_docstring(doc)
    assert dict(info.params) == {"vocab_size": "The vocabulary size."}


def test_a_parameter_documented_twice_keeps_its_first_description() -> None:
    doc = """Pad.

    Args:
        padding: Activates padding.
        max_length: The maximum length.
        padding: Something else entirely.
    """
    assert dict(parse_docstring(doc).params) == {
        "padding": "Activates padding.",
        "max_length": "The maximum length.",
    }


def test_a_type_with_trailing_punctuation_before_the_colon() -> None:
    doc = """Mask.

    Args:
        mask_time_min_masks (`int`, *optional*, defaults to 2),:
            The minimum number of masks.
    """
    assert dict(parse_docstring(doc).params) == {
        "mask_time_min_masks": "The minimum number of masks."
    }
