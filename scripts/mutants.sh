#!/usr/bin/env bash
# Mutation testing of src/ with cargo-mutants (issue 6), configured by .cargo/mutants.toml.
#
#   scripts/mutants.sh [OUT]          # OUT defaults to target/mutants (gitignored)
#   MUTANTS_JOBS=2 scripts/mutants.sh # more parallel jobs on a bigger machine (default 1)
#
# Three passes (2,463 mutants on 2026-12-05: about 17 hours at one job on 2 cores; a file group
# or a `-f` run of what changed is the everyday use):
#
#  1. Every mutant, file group by file group (most valuable first), against a FAST suite: the
#     full `cargo test` (unit, integration, doc tests) minus its slowest unit tests,
#     `headers::structured::tests::against_sfv::*` (10 000-case proptests, ~11 s of CPU).
#  2. Every mutant the fast suite did NOT catch (missed or timeout), again against the FULL
#     suite (`--iterate` skips what pass 1 caught or found unviable). A mutant only those
#     proptests can detect (structured-field corner cases) is decided here, so the final
#     verdicts are exactly those of the full suite.
#  3. The one function compiled only without the default `hyper-util` feature
#     (`is_hyper_util_connect_error` under `cfg(not(feature = "hyper-util"))`), whose mutant
#     passes 1 and 2 cannot compile, with `--no-default-features`. The end-to-end connect-error
#     test needs hyper-util and is skipped there.
#
# The final lists (caught, missed, timeout, unviable) and the counts land in OUT/final/. After
# adding tests for survivors, a targeted rerun (`cargo mutants -f FILE -o OUT/4-NAME`) and
# `MUTANTS_FINAL_ONLY=1 scripts/mutants.sh OUT` fold its verdicts in without the long passes.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=$(realpath -m "${1:-target/mutants}")
JOBS=${MUTANTS_JOBS:-1}
mkdir -p "$OUT"

# No debug info: halves the incremental build and link time of each mutant. Only affects the
# builds in cargo-mutants' scratch copies; their target dir is their own.
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0
unset CARGO_TARGET_DIR
export LC_ALL=C # sort and comm agree on the order

# cargo-mutants exits 2 when some mutant is missed and 3 when some timed out: results, not
# failures. Anything else (4: the clean tree fails its tests) stops the script.
expected() { [[ $1 == 2 || $1 == 3 ]] || exit "$1"; }

SLOW_TESTS=(--skip against_sfv)
# src/redis/ and src/reqwest/ are compiled only with their features: a mutant there builds and
# passes without them, and would be reported missed. Every pass leaves them out; run them apart:
#   REDIS_URL=redis://127.0.0.1:6379/ cargo mutants --features redis -f 'src/redis/*.rs'
#   cargo mutants --features reqwest -f 'src/reqwest/*.rs'
FEATURED=(-e 'src/redis/*.rs' -e 'src/reqwest/*.rs')

