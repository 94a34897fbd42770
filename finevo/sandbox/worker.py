"""The warm worker: ``python -I -B -m finevo.sandbox.worker`` started once per warm sandbox.

It loads numpy/pandas (single-threaded), moves itself into an empty network namespace where it
may, then serves requests one at a time over length-prefixed JSON frames on its stdin/stdout. Its
own stdout is pointed at stderr so nothing can corrupt the protocol. It exits when its parent
closes the request pipe.

Pristine forks. A tool's child must never inherit memory that held another run's code, arguments,
value or output, nor another world's data. So no process that ever read a request forks a tool:

* the **router** (this process) reads the gate's requests and writes the replies; it never forks
  a tool. Right after loading the libraries -- before any request -- it forks the
* **bare zygote**, which never reads a request either: on the router's command it forks one
  **world zygote** per snapshot (the worker's own, and each hidden world a run asks for), which
  loads that snapshot and nothing else, and on command forks
* **servers**, pre-forked while idle: a server forks :data:`SERVER_RUNS` tool children at once
  (spares of :class:`~finevo.sandbox.forked.SpareChild`), only then reads requests from the
  router, one per child, supervises each, sends the replies, and exits.

A tool's child is therefore a copy of a world zygote (libraries plus one snapshot) plus the
server's pipes, taken before the server read any request. The router keeps up to
:data:`WORLD_ZYGOTES` world zygotes (least recently used closed first), each with one server
ready, so forking stays off the request's critical path.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import traceback
from typing import TYPE_CHECKING, Any

from finevo.sandbox import confine, guard, landlock, protocol, workspace
from finevo.sandbox.preload import load_world, preload_libraries

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

#: World zygotes kept alive at once (the worker's own snapshot and hidden worlds).
WORLD_ZYGOTES = 8
_CMD_MAX = 64 * 1024


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _send(sock: socket.socket, command: JSONObject, fds: list[int]) -> None:
    data = (json.dumps(command) + "\n").encode("utf-8")
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else [])


def _receive(sock: socket.socket) -> tuple[JSONObject | None, list[int]]:
    """One command line and the descriptors sent with it (None at end of stream)."""
    data, ancillary, _flags, _addr = sock.recvmsg(_CMD_MAX, socket.CMSG_SPACE(4 * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [fd for (fd,) in struct.iter_unpack("i", payload[:len(payload) - len(payload) % 4])]
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return json.loads(data), fds


def _die_with_parent() -> None:
    confine._prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


# --------------------------------------------------------------------------- server (one request)
#: Requests one server takes: its tool children are all forked before it reads the first, so
#: each is pristine, and a fork of a server is paid once per this many requests.
SERVER_RUNS = 4


def _serve(request_fd: int, reply_fd: int, settings: JSONObject) -> None:
    """Fork :data:`SERVER_RUNS` tool children at once, then serve one request with each."""
    from finevo.sandbox.forked import SpareChild

    children: list[SpareChild] = []
    try:
        for _ in range(SERVER_RUNS):
            children.append(SpareChild(settings))  # all forked before this process read anything
    except OSError as exc:
        sys.stderr.write(f"finevo sandbox worker: cannot prepare a child: {exc}\n")
    for index in range(SERVER_RUNS):
        child = children[index] if index < len(children) else None
        try:
            request = protocol.read_frame(request_fd)
        except protocol.ChannelClosed:
            for spare in children[index:]:
                spare.discard()
            return
        _serve_one(request, child, reply_fd)


def _serve_one(request: JSONObject, child: Any, reply_fd: int) -> None:
    try:
        if child is None:
            raise OSError("no sandbox child could be forked")
        reply = child.run(request)
    except BaseException as exc:  # keep the router serving; the gate sees "crashed"
        reply = {"status": "crashed", "layer": "harness",
                 "error_message": f"sandbox worker failed: {type(exc).__name__}: {exc}"}
    try:
        protocol.write_frame(reply_fd, reply)
    except (TypeError, ValueError, RecursionError) as exc:  # a reply JSON cannot hold: the tool's fail
        protocol.write_frame(reply_fd, {"status": "crashed", "layer": "result", "error_type": "ResultUnreadable",
                                        "error_message": f"the tool's result cannot be sent: {type(exc).__name__}"})
    if child is not None:
        child.cleanup()


# --------------------------------------------------------------------------- zygotes
def _zygote_loop(sock: socket.socket, settings: JSONObject) -> None:
    """Fork what the router asks for; never read a request."""
    while True:
        command, fds = _receive(sock)
        _reap()
        if command is None:  # the router closed: its servers and world zygotes see EOF too
            with contextlib.suppress(ChildProcessError):
                while True:
                    os.wait()
            return
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                _die_with_parent()
                if command["op"] == "server":
                    _serve(fds[0], fds[1], settings)
                elif command["op"] == "world":
                    _world_zygote(socket.socket(fileno=fds[0]), command.get("path"), settings,
                                  command.get("drop_roots") or [])
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)


def _world_zygote(sock: socket.socket, path: str | None, settings: JSONObject, drop_roots: list[str]) -> None:
    """Load one snapshot, report it, then fork servers for it. A hidden world's children may read
    that world's directory only, not its siblings (``drop_roots``: their common parent, and the
    worker's own snapshot when this is another)."""
    try:
        info = load_world(path)
    except BaseException as exc:
        _send(sock, {"kind": "failed", "error": f"{type(exc).__name__}: {exc}"}, [])
        return
    roots = [r for r in settings["read_roots"] if r not in drop_roots]
    if path:
        roots.append(os.path.realpath(path))
    gc.collect()
    gc.freeze()
    _send(sock, {"kind": "ready", **info}, [])
    _zygote_loop(sock, dict(settings, read_roots=sorted(set(roots))))


