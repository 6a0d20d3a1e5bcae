#!/usr/bin/env python3
"""What idle keep-alive connections cost a DynamoDB-compatible server, as a test suite leaves them.

Starts the server, then opens connections one after another from this machine; each sends one
ListTables request on a kept-alive connection, reads the answer and stays open, idle, as an
SDK's pool leaves it. At each step it reads the server's resident memory (VmRSS) and the
latency of a ListTables on a fresh connection, and counts the answers that were not 200.
Linux only (reads /proc).

    python3 benches/idle_connections.py [--steps 0,1000,2000,4000,8000] -- COMMAND [ARG ...]

COMMAND may contain {port}: a free port. Example:

    python3 benches/idle_connections.py -- target/release/shoal serve --in-memory --port {port}
"""

import argparse
import resource
import socket
import statistics
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port):
    body = b"{}"
    return (
        b"POST / HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Type: application/x-amz-json-1.0\r\n"
        b"X-Amz-Target: DynamoDB_20120810.ListTables\r\n"
        b"X-Amz-Date: 20240101T000000Z\r\n"
        b"Authorization: AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/dynamodb/"
        b"aws4_request, SignedHeaders=host;x-amz-date, Signature=00\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


def read_answer(sock):
    """The status of one whole answer on `sock`, which stays open; 0 if it closed first."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        if not chunk:
            return 0
        received += chunk
    head, rest = received.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return 0
        rest += chunk
    return int(lines[0].split()[1])


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def wait_until_listening(port, deadline_seconds=30):
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise SystemExit("the server did not listen in time")


def fresh_latencies_ms(port, count=50):
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(request(port))
            status = read_answer(sock)
        latencies.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise SystemExit(f"a fresh connection was answered {status}")
    return latencies


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="0,1000,2000,4000,8000")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise SystemExit("give the server's command after --")
    steps = [int(step) for step in args.steps.split(",")]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < max(steps) + 100:
        raise SystemExit(f"the open-files limit ({hard}) cannot hold {max(steps)} connections")
    port = free_port()
    server = subprocess.Popen(
        [part.replace("{port}", str(port)) for part in command],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_until_listening(port)
        idle = []
        refused = 0
        print("idle connections | server RSS MiB | fresh ListTables ms (median, max) | not 200")
        for step in steps:
            while len(idle) < step:
                sock = socket.create_connection(("127.0.0.1", port))
                sock.sendall(request(port))
                if read_answer(sock) != 200:
                    refused += 1
                idle.append(sock)
            time.sleep(0.5)
            latencies = fresh_latencies_ms(port)
            print(
                f"{step:>16} | {rss_mib(server.pid):>14.1f} | "
                f"{statistics.median(latencies):>6.2f}, {max(latencies):>6.2f} | {refused}"
            )
        for sock in idle:
            sock.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
