#!/usr/bin/env bash
# Parity with the peer elements on ordinary input (issue 16): each check runs the SwiftVT element
# and, where one exists, its peer (x264enc, avdec_h264, h264parse) in the same pipeline, and fails
# if SwiftVT does less. Row numbers are the issue's table.
#
#  1  vtenc ! video/x-h264,profile=baseline[,level=(string)4.1] ! mp4mux: constrained baseline
#     (labelled baseline for the capsfilter), the level honoured, every frame in the file; a level
#     the picture cannot fit and level=4.1 typed as a number: one ERROR at the caps.
#  2  frames without time stamps from appsrc: encoded (x264enc encodes them too).
#  3  byte-stream output: the SPS VUI declares the caps' rate (h264parse and ffprobe read 30/1).
#  4  interlace-mode=interleaved: coded interlaced in the caps' field order (ffprobe tt / bb), as
#     x264enc; with downstream asking baseline (no field coding, A.2.1): one ERROR at the caps.
#  5  rate-control=quality quality=1 (and 0.99): High 4:4:4 Predictive, lossless (decoded MD5 =
#     source MD5); a downstream that refuses high-4:4:4: one ERROR at the caps.
#  6  h264parse ! video/x-h264,alignment=nal ! h264parse-to-avcc (and after rtph264depay, also
#     with SPS/PPS repeated between the slices of IDR pictures): the reference MD5 through vtdec.
#  7  length-prefixed (avc) data labelled byte-stream into vtdec: 100 frames, the reference MD5,
#     one WARNING (avdec_h264 decodes it too).
#  8  a Matroska file with bit errors: vtdec outputs at least avdec_h264's frames.
#  9  h264parse-to-avcc's caps fields and their types are h264parse's, over the corpus.
# 12  vtmultipasssink bitrate=1 / bitrate=2000000: written as close as the encoder gets, one
#     WARNING with the reachable figure, no third pass that cannot come closer.
# 13  vtmultipasssink location=DIR: one ERROR at the state change, before any frame.
# 14  8x8 input: vtenc and vtmultipasssink (.h264) encode it, as x264enc does; vtmultipasssink into
#     .mp4 (mp4mux takes 16x16 and larger): one ERROR at the caps, no file.
# 15  the same vtmultipasssink run twice: the same bytes (.h264), the same H.264 samples (.mp4).
#
# Failing pipelines run through tests/lib/run-pipeline.py (never gst-launch-1.0's main loop).
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
source "$root/tests/lib/require.sh"
require_file "$corpus/h264/MANIFEST.tsv" "parity: the test corpus $corpus (set SWIFTVT_CORPUS to the corpus folder)"
require_command ffprobe "parity: ffprobe (FFmpeg), the reference reader of the encoded files"
require_command ffmpeg "parity: ffmpeg, which makes the Matroska file of row 7 and decodes row 5's output"
source "$root/pipelines/lib/plugin-env.sh"
runner=(/usr/bin/python3 "$root/tests/lib/run-pipeline.py")
work="$(mktemp -d "${TMPDIR:-/tmp}/swiftvt-parity.XXXXXX")"
trap 'rm -rf "$work" "$swiftvt_work_dir"' EXIT
failures=0
fail() { echo "parity: FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "parity: ok: $*"; }
reference_md5() { awk -F'\t' -v f="$1" '$1 == f { print $9 }' "$corpus/h264/MANIFEST.tsv"; }
probe() {
    local report
    report="$(ffprobe -v error -count_frames -show_entries "stream=$2" -of csv=p=0 "$1" 2>/dev/null || true)"
    echo "${report%%$'\n'*}"
}
source "$root/tests/lib/expect-one-error.sh"
SRC="videotestsrc num-buffers=30 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"

# Row 1: a profile and level from downstream's caps.
for caps in "profile=baseline" "profile=baseline,level=(string)4.1" "level=(string)3"; do
    rm -f "$work/r1.mp4"
    "${runner[@]}" --timeout 120 --expect eos "$SRC ! vtenc ! video/x-h264,$caps ! mp4mux ! filesink location=$work/r1.mp4" >/dev/null 2>&1 || true
    got="$(probe "$work/r1.mp4" profile,level,nb_read_frames)"
    case "$caps" in
        "profile=baseline") want="Constrained Baseline,[0-9]*,30" ;;
        "profile=baseline,level=(string)4.1") want="Constrained Baseline,41,30" ;;
        *) want="[A-Za-z ]*,30,30" ;;
    esac
    if [[ "$got" =~ ^$want$ ]]; then pass "row 1: vtenc ! $caps ! mp4mux: $got"; else fail "row 1: vtenc ! $caps: ffprobe says '$got', wanted $want"; fi
