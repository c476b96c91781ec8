#!/usr/bin/env bash
# vtenc's stream form, sizes and input formats against x264enc in the same pipelines (issue 32,
# parity round 2), on x264 (hardware=disable) and on the VA-API path (the software VA driver on
# Xvfb, hardware=require; it codes losslessly, so its round trips are exact). Row numbers are the
# issue's table.
#
#  9  access unit delimiters (nal_unit_type 9, 7.3.2.4): the 720p corpus clip (its first 60-odd frames) through
#     vtenc to byte-stream, into mpegtsmux, and to avc: exactly one AUD per access unit, first in
#     it, its primary_pic_type covering the slices' types (Table 7-5), as x264enc's (x264 in the
#     same pipeline; the VA encoder alone). x264: avdec_h264 and vtdec decode the byte-stream
#     output to the same frames; VA: decoded (byte-stream and TS) = the source frames.
# 14  sizes below one macroblock, down to x264enc's: 2x2 and 8x8 I420, 1x1, 15x15 and 17x9 Y444
#     (x264enc codes odd sizes only in 4:4:4), lossless through vtenc and x264enc: each decodes
#     (avdec_h264 and vtdec) to the source frames, size and frame count as the source; on VA too
#     (2x2, 8x8). Odd 4:2:0 and 4:2:2 widths (x264enc fails there with a bare not-negotiated):
#     one ERROR at the caps. A device whose minimum surface is larger (the driver's
#     SWIFTVT_VA_ENCODE_MIN_SIZE=32): hardware=require gives one ERROR naming the size and the
#     minimum, hardware=auto encodes with x264.
# 15  input formats Y42B, Y444, I420_10LE, I422_10LE, Y444_10LE: the profile ffprobe reads is
#     x264enc's (High 4:2:2, High 4:4:4 Predictive, High 10), PSNR-Y of the decoded stream at
#     least 40 dB; lossless (quality=1) decodes exactly (avdec_h264 and vtdec). Downstream asking
#     profile=high for Y444: one ERROR at the caps; VA: hardware=require one ERROR naming the
#     format, hardware=auto falls back to x264.
#
# Failing pipelines run through tests/lib/run-pipeline.py (never gst-launch-1.0's main loop).
# Raw files are compared without the rows' padding (visible_md5).
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
source "$root/tests/lib/require.sh"
hd_stream="$corpus/h264/VID_1280x720_cabac_temporal_direct.264"
require_file "$hd_stream" "encoder-formats: the corpus's 720p clip $hd_stream (set SWIFTVT_CORPUS to the corpus folder)"
require_command ffprobe "encoder-formats: ffprobe (FFmpeg), the reference reader of the encoded files"
require_command ffmpeg "encoder-formats: ffmpeg, which demuxes the transport stream and measures PSNR"
if [ -z "${SWIFTVT_ENCODER_FORMATS_WRAPPED:-}" ]; then
    exec env SWIFTVT_ENCODER_FORMATS_WRAPPED=1 bash "$root/scripts/with-software-va.sh" bash "$0" "$@"
