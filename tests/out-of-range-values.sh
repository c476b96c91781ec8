#!/usr/bin/env bash
# Values from input or upstream at the ends of their ranges (Swift traps on integer overflow, so
# each of these crashed an element before it used saturating or checked arithmetic):
#  - time stamps within a frame of 2^63 ns through vtdec, h264parse-to-avcc and vtmultipasssink
#    (.mp4 and .h264): encoded or passed through to EOS, every frame in the file;
#  - time stamps beyond 2^63 ns into vtenc: one ERROR that says the time stamps are out of range;
#  - data-rate-limits whose bits do not fit 64 bits: one ERROR naming the property;
#  - upstream byte offsets at the top of the 64-bit range into h264parse-to-avcc: every access unit.
# Failing pipelines run through tests/lib/run-pipeline.py.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/tests/lib/require.sh"
require_command ffprobe "out-of-range-values: ffprobe (FFmpeg), which counts the frames written"
source "$root/pipelines/lib/plugin-env.sh"
runner=(/usr/bin/python3 "$root/tests/lib/run-pipeline.py")
work="$swiftvt_work_dir"
failures=0
fail() { echo "out-of-range-values: FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "out-of-range-values: ok: $*"; }

# 2^63 - 1 ns minus 310 ms: frame 9 of 10 at 30 frames/s ends past 2^63 - 1 ns.
near_end=9223372036544775807
raw="video/x-raw,format=I420,width=320,height=240,framerate=30/1"
source_near_end="videotestsrc num-buffers=10 timestamp-offset=$near_end ! $raw"

expect_eos() {
    local label="$1" pipeline="$2" output status=0
    output="$("${runner[@]}" --timeout 120 --expect eos "$pipeline" 2>&1)" || status=$?
    if [ "$status" -eq 0 ]; then pass "$label: EOS"; else fail "$label: runner exit $status: $(tail -5 <<<"$output")"; fi
}
expect_one_error() {
    local label="$1" pattern="$2" pipeline="$3" output status=0 ours
    output="$("${runner[@]}" --timeout 60 --expect error "$pipeline" 2>&1)" || status=$?
    ours="$(grep -c '^ERROR: from element .*SwiftVT' <<<"$output" || true)"
    if [ "$status" -eq 0 ] && [ "$ours" = 1 ] && grep -q -- "$pattern" <<<"$output"; then
        pass "$label: one ERROR ($(grep -m1 '^ERROR' <<<"$output" | cut -c1-200)...)"
    else
        fail "$label: expected one ERROR from SwiftVT matching '$pattern' (runner exit $status, $ours from SwiftVT): $(tail -5 <<<"$output")"
    fi
}
frames_in() { ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$1" 2>/dev/null | head -1; }

for extension in mp4 h264; do
    expect_eos "vtmultipasssink .$extension, time stamps at 2^63 ns" "$source_near_end ! vtmultipasssink location=$work/near-end.$extension"
    frames="$(frames_in "$work/near-end.$extension" || true)"
    if [ "$frames" = 10 ]; then pass "vtmultipasssink .$extension: 10 frames written"; else fail "vtmultipasssink .$extension: '$frames' frames written, expected 10"; fi
done
expect_eos "vtenc ! vtdec, time stamps at 2^63 ns" "$source_near_end ! vtenc ! vtdec ! fakesink"
expect_eos "x264enc ! h264parse-to-avcc ! vtdec, time stamps at 2^63 ns" \
    "$source_near_end ! x264enc ! video/x-h264,stream-format=byte-stream ! h264parse-to-avcc ! vtdec ! fakesink"
expect_one_error "vtenc, time stamps beyond 2^63 ns" "time stamps upstream are out of range" \
    "videotestsrc num-buffers=10 timestamp-offset=9223372036824775807 ! $raw ! vtenc ! fakesink"
expect_one_error "vtenc data-rate-limits of 2^63 - 1 bytes" "data-rate-limits.*out of range" \
    "videotestsrc num-buffers=3 ! $raw ! vtenc data-rate-limits=\"9223372036854775807,1\" ! fakesink"

gst-launch-1.0 -q videotestsrc num-buffers=20 ! "$raw" ! x264enc speed-preset=ultrafast ! video/x-h264,stream-format=byte-stream \
    ! filesink location="$work/stream.h264"
if output="$(/usr/bin/python3 "$root/tests/parser_byte_offsets.py" "$work/stream.h264" 20 2>&1)"; then
    pass "h264parse-to-avcc, upstream byte offsets at 2^64: $output"
else
    fail "h264parse-to-avcc, upstream byte offsets at 2^64: $output"
fi

if [ "$failures" -gt 0 ]; then
    echo "out-of-range-values: $failures check(s) failed" >&2
    exit 1
fi
echo "out-of-range-values: all checks passed"
