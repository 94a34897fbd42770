"""The static policy: every hostile payload blocked with a named rule, every good tool allowed,
each rule pinned to its line and column, and no input can make it raise."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import random
import types

import pytest

from finevo.paths import benchmarks_dir, reference_dir
from finevo.policy import ALLOWED_IMPORTS, PolicyReport, Rule, Violation, check, rules_table
from finevo.policy import tables as T
from runner.inputs.corpus import load_benign, load_payloads
from runner.inputs.tasks import load_security_tasks

RULES = {rule.value for rule in Rule}
SAMPLE = dict(canary_file="/tmp/canary/secret.txt", canary_dir="/tmp/canary", host="127.0.0.1",
              port=40123, secret_name="FINEVO_FAKE_KEY")

PAYLOADS = load_payloads()
BENIGN = load_benign()
SECURITY = load_security_tasks(benchmarks_dir() / "security_tasks.jsonl")
REFERENCE = sorted(reference_dir().glob("*.py")) if reference_dir().is_dir() else []


def _in_bounds(code: str, v: Violation) -> bool:
    lines = code.splitlines() or [""]
    return 1 <= v.line <= len(lines) and 1 <= v.col <= len(lines[v.line - 1]) + 1


# --------------------------------------------------------------------------- corpora
@pytest.mark.parametrize("payload", [p for p in PAYLOADS if p.expect == "policy"], ids=lambda p: p.id)
def test_policy_payload_is_blocked_with_a_named_rule(payload):
    code = payload.materialise(**SAMPLE)
    report = check(code, filename=f"{payload.id}.py")
    assert not report.allowed, f"{payload.id} ({payload.technique}) passed the policy"
    assert report.first is not None and report.first.rule in RULES
    assert all(v.rule in RULES and _in_bounds(code, v) for v in report.violations), report.describe()
    # placeholders sit in string literals, so the unsubstituted code gets the same verdict
    assert check(payload.code).rules == report.rules


@pytest.mark.parametrize("payload", [p for p in PAYLOADS if p.expect == "runtime"], ids=lambda p: p.id)
def test_runtime_payload_is_policy_clean_so_the_sandbox_must_contain_it(payload):
    report = check(payload.materialise(**SAMPLE))
    assert report.allowed, report.describe()


@pytest.mark.parametrize("tool", BENIGN, ids=lambda t: t.name)
def test_benign_tool_is_allowed(tool):
    report = check(tool.code, filename=tool.path.name)
    assert report.allowed, report.describe()


@pytest.mark.skipif(not REFERENCE, reason="no reference tools in benchmarks/reference")
@pytest.mark.parametrize("path", REFERENCE, ids=lambda p: p.stem)
def test_reference_tool_is_allowed(path):
    report = check(path.read_text(encoding="utf-8"), filename=path.name)
    assert report.allowed, report.describe()


@pytest.mark.parametrize("task", SECURITY, ids=lambda t: t.id)
def test_security_task_code_verdict_matches_its_expected_layer(task):
    report = check(task.malicious_code, filename=f"{task.id}.py")
    if task.expect == "policy":
        assert not report.allowed, f"{task.id}: {task.query!r} passed the policy"
    else:  # contained at run time: it must reach the sandbox unchanged
        assert report.allowed, report.describe()


# --------------------------------------------------------------------------- one rule at a time
CASES = [
    # (source, rule, line, col)
    ("def f(:\n", "syntax-error", 1, 7),
    ("x = 1\x00\n", "syntax-error", 1, 6),
    ("# -*- coding: latin-1 -*-\nx = 1\n", "encoding-declaration", 1, 15),
    ("#!/usr/bin/env python\n# vim: set fileencoding=utf-7 :\nx = 1\n", "encoding-declaration", 2, 25),
    ("x = 1  # \u202e reversed\n", "bidi-control", 1, 10),
    ("\uff45val('1')\n", "non-ascii-identifier", 1, 1),
    ("import os\n", "import-not-allowed", 1, 8),
    ("import pandas as pd, subprocess\n", "import-not-allowed", 1, 22),
    ("from os import path\n", "import-not-allowed", 1, 1),
    ("from math import *\n", "import-star", 1, 18),
    ("from . import helpers\n", "relative-import", 1, 1),
    ("import numpy.ctypeslib\n", "submodule-not-allowed", 1, 8),
    ("from numpy import lib\n", "submodule-not-allowed", 1, 19),
    ("import numpy as np\nx = np.lib.format\n", "submodule-not-allowed", 2, 12),
    ("import pandas as pd\nx = pd.io\n", "submodule-not-allowed", 2, 8),
    ("from pandas.api import extensions\n", "submodule-not-allowed", 1, 24),
    ("import typing\nx = typing.sys\n", "module-attribute", 2, 12),
    ("import yfinance as yf\nx = yf.utils\n", "module-attribute", 2, 8),
    ("from yfinance import shared\n", "module-attribute", 1, 22),
    ("def f(a):\n    return a.ctypes\n", "module-attribute", 2, 14),
    ("x = __builtins__\n", "dunder-name", 1, 5),
    ("__import__('os')\n", "dunder-name", 1, 1),
    ("def __getattr__(name):\n    return 1\n", "dunder-name", 1, 1),
    ("class A:\n    __slots__ = ()\n", "dunder-name", 2, 5),
    ("x = ().__class__\n", "dunder-attribute", 1, 8),
    ("def f(o):\n    return o._secret\n", "private-attribute", 2, 14),
    ("o = open\n", "forbidden-builtin", 1, 5),
    ("f(eval)\n", "forbidden-builtin", 1, 3),
    ("x = [exec][0]\n", "forbidden-builtin", 1, 6),
    ("x = {'k': getattr}\n", "forbidden-builtin", 1, 11),
    ("g = lambda o=open: o\n", "forbidden-builtin", 1, 14),
    ("def open(p):\n    return p\n", "forbidden-builtin", 1, 1),
    ("for vars in range(3):\n    pass\n", "forbidden-builtin", 1, 5),
    ("def f():\n    global eval\n", "forbidden-builtin", 2, 5),
    ("def f(g):\n    return g.gi_frame\n", "forbidden-attribute", 2, 14),
    ("def f(df):\n    return df.query('a > 1')\n", "forbidden-attribute", 2, 15),
    ("import typing\ntyping.get_type_hints(1)\n", "forbidden-attribute", 2, 8),
    ("def f(df):\n    return df.style\n", "forbidden-attribute", 2, 15),
    ("import pandas as pd\npd.read_csv('x')\n", "file-io", 2, 4),
    ("def f(df):\n    df.to_parquet('x')\n", "file-io", 2, 8),
    ("def f(df):\n    df.to_csv('/tmp/x')\n", "file-io", 2, 8),
    ("def f(df):\n    w = df.to_csv\n", "file-io", 2, 12),
    ("def f(df):\n    df.to_csv(**{'path_or_buf': 'x'})\n", "file-io", 2, 8),
    ("import numpy as np\nnp.load('x')\n", "file-io", 2, 4),
    ("from numpy import memmap\n", "file-io", 1, 19),
    ("def f(a):\n    a.tofile('x')\n", "file-io", 2, 7),
    ("T = type('T', (), {})\n", "dynamic-type", 1, 5),
    ("t = type\n", "dynamic-type", 1, 5),
    ("T = type(int)\n", "dynamic-type", 1, 5),
    ("M = type(int)('M', (), {})\n", "dynamic-type", 1, 5),
    ("def f(g):\n    return type(int) == g\n", "dynamic-type", 2, 12),
    ("def f(g):\n    return type(int) in g\n", "dynamic-type", 2, 12),
    ("def f(g):\n    return type(1) is int == g\n", "dynamic-type", 2, 12),
    ("import json\ndef f(s, o):\n    return ''\njson.JSONEncoder.encode = f\n", "module-mutation", 4, 1),
    ("from json import JSONEncoder\nJSONEncoder.encode = None\n", "module-mutation", 2, 1),
    ("import numpy as np\ndel np.mean\n", "module-mutation", 2, 5),
    ("import math\nmath.pi += 1\n", "module-mutation", 2, 1),
    ("import json\ndef f():\n    C = json.JSONEncoder\n    C.encode = None\n", "module-mutation", 4, 5),
    ("from json import JSONEncoder\nE = JSONEncoder\ndel E.encode\n", "module-mutation", 3, 5),
    ("import functools\n@functools.singledispatch\ndef f(x):\n    return x\nf.register(int, f)\n",
     "forbidden-attribute", 5, 3),
    ("import pandas as pd\npd.test()\n", "module-attribute", 2, 4),
    ("def f(df):\n    g = df.agg\n    return g('eval')\n", "dynamic-dispatch", 2, 12),
    ("import pandas as pd\ndef f(df):\n"
     "    return df.pipe(pd.DataFrame.aggregate, 'eval')\n", "dynamic-dispatch", 3, 33),
    ("def f(df):\n    return df.pivot_table('v', 'i', 'c', '__dict__')\n", "dynamic-dispatch", 2, 42),
    ("import pandas as pd\ndef f(df):\n"
     "    return pd.pivot_table(df, 'v', 'i', 'c', 'sum')\n", "dynamic-dispatch", 3, 46),
    ("import functools\ndef f(g):\n    return functools.update_wrapper(g, g)\n", "forbidden-attribute", 3, 22),
    ("import functools\ndef f(g):\n    return functools.wraps(g, updated=('x',))\n", "forbidden-attribute", 3, 12),
    ("def f(e):\n    return e.obj\n", "forbidden-attribute", 2, 14),
    ("def f(df):\n    return df.to_string(float_format='{0.__class__}')\n", "format-string", 2, 38),
    ("def f(df, t):\n    return df.to_html(formatters={'a': t})\n", "format-string", 2, 40),
    ("def f():\n    return builtins.exec\n", "unbound-module-name", 2, 12),
    ("import numpy as np\ndef f(b):\n    return np.ndarray((1,), dtype=object, buffer=b)\n", "raw-memory", 3, 15),
    ("import numpy as np\nclass A(np.ndarray):\n    pass\n", "raw-memory", 2, 12),
    ("from numpy import recarray\nR = recarray\n", "raw-memory", 2, 5),
    ("import numpy.typing as npt\ndef f(b):\n    return npt.NDArray(shape=(1,), dtype=object, buffer=b)\n",
     "raw-memory", 3, 16),
    ("from numpy.typing import NDArray\ndef f(b):\n    return NDArray(shape=(1,), dtype=object, buffer=b)\n",
     "raw-memory", 3, 12),
    ("import numpy as np\ndef f(b):\n    return np.ma.array([1.0]).baseclass((1,), object, b)\n", "raw-memory", 3, 31),
    ("def f(m):\n    return m.cast('q')\n", "raw-memory", 2, 14),
    ("def f(a):\n    a.data[1:2] = a.data[0:1]\n", "raw-memory", 2, 7),
    ("def f(a):\n    return a.tobytes()\n", "raw-memory", 2, 14),
    ("def f(a):\n    return bytes(a)\n", "raw-memory", 2, 12),
    ("def f(a):\n    match a:\n        case object(data=d):\n            return d\n", "forbidden-attribute", 3, 14),
    ("def f(e):\n    self = e\n    return self.obj\n", "forbidden-attribute", 3, 17),
    ("def f(self):\n    return self.data\n", "raw-memory", 2, 17),
    ("from typing import cast\ncast = len\n", "import-rebound", 2, 1),
    ("def f():\n    from typing import cast\n    cast = len\n", "import-rebound", 3, 5),
    ("import numpy as np\nclass A:\n    np = 1\n", "import-rebound", 3, 5),
    ("import numpy as np\nfor np in []:\n    pass\n", "import-rebound", 2, 5),
    ("import numpy as np\ndef f(cast, b):\n    return cast(np.ndarray, b)\n", "raw-memory", 3, 20),
    ("def f(a):\n    match a:\n        case object(type=t):\n            return t\n", "forbidden-attribute", 3, 14),
    ("def f(B, v):\n    class G(B):\n        pass\n    match v:\n        case G(x):\n            return x\n",
     "dynamic-type", 5, 14),
    ("import numpy as np\ndef f(a):\n    return np.frombuffer(a, dtype=np.int64)\n", "forbidden-attribute", 3, 15),
    ("def f(x):\n    return id(x)\n", "forbidden-builtin", 2, 12),
    ("import typing\nM = typing.ABCMeta\n", "forbidden-attribute", 2, 12),
    ("import typing\nT = typing.get_origin(typing.Type[int])\n", "forbidden-attribute", 2, 12),
    ("def f(d):\n    return d.type('M', (), {})\n", "dynamic-type", 2, 14),
    ("def f(M, v):\n    match v:\n        case M(x):\n            return x\n", "dynamic-type", 3, 14),
    ("class P:\n    pass\nP = 1\ndef f(v):\n    match v:\n"
     "        case P(x):\n            return x\n", "dynamic-type", 6, 14),
    ("import numpy as np\ndef f():\n"
     "    return np.random.default_rng().bit_generator.cffi\n", "module-attribute", 3, 50),
    ("def f(df):\n    spec = ('a', '__dict__')\n    return df.agg(out=spec)\n", "dynamic-dispatch", 3, 23),
    ("from numpy import test\n", "module-attribute", 1, 19),
    ("import pandas as pd\npd.options.plotting.backend = 'x'\n", "module-mutation", 2, 1),
    ("def f(df):\n    return df.to_xml()\n", "file-io", 2, 15),
    ("def f(df):\n    return df.agg(x=('a', 'to_clipboard'))\n", "dynamic-dispatch", 2, 27),
    ("import pandas as pd\ndef f(df):\n    return df.agg(x=pd.NamedAgg('a', 'to_csv'))\n", "dynamic-dispatch", 3, 38),
    ("import pandas as pd\ndef f(df):\n"
     "    return pd.pivot_table(df, aggfunc='to_pickle')\n", "dynamic-dispatch", 3, 39),
    ("def f(x):\n    return isinstance(x, type(1)) and [type(x)]\n", "dynamic-type", 2, 26),
    ("class M(type):\n    pass\n", "dynamic-type", 1, 9),
    ("class A(metaclass=M):\n    pass\n", "metaclass", 1, 9),
    ("class A(flag=True):\n    pass\n", "class-keyword", 1, 9),
    ("x = '{0.__class__}'.format(1)\n", "format-string", 1, 21),
    ("x = '{0[k]}'.format({})\n", "format-string", 1, 14),
    ("def f(t):\n    return t.format(1)\n", "format-string", 2, 14),
    ("x = '{a}'.format_map({})\n", "format-string", 1, 11),
    ("@staticmethod.__func__\ndef f():\n    pass\n", "decorator", 1, 2),
    ("def deco(fn):\n    return fn\n\n@deco\ndef f():\n    pass\n", "decorator", 4, 2),
    ("import functools\n@functools.partial(print)\ndef f():\n    pass\n", "decorator", 2, 2),
    ("def f(df, name):\n    return df.agg(name)\n", "dynamic-dispatch", 2, 19),
    ("def f(df):\n    return df.apply('to_pickle', path='x')\n", "dynamic-dispatch", 2, 21),
    ("def f(df):\n    return df.agg({'a': ['mean', 'to_csv']})\n", "dynamic-dispatch", 2, 34),
    ("import pandas as pd\npd.set_option('plotting.backend', 'x')\n", "pandas-option", 2, 15),
    ("import pandas as pd\nk = 'display.width'\npd.set_option(k, 80)\n", "pandas-option", 3, 15),
    ("import pandas as pd\ns = pd.set_option\n", "pandas-option", 2, 8),
    ("def f(x):\n    match x:\n        case object(__class__=c):\n            return c\n", "dunder-attribute", 3, 14),
    # a module as a value would carry it past the route checks: m = pd; m.compat.pickle_compat.loads
    ("import pandas as pd\nm = pd\nm.compat.pickle_compat.loads(b'')\n", "module-value", 2, 5),
    ("import pandas as pd\ndef f(m=pd):\n    return m.core\n", "module-value", 2, 9),
    ("import pandas as pd\nx = (lambda m: m.util)(pd)\n", "module-value", 2, 24),
    ("import pandas as pd\nx = [pd][0].compat\n", "module-value", 2, 6),
    ("import numpy as np\nr = np.random\nr.mtrand\n", "module-value", 2, 5),
    ("from numpy import random\nx = (random,)\n", "module-value", 2, 6),
    ("import yfinance as yf\ny = yf\n", "module-value", 2, 5),
    # the binding pre-pass: what a name is bound to in its scope, whatever branch binds it
    ('import numpy as np\nif False:\n    import json as np\n', 'ambiguous-binding', 3, 12),
    ('try:\n    import numpy\nexcept ImportError:\n    from re import compile\n', 'ambiguous-binding', 4, 20),
    ('from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from typing import Type as type\n',
     'ambiguous-binding', 3, 24),
    ('import numpy as np\ndef g():\n    global np\n', 'ambiguous-binding', 3, 5),
    ('def f():\n    import numpy as np\n    def g():\n        nonlocal np\n', 'ambiguous-binding', 4, 9),
    ('def f():\n    def g():\n        nonlocal zz\n', 'ambiguous-binding', 3, 9),
    ('import numpy as np\nmatch 1:\n    case [*np]:\n        pass\n', 'import-rebound', 3, 11),
    ('import numpy as np\nmatch 1:\n    case {**np}:\n        pass\n', 'import-rebound', 3, 10),
    ('def f(xs):\n    import numpy as np\n    return [np for np in xs], [(np := x) for x in xs]\n',
     'import-rebound', 3, 33),
    ('import numpy as np\nx = (np := 1)\n', 'import-rebound', 2, 6),
    ('import numpy as np\nwith open as np:\n    pass\n', 'import-rebound', 2, 14),
    ('class Box:\n    import numpy as np\n', 'module-value', 2, 5),
    ('import pandas._libs.lib as lib\n', 'submodule-not-allowed', 1, 8),
    ('from pandas._libs import lib\n', 'submodule-not-allowed', 1, 1),
    ('from numpy._core import multiarray\n', 'submodule-not-allowed', 1, 1),
    ('import warnings\nclass M:\n    filters = []\nwith warnings.catch_warnings(module=M):\n    pass\n',
     'forbidden-attribute', 4, 37),
    ("x = '__array_interface__'\n", 'dunder-string', 1, 5),
    ("x = '__array_' + 'interface__'\n", 'dunder-string', 1, 5),
    ('import json\nfor C in (json.JSONEncoder,):\n    C.encode = None\n', 'module-mutation', 3, 5),
    ('import json\ndef f(v):\n    match json.JSONEncoder:\n        case C:\n            C.encode = v\n',
     'module-mutation', 5, 13),
    ("def g(x):\n    return x\ndef f(df):\n    match 'to_csv':\n        case g:\n            return df.apply(g)\n",
     'dynamic-dispatch', 6, 29),
    ("def f(df):\n    float = 'to_clipboard'\n    return df.apply(float)\n", 'dynamic-dispatch', 3, 21),
    ('import numpy as np\ndef g(bytes=0):\n    return bytes\ndef f(a):\n    return bytes(a)\n', 'raw-memory', 5, 12),
    ('if False:\n    bytes = str\ndef f(a):\n    return bytes(a)\n', 'raw-memory', 4, 12),
    ("try:\n    from numpy import ndarray as A\nexcept ImportError:\n    from numpy import recarray as A\n",
     "ambiguous-binding", 4, 23),
    ("try:\n    from typing import cast as c\nexcept ImportError:\n    from numpy import mean as c\n",
     "ambiguous-binding", 4, 23),
    ("try:\n    from numpy import trapezoid\nexcept ImportError:\n    from numpy import trapz as trapezoid\n"
     "trapezoid.x = 1\n", "module-mutation", 5, 1),
]


@pytest.mark.parametrize("source,rule,line,col", CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_rule_is_reported_at_its_line_and_column(source, rule, line, col):
    report = check(source)
    hits = [v for v in report.violations if v.rule == rule]
    assert hits, f"expected {rule}, got {report.describe()}"
    assert (hits[0].line, hits[0].col) == (line, col), report.describe()


def _rules_triggered_by_the_tests() -> set[str]:
    found = {rule for _src, rule, _l, _c in CASES}
    for p in PAYLOADS:
        found |= set(check(p.code).rules) if p.expect == "policy" else set()
    for source in NASTY_INPUTS:
        found |= set(check(source).rules)  # type: ignore[arg-type]
    return found


def test_every_rule_is_triggered_by_a_case_or_a_payload(monkeypatch):
    """Each rule in the enumeration is pinned by at least one case or payload (internal-error by
    an analysis failure forced below), so no rule is documented but dead."""
    import finevo.policy as policy

    def broken(_code: str) -> list[Violation]:
        raise KeyError("forced")

    monkeypatch.setattr(policy, "check_source", broken)
    forced = policy.check("x = 1\n")
    assert forced.rules == (Rule.INTERNAL_ERROR,) and not forced.allowed
    monkeypatch.undo()
    missing = set(RULES) - _rules_triggered_by_the_tests() - {Rule.INTERNAL_ERROR.value}
    assert not missing, f"rules no test triggers: {sorted(missing)}"


def test_the_docs_list_exactly_the_rules_of_the_enumeration():
    readme = (benchmarks_dir().parent / "docs" / "sandbox.md").read_text(encoding="utf-8")
    start, end = "<!-- policy-rules:start -->\n", "<!-- policy-rules:end -->"
    assert start in readme and end in readme
    table = readme[readme.index(start) + len(start):readme.index(end)]
    assert table == rules_table(), "docs/sandbox.md: the policy table is stale: paste finevo.policy.rules_table()"
    assert all(rule.explanation and "\n" not in rule.explanation for rule in Rule)


def test_column_counts_characters_not_bytes():
    report = check("x = 'é€'; y = eval\n")
    assert report.first == Violation("forbidden-builtin", report.first.message, 1, 15)


ALLOWED_SOURCES = {
    "scary-docstring": '"""Lists a directory? No. os.system("rm -rf /"), eval(x), open(file), '
                       '__import__, subprocess, /etc/passwd are only words here."""\n'
                       "# comment: import os; os.system('rm -rf /')\n"
                       "text = 'import os; builtins; pd.read_csv(\"/etc/passwd\")'\n",
    "data-conversions": "import pandas as pd\n"
                        "def f(df: pd.DataFrame, s: pd.Series):\n"
                        "    return (df.to_dict(), s.to_list(), s.to_numpy(), s.to_frame(),\n"
                        "            pd.to_datetime(s), pd.to_numeric(s), pd.to_timedelta(s),\n"
                        "            df.index.to_period('M'), s.to_timestamp, df.to_records())\n",
    "text-writers-without-path": "def f(df):\n"
                                 "    return df.to_csv(), df.to_json(path_or_buf=None), df.to_string(index=False)\n",
    "shadowing-params": "def run(symbol: str, type: str = 'close', input: int = 3) -> str:\n"
                        "    return f'{symbol}-{type}-{input}'\n",
    "re-compile": "import re\nfrom re import fullmatch\nP = re.compile(r'x')\nQ = fullmatch('y', 'y')\n",
    "type-compared": "import numpy as np\n"
                     "def f(x, y):\n    return (type(x) is float or type(x) == type(y) or float is not type(y)\n"
                     "            or type(x) != np.float64 or type(x) is y)\n",
    "named-aggregation": "import pandas as pd\ndef f(df):\n"
                         "    return (df.groupby('k').agg(avg=('Close', 'mean'), hi=('High', max)),\n"
                         "            df.groupby('k').agg(lo=pd.NamedAgg(column='Low', aggfunc='min')),\n"
                         "            pd.pivot_table(df, index='k', aggfunc='sum'))\n",
    "formatters": "def f(df):\n    return (df.to_string(float_format='{:.2f}'.format),\n"
                  "            df.to_html(formatters={'a': lambda v: f'{v:.1f}'}, float_format='%.3f'))\n",
    "pivot-and-wraps": "import functools\nimport pandas as pd\ndef deco(g):\n    @functools.wraps(g)\n"
                       "    def inner(*a):\n        return g(*a)\n    return inner\n"
                       "def f(df):\n"
                       "    return pd.pivot_table(df, 'v', 'i', 'c', aggfunc='mean'), df.pivot_table('v', 'i')\n",
    "array-type-names": "import numpy as np\nimport numpy.typing as npt\nfrom numpy import ndarray\n"
                        "from numpy.typing import NDArray\n"
                        "def f(x: NDArray[np.float64], y: npt.NDArray[np.float64]) -> ndarray:\n"
                        "    z: NDArray[np.float64] = np.asarray(x) + y\n"
                        "    return z if isinstance(z, ndarray) else np.asarray(z)\n",
    "array-types": "import numpy as np\nfrom typing import Optional, cast\n"
                   "def f(x: np.ndarray, y: Optional[np.ndarray] = None) -> np.ndarray | None:\n"
                   "    a: np.ndarray = np.asarray(x)\n"
                   "    if isinstance(x, (list, np.ndarray)) or type(x) is np.ndarray:\n"
                   "        return cast(np.ndarray, a)\n    return None\n",
    "match-patterns": "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: float\n    y: float\n"
                      "def f(v):\n    match v:\n        case P(a, b):\n            return a + b\n"
                      "        case int(n) | float(n):\n            return n\n"
                      "        case {'k': w}:\n            return w\n"
                      "        case [a, *rest]:\n            return a\n    return 0\n",
    "dtype-type": "def f(a):\n    return a.dtype.type(3)\n",
    "self-obj": "class Holder:\n    def __init__(self, obj):\n        self.obj = obj\n",
    "test-as-a-field": "class Result:\n    test = 1.0\ndef f(r: Result):\n    r.test = 2.0\n    return r.test\n",
    "local-object-mutation": "import pandas as pd\nclass Box:\n    pass\n"
                             "def f(df: pd.DataFrame):\n    b = Box()\n    b.frame = df\n    df.attrs['x'] = 1\n"
                             "    pd.options.mode.chained_assignment = None\n    return b\n",
    "plain-format": "def f(x):\n    return '{:.2f} {} {name!r:>8}'.format(x, 1, name='a')\n",
    "decorators": "import functools\nfrom dataclasses import dataclass\nfrom functools import lru_cache\n"
                  "@dataclass(frozen=True)\nclass P:\n    a: float = 0.0\n"
                  "    def __post_init__(self):\n        pass\n"
                  "    @property\n    def b(self):\n        return self.a\n"
                  "@lru_cache(maxsize=8)\ndef g(n):\n    return n\n"
                  "@functools.lru_cache(maxsize=None)\ndef h(n):\n    return n\n",
    "dispatch-ok": "import numpy as np\ndef f(df):\n"
                   "    return (df.agg(['mean', 'std']), df.apply(lambda r: r.sum(), axis=1),\n"
                   "            df.rolling(3).apply(np.mean, raw=True), df.agg({'a': 'max'}), df.apply(float))\n",
    "safe-options": "import pandas as pd\npd.set_option('display.precision', 4)\n"
                    "pd.options.mode.chained_assignment = None\n"
                    "with pd.option_context('display.max_rows', 10):\n    pass\n",
    "allowed-submodules": "import numpy.linalg as la\nimport collections.abc\nfrom collections import abc\n"
                          "from numpy.lib.stride_tricks import sliding_window_view\n"
                          "from pandas.api.types import is_numeric_dtype\nimport numpy as np\n"
                          "x = np.random.default_rng(1), np.linalg.norm, collections.abc.Mapping\n",
    "everyday-names": "import numpy as np\ndef f(df, ts):\n"
                      "    return df.copy(), np.array([1]), np.select([True], [1]), ts.time(), np.trace\n",
    "main-guard": "from __future__ import annotations\n__all__ = ['run']\n"
                  "def run() -> int:\n    return 1\nif __name__ == '__main__':\n    print(run())\n",
    "list-remove": "def f(xs):\n    xs.remove(1)\n    return xs\n",
    "import-fallbacks-and-type-checking": (
        "from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import pandas as pd\n"
        "try:\n    import numpy as np\nexcept ImportError:  # pragma: no cover\n    np = None\n"
        "try:\n    from numpy import nanmean\nexcept ImportError:\n    from numpy import nanmean\n"
        "def f(df: pd.DataFrame) -> float:\n    return float(nanmean(np.asarray(df)))\n"),
    "function-locals-shadow-imports": (
        "from datetime import date\nimport numpy as np\n"
        "def days(rows):\n    return [date for date, _ in rows]\n"
        "def first(rows):\n    for date in rows:\n        return date\n"
        "def f(x):\n    match x:\n        case {'np': np, **rest}:\n            return np, rest\n"
        "    return date.today(), np.nan\n"),
    "pandas-attribute-stores": (
        "import pandas as pd\nimport yfinance as yf\n"
        "def f(symbol):\n    df = yf.Ticker(symbol).history(period='1mo')\n"
        "    df.columns = [c.lower() for c in df.columns]\n"
        "    df.index.name = 'date'\n    row = df.iloc[-1]\n    row.name = 'last'\n"
        "    frame = pd.DataFrame({'a': [1.0]})\n    frame.attrs['source'] = symbol\n    return row, frame\n"),
    "version-fallback-imports": (
        "try:\n    from numpy import trapezoid\nexcept ImportError:  # numpy < 2\n"
        "    from numpy import trapz as trapezoid\n"
        "def area(y, x):\n    return float(trapezoid(y, x))\n"),
    "scoped-bindings": (
        "import numpy as np\n"
        "def a(xs):\n    import statistics as st\n    return st.mean(xs)\n"
        "def b(xs):\n    import math as st\n    return st.fsum(xs)\n"
        "def c(rows):\n    out = {k: v for k, v in rows if (n := len(k)) > 1}\n"
        "    match rows:\n        case [first, *rest] if rest:\n            return first, rest, out\n"
        "        case {'k': value, **others}:\n            return value, others\n        case str() as text:\n"
        "            return text\n    total = 0\n    def add(x):\n        nonlocal total\n        total += x\n"
        "    for i, row in enumerate(rows):\n        add(i)\n    return total\n"
        "def d(np_values, float=float):\n    return [float(v) for v in np_values]\n"),
    "modules-used-directly": "import numpy as np\nimport numpy.linalg\nfrom numpy import linalg as la\n"
                             "def f(x: np.ndarray, np_like=None) -> float:\n"
                             "    return float(la.norm(x) + numpy.linalg.norm(x) + np.random.default_rng(1).random())\n"
                             "def g(np):\n    return np\n",
}