fi
source "$root/pipelines/lib/plugin-env.sh"
runner=(/usr/bin/python3 "$root/tests/lib/run-pipeline.py")
work="$swiftvt_work_dir"
failures=0
fail() { echo "encoder-formats: FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "encoder-formats: ok: $*"; }
md5() { md5sum <"$1" | cut -d' ' -f1; }
# visible_md5 FILE FORMAT WIDTH HEIGHT: the MD5 of the picture samples of raw frames in GStreamer's
# default layout, without the rows' padding (its bytes are whatever the writer's memory held:
# they differ between two decoders of the same pictures, and between runs).
visible_md5() {
    [ -s "$1" ] || { echo missing; return; }
    /usr/bin/python3 - "$@" <<'PY'
import hashlib, sys
import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstVideo
Gst.init(None)
path, name, width, height = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
info = GstVideo.VideoInfo.new()
info.set_format(GstVideo.VideoFormat.from_string(name), width, height)
subsampling = {"I420": (1, 1), "I420_10LE": (1, 1), "Y42B": (1, 0), "I422_10LE": (1, 0), "Y444": (0, 0), "Y444_10LE": (0, 0)}[name]
sample_bytes = 2 if name.endswith("10LE") else 1
data = open(path, "rb").read()
digest = hashlib.md5()
for frame in range(len(data) // info.size):
    base = frame * info.size
    for plane in range(3):
        x, y = (0, 0) if plane == 0 else subsampling
        row_bytes = ((width + (1 << x) - 1) >> x) * sample_bytes
        for row in range((height + (1 << y) - 1) >> y):
            start = base + info.offset[plane] + row * info.stride[plane]
            digest.update(data[start:start + row_bytes])
print(digest.hexdigest() if len(data) % info.size == 0 else f"size {len(data)} is not whole frames of {info.size}")
PY
}
# run LABEL PIPELINE: the pipeline must end by EOS.
run() {
    local output
    if ! output="$("${runner[@]}" --timeout 180 --expect eos "$2" 2>&1)"; then
        fail "$1: the pipeline did not end by EOS: $(grep -m2 '^ERROR' <<<"$output" || tail -2 <<<"$output")"
        return 1
    fi
}
source "$root/tests/lib/expect-one-error.sh"
# aud_report FILE byte-stream|avc: "AUS AUDS BAD" - access units (pictures), AUDs, and how many
# access units do not start with exactly one AUD whose primary_pic_type allows their slices.
aud_report() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import re, sys
data = open(sys.argv[1], 'rb').read()
units = []
if sys.argv[2] == 'avc':
    i = 0
    while i + 4 <= len(data):
        n = int.from_bytes(data[i:i + 4], 'big'); units.append(data[i + 4:i + 4 + n]); i += 4 + n
else:
    starts = [m.end() for m in re.finditer(b'\x00\x00\x01', data)]
    for k, s in enumerate(starts):
        end = starts[k + 1] - 3 if k + 1 < len(starts) else len(data)
        units.append(data[s:end].rstrip(b'\x00'))
def ue(bits, pos):
    zeros = 0
    while bits[pos] == '0': zeros += 1; pos += 1
    value = int(bits[pos:pos + zeros + 1], 2) - 1
    return value, pos + zeros + 1
# Table 7-5: slice_type % 5 (P 0, B 1, I 2, SP 3, SI 4) allowed by each primary_pic_type.
allowed = {0: {2}, 1: {2, 0}, 2: {2, 0, 1}, 3: {4}, 4: {4, 3}, 5: {2, 4}, 6: {2, 4, 0, 3}, 7: {0, 1, 2, 3, 4}}
aus, auds, bad = 0, 0, 0
current = None  # [primary_pic_type or None, AUDs, slice types, pictures]
def close(au):
    global bad
    if au is not None and (au[0] is None or au[1] != 1 or au[3] != 1 or not au[2] <= allowed[au[0]]): bad += 1
for unit in units:
    if not unit: continue
    kind = unit[0] & 31
    if kind == 9:
        auds += 1
        if current is not None and current[3] > 0:
            close(current); current = None
        if current is None: current = [unit[1] >> 5, 1, set(), 0]
        else: current[1] += 1
    elif kind in (1, 5):
        rbsp = unit[1:24].replace(b'\x00\x00\x03', b'\x00\x00')
        bits = ''.join(f'{b:08b}' for b in rbsp)
        first_mb, pos = ue(bits, 0)
        slice_type, _ = ue(bits, pos)
        if first_mb == 0:
            aus += 1
            if current is None or current[3] > 0:  # a picture without an AUD of its own
                close(current); current = [None, 0, set(), 0]
            current[3] += 1
        current[2].add(slice_type % 5)
close(current)
print(aus, auds, bad)
PY
}
# Both decoders of FILE to raw frames (GStreamer's default layout, as the source file's).
decode_both() {
    local file="$1" label="$2"
    run "$label: avdec_h264" "filesrc location=$file ! h264parse ! avdec_h264 ! filesink location=$file.avdec.yuv" || true
    run "$label: vtdec" "filesrc location=$file ! h264parse ! vtdec hardware=disable ! filesink location=$file.vtdec.yuv" || true
}

# Row 9: access unit delimiters.
hd_source="filesrc location=$hd_stream ! h264parse ! avdec_h264 ! identity eos-after=60 ! video/x-raw,format=I420"
run "row 9: x264 and x264enc" "$hd_source ! tee name=s \
    s. ! queue ! vtenc hardware=disable ! video/x-h264,stream-format=byte-stream ! tee name=v \
        v. ! queue ! filesink location=$work/r9-vtenc.h264 v. ! queue ! mpegtsmux ! filesink location=$work/r9-vtenc.ts \
    s. ! queue ! x264enc ! video/x-h264,stream-format=byte-stream ! tee name=x \
        x. ! queue ! filesink location=$work/r9-x264enc.h264 x. ! queue ! mpegtsmux ! filesink location=$work/r9-x264enc.ts" || true
run "row 9: avc" "$hd_source ! identity eos-after=20 ! tee name=s \
    s. ! queue ! vtenc hardware=disable ! video/x-h264,stream-format=avc ! filesink location=$work/r9-vtenc.avc \
    s. ! queue ! x264enc ! video/x-h264,stream-format=avc ! filesink location=$work/r9-x264enc.avc" || true
run "row 9: VA-API" "$hd_source ! tee name=s s. ! queue ! filesink location=$work/r9-source.yuv \
    s. ! queue ! vtenc hardware=require ! video/x-h264,stream-format=byte-stream ! tee name=v \
        v. ! queue ! filesink location=$work/r9-va.h264 v. ! queue ! mpegtsmux ! filesink location=$work/r9-va.ts" || true
for ts in vtenc x264enc va; do
    [ -f "$work/r9-$ts.ts" ] && ffmpeg -v error -y -i "$work/r9-$ts.ts" -c copy -f h264 "$work/r9-$ts-ts.h264" || true
done
# check_auds LABEL FILE FORM [PEER]: every access unit starts with one AUD allowing its slices;
# as many access units as x264enc's output of the same frames (PEER), else as ffprobe counts.
check_auds() {
    local label="$1" file="$2" form="$3" peer="${4:-}" report peer_report expected
    [ -s "$file" ] || { fail "$label: no output"; return; }
    report="$(aud_report "$file" "$form")"
    if [ -n "$peer" ]; then
        peer_report="$(aud_report "$peer" "$form")"
        expected="${peer_report%% *}"
    else
        expected="$(ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$file" 2>/dev/null || true)"
    fi
    if [ "$report" = "$expected $expected 0" ] && [ "${expected:-0}" -gt 0 ]; then
        pass "$label: $expected access units, $expected AUDs, each first in its access unit${peer:+ (x264enc: access units, AUDs, without one: $peer_report)}"
    else
        fail "$label: access units, AUDs, access units without exactly one leading AUD: $report, wanted $expected $expected 0${peer:+ (x264enc: $peer_report)}"
    fi
}
check_auds "row 9: x264 byte-stream" "$work/r9-vtenc.h264" byte-stream "$work/r9-x264enc.h264"
check_auds "row 9: x264 into mpegtsmux" "$work/r9-vtenc-ts.h264" byte-stream "$work/r9-x264enc-ts.h264"
check_auds "row 9: x264 avc" "$work/r9-vtenc.avc" avc "$work/r9-x264enc.avc"
check_auds "row 9: VA-API byte-stream" "$work/r9-va.h264" byte-stream
check_auds "row 9: VA-API into mpegtsmux" "$work/r9-va-ts.h264" byte-stream
# vtmultipasssink's .h264 files: the same delimiters as vtenc's byte stream.
run "row 9: vtmultipasssink .h264" "$hd_source ! vtmultipasssink location=$work/r9-multipass.h264 bitrate=1000" || true
check_auds "row 9: vtmultipasssink .h264" "$work/r9-multipass.h264" byte-stream
decode_both "$work/r9-vtenc.h264" "row 9: x264 byte-stream"
if [ -s "$work/r9-vtenc.h264.avdec.yuv" ] && [ "$(md5 "$work/r9-vtenc.h264.avdec.yuv")" = "$(md5 "$work/r9-vtenc.h264.vtdec.yuv")" ]; then
    pass "row 9: x264 byte-stream with AUDs: avdec_h264 and vtdec decode the same frames"
