"""The warm worker: ``python -I -B -m finevo.sandbox.worker`` started once per warm sandbox.

It loads numpy/pandas (single-threaded), moves itself into an empty network namespace where it
may, then serves requests one at a time over length-prefixed JSON frames on its stdin/stdout. Its
own stdout is pointed at stderr so nothing can corrupt the protocol. It exits when its parent
closes the request pipe.

Pristine forks. A tool's child must never inherit memory that held another run's code, arguments,
value or output, nor another world's data. So no process that ever read a request forks a tool:

* the **router** (this process) reads the gate's requests, hands each to a waiting tool child,
  supervises it (wall clock, output caps, the seccomp listener, the process group) and writes
  the reply; it never forks a tool. Right after loading the libraries -- before any request --
  it forks the
* **bare zygote**, which never reads a request either: on the router's command it forks one
  **world zygote** per snapshot (the worker's own, and each hidden world a run asks for), which
  loads that snapshot and nothing else and never reads a request: on the router's command it
  forks a **tool child** that waits for its request (:func:`~finevo.sandbox.forked.fork_spare`),
  hands the supervisor's ends of the child's pipes to the router, and, when the router has
  finished with the child, reaps it and reports its wait status and usage (only a parent can).

A tool's child is therefore a copy of a world zygote (libraries plus one snapshot) plus its own
pipes. The router keeps up to :data:`WORLD_ZYGOTES` world zygotes (least recently used closed first,
never the worker's own snapshot's), each with :data:`SPARES_AHEAD` child forked ahead, so forking
stays off the request's critical path (the next child forks while the gate reads a reply), and
receives each child's descriptors the moment they are sent: none wait in flight while the router
does anything else (descriptors in flight count against the sending user, whose tool children must
still be able to hand over their seccomp listeners, see
:func:`finevo.sandbox.confine.kernel_layers`). One fork per run, from a process that does little
between forks: no intermediate server process copies the zygote's page tables, and no child is
forked only to be thrown away at the end.
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
from typing import TYPE_CHECKING

from finevo.market import frozen_clock
from finevo.sandbox import confine, guard, landlock, protocol, seccomp, workspace
from finevo.sandbox.forked import SpareChild
from finevo.sandbox.preload import load_world, preload_libraries
from finevo.sandbox.supervise import SANDBOX_FAILURE, Reaped

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


# --------------------------------------------------------------------------- zygotes
def _zygote_loop(sock: socket.socket, settings: JSONObject) -> None:
    """The bare zygote: fork a world zygote whenever the router asks for one; never read a request."""
    while True:
        command, fds = _receive(sock)
        _reap()
        if command is None:  # the router closed: its servers and world zygotes see EOF too
            with contextlib.suppress(ChildProcessError):
                while True:
                    os.wait()
            return
        if command.get("op") != "world" or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                _die_with_parent()
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
    roots = sorted(set(roots))
    guard.prepare(roots)  # the audit hook's read roots, resolved once here for every child
    gc.collect()
    gc.freeze()
    _send(sock, {"kind": "ready", **info}, [])
    _world_loop(sock, dict(settings, read_roots=roots))


def _world_loop(sock: socket.socket, settings: JSONObject) -> None:
    """A world zygote: fork a tool child waiting for its request (``spare``: its descriptors go to
    the router, no copy stays here) and reap a child the router has finished with (``reap``: the
    wait status and usage, which only a parent can collect). Never reads a request.

    Each command is handled in a function of its own, so when a child is forked nothing of an
    earlier run is a local of this frame: the child starts with these frames on its stack, and
    code past the policy can read their locals (an earlier child's exit status, memory or CPU time
    there would carry a message from one tool run to the next)."""
    while True:
        command, fds = _receive(sock)
        for fd in fds:  # a world zygote takes no descriptors
            os.close(fd)
        if command is None:  # the router closed: its spares see EOF on their request pipes
            with contextlib.suppress(ChildProcessError):
                while True:
                    os.wait()
            return
        if command.get("op") == "spare":
            _fork_spare(sock, settings)
        elif command.get("op") == "reap" and type(command.get("pid")) is int:
            _reap_child(sock, command["pid"])


def _fork_spare(sock: socket.socket, settings: JSONObject) -> None:
    """Fork the next tool child and hand its descriptors to the router (closing ours)."""
    from finevo.sandbox.forked import fork_spare

    try:
        pid, handed, workdir = fork_spare(settings)
    except OSError as exc:
        _send(sock, {"kind": "failed", "error": f"{type(exc).__name__}: {exc}"}, [])
        return
    try:
        _send(sock, {"kind": "spare", "pid": pid, "workdir": workdir}, handed)
    except OSError as exc:  # e.g. ETOOMANYREFS: the child never gets a request; end it here
        for fd in handed:
            os.close(fd)
        handed = []
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        workspace.remove(workdir)
        _send(sock, {"kind": "failed", "error": f"the child's descriptors could not be handed to the "
                                                f"router: {type(exc).__name__}: {exc}"}, [])
    finally:
        for fd in handed:
            os.close(fd)


def _reap_child(sock: socket.socket, pid: int) -> None:
    """Collect a finished child's wait status and usage and send them to the router."""
    try:
        _, status, usage = os.wait4(pid, 0)
        reaped: JSONObject = {"kind": "reaped", "status": status, "maxrss_kb": usage.ru_maxrss,
                              "cpu_s": usage.ru_utime + usage.ru_stime}
    except ChildProcessError:
        reaped = {"kind": "reaped", "status": None, "cpu_s": 0.0, "maxrss_kb": 0}
    _send(sock, reaped, [])