@pytest.mark.parametrize("name", sorted(ALLOWED_SOURCES))
def test_good_code_is_allowed(name):
    report = check(ALLOWED_SOURCES[name])
    assert report.allowed, report.describe()


# --------------------------------------------------------------------------- report shape
def test_report_shape_and_order():
    report = check("import os\nx = eval\n", filename="tool.py")
    assert isinstance(report, PolicyReport) and not report.allowed
    assert [v.line for v in report.violations] == sorted(v.line for v in report.violations)
    assert report.first == report.violations[0] and report.first.rule == "import-not-allowed"
    d = report.to_dict()
    assert d["allowed"] is False and d["filename"] == "tool.py"
    assert d["violations"][1] == {"rule": "forbidden-builtin", "message": report.violations[1].message,
                                  "line": 2, "col": 5}
    assert report.describe().splitlines()[0].startswith("tool.py:1:8: [import-not-allowed]")
    ok = check("x = 1\n")
    assert ok.allowed and ok.first is None and ok.to_dict()["violations"] == []


def test_allowed_imports_are_exactly_the_documented_list():
    assert frozenset({
        "pandas", "numpy", "math", "statistics", "datetime", "json", "decimal", "collections",
        "itertools", "functools", "re", "typing", "dataclasses", "yfinance", "warnings"}) == ALLOWED_IMPORTS
    for name in ALLOWED_IMPORTS:
        assert check(f"import {name}\n").allowed