# --------------------------------------------------------------------------- router
class _World:
    """The router's handle on one world zygote and its server: the pipes to it and how many
    requests it still takes (a fresh server is forked ahead when one is used up)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.servers: list[list[int]] = []  # [request fd, reply fd, runs left]

    def prepare(self) -> None:
        while len(self.servers) < 2:
            req_r, req_w = os.pipe()
            rep_r, rep_w = os.pipe()
            _send(self.sock, {"op": "server"}, [req_r, rep_w])
            os.close(req_r)
            os.close(rep_w)
            self.servers.append([req_w, rep_r, SERVER_RUNS])

    def run(self, request: JSONObject) -> JSONObject:
        self.prepare()
        server = self.servers[0]
        server[2] -= 1
        try:
            protocol.write_frame(server[0], request)
            reply: JSONObject = protocol.read_frame(server[1])
        except (OSError, protocol.ChannelClosed) as exc:
            server[2] = 0
            reply = {"status": "crashed", "layer": "harness",
                     "error_message": f"sandbox worker failed: {type(exc).__name__}: {exc}"}
        if server[2] <= 0:
            self.servers.pop(0)
            for fd in server[:2]:
                os.close(fd)
            self.prepare()  # the next server forks while the gate reads this reply
        return reply

    def close(self) -> None:
        for server in self.servers:
            for fd in server[:2]:
                os.close(fd)
        self.servers = []
        self.sock.close()


class _Router:
    def __init__(self, bare: socket.socket, bare_pid: int, base: str | None) -> None:
        self.bare = bare
        self.bare_pid = bare_pid
        self.base = base
        self.worlds: dict[str | None, _World] = {}

    def world(self, path: str | None) -> tuple[_World, JSONObject]:
        found = self.worlds.pop(path, None)
        info: JSONObject = {}
        if found is None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            # the directory holding the worlds is a read root of a hidden-world sandbox; each
            # world's children get only their own world
            # (and the worker's own snapshot, a read root of every run on it, is not another's)
            drop = [os.path.realpath(os.path.dirname(path))] if path else []
            if path != self.base and self.base:
                drop.append(os.path.realpath(self.base))
            _send(self.bare, {"op": "world", "path": path, "drop_roots": drop}, [theirs.fileno()])
            theirs.close()
            reply, _ = _receive(ours)
            if reply is None or reply.get("kind") != "ready":
                ours.close()
                raise OSError(f"the world zygote for {path} failed: {(reply or {}).get('error')}")
            info = reply
            found = _World(ours)
            found.prepare()  # servers (and their tool children) wait before the first request
        self.worlds[path] = found
        while len(self.worlds) > WORLD_ZYGOTES:
            self.worlds.pop(next(iter(self.worlds))).close()
        return found, info

    def close(self) -> None:
        """Close every zygote's channel and wait until the whole tree below has exited."""
        for world in self.worlds.values():
            world.close()
        self.worlds.clear()
        self.bare.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.bare_pid, 0)

    def serve(self, request: JSONObject) -> JSONObject:
        override = request.pop("snapshot_override", None)
        path = override if override and override != self.base else self.base
        world, _info = self.world(path)
        return world.run(request)


