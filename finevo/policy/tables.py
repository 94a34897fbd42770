"""The data the static policy decides with: which imports, module routes, attribute names and
builtins are allowed.

Everything here is an allowlist except where an allowlist cannot work (attribute names on
objects whose type is unknown statically); those denylists are paired with a test that walks the
allowed modules and proves every reachable module object is refused.
"""

from __future__ import annotations

import sys

#: Top-level modules a tool may import.
ALLOWED_IMPORTS: frozenset[str] = frozenset({
    "pandas", "numpy", "math", "statistics", "datetime", "json", "decimal", "collections",
    "itertools", "functools", "re", "typing", "dataclasses", "yfinance", "warnings",
})

#: Submodules (dotted routes) that may be imported or reached as attributes.
ALLOWED_SUBMODULES: frozenset[str] = frozenset({
    "collections.abc",
    "numpy.linalg", "numpy.random", "numpy.fft", "numpy.ma", "numpy.typing", "numpy.exceptions",
    "numpy.dtypes", "numpy.emath", "numpy.polynomial", "numpy.polynomial.polynomial",
    "numpy.polynomial.chebyshev", "numpy.polynomial.legendre", "numpy.polynomial.hermite",
    "numpy.polynomial.hermite_e", "numpy.polynomial.laguerre", "numpy.lib.stride_tricks",
    "pandas.api.types", "pandas.api.indexers", "pandas.arrays", "pandas.errors", "pandas.tseries",
    "pandas.tseries.offsets", "pandas.tseries.frequencies", "pandas.tseries.holiday",
    "pandas.offsets", "pandas.testing",
})

#: Packages that are only a way through to an allowed submodule (``np.lib.stride_tricks``):
#: the route is refused when it stops there or turns elsewhere (``np.lib.format``).
PASS_THROUGH: frozenset[str] = frozenset({"numpy.lib", "pandas.api"})

#: Known submodules / module-valued attributes of the allowed packages. A route through any of
#: them that is not in :data:`ALLOWED_SUBMODULES` is refused. A test keeps this table in step
#: with the installed numpy and pandas.
KNOWN_SUBMODULES: dict[str, frozenset[str]] = {
    "numpy": frozenset({
        "char", "conftest", "core", "ctypeslib", "distutils", "dtypes", "emath", "exceptions",
        "f2py", "fft", "lib", "linalg", "ma", "matlib", "matrixlib", "polynomial", "random", "rec",
        "strings", "testing", "tests", "typing", "version", "compat", "doc", "oldnumeric",
        "numarray", "array_api",
    }),
    "pandas": frozenset({
        "api", "arrays", "compat", "conftest", "core", "errors", "io", "offsets", "pandas",
        "plotting", "testing", "tests", "tseries", "util",
    }),
    "numpy.lib": frozenset({
        "format", "npyio", "stride_tricks", "recfunctions", "scimath", "mixins", "array_utils",
        "introspect", "utils", "tests", "user_array",
    }),
    "pandas.api": frozenset({"types", "indexers", "extensions", "interchange", "typing", "executors",
                             "internals"}),
    "json": frozenset({"decoder", "encoder", "scanner", "tool", "codecs"}),
    "collections": frozenset({"abc"}),
    # module-valued names inside the allowed submodules (internals, test helpers, C cores)
    "numpy.random": frozenset({"bit_generator", "mtrand", "tests"}),
    "numpy.ma": frozenset({"core", "extras", "mrecords", "tests", "testutils", "timer_comparison"}),
    "numpy.polynomial": frozenset({"chebyshev", "hermite", "hermite_e", "laguerre", "legendre",
                                   "polynomial", "polyutils", "tests"}),
    # ``np`` re-exported by a submodule is numpy again under a route whose next steps
    # (``.ctypeslib``, ``.lib.format``) would otherwise go unchecked
    "numpy.polynomial.polynomial": frozenset({"pu", "polyutils", "np"}),
    "numpy.polynomial.chebyshev": frozenset({"pu", "polyutils", "np"}),
    "numpy.polynomial.legendre": frozenset({"pu", "polyutils", "np"}),
    "numpy.polynomial.hermite": frozenset({"pu", "polyutils", "np"}),
    "numpy.polynomial.hermite_e": frozenset({"pu", "polyutils", "np"}),
    "numpy.polynomial.laguerre": frozenset({"pu", "polyutils", "np"}),
    "numpy.linalg": frozenset({"lapack_lite", "linalg", "tests"}),
    "numpy.fft": frozenset({"helper", "tests"}),
    "numpy.typing": frozenset({"mypy_plugin", "tests"}),
    "pandas.tseries": frozenset({"api", "frequencies", "holiday", "offsets"}),
    "pandas.tseries.frequencies": frozenset({"lib", "np", "warnings"}),
    "pandas.tseries.holiday": frozenset({"np", "warnings"}),
    "pandas.errors": frozenset({"abc", "cow", "ctypes"}),
    # modules the allowed standard-library modules import under their own or another name
    # (``typing.stdlib_re`` is ``re``, ``statistics.random`` the stdlib ``random``): a route to
    # them would hand out a module object the module-value rule could not recognise
    "dataclasses": frozenset({"abc", "builtins", "copy", "functools", "inspect", "itertools", "keyword",
                              "re", "sys", "types"}),
    "datetime": frozenset({"sys"}),
    "re": frozenset({"copyreg", "enum", "functools"}),
    "statistics": frozenset({"math", "numbers", "random", "sys"}),
    "typing": frozenset({"collections", "contextlib", "functools", "operator", "stdlib_re", "sys", "types",
                         "warnings"}),
    "warnings": frozenset({"sys"}),
}

