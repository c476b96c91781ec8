#!/usr/bin/env bash
# Multi-pass HEVC (issue 37 item 4): vtmultipasssink codec=h265 (SwiftVT's multi-pass over x265,
# one pipeline run) against x265's own two-pass (the x265 command-line encoder, --pass 1 then
# --pass 2: GStreamer's x265enc has no two-pass), on the same raw frames: the corpus's 720p clip,
# its first 300 frames decoded once to raw I420 in the temporary directory, 30 frames/s (10 s).
#
#   bench/multipass-h265.sh [TARGET_KBIT]      # default 1000 kbit/s
#
#   ours    gst-launch-1.0 filesrc ! rawvideoparse ! vtmultipasssink codec=h265 bitrate=T
#           location=OUT.mp4   (up to 3 passes, x265 preset medium, a 10-second GOP)
#   x265    x265 --input RAW --input-res 1280x720 --fps 30 --preset medium --bitrate T --pass 1|2
#           --stats F --keyint 300 --no-open-gop -o OUT.hevc (the same preset, GOP length and closed
#           GOPs as the sink's)
# Both with their default thread counts. Per encoding: the frame count (ffprobe, must be 300), the
# achieved kbit/s (video bytes x 8 / 10 s) and its error against the target, PSNR-Y (the mean over
# the frames of FFmpeg's psnr filter, each file decoded to raw I420 and paired with the source by
# position) and the wall time (GNU time %e; x265: pass 1 + pass 2). Printed: both rows, PSNR-Y
# ours - x265 (goal >= 0 dB), our bit-rate error (goal |e| <= 1 %) and the wall time ratio
# ours / x265 two-pass (for information: x265 reads the raw file itself, ours runs a GStreamer
# pipeline and seeks it for every range it re-encodes). Measured here (2 shared cores,
# 2026-11-28): see the closing note of issue 37.
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh) the three figures go to FILE (bench_summary).
# A measurement: exits 0 when a goal is missed, non-zero only when something fails (a pipeline or
# x265, a wrong frame count, a missing tool or element).
# Environment: SWIFTVT_CORPUS, SWIFTVT_PLUGIN (a built libgstswiftvt.so, used as it is),
# SWIFTVT_BENCH_TARGET (kbit/s; the argument wins), SWIFTVT_BENCH_SUMMARY.
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="multipass-h265"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream="$corpus/VID_1280x720_cabac_temporal_direct.264"
bench_require_corpus -f "$stream"
target="${1:-${SWIFTVT_BENCH_TARGET:-1000}}"
width=1280 height=720 frames=300 fps=30
seconds=$(( frames / fps ))

bench_install_deps
bench_require_gnu_time %e
for tool in ffmpeg ffprobe x265; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$bench_name: $tool not found (scripts/install-deps.sh installs ffmpeg and x265)" >&2
        exit 1
    fi
done
bench_build_plugin
bench_make_workdir
bench_use_private_plugin vtmultipasssink

echo "== decoding the first $frames frames of $(basename "$stream") to raw I420"
clip="$work/clip720.yuv"
ffmpeg -v error -nostdin -i "$stream" -frames:v "$frames" -pix_fmt yuv420p -f rawvideo "$clip"
if [ "$(stat -c %s "$clip")" -ne $(( width * height * frames * 3 / 2 )) ]; then
    echo "$bench_name: the raw clip is $(stat -c %s "$clip") bytes, not $frames frames" >&2
    exit 1
fi