def _start(config: JSONObject) -> tuple[_Router, JSONObject]:
    visible = [*config.get("read_roots", []), *([config["snapshot_dir"]] if config.get("snapshot_dir") else []),
               os.getcwd()]
    namespaces = confine.unshare_namespaces(visible) if config.get("unshare_net", True) else {}
    if namespaces.get("private_tmp"):
        tempfile.tempdir = "/tmp"  # the worker's own private tmpfs
    info = preload_libraries()
    landlock.mapped_library_dirs()  # computed once here; every forked child inherits it
    from finevo.sandbox import forked  # noqa: F401 - imported once here, not in every server

    workspace.set_owner()  # working directories are named after this process, which outlives its forks

    gc.collect()
    gc.freeze()  # keep the preloaded heap out of the children's copy-on-write faults
    # what the loaded libraries need of site-packages, never all of it (nor a prefix above it)
    settings = {"read_roots": guard.narrow_read_roots(config["read_roots"]),
                "keep_dac_read": config.get("keep_dac_read", False),
                "drop_uid": config.get("drop_uid", True), "unshare_net": False,
                "private_mounts": bool(namespaces.get("mountns")),
                "tool_imports": config.get("tool_imports")}
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # the bare zygote: libraries only, no snapshot, no request ever
        try:
            ours.close()
            _die_with_parent()
            _zygote_loop(theirs, settings)
        finally:
            os._exit(0)
    theirs.close()
    router = _Router(ours, pid, config.get("snapshot_dir"))
    _world, world_info = router.world(router.base)
    info.update({k: v for k, v in world_info.items() if k != "kind"})
    return router, dict(info, namespaces=namespaces)


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
        config: JSONObject = protocol.read_frame(requests)
    except protocol.ChannelClosed:
        return 0
    try:
        router, info = _start(config)
    except BaseException as exc:  # report start-up failure to the parent
        protocol.write_frame(replies, {"kind": "failed", "error": f"{type(exc).__name__}: {exc}",
                                       "traceback": traceback.format_exc()})
        return 1
    namespaces = info.pop("namespaces")
    protocol.write_frame(replies, {"kind": "ready", "pid": os.getpid(), "netns": bool(namespaces.get("netns")),
                                   "namespaces": namespaces, "non_dumpable": non_dumpable, "rss_kb": _rss_kb(),
                                   "tmpdir": tempfile.gettempdir(), **info})
    while True:
        try:
            request = protocol.read_frame(requests)
        except protocol.ChannelClosed:
            router.close()
            return 0
        if request.get("op") == "stats":
            protocol.write_frame(replies, {"kind": "stats", "pid": os.getpid(), "rss_kb": _rss_kb()})
            continue
        try:
            reply = router.serve(request)
        except BaseException as exc:  # keep serving; the parent sees "crashed"
            reply = {"status": "crashed", "layer": "harness",
                     "error_message": f"sandbox worker failed: {type(exc).__name__}: {exc}"}
        protocol.write_frame(replies, reply)


if __name__ == "__main__":
    sys.exit(main())