#: The only attributes of ``yfinance`` (the replay shim in the sandbox) a tool may use.
YFINANCE_ATTRIBUTES: frozenset[str] = frozenset({"Ticker", "Tickers", "download"})

#: Builtins that open doors: refused as names in every context (called, aliased, passed, stored)
#: unless the name is rebound by a function parameter or an allowed import (``from re import compile``).
FORBIDDEN_BUILTINS: frozenset[str] = frozenset({
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "globals", "locals",
    "vars", "dir", "breakpoint", "input", "help", "exit", "quit", "memoryview", "license",
    "copyright", "credits",
    # an object's address: with any raw-memory route, the way to forge a pointer to it
    "id",
})

#: Dunder identifiers a string constant may spell (``if __name__ == "__main__":``).
ALLOWED_DUNDER_STRINGS: frozenset[str] = frozenset({"__main__"})

#: Protocols through which numpy reads raw memory from an object's attributes: refused inside any
#: string data, in any case and with any surroundings (a label is easily trimmed or lower-cased).
RAW_MEMORY_PROTOCOL_WORDS: tuple[str, ...] = ("array_interface", "array_struct", "dlpack")

#: Keywords of library calls that hand the library an object to rewrite, by call route.
FORBIDDEN_KEYWORDS: dict[str, frozenset[str]] = {"warnings.catch_warnings": frozenset({"module"})}
FORBIDDEN_KEYWORDS_WHY: dict[str, str] = {
    "warnings.catch_warnings": "it replaces the 'filters' and 'showwarning' attributes of the object it is given",
}

#: Dunder names a tool may use as plain names: ``if __name__ == "__main__":`` (load only) and
#: ``__all__`` (module-level assignment only).
ALLOWED_DUNDER_NAMES: frozenset[str] = frozenset({"__name__", "__all__"})

#: Special methods a tool may *define* inside a class body (never access as attributes).
ALLOWED_DUNDER_METHODS: frozenset[str] = frozenset({
    "__init__", "__post_init__", "__repr__", "__str__", "__eq__", "__ne__", "__lt__", "__le__",
    "__gt__", "__ge__", "__hash__", "__len__", "__iter__", "__next__", "__getitem__",
    "__contains__", "__bool__", "__add__", "__sub__", "__mul__", "__truediv__", "__neg__",
    "__abs__", "__float__", "__int__",
})

#: ``to_*`` methods that convert data in memory (allowed anywhere).
SAFE_CONVERSIONS: frozenset[str] = frozenset({
    "to_dict", "to_list", "to_numpy", "to_frame", "to_series", "to_datetime", "to_numeric",
    "to_timedelta", "to_period", "to_timestamp", "to_pydatetime", "to_datetime64",
    "to_pytimedelta", "to_timedelta64", "to_offset", "to_flat_index", "to_records", "to_bytes",
    "to_integral", "to_integral_value", "to_integral_exact", "to_eng_string", "to_sci_string",
    "to_julian_date", "to_dense", "to_tuples", "to_coo",
})

