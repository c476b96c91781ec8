#!/usr/bin/env bash
# The README's main job: encode a generated clip with vtenc (the VTCompressionSession model), mux
# it into an MP4 file, check the file with gst-discoverer-1.0, decode it back with vtdec, and print
# a summary: frames, bit rate, PSNR against the source (FFmpeg's psnr filter), decoding speed.
# It also converts an x264enc byte stream with h264parse-to-avcc into a second MP4 (the parser's
# job in the same run), and encodes a clip where multi-pass matters (a still picture alternating
# with moving detail) with vtmultipasssink at the same target, max-passes=1 (single pass) and the
# default (up to 3 passes), from a raw file (a seekable source), and single pass once more at
# multi-pass's size, printing them side by side (passes, frames re-encoded, bit rate and its
# error, PSNR-Y, time) and checking that multi-pass is not worse: no farther from the target, no
# lower PSNR-Y.
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

# Multi-pass on a clip where it matters, written once as raw I420 (filesrc can seek, so later
# passes can go back): a still picture (a zone plate) and the same picture with its rings moving
# (zone-plate kt=1: every pixel changes from one frame to the next), alternating every 2 s. Single
# pass (x264's one-pass ABR) codes as the frames come and cannot know what follows; multi-pass
# measures the whole clip in pass 1 and spends the target over it. (The clip above, pattern=smpte,
# holds a patch of new noise in every frame that costs the same bits however they are allocated:
# there multi-pass came out below single pass, 28.605 against 28.697 dB at 2009.7 and 2039.1
# kbit/s, and the table read as "multi-pass is worse".)
segment=60
[ "$frames" -lt 300 ] && segment=10
echo "== single pass versus multi-pass: vtmultipasssink at $bitrate kbit/s on $frames frames of a still picture alternating with moving detail every $segment frames"
raw="$swiftvt_work_dir/clip.yuv"
for (( first = 0, part = 0; first < frames; first += segment, part++ )); do
    motion=""
    [ $((part % 2)) = 1 ] && motion="kt=1"
    count=$(( frames - first < segment ? frames - first : segment ))
    gst-launch-1.0 -q videotestsrc num-buffers="$count" pattern=zone-plate kx2=20 ky2=20 $motion ! "$source_caps" \
        ! filesink location="$raw" append=true
done
# multipass_run MAX_PASSES BITRATE NAME: encodes the clip; sets run_kbps, run_psnr, run_passes,
# run_reencoded, run_seconds.
multipass_run() {
    local out="$swiftvt_work_dir/$3.mp4" log="$swiftvt_work_dir/$3.log" start ms summary count
    start=$(date +%s%N)
    if ! gst-launch-1.0 -m filesrc location="$raw" ! rawvideoparse width=1280 height=720 format=i420 framerate=30/1 \
            ! vtmultipasssink location="$out" bitrate="$2" max-passes="$1" >"$log" 2>&1; then
        echo "demo: vtmultipasssink max-passes=$1 bitrate=$2 failed:" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    summary="$(grep -o 'vtmultipasssink-done.*' "$log")" || { echo "demo: no vtmultipasssink-done message" >&2; exit 1; }
    field() { echo "$summary" | sed -n "s/.* $1=([a-z]*)\([0-9.e+-]*\).*/\1/p"; }
    count=$(ffprobe -v error -select_streams v:0 -show_entries stream=nb_frames -of csv=p=0 "$out" | tr -d '[:space:],')
    [ "$count" = "$frames" ] || { echo "demo: the $3 file has $count frames, expected $frames" >&2; exit 1; }
    run_kbps=$(ffprobe -v error -select_streams v:0 -show_entries packet=size -of csv=p=0 "$out" \
        | awk -v s="$frames" '{ b += $1 } END { printf "%.1f", b * 8 * 30 / s / 1000 }')
    # A frame identical to the source (PSNR inf) counts as 100 dB, so one cannot make the mean inf.
    run_psnr=$(ffmpeg -v error -nostdin -i "$out" -f rawvideo -pix_fmt yuv420p -s 1280x720 -framerate 30 -i "$raw" \
        -lavfi "[0:v][1:v]psnr=stats_file=-" -f null - 2>/dev/null \
        | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^psnr_y:/) { split($i, a, ":"); v = a[2]; if (v == "inf" || v + 0 > 100) v = 100; s += v; n++ } }
               END { printf "%.3f", s / n }')
    run_passes="$(field passes)"
    run_reencoded="$(field frames-reencoded)"
    run_seconds="$(awk -v m="$ms" 'BEGIN { printf "%.1f", m / 1000 }')"
}
error_percent() { awk -v k="$1" -v t="$bitrate" 'BEGIN { printf "%+.2f", (k / t - 1) * 100 }'; }
row() { # row LABEL BITRATE
    printf '  %-18s %7s %6s %10s %9s %8s%% %9s dB %7s s\n' "$1" "$2" "$run_passes" "$run_reencoded" "$run_kbps" \
        "$(error_percent "$run_kbps")" "$run_psnr" "$run_seconds"
}
multipass_run 1 "$bitrate" single-pass
single_kbps=$run_kbps single_psnr=$run_psnr
single_row="$(row "single pass" "$bitrate")"
multipass_run 3 "$bitrate" multi-pass
multi_kbps=$run_kbps multi_psnr=$run_psnr
multi_row="$(row "multi-pass" "$bitrate")"
# Single pass again, its bitrate property raised by the bits it missed so that its file is about
# as large as multi-pass's: the two compared at equal size. (Not in --smoke, which keeps to the
# check below.)
sized_row=""
if [ "$frames" -ge 300 ]; then
    sized_bitrate=$(awk -v t="$bitrate" -v m="$multi_kbps" -v s="$single_kbps" 'BEGIN { printf "%d", t * m / s + 0.5 }')
    multipass_run 1 "$sized_bitrate" single-pass-sized
    sized_kbps=$run_kbps sized_psnr=$run_psnr
    sized_row="$(row "single, same size" "$sized_bitrate")"
