"""Interop over Streamable HTTP: the official Python MCP SDK (pinned in
tests/interop/requirements.txt) drives `hcpx mcp --http 127.0.0.1:0` in both
protocol eras it supports: its default mode (2026-07-28 `server/discover`, no
session) and legacy `initialize` mode (2025-11-25, with a session). In each: a tool
call works, and an install made through the tool is announced the way that era
allows: on a `subscriptions/listen` stream on 2026-07-28 (and never as a bare
notification), as `notifications/resources/list_changed` on 2025-11-25. And over
`hcpx mcp --unix PATH`, through an httpx client bound to the socket file, the way
a host that can speak to a unix socket connects.

Usage: python tests/interop/python_http.py PATH_TO_HCPX
Prints one line per check and ends with `N passed, N failed`.
"""

import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

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


class Server:
    """`hcpx mcp --http 127.0.0.1:0` (or LISTEN) with its own HCP_HOME; the URL it printed."""

    def __init__(self, root, name, listen=("--http", "127.0.0.1:0")):
        home = os.path.join(root, name, "home")
        work = os.path.join(root, name, "work")
        os.makedirs(work)
        env = {"HCP_HOME": home, "HOME": root, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        self.process = subprocess.Popen(
            [HCPX, "mcp", *listen], cwd=work, env=env, stderr=subprocess.PIPE, text=True
        )
        line = self.process.stderr.readline()
        found = re.search(r"(http://\S+/mcp)", line)
        if not found:
            self.process.kill()
            raise RuntimeError(f"no address printed: {line!r}")
        self.url = found.group(1)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return None


async def modern(root):
    server = Server(root, "modern")
    bare = []

    async def on_message(message):
        # The SDK also shows this handler what arrives on a listen stream: those
        # carry their subscription id.
        if isinstance(message, types.ResourceListChangedNotification):
            meta = (message.params.meta if message.params else None) or {}
            if "io.modelcontextprotocol/subscriptionId" not in meta:
                bare.append(message)

    try:
        async with Client(server.url, message_handler=on_message) as client:
            check("2026-07-28: negotiated", client.protocol_version == "2026-07-28", client.protocol_version)
            result = await client.call_tool("hcp", {"argv": ["search", "journey"]})
            first = ((result.structured_content or {}).get("data") or {}).get("results", [{}])[0].get("id")
            check("2026-07-28: tool call over HTTP", first == "transit" and result.is_error is False, result)
            meta = result.meta or {}
            check(
                "2026-07-28: the result names the server",
                (meta.get("io.modelcontextprotocol/serverInfo") or {}).get("name") == "hcpx",
                meta,
            )
            async with client.listen(resources_list_changed=True) as subscription:
                check(
                    "2026-07-28: listen acknowledged for resourcesListChanged",
                    subscription.honored is not None and subscription.honored.resources_list_changed,
                    subscription.honored,
                )
                result = await client.call_tool("hcp", {"argv": ["install", "transit"], "confirm": True})
                check("2026-07-28: install through the tool", result.is_error is False, result)
                try:
                    event = await asyncio.wait_for(subscription.__anext__(), timeout=10)
                    check("2026-07-28: the listener hears the install", "ResourcesListChanged" in type(event).__name__, event)
                except Exception as error:  # a timeout is a failure, reported
                    check("2026-07-28: the listener hears the install", False, repr(error))
            resources = (await client.list_resources()).resources
            check(
                "2026-07-28: resources listed after the change",
                "hcp://skill/transit" in [str(r.uri) for r in resources],
            )
            check("2026-07-28: no bare list_changed notification", bare == [], bare)
    finally:
        code = server.stop()
        check("2026-07-28: SIGTERM stops the server cleanly", code == 0, code)


async def legacy(root):
    server = Server(root, "legacy")
    heard = asyncio.Event()

    async def on_message(message):
        if isinstance(message, types.ResourceListChangedNotification):
            heard.set()

    try:
        async with Client(server.url, mode="legacy", message_handler=on_message) as client:
            check("2025-11-25: negotiated", client.protocol_version == "2025-11-25", client.protocol_version)
            result = await client.call_tool(
                "hcp", {"argv": ["exec", "transit", "plan", "--", "from=Westgate", "to=North Park", "at=08:00"]}
            )
            arrive = ((result.structured_content or {}).get("data") or {}).get("arrive")
            check("2025-11-25: tool call over HTTP", arrive == "08:31", result)
            result = await client.call_tool("hcp", {"argv": ["install", "transit"], "confirm": True})
            check("2025-11-25: install through the tool", result.is_error is False, result)
            try:
                await asyncio.wait_for(heard.wait(), timeout=10)
                check("2025-11-25: notifications/resources/list_changed arrives", True)
            except asyncio.TimeoutError:
                check("2025-11-25: notifications/resources/list_changed arrives", False, "none in 10 s")
    finally:
        code = server.stop()
        check("2025-11-25: SIGTERM stops the server cleanly", code == 0, code)


async def unix(root):
    socket = os.path.join(root, "hcp.sock")
    server = Server(root, "unix", ("--unix", socket))
    try:
        check("unix socket: its mode is 0600", (os.stat(socket).st_mode & 0o777) == 0o600, oct(os.stat(socket).st_mode))
        http_client = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=socket))
        async with http_client, Client(streamable_http_client("http://localhost/mcp", http_client=http_client)) as client:
            result = await client.call_tool("hcp", {"argv": ["search", "journey"]})
            first = ((result.structured_content or {}).get("data") or {}).get("results", [{}])[0].get("id")
            check("unix socket: tool call", first == "transit" and result.is_error is False, result)
    finally:
        code = server.stop()
        check("unix socket: SIGTERM stops the server cleanly", code == 0, code)
        check("unix socket: the socket file is removed", not os.path.exists(socket))


async def main():
    with tempfile.TemporaryDirectory() as root:
        for name, session in (("2026-07-28", modern), ("2025-11-25", legacy), ("unix socket", unix)):
            try:
                await session(root)
            except Exception as error:  # a crash is a failure, reported, not hidden
                check(f"{name}: session ran", False, repr(error))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


asyncio.run(main())
