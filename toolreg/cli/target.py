"""CLI targets -> a `ToolRegistry`: a file path, a module, `module:attribute`, an MCP
server's tools (`mcp:URL`, `mcp:'command args'`, mounted while the command runs), or an HTTP
API's (`openapi:URL` or `openapi:FILE`, its OpenAPI document's operations)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from ..errors import with_article
from ..registry import ToolRegistry, default_registry
from ..toolsets import Toolset

__all__ = [
    "TargetError",
    "function_label",
    "load_file",
    "load_module",
    "load_target",
    "readable",
    "require_mcp_extra",
    "sample_names",
    "sample_path",
]

# A target file is loaded as a module under a name made up for it; messages name the file
# instead. The file of each target module (also one that failed to load), by module name:
_MODULE_PREFIX = "_toolreg_target_"
_FILE_OF: dict[str, str] = {}


class TargetError(Exception):
    """A target that cannot be loaded; the message says how to fix it."""


def require_mcp_extra(what: str) -> None:
    """A TargetError that says how to install the `mcp` extra when it is missing: `what`
    begins the message (`toolreg serve needs`)."""
    try:
        from .. import mcp  # noqa: F401  the extra, loaded only by the commands that need it
    except ModuleNotFoundError as exc:
        raise TargetError(f"{what} the mcp extra: pip install 'toolreg[mcp]' ({exc})") from None


def sample_dir() -> Path | None:
    """The bundled samples (in a wheel) or the repository's `samples/` (in a checkout)."""
    package = Path(__file__).resolve().parent.parent  # toolreg/
    for candidate in (package / "_samples", package.parent / "samples"):
        if candidate.is_dir():
            return candidate
    return None


def sample_names() -> list[str]:
    folder = sample_dir()
    if folder is None:
        return []
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def sample_path(name: str) -> Path:
    folder = sample_dir()
    names = sample_names()
    if folder is None or name not in names:
        available = ", ".join(names) or "none found"
        raise TargetError(f"no sample named '{name}' (available: {available})")
    return folder / f"{name}.py"


def load_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise TargetError(f"no such file: {path}")
    name = f"{_MODULE_PREFIX}{path.stem}_{abs(hash(str(path.resolve())))}"
    _FILE_OF[name] = str(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot load {path} as Python code")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def function_label(qualified: str) -> str:
    """`module.qualname` (as toolreg's messages name a function) -> `file.py:qualname`, the
    module being the longest prefix that names a module with a file; else unchanged."""
    parts = qualified.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:cut])
        file = _module_file(name)
        if file and name.split(".")[0] != "toolreg":
            return f"{_file_label(file)}:{'.'.join(parts[cut:])}"
    return qualified


def _module_file(name: str) -> str | None:
    """The file of module `name`, also of one that failed to import; never runs a module."""
    if name in _FILE_OF:
        return _FILE_OF[name]
    if name in sys.modules:
        return getattr(sys.modules[name], "__file__", None)
    parent = name.rpartition(".")[0]
    if parent and parent not in sys.modules:
        return None  # finding it would import its parent
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.has_location else None


def _file_label(file: str) -> str:
    """`weather.py`; a package's `pkg/__init__.py`."""
    path = Path(file)
    return f"{path.parent.name}/{path.name}" if path.name == "__init__.py" else path.name


def readable(text: str) -> str:
    """`text` naming each function of a target module by its file: the module name made up
    for a target file (`_toolreg_target_weather_123.get_weather`), or a target module's
    (`samples.weather.get_weather`), becomes `weather.py:get_weather`."""
    if not _FILE_OF:
        return text
    names = "|".join(re.escape(n) for n in sorted(_FILE_OF, key=len, reverse=True))
    return re.sub(
        rf"(?<![\w./\\])({names})\.(?=\w)(?!py\b)",  # not in a path, not `x.py`
        lambda m: f"{_file_label(_FILE_OF[m[1]])}:",
        text,
    )


def _import(name: str) -> ModuleType:
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: the current folder first
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and spec.has_location:
            _FILE_OF[name] = spec.origin  # also when importing it fails
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise TargetError(
                f"cannot import '{name}' ({exc}); run from the folder that contains it, "
                "or pass a file path such as samples/weather.py"
            ) from exc
        raise


