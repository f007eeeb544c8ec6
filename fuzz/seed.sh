#!/usr/bin/env bash
# Writes the seed corpus of every fuzz target from the header test vectors. Header-block
# targets get one file per vector line, its fields one per line; structured_reference gets the
# value of every RateLimit* field. Run from anywhere; rewrites fuzz/corpus/*/seed-*.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vectors="$here/../tests/vectors/ratelimit-headers.txt"
inputs() { grep -v '^#' "$vectors" | grep ' => ' | sed 's/ => .*//'; }

for target in retry_after structured x_ratelimit header_map; do
  mkdir -p "$here/corpus/$target"
  rm -f "$here/corpus/$target"/seed-*
  n=0
  inputs | while IFS= read -r line; do
    n=$((n + 1))
    printf '%s' "$line" | sed 's/ || /\n/g' > "$here/corpus/$target/seed-$(printf %03d $n)"
  done
done

mkdir -p "$here/corpus/structured_reference"
rm -f "$here/corpus/structured_reference"/seed-*
n=0
inputs | sed 's/ || /\n/g' | grep -iE '^ratelimit' | sed -E 's/^[A-Za-z-]+: ?//' | sort -u |
  while IFS= read -r value; do
    n=$((n + 1))
    printf '%s' "$value" > "$here/corpus/structured_reference/seed-$(printf %03d $n)"
  done
