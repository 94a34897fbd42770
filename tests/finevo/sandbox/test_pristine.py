"""A tool's child is forked from a state that never held another run's code, value or output.

The scanner tool reads its own whole address space (``/proc/self/mem``, readable here because the
test sandbox adds ``/proc`` to the read roots) and looks for a token an earlier tool returned and
printed. The token never appears literally in any code: the earlier tool builds it from its
reversed argument. The scanner proves it can see what is in its memory by finding a token of its
own, built the same way.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator

import pytest

from finevo.sandbox import Limits, confine
from finevo.sandbox.backends import WarmSandbox

SUPPORT = confine.kernel_support()
pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(SUPPORT["landlock_abi"] <= 0 or not SUPPORT["seccomp"],
                                 reason=f"this kernel lacks Landlock or seccomp: {SUPPORT}")]
LIMITS = Limits(timeout_s=30.0, cpu_s=20, memory_mb=1024)

EARLIER = ("def run(reversed_token: str) -> str:\n"
           "    token = reversed_token[::-1]\n"
           "    print('stdout of the earlier run:', token)\n"
           "    return token\n")
#: Reports the SHA-256 of every ``EARLIER-<32 hex>`` / ``OWNTOK-<32 hex>`` string in its memory, so
#: it never holds the earlier token itself; its own token is built at run time.
SCANNER = ("import hashlib, os, re\n\n\ndef scan() -> dict:\n"
           "    own = 'OWNTOK-' + os.urandom(16).hex()\n"
           "    pattern = re.compile(rb'(?:EARLIER|OWNTOK)-[0-9a-f]{32}')\n"
           "    found = set()\n"
           "    with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb', buffering=0) as mem:\n"
           "        for line in maps:\n"
           "            fields = line.split()\n"
           "            if fields[1][0] != 'r' or (len(fields) > 5 and fields[5] in ('[vvar]', '[vsyscall]')):\n"
           "                continue\n"
           "            start, end = (int(x, 16) for x in fields[0].split('-'))\n"
           "            try:\n"
           "                mem.seek(start)\n"
           "                chunk = mem.read(end - start)\n"
           "            except (OSError, ValueError, OverflowError):\n"
           "                continue\n"
           "            found.update(hashlib.sha256(m.group()).hexdigest() for m in pattern.finditer(chunk))\n"
           "    return {'own': hashlib.sha256(own.encode()).hexdigest(), 'found': sorted(found)}\n")


@pytest.fixture(scope="module")
def box() -> Iterator[WarmSandbox]:
    with WarmSandbox(None, policy=False, extra_read_roots=["/proc"]) as sandbox:
        yield sandbox


@pytest.mark.slow
def test_a_tool_cannot_find_an_earlier_tools_value_in_its_memory(box: WarmSandbox) -> None:
    earlier = f"EARLIER-{secrets.token_hex(16)}"
    first = box.run_kernel_only(EARLIER, "run", {"reversed_token": earlier[::-1]}, LIMITS)
    assert first.status == "ok" and first.value == earlier, first
    again = box.run_kernel_only(EARLIER, "run", {"reversed_token": f"OTHER-{secrets.token_hex(16)}"[::-1]}, LIMITS)
    assert again.status == "ok", again
    scan = box.run_kernel_only(SCANNER, "scan", {}, LIMITS)
    assert scan.status == "ok", scan
    # its own token (built at run time) proves the scan sees its memory; the earlier one is absent
    assert scan.value["own"] in scan.value["found"], scan.value
    assert hashlib.sha256(earlier.encode()).hexdigest() not in scan.value["found"]


_WORLD_PROBE = ("import os\n\n\ndef probe(worlds: str, base: str) -> dict:\n    seen = {}\n"
                "    for name, path in (('own', os.path.join(worlds, 'w1/manifest.json')),\n"
                "                       ('sibling', os.path.join(worlds, 'w2/manifest.json')),\n"
                "                       ('base', os.path.join(base, 'manifest.json'))):\n"
                "        try:\n            with open(path) as handle:\n"
                "                seen[name] = len(handle.read()) > 0\n"
                "        except OSError:\n            seen[name] = False\n"
                "    try:\n        seen['listing'] = sorted(os.listdir(worlds))\n"
                "    except OSError:\n        seen['listing'] = None\n    return seen\n")


@pytest.mark.slow
@pytest.mark.parametrize("under", ["var-tmp", "private-tmp"])
def test_a_hidden_world_run_sees_its_own_world_only(under: str) -> None:
    """A run in a hidden world reads its own world's files, not a sibling world's nor the worker's own
    snapshot; a run on the worker's snapshot reads none of the worlds. Worlds where the worker can
    reach them (the gate's, under /var/tmp) are served by the worker itself, worlds under the /tmp its
    mount namespace made private by a worker of their own: the same either way."""
    import shutil
    import tempfile
    from pathlib import Path

    from finevo.paths import snapshot_dir
    from finevo.sandbox.selftest import default_base_dir

    worlds = Path(tempfile.mkdtemp(prefix="finevo-worlds-",
                                   dir=default_base_dir() if under == "var-tmp" else tempfile.gettempdir()))
    try:
        for name in ("w1", "w2"):
            shutil.copytree(snapshot_dir(), worlds / name)
        args = {"worlds": str(worlds), "base": str(snapshot_dir())}
        with WarmSandbox(snapshot_dir(), policy=False) as sandbox:
            result = sandbox.run_kernel_only(_WORLD_PROBE, "probe", args, LIMITS, snapshot_dir=str(worlds / "w1"))
            again = sandbox.run_kernel_only(_WORLD_PROBE, "probe", args, LIMITS, snapshot_dir=str(worlds / "w2"))
            home = sandbox.run_kernel_only(_WORLD_PROBE, "probe", args, LIMITS)
            own_worker = not sandbox._others
            private_tmp = bool(sandbox._worker_namespaces().get("private_tmp"))
        seen = lambda own, sibling, base: {"own": own, "sibling": sibling, "base": base, "listing": None}  # noqa: E731
        assert result.status == "ok" and result.value == seen(True, False, False), result
        assert again.status == "ok" and again.value == seen(False, True, False), again
        assert home.status == "ok" and home.value == seen(False, False, True), home
        assert own_worker == (under == "var-tmp" or not private_tmp)
    finally:
        shutil.rmtree(worlds, ignore_errors=True)


#: Every local of every frame on the tool's stack that is not the tool's own (the zygote's, the
#: harness's: a child is forked with them), as ``frame: {name: repr}`` (other objects by type: a
#: socket's repr asks the kernel for its name, a call the filter refuses).
FRAMES = ("import sys\n\n\ndef frames() -> dict:\n    seen = {}\n    frame = sys._getframe().f_back\n"
          "    while frame is not None:\n"
          "        seen[frame.f_code.co_name] = {k: repr(v)[:300] if type(v) in (int, float, str, dict, list, tuple)\n"
          "                                      else type(v).__name__ for k, v in frame.f_locals.items()}\n"
          "        frame = frame.f_back\n    return seen\n")


def test_no_frame_a_child_is_forked_with_holds_an_earlier_run(box: WarmSandbox) -> None:
    """The zygote's frames are on every child's stack: none may keep an earlier child's wait
    status, memory or CPU time (with the policy skipped, a tool reads them and a message passes
    from one run to the next)."""
    exits = ("import os\n\n\ndef run(code: int, mb: int) -> int:\n"
             "    hog = bytearray(mb * 1024 * 1024)\n    hog[::4096] = b'x' * len(hog[::4096])\n"
             "    os._exit(code)\n")
    for code in (97, 113):
        assert box.run_kernel_only(exits, "run", {"code": code, "mb": 150}, LIMITS).status == "crashed"
    seen = box.run_kernel_only(FRAMES, "frames", {}, LIMITS)
    assert seen.status == "ok", seen
    assert "_world_loop" in seen.value, sorted(seen.value)  # the scan reaches the zygote's frames
    for frame, local in seen.value.items():
        assert "reaped" not in local, (frame, local)
        for name, text in local.items():
            assert "'reaped'" not in text and str(113 << 8) not in text, (frame, name, text)
