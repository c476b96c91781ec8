#!/usr/bin/env bash
# Case three: compress images into a movie file. Generated pictures are encoded by vtenc
# (the VTCompressionSession model, x264 in software) and muxed into an MP4 file.
#
#   pipelines/case3-encode-to-mp4.sh [OUTPUT.mp4] [BITRATE_KBIT]   # 10 s of 1280x720 at 30 fps
#   pipelines/case3-encode-to-mp4.sh --smoke                        # 2 s into a temporary file, checked
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib/plugin-env.sh"
frames=300
output="swiftvt-case3.mp4"
bitrate="${2:-2500}"
if [ "${1:-}" = "--smoke" ]; then
    frames=60
    output="$swiftvt_work_dir/case3.mp4"
elif [ -n "${1:-}" ]; then
    output="$1"
fi
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=smpte ! video/x-raw,format=NV12,width=1280,height=720,framerate=30/1 \
    ! vtenc bitrate="$bitrate" max-keyframe-interval=60 ! mp4mux ! filesink location="$output"
report="$(gst-discoverer-1.0 -t 60 "$output")"
grep -qE "video #[0-9]+: H.264" <<<"$report" || { echo "case3: no H.264 video in $output" >&2; echo "$report" >&2; exit 1; }
decoded=$(gst-launch-1.0 -v filesrc location="$output" ! qtdemux ! avdec_h264 ! fakesink silent=false 2>&1 | grep -c "last-message = chain" || true)
[ "$decoded" = "$frames" ] || { echo "case3: avdec_h264 decoded $decoded of $frames frames" >&2; exit 1; }
echo "case3: OK, $output: $frames frames, $(stat -c %s "$output") bytes, decodable by avdec_h264"
