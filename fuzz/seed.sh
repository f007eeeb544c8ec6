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

# The layer's seeds: three bytes for the run (method, settings and calls; the server clock's
# fraction of a second; the pauses between calls), then four bytes an answer (status, headers,
# value, timing); see fuzz/src/layer.rs. Among them: backend B's 429 after backend A's meter, a
# cache's stale 429, instructions over the cap, at the horizon and beyond it, a spent hour.
mkdir -p "$here/corpus/layer"
rm -f "$here/corpus/layer"/seed-*
n=0
for seed in \
  '\020\125\000\003\010\001\000\000\111\052\020' '\000\000\000\006\000\000\004\000\001\012\030' \
  '\060\000\014\000\001\015\000' '\020\000\000\000\001\011\000' '\120\000\000\000\001\015\000' \
  '\024\000\000\003\110\014\000' '\001\200\000\000\001\001\022' '\014\000\000\000\001\003\000' \
  '\050\000\012\000\001\005\000' '\001\000\000\006\020\001\000'; do
  n=$((n + 1))
  printf "$seed" > "$here/corpus/layer/seed-$(printf %03d $n)"
done
