"""A tool's signature, read from its source without running it, and the fit test.

This is the project's one reader of a function's parameters (the registry's contract, the
agent's signature check and the reuse search all use it). The signature is the function's name,
its parameters in order (name, annotation, default, required, :class:`ParamKind`) and its return
annotation. A tool *fits* a task's arguments when it accepts every one of them by name and needs
no other (:func:`signature_problem` says why not; :func:`signature_fits` is its yes/no).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypedDict

from finevo.pysource import parse

if TYPE_CHECKING:
    from finevo.jsontypes import JSONValue


class ParamKind(StrEnum):
    """How a parameter is bound (the words of :class:`inspect.Parameter`'s kinds, lower case)."""

    POSITIONAL_ONLY = "positional_only"
    POSITIONAL_OR_KEYWORD = "positional_or_keyword"
    VAR_POSITIONAL = "var_positional"
    KEYWORD_ONLY = "keyword_only"
    VAR_KEYWORD = "var_keyword"


class ParamRecord(TypedDict):
    """One parameter of a :class:`ToolSignature` (``default`` is the literal, or ``{"expr": source}``)."""

    name: str
    annotation: str | None
    default: JSONValue
    required: bool
    kind: str


class ToolSignature(TypedDict):
    """What :func:`tool_signature` reads: the registry's signature record of a tool."""

    function: str
    params: list[ParamRecord]
    returns: str | None


#: The kinds a keyword argument binds to.
_BY_NAME = (ParamKind.POSITIONAL_OR_KEYWORD, ParamKind.KEYWORD_ONLY)


def tool_signature(code: str, function: str | None = None) -> ToolSignature:
    """The signature of ``function`` (default: the module's only public top-level function)."""
    try:
        tree = parse(code)
    except SyntaxError as exc:
        raise ValueError(f"tool code does not parse: line {exc.lineno}: {exc.msg}") from None
    funcs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if function is not None:
        chosen = [f for f in funcs if f.name == function]
        if not chosen:
            raise ValueError(f"tool code defines no top-level function {function!r}")
    else:
        chosen = [f for f in funcs if not f.name.startswith("_")]
        if len(chosen) != 1:
            names = ", ".join(f.name for f in chosen) or "none"
            raise ValueError(f"tool code must define exactly one public function (found: {names})")
    node = chosen[-1]
    return {"function": node.name, "params": _params(node.args),
            "returns": ast.unparse(node.returns) if node.returns is not None else None}


def function_signature(code: str, function: str) -> ToolSignature | None:
    """:func:`tool_signature` of ``function``, or None when the code has no such function (or does not parse)."""
    try:
        return tool_signature(code, function)
    except ValueError:
        return None


def signature_problem(signature: Mapping[str, Any] | None, entry: str, arg_names: Iterable[str]) -> str | None:
    """Why a function with ``signature`` cannot be called as ``entry(**args)`` with ``arg_names``
    (None when it can: it accepts every name and requires no other)."""
    if signature is None:
        return f"the module defines no top-level function named '{entry}'"
    given = list(arg_names)
    params = list(signature.get("params", []))
    kinds = [ParamKind(p.get("kind", ParamKind.POSITIONAL_OR_KEYWORD)) for p in params]
    names = {p["name"] for p, kind in zip(params, kinds, strict=True) if kind in _BY_NAME}
    takes_kwargs = ParamKind.VAR_KEYWORD in kinds
    posonly = [p["name"] for p, kind in zip(params, kinds, strict=True)
               if kind is ParamKind.POSITIONAL_ONLY and p.get("required")]
    if posonly:
        return f"function '{entry}' has positional-only parameter(s) {', '.join(posonly)}"
    unknown = [n for n in given if n not in names]
    if unknown and not takes_kwargs:
        return (f"function '{entry}' has no parameter(s) {', '.join(unknown)}; "
                f"it takes ({', '.join(p['name'] for p in params)})")
    missing = [p["name"] for p, kind in zip(params, kinds, strict=True)
               if kind in _BY_NAME and p.get("required") and p["name"] not in given]
    if missing:
        return (f"function '{entry}' requires parameter(s) {', '.join(missing)} that the task does not give "
                f"(the task gives {', '.join(given) or 'nothing'})")
    return None


def signature_fits(signature: Mapping[str, Any], params: Iterable[str]) -> bool:
    """True when the tool accepts every name in ``params`` and requires nothing else."""
    return signature_problem(signature, str(signature.get("function", "tool")), params) is None


def _params(args: ast.arguments) -> list[ParamRecord]:
    out: list[ParamRecord] = []
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=False)):
        kind = ParamKind.POSITIONAL_ONLY if index < len(args.posonlyargs) else ParamKind.POSITIONAL_OR_KEYWORD
        out.append(_param(arg, default, kind))
    if args.vararg is not None:
        out.append(_param(args.vararg, None, ParamKind.VAR_POSITIONAL, required=False))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
        out.append(_param(arg, default, ParamKind.KEYWORD_ONLY))
    if args.kwarg is not None:
        out.append(_param(args.kwarg, None, ParamKind.VAR_KEYWORD, required=False))
    return out


def _param(arg: ast.arg, default: ast.expr | None, kind: ParamKind, required: bool | None = None) -> ParamRecord:
    return {
        "name": arg.arg,
        "annotation": ast.unparse(arg.annotation) if arg.annotation is not None else None,
        "default": _default(default),
        "required": (default is None) if required is None else required,
        "kind": kind.value,
    }


def _default(node: ast.expr | None) -> JSONValue:
    if node is None:
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return {"expr": ast.unparse(node)}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float, bool)) for v in value):
        return list(value)
    return {"expr": ast.unparse(node)}