done
expect_one_error "row 1: level below what 320x240 at 30 fps needs" "needs level 1.3 or higher" \
    "$SRC ! vtenc ! video/x-h264,level=(string)1 ! mp4mux ! fakesink"
expect_one_error "row 1: level=4.1 typed as a number" "write level=(string)4.1" \
    "$SRC ! vtenc ! video/x-h264,level=4.1 ! mp4mux ! fakesink"

# Row 2: no time stamps (and the peer).
for encoder in vtenc x264enc; do
    line="$(timeout 120 /usr/bin/python3 "$root/tests/parity_untimed.py" "$encoder" "$work/untimed-$encoder.h264" 30 60 2>&1 || true)"
    decoded="$(probe "$work/untimed-$encoder.h264" nb_read_frames)"
    if grep -q "frames-out=30 .*errors=0" <<<"$line" && [ "$decoded" = 30 ]; then
        pass "row 2: $line; ffprobe decodes $decoded frames"
    else
        fail "row 2: $encoder without time stamps: $line; ffprobe decodes '$decoded' frames"
    fi
done

# Row 3: the VUI's frame rate (and the peer's).
for encoder in vtenc x264enc; do
    gst-launch-1.0 -q $SRC ! $encoder ! video/x-h264,stream-format=byte-stream ! filesink location="$work/r3.h264" >/dev/null 2>&1 || true
    rate="$(probe "$work/r3.h264" r_frame_rate)"
    parsed="$(gst-launch-1.0 -v filesrc location="$work/r3.h264" ! h264parse ! fakesink 2>&1 || true)"
    parsed="$(grep -o 'framerate=(fraction)[0-9/]*' <<<"$parsed" | head -1)"
    if [ "$rate" = "30/1" ] && [ "$parsed" = "framerate=(fraction)30/1" ]; then
        pass "row 3: $encoder: ffprobe r_frame_rate $rate, h264parse $parsed"
    else
        fail "row 3: $encoder byte-stream at 30/1: ffprobe r_frame_rate '$rate', h264parse '$parsed'"
    fi
done

# Row 4: interlaced input is coded interlaced in the caps' field order, as x264enc does.
for order in "" ",field-order=top-field-first" ",field-order=bottom-field-first"; do
    for encoder in vtenc x264enc; do
        rm -f "$work/r4.h264"
        gst-launch-1.0 -q videotestsrc num-buffers=10 ! "video/x-raw,format=I420,width=320,height=240,framerate=30/1,interlace-mode=interleaved$order" \
            ! $encoder ! video/x-h264,stream-format=byte-stream ! filesink location="$work/r4.h264" >/dev/null 2>&1 || true
        eval "field_$encoder=\"\$(probe \"\$work/r4.h264\" field_order)\""
    done
    want=bb; [ "$order" = ",field-order=top-field-first" ] && want=tt
    if [ "$field_vtenc" = "$want" ] && [ "$field_x264enc" = "$want" ]; then
        pass "row 4: interlace-mode=interleaved$order: vtenc and x264enc both code field order $want"
    else
        fail "row 4: interlace-mode=interleaved$order: vtenc '$field_vtenc', x264enc '$field_x264enc', wanted $want"
    fi
