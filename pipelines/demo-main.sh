#!/usr/bin/env bash
# The README's main job: encode a generated clip with vtenc (the VTCompressionSession model), mux
# it into an MP4 file, check the file with gst-discoverer-1.0, decode it back with vtdec, and print
# a summary: frames, bit rate, PSNR against the source (FFmpeg's psnr filter), decoding speed.
# It also converts an x264enc byte stream with h264parse-to-avcc into a second MP4 (the parser's
# job in the same run), and encodes the same clip with vtmultipasssink twice at the same target,
# max-passes=1 (single pass) and the default (up to 3 passes), from a raw file (a seekable
# source), printing both side by side: passes, frames re-encoded, bit rate, PSNR-Y, time.
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
# FFmpeg measures the PSNR and the bit rate. As a test (--smoke) a machine without it skips, or
# fails under SWIFTVT_REQUIRE_TEST_INPUTS (CI); a user's run just stops with the message.
for tool in ffmpeg ffprobe; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        message="demo: $tool not found (Debian package ffmpeg; scripts/install-deps.sh installs it)"
        if [ "${1:-}" = "--smoke" ]; then
            source "$here/../tests/lib/require.sh"
            require_input "$message"
        fi
        echo "$message" >&2
        exit 1
    fi
done

bitrate=2000
source_caps="video/x-raw,format=I420,width=1280,height=720,framerate=30/1"
echo "== encoding $frames frames of 1280x720 test video with vtenc at $bitrate kbit/s to $output"
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=smpte ! "$source_caps" \
    ! vtenc bitrate="$bitrate" ! mp4mux ! filesink location="$output"

echo "== x264enc byte stream -> h264parse-to-avcc -> MP4"
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=smpte ! "$source_caps" \
    ! x264enc bitrate="$bitrate" speed-preset=veryfast ! video/x-h264,stream-format=byte-stream \
    ! h264parse-to-avcc ! mp4mux ! filesink location="$swiftvt_work_dir/parsed.mp4"
# The report is read whole before it is searched: `discoverer | grep -q` under pipefail fails when
# grep stops at the first match while gst-discoverer-1.0 is still writing (SIGPIPE).
parsed_report="$(gst-discoverer-1.0 -t 60 "$swiftvt_work_dir/parsed.mp4")"
grep -qE "video #[0-9]+: H.264" <<<"$parsed_report" \
    || { echo "demo: h264parse-to-avcc's MP4 has no H.264 video" >&2; echo "$parsed_report" >&2; exit 1; }

echo "== checking $output with gst-discoverer-1.0"
report="$(gst-discoverer-1.0 -t 60 "$output")"
echo "$report"
grep -qE "video #[0-9]+: H.264" <<<"$report" || { echo "demo: no H.264 video in $output" >&2; exit 1; }
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

# The source again, as raw frames piped to FFmpeg, against the decoded MP4.
psnr="$(gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=smpte ! "$source_caps" ! fdsink fd=1 \
    | ffmpeg -nostdin -hide_banner -f rawvideo -pix_fmt yuv420p -s 1280x720 -r 30 -i - -i "$output" \
        -lavfi "[1:v][0:v]psnr" -f null - 2>&1 | sed -n 's/.*PSNR y:\([0-9.inf]*\).* average:\([0-9.inf]*\).*/Y \1 dB, average \2 dB/p')"
stream_bytes="$(ffprobe -v error -select_streams v:0 -show_entries packet=size -of csv=p=0 "$output" | awk '{s+=$1} END {print s}')"
achieved=$(( stream_bytes * 8 * 30 / frames / 1000 ))
echo "demo: OK"
echo "  file:      $output, $(stat -c %s "$output") bytes, duration $duration"
echo "  encoded:   $frames frames by vtenc, bit rate $achieved kbit/s for a $bitrate kbit/s target"
echo "  quality:   PSNR $psnr against the source"
echo "  decoded:   $decoded frames by vtdec in ${elapsed_ms} ms ($fps frames/s including pipeline start-up)"

# Multi-pass: the same clip, written once as raw I420 (filesrc can seek, so later passes can go
# back), encoded by vtmultipasssink with one pass and with its default of up to three.
echo "== single-pass versus multi-pass: vtmultipasssink at $bitrate kbit/s on the same $frames frames"
raw="$swiftvt_work_dir/clip.yuv"
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=smpte ! "$source_caps" ! filesink location="$raw"
multipass_row() { # multipass_row LABEL MAX_PASSES -> one table row
    local out="$swiftvt_work_dir/multipass-$2.mp4" log="$swiftvt_work_dir/multipass-$2.log" start ms summary
    start=$(date +%s%N)
    if ! gst-launch-1.0 -m filesrc location="$raw" ! rawvideoparse width=1280 height=720 format=i420 framerate=30/1 \
            ! vtmultipasssink location="$out" bitrate="$bitrate" max-passes="$2" >"$log" 2>&1; then
        echo "demo: vtmultipasssink max-passes=$2 failed:" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    summary="$(grep -o 'vtmultipasssink-done.*' "$log")" || { echo "demo: no vtmultipasssink-done message" >&2; exit 1; }
    field() { echo "$summary" | sed -n "s/.* $1=([a-z]*)\([0-9.e+-]*\).*/\1/p"; }
    local count kbps psnr_y
    count=$(ffprobe -v error -select_streams v:0 -show_entries stream=nb_frames -of csv=p=0 "$out" | tr -d '[:space:],')
    [ "$count" = "$frames" ] || { echo "demo: the max-passes=$2 file has $count frames, expected $frames" >&2; exit 1; }
    kbps=$(ffprobe -v error -select_streams v:0 -show_entries packet=size -of csv=p=0 "$out" \
        | awk -v s="$frames" '{ b += $1 } END { printf "%.1f", b * 8 * 30 / s / 1000 }')
    psnr_y=$(ffmpeg -v error -nostdin -i "$out" -f rawvideo -pix_fmt yuv420p -s 1280x720 -framerate 30 -i "$raw" \
        -lavfi "[0:v][1:v]psnr=stats_file=-" -f null - 2>/dev/null \
        | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^psnr_y:/) { split($i, a, ":"); s += a[2]; n++ } } END { printf "%.3f", s / n }')
    printf '  %-12s %6s %10s %9s %+8.2f%% %9s dB %7.1f s\n' "$1" "$(field passes)" "$(field frames-reencoded)" "$kbps" \
        "$(awk -v k="$kbps" -v t="$bitrate" 'BEGIN { print (k / t - 1) * 100 }')" "$psnr_y" "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')"
}
single_row="$(multipass_row single-pass 1)"
multi_row="$(multipass_row multi-pass 3)"
echo "demo: multi-pass OK (target $bitrate kbit/s; PSNR-Y is the mean over the frames against the source)"
printf '  %-12s %6s %10s %9s %9s %12s %9s\n' "" passes re-encoded "kbit/s" error PSNR-Y time
echo "$single_row"
echo "$multi_row"
