"""Round-trip time of an MCP tool call through ``shadow proxy`` next to the same call made to the server directly.

Run: python3 tests/benchmarks/bench_proxy.py [--calls N]
Prints the median and p99 per call for: direct, proxy in legacy, shadow and cutover mode (the call log written to a
SQLite file in the background), and each as a ratio of direct, all measured in this one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = [sys.executable, str(ROOT / "tests" / "fixtures" / "mcp_server.py")]


async def timings(command: list[str], env: dict[str, str], calls: int) -> list[float]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(ROOT))
    with open(os.devnull, "w", encoding="utf-8") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await client.list_tools()
            for _ in range(20):  # warm-up
                await client.call_tool("add", {"a": 1, "b": 2})
            out = []
            for i in range(calls):
                started = time.perf_counter()
                await client.call_tool("add", {"a": i, "b": 2})
                out.append(time.perf_counter() - started)
            return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["direct"] = anyio.run(timings, FIXTURE, base, args.calls)
        for mode in ("legacy", "shadow", "cutover"):
            env = {**base, "SHADOW_DB_URL": f"sqlite:///{tmp}/{mode}.db", "SHADOW_FLAGS": f"*={mode}"}
            proxy = [sys.executable, "-m", "shadow.cli", "proxy", "--name", "bench", "--", *FIXTURE]
            results[f"proxy {mode}"] = anyio.run(timings, proxy, env, args.calls)
    direct_median = statistics.median(results["direct"])
    direct_p99 = statistics.quantiles(results["direct"], n=100)[98]
    print(f"{'path':<16}{'median ms':>11}{'p99 ms':>9}{'median x':>10}{'p99 x':>8}")
    for name, values in results.items():
        median, p99 = statistics.median(values), statistics.quantiles(values, n=100)[98]
        print(f"{name:<16}{median * 1000:>11.3f}{p99 * 1000:>9.3f}{median / direct_median:>10.2f}"
              f"{p99 / direct_p99:>8.2f}")


if __name__ == "__main__":
    main()