else
    fail "row 9: x264 byte-stream with AUDs: avdec_h264 and vtdec disagree"
fi
source_md5="$(md5 "$work/r9-source.yuv" 2>/dev/null || true)"
for file in r9-va.h264 r9-va-ts.h264; do
    decoded="$(ffmpeg -v error -i "$work/$file" -f rawvideo -pix_fmt yuv420p - 2>/dev/null | md5sum | cut -d' ' -f1)"
    if [ "$decoded" = "$source_md5" ]; then pass "row 9: VA-API $file decodes to the source ($decoded)"; else fail "row 9: VA-API $file: decoded MD5 $decoded, source $source_md5"; fi
done

# Row 14: small sizes, lossless through vtenc and x264enc; both decoders give the source back.
for case in "2 2 I420" "8 8 I420" "1 1 Y444" "15 15 Y444" "17 9 Y444"; do
    read -r w h format <<<"$case"
    name="$work/r14-${w}x$h-$format"
    caps="video/x-raw,format=$format,width=$w,height=$h,framerate=30/1"
    run "row 14: ${w}x$h $format" "videotestsrc num-buffers=10 pattern=ball ! $caps ! tee name=s \
        s. ! queue ! filesink location=$name.yuv \
        s. ! queue ! vtenc hardware=disable rate-control=quality quality=1 ! video/x-h264,stream-format=byte-stream ! filesink location=$name.h264 \
        s. ! queue ! x264enc pass=quant quantizer=0 ! video/x-h264,stream-format=byte-stream ! filesink location=$name.x264enc.h264" || continue
    decode_both "$name.h264" "row 14: ${w}x$h $format"
    run "row 14: ${w}x$h $format x264enc: avdec_h264" "filesrc location=$name.x264enc.h264 ! h264parse ! avdec_h264 ! filesink location=$name.x264enc.yuv" || true
    probe="$(ffprobe -v error -count_frames -show_entries stream=width,height,nb_read_frames -of csv=p=0 "$name.h264" 2>/dev/null || true)"
    want="$(visible_md5 "$name.yuv" "$format" "$w" "$h")"
    if [ "$probe" = "$w,$h,10" ] && [ "$(visible_md5 "$name.h264.avdec.yuv" "$format" "$w" "$h")" = "$want" ] \
        && [ "$(visible_md5 "$name.h264.vtdec.yuv" "$format" "$w" "$h")" = "$want" ] \
        && [ "$(visible_md5 "$name.x264enc.yuv" "$format" "$w" "$h")" = "$want" ]; then
        pass "row 14: ${w}x$h $format: vtenc $probe, avdec_h264 and vtdec give the source ($want), as x264enc's stream"
    else
        fail "row 14: ${w}x$h $format: ffprobe '$probe'; source $want, avdec $(visible_md5 "$name.h264.avdec.yuv" "$format" "$w" "$h"), vtdec $(visible_md5 "$name.h264.vtdec.yuv" "$format" "$w" "$h"), x264enc $(visible_md5 "$name.x264enc.yuv" "$format" "$w" "$h")"
    fi