done
expect_one_error "row 4: interlaced input with downstream asking baseline" "interlaced coding is not allowed in the constrained-baseline profile" \
    "videotestsrc num-buffers=10 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1,interlace-mode=interleaved ! vtenc ! video/x-h264,profile=baseline ! fakesink"

# Row 5: lossless.
gst-launch-1.0 -q $SRC ! filesink location="$work/source.yuv" >/dev/null 2>&1
source_md5="$(md5sum <"$work/source.yuv" | cut -d' ' -f1)"
for quality in 1 0.99; do
    rm -f "$work/r5.h264"
    "${runner[@]}" --timeout 120 --expect eos "$SRC ! vtenc rate-control=quality quality=$quality ! video/x-h264,stream-format=byte-stream ! filesink location=$work/r5.h264" >/dev/null 2>&1 || true
    profile="$(probe "$work/r5.h264" profile)"
    decoded_md5="$(ffmpeg -v error -i "$work/r5.h264" -f rawvideo -pix_fmt yuv420p - 2>/dev/null | md5sum | cut -d' ' -f1)"
    if [ "$profile" = "High 4:4:4 Predictive" ] && [ "$decoded_md5" = "$source_md5" ]; then
        pass "row 5: quality=$quality: $profile, decoded MD5 = source MD5 ($source_md5)"
    else
        fail "row 5: quality=$quality: profile '$profile', decoded MD5 $decoded_md5, source $source_md5"
    fi
done
expect_one_error "row 5: lossless with downstream allowing high only" "needs the high-4:4:4 profile" \
    "$SRC ! vtenc rate-control=quality quality=1 ! video/x-h264,profile=high ! fakesink"

# Row 6: NAL-aligned input, from h264parse and from rtph264depay.
for stream in BA_MW_D.264 CI_MW_D.264 Cisco_Men_whisper_640x320_CABAC_Bframe_9.264 VID_1280x720_cabac_temporal_direct.264; do
    require_file "$corpus/h264/$stream" "parity: the corpus stream $stream"
    rm -f "$work/r6.yuv"
    "${runner[@]}" --timeout 300 --expect eos "filesrc location=$corpus/h264/$stream ! h264parse ! video/x-h264,alignment=nal ! h264parse-to-avcc ! vtdec ! video/x-raw,format=I420 ! filesink location=$work/r6.yuv" >/dev/null 2>&1 || true
    md5="$(md5sum <"$work/r6.yuv" | cut -d' ' -f1)"
    if [ "$md5" = "$(reference_md5 "$stream")" ]; then pass "row 6: $stream alignment=nal: reference MD5 $md5"; else fail "row 6: $stream alignment=nal: MD5 $md5, reference $(reference_md5 "$stream")"; fi
done
rm -f "$work/r6.yuv"
"${runner[@]}" --timeout 120 --expect eos "filesrc location=$corpus/h264/BA_MW_D.264 ! h264parse ! rtph264pay ! rtph264depay ! video/x-h264,alignment=nal ! h264parse-to-avcc ! vtdec ! video/x-raw,format=I420 ! filesink location=$work/r6.yuv" >/dev/null 2>&1 || true
md5="$(md5sum <"$work/r6.yuv" | cut -d' ' -f1)"
if [ "$md5" = "$(reference_md5 BA_MW_D.264)" ]; then pass "row 6: after rtph264depay (alignment=nal): reference MD5"; else fail "row 6: after rtph264depay: MD5 $md5"; fi
# rtph264pay config-interval=-1 repeats SPS and PPS before every IDR slice, so with several
# slices per picture they sit between two slices of one picture (against 7.4.1.2.3).
# h264parse-to-avcc keeps such a picture whole (before the fix it cut it at the SPS: 3 and 14
# pictures concealed, MD5 420c22c1... and bac27080...). The peers in the same place,
# h264parse ! avdec_h264, give those same wrong MD5s today: printed, not required.
for stream in SVA_Base_B.264 test_cif_I_CABAC_slice.264; do
    for chain in "h264parse-to-avcc ! vtdec" "h264parse ! avdec_h264"; do
        rm -f "$work/r6.yuv"
        "${runner[@]}" --timeout 300 --expect eos "filesrc location=$corpus/h264/$stream ! h264parse ! rtph264pay config-interval=-1 ! rtph264depay ! video/x-h264,alignment=nal ! $chain ! video/x-raw,format=I420 ! filesink location=$work/r6.yuv" >"$work/r6.log" 2>&1 || true
        md5="$(md5sum <"$work/r6.yuv" | cut -d' ' -f1)"
        if [ "$md5" = "$(reference_md5 "$stream")" ]; then
            pass "row 6: $stream, SPS/PPS before every IDR slice (rtph264pay config-interval=-1), $chain: reference MD5"
        elif [ "$chain" = "h264parse ! avdec_h264" ]; then
            echo "parity: note: row 6: $stream, SPS/PPS before every IDR slice: the peers ($chain) give MD5 $md5, not the reference"
        else
            fail "row 6: $stream, SPS/PPS before every IDR slice, $chain: MD5 $md5, reference $(reference_md5 "$stream")"
        fi
    done
