#!/bin/sh
# Installs the PyPI and npm programs the catalog packs' tests run (tests/it/packs/),
# at the versions pinned in tests/tools/: a venv target/tools/py from
# requirements.txt (pytest, ruff, mypy, uv, and the venv's pip) and
# target/tools/node from package.json's exact versions (prettier, eslint).
# Each is redone only when its pin file changed, so a second run installs nothing.
# Then it writes target/tools/versions.txt: the version of every program a catalog
# pack wraps, as the tests find it (the Debian ones come from .ci/apt-tools), or
# "missing".
# Usage: scripts/tools.sh
set -eu
cd "$(dirname "$0")/.."
tools=target/tools
mkdir -p "$tools"

# The venv, from the system's Python when it can make one (a program beneath /usr,
# which the sandbox lets a pack read), else from whichever python3 is on PATH.
py=$tools/py
if ! cmp -s tests/tools/requirements.txt "$py/installed-requirements.txt"; then
  rm -rf "$py"
  base=python3
  if /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then base=/usr/bin/python3; fi
  "$base" -m venv "$py"
  "$py/bin/pip" install --quiet --disable-pip-version-check -r tests/tools/requirements.txt
  # Written last: a half-done install is redone on the next run.
  cp tests/tools/requirements.txt "$py/installed-requirements.txt"
fi

# The npm tools as `npm install --global` lays them out (`bin/eslint` beside
# `lib/node_modules/eslint/`, with each package's dependencies beneath it), at the
# exact versions of package.json: a flat node_modules would put eslint's
# dependencies beside it, outside the install prefix the sandbox lets it read.
node=$tools/node
if ! cmp -s tests/tools/package.json "$node/installed-package.json"; then
  rm -rf "$node"
  mkdir -p "$node"
  specs=$(node -e 'const d = require("./tests/tools/package.json").dependencies;
    console.log(Object.entries(d).map(([n, v]) => n + "@" + v).join(" "))')
  # shellcheck disable=SC2086 # one word per package
  npm install --global --prefix "$node" --ignore-scripts --no-audit --no-fund --loglevel=error $specs
  cp tests/tools/package.json "$node/installed-package.json"
fi

# The PATH of tests/it/packs/mod.rs (tools_path): these tools, the system's folders,
# then the Rust toolchain's own folder (cargo and rustc, not rustup's proxies).
toolchain=$(rustc --print sysroot 2>/dev/null || true)
search="$PWD/$py/bin:$PWD/$node/bin:$PWD/$node/node_modules/.bin:/usr/local/bin:/usr/bin:/bin${toolchain:+:$toolchain/bin}"

# Prints the first line matching LINE (a grep pattern) of what `PROGRAM ARGS...`
# prints, PROGRAM found on $search, or "missing".
version() {
  program=$1
  pattern=$2
  shift 2
  found=$(PATH=$search command -v "$program" 2>/dev/null || true)
  if [ -z "$found" ]; then
    echo missing
    return
  fi
  line=$("$found" "$@" 2>&1 </dev/null | grep -m 1 -e "$pattern" || true)
  echo "${line:-no version printed}"
}

# One line per program, asked all at once (a second each for aws and pip, else this
# would be most of a run that installs nothing), then put together in order.
out=$tools/versions.txt
parts=$tools/versions.parts
rm -rf "$parts"
mkdir -p "$parts"
n=0
line() {
  n=$((n + 1))
  name=$1
  shift
  (printf '%-13s %s\n' "$name" "$(version "$name" "$@")" >"$parts/$(printf %02d "$n")") &
}
for program in git jq sqlite3 rg fdfind curl gh docker npm cargo pytest make psql \
  redis-cli redis-server yq tar ruff mypy uv aws pip prettier eslint python3 node; do
  line "$program" . --version
done
line go . version
line kubectl . version --client
# Its first line is only the program's name.
line shellcheck '^version:' --version
wait
cat "$parts"/* >"$out.new"
mv "$out.new" "$out"
rm -rf "$parts"
