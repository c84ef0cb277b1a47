"""The published formats, checked with validators nobody here wrote: `server.json`
against the MCP Registry's schema, and the folder `hcpx adopt plugin` writes against
the Agent Plugins 1.0.0 schemas (plugin.json, mcp.json), its skills with the Agent
Skills reference validator (`skills-ref`), and the rules of the Agent Plugins text the
schemas cannot hold (a `command` is a bare name or a `./` path inside the plugin; both
files target the same version). Then the server `mcp.json` describes is started as a
plugin host starts it (in the plugin's root, PLUGIN_ROOT and PLUGIN_DATA set) and the
official Python MCP SDK lists its tools. The schemas are the copies in tests/schemas/
(see its README): nothing is fetched.

Usage: python tests/schemas/validate.py PATH_TO_HCPX
Prints one line per check and ends with `N passed, N failed`.
"""

import asyncio
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import jsonschema
import skills_ref
from mcp import Client, StdioServerParameters

HCPX = os.path.abspath(sys.argv[1])
HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
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


def schema(name):
    return json.loads((HERE / name).read_text())


def problems(validator_class, schema_doc, document):
    validator = validator_class(schema_doc, format_checker=validator_class.FORMAT_CHECKER)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def check_server_json():
    registry = schema("mcp-registry-2025-12-11-server.schema.json")
    server = json.loads((ROOT / "server.json").read_text())
    check("server.json names the schema kept here", server.get("$schema") == registry["$id"], server.get("$schema"))
    found = problems(jsonschema.Draft7Validator, registry, server)
    check("server.json is valid against the MCP Registry schema", not found, found)
    # The schema's own examples of a bad document are refused: the validator works.
    bad = dict(server, description="x" * 101)
    check("a 101-character description is refused", problems(jsonschema.Draft7Validator, registry, bad))


def adopt_plugin(work, home, path, extra):
    env = {"HOME": str(work), "HCP_HOME": str(home), "PATH": path}
    run = subprocess.run(
        [HCPX, "--json", "adopt", "plugin", "--write", "--yes", *extra],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return run.returncode, run.stdout + run.stderr


def check_plugin(root, label):
    plugin_schema = schema("agent-plugins-1.0.0-plugin.schema.json")
    mcp_schema = schema("agent-plugins-1.0.0-mcp.schema.json")
    manifest = json.loads((root / "plugin.json").read_text())
    found = problems(jsonschema.Draft202012Validator, plugin_schema, manifest)
    check(f"{label}: plugin.json is valid Agent Plugins 1.0.0", not found, found)
    mcp = json.loads((root / "mcp.json").read_text())
    found = problems(jsonschema.Draft202012Validator, mcp_schema, mcp)
    check(f"{label}: mcp.json is valid Agent Plugins 1.0.0", not found, found)
    check(f"{label}: both files target 1.0.0", "/1.0.0/" in manifest["$schema"] and "/1.0.0/" in mcp["$schema"])
    server = mcp["mcpServers"]["hcp"]
    command = server["command"]
    # The text: a bare executable name, or a plugin-relative path inside the root.
    # A host that loads plugins may be a desktop app without the shell's PATH, so
    # the plugin carries a script that starts this very binary.
    target = (root / command).resolve()
    check(
        f"{label}: the command is ./bin/hcpx, inside the plugin, and runs",
        command == "./bin/hcpx" and target.is_relative_to(root.resolve()) and os.access(target, os.X_OK),
        command,
    )
    script = (root / "bin" / "hcpx").read_text()
    check(f"{label}: the script starts this binary", f"exec {HCPX} " in script, script)
    check(f"{label}: it starts `hcpx mcp`", server["args"] == ["mcp"], server)
    skills = sorted(p for p in (root / "skills").iterdir() if (p / "SKILL.md").is_file())
    check(f"{label}: the hcpx skill is there", root / "skills" / "hcpx" in skills, skills)
    for skill in skills:
        errors = skills_ref.validate(skill)
        check(f"{label}: skill {skill.name} is a valid Agent Skill", not errors, errors)
    return server


async def start_as_a_host(root, server, home, path, label):
    """Starts the server as a plugin host does: the command resolved against the
    plugin root (a bare name on PATH), in the root, with PLUGIN_ROOT and PLUGIN_DATA."""
    data = root.parent / "plugin-data"
    data.mkdir(exist_ok=True)
    command = server["command"]
    if command.startswith("./"):
        command = str(root / command)
    env = {"PATH": path, **server.get("env", {}), "PLUGIN_ROOT": str(root), "PLUGIN_DATA": str(data)}
    params = StdioServerParameters(command=command, args=server["args"], env=env, cwd=str(root))
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        check(f"{label}: the plugin's server lists the hcp tool", [t.name for t in tools] == ["hcp"], tools)


def main():
    check_server_json()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        home = tmp / "hcp-home"
        # hcpx is not on PATH: the plugin carries a script that starts this binary.
        work = tmp / "work"
        work.mkdir()
        code, out = adopt_plugin(work, home, "/usr/bin:/bin", ["--pack-skills"])
        check("adopt plugin --pack-skills --write", code == 0, out)
        root = work / "hcpx-plugin"
        server = check_plugin(root, "hcpx-plugin")
        check("the packs' skills are there", (root / "skills" / "transit" / "SKILL.md").is_file())
        asyncio.run(start_as_a_host(root, server, home, "/usr/bin:/bin", "hcpx-plugin"))
        # This binary is PATH's hcpx, and --dir names the folder.
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        (bin_dir / "hcpx").symlink_to(HCPX)
        path = f"{bin_dir}:/usr/bin:/bin"
        work = tmp / "work2"
        work.mkdir()
        code, out = adopt_plugin(work, home, path, ["--dir", "plug"])
        check("adopt plugin --dir plug --write", code == 0, out)
        root = work / "plug"
        server = check_plugin(root, "--dir plug")
        check("only the hcpx skill without --pack-skills", [p.name for p in (root / "skills").iterdir()] == ["hcpx"])
        asyncio.run(start_as_a_host(root, server, home, path, "--dir plug"))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
