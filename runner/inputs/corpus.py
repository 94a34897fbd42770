"""Loaders for the security corpora: hostile payloads and benign tools.

* ``benchmarks/security_payloads.jsonl`` -- one hostile tool module per line, with the canary that
  proves the attempt failed and the layer expected to stop it (``policy`` or ``runtime``).
* ``benchmarks/benign/*.py`` plus ``benchmarks/benign/calls.json`` -- real indicator tools that must
  pass the policy and run; ``calls.json`` maps each file name to ``{"entry": ..., "args": {...}}``.

Both loaders are strict: any flaw raises one :class:`~finevo.errors.InputError` naming the file
(and line).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from finevo.errors import InputError
from finevo.inputs import iter_jsonl, read_json, read_text
from finevo.paths import benchmarks_dir

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

Canary = Literal["env_secret", "file_read", "file_write", "file_delete", "network", "process",
                 "resource", "forge_result", "signal", "persistence", "none"]
Expect = Literal["policy", "runtime"]
CANARIES: tuple[str, ...] = get_args(Canary)
#: The value a ``forge_result`` payload tries to pass off as its result (each really returns
#: something else): a run that reports it has accepted a forged record. The other forges
#: (technique ``claim-*``) fake a containment layer's signs instead: an exception's words, a signal.
FORGED_VALUE = 123.45
EXPECTS: tuple[str, ...] = get_args(Expect)

#: Placeholders a payload may contain; the runner substitutes them before running it.
PLACEHOLDERS: dict[str, str] = {
    "@@CANARY_FILE@@": "canary_file",
    "@@CANARY_DIR@@": "canary_dir",
    "@@CANARY_HOST@@": "host",
    "@@CANARY_PORT@@": "port",
    "@@SECRET_NAME@@": "secret_name",
}
_PLACEHOLDER_RE = re.compile(r"@@[A-Z_]+@@")


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each placeholder replaced by ``values[its key in PLACEHOLDERS]`` (plain text
    replacement; a key ``values`` lacks leaves its placeholder as it is)."""
    for token, key in PLACEHOLDERS.items():
        if key in values:
            text = text.replace(token, values[key])
    return text


def unknown_placeholders(text: str) -> list[str]:
    """The ``@@NAME@@`` tokens in ``text`` that are not placeholders, sorted."""
    return sorted(set(_PLACEHOLDER_RE.findall(text)) - PLACEHOLDERS.keys())
_PAYLOAD_ID_RE = re.compile(r"^pay_[0-9]{3}$")
_PAYLOAD_FIELDS = {"id", "technique", "attempts", "code", "entry", "args", "canary", "expect"}
_REQUIRED = {"id", "technique", "attempts", "code", "canary", "expect"}


@dataclass(frozen=True)
class Payload:
    """One hostile tool body and what proves it was stopped."""

    id: str
    technique: str
    attempts: str
    code: str
    canary: Canary
    expect: Expect
    entry: str = "run"
    args: JSONObject = field(default_factory=dict)

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(_PLACEHOLDER_RE.findall(self.code))

    def materialise(self, *, canary_file: str = "", canary_dir: str = "", host: str = "127.0.0.1",
                    port: int | str = 0, secret_name: str = "") -> str:
        """The code with every placeholder replaced (plain text replacement)."""
        return fill(self.code, {"canary_file": str(canary_file), "canary_dir": str(canary_dir), "host": str(host),
                                "port": str(port), "secret_name": str(secret_name)})


@dataclass(frozen=True)
class BenignTool:
    """One benign indicator tool and the call that exercises it on the bundled snapshot."""

    name: str
    path: Path
    code: str
    entry: str
    args: JSONObject = field(default_factory=dict)


def load_payloads(path: str | Path | None = None) -> list[Payload]:
    """Read the hostile payload corpus; raise :class:`InputError` naming ``file:line`` on any flaw."""
    path = Path(path) if path is not None else benchmarks_dir() / "security_payloads.jsonl"
    payloads: list[Payload] = []
    seen: dict[str, int] = {}
    for lineno, where, data in iter_jsonl(path):
        payload = _payload_from(data, where)
        if payload.id in seen:
            raise InputError(f"{where}: duplicate id '{payload.id}' (first on line {seen[payload.id]})")
        seen[payload.id] = lineno
        payloads.append(payload)
    if not payloads:
        raise InputError(f"{path}: no payloads")
    return payloads


def _payload_from(data: JSONObject, where: str) -> Payload:
    missing = sorted(_REQUIRED - data.keys())
    if missing:
        raise InputError(f"{where}: missing field(s) {', '.join(missing)}")
    unknown = sorted(data.keys() - _PAYLOAD_FIELDS)
    if unknown:
        raise InputError(f"{where}: unknown field(s) {', '.join(unknown)}")
    for key in ("id", "technique", "attempts", "code", "entry"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise InputError(f"{where}: field '{key}' must be a non-empty string")
    if not _PAYLOAD_ID_RE.match(data["id"]):
        raise InputError(f"{where}: id '{data['id']}' does not match pay_NNN")
    if data["canary"] not in CANARIES:
        raise InputError(f"{where}: canary '{data['canary']}' is not one of {', '.join(CANARIES)}")
    if data["expect"] not in EXPECTS:
        raise InputError(f"{where}: expect '{data['expect']}' is not one of {', '.join(EXPECTS)}")
    args = data.get("args", {})
    if not isinstance(args, dict):
        raise InputError(f"{where}: field 'args' must be a JSON object")
    unknown_ph = unknown_placeholders(data["code"])
    if unknown_ph:
        raise InputError(f"{where}: unknown placeholder(s) {', '.join(unknown_ph)}")
    return Payload(id=data["id"], technique=data["technique"], attempts=data["attempts"],
                   code=data["code"], canary=data["canary"], expect=data["expect"],
                   entry=data.get("entry", "run"), args=args)


def load_benign(dir: str | Path | None = None) -> list[BenignTool]:  # public name
    """Read the benign tools and their calls; every ``.py`` needs a ``calls.json`` entry and back."""
    root = Path(dir) if dir is not None else benchmarks_dir() / "benign"
    calls_path = root / "calls.json"
    calls = read_json(calls_path)
    if not isinstance(calls, dict):
        raise InputError(f"{calls_path}: expected a JSON object mapping file name -> call")
    files = sorted(p for p in root.glob("*.py") if p.is_file())
    names = {p.name for p in files}
    orphans = sorted(set(calls) - names)
    if orphans:
        raise InputError(f"{calls_path}: entries without a tool file: {', '.join(orphans)}")
    tools: list[BenignTool] = []
    for p in files:
        call = calls.get(p.name)
        if call is None:
            raise InputError(f"{p}: no entry in {calls_path.name}")
        if not isinstance(call, dict) or set(call) - {"entry", "args"} or not isinstance(call.get("entry"), str):
            raise InputError(f"{calls_path}: entry '{p.name}' must be {{\"entry\": str, \"args\": object}}")
        args = call.get("args", {})
        if not isinstance(args, dict):
            raise InputError(f"{calls_path}: entry '{p.name}': 'args' must be a JSON object")
        code = read_text(p, "tool file")
        tools.append(BenignTool(name=p.stem, path=p, code=code, entry=call["entry"], args=args))
    if not tools:
        raise InputError(f"{root}: no benign tools")
    return tools
