"""Interop: the official Python MCP SDK (pinned in tests/interop/requirements.txt)
drives `hcpx mcp` as a child process, in its default mode (2026-07-28
`server/discover`) and in legacy `initialize` mode: list tools, search, exec
transit plan, and read every resource.

Usage: python tests/interop/python_client.py PATH_TO_HCPX
Prints one line per check and ends with `N passed, N failed`.
"""

import asyncio
import json
import os
import sys
import tempfile

from mcp import Client, StdioServerParameters

HCPX = os.path.abspath(sys.argv[1])
passed = 0
failed = 0


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def text_of(contents):
    return "".join(getattr(c, "text", "") for c in contents)


async def session(mode, home, work):
    params = StdioServerParameters(
        command=HCPX,
        args=["mcp"],
        env={"HCP_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        cwd=work,
    )
    async with Client(params, mode=mode) as client:
        check(f"{mode}: protocol negotiated", bool(client.protocol_version), client.protocol_version)
        tools = (await client.list_tools()).tools
        check(f"{mode}: one tool named hcp", [t.name for t in tools] == ["hcp"], [t.name for t in tools])

        result = await client.call_tool("hcp", {"argv": ["search", "journey"]})
        envelope = result.structured_content or {}
        first = (envelope.get("data") or {}).get("results", [{}])[0].get("id")
        check(f"{mode}: search ranks transit first", first == "transit", envelope)
        check(f"{mode}: search is not an error", result.is_error is False, result.is_error)

        result = await client.call_tool(
            "hcp", {"argv": ["exec", "transit", "plan", "--", "from=Westgate", "to=North Park", "at=08:00"]}
        )
        envelope = result.structured_content or {}
        arrive = (envelope.get("data") or {}).get("arrive")
        check(f"{mode}: exec transit plan arrives 08:31", arrive == "08:31", envelope)
        check(f"{mode}: the text content carries the answer", "08:31" in text_of(result.content))

        result = await client.call_tool("hcp", {"args": "search journey; rm -rf /"})
        envelope = result.structured_content or {}
        reason = (envelope.get("error") or {}).get("reason")
        check(f"{mode}: metacharacter refused", result.is_error is True and reason == "metacharacter", envelope)

        resources = (await client.list_resources()).resources
        uris = [str(r.uri) for r in resources]
        check(f"{mode}: resources listed", "hcp://catalog" in uris and "hcp://skill/transit" in uris, uris)
        for uri in uris:
            read = await client.read_resource(uri)
            check(f"{mode}: read {uri}", len(text_of(read.contents)) > 0)
        catalog = json.loads(text_of((await client.read_resource("hcp://catalog")).contents))
        check(f"{mode}: catalog has the built-in packs", len(catalog.get("packs", [])) >= 4, catalog)
        templates = (await client.list_resource_templates()).resource_templates
        check(
            f"{mode}: skill template",
            "hcp://skill/{pack_id}" in [t.uri_template for t in templates],
            [t.uri_template for t in templates],
        )


async def adopted(root):
    """`hcpx adopt mcp --write` in a fresh folder; the SDK starts what it wrote."""
    import subprocess

    folder = os.path.join(root, "fresh")
    os.makedirs(folder)
    env = {"HCP_HOME": os.path.join(root, "home"), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    done = subprocess.run([HCPX, "adopt", "mcp", "--write", "--yes"], cwd=folder, env=env, capture_output=True)
    check("adopt mcp --write", done.returncode == 0, done.stderr)
    with open(os.path.join(folder, ".hcp", "mcp.json")) as handle:
        server = json.load(handle)["mcpServers"]["hcp"]
    check("the entry starts hcpx mcp", server["args"] == ["mcp"], server)
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env={**server.get("env", {}), "PATH": env["PATH"]}, cwd=folder
    )
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        check("the adopted configuration serves the hcp tool", [t.name for t in tools] == ["hcp"], tools)


async def main():
    with tempfile.TemporaryDirectory() as root:
        try:
            await adopted(root)
        except Exception as error:  # a crash is a failure, reported, not hidden
            check("adopted configuration ran", False, repr(error))
        home = os.path.join(root, "home")
        work = os.path.join(root, "work")
        os.makedirs(work)
        for mode in ("auto", "legacy"):
            try:
                await session(mode, home, work)
            except Exception as error:  # a crash is a failure, reported, not hidden
                check(f"{mode}: session ran", False, repr(error))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


asyncio.run(main())
