#!/usr/bin/env bash
# Case two: decode to buffers you can touch. An H.264 elementary stream is converted to AVCC,
# decoded by vtdec into pixel buffers and every Nth picture written as a PNG file.
#
#   pipelines/case2-decode-to-png.sh FILE.264 [OUTPUT_DIR]   # every 30th picture
#   pipelines/case2-decode-to-png.sh --smoke                 # a generated stream, checked
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib/plugin-env.sh"

if [ "${1:-}" = "--smoke" ] || [ -z "${1:-}" ]; then
    input="$swiftvt_work_dir/input.264"
    output="$swiftvt_work_dir/png"
    gst-launch-1.0 -q videotestsrc num-buffers=90 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 \
        ! x264enc bframes=2 ! video/x-h264,stream-format=byte-stream ! filesink location="$input"
else
    input="$1"
    output="${2:-swiftvt-frames}"
fi
mkdir -p "$output"
gst-launch-1.0 -q filesrc location="$input" ! h264parse-to-avcc ! vtdec ! videorate drop-only=true \
    ! video/x-raw,framerate=1/1 ! videoconvert ! pngenc ! multifilesink location="$output/frame-%05d.png"
pictures=("$output"/frame-*.png)
count=0
[ -f "${pictures[0]}" ] && count=${#pictures[@]}
if [ "$count" -lt 1 ]; then
    echo "case2: no picture was written" >&2
    exit 1
fi
signature="$(od -An -tx1 -N4 "${pictures[0]}" | tr -d ' ')"
if [ "$signature" != "89504e47" ]; then
    echo "case2: ${pictures[0]} is not a PNG file" >&2
    exit 1
fi
echo "case2: OK, $count pictures written to $output (one per second of video)"
