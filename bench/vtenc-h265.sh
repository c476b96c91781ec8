#!/usr/bin/env bash
# HEVC encoding: vtenc_h265 (SwiftVT's CompressionSession over x265) against GStreamer's x265enc at
# equal presets and bit rate, on the corpus's 720p clip (300 frames, decoded once to raw I420 in
# the temporary directory and read back at 25 frames/s), through gst-launch-1.0 (issue 37 item 2).
#
#   bench/vtenc-h265.sh
#
# Two configurations, target T = 1000 kbit/s (SWIFTVT_BENCH_TARGET sets another), x265 choosing
# its threads in both elements (their defaults):
#   medium    x265enc speed-preset=medium tune=0 (none) bitrate=T
#             vtenc_h265 bitrate=T                         (x265 preset medium, no tune)
#   realtime  x265enc speed-preset=veryfast tune=zerolatency bitrate=T
#             vtenc_h265 realtime=true bitrate=T           (x265 preset veryfast + tune zerolatency)
# x265enc's default tune is ssim, which the session never asks for: tune=0 makes the presets equal.
# With equal presets the two encode nearly the same pictures; x265enc's files also carry its
# version SEI (x265's info option, which the x265 backend turns off). Measured here (2 shared
# cores, 3 runs, 2026-11-28): medium 13.13 s against 13.15 s (0.998), PSNR-Y 41.19 against 41.20
# dB, 1005 and 1009 kbit/s; realtime 10.94 s against 10.77 s (1.016), 40.26 dB both, 1034 and
# 1036 kbit/s.
# Both write Annex B (stream-format=byte-stream) to a file once per configuration: its size gives
# the bit rate, FFmpeg's psnr filter the PSNR-Y against the raw input (mean over the frames), and
# ffprobe checks the frame count; that run is also the warm-up. The two land a few tenths of a
# percent apart from one target, so vtenc_h265 also encodes at 1.03 x the target and its PSNR-Y is
# read off the line through its two points at x265enc's achieved rate: the PSNR-Y goal compares
# the two at the same bit rate. Then both pipelines, into fakesink,
# are timed SWIFTVT_BENCH_RUNS times (default 5; bench_time_commands, bench/lib/common.sh) and the
# medians compared. Printed per configuration: the medians, vtenc_h265/x265enc wall time (goal
# <= 1.02, as encode-throughput's vtenc/x264enc), PSNR-Y of both, their difference as encoded and
# at x265enc's bit rate (goal >= 0 dB), and both bit rates. With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh) those two figures go to
# FILE. A measurement: exits 0 when a goal is missed, non-zero only when something fails.
# SWIFTVT_BENCH_QUICK=1: 60 frames (checks the script, not for figures).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="vtenc-h265"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
clip="$corpus/VID_1280x720_cabac_temporal_direct.264"
bench_require_corpus -f "$clip"
runs="${SWIFTVT_BENCH_RUNS:-5}"
target_kbps="${SWIFTVT_BENCH_TARGET:-1000}"
width=1280 height=720 fps=25 frames=300
if [ "$bench_quick" = 1 ]; then frames=60; fi

bench_install_deps
bench_setup_timer
bench_build_plugin
bench_make_workdir
bench_use_private_plugin vtenc_h265
for element in x265enc avdec_h264 rawvideoparse; do
    if ! gst-inspect-1.0 "$element" >/dev/null 2>&1; then
        echo "$bench_name: element $element not found" >&2
        exit 1
    fi
done

echo "== decoding $(basename "$clip") to raw I420 ($frames frames)"
raw="$work/720p.i420"
gst-launch-1.0 -q filesrc location="$clip" ! h264parse ! avdec_h264 ! video/x-raw,format=I420 \
    ! filesink location="$raw"
# The first $frames frames (all 300 but with SWIFTVT_BENCH_QUICK): identity eos-after lets frames
# the decoder holds through, so the file is cut instead.
if [ "$(stat -c %s "$raw")" -ge $(( width * height * frames * 3 / 2 )) ]; then
    truncate -s $(( width * height * frames * 3 / 2 )) "$raw"
fi
if [ "$(stat -c %s "$raw")" -ne $(( width * height * frames * 3 / 2 )) ]; then
    echo "$bench_name: the raw file is $(stat -c %s "$raw") bytes, not $frames frames" >&2
    exit 1
fi
source_part="filesrc $(printf %q "location=$raw") ! rawvideoparse width=$width height=$height format=i420 framerate=$fps/1"

