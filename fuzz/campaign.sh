#!/usr/bin/env bash
# Runs a fuzz campaign: fuzz/campaign.sh TARGET SECONDS [WORK_DIR]
# New inputs go to WORK_DIR (default /tmp/fuzz-corpus/TARGET), seeded from fuzz/corpus/TARGET;
# crashes land in fuzz/artifacts/TARGET. Needs the nightly toolchain and cargo-fuzz.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=$1
seconds=$2
work=${3:-/tmp/fuzz-corpus/$target}
mkdir -p "$work"
cd "$here/.."
exec cargo +nightly fuzz run -O "$target" "$work" "fuzz/corpus/$target" -- \
  -dict=fuzz/headers.dict -max_total_time="$seconds" -print_final_stats=1