# --------------------------------------------------------------------------- robustness
NASTY_INPUTS = [
    "", "\n", "\x00", "x = '\ud800'\n", "(" * 5000, "-" * 200_000 + "1",
    "[" * 90 + "]" * 90, "x = " + "(" * 200 + "1" + ")" * 200, "\ufeffx = 1\n", "\t\tx\n  y\n",
    "def f():\n\treturn 1\n        return 2\n", "'''unterminated", "f'{'", "x" * (T.MAX_SOURCE_CHARS + 1),
    "a" + ".b" * 3000, "not(" * 300 + "1" + ")" * 300, b"import os",  # type: ignore[list-item]
    None, 42,  # type: ignore[list-item]
]


@pytest.mark.parametrize("source", NASTY_INPUTS, ids=range(len(NASTY_INPUTS)))
def test_never_raises(source):
    report = check(source)  # type: ignore[arg-type]
    assert isinstance(report, PolicyReport)
    for v in report.violations:
        assert v.rule in RULES and v.line >= 1 and v.col >= 1


def test_never_raises_on_mangled_tools():
    rng = random.Random(1234)
    sources = [t.code for t in BENIGN[:10]]
    for _ in range(300):
        src = rng.choice(sources)
        i, j = sorted(rng.randrange(len(src)) for _ in range(2))
        mangled = src[:i] + rng.choice(["", "(", "__", "é", "\x00", "\n  ", "'", "@"]) + src[j:]
        assert isinstance(check(mangled), PolicyReport)


