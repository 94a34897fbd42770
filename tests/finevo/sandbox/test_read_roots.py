"""A tool's read roots hold no answers: never a whole prefix or site-packages (which hold the gate's
own packages in a wheel or image install), only what the loaded libraries need."""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterator

import pytest

from finevo.sandbox import Limits, confine, guard
from finevo.sandbox.backends import WarmSandbox

SUPPORT = confine.kernel_support()
PURELIB = os.path.realpath(sysconfig.get_paths()["purelib"])


def _covers(roots: list[str], path: str) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def test_no_root_covers_site_packages_or_a_gate_package() -> None:
    broad = [sys.prefix, sys.base_prefix, sys.exec_prefix, PURELIB, os.path.dirname(PURELIB)]
    for roots in (guard.default_read_roots(), guard.narrow_read_roots(os.path.realpath(r) for r in broad)):
        assert not _covers(roots, os.path.join(PURELIB, "runner")), roots
        assert not _covers(roots, os.path.join(PURELIB, "some-other-distribution")), roots
        assert os.path.realpath(os.path.dirname(os.__file__)) in roots  # the standard library stays
    import numpy

    assert _covers(guard.default_read_roots(), os.path.realpath(numpy.__file__))


@pytest.fixture(scope="module")
def box() -> Iterator[WarmSandbox]:
    with WarmSandbox(None, policy=False) as sandbox:
        yield sandbox


@pytest.mark.skipif(SUPPORT["landlock_abi"] <= 0, reason=f"this kernel lacks Landlock: {SUPPORT}")
def test_a_tool_cannot_list_site_packages_nor_read_a_package_it_never_loaded(box: WarmSandbox) -> None:
    # a distribution installed here that numpy and pandas never import
    other = next(name for name in ("mypy", "jinja2", "pytest", "_pytest", "packaging")
                 if os.path.isdir(os.path.join(PURELIB, name)))
    code = ("import os\n\n\ndef probe(site: str, other: str) -> dict:\n    seen = {}\n"
            "    for name, call in (('listing', lambda: os.listdir(site)),\n"
            "                       ('other', lambda: open(os.path.join(site, other, '__init__.py')).read(10)),\n"
            "                       ('numpy', lambda: open(os.path.join(site, 'numpy', '__init__.py')).read(10))):\n"
            "        try:\n            call()\n            seen[name] = True\n"
            "        except OSError:\n            seen[name] = False\n    return seen\n")
    result = box.run_kernel_only(code, "probe", {"site": PURELIB, "other": other}, Limits(timeout_s=20))
    assert result.status == "ok" and result.value == {"listing": False, "other": False, "numpy": True}, result