#: ``to_*`` writers that return text when given no path: allowed only when called directly,
#: with no positional argument, no ``**`` splat and no path/buffer keyword (other than None).
TEXT_WRITERS: frozenset[str] = frozenset({
    "to_csv", "to_json", "to_string", "to_html", "to_latex", "to_markdown",
})
TEXT_WRITER_PATH_KEYWORDS: frozenset[str] = frozenset({"path_or_buf", "buf", "path", "excel_writer"})

#: Attribute names that do file, network or pickle I/O (pandas, numpy, json, ...).
FILE_IO_ATTRIBUTES: frozenset[str] = frozenset({
    "open", "load", "dump", "save", "savez", "savez_compressed", "savetxt", "loadtxt",
    "genfromtxt", "fromfile", "fromregex", "tofile", "memmap", "open_memmap", "DataSource",
    "ExcelWriter", "ExcelFile", "HDFStore", "read_pickle", "urlopen", "getline", "getlines",
    # to_xml hands its stylesheet to lxml's XSLT engine, whose document() / exsl:document read
    # and write files in C, where no audit event fires: refused whatever its arguments
    "to_xml",
})

#: Module attributes that start other programs inside the interpreter (refused on a module route;
#: as data fields of a tool's own objects they are ordinary names).
MODULE_RUNNERS: dict[str, str] = {
    "test": "numpy.test / pandas.test start pytest with arguments (plugins, hooks) the tool chooses",
}

#: Attribute names refused on any receiver, with the reason given in the violation.
FORBIDDEN_ATTRIBUTES: dict[str, str] = {}
for _names, _why in (
    (("f_back", "f_builtins", "f_code", "f_globals", "f_locals", "f_trace", "f_lasti",
      "tb_frame", "tb_next", "tb_lasti", "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame",
      "cr_code", "cr_await", "cr_origin", "ag_frame", "ag_code", "ag_await", "co_code",
      "co_consts", "co_names", "co_varnames", "co_filename", "func_globals", "func_code",
      "im_func", "im_self", "mro"),
     "frame / code introspection reaches the interpreter's globals and builtins"),
    (("eval", "query", "get_type_hints", "ForwardRef", "attrgetter", "methodcaller",
      "get_field", "vformat", "make_dataclass", "from_string", "style", "Styler", "env",
      "plot", "plotting", "hist", "boxplot", "as_strided", "warn_explicit", "formatwarning",
      "showwarning", "CodeType", "FunctionType", "LambdaType", "ModuleType", "new_class",
      "show_versions", "show_config", "show_runtime"),
     "evaluates strings as code, loads modules dynamically or touches raw memory"),
    (("register",),
     "functools.singledispatch's register() evaluates the function's string annotations as code"),
    (("frombuffer", "fromstring"),
     "builds arrays or views over raw bytes (object dtypes turn integers into pointers)"),
    (("ABCMeta", "NamedTupleMeta", "HolidayCalendarMetaClass", "get_origin"),
     "metaclasses (get_origin(Type[int]) is type) build classes with dunder keys from plain strings"),
    (("import_optional_dependency",),
     "pandas' optional-dependency loader imports any module by name"),
    (("update_wrapper",),
     "copies attributes named by strings (e.g. another module's __globals__) onto a function"),
    (("system", "popen", "Popen", "environ", "environb", "getenv", "putenv", "unsetenv", "fork",
      "forkpty", "execv", "execve", "execl", "execle", "execlp", "execvp", "execvpe", "spawnv",
      "spawnve", "spawnl", "posix_spawn", "kill", "killpg", "unlink", "rmdir",
      "removedirs", "rmtree", "chmod", "chown", "symlink", "listdir", "scandir", "walk",
      "mkdir", "makedirs", "chdir", "getcwd", "check_output", "check_call", "getoutput",
      "getstatusoutput", "connect", "create_connection", "getaddrinfo", "modules", "settrace",
      "setprofile", "addaudithook", "setrecursionlimit", "abort"),
     "operating-system access (processes, environment, files, sockets)"),
):
    for _n in _names:
        FORBIDDEN_ATTRIBUTES[_n] = _why
del _names, _why

