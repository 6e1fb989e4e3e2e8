#!/bin/sh
# run_fuzzer.sh FUZZER SEED_DIR RUNS MAX_LEN ARTIFACT_DIR
# Runs one libFuzzer harness for a fixed number of executions from a fixed seed, so a run repeats.
# New inputs go to a scratch corpus, never into the committed seeds; a crashing input is kept in
# ARTIFACT_DIR. Any crash, sanitizer report, leak or input slower than 10 s fails (non-zero exit).
set -eu
fuzzer=$1 seeds=$2 runs=$3 max_len=$4 artifacts=$5
work=$(mktemp -d "${TMPDIR:-/tmp}/s2tp-corpus-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"
# libFuzzer reports a crash with exit status 77 unless told otherwise, and meson reads 77 as "skipped".
"$fuzzer" -seed=1 -runs="$runs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -artifact_prefix="$artifacts/" "$work" "$seeds"
