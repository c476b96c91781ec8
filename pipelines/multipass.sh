#!/usr/bin/env bash
# Multi-pass encoding in one pipeline run: vtmultipasssink encodes every frame, asks its source to
# seek back to the GOPs its rate control wants again, re-encodes only those, and writes the file
# when the size is on target (VideoToolbox's VTMultiPassStorage + VTFrameSilo model).
#
#   pipelines/multipass.sh [INPUT] [OUTPUT.mp4] [BITRATE_KBIT]   # default 1000 kbit/s
#   pipelines/multipass.sh --smoke                               # 60 frames of 320x240, checked
#
# INPUT is any video file FFmpeg decodes; it is decoded once to raw I420 in a temporary folder, so
# that the source can seek (the later passes need it):
#   filesrc location=RAW ! rawvideoparse width=W height=H format=i420 framerate=F \
#     ! vtmultipasssink location=OUTPUT bitrate=BITRATE
# Without INPUT: the first 300 frames of the corpus's h264/VID_1280x720_cabac_temporal_direct.264
# (corpus: SWIFTVT_CORPUS, default ../shared/corpus beside the repository), or 300 frames of
# 1280x720 videotestsrc when the corpus is absent. OUTPUT may end in .mp4, .mov, .h264 or .264.
# Prints the pass progress and the figures of the sink's vtmultipasssink-done message.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib/plugin-env.sh"

smoke=false
[ "${1:-}" = "--smoke" ] && smoke=true
# ffprobe counts the frames written (and reads INPUT's geometry). As a test (--smoke) a machine
# without it skips, or fails under SWIFTVT_REQUIRE_TEST_INPUTS (CI); a user's run just stops.
if ! command -v ffprobe >/dev/null 2>&1; then
    message="multipass: ffprobe not found (Debian package ffmpeg; scripts/install-deps.sh installs it)"
    if $smoke; then
        source "$here/../tests/lib/require.sh"
        require_input "$message"
    fi
    echo "$message" >&2
    exit 1
fi
raw="$swiftvt_work_dir/input.yuv"
extra=()
if $smoke; then
    # Short GOPs, so that later passes re-encode some GOPs and not others.
    width=320 height=240 rate=30/1 bitrate=500 output="$swiftvt_work_dir/multipass.mp4"
    extra=(max-keyframe-interval=15)
    gst-launch-1.0 -q videotestsrc num-buffers=60 pattern=smpte ! "video/x-raw,format=I420,width=$width,height=$height,framerate=$rate" \
        ! filesink location="$raw"
else
    input="${1:-}"
    output="${2:-swiftvt-multipass.mp4}"
    bitrate="${3:-1000}"
    limit=()
    if [ -z "$input" ]; then
        corpus_stream="${SWIFTVT_CORPUS:-$(cd "$here/../.." && pwd)/shared/corpus}/h264/VID_1280x720_cabac_temporal_direct.264"
        if [ -f "$corpus_stream" ]; then
            input="$corpus_stream"
            limit=(-frames:v 300)
        fi
    fi
    if [ -n "$input" ]; then
        [ -f "$input" ] || { echo "multipass: $input does not exist" >&2; exit 1; }
        geometry="$(ffprobe -v error -select_streams v:0 -show_entries stream=width,height,r_frame_rate -of csv=p=0 "$input" || true)"
        IFS=, read -r width height rate <<<"$geometry"
        if [ -z "$width" ] || [ -z "$height" ] || [ -z "$rate" ]; then
            echo "multipass: ffprobe finds no video stream in $input" >&2
            exit 1
        fi
        echo "== decoding $input (${width}x$height at $rate frames/s) to raw I420 (a seekable source)"
        ffmpeg -v error -nostdin -i "$input" "${limit[@]}" -pix_fmt yuv420p -f rawvideo "$raw"
    else
        width=1280 height=720 rate=30/1
        echo "== generating 300 frames of 1280x720 test video (no INPUT given, no corpus found)"
        gst-launch-1.0 -q videotestsrc num-buffers=300 pattern=smpte ! "video/x-raw,format=I420,width=$width,height=$height,framerate=$rate" \
            ! filesink location="$raw"
    fi
fi
frames=$(( $(stat -c %s "$raw") / (width * height * 3 / 2) ))

echo "== vtmultipasssink: $frames frames of ${width}x$height at $bitrate kbit/s into $output"
log="$swiftvt_work_dir/multipass.log"
gst-launch-1.0 -m filesrc location="$raw" ! rawvideoparse width="$width" height="$height" format=i420 framerate="$rate" \
    ! vtmultipasssink location="$output" bitrate="$bitrate" "${extra[@]}" 2>&1 \
    | tee "$log" | { grep --line-buffered -E '^(Progress:|WARNING|ERROR)' || true; }
summary="$(grep -o 'vtmultipasssink-done.*' "$log" || true)"
if [ -z "$summary" ] || [ ! -f "$output" ]; then
    echo "multipass: the pipeline did not finish its file:" >&2
    tail -20 "$log" >&2
    exit 1
fi
field() { echo "$summary" | sed -n "s/.* $1=([a-z]*)\([0-9.e+-]*\).*/\1/p"; }
written=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$output" | tr -d '[:space:],')
if [ "$written" != "$frames" ]; then
    echo "multipass: $output decodes to ${written:-no} frames, expected $frames" >&2
    exit 1
fi
passes=$(field passes)
if $smoke && [ "$passes" -lt 2 ]; then
    echo "multipass: only $passes pass ran; the smoke clip should need more" >&2
    exit 1
fi
reencoded=$(field frames-reencoded)
achieved=$(field bitrate)
echo "multipass: OK, $output: $(stat -c %s "$output") bytes, $written frames (ffprobe)"
echo "  passes:     $passes"
echo "  re-encoded: $reencoded frames in the later passes ($(awk -v r="$reencoded" -v f="$frames" 'BEGIN { printf "%.2f", r / f }') per frame)"
echo "  bit rate:   $(awk -v a="$achieved" 'BEGIN { printf "%.1f", a }') kbit/s for a target of $bitrate ($(awk -v a="$achieved" -v t="$bitrate" 'BEGIN { printf "%+.2f", (a / t - 1) * 100 }') %)"
echo "  duration:   $(awk -v d="$(field duration)" 'BEGIN { printf "%.3f", d }') s"