#: Of :data:`FORBIDDEN_ATTRIBUTES`, methods that are dangerous only when *called* (or handed on to
#: be called later): ``df.query(expr)`` evaluates a string, ``df.hist(backend="m")`` and
#: ``df.boxplot(backend="m")`` import the module ``m``. The same names are everyday data fields of
#: a tool's own objects (``self.hist = []``, ``task.query``), so uses in which a bound method would
#: be inert are allowed: assigned or deleted, indexed, its attribute read (a bound method has no
#: public attributes), iterated, tested for truth, or the sole argument of a builtin in
#: :data:`INERT_BUILTINS`. Called, stored, passed, returned or compared, they stay refused.
INERT_USE_ATTRIBUTES: frozenset[str] = frozenset({"hist", "boxplot", "query"})
#: Builtins that neither call, keep nor return their one argument (they only measure, convert or
#: iterate it, and a bound method makes them raise).
INERT_BUILTINS: frozenset[str] = frozenset({
    "len", "sum", "min", "max", "sorted", "list", "tuple", "set", "any", "all", "enumerate",
    "reversed", "bool", "float", "int", "str",
})

#: Module names that must never be reached as an attribute *of a module* (``typing.sys``,
#: ``pd.io``, ``inspect.os``, ``json.codecs``): every standard-library module plus the
#: third-party packages installed next to pandas/yfinance, minus the allowed imports and a few
#: names that are also everyday method names of harmless modules (``np.array``, ``df.copy()``,
#: ``np.random``, ``np.select``, ``ts.time()``, ``np.trace``, ``s.struct``).
#:
#: On any other receiver only :data:`DOOR_MODULE_NAMES` are refused: a tool cannot hold a module
#: in a variable (the module-value rule), so a module reaches an ordinary object only as an
#: attribute some library set on it, and a test walks the classes of the allowed modules and
#: common pandas / numpy objects to prove none has a module-valued public attribute. Names such as
#: ``signal``, ``code``, ``stat`` or ``token`` are everyday data fields (``r.signal``).
_EVERYDAY_NAMES = frozenset({"array", "copy", "random", "select", "time", "trace", "struct"})
MODULE_NAMES: frozenset[str] = frozenset(
    {n for n in sys.stdlib_module_names if not n.startswith("_")}
    | {"requests", "urllib3", "curl_cffi", "peewee", "bs4", "lxml", "html5lib", "platformdirs",
       "multitasking", "websockets", "jinja2", "markupsafe", "fsspec", "s3fs", "gcsfs", "pyarrow",
       "sqlalchemy", "numexpr", "numba", "scipy", "matplotlib", "IPython", "pytest", "setuptools",
       "pip", "pkg_resources", "importlib_metadata", "docker", "openai", "httpx", "sqlmodel",
       "finevo", "runner", "dill", "cloudpickle", "joblib", "psutil", "posix", "nt"}
) - ALLOWED_IMPORTS - _EVERYDAY_NAMES

#: Modules that are doors to processes, files, memory or the interpreter: refused as an attribute
#: name on *any* receiver (``obj.os``, ``arr.ctypes``, ``x.sys``), whatever the object is. None of
#: them is a plausible data field name.
DOOR_MODULE_NAMES: frozenset[str] = frozenset({
    "os", "posix", "nt", "sys", "subprocess", "ctypes", "pickle", "marshal", "shelve", "dbm",
    "builtins", "importlib", "inspect", "socket", "ssl", "shutil", "pty", "runpy", "multiprocessing",
    "threading", "tempfile", "pathlib", "mmap", "sqlite3", "urllib", "http", "ftplib", "smtplib",
    "pydoc", "codecs", "io", "gc", "types", "operator", "ctypeslib", "resource", "fcntl",
    "selectors", "asyncio", "concurrent", "zipimport", "pkgutil", "sysconfig", "site", "linecache",
    "tokenize", "traceback", "webbrowser", "glob", "zipfile", "tarfile", "cffi", "capsule",
    "requests", "urllib3", "httpx", "openai", "finevo", "runner", "dill", "cloudpickle", "joblib",
})

#: Reductions a pandas ``apply`` / ``agg`` / ``aggregate`` / ``transform`` may name as a string
#: (pandas resolves such strings with getattr on the object: ``df.agg("to_pickle", path)``).
SAFE_DISPATCH_NAMES: frozenset[str] = frozenset({
    "sum", "mean", "median", "min", "max", "std", "var", "sem", "skew", "kurt", "kurtosis",
    "count", "size", "nunique", "first", "last", "prod", "product", "cumsum", "cumprod",
    "cummax", "cummin", "diff", "pct_change", "abs", "idxmax", "idxmin", "rank", "shift",
    "ohlc", "any", "all", "quantile", "mode", "round", "sqrt", "log", "exp",
})
DISPATCH_METHODS: frozenset[str] = frozenset({"apply", "agg", "aggregate", "transform"})

