"""A callable -> ordered parameter records: signature, resolved hints, `Annotated` split."""

from __future__ import annotations

import copy
import functools
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from ..errors import ToolDefinitionError, with_article
from ..params import EMPTY_PARAM, UNSET, Param, ToolContext, _InjectedMarker
from ..types import ANNOTATED_ORIGINS, LITERAL_ORIGINS, extension_form

__all__ = [
    "MISSING",
    "ParamRecord",
    "Signature",
    "describe_callable",
    "qualified_name",
    "resolve_hints",
    "split_annotated",
    "wrapped_function",
]

MISSING: Any = inspect.Parameter.empty

InjectKind = Literal["context", "raw"]

_P = inspect.Parameter


class ParamRecord(NamedTuple):
    """One parameter as toolreg sees it (a NamedTuple: immutable and cheap to build)."""

    name: str
    annotation: Any  # the bare type, outer Annotated removed
    param: Param  # merged metadata from Annotated
    default: Any  # MISSING when there is none
    required: bool
    positional_only: bool = False
    var_keyword: bool = False
    inject: InjectKind | None = None
    # What the call gets when the model leaves the argument out and the function declares no
    # default of its own: a `Field(default=...)` / `default_factory` in the metadata.
    fill: Callable[[], Any] | None = None


class Signature(NamedTuple):
    """Everything `Tool.from_function` needs from a callable."""

    qualname: str
    params: tuple[ParamRecord, ...]
    doc: str | None
    is_async: bool


def qualified_name(fn: object) -> str:
    fn = wrapped_function(fn)
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    name = name or type(fn).__qualname__  # a callable object: its class
    return f"{module}.{name}" if module and module != "builtins" else str(name)


_MAX_PARTIALS = 32  # partials of partials looked through, at most


def wrapped_function(fn: Any) -> Any:
    """The function a `functools.partial` (or a partial of a partial) wraps; `fn` itself when
    it is no partial. Its name and docstring are the tool's (as LangChain reads them)."""
    for _ in range(_MAX_PARTIALS):
        if not isinstance(fn, functools.partial):
            return fn
        fn = fn.func
    return fn


def _is_annotated(tp: object) -> bool:
    # typing_extensions.Annotated is typing's on every supported Python: one alias class
    return type(tp).__name__ == "_AnnotatedAlias" and typing.get_origin(tp) in ANNOTATED_ORIGINS


def split_annotated(tp: Any) -> tuple[Any, Param]:
    """`Annotated[T, *meta]` -> (T, merged Param). Anything else -> (tp, empty Param)."""
    if not _is_annotated(tp):
        return tp, EMPTY_PARAM
    param = EMPTY_PARAM
    for meta in tp.__metadata__:
        param = param.merged(_param_from_meta(meta))
    return tp.__origin__, param


def _param_from_meta(meta: object) -> Param:
    if isinstance(meta, Param):
        return meta
    if isinstance(meta, str):
        return Param(description=meta)
    if isinstance(meta, bool):  # ChatGLM3: Annotated[T, "description", required]
        return Param(required=meta)
    if meta is _InjectedMarker or isinstance(meta, _InjectedMarker):
        return Param(injected=True)
    doc = extension_form("Doc")  # typing_extensions.Doc, once the application loaded it
    if doc is not None and isinstance(meta, doc):
        return Param(description=meta.documentation)
    if meta is None:  # e.g. pydantic's conint() leaves a None where `strict` would go
        return EMPTY_PARAM
    module = type(meta).__module__
    if module.startswith("annotated_types"):
        return _from_annotated_types(meta)
    if module.startswith("pydantic"):
        return _from_pydantic(meta)
    return Param(ignored=(_describe(meta),))


_ANNOTATED_TYPES_FIELDS = {
    "Gt": "gt",
    "Ge": "ge",
    "Lt": "lt",
    "Le": "le",
    "MultipleOf": "multiple_of",
    "MinLen": "min_length",
    "MaxLen": "max_length",
}
_GROUPED_FIELDS = {
    "Interval": ("gt", "ge", "lt", "le"),
    "Len": ("min_length", "max_length"),
}