def test_too_deep_nesting_is_refused_not_raised():
    report = check("x = " + "-" * 50_000 + "1\n")
    assert not report.allowed and report.first.rule in {"too-complex", "syntax-error"}


# --------------------------------------------------------------------------- the tables stay honest
_DANGEROUS_CALLABLES = (open, eval, exec, compile, getattr, setattr, delattr, vars, globals, locals,
                        __import__, breakpoint, input, dir)


def _raw_array_classes() -> tuple[type, ...]:
    import numpy as np

    return (np.ndarray, np.recarray, np.char.chararray)


_RAW_ARRAY_CLASSES = _raw_array_classes()


def _resolve(route: str) -> object:
    parts = route.split(".")
    obj: object = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=2):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[:i]))
    return obj


def _allowed_routes() -> list[str]:
    return sorted(ALLOWED_IMPORTS - {"yfinance"}) + sorted(T.ALLOWED_SUBMODULES)


@pytest.mark.parametrize("route", [r for r in _allowed_routes() if hasattr(_resolve(r), "__path__")])
def test_known_submodules_cover_the_installed_packages(route):
    package = _resolve(route)
    found = {m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")}
    missing = found - T.KNOWN_SUBMODULES.get(route, frozenset())
    assert not missing, f"{route} has submodules the policy does not know: {sorted(missing)}"


@pytest.mark.parametrize("route", _allowed_routes())
def test_every_module_or_door_reachable_from_an_allowed_module_is_refused(route):
    """Walk the public attributes of each allowed module: whatever is a module outside the
    allowlist, or a builtin that opens doors, must be refused when reached by attribute."""
    mod = _resolve(route)
    prefix = f"import {route.split('.')[0]}\nx = {route}"
    leaks = []
    for name in dir(mod):
        if name.startswith("_"):
            continue  # refused by the private/dunder rules
        try:
            value = getattr(mod, name)
        except Exception:  # an attribute that fails cannot be used either
            continue
        # Every module, allowed ones included: used as a value it must be refused (an allowed
        # submodule by the module-value rule), or it would escape the route checks -- numpy under
        # another name (``np.polynomial.chebyshev.np``), ``re`` as ``typing.stdlib_re``.
        is_module = isinstance(value, types.ModuleType)
        origin = getattr(value, "__origin__", None) if isinstance(value, types.GenericAlias) else None
        candidate = origin if isinstance(origin, type) else value
        array_class = any(candidate is c for c in _RAW_ARRAY_CLASSES)
        dangerous = is_module or array_class or any(value is d for d in _DANGEROUS_CALLABLES)
        if dangerous and check(f"{prefix}.{name}\n").allowed:
            leaks.append(f"{route}.{name}")
    assert not leaks, f"reachable without a violation: {leaks}"


@pytest.mark.parametrize("route", _allowed_routes())
def test_no_metaclass_reachable_from_an_allowed_module_can_be_held(route):
    """A metaclass held as a value and called with (name, bases, namespace) builds a class whose
    dunder keys are plain strings (``__match_args__``, ``__array_interface__``): every one reachable
    from an allowed module or from one of its public classes must be refused."""
    mod = _resolve(route)
    prefix = f"import {route.split('.')[0]}\nx = {route}"
    leaks = []
    for name in dir(mod):
        if name.startswith("_"):
            continue
        value = getattr(mod, name, None)
        paths = [(name, value)]
        if isinstance(value, type):
            paths += [(f"{name}.{sub}", getattr(value, sub, None)) for sub in dir(value) if not sub.startswith("_")]
        for path, obj in paths:
            if isinstance(obj, type) and issubclass(obj, type) and check(f"{prefix}.{path}\n").allowed:
                leaks.append(f"{route}.{path}")
    assert not leaks, f"metaclasses reachable without a violation: {leaks}"


def _classes_and_everyday_objects() -> list[tuple[str, object]]:
    import datetime
    import decimal
    import re

    import numpy as np
    import pandas as pd

    found: list[tuple[str, object]] = []
    for route in _allowed_routes():
        mod = _resolve(route)
        for name in dir(mod):
            value = getattr(mod, name, None)
            if not name.startswith("_") and isinstance(value, type):
                found.append((f"{route}.{name}", value))
    frame = pd.DataFrame({"Close": [1.0, 2.0, 3.0], "Volume": [1, 2, 3]},
                         index=pd.date_range("2024-01-01", periods=3, name="Date"))
    close = frame["Close"]
    found += [("frame", frame), ("series", close), ("index", frame.index), ("rolling", close.rolling(2)),
              ("ewm", close.ewm(span=2)), ("groupby", frame.groupby("Volume")), ("resample", frame.resample("W")),
              ("loc", frame.loc), ("iloc", frame.iloc), ("str", pd.Series(["a"]).str),
              ("dt", close.index.to_series().dt),
              ("timestamp", pd.Timestamp("2024-01-01")), ("timedelta", pd.Timedelta(1)),
              ("period", pd.Period("2024Q1")), ("offset", pd.offsets.BDay()), ("array", np.arange(3.0)),
              ("generator", np.random.default_rng(1)), ("masked", np.ma.array([1.0])), ("finfo", np.finfo(float)),
              ("polynomial", np.polynomial.Polynomial([1.0])), ("datetime", datetime.datetime(2024, 1, 1)),
              ("decimal", decimal.Decimal(1)), ("context", decimal.getcontext()), ("pattern", re.compile("x")),
              ("match", re.match("x", "x")), ("flags", frame.flags), ("options", pd.options)]
    return found


def test_no_everyday_object_hands_out_an_array_class_under_an_unguarded_name():
    """An ndarray class held as a value builds arrays over a raw buffer (object pointers from
    integers): every public attribute that holds one must be in RAW_ARRAY_TYPES (type-only use)."""
    import inspect
    import warnings

    import numpy as np

    objects = [*_classes_and_everyday_objects(), ("masked", np.ma.array([1.0])), ("matrix", np.matrix([[1.0]]))]
    leaks = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for where, obj in objects:
            for name in dir(obj):
                if name.startswith("_") or name in T.RAW_ARRAY_TYPES:
                    continue
                try:
                    values = [inspect.getattr_static(obj, name), getattr(obj, name)]
                except Exception:  # an attribute that fails holds nothing
                    continue
                for v in values:
                    origin = getattr(v, "__origin__", None) if isinstance(v, types.GenericAlias) else None
                    cls = origin if isinstance(origin, type) else v
                    if any(cls is c for c in _RAW_ARRAY_CLASSES):
                        leaks.append(f"{where}.{name}")
    assert not leaks, f"array classes reachable under unguarded names: {leaks}"


def test_no_class_or_everyday_object_of_the_allowed_modules_holds_a_module():
    """Why module names are refused only on chains that start at a module (and door names on any
    object): a tool cannot hold a module in a variable (module-value rule, and the walk above), so
    a module could only reach an ordinary object as one of its public attributes. None has one."""
    import inspect
    import warnings

    holders = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for where, obj in _classes_and_everyday_objects():
            for name in dir(obj):
                if name.startswith("_"):
                    continue
                try:
                    values = [inspect.getattr_static(obj, name), getattr(obj, name)]
                except Exception:  # an attribute that fails holds nothing
                    continue
                if any(isinstance(v, types.ModuleType) for v in values) and name not in T.DOOR_MODULE_NAMES:
                    holders.append(f"{where}.{name}")
    assert not holders, f"objects exposing a module under a name the policy allows: {holders}"


@pytest.mark.parametrize("route", ["np.polynomial.chebyshev.np.ctypeslib.load_library",
                                   "np.polynomial.polynomial.np.lib.format.open_memmap",
                                   "pd.tseries.holiday.np.ctypeslib.load_library",
                                   "pd.tseries.frequencies.np.testing"])
def test_a_package_re_exported_by_an_allowed_submodule_is_not_a_way_around_the_routes(route):
    report = check(f"import numpy as np\nimport pandas as pd\nx = {route}\n")
    assert not report.allowed and report.first.rule == "submodule-not-allowed", report.describe()


def test_door_module_names_are_refused_as_attributes_on_any_receiver():
    for name in ("os", "sys", "subprocess", "ctypes", "pickle", "builtins", "importlib", "io",
                 "inspect", "socket", "shutil", "codecs", "operator", "types", "gc", "marshal"):
        assert name in T.DOOR_MODULE_NAMES
        report = check(f"def f(obj):\n    return obj.{name}\n")
        assert report.first is not None and report.first.rule == "module-attribute", name


# --------------------------------------------------------------------------- relaxations, each with
# the dangerous route it must not open
RELAXATIONS = {
    # module names that are data fields: fine on a tool's own objects, refused on a module route
    "module-name-as-data-field": (
        "from dataclasses import dataclass\n@dataclass\nclass Row:\n    signal: float\n    code: str\n"
        "    stat: float\n    token: str\n"
        "def run(r: Row, x) -> tuple:\n    r.signal = 1.0\n    return r.signal, r.code, x.stat, x.token\n",
        ["import typing\nx = typing.io\n", "import json\nx = json.codecs.lookup\n",
         "import pandas as pd\nx = pd.Timestamp.signal\n", "from typing import sys\n",
         "import typing\nx = typing.stdlib_re.enum\n", "import statistics\nr = statistics.random\n",
         "def f(obj):\n    return obj.os.environ\n", "def f(arr):\n    return arr.ctypes\n"]),
    # hist / boxplot / query as data: never called, stored, passed, returned or compared
    "inert-method-names": (
        "class Tracker:\n    def __init__(self, query: str) -> None:\n        self.hist = []\n"
        "        self.query = query\n        self.boxplot = {}\n"
        "    def add(self, x: float) -> float:\n        self.hist.append(x)\n        self.hist[-1] = x\n"
        "        if self.hist and not self.boxplot:\n            pass\n"
        "        for h in self.hist:\n            x += h\n"
        "        return len(self.hist) + sum(self.hist) + max(self.hist) + len(self.query.lower())\n"
        "    def reset(self) -> None:\n        del self.hist\n        self.hist = [v for v in list(self.hist)]\n",
        ["def f(df):\n    return df.hist(backend='os')\n", "def f(df):\n    return df.query('a > 1')\n",
         "def f(df):\n    h = df.hist\n    return h(backend='os')\n", "def f(df):\n    return df.hist\n",
         "def f(df, g):\n    return g(df.boxplot)\n", "def f(df):\n    return [df.query]\n",
         "import functools\ndef f(df):\n    return functools.partial(df.hist, backend='os')\n",
         "def f(df, box):\n    return df.query == box\n", "def f(df, box):\n    return df.hist in box\n",
         "def f(df):\n    return len(df.hist, 1)\n", "def len(x):\n    return x\ndef f(df):\n    return len(df.hist)\n",
         "def f(df):\n    match df:\n        case object(query=q):\n            return q\n",
         "import pandas as pd\nx = pd.DataFrame.hist\n"]),
    # super().<special method>(...) called at once
    "super-special-call": (
        "import pandas as pd\nclass Frame(pd.DataFrame):\n    def __init__(self, data) -> None:\n"
        "        super().__init__(data)\n    def __repr__(self) -> str:\n        return 'F' + super().__repr__()\n"
        "    def __getitem__(self, key):\n        return super().__getitem__(key)\n",
        ["class A:\n    def f(self):\n        return super().__class__\n",
         "class A:\n    def f(self):\n        init = super().__init__\n        return init\n",
         "class A:\n    def f(self):\n        return super().__init_subclass__()\n",
         "class A:\n    def f(self):\n        return super().__getattribute__('x')\n",
         "class A:\n    def f(self, obj):\n        return super(A, obj).__init__()\n",
         "def f(super):\n    return super().__init__()\n",
         "class A:\n    def f(self):\n        s = super()\n        return s.__init__()\n",
         "def f(o):\n    return o.__init__()\n"]),
}


@pytest.mark.parametrize("name", sorted(RELAXATIONS))
def test_relaxation_allows_the_good_code_and_keeps_the_dangerous_route_closed(name):
    good, dangerous = RELAXATIONS[name]
    assert check(good).allowed, check(good).describe()
    for source in dangerous:
        assert not check(source).allowed, f"{name}: {source!r} passed the policy"


def test_no_string_or_comment_text_is_scanned():
    words = ["os.system", "rm -rf /", "eval(", "open(", "subprocess", "directory",
             "read_csv", "/etc/passwd", "__FINEVO_RESULT__"]
    for w in words:
        src = f'"""{w}"""\n# {w}\nx = {w!r}\ny = b{w!r}\nz = f"{{1}} {w}"\n'
        assert check(src).allowed, w


def test_dunder_names_are_words_in_docstrings_and_comments_but_never_string_data():
    """The one exception to not scanning strings: data that spells a dunder identifier is what
    pandas turns into an attribute (a Series labelled '__array_interface__' is raw memory)."""
    for w in ["__import__", "__subclasses__", "__array_interface__"]:
        assert check(f'"""Never {w}."""\n# {w}\ny = b{w!r}\n').allowed, w
        for data in (f"x = {w!r}\n", f"x = 'a {w} b'\n", f"x = '{w[:5]}' + '{w[5:]}'\n",
                     f"x = '_' * 2 + '{w[2:]}'\n", f"x = ''.join(['{w[:4]}', '{w[4:]}'])\n",
                     f"x = f'{w[:3]}{{\"\"}}{w[3:]}'\n", f"def f():\n    return {{'{w}': 1}}\n"):
            report = check(data)
            assert report.rules == (Rule.DUNDER_STRING,), (data, report.describe())
    for data in ("x = 'x__ARRAY_INTERFACE__x'[1:-1].lower()\n", "x = 'array_struct'\n", "x = 'DLPack'\n"):
        assert check(data).rules == (Rule.DUNDER_STRING,), data
    tree = ast.parse(ALLOWED_SOURCES["scary-docstring"])
    assert tree.body  # the sample really holds those words in code-shaped strings


# --------------------------------------------------------------------------- the binding pre-pass
def _names(tree: ast.Module, name: str, ctx: type = ast.Load) -> list[ast.Name]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ctx)]