if [[ -z "${MUTANTS_FINAL_ONLY:-}" ]]; then
# Pass 1: file groups in order of value; the fast suite takes ~3 s, so 30 s is a hang.
FILE_GROUPS=(
    "gate-key:src/gate/key/*.rs"
    "gate-rules:src/gate/rules/*.rs src/gate/rules/learn/*.rs"
    "gate-call:src/gate/call/*.rs"
    "gate-store:src/gate/store/*.rs"
    "gate:src/gate/*.rs"
    "top:src/*.rs"
    "headers:src/headers/*.rs src/headers/structured/*.rs"
    "policy:src/policy/*.rs"
    "future:src/future/*.rs"
)
for group in "${FILE_GROUPS[@]}"; do
    name=${group%%:*}
    files=()
    set -f # the globs are cargo-mutants', not the shell's
    for glob in ${group#*:}; do files+=(-f "$glob"); done
    set +f
    if [[ -f "$OUT/1-$name.done" && -z "${MUTANTS_RERUN:-}" ]]; then
        echo "pass 1, $name: done already, skipped (MUTANTS_RERUN=1 to redo)"
        continue
    fi
    echo "pass 1, $name"
    cargo mutants --jobs "$JOBS" --timeout 30 "${files[@]}" -o "$OUT/1-$name" \
        -- -- "${SLOW_TESTS[@]}" || expected $?
    touch "$OUT/1-$name.done"
done

# Seeds an output directory for `--iterate` with what is decided already: caught or unviable,
# and (for pass 2) what timed out. A mutant that hangs the fast suite hangs the full one too:
# the same test binaries run, in the same order, with more tests in them.
seed() {
    local dir=$1 prev
    shift
    rm -rf "$dir"
    mkdir -p "$dir/mutants.out"
    for prev in "$@"; do
        cat "$prev"/mutants.out/{caught,previously_caught,timeout}.txt 2>/dev/null || true
    done | sort -u >"$dir/mutants.out/caught.txt"
    for prev in "$@"; do
        cat "$prev/mutants.out/unviable.txt" 2>/dev/null || true
    done | sort -u >"$dir/mutants.out/unviable.txt"
}

# Pass 2: what pass 1 missed, against the full suite (~20 s; 120 s is a hang).
seed "$OUT/2-full" "$OUT"/1-*
echo "pass 2: $(cargo mutants --list --iterate "${FEATURED[@]}" -o "$OUT/2-full" | wc -l) missed by pass 1"
cargo mutants --jobs "$JOBS" --timeout 120 --iterate "${FEATURED[@]}" -o "$OUT/2-full" || expected $?

# Pass 3: the no-hyper-util variant of is_hyper_util_connect_error (see the header).
seed "$OUT/3-no-default" "$OUT"/1-* "$OUT/2-full"
cargo mutants --jobs "$JOBS" --timeout 60 --iterate --no-default-features \
    -f src/policy/transport.rs -F 'is_hyper_util_connect_error' -o "$OUT/3-no-default" \
    -- -- --skip a_connect_error_is_retried_on_any_method || expected $?

fi

# Final verdicts, for the mutants of the tree as it is now (a pass run before an edit may
# name a mutant at a line that has since moved): caught anywhere is caught; otherwise timeout
# if it hung anywhere; otherwise missed if the full suite (pass 2, or a targeted rerun in
# OUT/4-*) or pass 3 missed it. The cfg(feature = "hyper-util") twin that pass 3 cannot
# compile, and the cfg(not) one that pass 2 cannot compile, are each judged by the pass that
# compiles them.
final="$OUT/final"
rm -rf "$final"
mkdir -p "$final"
cargo mutants --list "${FEATURED[@]}" | sort -u >"$final/all.txt"
current() { sort -u | comm -12 - "$final/all.txt"; }
verdicts() { cat "$OUT"/[1-9]-*/mutants.out/"$1".txt 2>/dev/null || true; }
verdicts caught | current >"$final/caught.txt"
verdicts timeout | current | comm -23 - "$final/caught.txt" >"$final/timeout.txt"
cat "$OUT"/{2-full,3-no-default,4-*}/mutants.out/missed.txt 2>/dev/null | current |
    comm -23 - "$final/caught.txt" | comm -23 - "$final/timeout.txt" >"$final/missed.txt"
verdicts unviable | current >"$final/unviable.txt"
total=$(wc -l <"$final/all.txt")
caught=$(wc -l <"$final/caught.txt")
missed=$(wc -l <"$final/missed.txt")
timeout=$(wc -l <"$final/timeout.txt")
unviable=$(wc -l <"$final/unviable.txt")
viable=$((caught + missed + timeout))
{
    echo "total $total, caught $caught, missed $missed, timeout $timeout, unviable $unviable"
    echo "caught of viable: $(awk "BEGIN{printf \"%.1f\", 100*$caught/$viable}") %" \
        "(caught+timeout: $(awk "BEGIN{printf \"%.1f\", 100*($caught+$timeout)/$viable}") %)"
} | tee "$final/summary.txt"