def _from_annotated_types(meta: object) -> Param:
    """Constraints from the `annotated_types` package."""
    kind = type(meta).__name__
    if kind in _ANNOTATED_TYPES_FIELDS:
        attr = _ANNOTATED_TYPES_FIELDS[kind]
        return Param(**{attr: getattr(meta, attr)})
    if kind in _GROUPED_FIELDS:
        values = {n: getattr(meta, n, None) for n in _GROUPED_FIELDS[kind]}
        return Param(**{k: v for k, v in values.items() if v is not None})
    return Param(ignored=(_describe(meta),))  # Predicate, Timezone, ...: not in a schema


def _from_pydantic(meta: Any) -> Param:
    """pydantic's `Field(...)` and the constraint groups of `constr()`, `conlist()`...: read
    like `Param`. What toolreg cannot express (validators, `strict`) is reported as ignored."""
    kind = type(meta).__name__
    if kind == "FieldInfo":
        param = Param(
            description=meta.description,
            title=meta.title,
            examples=meta.examples,
            extra=dict(meta.json_schema_extra) if isinstance(meta.json_schema_extra, dict) else {},
            default=UNSET if _pydantic_undefined(meta.default) else meta.default,
            default_factory=meta.default_factory,
        )
        for item in meta.metadata:
            param = param.merged(_param_from_meta(item))
        return param
    if kind == "_PydanticGeneralMetadata":
        known = {k: v for k, v in vars(meta).items() if k in ("pattern",) and v is not None}
        rest = {k: v for k, v in vars(meta).items() if k not in known and v is not None}
        return Param(**known, ignored=tuple(f"{k}={v!r}" for k, v in rest.items()))
    try:  # StringConstraints and other groups: the constraints they stand for
        items = list(meta) if hasattr(type(meta), "__iter__") else None
    except Exception:
        items = None
    if items is not None:
        param = EMPTY_PARAM
        for item in items:
            param = param.merged(_param_from_meta(item))
        return param
    return Param(ignored=(_describe(meta),))


def _pydantic_undefined(value: object) -> bool:
    return type(value).__name__ == "PydanticUndefinedType"


def _describe(meta: object) -> str:
    """Metadata toolreg ignored, as `toolreg lint` shows it."""
    try:
        text = repr(meta)
    except Exception:
        text = type(meta).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def resolve_hints(
    obj: Any, owner: str, parameter: str | None = None, *, callable_: bool = False
) -> dict[str, Any]:
    """`get_type_hints` with extras, turning a failure into a definition error.

    `parameter` (for a class's fields: the parameter whose type it is) is named in the error;
    otherwise the parameter whose annotation mentions the unknown name is found and named.
    With `callable_`, only parameter annotations are read (see `_hint_source`).
    """
    try:
        if callable_:
            raw = _parameter_annotations(obj)
            if type(raw) is dict and not any(map(_needs_evaluation, raw.values())):
                return raw  # nothing to evaluate: what get_type_hints would return, cheaper
        source = _hint_source(obj, raw) if callable_ else obj
        hints = typing.get_type_hints(source, include_extras=True)
        if sys.version_info < (3, 11):  # 3.10 leaves the "Node" of list["Node"] a string
            hints = {k: _resolve_nested(v, *_namespaces(source)) for k, v in hints.items()}
        return hints
    except NameError as exc:
        name = getattr(exc, "name", None) or str(exc)
        field = _annotation_mentioning(obj, name)
        where = ".".join(p for p in (parameter, field) if p) or None
        raise ToolDefinitionError(
            f"cannot resolve the type hint {name!r}: no such name where the annotation "
            "was written (a forward reference to a missing, misspelt or local name)",
            function=owner,
            parameter=where,
            fix=f"define or import {name} at module level before registering",
        ) from exc
    except Exception as exc:
        raise ToolDefinitionError(
            f"cannot resolve type hints ({type(exc).__name__}: {exc})",
            function=owner,
            parameter=parameter,
            fix="check the annotations for typos or names that do not exist",
        ) from exc


def _is_plain_class(tp: Any) -> bool:
    """A class, not a parameterized generic (`list[int]` passes `isinstance(_, type)` on
    some Pythons): nothing inside it to evaluate or to look through."""
    return type(tp) is not types.GenericAlias and isinstance(tp, type)


