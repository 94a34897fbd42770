"""A tool's signature, read from its source without running it, and the reuse fit test.

The signature is what the registry's contract says about parameters: the public function's name,
its parameters in order (name, annotation, default, required, kind) and its return annotation.
A tool *fits* a task's arguments when it accepts every one of them and needs no other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

_KINDS = ("positional_only", "positional_or_keyword", "keyword_only")


def tool_signature(code: str, function: str | None = None) -> dict[str, Any]:
    """The signature of ``function`` (default: the module's only public top-level function)."""
    try:
        tree = ast.parse(code)
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


def signature_fits(signature: dict[str, Any], params: Iterable[str]) -> bool:
    """True when the tool accepts every name in ``params`` and requires nothing else."""
    wanted = set(params)
    named: set[str] = set()
    required: set[str] = set()
    takes_kwargs = False
    for p in signature.get("params", []):
        kind = p.get("kind", "positional_or_keyword")
        if kind == "var_keyword":
            takes_kwargs = True
        elif kind in ("positional_or_keyword", "keyword_only"):
            named.add(p["name"])
            if p.get("required"):
                required.add(p["name"])
        elif kind == "positional_only" and p.get("required"):
            return False  # cannot be bound by name
    if not required <= wanted:
        return False
    return takes_kwargs or wanted <= named


def _params(args: ast.arguments) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=False)):
        kind = "positional_only" if index < len(args.posonlyargs) else "positional_or_keyword"
        out.append(_param(arg, default, kind))
    if args.vararg is not None:
        out.append(_param(args.vararg, None, "var_positional", required=False))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
        out.append(_param(arg, default, "keyword_only"))
    if args.kwarg is not None:
        out.append(_param(args.kwarg, None, "var_keyword", required=False))
    return out


def _param(arg: ast.arg, default: ast.expr | None, kind: str, required: bool | None = None) -> dict[str, Any]:
    return {
        "name": arg.arg,
        "annotation": ast.unparse(arg.annotation) if arg.annotation is not None else None,
        "default": _default(default),
        "required": (default is None) if required is None else required,
        "kind": kind,
    }


def _default(node: ast.expr | None) -> Any:
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