# --------------------------------------------------------------------------- router
#: Tool children a world zygote keeps forked ahead of the requests (one: the next run's child is
#: forked while the gate reads this run's reply; more would only be discarded at the end).
SPARES_AHEAD = 1


def _sandbox_failure(exc: BaseException) -> JSONObject:
    """The reply for a run the worker itself failed: never the tool's doing, so marked as the
    sandbox's failure (the backend tries once more, then raises ``SandboxUnavailable``)."""
    return {"status": "crashed", "layer": "harness", "details": {SANDBOX_FAILURE: True},
            "error_message": f"sandbox worker failed: {type(exc).__name__}: {exc}"}


class _World:
    """The router's handle on one world zygote: the socket to it, and the children it forked ahead.

    A child's descriptors are received the moment the zygote sends them (:meth:`refill` waits
    for the reply): descriptors in flight -- sent, not yet received -- count against the sending
    user, and a tool's child sharing that user could not hand over its seccomp listener while too
    many are (see :func:`finevo.sandbox.confine.kernel_layers`). So none of ours wait in a socket
    while the router does anything else."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.spares: list[SpareChild] = []
        self.broken = False
        self.failure: str | None = None

    def refill(self) -> None:
        """Have children forked until :data:`SPARES_AHEAD` wait, each received at once (the fork
        takes a few milliseconds, while the gate reads the last reply)."""
        while len(self.spares) < SPARES_AHEAD:
            _send(self.sock, {"op": "spare"}, [])
            if self._next().get("kind") != "spare":
                return  # the zygote could not fork or hand one over: self.failure says why

    def _next(self) -> JSONObject:
        """The zygote's next reply (a spare is kept at once)."""
        reply, fds = _receive(self.sock)
        if reply is None:
            raise OSError("the world zygote closed its channel")
        if reply.get("kind") == "spare" and len(fds) == 4 and type(reply.get("pid")) is int:
            self.spares.append(SpareChild(reply["pid"], fds, str(reply.get("workdir"))))
        else:
            for fd in fds:
                os.close(fd)
            if reply.get("kind") == "failed":
                self.failure = str(reply.get("error"))
        return reply

    def _take(self) -> SpareChild:
        if not self.spares:
            self.refill()
        if not self.spares:
            raise OSError(f"no sandbox child could be forked: {self.failure}")
        return self.spares.pop(0)

    def _reap(self, pid: int) -> Reaped:
        _send(self.sock, {"op": "reap", "pid": pid}, [])
        while True:
            reply = self._next()
            if reply.get("kind") == "reaped":
                status = reply.get("status")
                return Reaped(status if type(status) is int else None, float(reply.get("cpu_s") or 0.0),
                              int(reply.get("maxrss_kb") or 0))

    def run(self, request: JSONObject) -> JSONObject:
        child: SpareChild | None = None
        try:
            child = self._take()
            reply = child.run(request, self._reap)
        except BaseException as exc:  # keep the router serving; the gate sees the sandbox's failure
            if isinstance(exc, OSError):
                self.broken = True  # a world zygote that cannot fork or answer is replaced
            reply = _sandbox_failure(exc)
        finally:
            if child is not None:
                child.cleanup()
        return reply

    def close(self) -> None:
        for spare in self.spares:
            spare.discard()
        self.spares = []
        self.sock.close()


class _Router:
    def __init__(self, bare: socket.socket, bare_pid: int, base: str | None) -> None:
        self.bare = bare
        self.bare_pid = bare_pid
        self.base = base
        self.worlds: dict[str | None, _World] = {}
        self.last: _World | None = None

    def world(self, path: str | None) -> tuple[_World, JSONObject]:
        found = self.worlds.pop(path, None)
        if found is not None and found.broken:
            found.close()
            found = None
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
            found.refill()  # a tool child waits before the first request
        self.worlds[path] = found
        while len(self.worlds) > WORLD_ZYGOTES:  # the least recently used other than the worker's own
            self.worlds.pop(next(key for key in self.worlds if key != self.base)).close()
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
        self.last = None
        world, _info = self.world(path)
        self.last = world
        return world.run(request)

    def refill(self) -> None:
        """Fork the next child of the world that served the last request (after its reply is
        written, so the fork overlaps the gate's reading of it)."""
        world, self.last = self.last, None
        if world is not None and not world.broken and world in self.worlds.values():
            try:
                world.refill()
            except OSError:
                world.broken = True


def _start(config: JSONObject) -> tuple[_Router, JSONObject]:
    visible = [*config.get("read_roots", []), *([config["snapshot_dir"]] if config.get("snapshot_dir") else []),
               os.getcwd()]
    namespaces = confine.unshare_namespaces(visible) if config.get("unshare_net", True) else {}
    if namespaces.get("private_tmp"):
        tempfile.tempdir = "/tmp"  # the worker's own private tmpfs
    info = preload_libraries()
    landlock.mapped_library_dirs()  # computed once here; every forked child inherits it
    seccomp.prepare()  # the filter programs, assembled once here; a child only writes its pid in
    confine.last_capability()  # read once here: a child drops each capability the kernel has
    from finevo.sandbox import forked  # noqa: F401 - imported once here, not in every zygote

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
            frozen_clock.prepare()  # once here, not in every world zygote: each only anchors the clock
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
        except BaseException as exc:  # keep serving; the parent sees the sandbox's failure
            reply = _sandbox_failure(exc)
        try:
            protocol.write_frame(replies, reply)
        except (TypeError, ValueError, RecursionError) as exc:  # a reply JSON cannot hold: the tool's fail
            protocol.write_frame(replies, {"status": "crashed", "layer": "result", "error_type": "ResultUnreadable",
                                           "error_message": f"the tool's result cannot be sent: {type(exc).__name__}"})
        router.refill()


if __name__ == "__main__":
    sys.exit(main())
