#!/usr/bin/env python3
"""Two DynamoDB-compatible servers under the same `shoal bench` load, in alternated pairs.

This host runs every process at one of two speeds in streaks of minutes, and other tenants come
and go, so one run of each server tells little: a ratio is only fair between runs made close
together. This script runs the servers in pairs, round after round, and prints each pair's
ratios and, per workload, their range and median:

- `ops/s A / B`: throughput, the figure the "at least 5x Dynoxide" targets are read from;
- `CPU A / B`: server CPU time per operation (user + system, from /proc), the figure the
  do-nothing server is compared by.

For each run: starts the server with a fresh directory and a free port, waits until it answers,
runs `shoal bench --endpoint ... --server-pid PID` with the options given, then stops the server
with SIGTERM. The order alternates from round to round (A then B, then B then A), so a slow
streak that starts mid-round weighs on both sides alike over the rounds. A run whose requests
failed is named beside its pair: its ratio is not a fair one. Linux only (reads /proc).

    python3 benches/http_pairs.py [--rounds N] [--workloads W,...] [--pin] [--bench SHOAL] \\
        [--bench-arg ARG ...] -- COMMAND_A [ARG ...] --vs COMMAND_B [ARG ...]

Each COMMAND may contain {port} and {dir}: a free port and a fresh empty directory. `--pin`
runs the server on CPU 0 and the bench on CPU 1, so each process has a core to itself and the
CPU ratio is the servers' alone. Examples (docs/PERFORMANCE.md, "Over HTTP"):

    python3 benches/http_pairs.py --rounds 6 --workloads GetItem -- \\
        target/release/shoal serve --port {port} --data-dir {dir}/data \\
        --vs dynoxide serve --port {port} --db-path {dir}/db.sqlite
    python3 benches/http_pairs.py --rounds 4 --workloads GetItem --pin -- \\
        target/release/shoal serve --port {port} --data-dir {dir}/data \\
        --vs target/release/examples/noop_server {port}
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# Run as `python3 benches/http_pairs.py`, this file's folder is on the import path.
from startup import answered, free_port

SERVER_START_SECONDS_MAX = 30
SERVER_STOP_SECONDS_MAX = 30


def micros(text):
    """`19.3 µs` (or ms, s) as microseconds."""
    value, _, unit = text.strip().partition(" ")
    scale = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}.get(unit)
    if scale is None:
        raise ValueError(f"not a duration: {text!r}")
    return float(value) * scale


def parse_report(text):
    """{workload: (ops per second, server CPU µs per op, failed requests)} from `shoal bench`'s
    table."""
    rows = {}
    header = None
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        row = dict(zip(header, cells))
        cpu = row.get("server CPU per op", "")
        rows[row["workload"]] = (float(row["ops/s"]), micros(cpu) if cpu else None, int(row["errors"]))
    return rows


def run_once(command, args):
    port = free_port()
    work = tempfile.mkdtemp(prefix="http-pairs-")
    argv = [a.replace("{port}", str(port)).replace("{dir}", work) for a in command]
    server_prefix, bench_prefix = (["taskset", "-c", "0"], ["taskset", "-c", "1"]) if args.pin else ([], [])
    server = subprocess.Popen(server_prefix + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS_MAX
        while not answered(port):
            if server.poll() is not None:
                raise RuntimeError(f"{argv[0]} exited with {server.returncode} before answering")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{argv[0]} did not answer on {port} in {SERVER_START_SECONDS_MAX} s")
            time.sleep(0.05)
        bench = bench_prefix + [
            args.bench, "bench",
            "--endpoint", f"http://127.0.0.1:{port}",
            "--workloads", args.workloads,
            "--server-pid", str(server.pid),
        ] + args.bench_arg
        done = subprocess.run(bench, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"shoal bench failed ({done.returncode}): {done.stderr.strip()}")
        return parse_report(done.stdout)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=SERVER_STOP_SECONDS_MAX)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


def split_commands(rest):
    if rest and rest[0] == "--":
        rest = rest[1:]
    if "--vs" not in rest:
        raise SystemExit("give two commands: -- COMMAND_A ... --vs COMMAND_B ...")
    at = rest.index("--vs")
    first, second = rest[:at], rest[at + 1:]
    if not first or not second:
        raise SystemExit("both commands must be given: -- COMMAND_A ... --vs COMMAND_B ...")
    return first, second


def spread(values):
    return f"{min(values):.2f}–{max(values):.2f}, median {statistics.median(values):.2f}"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--workloads", default="GetItem")
    parser.add_argument("--pin", action="store_true", help="server on CPU 0, bench on CPU 1")
    parser.add_argument("--bench", default="target/release/shoal", help="the shoal binary that runs the load")
    parser.add_argument(
        "--bench-arg", action="append",
        default=None,
        help="an argument passed on to shoal bench (repeat it; given, it replaces the default "
        "--seconds 8, and shoal bench's own defaults stand: 32 connections, 20,000 items "
        "over 1,000 partitions)",
    )
    args, rest = parser.parse_known_args()
    if args.bench_arg is None:
        args.bench_arg = ["--seconds", "8"]
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    command_a, command_b = split_commands(rest)
    print(f"A: {' '.join(command_a)}\nB: {' '.join(command_b)}", flush=True)
    ratios = {}
    for round_number in range(1, args.rounds + 1):
        load = os.getloadavg()[0]
        if round_number % 2:
            a = run_once(command_a, args)
            b = run_once(command_b, args)
        else:
            b = run_once(command_b, args)
            a = run_once(command_a, args)
        for workload, (a_ops, a_cpu, a_errors) in a.items():
            if workload not in b:
                continue
            b_ops, b_cpu, b_errors = b[workload]
            throughput = a_ops / b_ops if b_ops else float("inf")
            cpu = a_cpu / b_cpu if a_cpu and b_cpu else None
            ratios.setdefault(workload, []).append((throughput, cpu))
            cpu_text = (
                f"CPU {a_cpu:.1f} / {b_cpu:.1f} µs = {cpu:.2f}" if cpu is not None else "CPU not reported"
            )
            print(
                f"round {round_number} (load {load:.1f}) {workload}: ops/s {a_ops:,.0f} / {b_ops:,.0f} "
                f"= {throughput:.2f}; {cpu_text}"
                + (f"; FAILED REQUESTS {a_errors} / {b_errors}" if a_errors or b_errors else ""),
                flush=True,
            )
    for workload, pairs in ratios.items():
        throughputs = [t for t, _ in pairs]
        cpus = [c for _, c in pairs if c is not None]
        noun = "pair" if len(pairs) == 1 else "pairs"
        line = f"{workload}, {len(pairs)} {noun}: ops/s A / B {spread(throughputs)}"
        if cpus:
            line += f"; CPU A / B {spread(cpus)}"
        print(line)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as error:
        sys.exit(f"http_pairs: {error}")