encoder_of() { # encoder_of medium|realtime vtenc_h265|x265enc [KBIT] -> the encoder with its properties
    local rate="${3:-$target_kbps}"
    case "$1/$2" in
        medium/x265enc) echo "x265enc speed-preset=medium tune=0 bitrate=$rate" ;;
        medium/vtenc_h265) echo "vtenc_h265 bitrate=$rate" ;;
        realtime/x265enc) echo "x265enc speed-preset=veryfast tune=zerolatency bitrate=$rate" ;;
        realtime/vtenc_h265) echo "vtenc_h265 realtime=true bitrate=$rate" ;;
    esac
}
pipeline_command() { # pipeline_command CONFIG ENCODER [OUTPUT_FILE [KBIT]]
    local sink="fakesink sync=false"
    if [ $# -ge 3 ]; then sink="filesink $(printf %q "location=$3")"; fi
    echo "gst-launch-1.0 -q $source_part ! $(encoder_of "$1" "$2" "${4:-}") ! video/x-h265,stream-format=byte-stream ! $sink"
}

measure_output() { # measure_output CONFIG ENCODER [KBIT] -> "kbit/s PSNR-Y"; fails on an error or a wrong frame count
    local file="$work/$1-$2-${3:-target}.h265" count log
    if ! eval "$(pipeline_command "$1" "$2" "$file" "${3:-}")" 2>"$work/encode.err"; then
        echo "$bench_name: the $2 pipeline ($1) failed:" >&2
        cat "$work/encode.err" >&2
        exit 1
    fi
    count=$(ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$file")
    if [ "$count" != "$frames" ]; then
        echo "$bench_name: $2 ($1) wrote $count frames, expected $frames" >&2
        exit 1
    fi
    log=$(ffmpeg -v info -nostdin -i "$file" -f rawvideo -pix_fmt yuv420p -s "${width}x$height" -r "$fps" -i "$raw" \
        -lavfi psnr -f null - 2>&1)
    awk -v bytes="$(stat -c %s "$file")" -v seconds="$(( frames / fps ))" \
        -v psnr="$(grep -o 'PSNR y:[0-9.inf]*' <<<"$log" | tail -1 | cut -d: -f2)" \
        'BEGIN { printf "%.0f %s\n", bytes * 8 / seconds / 1000, psnr }'
}

echo "== $runs timed runs per pipeline (timer $timer), target $target_kbps kbit/s"
for config in medium realtime; do
    read -r ours_kbps ours_psnr <<<"$(measure_output "$config" vtenc_h265)"
    read -r peer_kbps peer_psnr <<<"$(measure_output "$config" x265enc)"
    # The two land a few tenths of a percent apart from the same target; PSNR-Y at the same bit
    # rate is ours interpolated (or extrapolated) to x265enc's rate along our own rate-PSNR line
    # through a second encode 3 % above the target.
    read -r ours2_kbps ours2_psnr <<<"$(measure_output "$config" vtenc_h265 $(( target_kbps * 103 / 100 )))"
    matched_psnr=$(awk -v r1="$ours_kbps" -v p1="$ours_psnr" -v r2="$ours2_kbps" -v p2="$ours2_psnr" -v r="$peer_kbps" \
        'BEGIN { if (r2 == r1) { printf "%.3f", p1 } else { printf "%.3f", p1 + (p2 - p1) * (r - r1) / (r2 - r1) } }')
    bench_time_commands "$(pipeline_command "$config" vtenc_h265)" "$(pipeline_command "$config" x265enc)" \
        >"$work/times.txt"
    mapfile -t times <"$work/times.txt"
    if [ "${#times[@]}" -ne 2 ]; then
        echo "$bench_name: timing failed ($config)" >&2
        exit 1
    fi
    read -r ours _ _ <<<"${times[0]}"
    read -r peer _ _ <<<"${times[1]}"
    ratio=$(awk -v a="$ours" -v b="$peer" 'BEGIN { printf "%.3f", a / b }')
    psnr_diff=$(awk -v a="$ours_psnr" -v b="$peer_psnr" 'BEGIN { printf "%+.2f", a - b }')
    matched_diff=$(awk -v a="$matched_psnr" -v b="$peer_psnr" 'BEGIN { printf "%+.3f", a - b }')
    printf '%-9s vtenc_h265 %.2f s, %s kbit/s, PSNR-Y %s dB | x265enc %.2f s, %s kbit/s, PSNR-Y %s dB | time ratio %s (goal <= 1.02), PSNR-Y %s dB as encoded, %s dB at x265enc'"'"'s bit rate (vtenc_h265 %s dB there; goal >= 0)\n' \
        "$config:" "$ours" "$ours_kbps" "$ours_psnr" "$peer" "$peer_kbps" "$peer_psnr" "$ratio" "$psnr_diff" \
        "$matched_diff" "$matched_psnr"
    bench_summary "vtenc-h265-$config-time" "HEVC 720p $target_kbps kbit/s, wall time vtenc_h265/x265enc, $config" \
        "$ratio" "<= 1.02"
    bench_summary "vtenc-h265-$config-psnr" \
        "HEVC 720p $target_kbps kbit/s, PSNR-Y vtenc_h265 - x265enc at x265enc's bit rate (dB), $config" \
        "$matched_diff" ">= 0"
done