done

# Row 7: avc data under byte-stream caps, vtdec and its peer.
ffmpeg -v error -y -r 25 -i "$corpus/h264/BA_MW_D.264" -c copy "$work/ba.mkv"
for decoder in vtdec avdec_h264; do
    rm -f "$work/r7.yuv"
    report="$("${runner[@]}" --timeout 120 --expect eos "filesrc location=$work/ba.mkv ! matroskademux ! capssetter caps=video/x-h264,stream-format=(string)byte-stream ! $decoder ! video/x-raw,format=I420 ! filesink location=$work/r7.yuv" 2>&1 || true)"
    md5="$(md5sum <"$work/r7.yuv" | cut -d' ' -f1)"
    frames=$(( $(stat -c %s "$work/r7.yuv") / (176 * 144 * 3 / 2) ))
    if [ "$md5" = "$(reference_md5 BA_MW_D.264)" ] && [ "$frames" = 100 ]; then
        pass "row 7: $decoder: $frames frames, reference MD5 ($(grep -o '[0-9]* warning(s)' <<<"$report"))"
    else
        fail "row 7: $decoder on length-prefixed data labelled byte-stream: $frames frames, MD5 $md5: $report"
    fi
    if [ "$decoder" = vtdec ] && ! grep -q "WARNING.*length-prefixed NAL units" <<<"$report"; then
        fail "row 7: vtdec did not warn that the caps say byte-stream for avc data: $report"
    fi
done

# Row 8: a Matroska file with bit errors (200 flipped bits, fixed seeds) through vtdec and
# avdec_h264: vtdec outputs at least as many frames. Seeds 1 and 5 are files where vtdec lost
# frames to a damaged SPS taken outside an IDR access unit and to a damaged NAL length dropping
# the whole frame (77 and 87 frames against avdec_h264's 79 and 88).
ffmpeg -v error -y -r 25 -i "$corpus/h264/CI_MW_D.264" -c copy "$work/ci.mkv"
for seed in 1 5; do
    /usr/bin/python3 - "$work/ci.mkv" "$work/damaged.mkv" "$seed" <<'PYTHON'
import random, sys
data = bytearray(open(sys.argv[1], "rb").read())
chance = random.Random(int(sys.argv[3]))
for _ in range(200):
    position = chance.randrange(2000, len(data))  # the headers stay readable
    data[position] ^= 1 << chance.randrange(8)
