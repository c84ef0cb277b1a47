"""Replicas behind a real load balancer: HAProxy (Debian's, installed by
.ci/apt-tools) in front of three `hcpx mcp --http 127.0.0.1:0 --stateless
--state-key-file KEYS` that share one HCP_HOME, round robin, checking each replica's
/readyz; the official Python MCP SDK (pinned in tests/interop/requirements.txt)
drives them through it. HAProxy names the replica that served each answer in an
`X-Served-By` header, which the client's HTTP hook records.

- 100 tool calls spread over the three (each served some);
- a paged output made on one replica read through the others;
- a confirmation asked on one replica and answered on another; its state used
  again is refused (spent once among them);
- a key rotation: a confirmation asked before it is answered after it, the next
  is sealed with the new key, and once the old key is removed its states no longer
  open;
- a replica killed mid-run: its calls fail at once with an error, the others end
  well, and the calls after go to the two left;
- 2025-11-25 clients: without sessions on the stateless replicas, and with
  sessions pinned to one replica by `Mcp-Session-Id` (HAProxy's stick table learns
  it from the answer to `initialize`) on two replicas that keep sessions.

Usage: python tests/interop/replicas.py PATH_TO_HCPX
Prints one line per check and ends with `N passed, N failed`. Without HAProxy it
says so and fails when HCP_CI is set.
"""

import asyncio
import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HCPX = os.path.abspath(sys.argv[1])
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "replicas-token-0123456789abcdef"
KEY_1 = "k1 " + "MTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTE="
KEY_2 = "k2 " + "MjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjI="
PLAN = ["exec", "transit", "plan", "--", "from=Westgate", "to=North Park", "at=08:00"]
passed = 0
failed = 0


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {str(detail)[:2000]}")


def haproxy():
    found = shutil.which("haproxy") or next(
        (path for path in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(path, os.X_OK)), None
    )
    return found


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_keys(path, *lines):
    """Replaces the key file at once, as a secret volume or `mv` does."""
    with open(path + ".new", "w") as keys:
        keys.write("".join(line + "\n" for line in lines))
    os.replace(path + ".new", path)


class Replica:
    def __init__(self, name, home, work, keys, stateless=True):
        env = {
            "HCP_HOME": home,
            "HOME": os.path.dirname(home),
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HCP_MCP_TOKEN": TOKEN,
            "HCP_MCP_VIEW_BYTES": "1024",
        }
        args = [HCPX, "mcp", "--http", "127.0.0.1:0", "--state-key-file", keys]
        if stateless:
            args.append("--stateless")
        self.name = name
        self.process = subprocess.Popen(args, cwd=work, env=env, stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        if not found:
            self.process.kill()
            raise RuntimeError(f"{name}: no address printed: {line!r}")
        self.port = int(found.group(1))

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


class Balancer:
    """HAProxy on a free loopback port: `/mcp` round robin over `replicas`, and
    `/pinned/mcp` over `pinned` with sessions stuck to the replica that made them."""

    def __init__(self, root, program, replicas, pinned):
        self.port = free_port()
        servers = "\n".join(f"    server {r.name} 127.0.0.1:{r.port} check" for r in replicas)
        sticky = "\n".join(f"    server {r.name} 127.0.0.1:{r.port} check" for r in pinned)
        config = f"""
global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    retries 2
    option redispatch
    default-server inter 300ms fall 1 rise 1
frontend mcp
    bind 127.0.0.1:{self.port}
    use_backend pinned if {{ path_beg /pinned/ }}
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    http-response set-header X-Served-By %[srv_name]
{servers}
backend pinned
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    http-request set-path %[path,regsub(^/pinned,)]
    stick-table type string len 64 size 10k expire 30m
    stick match req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
    http-response set-header X-Served-By %[srv_name]
{sticky}
"""
        path = os.path.join(root, "haproxy.cfg")
        with open(path, "w") as file:
            file.write(config)
        self.log = open(os.path.join(root, "haproxy.log"), "w")
        self.process = subprocess.Popen([program, "-db", "-f", path], stdout=self.log, stderr=self.log)
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


class Seen:
    """What the HTTP client saw: per JSON-RPC request, the replica that served it."""

    def __init__(self):
        self.answers = []

    async def hook(self, response):
        try:
            body = json.loads(response.request.content or b"{}")
        except ValueError:
            body = {}
        self.answers.append((body.get("method"), response.headers.get("x-served-by"), response.status_code))

    def client(self):
        return httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {TOKEN}"},
            event_hooks={"response": [self.hook]},
            timeout=httpx2.Timeout(60.0),
        )

    def served(self, method="tools/call", since=0):
        return [who for (called, who, status) in self.answers[since:] if called == method and status == 200]


