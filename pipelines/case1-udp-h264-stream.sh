#!/usr/bin/env bash
# Case one: display an H.264 network stream. A sender encodes test video and sends it as RTP
# over loopback UDP; the receiver depayloads it (Annex B access units), converts it to AVCC with
# h264parse-to-avcc, decodes it with vtdec and displays it.
#
#   pipelines/case1-udp-h264-stream.sh           # 10 s on screen (autovideosink)
#   pipelines/case1-udp-h264-stream.sh --smoke   # bounded: 60 frames into fakesink, checked
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib/plugin-env.sh"

smoke=false
[ "${1:-}" = "--smoke" ] && smoke=true
port=$(( 20000 + RANDOM % 20000 ))
frames=300
sink=(videoconvert ! autovideosink)
if $smoke; then
    frames=60
    sink=(fakesink name=sink sync=false)
fi

rtp_caps="application/x-rtp,media=video,clock-rate=90000,encoding-name=H264,payload=96"
# Receiver first, bounded by frame count (identity eos-after) and by time.
receiver_log="$swiftvt_work_dir/receiver.log"
timeout 60 gst-launch-1.0 -m \
    udpsrc address=127.0.0.1 port="$port" caps="$rtp_caps" \
    ! rtpjitterbuffer latency=200 ! rtph264depay ! video/x-h264,stream-format=byte-stream \
    ! h264parse-to-avcc ! identity eos-after=$(( frames / 2 )) ! vtdec ! "${sink[@]}" \
    >"$receiver_log" 2>&1 &
receiver=$!
sleep 1
timeout 60 gst-launch-1.0 -q \
    videotestsrc num-buffers="$frames" is-live=true ! video/x-raw,width=640,height=360,framerate=30/1 \
    ! x264enc tune=zerolatency key-int-max=15 bitrate=1500 speed-preset=ultrafast \
    ! rtph264pay config-interval=-1 pt=96 ! udpsink host=127.0.0.1 port="$port"
status=0
wait "$receiver" || status=$?
if [ "$status" != 0 ] || ! grep -q "Got EOS" "$receiver_log"; then
    echo "case1: the receiver did not reach EOS (status $status):" >&2
    tail -20 "$receiver_log" >&2
    exit 1
fi
echo "case1: OK, received and decoded $(( frames / 2 )) frames over RTP/UDP through h264parse-to-avcc and vtdec"
