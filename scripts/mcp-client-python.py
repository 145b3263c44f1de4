#!/usr/bin/env python3
"""`knowledge-db mcp` driven by the official MCP Python SDK (`mcp` on PyPI).

  mcp-client-python.py BINARY STORE

Connects three ways: mode="auto" (the SDK probes `server/discover` and speaks
2026-07-28 without a handshake), mode="legacy" (the initialize handshake,
2025-11-25) and the pinned 2026-07-28 mode. Each time it lists the tools (every
one with an outputSchema, integers declared as plain integers), calls every
tool (the SDK validates structuredContent against the outputSchema), and
checks that maxResults 0 is refused with -32602. Prints one JSON line per mode
and exits non-zero on the first failed check. Run by tests/mcp_clients.rs.
"""
import asyncio
import json
import sys

from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def session(binary, store, mode):
    params = StdioServerParameters(command=binary, args=["--store", store, "mcp", "--no-vectors"])
    async with Client(params, mode=mode, raise_exceptions=True) as client:
        version = client.protocol_version
        tools = (await client.list_tools()).tools
        names = sorted(t.name for t in tools)
        check(names == ["memory_add", "memory_get", "memory_recall", "memory_search", "memory_stats"], f"tools: {names}")
        for tool in tools:
            check(tool.output_schema is not None and tool.output_schema.get("type") == "object",
                  f"{tool.name}: no outputSchema")
        search = next(t for t in tools if t.name == "memory_search")
        max_results = search.input_schema["properties"]["maxResults"]
        check(max_results.get("type") == "integer" and max_results.get("minimum") == 1,
              f"maxResults schema: {max_results}")

        added = await client.call_tool("memory_add", {"records": [
            {"id": f"py-{mode}", "text": f"the python sdk wrote this over {mode} (marmot)"}]})
        check(not added.is_error and added.structured_content["added"] + added.structured_content["unchanged"] == 1,
              f"memory_add: {added}")
        found = await client.call_tool("memory_search", {"query": "marmot", "maxResults": 2})
        check(not found.is_error, f"memory_search: {found}")
        results = found.structured_content["results"]
        check(0 < len(results) <= 2 and results[0]["id"].startswith("py-"), f"results: {results}")
        shaped = await client.call_tool("memory_search", {"query": "marmot", "format": "openclaw"})
        check(shaped.structured_content["results"][0]["path"].startswith("py-"), f"openclaw shape: {shaped}")
        got = await client.call_tool("memory_get", {"id": results[0]["id"]})
        check(got.structured_content["record"]["id"] == results[0]["id"], f"memory_get: {got}")
        recalled = await client.call_tool("memory_recall", {"prompt": "a recipe for banana bread please"})
        check(not recalled.is_error and recalled.structured_content["memories"] == [], f"memory_recall: {recalled}")
        stats = await client.call_tool("memory_stats", {})
        check(stats.structured_content["records"] >= 1, f"memory_stats: {stats}")
        try:
            zero = await client.call_tool("memory_search", {"query": "marmot", "maxResults": 0})
            raise AssertionError(f"maxResults 0 was answered: {zero}")
        except MCPError as refused:
            check(refused.error.code == -32602, f"maxResults 0: {refused.error}")
        return {"mode": mode, "protocolVersion": version, "tools": len(tools), "results": len(results)}


async def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, store = sys.argv[1:]
    expected = {"auto": "2026-07-28", "legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
    for mode, version in expected.items():
        report = await session(binary, store, mode)
        check(report["protocolVersion"] == version, f"{mode}: negotiated {report['protocolVersion']}, not {version}")
        print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
