"""The fork server (issue 43): `python -P -m runner.sandbox.zygote --fd N --parent-pid P`, one per launch
configuration of the runner's process (`runner.sandbox.zygote_client`).

It imports torch, triton and the judge's code once (no CUDA), then forks each job's judge from that state, so a
job no longer spends 4-5 CPU-s importing them (its candidate is forked from the judge: `runner.child.fork`). It
runs nothing of any program. For each request (one JSON line on its socket: the isolation's outer pid and the
door's depth below it, the door's descriptors to take, the cgroup files, the judge's arguments) it forks a
keeper, which takes the door's descriptors and joins its isolation (`runner.sandbox.enter`), then forks the judge
inside it; the judge drops its privileges to the isolation's and runs `runner.child.main`. The keeper stays
outside, reports the judge's pid and, when it ends, its exit status (negative: a signal), and exits. Lines back:
`{"job": n, "pid": P}`, `{"job": n, "exit": C}`, or `{"job": n, "error": "..."}` where the judge never started.
Single-threaded: a fork beside threads may copy a held lock."""

from __future__ import annotations

import argparse
import gc
import json
import os
import select
import signal
import socket
import sys
import traceback

from runner.child import main as judge
from runner.child import process, warmup
from runner.protocol import STACKS_SIGNAL
from runner.sandbox import enter

SETUP_FAILED = 120


def _keeper(request: dict, report: int) -> int:
    """The forked keeper: join the job's isolation, fork the judge into it, report, wait."""
    os.setsid()
    process.die_with_parent(os.getppid())
    try:
        door = enter.find_door(int(request["outer"]), int(request["depth"]))
        env = enter.door_environment(door)
        report = enter.grab_fds(door, [int(fd) for fd in request["fds"]], [report])[0]
        enter.join(door, [str(p) for p in request["procs"]])
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(report)
            os.close(ready_r)
            process.exit_now(_judge(list(map(str, request["argv"])), env, ready_w))
        os.close(ready_w)
        signal.signal(STACKS_SIGNAL, signal.SIG_IGN)  # the stacks signal goes to the judge's group: this one too
        if os.read(ready_r, 1) != b"1":  # the judge has its privileges down to the isolation's before it counts
            raise OSError("the judge could not drop its privileges")
        os.close(ready_r)
        os.write(report, json.dumps({"pid": pid}).encode() + b"\n")
        _, status = os.waitpid(pid, 0)
        os.write(report, json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
        return 0
    except Exception as exc:
        text = f"could not start the judge in the job's isolation: {type(exc).__name__}: {exc}"
        try:
            os.write(report, json.dumps({"error": text}).encode() + b"\n")
        except OSError:
            pass
        return SETUP_FAILED


def _judge(argv: list[str], env: dict[str, str], ready: int) -> int:
    try:
        process.die_with_parent(os.getppid())
        enter.drop_privileges()
        os.write(ready, b"1")
        os.close(ready)
        os.environ.clear()
        os.environ.update(env)
        warmup.restart()
        sys.argv = ["runner.child.main", *argv]
        return judge.main(argv)
    except BaseException:
        traceback.print_exc()
        return SETUP_FAILED


class Server:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = b""
        self.reports: dict[int, tuple[int, bytes]] = {}  # read end -> (job, buffer)

    def send(self, job: int, fields: dict) -> None:
        self.sock.sendall(json.dumps({"job": job, **fields}).encode() + b"\n")

    def start(self, request: dict) -> None:
        job = int(request.get("job", -1))
        r, w = os.pipe()
        gc.freeze()  # the collector would write to every object's header: each page copied in the judge
        pid = os.fork()
        if pid == 0:
            os.close(r)
            self.sock.close()
            process.exit_now(_keeper(request, w))
        os.close(w)
        self.reports[r] = (job, b"")

    def read_report(self, fd: int) -> None:
        job, buffer = self.reports[fd]
        data = os.read(fd, 65536)
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            try:
                fields = json.loads(line)
            except ValueError:
                continue
            if isinstance(fields, dict):
                self.send(job, fields)
        if data:
            self.reports[fd] = (job, buffer)
            return
        os.close(fd)
        del self.reports[fd]

    def serve(self) -> None:
        while True:
            ready, _, _ = select.select([self.sock, *self.reports], [], [], 0.2)
            for fd in ready:
                if fd is self.sock:
                    data = self.sock.recv(1 << 20)
                    if not data:
                        return
                    self.pending += data
                    *lines, self.pending = self.pending.split(b"\n")
                    for line in lines:
                        self.start(json.loads(line))
                else:
                    self.read_report(fd)
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="runner.sandbox.zygote")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    args = parser.parse_args(argv)
    if not process.die_with_parent(args.parent_pid):
        return 1
    warmup.import_runtime()
    from runner.child import candidate, evaluate  # noqa: F401  the judge's and the candidate's code, imported once

    Server(socket.socket(fileno=args.fd)).serve()
    return 0


if __name__ == "__main__":
    process.exit_now(main())
