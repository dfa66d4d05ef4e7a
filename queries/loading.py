"""Finding the query a run computes from its reference on the command line: `module:function` (a module on the
Python path, or a .py file), or `nexmark:qN` for the project's Nexmark queries. The function takes no argument and
returns a queries.api.Query; everything wrong with it is a QueryError naming the reference and the field."""
from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from queries.api import Query, QueryError, check_query

SHORTHANDS = {"nexmark": "queries.nexmark"}
USER_MODULE_PREFIX = "elastic_user_query_"


def load_query(ref: str) -> tuple[Query, ModuleType]:
    """The checked query and the module it came from (the job ships a user's module to Spark's workers)."""
    module_name, sep, function = ref.rpartition(":")
    if not sep or not module_name or not function:
        raise QueryError(f"--query {ref!r}: expected MODULE:FUNCTION (e.g. my_query:build, path/to/my_query.py:build "
                         "or nexmark:q3)")
    module = import_reference(SHORTHANDS.get(module_name, module_name), ref)
    listed = getattr(module, "QUERIES", None)  # a module of several queries (queries.nexmark) lists them
    build = getattr(module, function, None) or (listed or {}).get(function)
    if build is None:
        choices = f"; it has {', '.join(listed)}" if listed else ""
        raise QueryError(f"--query {ref!r}: module {module.__name__!r} ({module.__file__}) has no function "
                         f"{function!r}{choices}")
    if not callable(build):
        raise QueryError(f"--query {ref!r}: {function!r} in {module.__file__} is not a function")
    try:
        query = build()
    except QueryError as exc:
        raise QueryError(f"--query {ref!r}: {exc}") from None
    except Exception as exc:
        raise QueryError(f"--query {ref!r}: {function}() failed: {type(exc).__name__}: {exc}") from None
    return check_query(query, f"--query {ref}"), module


def import_reference(name: str, ref: str, flag: str = "--query") -> ModuleType:
    """The module of a MODULE:FUNCTION reference: a dotted name on the Python path or a .py file's path."""
    if name.endswith(".py"):
        path = Path(name)
        if not path.is_file():
            raise QueryError(f"{flag} {ref!r}: no file {path}")
        name = f"{USER_MODULE_PREFIX}{path.stem}"  # never shadows an installed module (json.py, queries.py)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # cloudpickle ships a module by value only when it is registered here
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise QueryError(f"{flag} {ref!r}: {path} cannot be imported: {_where(exc)}") from None
        return module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise QueryError(f"{flag} {ref!r}: no module named {name!r} on the Python path (run from the folder "
                             "that holds it, or give the .py file's path)") from None
        raise QueryError(f"{flag} {ref!r}: module {name!r} cannot be imported: {_where(exc)}") from None
    except Exception as exc:
        raise QueryError(f"{flag} {ref!r}: module {name!r} cannot be imported: {_where(exc)}") from None


def _where(exc: BaseException) -> str:
    """The error with the user's file and line where Python knows them."""
    if isinstance(exc, SyntaxError):
        return f"{exc.filename}, line {exc.lineno}: {exc.msg}"
    frames = traceback.extract_tb(exc.__traceback__)
    at = f"{frames[-1].filename}, line {frames[-1].lineno}: " if frames else ""
    return f"{at}{type(exc).__name__}: {exc}"