def accept_with(before=None):
    async def elicit(context, params):
        if before:
            before()
        return types.ElicitResult(action="accept", content={"confirm": True})

    return elicit


async def raw_call(url, arguments, input_responses=None, request_state=None):
    """One 2026-07-28 tools/call written by hand (for states a client would not
    send): the answer's JSON and the replica that served it."""
    params = {
        "name": "hcp",
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        },
    }
    if input_responses is not None:
        params["inputResponses"] = input_responses
        params["requestState"] = request_state
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
            headers={
                "Authorization": f"Bearer {TOKEN}",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": "hcp",
            },
        )
    return response.json(), response.headers.get("x-served-by")


def envelope(result):
    return result.structured_content or {}


async def spread(url):
    seen = Seen()
    async with seen.client() as http, Client(streamable_http_client(url, http_client=http)) as client:
        check("2026-07-28 through the balancer", client.protocol_version == "2026-07-28", client.protocol_version)
        arrivals = []
        for _ in range(100):
            result = await client.call_tool("hcp", {"argv": PLAN})
            arrivals.append(((envelope(result).get("data") or {}).get("arrive"), result.is_error))
        check("100 calls all answered", arrivals == [("08:31", False)] * 100, collections.Counter(arrivals))
        counts = collections.Counter(seen.served())
        check(
            "each of the three replicas served some of them",
            set(counts) == {"r1", "r2", "r3"} and min(counts.values()) >= 20,
            counts,
        )
        print(f"     served: {dict(sorted(counts.items()))}")

        result = await client.call_tool("hcp", {"argv": ["exec", "probe", "flood", "--", "mib=1"]})
        output = envelope(result).get("outputId")
        check("a long output is kept for paging", bool(output) and envelope(result).get("outputTruncated"), result)
        since = len(seen.answers)
        pages = []
        for _ in range(3):
            page = await client.call_tool("hcp", {"argv": ["output", output or "", "--offset", "1048000"]})
            pages.append((envelope(page).get("data") or {}).get("length"))
        check("every replica pages it", pages == [576] * 3, pages)
        check("…on three replicas", sorted(seen.served(since=since)) == ["r1", "r2", "r3"], seen.served(since=since))


async def confirmations(url, keys, work):
    seen = Seen()
    # A state sealed with k1 and never answered, for after k1 is gone.
    held, _ = await raw_call(url, {"argv": ["exec", "probe", "write", "--", "target=out/held"]})
    held_state = (held.get("result") or {}).get("requestState", "")
    check("a confirmation is asked with a sealed state", held_state.startswith("rs2."), held)

    async with seen.client() as http, Client(
        streamable_http_client(url, http_client=http), elicitation_callback=accept_with()
    ) as client:
        since = len(seen.answers)
        result = await client.call_tool("hcp", {"argv": ["exec", "probe", "write", "--", "target=out/one"]})
        asked_answered = seen.served(since=since)
        check("a confirmed write runs", result.is_error is False and os.path.exists(os.path.join(work, "out/one")), result)
        check(
            "asked on one replica, answered on another",
            len(asked_answered) == 2 and asked_answered[0] != asked_answered[1],
            asked_answered,
        )

    # Its state is spent among all replicas: replay the answer (three times: every replica).
    asked, asker = await raw_call(url, {"argv": ["exec", "probe", "write", "--", "target=out/two"]})
    state = (asked.get("result") or {}).get("requestState")
    yes = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    answers = [await raw_call(url, {"argv": ["exec", "probe", "write", "--", "target=out/two"]}, yes, state) for _ in range(3)]
    reasons = [
        (((a.get("result") or {}).get("structuredContent") or {}).get("error") or {}).get("reason") for a, _ in answers
    ]
    check("answered once, on another replica", reasons[0] is None and answers[0][1] != asker, (asker, answers[0]))
    check(
        "the same state again is refused on every replica",
        reasons[1:] == ["needs_confirmation"] * 2 and {answers[1][1], answers[2][1]} | {answers[0][1]} == {"r1", "r2", "r3"},
        (reasons, [who for _, who in answers]),
    )

    # Rotation while a confirmation is in flight: asked under k1, the file gets k2
    # first (k1 still listed), answered after.
    async with seen.client() as http, Client(
        streamable_http_client(url, http_client=http),
        elicitation_callback=accept_with(lambda: write_keys(keys, KEY_2, KEY_1)),
    ) as client:
        result = await client.call_tool("hcp", {"argv": ["exec", "probe", "write", "--", "target=out/three"]})
        check("a confirmation asked before a rotation is answered after it", result.is_error is False, result)
    rotated, _ = await raw_call(url, {"argv": ["exec", "probe", "write", "--", "target=out/four"]})
    rotated_state = (rotated.get("result") or {}).get("requestState", "")
    check("the next is sealed with the new key", rotated_state.startswith("rs2.azI."), rotated_state[:12])
    write_keys(keys, KEY_2)
    old, _ = await raw_call(url, {"argv": ["exec", "probe", "write", "--", "target=out/held"]}, yes, held_state)
    old_error = ((old.get("result") or {}).get("structuredContent") or {}).get("error") or {}
    check(
        "once the old key is removed, its states no longer open",
        old_error.get("reason") == "needs_confirmation" and not os.path.exists(os.path.join(work, "out/held")),
        old,
    )
    new, _ = await raw_call(url, {"argv": ["exec", "probe", "write", "--", "target=out/four"]}, yes, rotated_state)
    check("a state of the new key opens", (new.get("result") or {}).get("isError") is False, new)


