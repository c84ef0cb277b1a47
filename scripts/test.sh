#!/bin/sh
# Runs every test of hcpx: unit, integration (the real binary and real child
# processes) and snapshot tests. Usage: scripts/test.sh
set -eu
cd "$(dirname "$0")/.."
cargo test --locked --all-targets