done
for case in "2 2" "8 8"; do
    read -r w h <<<"$case"
    name="$work/r14-va-${w}x$h"
    run "row 14: VA-API ${w}x$h" "videotestsrc num-buffers=10 pattern=ball ! video/x-raw,format=I420,width=$w,height=$h,framerate=30/1 ! tee name=s \
        s. ! queue ! filesink location=$name.yuv \
        s. ! queue ! vtenc hardware=require ! video/x-h264,stream-format=byte-stream ! filesink location=$name.h264" || continue
    run "row 14: VA-API ${w}x$h: avdec_h264" "filesrc location=$name.h264 ! h264parse ! avdec_h264 ! filesink location=$name.avdec.yuv" || true
    if [ "$(visible_md5 "$name.avdec.yuv" I420 "$w" "$h")" = "$(visible_md5 "$name.yuv" I420 "$w" "$h")" ]; then
        pass "row 14: VA-API ${w}x$h: decodes to the source"
    else
        fail "row 14: VA-API ${w}x$h: decoded $(visible_md5 "$name.avdec.yuv" I420 "$w" "$h"), source $(visible_md5 "$name.yuv" I420 "$w" "$h")"
    fi
done
expect_one_error "row 14: 15x15 I420" "width 15 is odd, and 4:2:0 pictures (I420) need an even width" \
    "videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=15,height=15 ! vtenc hardware=disable ! fakesink"