open(sys.argv[2], "wb").write(data)
PYTHON
    counts=""
    for decoder in vtdec avdec_h264; do
        rm -f "$work/r8.yuv"
        "${runner[@]}" --timeout 120 "filesrc location=$work/damaged.mkv ! matroskademux ! $decoder ! video/x-raw,format=I420 ! filesink location=$work/r8.yuv" >/dev/null 2>&1 || true
        counts="$counts $(( $(stat -c %s "$work/r8.yuv" 2>/dev/null || echo 0) / (176 * 144 * 3 / 2) ))"
    done
    read -r ours theirs <<<"$counts"
    if [ "$ours" -ge "$theirs" ] && [ "$ours" -gt 0 ]; then pass "row 8: damaged MKV (seed $seed): vtdec $ours frames, avdec_h264 $theirs"; else fail "row 8: damaged MKV (seed $seed): vtdec $ours frames, avdec_h264 $theirs"; fi
done

# Row 9: caps field names and types, h264parse against h264parse-to-avcc, every corpus stream that
# both take (the damaged and SVC streams are not compared).
caps_fields() {
    local report
    # Read whole before searching (a grep that stops early would SIGPIPE gst-launch under pipefail).
    report="$(gst-launch-1.0 -v filesrc location="$1" ! $2 ! fakesink 2>&1 || true)"
    grep -m1 "fakesink0.GstPad:sink: caps" <<<"$report" \
        | sed 's/.*caps = video\/x-h264, //' | tr ',' '\n' | sed -n 's/^ *\([a-z_-]*\)=(\([a-zA-Z]*\)).*/\1 \2/p' | sort
}
compared=0
while IFS=$'\t' read -r file _rest; do
    case "$file" in file|*IDR_LOST*|Error_*|sps_subsetsps*) continue ;; esac
    theirs="$(caps_fields "$corpus/h264/$file" "h264parse ! video/x-h264,stream-format=avc,alignment=au")"
    ours="$(caps_fields "$corpus/h264/$file" "h264parse-to-avcc")"
    missing="$(comm -23 <(echo "$theirs") <(echo "$ours"))"
    if [ -n "$missing" ]; then fail "row 9: $file: h264parse's fields missing or typed differently: $(tr '\n' ' ' <<<"$missing")"; fi
    compared=$((compared + 1))
done <"$corpus/h264/MANIFEST.tsv"
[ "$compared" -gt 10 ] && pass "row 9: caps fields and types of h264parse present in h264parse-to-avcc's caps for $compared streams" \
    || fail "row 9: only $compared streams compared"
if gst-launch-1.0 -q filesrc location="$corpus/h264/BA_MW_D.264" ! h264parse-to-avcc ! "video/x-h264,bit-depth-luma=(uint)8" ! fakesink >/dev/null 2>&1; then
    pass "row 9: h264parse-to-avcc ! video/x-h264,bit-depth-luma=(uint)8 negotiates"
else
    fail "row 9: h264parse-to-avcc ! video/x-h264,bit-depth-luma=(uint)8 does not negotiate"
fi

# Row 13: a directory as location, refused at the state change (no frame encoded).
mkdir -p "$work/dir.mp4"
expect_one_error "row 13: location is a directory" "is a directory, not a file" \
    "$SRC ! vtmultipasssink location=$work/dir.mp4"
# Row 14: smaller than a macroblock. vtenc encodes 8x8 as x264enc does (tests/encoder-formats.sh
# checks the sizes against x264enc); vtmultipasssink too into an Annex B file, and refuses it at
# the caps for MP4, whose muxer takes 16x16 and larger (x264enc ! mp4mux fails there with a bare
# not-negotiated).
small_source="videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=8,height=8,framerate=30/1"
for element in "vtmultipasssink location=$work/small.h264" "vtenc ! video/x-h264,stream-format=byte-stream ! filesink location=$work/small-vtenc.h264"; do
    file="$work/small.h264"
    [[ "$element" == vtenc* ]] && file="$work/small-vtenc.h264"
    "${runner[@]}" --timeout 120 --expect eos "$small_source ! $element" >/dev/null 2>&1 || true
    got="$(probe "$file" width,height,nb_read_frames)"
    if [ "$got" = "8,8,5" ]; then pass "row 14: 8x8 into ${element%% *}: encoded ($got)"; else fail "row 14: 8x8 into ${element%% *}: ffprobe says '$got', wanted 8,8,5"; fi
