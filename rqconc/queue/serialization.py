"""How job payloads are stored: JSON by default, pickle only when a queue opts in.

Why JSON: a worker that unpickles a payload runs whatever code its author chose. Anyone who
can write to Redis can then run code on every worker. Pickle is therefore an explicit
per-queue opt-in (`Queue(..., serializer="pickle")`), for trusted Redis deployments only.

Functions are stored by reference, as "module:qualname" (RQ's dotted "module.function" is
accepted too: see `split_function_name`), and resolved in the worker after its allow-list
has accepted the module (see `is_allowed`), so a refused job is never imported.
"""

from __future__ import annotations

import base64
import importlib
import importlib.util
import inspect
import json
import pickle
import re
import sys
import types
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

from rqconc import errors

ALWAYS_ALLOWED = ("rqconc.demo", "rqconc.worker.webhooks")

# Modules of rqconc that moved: jobs stored in Redis before the move name the old path (a
# webhook job's function, the exception types in its retry policy), and must keep working.
MOVED_MODULES = {"rqconc.webhooks": "rqconc.worker.webhooks"}


def current_name(dotted: str) -> str:
    """`dotted` (a module, "module:qualname" or "module.Class") with a moved rqconc module
    replaced by its present path; any other name comes back unchanged."""
    for old, new in MOVED_MODULES.items():
        if dotted == old or dotted.startswith((old + ":", old + ".")):
            return new + dotted[len(old) :]
    return dotted


def _short_repr(value: Any, limit: int = 120) -> str:
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the real problem
        text = f"<{type(value).__qualname__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_utf8(data: str, what: str, value: Any) -> None:
    """Redis stores UTF-8: a lone surrogate (which a str may hold) cannot be written."""
    if not data.isascii():
        try:
            data.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise TypeError(
                f"cannot store {what} {_short_repr(value)}: it holds "
                f"{data[exc.start : exc.end]!r}, a lone surrogate that is not "
                "valid UTF-8"
            ) from None


class _NotJSON(TypeError):
    """Raised by the shared encoder's hook for a value JSON has no type for; `dumps` turns it
    into the message that names what was being stored."""

    def __init__(self, value: Any) -> None:
        super().__init__("not a JSON type")
        self.value = value


def _not_json(value: Any) -> Any:
    raise _NotJSON(value)


# One encoder for every call: json.dumps with options builds a JSONEncoder on each call (its
# __init__ in Python), which every job returning a value and every enqueue with arguments
# paid. encode() keeps no state between calls, so threads and greenlets share it.
# allow_nan=False: NaN and Infinity are not JSON; other languages' parsers refuse them.
_ENCODER = json.JSONEncoder(
    default=_not_json, ensure_ascii=False, separators=(",", ":"), allow_nan=False
)


class JSONSerializer:
    """Plain JSON text: safe to load from anyone, readable by any language."""

    name = "json"

    def dumps(self, value: Any, what: str = "value") -> str:
        if value is None:  # what most jobs return
            return "null"
        try:
            data = _ENCODER.encode(value)
        except _NotJSON as refused:
            culprit = refused.value
            raise TypeError(
                f"cannot serialize {what} {_short_repr(culprit)} of type "
                f"{type(culprit).__qualname__} as JSON; use JSON types (str, int, float, bool, "
                "None, list, dict) or opt in to pickle with Queue(..., serializer='pickle')"
            ) from None
        except ValueError as exc:
            if "Out of range float" not in str(exc):
                raise TypeError(
                    f"cannot serialize {what} {_short_repr(value)} as JSON: {exc}"
                ) from None
            raise ValueError(
                f"cannot serialize {what} {_short_repr(value)} as JSON: it holds NaN or "
                "Infinity, which JSON has no numbers for"
            ) from None
        except TypeError as exc:  # e.g. a dict with tuple keys
            raise TypeError(
                f"cannot serialize {what} {_short_repr(value)} as JSON: {exc}"
            ) from None
        check_utf8(data, what, value)
        return data

    def loads(self, data: Union[str, bytes]) -> Any:
        return json.loads(data)


class PickleSerializer:
    """Pickle, base64-encoded so it survives clients that decode replies as text."""

    name = "pickle"

    def dumps(self, value: Any, what: str = "value") -> str:
        try:
            raw = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise TypeError(f"cannot pickle {what} {_short_repr(value)}: {exc}") from None
        return base64.b64encode(raw).decode("ascii")

    def loads(self, data: Union[str, bytes]) -> Any:
        return pickle.loads(base64.b64decode(data))


