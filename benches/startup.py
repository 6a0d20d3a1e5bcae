#!/usr/bin/env python3
"""Start-up, idle memory and shutdown of a DynamoDB-compatible server, as a user meets them.

For each run: starts the server, times launch to the first answered HTTP request on its port,
waits half a second, reads the process's resident memory (VmRSS), sends SIGTERM and times the
exit. Prints the median, minimum and maximum over the runs. Linux only (reads /proc).

    python3 benches/startup.py [--runs N] [--port P] -- COMMAND [ARG ...]

COMMAND may contain {port} and {dir}: a free port and a fresh empty directory for each run
(the directory's size at the end of the run is reported too, for servers that keep data on
disk). Examples:

    python3 benches/startup.py -- target/release/shoal serve --in-memory --port {port}
    python3 benches/startup.py -- target/release/shoal serve --data-dir {dir}/data --port {port}
"""

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answered(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            return s.recv(16).startswith(b"HTTP/")
    except OSError:
        return False


def directory_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def run_once(command):
    port = free_port()
    work = tempfile.mkdtemp(prefix="startup-")
    argv = [a.replace("{port}", str(port)).replace("{dir}", work) for a in command]
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = started + 30
    while not answered(port):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"the server never answered on port {port}: {' '.join(argv)}")
        time.sleep(0.0005)
    ready_ms = 1000 * (time.monotonic() - started)
    time.sleep(0.5)
    with open(f"/proc/{process.pid}/status") as status:
        rss_kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
    disk = directory_bytes(work)
    stopping = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    stop_ms = 1000 * (time.monotonic() - stopping)
    shutil.rmtree(work, ignore_errors=True)
    return ready_ms, rss_kib / 1024, stop_ms, disk / (1 << 20)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the server's command after --")
    results = [run_once(command) for _ in range(args.runs)]
    for index, (name, unit) in enumerate(
        [("start to first answer", "ms"), ("idle RSS", "MiB"), ("shutdown", "ms"),
         ("data on disk", "MiB")]
    ):
        values = [r[index] for r in results]
        print(f"{name}: median {statistics.median(values):.1f} {unit} "
              f"(min {min(values):.1f}, max {max(values):.1f}, {len(values)} runs)")


if __name__ == "__main__":
    main()