def test_bindings_resolve_each_use_to_the_scope_python_uses():
    from finevo.policy.bindings import Bindings, Kind, ScopeKind

    src = ("import numpy as np\nimport json\n"
           "class A:\n    np = 1\n    seen = [np for _ in range(1)]\n    first = [x for x in [np]]\n"
           "    def m(self):\n        return np\n"
           "def f(rows):\n    total = [y := r for r in rows]\n    return y, total\n"
           "def g():\n    import pandas as np\n    def h():\n        return np\n    return h\n"
           "def k():\n    global json\n    return json\n")
    tree = ast.parse(src)
    b = Bindings(tree)
    uses = _names(tree, "np")
    # in the comprehension and in the method the class's np is skipped; the first iterable is the class's
    by_line = {n.lineno: b.import_route(n) for n in uses}
    assert by_line == {5: "numpy", 6: None, 8: "numpy", 15: "pandas"}
    walrus = _names(tree, "y")[0]
    assert b.owner(walrus) is not None and b.owner(walrus).kind is ScopeKind.FUNCTION
    assert {bd.kind for bd in b.bindings_of(walrus)} == {Kind.WALRUS}
    assert b.import_route(_names(tree, "json")[-1]) == "json"
    assert [c.rule for c in b.conflicts] == [Rule.AMBIGUOUS_BINDING, Rule.IMPORT_REBOUND]  # global json; A.np


