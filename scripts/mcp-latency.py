#!/usr/bin/env python3
"""MCP memory_search latency as an agent sees it.

Round trip of one `tools/call` at a time through the real `knowledge-db mcp`
process over stdio, for the queries of a BEIR queries.jsonl (cycled up to CALLS),
10 results each. Prints p50/p95/p99, mean and max in milliseconds, the time to
an answered `initialize`, and the vector status the server reported.

  knowledge-db bench gen --from ../shared/eval/transcripts/claude-code-entire-cli --records 100000 --out /tmp/g100k
  knowledge-db --store /tmp/s100k init && knowledge-db --store /tmp/s100k add /tmp/g100k/corpus.jsonl --embed later
  scripts/mcp-latency.py target/release/knowledge-db /tmp/s100k /tmp/g100k/queries.jsonl 1000 [mcp args...]
"""
import json
import math
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    binary, store, queries, calls = sys.argv[1:5]
    queries = [json.loads(line)["text"] for line in open(queries) if line.strip()]
    started = time.perf_counter()
    server = subprocess.Popen(
        [binary, "--store", store, "mcp", *sys.argv[5:]],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, bufsize=1,
    )

    def roundtrip(request_id, method, params):
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        while True:
            answer = json.loads(server.stdout.readline())
            if answer.get("id") == request_id:
                return answer

    roundtrip(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "mcp-latency", "version": "1"}})
    ready_ms = (time.perf_counter() - started) * 1000
    times, empty, vector = [], 0, ""
    for i in range(int(calls)):
        t = time.perf_counter()
        answer = roundtrip(i + 1, "tools/call", {"name": "memory_search", "arguments": {
            "query": queries[i % len(queries)], "maxResults": 10}})
        times.append((time.perf_counter() - t) * 1000)
        result = answer["result"]
        if result.get("isError"):
            sys.exit(f"call {i} failed: {answer}")
        empty += not result["structuredContent"]["results"]
        vector = result["structuredContent"]["vector"]
    server.stdin.close()
    server.wait()
    times.sort()

    def pct(q):
        return times[min(len(times) - 1, max(0, math.ceil(len(times) * q) - 1))]

    print(json.dumps({
        "calls": len(times), "p50_ms": pct(0.5), "p95_ms": pct(0.95), "p99_ms": pct(0.99),
        "mean_ms": sum(times) / len(times), "max_ms": times[-1],
        "startup_to_initialized_ms": ready_ms, "calls_without_results": empty, "vector": vector,
    }, indent=1))


if __name__ == "__main__":
    main()