def _shared_registries() -> list[tuple[ToolRegistry, str]]:
    """The module-level registries a file fills without naming them, and how each is filled:
    toolreg's `register_tool`, and ChatGLM3's (when a target loaded `toolreg.compat.chatglm3`,
    which the CLI never imports itself)."""
    shared = [(default_registry, "toolreg.register_tool")]
    compat = sys.modules.get("toolreg.compat.chatglm3")
    found = getattr(compat, "registry", None)
    if isinstance(found, ToolRegistry):
        shared.append((found, "toolreg.compat.chatglm3.register_tool"))
    return shared


def _defined_in(module: ModuleType, registry: ToolRegistry) -> bool:
    """Whether `registry` holds a tool whose function `module` defines."""
    for tool in registry.tools():
        function = getattr(tool.function, "func", tool.function)  # a functools.partial's
        if getattr(function, "__module__", None) == module.__name__:
            return True
    return False


def _named_registries(module: ModuleType) -> dict[str, ToolRegistry]:
    """The module's attributes that are registries (the first name of each), by name."""
    named: dict[str, ToolRegistry] = {}
    for name, value in vars(module).items():
        if isinstance(value, ToolRegistry) and all(value is not r for r in named.values()):
            named[name] = value
    return named


def _registry_in(module: ModuleType, target: str) -> ToolRegistry:
    """The one registry of `module`: one it names (other than the default registry), or a
    shared one it registered its own functions in; several are an error naming each."""
    named = _named_registries(module)
    found: dict[int, tuple[ToolRegistry, str]] = {
        id(r): (r, f"{target}:{name}") for name, r in named.items() if r is not default_registry
    }
    for registry, how in _shared_registries():
        if id(registry) not in found and _defined_in(module, registry):
            found[id(registry)] = (registry, f"the functions registered with {how}")
    candidates = list(found.values())
    with_tools = [c for c in candidates if len(c[0])] or candidates
    if len(with_tools) == 1:
        return with_tools[0][0]
    if len(with_tools) > 1:
        shown = "; ".join(label for _, label in with_tools)
        raise TargetError(
            f"{target} has several registries ({shown}); name the one to use as "
            f"{target}:ATTRIBUTE, an attribute of the module that holds it"
        )
    # no registry of its own: the tools registered by what it imports
    for registry, _ in _shared_registries():
        if len(registry):
            return registry
    return default_registry


_MISSING = object()


def _attribute(module: ModuleType, attribute: str) -> Any:
    """The module's `attribute`: one it defines, or one its module-level `__getattr__`
    (PEP 562) makes on first use, such as a registry built lazily; `_MISSING` if neither."""
    namespace = vars(module)
    if attribute in namespace:
        return namespace[attribute]
    lazy = namespace.get("__getattr__")
    if callable(lazy) and attribute.isidentifier():
        try:
            return lazy(attribute)
        except AttributeError:
            pass
    return _MISSING


def _named_registry(
    module: ModuleType, target: str, module_part: str, attribute: str, toolset: bool = False
) -> Any:
    """`module:attribute`; a missing attribute or one that is no registry says what is there
    (`toolset=True`: any `Toolset` will do, e.g. `combined(registry, prefixed(mount, "a_"))`)."""
    named = ", ".join(f"{module_part}:{name}" for name in _named_registries(module))
    there = (
        f"its registries: {named}"
        if named
        else (f"it names no registry; pass {module_part} alone for the tools it registers")
    )
    value = _attribute(module, attribute)
    if value is _MISSING:
        raise TargetError(f"{module_part} has no attribute '{attribute}' ({there})")
    if toolset and isinstance(value, Toolset):
        return value
    if not isinstance(value, ToolRegistry):
        wanted = "a ToolRegistry or a Toolset" if toolset else "a ToolRegistry"
        raise TargetError(f"{target} is {_kind(value)}, not {wanted} ({there})")
    return value


def _kind(value: object) -> str:
    """What `value` is, in a few words: `a function`, `a module`, `an int`..."""
    if isinstance(value, ModuleType):
        return "a module"
    if isinstance(value, type):
        return "a class"
    if callable(value) and hasattr(value, "__code__"):
        return "a function"
    return with_article(type(value).__name__)


