#!/usr/bin/env bash
# Case four: compress for the network. vtenc encodes for real time, its output is turned into an
# H.264 byte stream (start codes, SPS/PPS before every IDR) for rtph264pay and sent over
# loopback UDP; the other side depayloads, converts to AVCC and decodes with vtdec.
#
#   pipelines/case4-rtp-h264-stream.sh           # 10 s, displayed (autovideosink)
#   pipelines/case4-rtp-h264-stream.sh --smoke   # bounded and checked
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib/plugin-env.sh"
smoke=false
[ "${1:-}" = "--smoke" ] && smoke=true
port=$(( 20000 + RANDOM % 20000 ))
frames=300
sink=(videoconvert ! autovideosink)
if $smoke; then
    frames=90
    sink=(fakesink sync=false)
fi
rtp_caps="application/x-rtp,media=video,clock-rate=90000,encoding-name=H264,payload=96"
receiver_log="$swiftvt_work_dir/receiver.log"
timeout 60 gst-launch-1.0 -m udpsrc address=127.0.0.1 port="$port" caps="$rtp_caps" \
    ! rtpjitterbuffer latency=200 ! rtph264depay ! video/x-h264,stream-format=byte-stream \
    ! h264parse-to-avcc ! identity eos-after=$(( frames / 2 )) ! vtdec ! "${sink[@]}" >"$receiver_log" 2>&1 &
receiver=$!
sleep 1
timeout 60 gst-launch-1.0 -q videotestsrc num-buffers="$frames" is-live=true ! video/x-raw,format=I420,width=640,height=360,framerate=30/1 \
    ! vtenc realtime=true bitrate=1500 max-keyframe-interval=15 ! video/x-h264,stream-format=byte-stream \
    ! rtph264pay pt=96 ! udpsink host=127.0.0.1 port="$port"
status=0
wait "$receiver" || status=$?
if [ "$status" != 0 ] || ! grep -q "Got EOS" "$receiver_log"; then
    echo "case4: the receiver did not reach EOS (status $status):" >&2
    tail -20 "$receiver_log" >&2
    exit 1
fi
echo "case4: OK, vtenc -> rtph264pay -> UDP -> rtph264depay -> h264parse-to-avcc -> vtdec: $(( frames / 2 )) frames decoded"