done
expect_one_error "row 14: 8x8 into vtmultipasssink location=*.mp4" "8x8 is smaller than the 16x16 that mp4mux takes" \
    "$small_source ! vtmultipasssink location=$work/small.mp4"
[ ! -e "$work/small.mp4" ] || fail "row 14: $work/small.mp4 was written"

# Rows 12 and 15: vtmultipasssink on a replayable clip (a raw file: multi-pass seeks back).
gst-launch-1.0 -q videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 \
    ! filesink location="$work/clip.yuv" >/dev/null 2>&1
clip_source="filesrc location=$work/clip.yuv ! rawvideoparse width=320 height=240 format=i420 framerate=30/1"
# Row 12: targets out of the encoder's reach: the file is written as close as it gets, with a
# WARNING naming the reachable figure, and no pass that cannot come closer.
for target in 1 2000000; do
    rm -f "$work/r12.mp4"
    report="$(GST_DEBUG=vtmultipasssink:4 "${runner[@]}" --timeout 300 --expect eos "$clip_source ! vtmultipasssink location=$work/r12.mp4 bitrate=$target" 2>&1 || true)"
    passes="$(grep -o 'wrote .*, \([0-9]\) passes' <<<"$report" | grep -o '[0-9] passes' || true)"
    if [ -s "$work/r12.mp4" ] && grep -q "WARNING.*bitrate=$target kbit/s is out of reach for this video: the file is [0-9.]* kbit/s" <<<"$report" \
        && [ "$passes" != "3 passes" ]; then
        pass "row 12: bitrate=$target: $(grep -o 'the file is [0-9.]* kbit/s' <<<"$report" | head -1), $passes, WARNING posted"
    else
        fail "row 12: bitrate=$target: file $(stat -c %s "$work/r12.mp4" 2>/dev/null || echo missing), $passes: $report"
    fi
done
# Row 15: the same input and settings give the same stream, run after run: .h264 files byte for
# byte; in .mp4 the H.264 samples (mp4mux writes the wall-clock time into mvhd/tkhd/mdhd, for
# x264enc ! mp4mux as well).
for threads in 0 1; do
    for run in 1 2; do
        "${runner[@]}" --timeout 300 --expect eos "$clip_source ! vtmultipasssink location=$work/r15-$run.h264 bitrate=300 max-threads=$threads" >/dev/null 2>&1 || true
        "${runner[@]}" --timeout 300 --expect eos "$clip_source ! vtmultipasssink location=$work/r15-$run.mp4 bitrate=300 max-threads=$threads" >/dev/null 2>&1 || true
    done
    if [ -s "$work/r15-1.h264" ] && cmp -s "$work/r15-1.h264" "$work/r15-2.h264"; then
        pass "row 15: max-threads=$threads: two .h264 runs byte-identical ($(md5sum <"$work/r15-1.h264" | cut -c1-12)...)"
    else
        fail "row 15: max-threads=$threads: the two .h264 runs differ"
    fi
    first="$(ffmpeg -v error -i "$work/r15-1.mp4" -c copy -f h264 - 2>/dev/null | md5sum | cut -d' ' -f1)"
    second="$(ffmpeg -v error -i "$work/r15-2.mp4" -c copy -f h264 - 2>/dev/null | md5sum | cut -d' ' -f1)"
    if [ -s "$work/r15-1.mp4" ] && [ "$first" = "$second" ]; then
        pass "row 15: max-threads=$threads: two .mp4 runs hold identical H.264 samples (the two files differ in $(cmp -l "$work/r15-1.mp4" "$work/r15-2.mp4" | wc -l) bytes)"
    else
        fail "row 15: max-threads=$threads: the two .mp4 runs' H.264 samples differ ($first, $second)"
    fi
done

if [ "$failures" -gt 0 ]; then
    echo "parity: $failures check(s) failed" >&2
    exit 1
fi
echo "parity: all checks passed"
