#!/usr/bin/env bash
# Writes the seed corpus of every fuzz target from the header test vectors: one file per vector
# line, its fields one per line. Run from anywhere; rewrites fuzz/corpus/*/seed-*.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vectors="$here/../tests/vectors/ratelimit-headers.txt"
for target in retry_after structured x_ratelimit header_map; do
  mkdir -p "$here/corpus/$target"
  rm -f "$here/corpus/$target"/seed-*
  n=0
  grep -v '^#' "$vectors" | grep ' => ' | while IFS= read -r line; do
    n=$((n + 1))
    printf '%s' "${line%% => *}" | sed 's/ || /\n/g' > "$here/corpus/$target/seed-$(printf %03d $n)"
  done
done
