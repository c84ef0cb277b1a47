#!/bin/sh
# Fuzzes hcpx with cargo-fuzz (libFuzzer, nightly): the manifest validator, the MCP
# `args` splitter, the host config edits of `adopt` and the npm tarball reader.
# Each target runs for SECONDS (default 60), one after the other, from a corpus
# seeded with the built-in packs and the small files under fuzz/seeds/. Prints the
# executions of each target; exits non-zero when any target found a crash (the
# input is saved under fuzz/artifacts/<target>/). Not part of scripts/test.sh.
# Usage: scripts/fuzz.sh [SECONDS]
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
targets="manifest args adopt_edit tarball"

if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

# Seeds: each built-in pack's hcp.json, alone and followed by a NUL and its
# SKILL.md (the manifest target's two-file form), and the committed seeds.
for target in $targets; do
  mkdir -p "fuzz/corpus/$target"
  if [ -d "fuzz/seeds/$target" ]; then
    cp fuzz/seeds/"$target"/* "fuzz/corpus/$target/"
  fi
done
for pack in packs/*/; do
  name=$(basename "$pack")
  cp "$pack/hcp.json" "fuzz/corpus/manifest/pack-$name"
  { cat "$pack/hcp.json"; printf '\0'; cat "$pack/SKILL.md"; } >"fuzz/corpus/manifest/pack-$name-skill"
done

cd fuzz
# Debug assertions on: an arithmetic overflow is a finding too.
cargo +nightly fuzz build -a

failed=""
for target in $targets; do
  # -timeout: one input taking this long is a finding (a hang), not a slow run.
  set -- -max_total_time="$seconds" -timeout=20 -print_final_stats=1
  if [ -f "dicts/$target.dict" ]; then
    set -- "$@" "-dict=dicts/$target.dict"
  fi
  log="target/fuzz-$target.log"
  if cargo +nightly fuzz run -a "$target" -- "$@" >"$log" 2>&1; then
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

if [ -n "$failed" ]; then
  echo "crashes found in:$failed"
  exit 1
fi
