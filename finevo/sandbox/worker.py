"""The warm worker: ``python -I -B -m finevo.sandbox.worker`` started once per warm sandbox.

It loads numpy/pandas (single-threaded), the market snapshot and the replay shim, moves itself
into an empty network namespace where it may, then serves requests one at a time over
length-prefixed JSON frames on its stdin/stdout, forking a fresh limited child per execution.
Its own stdout is pointed at stderr so nothing can corrupt the protocol. It exits when its
parent closes the request pipe.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import traceback
from typing import Any

from finevo.sandbox import confine, landlock, protocol
from finevo.sandbox.preload import parse_everything, preload

#: Snapshots other than the worker's own that a run asked for (``snapshot_override``), kept parsed
#: for the next runs on them; the least recently used goes first.
_WORLD_CACHE_SIZE = 8


class _Snapshots:
    """Which snapshot the replay shim serves in this worker, switched per request."""

    def __init__(self, base: str | None) -> None:
        from finevo.market import replay

        self.base = base
        self.current = base
        self._base_provider = replay._BINDING.provider  # what preload() installed
        self._cache: dict[str, Any] = {}

    def select(self, path: str | None) -> bool:
        """Serve ``path`` (None: the worker's own snapshot); True when that changed what is served."""
        from finevo.market.replay import install
        from finevo.market.snapshot import load_snapshot

        wanted = path or self.base
        if wanted == self.current or wanted is None:
            return False
        if wanted == self.base and self._base_provider is not None:
            provider = self._base_provider
        else:
            provider = self._cache.pop(wanted, None)
            if provider is None:
                provider = load_snapshot(wanted)
                parse_everything(provider)
            self._cache[wanted] = provider
            while len(self._cache) > _WORLD_CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
        install(provider)
        self.current = wanted
        return True


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> int:
    # First of all: nothing of this process (its memory holds the parent's requests) may be read
    # through /proc by the children it forks, which share its uid in a non-root run.
    non_dumpable = confine.make_non_dumpable()
    requests = os.dup(0)
    replies = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    try:
        config: dict[str, Any] = protocol.read_frame(requests)
    except protocol.ChannelClosed:
        return 0
    try:
        visible = [*config.get("read_roots", []), *([config["snapshot_dir"]] if config.get("snapshot_dir") else []),
                   os.getcwd()]
        namespaces = confine.unshare_namespaces(visible) if config.get("unshare_net", True) else {}
        if namespaces.get("private_tmp"):
            tempfile.tempdir = "/tmp"  # the worker's own private tmpfs
        info = preload(config.get("snapshot_dir"))
        landlock.mapped_library_dirs()  # computed once here; every forked child inherits it
        gc.collect()
        gc.freeze()  # keep the preloaded heap out of the children's copy-on-write faults
    except BaseException as exc:  # report start-up failure to the parent
        protocol.write_frame(replies, {"kind": "failed", "error": f"{type(exc).__name__}: {exc}",
                                       "traceback": traceback.format_exc()})
        return 1
    settings = {"read_roots": config["read_roots"], "keep_dac_read": config.get("keep_dac_read", False),
                "drop_uid": config.get("drop_uid", True), "unshare_net": False,
                "tool_imports": config.get("tool_imports")}
    protocol.write_frame(replies, {"kind": "ready", "pid": os.getpid(), "netns": bool(namespaces.get("netns")),
                                   "namespaces": namespaces, "non_dumpable": non_dumpable, "rss_kb": _rss_kb(),
                                   "tmpdir": tempfile.gettempdir(), **info})
    from finevo.sandbox.forked import SpareChild

    spare: SpareChild | None = None
    snapshots = _Snapshots(config.get("snapshot_dir"))
    while True:
        try:
            if spare is None:
                spare = SpareChild(settings)  # forked while idle, off the request's critical path
        except OSError as exc:
            sys.stderr.write(f"finevo sandbox worker: cannot prepare a child: {exc}\n")
            spare = None
        try:
            request = protocol.read_frame(requests)
        except protocol.ChannelClosed:
            if spare is not None:
                spare.discard()
            return 0
        if request.get("op") == "stats":
            protocol.write_frame(replies, {"kind": "stats", "pid": os.getpid(), "rss_kb": _rss_kb()})
            continue
        child, spare = spare, None
        try:
            # A run on another snapshot: the spare was forked with the old one, so fork anew.
            if snapshots.select(request.pop("snapshot_override", None)) and child is not None:
                child.discard()
                child = SpareChild(settings)
            if child is None:
                raise OSError("no sandbox child could be forked")
            reply = child.run(request)
        except BaseException as exc:  # keep serving; the parent sees "crashed"
            reply = {"status": "crashed", "layer": "harness",
                     "error_message": f"sandbox worker failed: {type(exc).__name__}: {exc}"}
        try:
            protocol.write_frame(replies, reply)
        except (TypeError, ValueError, RecursionError) as exc:  # a reply JSON cannot hold: the tool's fail
            protocol.write_frame(replies, {"status": "crashed", "layer": "result",
                                           "error_type": "ResultUnreadable",
                                           "error_message": f"the tool's result cannot be sent: "
                                                            f"{type(exc).__name__}"})
        if child is not None:
            child.cleanup()

if __name__ == "__main__":
    sys.exit(main())
