#!/bin/sh
# Runs every test of hcpx: unit, integration (the real binary and real child
# processes), snapshot and MCP tests, npm installs from Verdaccio on loopback
# (pinned in tests/npm-registry/, installed under target/npm-registry), OAuth against
# oidc-provider on loopback (pinned in tests/oidc/, installed under target/oidc), then the
# interop test in which the official Python MCP SDK (pinned in
# tests/interop/requirements.txt, installed into a venv under target/) drives
# `hcpx mcp` over stdio and over Streamable HTTP (and three replicas of it behind
# HAProxy), and the check of server.json and
# `hcpx adopt plugin`'s folder against their published schemas (tests/schemas/).
# MCP Inspector's CLI (pinned in tests/interop/node/) is installed first: the
# integration tests drive hcpx with it.
# Usage: scripts/test.sh
set -eu
cd "$(dirname "$0")/.."
# Verdaccio for tests/it/npm.rs, installed from the committed lockfile when missing
# or when the lockfile changed, and kept between runs (10 to 20 s with an empty npm cache).
registry=target/npm-registry
if ! cmp -s tests/npm-registry/package-lock.json "$registry/installed-lock.json"; then
  rm -rf "$registry"
  mkdir -p "$registry"
  cp tests/npm-registry/package.json tests/npm-registry/package-lock.json "$registry/"
  (cd "$registry" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  # Written last: a half-done install is redone on the next run.
  cp tests/npm-registry/package-lock.json "$registry/installed-lock.json"
fi
# MCP Inspector's CLI, the third-party client of tests/it/inspector.rs and of the
# minute-long task in tests/it/mcp_tasks.rs (pinned in tests/interop/node/, installed
# under target/interop-node from the committed lockfile when missing or changed; its
# postinstall only installs a source checkout's own clients, so scripts are off).
interop_node=target/interop-node
if ! cmp -s tests/interop/node/package-lock.json "$interop_node/installed-lock.json"; then
  rm -rf "$interop_node"
  mkdir -p "$interop_node"
  cp tests/interop/node/package.json tests/interop/node/package-lock.json "$interop_node/"
  (cd "$interop_node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  # Written last: a half-done install is redone on the next run.
  cp tests/interop/node/package-lock.json "$interop_node/installed-lock.json"
fi
# oidc-provider, the OpenID provider tests/it/http/oauth.rs starts on loopback to
# issue access tokens (pinned in tests/oidc/, installed under target/oidc from the
# committed lockfile when missing or changed; it has no install scripts to run).
oidc=target/oidc
if ! cmp -s tests/oidc/package-lock.json "$oidc/installed-lock.json"; then
  rm -rf "$oidc"
  mkdir -p "$oidc"
  cp tests/oidc/package.json tests/oidc/package-lock.json "$oidc/"
  (cd "$oidc" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  # Written last: a half-done install is redone on the next run.
  cp tests/oidc/package-lock.json "$oidc/installed-lock.json"
fi
# The MCP hosts' own CLIs (Claude Code, Gemini CLI, Codex, opencode, Qwen Code, Copilot
# CLI, and a Node.js 22 for those that need it) that tests/it/hosts.rs runs on what
# adopt writes, offline: pinned by tests/hosts/package-lock.json, installed under
# target/hosts without their install scripts (the tests run each platform package's
# own binary), kept between runs.
hosts=target/hosts
if ! cmp -s tests/hosts/package-lock.json "$hosts/installed-lock.json"; then
  rm -rf "$hosts"
  mkdir -p "$hosts"
  cp tests/hosts/package.json tests/hosts/package-lock.json "$hosts/"
  # `npm install` from the lockfile, not `npm ci`: npm leaves other platforms'
  # optional packages out of a lockfile and `npm ci` then refuses it (every one is
  # pinned to an exact version by the package that wants it).
  (cd "$hosts" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error)
  cp tests/hosts/package-lock.json "$hosts/installed-lock.json"
fi
# The PyPI and npm programs the catalog packs' tests run, pinned in tests/tools/ and
# installed under target/tools (redone only when a pin file changed).
scripts/tools.sh
# A deadlock fails the run instead of hanging it: with cargo-nextest installed each
# test has its own time limit (.config/nextest.toml) and a hung one is named; without
# it, the whole run has one (it takes about 3 min).
skipped=target/tmp/skipped-tests.txt
rm -f "$skipped"
if cargo nextest --version >/dev/null 2>&1; then
  timeout --kill-after=30 900 cargo nextest run --locked --profile ci
else
  echo "note: cargo-nextest is not installed, so tests have no per-test time limit" >&2
  timeout --kill-after=30 900 cargo test --locked
fi
if [ -s "$skipped" ]; then
  echo "note: these tests were skipped, for what this machine lacks (CI, with HCP_CI=1, fails instead):" >&2
  sort -u "$skipped" >&2
fi
# The musl build, the one that starts fastest (README, "A faster start"): the
# integration tests again, with hcpx built for x86_64-unknown-linux-musl. It needs
# the target (`rustup target add`, which CI runs) and musl-gcc for ring's C code
# (Debian's musl-tools, from .ci/apt-tools). CI (HCP_CI=1) fails without them;
# elsewhere the run says it left them out.
musl=x86_64-unknown-linux-musl
if [ "$(uname -sm)" = "Linux x86_64" ]; then
  if [ "${HCP_CI:-}" = 1 ] && command -v rustup >/dev/null 2>&1 \
    && ! rustup target list --installed | grep -qx "$musl"; then
    rustup target add "$musl"
  fi
  if rustup target list --installed 2>/dev/null | grep -qx "$musl" && command -v musl-gcc >/dev/null 2>&1; then
    if cargo nextest --version >/dev/null 2>&1; then
      timeout --kill-after=30 900 cargo nextest run --locked --profile ci --target "$musl" --test it
    else
      timeout --kill-after=30 900 cargo test --locked --target "$musl" --test it
    fi
  elif [ "${HCP_CI:-}" = 1 ]; then
    echo "error: the musl build is not tested: it needs the $musl target (rustup target add $musl) and musl-gcc (Debian's musl-tools)" >&2
    exit 1
  else
    echo "note: the musl build was not tested: it needs the $musl target (rustup target add $musl) and musl-gcc (Debian's musl-tools)" >&2
  fi
fi
cargo build --locked
venv=target/interop-venv
if ! cmp -s tests/interop/requirements.txt "$venv/installed-requirements.txt"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/interop/requirements.txt
  # Written last: a half-done install is redone on the next run.
  cp tests/interop/requirements.txt "$venv/installed-requirements.txt"
fi
timeout --kill-after=10 300 "$venv/bin/python" tests/interop/python_client.py target/debug/hcpx
timeout --kill-after=10 300 "$venv/bin/python" tests/interop/python_http.py target/debug/hcpx
# Three stateless replicas behind HAProxy (from .ci/apt-tools), driven through it by the
# same SDK: calls spread, a confirmation answered on another replica, a key rotation, a
# replica killed mid-run.
timeout --kill-after=10 120 "$venv/bin/python" tests/interop/replicas.py target/debug/hcpx
# server.json and `hcpx adopt plugin`'s folder against the published schemas kept in
# tests/schemas/, with validators nobody here wrote.
timeout --kill-after=10 300 "$venv/bin/python" tests/schemas/validate.py target/debug/hcpx
# The deployment recipe: the Kubernetes manifests against the API's schemas (strict:
# an unknown field fails), the Containerfile through hadolint.
"$venv/bin/kubernetes-validate" --strict --quiet deploy/kubernetes/*.yaml
"$venv/bin/hadolint" deploy/Containerfile
