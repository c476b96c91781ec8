#!/usr/bin/env bash
# The README's main job: encode a generated clip, convert it to AVCC with h264parse-to-avcc, mux
# it into an MP4 file, check the file with gst-discoverer-1.0, then decode it back with vtdec and
# print a summary (frames, decoding speed).
#
#   pipelines/demo-main.sh [OUTPUT.mp4]      # default: swiftvt-demo.mp4, 300 frames of 1280x720
#   pipelines/demo-main.sh --smoke           # 30 frames into a temporary file (the tests)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib/plugin-env.sh"

frames=300
output="swiftvt-demo.mp4"
if [ "${1:-}" = "--smoke" ]; then
    frames=30
    output="$swiftvt_work_dir/demo.mp4"
elif [ -n "${1:-}" ]; then
    output="$1"
fi

echo "== encoding $frames frames of 1280x720 test video to $output"
gst-launch-1.0 -q \
    videotestsrc num-buffers="$frames" pattern=smpte \
    ! video/x-raw,format=I420,width=1280,height=720,framerate=30/1 \
    ! x264enc bitrate=2000 speed-preset=veryfast \
    ! video/x-h264,stream-format=byte-stream \
    ! h264parse-to-avcc \
    ! mp4mux ! filesink location="$output"

echo "== checking $output with gst-discoverer-1.0"
report="$(gst-discoverer-1.0 "$output")"
echo "$report"
echo "$report" | grep -qE "video #[0-9]+: H.264" || { echo "demo: no H.264 video in $output" >&2; exit 1; }
duration="$(echo "$report" | sed -n 's/^ *Duration: *//p')"
expected_seconds=$(( frames / 30 ))
case "$duration" in
    0:00:0${expected_seconds}.0*|0:00:${expected_seconds}.0*) ;;
    *) echo "demo: unexpected duration $duration for $frames frames at 30 fps" >&2; exit 1 ;;
esac

echo "== decoding $output with vtdec"
start=$(date +%s%N)
decoded=$(gst-launch-1.0 -v filesrc location="$output" ! qtdemux ! vtdec ! fakesink silent=false sync=false 2>&1 \
    | grep -c "fakesink0: last-message = chain" || true)
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$decoded" != "$frames" ]; then
    echo "demo: vtdec decoded $decoded frames, expected $frames" >&2
    exit 1
fi
fps=$(( decoded * 1000 / (elapsed_ms > 0 ? elapsed_ms : 1) ))
echo "demo: OK, $output: $(stat -c %s "$output") bytes, duration $duration; vtdec decoded $decoded frames in ${elapsed_ms} ms ($fps frames/s including pipeline start-up)"
