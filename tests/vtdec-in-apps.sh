#!/usr/bin/env bash
# vtdec inside existing applications: with GST_PLUGIN_FEATURE_RANK=vtdec:MAX, decodebin and
# playbin (gst-launch-1.0 and gst-play-1.0) and a Python GI program pick vtdec for an MP4 and
# play it to the end.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/pipelines/lib/plugin-env.sh"
movie="$swiftvt_work_dir/clip.mp4"
timeout 60 gst-launch-1.0 -q videotestsrc num-buffers=60 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 \
    ! x264enc bframes=2 ! video/x-h264,stream-format=byte-stream ! h264parse-to-avcc ! mp4mux ! filesink location="$movie"
export GST_PLUGIN_FEATURE_RANK=vtdec:MAX

check() {
    local name="$1" log="$2"
    if ! grep -q "Got EOS" "$log"; then
        echo "vtdec-in-apps: $name did not play to the end" >&2; tail -20 "$log" >&2; exit 1
    fi
    if ! grep -q "SwiftVTDec" "$log"; then
        echo "vtdec-in-apps: $name did not use vtdec" >&2; tail -20 "$log" >&2; exit 1
    fi
    echo "vtdec-in-apps: $name used vtdec and played to the end"
}

log="$swiftvt_work_dir/decodebin.log"
timeout 60 gst-launch-1.0 -v filesrc location="$movie" ! decodebin ! videoconvert ! fakesink >"$log" 2>&1
check decodebin "$log"

log="$swiftvt_work_dir/playbin.log"
timeout 60 gst-launch-1.0 -v playbin uri="file://$movie" video-sink=fakesink audio-sink=fakesink >"$log" 2>&1
check playbin "$log"

log="$swiftvt_work_dir/gst-play.log"
GST_DEBUG=vtdec:4 timeout 60 gst-play-1.0 --no-interactive --videosink=fakesink --audiosink=fakesink "$movie" >"$log" 2>&1
grep -q "vtdec" "$log" || { echo "vtdec-in-apps: gst-play-1.0 did not use vtdec" >&2; tail -20 "$log" >&2; exit 1; }
echo "vtdec-in-apps: gst-play-1.0 used vtdec"

# Debian's interpreter, which has the GObject introspection bindings (python3-gi).
/usr/bin/python3 "$root/tests/vtdec_playbin.py" "$movie"
