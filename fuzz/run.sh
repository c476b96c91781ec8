#!/usr/bin/env bash
# Fuzzes the H.264 bitstream layer with libFuzzer + AddressSanitizer, seeded with the corpus.
#
#   fuzz/run.sh [SECONDS]        # default 60; CI runs this
#   fuzz/run.sh 3600             # a longer run
#
# Prints libFuzzer's execution count at the end; exits non-zero when a crash was found (the input
# is left in fuzz/artifacts/ and can be replayed with `.build-fuzz/debug/swiftvt-h264-fuzz FILE`
# built without -D FUZZING, i.e. `swift run swiftvt-h264-fuzz FILE`).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
corpus="${SWIFTVT_CORPUS:-../shared/corpus}/h264"
scratch=.build-fuzz

swift build -c release --scratch-path "$scratch" --product swiftvt-h264-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -D -Xswiftc FUZZING -Xswiftc -parse-as-library \
    -Xswiftc -use-ld=lld 2>&1 \
    | grep -v "prohibited flag" | tail -5
binary="$scratch/release/swiftvt-h264-fuzz"

mkdir -p fuzz/work fuzz/artifacts
seeds=()
if [ -d "$corpus" ]; then
    seeds+=("$corpus")
else
    echo "fuzz: corpus not found at $corpus; fuzzing from an empty seed set" >&2
fi
# Small, fast inputs: corpus files are up to 3 MB; headers and framing bugs show in the first KiBs.
"$binary" fuzz/work "${seeds[@]}" -max_total_time="$seconds" -max_len="${SWIFTVT_FUZZ_MAX_LEN:-4096}" -rss_limit_mb=4096 \
    -artifact_prefix=fuzz/artifacts/ -print_final_stats=1 2>&1 | tee fuzz/work/last-run.log \
    | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss|==[0-9]+==ERROR|SUMMARY)" || true
status=${PIPESTATUS[0]}
if ls fuzz/artifacts/crash-* fuzz/artifacts/leak-* fuzz/artifacts/oom-* fuzz/artifacts/timeout-* >/dev/null 2>&1; then
    echo "fuzz: FAILED, crashing inputs in fuzz/artifacts/" >&2
    exit 1
fi
exit "$status"
