#!/usr/bin/env bash
# Fuzzes the H.264 and H.265 layers with libFuzzer + AddressSanitizer, one mode after the other
# (fuzz/H264Fuzz/H264Fuzz.swift):
#
#   bitstream  scanner, splitters, AVCC, avcC and the SPS/PPS/SEI/slice-header parsers; seeded
#              with the corpus, inputs up to 4 KiB
#   decoder    the decoding state machine (H264PictureDecoder) fed like the VA backend feeds it,
#              over an accelerator that checks what a driver relies on; seeded with the corpus
#              with its slices cut to their headers (compact-seeds), inputs up to 1 KiB
#   writers    random valid SPS/PPS/slice headers written and parsed back, and the coding
#              planner's GOPs decoded by the state machine; the input is a stream of choices,
#              so there are no seeds
#   hevc-bitstream
#              the H.265 layer: scanner, access units, VPS/SPS/PPS/slice-header/SEI parsers and
#              their writers, POC, length-prefixed conversion, hvcC, format descriptions; seeded
#              with the h265 corpus, inputs up to 4 KiB
#
#   fuzz/run.sh [SECONDS] [MODE...]   # SECONDS of each mode (default 60), every mode by default
#   fuzz/run.sh 3600 decoder          # a longer run of one mode
#   SWIFTVT_FUZZ_RUNS=10000000 fuzz/run.sh 0 writers   # a number of executions (0 s: no time limit)
#
# Prints libFuzzer's execution count of each mode; exits non-zero when a crash was found. The
# input is left in fuzz/artifacts/<mode>-crash-... and is replayed with
#   SWIFTVT_FUZZ_MODE=<mode> .build-fuzz/release/swiftvt-h264-fuzz FILE
# (SWIFTVT_FUZZ_TRACE=1 prints the decoder mode's accelerator calls), or without libFuzzer with
#   SWIFTVT_FUZZ_MODE=<mode> swift run swiftvt-h264-fuzz FILE
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(bitstream decoder writers hevc-bitstream)
corpus="${SWIFTVT_CORPUS:-../shared/corpus}/h264"
hevc_corpus="${SWIFTVT_CORPUS:-../shared/corpus}/h265"
scratch=.build-fuzz

swift build -c release --scratch-path "$scratch" --product swiftvt-h264-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -D -Xswiftc FUZZING -Xswiftc -parse-as-library \
    -Xswiftc -use-ld=lld 2>&1 \
    | grep -v "prohibited flag" | tail -5
binary="$scratch/release/swiftvt-h264-fuzz"

mkdir -p fuzz/work fuzz/artifacts
if [ ! -d "$corpus" ]; then
    echo "fuzz: corpus not found at $corpus; fuzzing from an empty seed set" >&2
fi
runs=()
[ -z "${SWIFTVT_FUZZ_RUNS:-}" ] || runs=(-runs="$SWIFTVT_FUZZ_RUNS")
failed=0
for mode in "${modes[@]}"; do
    seeds=()
    case "$mode" in
        bitstream)
            # Headers and framing bugs show in the first KiBs of the corpus files (up to 3 MB).
            max_len="${SWIFTVT_FUZZ_MAX_LEN:-4096}"
            [ ! -d "$corpus" ] || seeds+=("$corpus")
            ;;
        decoder)
            # Slice headers only: a 1 KiB seed holds tens of pictures of a corpus stream.
            max_len=1024
            if [ -d "$corpus" ]; then
                rm -rf fuzz/work/decoder-seeds
                mkdir -p fuzz/work/decoder-seeds
                "$binary" compact-seeds "$corpus" fuzz/work/decoder-seeds
                seeds+=(fuzz/work/decoder-seeds)
            fi
            ;;
        writers)
            max_len=4096
            ;;
        hevc-bitstream)
            # As for bitstream: the parameter sets and first slice headers of each file.
            max_len="${SWIFTVT_FUZZ_MAX_LEN:-4096}"
            if [ -d "$hevc_corpus" ]; then
                seeds+=("$hevc_corpus")
            else
                echo "fuzz: H.265 corpus not found at $hevc_corpus; fuzzing from an empty seed set" >&2
            fi
            ;;
        *)
            echo "fuzz: unknown mode $mode (bitstream, decoder, writers, hevc-bitstream)" >&2
            exit 2
            ;;
    esac
    mkdir -p "fuzz/work/$mode"
    log="fuzz/work/last-run-$mode.log"
    echo "fuzz: $mode, ${seconds} s${runs:+ or ${SWIFTVT_FUZZ_RUNS} executions}, inputs up to $max_len bytes"
    # SWIFT_BACKTRACE=enable=no: libFuzzer reports the crash; Swift's backtracer, reading the
    # crashed process's memory under AddressSanitizer, added a second, misleading ASan report.
    status=0
    SWIFT_BACKTRACE=enable=no SWIFTVT_FUZZ_MODE="$mode" "$binary" "fuzz/work/$mode" "${seeds[@]}" \
        -max_total_time="$seconds" "${runs[@]}" -max_len="$max_len" -rss_limit_mb=4096 \
        -artifact_prefix="fuzz/artifacts/$mode-" -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -aE "^#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss|Fatal error|==[0-9]+==ERROR|SUMMARY" "$log" \
        | sed "s/^/  $mode: /" || true
    [ "$status" -eq 0 ] || failed=1
done
if ls fuzz/artifacts/*crash-* fuzz/artifacts/*leak-* fuzz/artifacts/*oom-* fuzz/artifacts/*timeout-* >/dev/null 2>&1; then
    echo "fuzz: FAILED, crashing inputs in fuzz/artifacts/" >&2
    exit 1
fi
exit "$failed"