def test_bindings_record_every_kind_of_binding():
    from finevo.policy.bindings import Bindings, Kind

    src = ("import a.b\nfrom c import d as e\n"
           "def f(p, /, q, *r, s, **t):\n"
           "    for u in p: pass\n    with q as v: pass\n    try: pass\n    except E as w: pass\n"
           "    match p:\n        case [x, *y] | {'k': x, **y} if (z := 1): pass\n        case C(a=x) as y: pass\n"
           "    del u\n    [m for m in p]\n")
    b = Bindings(ast.parse(src))
    kinds = {(bd.name, bd.kind) for bd in b.all}
    for expected in [("a", Kind.IMPORT), ("e", Kind.IMPORT), ("f", Kind.DEF), ("p", Kind.PARAM), ("t", Kind.PARAM),
                     ("u", Kind.LOOP), ("v", Kind.WITH), ("w", Kind.EXCEPT), ("x", Kind.MATCH), ("y", Kind.MATCH),
                     ("z", Kind.WALRUS), ("u", Kind.DELETE), ("m", Kind.COMPREHENSION)]:
        assert expected in kinds, expected
    assert {bd.route for bd in b.all if bd.kind is Kind.IMPORT} == {"a", "c.d"}


#: Classes of escape, each with one representative the policy must refuse and the rule it names.
CLOSED_CLASSES = {
    "dead-branch re-import": ("import numpy as np\nif False:\n    import json as np\n", "ambiguous-binding"),
    "except-ImportError re-import": ("try:\n    import numpy as np\nexcept ImportError:\n    import json as np\n",
                                     "ambiguous-binding"),
    "TYPE_CHECKING shadow of type": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                     "    from typing import Type as type\nT = type('T', (), {})\n",
                                     "ambiguous-binding"),
    "uncalled function global re-import": ("import numpy as np\ndef g():\n    global np\n    import json as np\n",
                                           "ambiguous-binding"),
    "match capture rebinding a callable": ("def g(x):\n    return x\ndef f(df):\n    match 'to_csv':\n"
                                           "        case g:\n            return df.apply(g)\n", "dynamic-dispatch"),
    "pandas eval unbound": ("import pandas as pd\nf = pd.DataFrame.eval\n", "forbidden-attribute"),
    "pandas eval through partial": ("import functools\nimport pandas as pd\n"
                                    "f = functools.partial(pd.DataFrame.eval)\n", "forbidden-attribute"),
    "pandas query through pipe": ("import pandas as pd\ndef f(df):\n    return df.pipe(pd.DataFrame.query, 'a')\n",
                                  "forbidden-attribute"),
    "pandas eval by dispatch name": ("def f(df):\n    return df.agg('eval', 'a + 1')\n", "dynamic-dispatch"),
    "pandas core computation": ("import pandas as pd\nx = pd.core.computation.expressions\n", "submodule-not-allowed"),
    "pandas._libs import": ("import pandas._libs.lib as lib\n", "submodule-not-allowed"),
    "numpy.core route": ("import numpy as np\nx = np.core.multiarray\n", "submodule-not-allowed"),
    "numpy._core from-import": ("from numpy._core.multiarray import empty_like\n", "submodule-not-allowed"),
    "numpy.lib internals": ("import numpy as np\nx = np.lib.npyio\n", "submodule-not-allowed"),
    "array interface label": ("import pandas as pd\ns = pd.Series([{}], index=['__array_interface__'])\n",
                              "dunder-string"),
    "array struct key": ("d = {'__array_struct__': None}\n", "dunder-string"),
    "decorator as a call": ("import pandas as pd\n@pd.compat.pickle_compat.loads\ndef f():\n    pass\n", "decorator"),
    "default argument module": ("import pandas as pd\ndef f(m=pd):\n    return m\n", "module-value"),
    "lambda default module": ("import numpy as np\ng = lambda m=np: m\n", "module-value"),
    "format_map": ("def f(t, o):\n    return t.format_map(o)\n", "format-string"),
    "str.format unbound": ("def f(t, o):\n    return str.format(t, o)\n", "format-string"),
    "operator import": ("import operator\n", "import-not-allowed"),
    "operator through typing": ("import typing\nx = typing.operator\n", "submodule-not-allowed"),
    "copyreg through re": ("import re\nx = re.copyreg\n", "submodule-not-allowed"),
    "__init_subclass__ keyword": ("class A(x=1):\n    pass\n", "class-keyword"),
    "__set_name__ definition": ("class D:\n    def __set_name__(self, owner, name):\n        pass\n", "dunder-name"),
    "__class_getitem__ definition": ("class D:\n    def __class_getitem__(cls, item):\n        pass\n", "dunder-name"),
    "__get__ descriptor": ("class D:\n    def __get__(self, obj, kind):\n        pass\n", "dunder-name"),
    "star import": ("from math import *\n", "import-star"),
    "relative import": ("from .x import y\n", "relative-import"),
    "importlib": ("import importlib\n", "import-not-allowed"),
    "__builtins__ dict": ("x = __builtins__['open']\n", "dunder-name"),
    "generator frame": ("def f(g):\n    return g.gi_frame.f_back\n", "forbidden-attribute"),
    "traceback frame": ("def f(e):\n    return e.tb_frame\n", "forbidden-attribute"),
    "exc_info": ("import statistics\nx = statistics.sys.exc_info()\n", "submodule-not-allowed"),
    "catch_warnings module": ("import warnings\nwith warnings.catch_warnings(module=int):\n    pass\n",
                              "forbidden-attribute"),
    "warnings internals": ("import warnings\nx = warnings.showwarning\n", "forbidden-attribute"),
    "re callback door": ("import re\nx = re.sub('a', eval, 'a')\n", "forbidden-builtin"),
    "json object_hook door": ("import json\nx = json.loads('{}', object_hook=vars)\n", "forbidden-builtin"),
    "UserDict data": ("import collections\ndef f(d: collections.UserDict):\n    return d.data\n", "raw-memory"),
    "dataclass default_factory door": ("import dataclasses\n@dataclasses.dataclass\nclass A:\n"
                                       "    x: list = dataclasses.field(default_factory=globals)\n",
                                       "forbidden-builtin"),
    "decimal module route": ("import decimal\nx = decimal.sys\n", "module-attribute"),
    "statistics random": ("import statistics\nx = statistics.random.SystemRandom\n", "submodule-not-allowed"),
    "class-body import": ("class Box:\n    import numpy as np\n", "module-value"),
    "mutation through a subscript": ("import json\n[json.JSONEncoder][0].encode = None\n", "module-mutation"),
    "mutation through next(iter())": ("import json\nnext(iter([json.JSONEncoder])).encode = None\n",
                                      "module-mutation"),
    "mutation through a walrus target": ("import json\n(C := json.JSONEncoder).encode = None\n", "module-mutation"),
    "mutation through a dict item": ("import json\nd = {'k': json.JSONEncoder}\nd['k'].encode = None\n",
                                     "module-mutation"),
}


@pytest.mark.parametrize("name", sorted(CLOSED_CLASSES))
def test_each_class_of_escape_is_refused_with_its_rule(name):
    source, rule = CLOSED_CLASSES[name]
    report = check(source)
    assert rule in report.rules, f"{name}: {report.describe()}"


def test_strings_built_from_constants_are_folded_without_recursion():
    """A long ``'a' + 'b' + ...`` chain is judged, not refused as too complex, and a dunder spelled by
    any part of it (also a parenthesised part next to a computed term) is found."""
    chain = "x = " + " + ".join(["'ab'"] * 450) + "\n"
    assert check(chain).allowed, check(chain).describe()
    for source in ["x = y + ('__arr' + 'ay_interface__')\n", "x = ('__arr' + 'ay_interface__') + y\n",
                   "x = " + " + ".join(["'ab'"] * 300) + " + ' __glo' + 'bals__'\n"]:
        assert check(source).rules == (Rule.DUNDER_STRING,), source