fi
printf '  %-18s %7s %6s %10s %9s %9s %12s %9s\n' "" bitrate passes re-encoded "kbit/s" error PSNR-Y time
echo "$single_row"
[ -z "$sized_row" ] || echo "$sized_row"
echo "$multi_row"
# What the table shows, and the demo's own check of it: multi-pass lands no farther from the
# target than single pass and is not worse in PSNR-Y; at the same size (or more bits) single pass
# is not better either. A failure here is a regression of the multi-pass rate control.
verdict="$(awk -v t="$bitrate" -v sk="$single_kbps" -v sp="$single_psnr" -v mk="$multi_kbps" -v mp="$multi_psnr" 'BEGIN {
    se = sk / t - 1; me = mk / t - 1; if (se < 0) se = -se; if (me < 0) me = -me
    if (me > se + 0.005 || mp < sp) { print "worse"; exit }
    printf "%+.1f %% from the target (single pass %+.1f %%), PSNR-Y %+.2f dB against single pass", (mk / t - 1) * 100, (sk / t - 1) * 100, mp - sp
}')"
if [ "$verdict" = worse ]; then
    echo "demo: FAIL: multi-pass ($multi_kbps kbit/s, $multi_psnr dB) is farther from the $bitrate kbit/s target or worse in PSNR-Y than single pass ($single_kbps kbit/s, $single_psnr dB)" >&2
    exit 1
fi
if [ -n "$sized_row" ]; then
    sized_verdict="$(awk -v sk="$sized_kbps" -v sp="$sized_psnr" -v mk="$multi_kbps" -v mp="$multi_psnr" 'BEGIN {
        if (sk >= mk * 0.99 && mp < sp) { print "worse"; exit }
        printf "; at the same size, single pass at %.1f kbit/s: multi-pass %+.2f dB", sk, mp - sp
    }')"
    if [ "$sized_verdict" = worse ]; then
        echo "demo: FAIL: single pass with as many bits ($sized_kbps kbit/s, $sized_psnr dB) beats multi-pass ($multi_kbps kbit/s, $multi_psnr dB)" >&2
        exit 1
    fi
    verdict+="$sized_verdict"
fi
echo "demo: multi-pass OK: $verdict"
echo "  (PSNR-Y: the mean over the frames against the source. Single pass, coding as the frames come, cannot know what"
echo "  follows: it misses the target. Multi-pass measures the whole clip in pass 1 and codes it again at the target; given"
echo "  as many bits, single pass still comes out lower.)"