Serializer = Union[JSONSerializer, PickleSerializer]
SERIALIZERS: Dict[str, Serializer] = {"json": JSONSerializer(), "pickle": PickleSerializer()}


def get_serializer(name: str) -> Serializer:
    try:
        return SERIALIZERS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown serializer {_short_repr(name)}: use 'json' or 'pickle'"
        ) from None


def dump_arguments(
    serializer: Serializer, args: Tuple[Any, ...], kwargs: Dict[str, Any]
) -> Tuple[str, str]:
    """(args, kwargs) serialized; a TypeError names the value that cannot be."""
    try:
        return serializer.dumps(list(args), "argument"), serializer.dumps(kwargs, "argument")
    except TypeError:
        # The JSON hook names nested culprits itself; errors it does not see (a dict with
        # tuple keys, a cycle) are pinned on the top-level argument here.
        for value in list(args) + list(kwargs.values()):
            serializer.dumps(value, "argument")
        raise


# ---- function references ----


def function_name(func: Union[str, Callable[..., Any]]) -> str:
    """ "module:qualname" of an importable function; ValueError for anything a worker could
    not import by name (lambdas, nested functions, bound methods, objects, __main__)."""
    if isinstance(func, str):
        if ":" not in func and DOTTED.match(func):
            return _normalised(func)
        named_module, sep, named_qualname = func.partition(":")
        if not sep or not named_module or not named_qualname or "<" in func:
            raise ValueError(
                f"invalid function reference {func!r}: use 'module:qualname' "
                "(or RQ's dotted 'module.function')"
            )
        return func
    module: Optional[str] = getattr(func, "__module__", None)
    qualname: Optional[str] = getattr(func, "__qualname__", None)
    if not callable(func) or not module or not qualname:
        raise ValueError(
            f"cannot enqueue {_short_repr(func)}: pass an importable function "
            "or a 'module:qualname' string"
        )
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise ValueError(
            f"cannot enqueue {qualname!r} from {module}: lambdas and nested "
            "functions cannot be imported by a worker; define it at module level"
        )
    if inspect.ismethod(func) and not inspect.isclass(func.__self__):
        raise ValueError(
            f"cannot enqueue the bound method {qualname!r}: the worker would not "
            "have its object; enqueue a module-level function instead"
        )
    if module == "__main__":
        raise ValueError(
            f"cannot enqueue {qualname!r} from __main__: a worker cannot import "
            "your script's __main__; move it to an importable module"
        )
    return f"{module}:{qualname}"


# RQ's form, "myapp.tasks.send_sms": identifiers joined by dots, at least two of them.
DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")


def _splits(dotted: str) -> List[Tuple[str, str]]:
    """(module, qualname) candidates of a dotted name, the longest module first."""
    parts = dotted.split(".")
    return [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]


def _is_module(name: str) -> Optional[bool]:
    """Whether module `name` exists (importing its parent packages, as an import would);
    None when finding out failed for another reason (a parent that raises on import)."""
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError as exc:
        # It, or a parent, does not exist, or a parent is a plain module: not a module here.
        missing = exc.name or ""
        if name == missing or name.startswith(missing + "."):
            return False
        return None
    except Exception:
        return None


# Module names this process could not import (a producer need not have the workers' code):
# asked once each. Bounded: the names come from callers.
_NOT_HERE: Dict[str, bool] = {}
# Names found defined here, not checked again (a module does not lose its functions).
_DEFINED: Dict[str, bool] = {}
_NOT_HERE_LIMIT = 1024


def _module_here(name: str, may_import: bool) -> Optional[types.ModuleType]:
    """Module `name` as imported in this process (importing it when `may_import` and it is
    found here), or None when it is not to be had here."""
    module = sys.modules.get(name)
    # Another thread may be importing it right now: sys.modules holds it half made (its
    # functions not yet defined) until that import ends. import_module waits for it.
    if module is not None and not getattr(module.__spec__, "_initializing", False):
        return module
    if not may_import or name in _NOT_HERE:
        return None
    try:
        if module is not None or _is_module(name):
            return importlib.import_module(name)
    except Exception:  # it does not import here: whether it names the function is unknown
        pass
    if len(_NOT_HERE) < _NOT_HERE_LIMIT:
        _NOT_HERE[name] = True
    return None