def load_target(
    target: str,
    resources: contextlib.ExitStack | None = None,
    *,
    server_errlog: TextIO | None = None,
    toolset: bool = False,
) -> Any:
    """The registry a target names; raises `TargetError` with the fix. With `toolset=True`
    (`toolreg serve`), `module:attribute` may name any `Toolset` (a view, a `Mount`).

    An `mcp:` target's connection stays open until `resources` closes; a stdio server's
    stderr goes to `server_errlog` (default: ours), and its last line, if the server cannot
    be mounted, into the error.
    """
    if target.startswith("mcp:"):
        return _mounted(target[len("mcp:") :], resources, server_errlog)
    if target.startswith("openapi:"):
        return _openapi(target[len("openapi:") :], resources, toolset)
    module_part, _, attribute = target.partition(":")
    module = load_module(target)
    if attribute:
        registry = _named_registry(module, target, module_part, attribute, toolset)
    else:
        registry = _registry_in(module, target)
    if not registry.tools():
        raise TargetError(
            f"no tools found in {target}; decorate functions with @register_tool "
            "(or name the registry as module:attribute)"
        )
    return registry


def load_module(target: str) -> ModuleType:
    """The module of a file or module target (loaded once: a second call returns it)."""
    module_part = target.partition(":")[0]
    looks_like_file = module_part.endswith(".py") or "/" in module_part or "\\" in module_part
    return load_file(Path(module_part)) if looks_like_file else _import(module_part)


def _mounted(
    server: str, resources: contextlib.ExitStack | None, errlog: TextIO | None
) -> ToolRegistry:
    """A fresh registry holding the tools of the MCP server `server` (a URL or a command)."""
    if resources is None:
        raise TargetError("an mcp: target is not available here")
    if server.startswith(("http://", "https://")):
        spec: str | list[str] = server
    else:
        spec = shlex.split(server)
        if not spec:
            raise TargetError("mcp: needs a URL or a command, e.g. mcp:'uvx mcp-server-time'")
    require_mcp_extra("mcp: targets need")
    from ..mcp import McpConnectionError, mount  # the `mcp` extra, for mcp: targets only

    registry = ToolRegistry()
    # a command runs like one typed in the shell: with this process's environment; the
    # person at the terminal who names a server and a tool decides, as the annotations did
    env = None if isinstance(spec, str) else dict(os.environ)
    try:
        resources.enter_context(
            mount(registry, spec, env=env, errlog=errlog, trust_annotations=True)
        )
    except McpConnectionError as exc:
        said = _last_line(errlog)
        raise TargetError(str(exc) + (f" (the server said: {said})" if said else "")) from None
    if len(registry) == 0:
        raise TargetError(f"the MCP server {server} has no tools")
    return registry


def _openapi(source: str, resources: contextlib.ExitStack | None, toolset: bool) -> Any:
    """The tools of the OpenAPI document at `source` (a URL or a file): the `OpenAPI`
    toolset itself for `serve`, a fresh registry holding them for the other commands."""
    from ..errors import ToolregError
    from ..sources import OpenAPI

    if not source:
        raise TargetError(
            "openapi: needs a URL or a file, e.g. openapi:http://127.0.0.1:8000/openapi.json"
        )
    try:
        if source.startswith(("http://", "https://")):
            api = OpenAPI.from_url(source)
        else:
            api = OpenAPI.from_file(source)
    except (ToolregError, ValueError) as exc:
        raise TargetError(f"openapi:{source}: {exc}") from None
    if resources is not None:
        resources.callback(api.close)
    if not api.tools():
        raise TargetError(f"the OpenAPI document {source} has no operation toolreg can call")
    if toolset:
        return api
    registry = ToolRegistry()
    for tool in api.tools():
        registry.add(tool)
    return registry


def _last_line(errlog: TextIO | None) -> str:
    """The last non-blank line a server wrote to `errlog` (a file we can read back), at most
    300 characters; "" if there is none."""
    if errlog is None or not errlog.seekable():
        return ""
    try:
        errlog.flush()
        errlog.seek(0)
        tail = errlog.read()[-4000:]
    except (OSError, ValueError):
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return readable(lines[-1][:300]) if lines else ""