async def legacy_stateless(url):
    seen = Seen()
    async with seen.client() as http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        check("2025-11-25 without sessions: negotiated", client.protocol_version == "2025-11-25", client.protocol_version)
        results = [await client.call_tool("hcp", {"argv": PLAN}) for _ in range(6)]
        check("2025-11-25 without sessions: calls answered", all(r.is_error is False for r in results), results)
        check("…on every replica", set(seen.served()) == {"r1", "r2", "r3"}, seen.served())


async def legacy_pinned(url):
    seen = Seen()
    async with seen.client() as http, Client(
        streamable_http_client(url, http_client=http), mode="legacy", elicitation_callback=accept_with()
    ) as client:
        check("2025-11-25 with a session: negotiated", client.protocol_version == "2025-11-25", client.protocol_version)
        results = [await client.call_tool("hcp", {"argv": PLAN}) for _ in range(6)]
        confirmed = await client.call_tool("hcp", {"argv": ["exec", "probe", "write", "--", "target=out/pinned"]})
        check("2025-11-25 with a session: calls answered", all(r.is_error is False for r in results), results)
        check("2025-11-25 with a session: elicitation/create confirms", confirmed.is_error is False, confirmed)
    served = {who for (method, who, status) in seen.answers if who}
    check("the session stays on the replica that made it", len(served) == 1, seen.answers)


async def killed(url, replicas):
    """Nine slow calls, each from a client of its own (a client whose connection
    breaks may end whole), three on each replica; one replica killed meanwhile."""
    seen = Seen()

    async def slow():
        started = time.monotonic()
        try:
            async with seen.client() as http, Client(streamable_http_client(url, http_client=http)) as client:
                result = await client.call_tool("hcp", {"argv": ["exec", "probe", "sleep", "--", "seconds=3"]})
                return ("ok" if result.is_error is False else "error", time.monotonic() - started)
        except Exception as error:  # the failure of a call on the killed replica
            return (f"raised {type(error).__name__}", time.monotonic() - started)

    calls = []
    for _ in range(9):
        calls.append(asyncio.create_task(slow()))
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)
    # Which calls the killed replica runs is the balancer's doing, request by request
    # (a client's earlier requests shift the turn): count them by their keepers. Every
    # call runs by now.
    running = [len(keepers(replica.process.pid)) for replica in replicas]
    check("all nine calls run when a replica is killed", sum(running) == 9, running)
    orphans = descendants(replicas[1].process.pid)
    replicas[1].process.kill()
    killed_at = time.monotonic()
    gone = await until(lambda: not any(alive(pid) for pid in orphans), 2.0)
    check(
        "the killed replica's pack processes are gone with it",
        len(orphans) >= 3 and gone,
        (orphans, [pid for pid in orphans if alive(pid)]),
    )
    outcomes = await asyncio.gather(*calls)
    ended = time.monotonic()
    good = [o for o in outcomes if o[0] == "ok"]
    bad = [o for o in outcomes if o[0] != "ok"]
    print(f"     outcomes: {[(what, round(seconds, 2)) for what, seconds in outcomes]}")
    check(
        "the calls on the killed replica fail, the others end well",
        running[1] >= 1 and len(bad) == running[1] and len(good) == 9 - running[1],
        (running, outcomes),
    )
    check(
        "…and fail at once, not at a timeout",
        all(seconds < 3.0 for _, seconds in bad) and ended - killed_at < 4.0,
        (outcomes, ended - killed_at),
    )
    async with seen.client() as http, Client(streamable_http_client(url, http_client=http)) as client:
        since = len(seen.answers)
        after = [await client.call_tool("hcp", {"argv": PLAN}) for _ in range(12)]
        check("the calls after all succeed", all(r.is_error is False for r in after), after)
        served = seen.served(since=since)
        check("…on the two replicas left", set(served) == {"r1", "r3"} and len(served) == 12, served)


