#!/usr/bin/env bash
# H.265 decoding speed of vtdec (libavcodec's hevc decoder behind the decompression session)
# against GStreamer's avdec_h265 (gst-libav) at the same thread count (issue 35 item 5).
#
#   bench/h265-decode-throughput.sh
#
# Input: the corpus stream h265/main_1080p.265 (1920x1080 Main, 54 frames) concatenated 19 times
# into a temporary file (1026 frames; each copy starts with its VPS/SPS/PPS and an IDR picture).
# For each thread count N (SWIFTVT_BENCH_THREADS, default "1 0"; 0 is each decoder's automatic
# count: one thread per core for vtdec, libavcodec's own for avdec_h265):
#   vtdec       gst-launch-1.0 -q filesrc location=F ! h265parse ! vtdec max-threads=N ! fakesink sync=false
#   avdec_h265  gst-launch-1.0 -q filesrc location=F ! h265parse ! avdec_h265 max-threads=N ! fakesink sync=false
# Each is run several times after one warm-up run and the median wall time kept (hyperfine when
# available, else `date +%s%N`; bench/lib/common.sh). Before timing, one run of each checks that it
# succeeds and counts the frames reaching fakesink (both must decode all 1026).
# Printed per thread count: the medians, frames/s and the ratio vtdec/avdec_h265 of wall times,
# with the goal <= 1.00 (decoding at least as fast as avdec_h265). With SWIFTVT_BENCH_SUMMARY=FILE
# (bench/all.sh) the ratios go to FILE. A measurement: exits 0 when the goal is missed, non-zero
# only when something fails.
# Environment: SWIFTVT_CORPUS (folder containing h265/, default ../shared/corpus), SWIFTVT_PLUGIN,
# SWIFTVT_BENCH_RUNS (timed runs per command, default 5), SWIFTVT_BENCH_THREADS, SWIFTVT_BENCH_TIMER=date,
# SWIFTVT_BENCH_QUICK=1 (3 copies instead of 19, for checking the script).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="h265-decode-throughput"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream="${SWIFTVT_CORPUS:-../shared/corpus}/h265/main_1080p.265"
bench_require_corpus -f "$stream"
runs="${SWIFTVT_BENCH_RUNS:-5}"
read -r -a thread_counts <<<"${SWIFTVT_BENCH_THREADS:-1 0}"
copies=19
if [ "$bench_quick" = 1 ]; then copies=3; fi

bench_install_deps
bench_setup_timer
bench_build_plugin
bench_make_workdir
bench_use_private_plugin vtdec
if ! gst-inspect-1.0 avdec_h265 >/dev/null 2>&1; then
    echo "$bench_name: element avdec_h265 not found (gstreamer1.0-libav)" >&2
    exit 1
fi

input="$work/1080p-x$copies.265"
for (( i = 0; i < copies; i++ )); do cat "$stream"; done >"$input"
expected=$(( 54 * copies ))

pipeline_command() { # pipeline_command vtdec|avdec_h265 THREADS
    echo "gst-launch-1.0 -q filesrc location=$(printf %q "$input") ! h265parse ! $1 max-threads=$2 ! fakesink sync=false"
}

check_pipeline() { # check_pipeline vtdec|avdec_h265 THREADS -> frames reaching fakesink
    local log="$work/check.log"
    if ! gst-launch-1.0 -v filesrc location="$input" ! h265parse ! "$1" "max-threads=$2" ! fakesink sync=false silent=false \
            >"$log" 2>&1; then
        echo "$bench_name: the $1 pipeline failed:" >&2
        grep -iE "error|warn" "$log" | head -20 >&2
        exit 1
    fi
    grep -c "fakesink0: last-message = chain" "$log" || true
}

echo "== input: $stream x$copies ($expected frames), $runs runs per command (timer $timer)"
for threads in "${thread_counts[@]}"; do
    for decoder in vtdec avdec_h265; do
        frames=$(check_pipeline "$decoder" "$threads")
        if [ "$frames" != "$expected" ]; then
            echo "$bench_name: $decoder max-threads=$threads decoded $frames frames, expected $expected" >&2
            exit 1
        fi
    done
    bench_time_commands "$(pipeline_command vtdec "$threads")" "$(pipeline_command avdec_h265 "$threads")" >"$work/times.txt"
    mapfile -t times <"$work/times.txt"
    if [ "${#times[@]}" -ne 2 ]; then
        echo "$bench_name: timing failed at max-threads=$threads" >&2
        exit 1
    fi
    read -r ours _ _ <<<"${times[0]}"
    read -r peer _ _ <<<"${times[1]}"
    ratio=$(awk -v a="$ours" -v b="$peer" 'BEGIN { printf "%.3f", a / b }')
    label=$([ "$threads" = 0 ] && echo "automatic threads" || echo "$threads thread(s)")
    printf '%-18s vtdec %.3f s (%.0f frames/s)  avdec_h265 %.3f s (%.0f frames/s)  vtdec/avdec_h265 %s (goal <= 1.00)\n' \
        "$label:" "$ours" "$(awk -v f="$expected" -v t="$ours" 'BEGIN { print f / t }')" \
        "$peer" "$(awk -v f="$expected" -v t="$peer" 'BEGIN { print f / t }')" "$ratio"
    bench_summary "h265-decode-$threads" "H.265 1080p x$copies, wall time vtdec/avdec_h265, $label" "$ratio" "<= 1.00"
done
