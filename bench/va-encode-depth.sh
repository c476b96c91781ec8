#!/usr/bin/env bash
# VA-API encoding throughput with 1 and with 4 pictures in flight: SwiftVT's vtenc against
# FFmpeg's h264_vaapi, both through the project's software VA driver (tests/va-driver) with
# asynchronous completion: each picture is complete SWIFTVT_VA_LATENCY_MS after vaEndPicture (1 ms
# and 5 ms here), as on hardware, where the client waits in vaSyncSurface.
#
#   bench/va-encode-depth.sh
#
# Input: 100 frames of the corpus clip VID_1280x720_cabac_temporal_direct.264, decoded once into a
# raw I420 file in the temporary directory (138 MB), read at 25 frames/s. Both encoders code
# I P P P (no B pictures), High profile, CAVLC (the driver codes CAVLC only), constant QP, an IDR
# picture every 250 frames (so once), to a null sink:
#   SwiftVT  env SWIFTVT_VA_LATENCY_MS=L SWIFTVT_VA_ASYNC_DEPTH=D gst-launch-1.0 -q filesrc location=RAW
#            ! rawvideoparse width=1280 height=720 format=i420 framerate=25/1 ! vtenc hardware=require
#            entropy-mode=cavlc allow-frame-reordering=false max-keyframe-interval=250
#            ! video/x-h264,stream-format=byte-stream ! fakesink sync=false
#   FFmpeg   env SWIFTVT_VA_LATENCY_MS=L ffmpeg -nostdin -v error -init_hw_device vaapi=va:$DISPLAY,connection_type=x11
#            -filter_hw_device va -f rawvideo -pix_fmt yuv420p -s 1280x720 -r 25 -i RAW
#            -vf format=nv12,hwupload -c:v h264_vaapi -async_depth D -profile:v high -coder cavlc -bf 0 -g 250 -f null -
# (SWIFTVT_VA_ASYNC_DEPTH is vtenc's pictures in flight, default 4; FFmpeg's -async_depth, default 2.)
# Before timing, one run of each encoder writes its stream to a file, which must decode to 100
# frames. Each command is then timed SWIFTVT_BENCH_RUNS times (default 3) after a warm-up, with
# hyperfine (installed if missing) or `date +%s%N` (SWIFTVT_BENCH_TIMER=date), the median kept.
# Times are whole processes (start-up included, the same for every depth).
#
# Printed: one table, per latency and depth, frames/s of both (100 / median wall time) and the
# ratio SwiftVT/FFmpeg (higher frames/s = better); the goal is a ratio >= 1 at each depth and
# latency. Also how busy the machine was (load average before and after). It is a measurement:
# it exits 0 when a goal is missed, non-zero only when something fails.
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh), the four ratios go to FILE (bench_summary,
# bench/lib/common.sh) with the goal >= 1.00 (issue 18), beside the load average at the end of
# that latency's timing.
#
# Runs itself under scripts/with-software-va.sh (Xvfb, the driver, LIBVA_DRIVER_NAME/PATH).
# Builds the release plugin first, or uses SWIFTVT_PLUGIN=/path/to/libgstswiftvt.so as it is
# (bench/lib/common.sh); the driver is built into SWIFTVT_VA_DRIVER_DIR (default .build-va-driver).
# Environment: SWIFTVT_CORPUS (folder containing h264/, default ../shared/corpus), SWIFTVT_PLUGIN,
# SWIFTVT_VA_DRIVER_DIR, SWIFTVT_BENCH_RUNS, SWIFTVT_BENCH_TIMER=date, SWIFTVT_BENCH_SUMMARY.
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="va-encode-depth"
if [ -z "${SWIFTVT_BENCH_VA_WRAPPED:-}" ]; then
    exec env SWIFTVT_BENCH_VA_WRAPPED=1 bash scripts/with-software-va.sh bash "$0" "$@"
fi
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream="$corpus/VID_1280x720_cabac_temporal_direct.264"
bench_require_corpus -f "$stream"
runs="${SWIFTVT_BENCH_RUNS:-3}"
width=1280 height=720 frames=100 fps=25
latencies=(1 5)
depths=(1 4)
loadavg_start="$(cut -d' ' -f1-3 /proc/loadavg)"

bench_setup_timer
for tool in ffmpeg ffprobe; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$bench_name: $tool not found (Debian package ffmpeg)" >&2
        exit 1
    fi
done
bench_build_plugin
bench_make_workdir
bench_use_private_plugin vtenc

raw="$work/input.yuv"
echo "== decoding $frames frames of $(basename "$stream") into $raw"
gst-launch-1.0 -q filesrc location="$stream" ! h264parse ! avdec_h264 ! video/x-raw,format=I420 \
    ! identity eos-after=$((frames + 1)) ! filesink location="$raw"
size=$(stat -c %s "$raw")
frame_bytes=$((width * height * 3 / 2))
if [ "$((size / frame_bytes))" -lt "$frames" ]; then
    echo "$bench_name: $raw holds $((size / frame_bytes)) frames, not $frames" >&2
    exit 1
fi
truncate -s $((frames * frame_bytes)) "$raw"

# The commands, as strings of %q-quoted words (bench_time_commands).
swiftvt_command() { # swiftvt_command LATENCY DEPTH SINK...
    local latency="$1" depth="$2"
    shift 2
    printf '%q ' env "SWIFTVT_VA_LATENCY_MS=$latency" "SWIFTVT_VA_ASYNC_DEPTH=$depth" gst-launch-1.0 -q \
        filesrc location="$raw" ! rawvideoparse width=$width height=$height format=i420 framerate=$fps/1 \
        ! vtenc hardware=require entropy-mode=cavlc allow-frame-reordering=false max-keyframe-interval=250 \
        ! video/x-h264,stream-format=byte-stream ! "$@"
}
ffmpeg_command() { # ffmpeg_command LATENCY DEPTH OUTPUT...
    local latency="$1" depth="$2"
    shift 2
    printf '%q ' env "SWIFTVT_VA_LATENCY_MS=$latency" ffmpeg -nostdin -y -v error \
        -init_hw_device "vaapi=va:$DISPLAY,connection_type=x11" -filter_hw_device va \
        -f rawvideo -pix_fmt yuv420p -s ${width}x$height -r $fps -i "$raw" -vf format=nv12,hwupload \
        -c:v h264_vaapi -async_depth "$depth" -profile:v high -coder cavlc -bf 0 -g 250 "$@"
}

echo "== checking both encoders (one run each, to files)"
for depth in "${depths[@]}"; do
    eval "$(swiftvt_command 5 "$depth" filesink location="$work/swiftvt-$depth.h264")"
    eval "$(ffmpeg_command 5 "$depth" -f h264 "$work/ffmpeg-$depth.h264")"
    for client in swiftvt ffmpeg; do
        count="$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 \
            "$work/$client-$depth.h264")"
        if [ "$count" != "$frames" ]; then
            echo "$bench_name: $client at depth $depth wrote $count frames, not $frames" >&2
            exit 1
        fi
    done
done

declare -A fps_of load_of
for latency in "${latencies[@]}"; do
    commands=()
    for depth in "${depths[@]}"; do
        commands+=("$(swiftvt_command "$latency" "$depth" fakesink sync=false)")
        commands+=("$(ffmpeg_command "$latency" "$depth" -f null -)")
    done
    echo "== timing at $latency ms of device latency ($runs runs per command, $timer)"
    index=0
    while read -r median; do
        depth="${depths[index / 2]}"
        client=$([ $((index % 2)) = 0 ] && echo swiftvt || echo ffmpeg)
        fps_of["$client-$latency-$depth"]="$(python3 -c "print(f'{$frames / $median:.1f}')")"
        index=$((index + 1))
    done < <(bench_median_seconds "${commands[@]}")
    load_of["$latency"]="$(bench_load)"
done

echo
echo "== VA-API encoding, 1280x720 I P P P, $frames frames: frames/s (higher = better), SwiftVT/FFmpeg"
printf '%-10s %-17s %12s %12s %16s\n' latency "pictures in flight" SwiftVT FFmpeg SwiftVT/FFmpeg
for latency in "${latencies[@]}"; do
    for depth in "${depths[@]}"; do
        ours="${fps_of[swiftvt-$latency-$depth]}"
        theirs="${fps_of[ffmpeg-$latency-$depth]}"
        ratio="$(python3 -c "print(f'{$ours / $theirs:.3f}')")"
        printf '%-10s %-17s %12s %12s %16s\n' "$latency ms" "$depth" "$ours" "$theirs" "${ratio}x"
        bench_summary "va-encode-depth$depth-${latency}ms" \
            "VA encode 720p, $depth in flight, $latency ms latency: frames/s SwiftVT/FFmpeg h264_vaapi" \
            "$ratio" ">= 1.00" "${load_of[$latency]}"
    done
done
echo "goal: SwiftVT/FFmpeg >= 1.000x at each depth and latency"
echo "load average: $loadavg_start before, $(cut -d' ' -f1-3 /proc/loadavg) after (2 cores)"