def check_defined(name: str, may_import: bool = True) -> str:
    """`name` ("module:qualname"), refused (ValueError) when this process has its module and
    the module does not define the function: enqueue says so, not the worker later. A
    module that does not import here is accepted as it is. `may_import=False` (code that runs
    inside a job, a flow's `Next`): only modules imported already are looked into, since a
    worker imports only what its allow-list accepts."""
    if name in _DEFINED:  # checked before: enqueue_many names one function a thousand times
        return name
    module_name, sep, qualname = current_name(name).partition(":")
    module = _module_here(module_name, may_import) if sep else None
    if module is None:
        return name
    target: Any = module
    for part in qualname.split("."):
        if not hasattr(target, part):
            raise ValueError(
                f"cannot enqueue {name}: module {module_name} has no {qualname!r} "
                f"(imported here from {getattr(module, '__file__', None) or module_name})"
            )
        target = getattr(target, part)
    if len(_DEFINED) < _NOT_HERE_LIMIT:  # bounded: a producer may name many functions
        _DEFINED[name] = True
    return name


def _normalised(dotted: str) -> str:
    """A dotted name as "module:qualname" when the producer can find its module (the
    longest prefix that is one); else as given, for the worker to split (its own modules
    may differ from the producer's)."""
    for module, qualname in _splits(dotted):
        found = _is_module(module)
        if found:
            return f"{module}:{qualname}"
        if found is None:
            break
    return dotted


def split_function_name(name: str, allow: Iterable[str] = ()) -> Tuple[str, str]:
    """(module, qualname) of a stored function name: "module:qualname", or RQ's dotted
    "myapp.tasks.send_sms", whose module is the longest prefix that the allow-list accepts
    and that exists here (only allowed modules and their parents are ever imported to find
    out); with none, the name less its last part, which the allow-list then refuses or whose
    import then fails, by name."""
    name = current_name(name)
    if ":" not in name and DOTTED.match(name):
        for module, qualname in _splits(name):
            if is_allowed(module, allow):
                found = _is_module(module)
                if found is None or found:  # None: let the import itself say what fails
                    return module, qualname
        return _splits(name)[0]
    module, sep, qualname = name.partition(":")
    if not sep or not module or not qualname:
        raise ValueError(f"invalid function reference {name!r}: expected 'module:qualname'")
    return module, qualname


def is_allowed(module: str, allow: Iterable[str]) -> bool:
    """Whether `module` matches an allowed prefix: "myapp" allows myapp and myapp.tasks, not
    myapp2; "*" allows everything; rqconc's demo tasks are always allowed."""
    for prefix in list(allow) + list(ALWAYS_ALLOWED):
        if prefix == "*" or module == prefix or module.startswith(prefix + "."):
            return True
    return False


def resolve_function(name: str, allow: Iterable[str]) -> Callable[..., Any]:
    """Import "module:qualname" (call `is_allowed` first: this imports the module).

    The qualname may name a class attribute ("Class.method") but may not walk into another
    module ("myapp.tasks:os.system") or through dunders, and what it names must be defined
    in an allowed module: `from os import system` in myapp.tasks does not make
    "myapp.tasks:system" runnable with `--allow myapp` (`errors.NotAllowed`)."""
    module_name, qualname = split_function_name(name, allow)
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        if part.startswith("__") and part.endswith("__"):
            raise ValueError(f"{name}: dunder attributes cannot be part of a job's function")
        target = getattr(target, part)
        if isinstance(target, types.ModuleType):
            raise ValueError(f"{name}: {part} is a module; name a function of {module_name} itself")
    if not callable(target):
        raise TypeError(f"{name} is not callable")
    defined_in = getattr(target, "__module__", None)
    # A function's, class's or method's own module; a callable object's is its class's.
    # Builtins and C functions name theirs ("posix", "builtins") or none: refused.
    if not isinstance(defined_in, str) or not is_allowed(defined_in, allow):
        raise errors.NotAllowed(
            f"function {name} is not allowed on this worker: it is defined in module "
            f"{defined_in or '(unknown)'!r}, not in {module_name}, and only functions "
            "defined in an allowed module run"
        )
    return target


def type_name(cls: type) -> str:
    """The qualified name exceptions are stored under: "ValueError", "myapp.errors.Boom"."""
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def mro_names(cls: type) -> List[str]:
    return [type_name(base) for base in cls.__mro__]