expect_one_error "row 14: 17x9 Y42B" "width 17 is odd, and 4:2:2 pictures (Y42B) need an even width" \
    "videotestsrc num-buffers=5 ! video/x-raw,format=Y42B,width=17,height=9 ! vtenc hardware=disable ! fakesink"
SWIFTVT_VA_ENCODE_MIN_SIZE=32 expect_one_error "row 14: 16x16 on a device encoding 32x32 and larger, hardware=require" \
    "16x16 (coded as 16x16, whole macroblocks) is smaller than the 32x32" \
    "videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=16,height=16 ! vtenc hardware=require ! fakesink"
if SWIFTVT_VA_ENCODE_MIN_SIZE=32 "${runner[@]}" --timeout 60 --expect eos \
    "videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=16,height=16 ! vtenc hardware=auto ! video/x-h264,stream-format=byte-stream ! filesink location=$work/r14-auto.h264" >/dev/null 2>&1 \
    && [ "$(ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$work/r14-auto.h264")" = 5 ]; then
    pass "row 14: 16x16 on a device encoding 32x32 and larger, hardware=auto: 5 frames from x264"
else
    fail "row 14: 16x16, hardware=auto on a device encoding 32x32 and larger did not encode 5 frames"
fi

# Row 15: input formats.
# psnr_y STREAM RAW PIXFMT: PSNR-Y of the decoded 160x120 stream against the raw source (both
# read as raw frames, so that frames pair by position, not by time stamp).
psnr_y() {
    ffmpeg -v error -y -i "$1" -f rawvideo -pix_fmt "$3" "$1.decoded.yuv" 2>/dev/null || true
    ffmpeg -v info -f rawvideo -pix_fmt "$3" -s 160x120 -i "$1.decoded.yuv" -f rawvideo -pix_fmt "$3" -s 160x120 -i "$2" \
        -lavfi psnr -f null - 2>&1 | sed -n 's/.*PSNR y:\([0-9.a-z]*\) .*/\1/p' | tail -1
}
for case in "Y42B yuv422p High 4:2:2" "Y444 yuv444p High 4:4:4 Predictive" "I420_10LE yuv420p10le High 10" \
    "I422_10LE yuv422p10le High 4:2:2" "Y444_10LE yuv444p10le High 4:4:4 Predictive"; do
    read -r format pixfmt profile <<<"$case"
    name="$work/r15-$format"
    caps="video/x-raw,format=$format,width=160,height=120,framerate=30/1"
    run "row 15: $format" "videotestsrc num-buffers=10 pattern=ball ! $caps ! tee name=s \
        s. ! queue ! filesink location=$name.yuv \
        s. ! queue ! vtenc hardware=disable ! video/x-h264,stream-format=byte-stream ! filesink location=$name.h264 \
        s. ! queue ! vtenc hardware=disable rate-control=quality quality=1 ! video/x-h264,stream-format=byte-stream ! filesink location=$name.lossless.h264 \
        s. ! queue ! x264enc ! video/x-h264,stream-format=byte-stream ! filesink location=$name.x264enc.h264" || continue
    ours="$(ffprobe -v error -show_entries stream=profile,pix_fmt -of csv=p=0 "$name.h264" 2>/dev/null || true)"
    peer="$(ffprobe -v error -show_entries stream=profile,pix_fmt -of csv=p=0 "$name.x264enc.h264" 2>/dev/null || true)"
    psnr="$(psnr_y "$name.h264" "$name.yuv" "$pixfmt")"
    peer_psnr="$(psnr_y "$name.x264enc.h264" "$name.yuv" "$pixfmt")"
    if [ "$ours" = "$profile,$pixfmt" ] && [ "$ours" = "$peer" ] && awk -v p="$psnr" 'BEGIN { exit !(p == "inf" || p + 0 >= 40) }'; then
        pass "row 15: $format: $ours (x264enc: $peer), PSNR-Y $psnr dB (CRF 23; x264enc at its 2048 kbit/s: $peer_psnr dB)"
    else
        fail "row 15: $format: vtenc '$ours', x264enc '$peer', PSNR-Y '$psnr' (wanted $profile,$pixfmt and at least 40 dB)"
    fi
    decode_both "$name.lossless.h264" "row 15: $format lossless"
    want="$(visible_md5 "$name.yuv" "$format" 160 120)"
    if [ "$(visible_md5 "$name.lossless.h264.avdec.yuv" "$format" 160 120)" = "$want" ] \
        && [ "$(visible_md5 "$name.lossless.h264.vtdec.yuv" "$format" 160 120)" = "$want" ]; then
        pass "row 15: $format quality=1: avdec_h264 and vtdec give the source ($want)"
    else
        fail "row 15: $format quality=1: source $want, avdec $(visible_md5 "$name.lossless.h264.avdec.yuv" "$format" 160 120), vtdec $(visible_md5 "$name.lossless.h264.vtdec.yuv" "$format" 160 120)"
    fi
