#!/bin/sh
# Fuzzes hcpx with cargo-fuzz (libFuzzer, nightly): the manifest validator, the MCP
# `args` splitter, the host config edits of `adopt` and the npm tarball reader.
# Each target runs for SECONDS (default 60), one after the other, from a corpus
# seeded with the built-in and catalog packs and the small files under fuzz/seeds/. Prints the
# executions of each target; exits non-zero when any target found a crash (the
# input is saved under fuzz/artifacts/<target>/).
#
# --ci is the short run of .ci/run: each target for 20 s (HCP_FUZZ_SECONDS), from a
# corpus of the seeds alone, so that a target that no longer builds or that crashes
# at once fails CI; it keeps no corpus between runs. It builds without optimization
# or debug info (still with debug assertions and AddressSanitizer): on a fresh clone
# the build is most of its time, and an optimized one costs several minutes more.
#
# Needs a nightly toolchain (`cargo +nightly`): without one it fails, and says so.
# cargo-fuzz is used from PATH when there, else installed once under target/tools.
# Usage: scripts/fuzz.sh [SECONDS]
#        scripts/fuzz.sh --ci
set -eu
cd "$(dirname "$0")/.."
ci=false
# How the targets are built: --release (cargo-fuzz's default) unless --ci.
profile=--release
case "${1:-}" in
  --ci)
    ci=true
    seconds=${HCP_FUZZ_SECONDS:-20}
    profile=--dev
    CARGO_PROFILE_DEV_DEBUG=0
    export CARGO_PROFILE_DEV_DEBUG
    ;;
  -*)
    echo "usage: scripts/fuzz.sh [SECONDS] | --ci" >&2
    exit 2
    ;;
  *) seconds=${1:-60} ;;
esac
targets="manifest args adopt_edit tarball"
started=$(date +%s)

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "error: fuzzing needs a nightly Rust toolchain, and \`cargo +nightly\` does not run here" >&2
  echo "  (install one with: rustup toolchain install nightly)" >&2
  exit 1
fi

# cargo-fuzz, when PATH has none: installed into target/tools, where a second run
# finds it.
tools=$PWD/target/tools
PATH=$tools/bin:$PATH
export PATH
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz into $tools" >&2
  cargo install cargo-fuzz --locked --quiet --root "$tools"
fi

# Seeds: each built-in pack's hcp.json, alone and followed by a NUL and its
# SKILL.md (the manifest target's two-file form), and the committed seeds. In CI
# the corpus starts from these alone, not from what earlier runs found.
corpus=fuzz/corpus
if $ci; then
  corpus=target/fuzz-ci/corpus
  rm -rf "$corpus"
fi
for target in $targets; do
  mkdir -p "$corpus/$target"
  if [ -d "fuzz/seeds/$target" ]; then
    cp fuzz/seeds/"$target"/* "$corpus/$target/"
  fi
done
# The built-in packs and the catalog's (packs/catalog/ is the catalog, not a pack).
for pack in packs/*/ packs/catalog/*/; do
  [ -f "$pack/hcp.json" ] || continue
  name=$(basename "$pack")
  cp "$pack/hcp.json" "$corpus/manifest/pack-$name"
  { cat "$pack/hcp.json"; printf '\0'; cat "$pack/SKILL.md"; } >"$corpus/manifest/pack-$name-skill"
done
corpus=$(cd "$corpus" && pwd)

cd fuzz
# Debug assertions on: an arithmetic overflow is a finding too.
cargo +nightly fuzz build "$profile" -a
built=$(date +%s)

failed=""
for target in $targets; do
  # -timeout: one input taking this long is a finding (a hang), not a slow run.
  set -- -max_total_time="$seconds" -timeout=20 -print_final_stats=1
  if [ -f "dicts/$target.dict" ]; then
    set -- "$@" "-dict=dicts/$target.dict"
  fi
  log="target/fuzz-$target.log"
  if cargo +nightly fuzz run "$profile" -a "$target" "$corpus/$target" -- "$@" >"$log" 2>&1; then
    status=ok
  else
    status=CRASH
    failed="$failed $target"
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  echo "$target: ${runs:-?} executions in ${seconds}s: $status"
  if [ "$status" = CRASH ]; then
    # The panic and its message, or the sanitizer's summary, and the saved input.
    grep -E -A1 '^thread .* panicked at' "$log" | head -n 4 || true
    grep -E '^(SUMMARY|artifact_prefix)' "$log" | head -n 2 || true
    echo "  (full log: fuzz/$log)"
  fi
done

ended=$(date +%s)
echo "fuzz: built in $((built - started))s, ran in $((ended - built))s"
if [ -n "$failed" ]; then
  echo "crashes found in:$failed"
  exit 1
fi