def descendants(root):
    """Every process below `root`, by the parents /proc gives."""
    children = collections.defaultdict(list)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as file:
                parent = int(file.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children[parent].append(int(pid))
    found, todo = [], [root]
    while todo:
        for child in children[todo.pop()]:
            found.append(child)
            todo.append(child)
    return found


def keepers(root):
    """The calls running below `root`: each has one keeper, named hcpx-keeper."""
    named = []
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/comm") as file:
                if file.read().strip() == "hcpx-keeper":
                    named.append(pid)
        except OSError:
            continue
    return named


def alive(pid):
    """Whether `pid` is a process that still runs (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def until(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.05)
    return condition()


async def main():
    program = haproxy()
    if not program:
        message = "HAProxy (Debian's haproxy, installed by .ci/apt-tools)"
        if os.environ.get("HCP_CI"):
            check(f"this test needs {message}, which CI must provide", False)
        else:
            print(f"note: skipped, this machine lacks {message}")
            print("0 passed, 0 failed")
            return
    with tempfile.TemporaryDirectory() as root:
        home = os.path.join(root, "home")
        work = os.path.join(root, "work")
        os.makedirs(os.path.join(work, "out"))
        shutil.copytree(os.path.join(REPO, "tests/fixtures/packs/probe"), os.path.join(home, "packs/probe"))
        keys = os.path.join(root, "keys")
        write_keys(keys, KEY_1)
        replicas, pinned, balancer = [], [], None
        try:
            replicas = [Replica(f"r{n}", home, work, keys) for n in (1, 2, 3)]
            pinned = [Replica(f"s{n}", home, work, keys, stateless=False) for n in (1, 2)]
            balancer = Balancer(root, program, replicas, pinned)
            deadline = time.monotonic() + 15
            up = set()
            async with httpx2.AsyncClient(timeout=5) as http:
                while time.monotonic() < deadline and up != {"r1", "r2", "r3"}:
                    try:
                        response = await http.get(f"http://127.0.0.1:{balancer.port}/readyz")
                        if response.status_code == 200:
                            up.add(response.headers.get("x-served-by"))
                    except httpx2.HTTPError:
                        pass
                    await asyncio.sleep(0.05)
            check("every replica is ready behind the balancer", up == {"r1", "r2", "r3"}, up)
            started = time.monotonic()
            for name, scenario in (
                ("spread", lambda: spread(balancer.url)),
                ("confirmations", lambda: confirmations(balancer.url, keys, work)),
                ("2025-11-25 stateless", lambda: legacy_stateless(balancer.url)),
                ("2025-11-25 pinned", lambda: legacy_pinned(f"http://127.0.0.1:{balancer.port}/pinned/mcp")),
                ("kill", lambda: killed(balancer.url, replicas)),
            ):
                try:
                    await scenario()
                except Exception as error:  # a crash is a failure, reported, not hidden
                    check(f"{name}: ran", False, repr(error))
            print(f"     scenarios took {time.monotonic() - started:.1f} s")
        finally:
            if balancer:
                balancer.stop()
            for replica in replicas + pinned:
                replica.stop()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


asyncio.run(main())
