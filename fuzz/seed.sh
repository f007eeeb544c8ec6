#!/usr/bin/env bash
# Writes the seed corpus of every fuzz target from the header test vectors. Header-block
# targets get one file per vector line, its fields one per line (the vendor targets from
# vendor-headers.txt); structured_reference gets the value of every RateLimit* field. Run from anywhere; rewrites fuzz/corpus/*/seed-*.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vectors="$here/../tests/vectors/ratelimit-headers.txt"
inputs() { grep -v '^#' "$vectors" | grep ' => ' | sed 's/ => .*//'; }
# The vendors' vectors, without the parts that are not header lines (`HTTP 429`, `body "…"`).
vendor_inputs() { grep -v '^#' "$here/../tests/vectors/vendor-headers.txt" | grep ' => ' | sed 's/ => .*//'; }
vendor_fields() { sed 's/ || /\n/g' | grep -vE '^HTTP [0-9]{3}$|^body "' || true; }

for target in retry_after structured x_ratelimit header_map; do
  mkdir -p "$here/corpus/$target"
  rm -f "$here/corpus/$target"/seed-*
  n=0
  inputs | while IFS= read -r line; do
    n=$((n + 1))
    printf '%s' "$line" | sed 's/ || /\n/g' > "$here/corpus/$target/seed-$(printf %03d $n)"
  done
done

# The vendor targets get every vendor vector (each keeps its own fields); header_map gets them
# beside its own.
for target in vendor_durations vendor_instants vendor_counts header_map; do
  mkdir -p "$here/corpus/$target"
  rm -f "$here/corpus/$target"/seed-vendor-*
  n=0
  vendor_inputs | while IFS= read -r line; do
    n=$((n + 1))
    printf '%s' "$line" | vendor_fields > "$here/corpus/$target/seed-vendor-$(printf %03d $n)"
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

# The layer's seeds: a first byte for method, settings and calls, then four bytes an answer
# (status, headers, value, delay); see fuzz/src/layer.rs.
mkdir -p "$here/corpus/layer"
rm -f "$here/corpus/layer"/seed-*
n=0
for seed in \
  '\000\000\001\002\000' '\001\005\000\000\000' '\000\006\001\006\000' '\042\003\004\010\000' \
  '\001\000\001\011\000' '\004\000\001\004\000\000\001\001\003' '\000\013\000\000\000\013\000\000\000' \
  '\001\005\020\000\000' '\041\000\014\010\004\003\000\000\000' '\000\000\041\012\003\000\002\000\000'; do
  n=$((n + 1))
  printf "$seed" > "$here/corpus/layer/seed-$(printf %03d $n)"
done