def _needs_evaluation(tp: Any, depth: int = 0) -> bool:
    """Whether `get_type_hints` would change `tp`: it is, or holds, a string annotation."""
    if _is_plain_class(tp):
        return False  # a plain class: `str`, `int`, a dataclass, an Enum
    if isinstance(tp, (str, typing.ForwardRef)) or depth > 8:
        return True
    if _is_annotated(tp):
        return _needs_evaluation(tp.__origin__, depth + 1)  # the metadata is never evaluated
    if typing.get_origin(tp) in LITERAL_ORIGINS:
        return False
    return any(_needs_evaluation(arg, depth + 1) for arg in typing.get_args(tp))


def _namespaces(obj: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The globals (and locals) `get_type_hints` evaluates `obj`'s annotations in."""
    if isinstance(obj, type):
        module = sys.modules.get(obj.__module__)
        return dict(vars(module)) if module else {}, dict(vars(obj))
    return getattr(obj, "__globals__", {}), None


def _resolve_nested(tp: Any, globalns: dict[str, Any], localns: dict[str, Any] | None) -> Any:
    """Python 3.10: evaluate the strings left inside builtin generics, e.g. `list["Node"]`."""
    if isinstance(tp, str):
        holder = types.SimpleNamespace(__annotations__={"_": tp})
        return typing.get_type_hints(holder, globalns, localns, include_extras=True)["_"]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if not args or origin in LITERAL_ORIGINS:
        return tp
    if _is_annotated(tp):
        inner = _resolve_nested(args[0], globalns, localns)
        params = (inner, *tp.__metadata__)
        return tp if inner is args[0] else typing.Annotated[params]
    new = tuple(a if a is Ellipsis else _resolve_nested(a, globalns, localns) for a in args)
    if all(a is b for a, b in zip(new, args)):
        return tp
    if origin in (typing.Union, types.UnionType):
        return typing.Union[new]
    if isinstance(tp, types.GenericAlias):
        return types.GenericAlias(origin, new)
    copy_with = getattr(tp, "copy_with", None)  # typing.List[...], NotRequired[...], ...
    return copy_with(new) if copy_with is not None else tp


def _annotation_mentioning(obj: Any, name: str) -> str | None:
    """The first annotated name whose (string) annotation mentions `name`."""
    word = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
    try:
        annotations = getattr(getattr(obj, "__func__", obj), "__annotations__", None)
    except Exception:  # Python 3.14 evaluates annotations lazily, and may fail again
        return None
    if not isinstance(annotations, dict):
        return None
    for key, value in annotations.items():
        text = value if isinstance(value, str) else repr(value)  # list['Node'] on 3.10
        if word.search(text):
            return str(key)
    return None


def _hint_source(fn: Any, annotations: Any) -> Any:
    """What `get_type_hints` should read for `fn`: its parameter annotations only (as
    `_parameter_annotations` read them).

    The return annotation is left out (it is not part of the tool's schema, so a forward
    reference in it must not block registration), and so is Python 3.10's implicit
    `Optional` for a `= None` default (3.11+ does not add it): the same function gets the
    same schema on every supported version.
    """
    func = getattr(fn, "__func__", fn)  # a bound method
    if not inspect.isfunction(func):
        return fn
    source = types.SimpleNamespace(
        __annotations__=annotations,
        __globals__=getattr(inspect.unwrap(func), "__globals__", {}),
        __module__=getattr(func, "__module__", None),
    )
    type_params = getattr(func, "__type_params__", ())
    if type_params:  # Python 3.12+ `def f[T](...)`
        source.__type_params__ = type_params
    return source


def _parameter_annotations(fn: Any) -> Any:
    """A function's parameter annotations as written, without `return` (read first: when none
    needs evaluating, they are the hints, and no source for `get_type_hints` is built)."""
    func = getattr(fn, "__func__", fn)
    if not inspect.isfunction(func):
        return getattr(fn, "__annotations__", None)
    raw = getattr(func, "__annotations__", None) or {}
    return {k: v for k, v in raw.items() if k != "return"}


def _hides_injection(tp: Any, depth: int = 0) -> bool:
    """Whether an injection marker or `ToolContext` appears inside `tp` (not on its outside)."""
    if depth > 20 or _is_plain_class(tp):
        return False  # a plain class has no arguments to hide anything in
    for arg in typing.get_args(tp):
        if _is_context_type(arg) or (_is_annotated(arg) and split_annotated(arg)[1].injected):
            return True
        if _hides_injection(arg, depth + 1):
            return True
    return False


def _is_context_type(tp: object) -> bool:
    return tp is ToolContext or typing.get_origin(tp) is ToolContext


def _unwrap(fn: Callable[..., Any]) -> Any:
    target: Any = fn
    if not inspect.isfunction(target) and not inspect.ismethod(target):
        call = getattr(type(target), "__call__", None)  # noqa: B004 - a callable instance
        if call is not None and inspect.isfunction(call):
            return target.__call__
    return target


def describe_callable(fn: Callable[..., Any]) -> Signature:
    """Read the signature, hints and metadata of `fn` into plain records.

    A `functools.partial` is read as the function it wraps without the arguments it binds:
    those are the application's, and the model neither sees nor sets them.
    """
    owner = qualified_name(fn)
    if isinstance(fn, functools.partial):
        target, parameters = _partial_parameters(fn, owner)
    else:
        target = _unwrap(fn)
        try:
            parameters = _parameters(target)
        except (TypeError, ValueError) as exc:
            raise ToolDefinitionError(
                f"cannot read its signature ({exc})",
                function=owner,
                fix="register a plain Python function or a callable object with __call__",
            ) from exc
    hints = resolve_hints(target, owner, callable_=True)
    records = tuple(_record(*p, hints, owner, first=i == 0) for i, p in enumerate(parameters))
    is_async = inspect.iscoroutinefunction(target)
    raw = getattr(wrapped_function(fn), "__doc__", None)
    # The docstring as written (parse_docstring cleans it; cleaning twice loses the indentation
    # of a docstring that starts with a section such as "Args:"); else an inherited one.
    doc = raw if isinstance(raw, str) else inspect.getdoc(fn)
    return Signature(qualname=owner, params=records, doc=doc, is_async=is_async)


def _partial_parameters(
    fn: functools.partial[Any], owner: str
) -> tuple[Any, list[tuple[str, Any, Any]]]:
    """The function a partial wraps, and its parameters the partial leaves to the call:
    the positional arguments it binds take the first parameters away, its keyword arguments
    the parameters they name (a name the function does not have goes to its **kwargs)."""
    target = wrapped_function(fn)
    if isinstance(target, functools.partial):
        raise ToolDefinitionError(
            f"a functools.partial nested more than {_MAX_PARTIALS} deep",
            function=owner,
            fix="bind the arguments in one partial",
        )
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        raise ToolDefinitionError(
            f"a functools.partial of {_kind_of(target)}, not of a Python function: "
            "toolreg reads a tool's parameters, types and description from a function",
            function=owner,
            fix="wrap the call in a def with typed parameters and a docstring, "
            "or make a partial of such a function",
        )
    try:
        remaining = inspect.signature(fn).parameters  # checks what the partial binds
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(
            f"the partial's arguments do not fit the function ({exc})",
            function=owner,
            fix="bind only parameters the function has, each once",
        ) from exc
    bound = _bound_keywords(fn)
    return target, [(p.name, p.kind, p.default) for p in remaining.values() if p.name not in bound]


def _bound_keywords(fn: functools.partial[Any]) -> set[str]:
    """Every keyword a partial (and the partials it wraps) binds."""
    names: set[str] = set()
    current: Any = fn
    for _ in range(_MAX_PARTIALS):
        if not isinstance(current, functools.partial):
            break
        names.update(current.keywords)
        current = current.func
    return names


def _kind_of(value: object) -> str:
    """What a non-function is, in a few words: a class, a builtin, an instance of a class."""
    if isinstance(value, type):
        return f"the class {value.__qualname__}"
    if inspect.isbuiltin(value):
        return f"the builtin {getattr(value, '__qualname__', None) or repr(value)}"
    return f"{with_article(type(value).__qualname__)} object"


def _parameters(target: Any) -> list[tuple[str, Any, Any]]:
    """(name, kind, default) of each parameter, in `inspect.signature`'s order.

    A plain function is read from its code object: `inspect.signature` costs ~10 µs, a large
    share of a registration. Anything else (methods, wrapped functions, callable objects,
    builtins, a custom `__signature__`) goes through `inspect.signature`.
    """
    if (
        type(target) is not types.FunctionType
        or hasattr(target, "__wrapped__")
        or (hasattr(target, "__signature__"))
    ):
        return [(p.name, p.kind, p.default) for p in inspect.signature(target).parameters.values()]
    code, empty = target.__code__, _P.empty
    names, positional, keyword_only = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    defaults, kw_defaults = target.__defaults__ or (), target.__kwdefaults__ or {}
    first_default = positional - len(defaults)
    out: list[tuple[str, Any, Any]] = [
        (
            names[i],
            _P.POSITIONAL_ONLY if i < code.co_posonlyargcount else _P.POSITIONAL_OR_KEYWORD,
            defaults[i - first_default] if i >= first_default else empty,
        )
        for i in range(positional)
    ]
    rest = positional + keyword_only
    if code.co_flags & inspect.CO_VARARGS:
        out.append((names[rest], _P.VAR_POSITIONAL, empty))
        rest += 1
    for name in names[positional : positional + keyword_only]:
        out.append((name, _P.KEYWORD_ONLY, kw_defaults.get(name, empty)))
    if code.co_flags & inspect.CO_VARKEYWORDS:
        out.append((names[rest], _P.VAR_KEYWORD, empty))
    return out


def _record(
    name: str, kind: Any, default: Any, hints: dict[str, Any], owner: str, first: bool
) -> ParamRecord:
    if kind is _P.VAR_POSITIONAL:
        raise ToolDefinitionError(
            f"*{name} cannot be filled by a model, which sends named arguments only",
            function=owner,
            parameter=name,
            fix=f"replace *{name} with a named list parameter, e.g. {name}: list[str]",
        )
    if name not in hints and first and name in ("self", "cls"):
        raise ToolDefinitionError(
            f"'{name}' has no annotation: this looks like a method registered on the class "
            "(unbound), e.g. @register_tool on a method inside the class body",
            function=owner,
            parameter=name,
            fix="register the bound method of an instance, e.g. reg.register_tool(obj.method), "
            "or make it a @staticmethod or a module-level function",
        )
    if name not in hints:
        example = f"{name}: str" if kind is not _P.VAR_KEYWORD else f"**{name}: Any"
        raise ToolDefinitionError(
            "the parameter has no type annotation",
            function=owner,
            parameter=name,
            fix=f"annotate it, e.g. {example}",
        )
    annotation, param = split_annotated(hints[name])
    if _hides_injection(annotation):
        raise ToolDefinitionError(
            "Injected or ToolContext sits inside another type, where toolreg would not see "
            "it and the model could set the value",
            function=owner,
            parameter=name,
            fix="put it on the outside: Annotated[T | None, Injected] or ctx: ToolContext[T]",
        )
    inject: InjectKind | None = None
    if _is_context_type(annotation):
        inject = "context"
    elif param.injected:
        inject = "raw"
    fill: Callable[[], Any] | None = None
    if param.default is not UNSET or param.default_factory is not None:
        if default is not _P.empty or (param.default is not UNSET and param.default_factory):
            raise ToolDefinitionError(
                "the parameter has two defaults",
                function=owner,
                parameter=name,
                fix="give one: `= value` in the signature, or default= or default_factory= "
                "in its Field/Param",
            )
        if param.default is not UNSET:
            default = param.default  # advertised and checked like a signature's default
            fill = functools.partial(copy.deepcopy, default)  # a fresh value per call
        else:
            fill = param.default_factory
    required = default is _P.empty and fill is None if param.required is None else param.required
    var_keyword = kind is _P.VAR_KEYWORD
    return ParamRecord(  # positional: ParamRecord's field order
        name,
        annotation,
        param,
        default,
        required and inject is None and not var_keyword,
        kind is _P.POSITIONAL_ONLY,
        var_keyword,
        inject,
        fill,
    )