#: Index of the positional ``aggfunc`` of ``DataFrame.pivot_table`` (one more on ``pd.pivot_table``)
#: and ``pd.crosstab``: it must be given by keyword, where it is checked like ``.agg``'s argument.
AGGFUNC_POSITION: dict[str, int] = {"pivot_table": 3, "crosstab": 5}

#: numpy array types whose constructors take a raw ``buffer``: with an object dtype, integers in
#: it become object pointers (any address read back as a Python object). Only named as types.
RAW_ARRAY_TYPES: frozenset[str] = frozenset({
    "ndarray", "recarray", "chararray",
    # numpy.typing.NDArray is a generic alias of ndarray: called, it is ndarray(shape, dtype, buffer)
    "NDArray",
    # MaskedArray.baseclass hands out the ndarray class itself
    "baseclass",
})

#: Methods that hand out an array's raw bytes (for an object array: object addresses).
RAW_BYTES_METHODS: frozenset[str] = frozenset({"tobytes"})

#: Attribute names the checker allows only in some uses of ``obj.attr`` (called directly,
#: compared, ``self.data``, ...): a ``match`` class pattern (``case C(data=d)``) reads them into
#: a name, which is never such a use, so there they are refused outright.
CONTEXT_CHECKED_ATTRIBUTES: frozenset[str] = frozenset(
    {"data", "cast", "type", "obj", "format", "format_map", "wraps", "hist", "boxplot", "query",
     "apply", "agg", "aggregate", "transform", "to_csv", "to_json", "to_string", "to_html", "to_latex",
     "to_markdown", "set_option", "option_context", "reset_option", "ndarray", "recarray", "chararray",
     "NDArray", "baseclass",
     "test"})

#: Keywords whose strings pandas uses as ``str.format`` templates on values.
FORMATTER_KEYWORDS: frozenset[str] = frozenset({"float_format", "formatter", "formatters"})

#: Builtins that only test an object against a type (a type named there is not called or kept).
TYPE_TEST_BUILTINS: frozenset[str] = frozenset({"isinstance", "issubclass"})

#: Builtin types ``type(x)`` may be compared with using ``==`` (their equality runs no tool code).
BUILTIN_TYPE_NAMES: frozenset[str] = frozenset({
    "bool", "int", "float", "complex", "str", "bytes", "list", "tuple", "dict", "set", "frozenset",
})

#: Builtins a dispatch call may name directly (``df.apply(float)``).
SAFE_CALLABLE_BUILTINS: frozenset[str] = frozenset({
    "abs", "all", "any", "bool", "float", "int", "len", "list", "max", "min", "round", "sorted",
    "str", "sum", "tuple", "set", "dict",
})

#: pandas option keys a tool may set (``pd.set_option("display.precision", 4)``).
SAFE_OPTION_PREFIXES: tuple[str, ...] = ("display.", "mode.", "future.")
OPTION_SETTERS: frozenset[str] = frozenset({"set_option", "option_context", "reset_option"})

#: Decorators a tool may use, as dotted routes after alias resolution; plain builtins apart.
SAFE_DECORATOR_ROUTES: frozenset[str] = frozenset({
    "functools.lru_cache", "functools.cache", "functools.wraps", "functools.cached_property",
    "functools.total_ordering", "functools.singledispatch", "dataclasses.dataclass",
    "typing.overload", "typing.final", "numpy.vectorize",
})
SAFE_DECORATOR_BUILTINS: frozenset[str] = frozenset({"staticmethod", "classmethod", "property"})

#: Source encodings accepted in a PEP 263 declaration.
UTF8_NAMES: frozenset[str] = frozenset({"utf-8", "utf8", "utf_8", "u8", "utf"})

#: Unicode bidirectional controls (Trojan Source): refused anywhere in the source.
BIDI_CONTROLS: frozenset[str] = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")

#: Refuse absurdly large sources before parsing them (tools are a few hundred lines).
MAX_SOURCE_CHARS = 200_000
