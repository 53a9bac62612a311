"""Runs Debian's openstack script once per command, each in a process of
its own, forked from an interpreter that has imported the CLI's modules
once (testclient's Go code starts it, with the environment and working
directory of the commands it will run, and talks to it: forkserver.go).

Protocol, on the Unix socket named by argv[1]: a request is a 4-byte
big-endian length and that many bytes of JSON {"argv": [...], "env":
[...], "dir": "..."}, its first bytes sent with two file descriptors
(the command's stdout and stderr). The answer is one line of JSON:
{"code": N} as Python's exit would give it, or {"signal": N}. Closing the
connection before the answer kills the command. The server ends when its
stdin closes (the Go process that started it is gone) and kills the
commands still running then, and removes the socket's directory.
"""

import array
import atexit
import importlib
import importlib.metadata
import json
import os
import random
import runpy
import select
import shutil
import signal
import socket
import struct
import sys
import traceback

SCRIPT = "/usr/bin/openstack"


def warm():
    """Imports what every command imports (the shell) and the modules of
    every command and client plugin the CLI's packages declare, so that a
    command's process starts with them loaded."""
    import openstackclient.shell  # noqa: F401
    modules = set()
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group.startswith("openstack.") or ep.group.startswith("cliff."):
                modules.add(ep.module)
    for m in sorted(modules):
        try:
            importlib.import_module(m)
        except Exception:  # a plugin the CLI would fail to load too
            pass


def receive(conn):
    """Reads one request and its two descriptors."""
    fds = array.array("i")
    data, anc, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(2 * fds.itemsize))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    try:
        while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
            more = conn.recv(65536)
            if not more:
                raise EOFError("request cut short")
            data += more
        if len(fds) != 2:
            raise ValueError("want two descriptors, got %d" % len(fds))
        return json.loads(data[4:]), list(fds)
    except Exception:
        for fd in fds:
            os.close(fd)
        raise


def run(req, fds):
    """In the forked process: becomes the command and never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.environ.clear()
        for kv in req["env"]:
            k, _, v = kv.partition("=")
            os.environ[k] = v
        os.chdir(req["dir"])
        random.seed()  # as a process of its own seeds it
        sys.argv = [SCRIPT] + req["argv"]
        try:
            runpy.run_path(SCRIPT, run_name="__main__")
            code = 0
        except SystemExit as e:
            # As the interpreter ends on sys.exit(x).
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code & 0xFF
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
    finally:
        os._exit(code)


def serve(path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(64)
    print("ready", flush=True)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    running = {}  # pid -> connection
    by_conn = {}  # connection -> pid, while its caller waits

    def answer(conn, msg):
        try:
            conn.sendall((json.dumps(msg) + "\n").encode())
        except OSError:
            pass
        conn.close()

    def reap():
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = running.pop(pid, None)
            if conn is None:
                continue
            by_conn.pop(conn, None)
            if os.WIFSIGNALED(status):
                answer(conn, {"signal": os.WTERMSIG(status)})
            else:
                answer(conn, {"code": os.WEXITSTATUS(status)})

    while True:
        try:
            ready, _, _ = select.select([srv, wake_r, 0] + list(by_conn), [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            os.read(wake_r, 4096)
            reap()
        if 0 in ready and not os.read(0, 4096):
            for pid in running:
                os.kill(pid, signal.SIGKILL)
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
            return
        for conn in [c for c in ready if c in by_conn]:
            if not conn.recv(4096):  # the caller gave up: so does the command
                os.kill(by_conn.pop(conn), signal.SIGKILL)
        if srv in ready:
            conn, _ = srv.accept()
            conn.settimeout(30)
            try:
                req, fds = receive(conn)
            except Exception as e:
                answer(conn, {"error": "%s: %s" % (type(e).__name__, e)})
                continue
            pid = os.fork()
            if pid == 0:
                run(req, fds)
            for fd in fds:
                os.close(fd)
            conn.settimeout(None)
            running[pid] = conn
            by_conn[conn] = pid
            reap()


if __name__ == "__main__":
    path = sys.argv[1]
    # What modules keep of argv at import (argparse's prog) is the
    # script's, as when it runs.
    sys.argv = [SCRIPT]
    warm()
    serve(path)