done
# Downstream naming the format's profile (and a level) gets it, into mp4mux.
for case in "I420_10LE high-10 High 10" "Y42B high-4:2:2 High 4:2:2" "Y444_10LE high-4:4:4 High 4:4:4 Predictive"; do
    read -r format caps_profile profile <<<"$case"
    rm -f "$work/r15-mux.mp4"
    run "row 15: $format ! profile=$caps_profile" "videotestsrc num-buffers=10 ! video/x-raw,format=$format,width=320,height=240,framerate=30/1 \
        ! vtenc hardware=disable ! video/x-h264,profile=$caps_profile,level=(string)3 ! mp4mux ! filesink location=$work/r15-mux.mp4" || continue
    got="$(ffprobe -v error -count_frames -show_entries stream=profile,level,nb_read_frames -of csv=p=0 "$work/r15-mux.mp4" 2>/dev/null || true)"
    if [ "$got" = "$profile,30,10" ]; then pass "row 15: $format ! profile=$caps_profile,level=3 ! mp4mux: $got"; else fail "row 15: $format ! profile=$caps_profile,level=3: ffprobe '$got', wanted $profile,30,10"; fi
done
expect_one_error "row 15: Y444 with downstream asking profile=high" \
    "Y444 pictures make a high-4:4:4 stream, but downstream allows only profile high" \
    "videotestsrc num-buffers=5 ! video/x-raw,format=Y444,width=160,height=120 ! vtenc hardware=disable ! video/x-h264,profile=high ! fakesink"
expect_one_error "row 15: Y444 with hardware=require" "encodes 8-bit 4:2:0 pictures (I420, NV12) only, not Y444" \
    "videotestsrc num-buffers=5 ! video/x-raw,format=Y444,width=160,height=120 ! vtenc hardware=require ! fakesink"
if "${runner[@]}" --timeout 60 --expect eos \
    "videotestsrc num-buffers=5 ! video/x-raw,format=I422_10LE,width=160,height=120 ! vtenc hardware=auto ! video/x-h264,stream-format=byte-stream ! filesink location=$work/r15-auto.h264" >/dev/null 2>&1 \
    && [ "$(ffprobe -v error -show_entries stream=profile -of csv=p=0 "$work/r15-auto.h264")" = "High 4:2:2" ]; then
    pass "row 15: I422_10LE with hardware=auto on a 4:2:0 device: High 4:2:2 from x264"
else
    fail "row 15: I422_10LE with hardware=auto did not fall back to x264"
fi

if [ "$failures" -gt 0 ]; then
    echo "encoder-formats: $failures check(s) failed" >&2
    exit 1
fi
echo "encoder-formats: all checks passed"