timed() { # timed LOG CMD... -> wall seconds of CMD (its output to LOG); exits on failure
    local log="$1"
    shift
    if ! "$gnu_time" -f %e -o "$work/time.txt" "$@" >"$log" 2>&1; then
        echo "$bench_name: failed: $*" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    tail -1 "$work/time.txt"
}
measure() { # measure FILE LABEL -> "kbit/s psnr_y"
    local raw="$work/decoded.yuv" count
    count=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$1" \
        | tr -d '[:space:],')
    if [ "$count" != "$frames" ]; then
        echo "$bench_name: $2 wrote ${count:-no} frames, expected $frames" >&2
        exit 1
    fi
    ffmpeg -v error -nostdin -y -i "$1" -f rawvideo -pix_fmt yuv420p "$raw"
    local raw_input=(-f rawvideo -pix_fmt yuv420p -s "${width}x$height" -framerate "$fps")
    ffmpeg -v error -nostdin "${raw_input[@]}" -i "$raw" "${raw_input[@]}" -i "$clip" \
        -lavfi "psnr=stats_file=$work/psnr.log" -f null - >/dev/null
    if [ "$(grep -c psnr_y: "$work/psnr.log")" != "$frames" ]; then
        echo "$bench_name: $2: PSNR over $(grep -c psnr_y: "$work/psnr.log") frames, expected $frames" >&2
        exit 1
    fi
    local bytes
    bytes=$(ffprobe -v error -select_streams v -show_entries packet=size -of csv=p=0 "$1" | awk '{ b += $1 } END { print b }')
    awk -v bytes="$bytes" -v s="$seconds" '{ for (i = 1; i <= NF; i++) if ($i ~ /^psnr_y:/) { split($i, a, ":"); p += a[2]; n++ } }
        END { printf "%.2f %.3f\n", bytes * 8 / s / 1000, p / n }' "$work/psnr.log"
}

echo "== vtmultipasssink codec=h265 bitrate=$target"
ours_out="$work/ours.mp4"
ours_time=$(timed "$work/ours.log" gst-launch-1.0 -m filesrc "location=$clip" ! rawvideoparse "width=$width" \
    "height=$height" format=i420 "framerate=$fps/1" ! vtmultipasssink codec=h265 "location=$ours_out" "bitrate=$target")
done_message=$(grep -o "vtmultipasssink-done.*" "$work/ours.log" | tail -1)
echo "   ${done_message%;}"
read -r ours_kbps ours_psnr <<<"$(measure "$ours_out" vtmultipasssink)"

echo "== x265 --pass 1, --pass 2 --bitrate $target"
x265_out="$work/x265.hevc"
x265_pass() {
    timed "$work/x265-pass$1.log" x265 --input "$clip" --input-res "${width}x$height" --fps "$fps" --preset medium \
        --bitrate "$target" --pass "$1" --stats "$work/x265.stats" --keyint $(( 10 * fps )) --no-open-gop \
        --no-progress -o "$x265_out"
}
t1=$(x265_pass 1)
t2=$(x265_pass 2)
x265_time=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", a + b }')
read -r x265_kbps x265_psnr <<<"$(measure "$x265_out" "x265 two-pass")"

error() { awk -v r="$1" -v t="$target" 'BEGIN { printf "%+.2f", (r / t - 1) * 100 }'; }
ours_error=$(error "$ours_kbps")
psnr_diff=$(awk -v a="$ours_psnr" -v b="$x265_psnr" 'BEGIN { printf "%+.3f", a - b }')
time_ratio=$(awk -v a="$ours_time" -v b="$x265_time" 'BEGIN { printf "%.2f", a / b }')
abs_error=$(awk -v e="$ours_error" 'BEGIN { printf "%.2f", e < 0 ? -e : e }')
printf '%-26s %8s s  %9s kbit/s (%s %%)  PSNR-Y %s dB\n' "vtmultipasssink codec=h265" "$ours_time" "$ours_kbps" \
    "$ours_error" "$ours_psnr"
printf '%-26s %8s s  %9s kbit/s (%s %%)  PSNR-Y %s dB   (pass 1 %s s + pass 2 %s s)\n' "x265 two-pass" "$x265_time" \
    "$x265_kbps" "$(error "$x265_kbps")" "$x265_psnr" "$t1" "$t2"
echo "PSNR-Y ours - x265 two-pass: $psnr_diff dB (goal >= 0); bit-rate error $ours_error % (goal |e| <= 1 %);" \
    "time ours/x265 two-pass: $time_ratio"
bench_summary multipass-h265-psnr "multi-pass HEVC 720p $target kbit/s, PSNR-Y vtmultipasssink - x265 two-pass (dB)" \
    "$psnr_diff" ">= 0"
bench_summary multipass-h265-rate "multi-pass HEVC 720p $target kbit/s, |bit-rate error| of vtmultipasssink (%)" \
    "$abs_error" "<= 1"
bench_summary multipass-h265-time "multi-pass HEVC 720p $target kbit/s, wall time vtmultipasssink / x265 two-pass" \
    "$time_ratio" "-"
