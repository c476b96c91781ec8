#!/usr/bin/env bash
# vtenc and vtmultipasssink on the VA-API path, against SwiftVT's software VA driver
# (tests/va-driver/) on Xvfb. The driver writes every macroblock as I_PCM after SwiftVT's own
# packed SPS/PPS/slice headers, so a correct client gives a lossless stream: decoding it must give
# back exactly the source frames, in display order.
#
# 1. `vtenc hardware=require` on the corpus raw clip (320x192, 9 frames), the 300-frame 720p clip
#    (decoded from the corpus) and a 152x100 clip (cropping: 160x112 coded): IDR-only, IPPP and
#    IBBP (reordering) decode with avdec_h264 to the source MD5; key frames where the key-frame
#    interval puts them and where force-key-unit events ask; the driver validates every picture's
#    parameters against SwiftVT's packed headers (no VALIDATION line) and nothing is leaked;
# 2. FFmpeg's own VA encoder (h264_vaapi) through the same driver: lossless too, and the sequence
#    and picture parameters both clients gave the driver agree where they must;
# 3. the rate-control, HRD, frame-rate and quality-level parameters the driver received match
#    vtenc's properties (CBR, VBR with a peak, constant QP from quality);
# 4. vtmultipasssink hardware=require: pass 2 re-encodes ranges on the device (in constant-QP
#    mode, one QP per picture), and the file is complete, decodable and lossless. The software
#    driver codes losslessly, so its bits do not follow the QP: pass 2 lands no closer to the
#    target and is taken back (the sink keeps the best complete result, with a WARNING) unless it
#    happens to come out smaller;
# 5. fault injection and refusals: each ends in x264 (auto, with a warning where it happens
#    mid-stream) or a clear error naming the cause (require); never a hang; nothing leaked;
# 6. pictures in flight: with the device completing asynchronously, 4 pictures in flight give
#    the same stream as 1, sooner, with the source surfaces untouched until each picture is done;
# 7. driver personalities (tests/va-driver/README.md "Driver personalities"), a few cases each:
#    iHD refuses CABAC at vaEndPicture, Mesa ignores it (CAVLC slices under a CABAC PPS: caught
#    in the first picture's slice data and coded again), Mesa's SPS without VUI describes the
#    stream in avcC and in band alike, Mesa's quality level is a bit-field, advertised rate-control
#    modes refused at context creation.
#
# The whole test also runs with SWIFTVT_VA_PERSONALITY=ihd or mesa in the environment (what
# differs is expected accordingly); under a decode-only device (SWIFTVT_VA_PERSONALITY=nvdec) it
# checks that hardware=require fails clearly and auto falls back to x264, and stops there.
#
# Encoder runs go through tests/lib/run-pipeline.py (gst-launch-1.0's output format, but no hang
# when an ERROR comes before its main loop runs, which the require and fault cases provoke).
#
# Exit 0 when everything holds, 1 otherwise, 77 (skipped) without the corpus, FFmpeg or Xvfb
# (1 instead under SWIFTVT_REQUIRE_TEST_INPUTS, as in CI). Environment: SWIFTVT_PLUGIN (the
# plugin to test), SWIFTVT_CORPUS, SWIFTVT_VA_DRIVER_DIR.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/tests/lib/require.sh"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
manifest="$corpus/h264/MANIFEST.tsv"
raw_clip="$corpus/yuv/CiscoVT2people_320x192_12fps.yuv"
hd_stream="$corpus/h264/VID_1280x720_cabac_temporal_direct.264"
for input in "$manifest" "$raw_clip" "$hd_stream"; do
    require_file "$input" "vtenc-va: test corpus file ${input#"$corpus"/} not found at $corpus (set SWIFTVT_CORPUS to the folder holding h264/MANIFEST.tsv and yuv/)"
done
for tool in ffmpeg ffprobe; do
    require_command "$tool" "vtenc-va: $tool not found (Debian package ffmpeg; scripts/install-deps.sh installs it)"
done
if [ -z "${SWIFTVT_VTENC_VA_WRAPPED:-}" ]; then
    exec env SWIFTVT_VTENC_VA_WRAPPED=1 bash "$root/scripts/with-software-va.sh" bash "$0" "$@"
fi
source "$root/pipelines/lib/plugin-env.sh"
work="$swiftvt_work_dir"
source "$root/tests/lib/va-report.sh"
run_pipeline="$root/tests/lib/run-pipeline.py"
failures=0
personality="${SWIFTVT_VA_PERSONALITY:-}"
fail() {
    echo "vtenc-va: FAIL: $*"
    failures=$((failures + 1))
}
pass() { echo "vtenc-va: ok: $*"; }

# The sources, as gst-launch fragments producing I420 frames, and the MD5 of their frames.
cisco_src="filesrc location=$raw_clip ! rawvideoparse width=320 height=192 format=i420 framerate=12/1"
cisco_md5="$(md5sum <"$raw_clip" | cut -d' ' -f1)"
hd_src="filesrc location=$hd_stream ! h264parse ! avdec_h264 ! video/x-raw,format=I420"
hd_md5="$(awk -F'\t' '$1 == "VID_1280x720_cabac_temporal_direct.264" { print $8 }' "$manifest")"
# 152x100, about 60 frames, kept as a raw file (vtmultipasssink needs a seekable source).
small_raw="$work/small_152x100.yuv"
# Every gst-launch-1.0 run is bounded: one that meets an early ERROR can wait forever.
timeout 120 gst-launch-1.0 -q $hd_src ! identity eos-after=60 ! videoscale ! video/x-raw,width=152,height=100,format=I420 \
    ! filesink location="$small_raw"
small_src="filesrc location=$small_raw ! rawvideoparse width=152 height=100 format=i420 framerate=30/1"
small_md5="$(md5sum <"$small_raw" | cut -d' ' -f1)"
# identity's eos-after counts what it passes, which with the decoder's first buffers is not
# exactly 60: the clip is as many frames as the file holds.
small_frames=$(($(stat -c %s "$small_raw") / (152 * 100 * 3 / 2)))

# decoded_md5 FILE: MD5 of the I420 frames avdec_h264 decodes from the Annex B file.
decoded_md5() {
    # An empty file (a failed encode) is an early ERROR for h264parse, on which gst-launch-1.0
    # waits until the timeout: "none" at once instead.
    if [ ! -s "$1" ]; then
        echo none
        return
    fi
    timeout 120 gst-launch-1.0 -q filesrc location="$1" ! h264parse ! avdec_h264 ! video/x-raw,format=I420 ! fdsink fd=1 | md5sum | cut -d' ' -f1
}
# key_frames FILE: display-order indices of the key frames, comma separated.
key_frames() {
    ffprobe -v error -show_entries frame=key_frame -of csv=p=0 "$1" | awk '$1 == 1 { printf "%s%d", sep, NR - 1; sep = "," }'
}
# frame_count FILE
frame_count() {
    ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1"
}
# expected_keys FRAMES INTERVAL FORCED: where the key frames must be (the interval counts from
# the last key frame, forced ones included).
expected_keys() {
    awk -v n="$1" -v k="$2" -v forced=",$3," 'BEGIN {
        last = 0; out = "0"
        for (i = 1; i < n; i++) if (index(forced, "," i ",") || (k > 0 && i - last >= k)) { out = out "," i; last = i }
        print out }'
}
# encode NAME SOURCE PROPS...: vtenc hardware=require to $work/NAME.h264 (byte-stream), with the
# driver's report and parameter log; the GStreamer log in $work/NAME.log. Returns the runner's
# status: 0 at EOS, 1 after an ERROR (the require and fault cases), 124 on a hang.
encode() {
    local name="$1" source="$2"
    shift 2
    rm -f "$work/$name.report" "$work/$name.params"
    SWIFTVT_VA_REPORT="$work/$name.report" SWIFTVT_VA_PARAMLOG="$work/$name.params" \
        GST_DEBUG="vtenc:4" GST_DEBUG_NO_COLOR=1 \
        "$run_pipeline" --timeout 300 -- $source ! vtenc "$@" ! video/x-h264,stream-format=byte-stream \
        ! filesink location="$work/$name.h264" >"$work/$name.log" 2>&1
}
# clean NAME: no VALIDATION complaint, nothing leaked, the driver was terminated.
clean() {
    local report="$work/$1.report"
    [ "$(count VALIDATION "$report")" = 0 ] && [ -z "$(leaks "$report")" ] && [ "$(count "^live-objects" "$report")" -gt 0 ]
}

# A decode-only device (nvidia-vaapi-driver): vtenc hardware=require says so, auto encodes with
# x264, and there is nothing more to test on the VA-API encoder.
rm -f "$work/device-probe.report"
rc=0
SWIFTVT_VA_REPORT="$work/device-probe.report" GST_DEBUG="vtenc:4" GST_DEBUG_NO_COLOR=1 "$run_pipeline" --timeout 120 \
    -- $cisco_src ! vtenc hardware=require ! fakesink >"$work/device-probe.log" 2>&1 || rc=$?
if grep -q "ERROR.*no H.264 encoder (VAEntrypointEncSlice" "$work/device-probe.log"; then
    echo "== the VA-API device encodes no H.264 (personality ${personality:-none})"
    if [ "$rc" != 0 ] && grep -q "ERROR.*hardware=require, but .*: no H.264 encoder (VAEntrypointEncSlice or EncSliceLP" "$work/device-probe.log"; then
        pass "decode-only device, hardware=require: $(grep -m1 -o 'hardware=require, but.\{0,100\}' "$work/device-probe.log")..."
    else
        fail "decode-only device, hardware=require: exit $rc: $(grep -m1 ERROR "$work/device-probe.log")"
    fi
    rc=0
    GST_DEBUG="vtenc:4" GST_DEBUG_NO_COLOR=1 timeout 120 gst-launch-1.0 $cisco_src ! vtenc \
        ! video/x-h264,stream-format=byte-stream ! filesink location="$work/decode-only.h264" >"$work/decode-only.log" 2>&1 || rc=$?
    if [ "$rc" = 0 ] && [ "$(decoded_md5 "$work/decode-only.h264")" != none ] && [ "$(frame_count "$work/decode-only.h264")" = 9 ] \
        && grep -q "with x264" "$work/decode-only.log"; then
        pass "decode-only device, hardware=auto: x264 encodes all 9 frames"
    else
        fail "decode-only device, hardware=auto: exit $rc: $(grep -m1 -e ERROR -e 'with ' "$work/decode-only.log")"
    fi
    if [ "$failures" = 0 ]; then
        echo "vtenc-va: all checks passed (a decode-only device: the VA-API encoder sections do not apply)"
        exit 0
    fi
    echo "vtenc-va: $failures check(s) failed"
    exit 1
fi
[ "$rc" = 0 ] || fail "vtenc hardware=require on the VA-API device: exit $rc: $(grep -m1 ERROR "$work/device-probe.log")"

echo "== 1. lossless round trips through vtenc hardware=require (driver: $LIBVA_DRIVERS_PATH, display $DISPLAY)"
printf '%-26s %6s %-10s %-8s %-5s %-9s %s\n' run frames structure md5 keys b-pics result
# lossless NAME SOURCE FRAMES MD5 INTERVAL FORCED STRUCTURE PROPS...
lossless() {
    local name="$1" source="$2" frames="$3" md5="$4" interval="$5" forced="$6" structure="$7"
    shift 7
    local rc=0
    if [ -n "$forced" ]; then
        rm -f "$work/$name.report" "$work/$name.params"
        SWIFTVT_VA_REPORT="$work/$name.report" SWIFTVT_VA_PARAMLOG="$work/$name.params" timeout 330 \
            /usr/bin/python3 "$root/tests/vtenc_force_keyframes.py" "$forced" \
            "$source ! identity name=forcer ! vtenc hardware=require $* ! video/x-h264,stream-format=byte-stream ! filesink location=$work/$name.h264" \
            >"$work/$name.log" 2>&1 || rc=$?
    else
        encode "$name" "$source" hardware=require "$@" || rc=$?
    fi
    local got_md5 keys want_keys b_pictures result=ok
    got_md5="$(decoded_md5 "$work/$name.h264")"
    keys="$(key_frames "$work/$name.h264")"
    want_keys="$(expected_keys "$frames" "$interval" "$forced")"
    b_pictures="$(count "type=B" "$work/$name.params")"
    if [ "$rc" != 0 ]; then result="FAIL: exit $rc: $(grep -m1 ERROR "$work/$name.log" || tail -1 "$work/$name.log")"
    elif [ "$got_md5" != "$md5" ]; then result="FAIL: decoded MD5 $got_md5, source $md5"
    elif [ "$keys" != "$want_keys" ]; then result="FAIL: key frames $keys, expected $want_keys"
    elif [ "$structure" = IBBP ] && [ "$b_pictures" = 0 ]; then result="FAIL: no B picture"
    elif [ "$structure" != IBBP ] && [ "$b_pictures" != 0 ]; then result="FAIL: $b_pictures B pictures"
    elif ! clean "$name"; then result="FAIL: driver report: $(grep -m1 -e VALIDATION -e live-objects "$work/$name.report")"
    fi
    printf '%-26s %6s %-10s %-8s %-5s %-9s %s\n' "$name" "$frames" "$structure" "${got_md5:0:8}" \
        "$(echo "$keys" | tr ',' '\n' | grep -c .)" "$b_pictures" "$result"
    [ "$result" = ok ] || failures=$((failures + 1))
    rm -f "$work/$name.h264"
}
lossless cisco-idr-only "$cisco_src" 9 "$cisco_md5" 1 "" IDR max-keyframe-interval=1
lossless cisco-ippp "$cisco_src" 9 "$cisco_md5" 4 "" IPPP allow-frame-reordering=false max-keyframe-interval=4
lossless cisco-ibbp "$cisco_src" 9 "$cisco_md5" 4 "" IBBP max-keyframe-interval=4
lossless cisco-ibbp-forced "$cisco_src" 9 "$cisco_md5" 0 "2,7" IBBP
# A device that takes no packed headers writes its own SPS, PPS and slice headers from the VA
# parameters: the stream is described by the device's parameter sets, still lossless.
SWIFTVT_VA_ENCODE_PACKED=none lossless cisco-device-headers "$cisco_src" 9 "$cisco_md5" 4 "" IBBP max-keyframe-interval=4
lossless small-idr-only "$small_src" "$small_frames" "$small_md5" 1 "" IDR max-keyframe-interval=1
lossless small-ippp "$small_src" "$small_frames" "$small_md5" 30 "" IPPP allow-frame-reordering=false max-keyframe-interval=30
lossless small-ibbp-forced "$small_src" "$small_frames" "$small_md5" 24 "7,40" IBBP max-keyframe-interval=24
lossless hd-idr-only "$hd_src" 300 "$hd_md5" 1 "" IDR max-keyframe-interval=1
lossless hd-ippp "$hd_src" 300 "$hd_md5" 60 "" IPPP allow-frame-reordering=false max-keyframe-interval=60
lossless hd-ibbp-forced "$hd_src" 300 "$hd_md5" 60 "45,100" IBBP max-keyframe-interval=60
if grep -Eq "^encconfig .*packed=(0|0x0)( |$)" "$work/cisco-device-headers.params"; then
    pass "cisco-device-headers: the config asked for no packed header, so the device's own SPS/PPS describe the stream"
else
    fail "cisco-device-headers: $(grep -m1 encconfig "$work/cisco-device-headers.params")"
fi
# The cropping is in the SPS SwiftVT wrote: 152x100 coded as 10x7 macroblocks.
if grep -q "mbs=10x7 frame_cropping=1 crop=0,4,0,6" "$work/small-ippp.params"; then
    pass "152x100 is coded as 10x7 macroblocks with frame_crop_right_offset 4, frame_crop_bottom_offset 6"
else
    fail "152x100: sequence parameters $(grep -m1 encseq "$work/small-ippp.params")"
fi

echo "== 2. FFmpeg's VA encoder (h264_vaapi) through the same driver, compared with SwiftVT's"
# Both clients are asked for the same stream: High profile, CAVLC, an IDR every 4 frames, I P P P
# or I P B B (two B pictures, coded after their anchor). What must agree is what the driver saw:
# the sequence parameters and, per picture in coding order, its type, IDR and reference flags,
# frame_num, POC, the reference frames and both lists. Not compared: the QPs (each client's rate
# control), which packed headers were used (FFmpeg sends its PPS with the SPS), and POC units:
# SwiftVT counts two per frame (one per field, as x264 and the JM do), FFmpeg one, so SwiftVT's
# POCs are halved before the comparison.
ffmpeg_encode() {
    rm -f "$work/ffmpeg-$1.params"
    SWIFTVT_VA_PARAMLOG="$work/ffmpeg-$1.params" SWIFTVT_VA_REPORT="$work/ffmpeg-$1.report" timeout 300 ffmpeg -v error -y \
        -init_hw_device vaapi=va:"$DISPLAY",connection_type=x11 -filter_hw_device va \
        -f rawvideo -pix_fmt yuv420p -s 320x192 -r 12 -i "$raw_clip" -vf format=nv12,hwupload \
        -c:v h264_vaapi -coder cavlc -profile:v high -g 4 -bf "$2" "$work/ffmpeg-$1.h264" >"$work/ffmpeg-$1.log" 2>&1
}
# pictures PARAMS HALVE: the compared fields of the sequence and picture lines.
pictures() {
    grep -e '^encseq' -e '^encpic' "$1" | sed -E 's/ qp=[0-9]+//; s/ bits_per_second=[0-9]+//' | awk -v halve="$2" '
        halve == 1 && /^encpic/ {
            for (i = 1; i <= NF; i++) if ($i ~ /^(poc|refs|l0|l1)=/) {
                split($i, kv, "="); n = split(kv[2], values, ","); out = ""
                for (j = 1; j <= n; j++) out = out (j > 1 ? "," : "") (values[j] == "-" ? "-" : values[j] / 2)
                $i = kv[1] "=" out
            }
        }
        { print }'
}
for structure in ippp ibbp; do
    bframes=0
    props=(allow-frame-reordering=false)
    if [ "$structure" = ibbp ]; then bframes=2; props=(); fi
    rc=0
    ffmpeg_encode "$structure" "$bframes" || rc=$?
    encode "swiftvt-$structure" "$cisco_src" hardware=require entropy-mode=cavlc max-keyframe-interval=4 "${props[@]}" || rc=$?
    ffmpeg_md5="$(decoded_md5 "$work/ffmpeg-$structure.h264")"
    swiftvt_md5="$(decoded_md5 "$work/swiftvt-$structure.h264")"
    pictures "$work/ffmpeg-$structure.params" 0 >"$work/ffmpeg-$structure.compared"
    pictures "$work/swiftvt-$structure.params" 1 >"$work/swiftvt-$structure.compared"
    lines="$(grep -c . "$work/ffmpeg-$structure.compared" || true)"
    if [ "$rc" != 0 ]; then
        fail "$structure: an encoder failed (exit $rc): $(cat "$work/ffmpeg-$structure.log") $(grep -m1 ERROR "$work/swiftvt-$structure.log")"
    elif [ "$ffmpeg_md5" != "$cisco_md5" ] || [ "$swiftvt_md5" != "$cisco_md5" ]; then
        fail "$structure: not lossless (FFmpeg $ffmpeg_md5, SwiftVT $swiftvt_md5, source $cisco_md5)"
    elif ! diff "$work/ffmpeg-$structure.compared" "$work/swiftvt-$structure.compared" >"$work/$structure.diff"; then
        fail "$structure: the parameters differ (< FFmpeg, > SwiftVT):"
        head -20 "$work/$structure.diff"
    elif [ "$(count VALIDATION "$work/ffmpeg-$structure.report")" != 0 ] || [ -n "$(leaks "$work/ffmpeg-$structure.report")" ]; then
        fail "$structure: FFmpeg's run has validation complaints or leaks"
    else
        pass "$structure: FFmpeg and SwiftVT both lossless ($cisco_md5); $lines sequence/picture lines identical, e.g. $(grep -m1 'type=B' "$work/swiftvt-$structure.compared" || grep -m1 'type=P' "$work/swiftvt-$structure.compared")"
    fi
done

echo "== 3. rate control, HRD, frame rate and quality level as the driver received them"
# expect_line NAME PATTERN WHAT: the parameter log of run NAME has a line matching PATTERN.
expect_line() {
    if grep -q -- "$2" "$work/$1.params"; then pass "$1: $3 ($(grep -m1 -- "$2" "$work/$1.params"))"
    else fail "$1: $3: no line matching '$2' in: $(grep -e encconfig -e encmisc "$work/$1.params" | sort -u | tr '\n' ';')"; fi
}
encode rc-cbr "$cisco_src" hardware=require rate-control=cbr bitrate=500 || fail "rc-cbr: exit $?"
expect_line rc-cbr "^encconfig .*rc=cbr" "CBR config"
# cbr = bitrate=500 as a hard limit of 62500 bytes over any second (DataRateBuffer, 12 pictures a
# second): a quarter of it buffer, 125000 bits (3/4 full at the start), the rest arriving over the
# 11/12 s a window of 12 pictures spans: 375000 / (11/12) = 409090 bit/s.
expect_line rc-cbr "^encmisc ratecontrol bits_per_second=409090 target_percentage=100 window_size=1000 " "CBR at the rate that holds 500 kbit over every second"
expect_line rc-cbr "^encmisc hrd buffer_size=125000 initial_buffer_fullness=93750" "HRD buffer of a quarter second, 3/4 full"
expect_line rc-cbr "^encmisc framerate 12/1" "frame rate 12/1"
if [ "$personality" = mesa ]; then
    # radeonsi's EncQualityRange (32) is the size of a bit-field (Mesa vlVaQualityBits), not a
    # number of levels: the balanced preset is valid bit + preset 1.
    expect_line rc-cbr "^encmisc quality level=3 bitfield=valid:1,preset:balanced,pre_encode:0,vbaq:0" "quality bit-field 3: balanced preset"
else
    expect_line rc-cbr "^encmisc quality level=4" "quality level 4 of 7 (balanced)"
fi
expect_line rc-cbr "^encseq .*bits_per_second=409090" "sequence bits_per_second"
expect_line rc-cbr "^encseq .*timing=1/24" "VUI timing 1/24 (two ticks a frame)"
encode rc-vbr "$hd_src ! identity eos-after=30" hardware=require bitrate=800 data-rate-limits="200000,1" realtime=true \
    || fail "rc-vbr: exit $?"
expect_line rc-vbr "^encconfig .*rc=vbr" "VBR config for an average bit rate under a peak"
# The 200000-byte limit over any second at 30 pictures a second: 400000 bits of buffer, peak
# 1200000 / (29/30) = 1241379 bit/s; the average 800 kbit/s is 64 % of it.
expect_line rc-vbr "^encmisc ratecontrol bits_per_second=1241379 target_percentage=64 window_size=1000 " "VBR peak 1.24 Mbit/s, target 64 %"
expect_line rc-vbr "^encmisc hrd buffer_size=400000 " "HRD buffer = a quarter of the 200000-byte window"
if [ "$personality" = mesa ]; then
    expect_line rc-vbr "^encmisc quality level=0\$" "realtime: quality 0, Mesa's speed preset"
else
    expect_line rc-vbr "^encmisc quality level=7" "realtime: the fastest quality level (7 of 7)"
fi
if [ "$(count "type=B" "$work/rc-vbr.params")" = 0 ]; then pass "rc-vbr: realtime codes no B pictures"; else fail "rc-vbr: B pictures in realtime"; fi
encode rc-cqp "$cisco_src" hardware=require rate-control=quality quality=0.6 max-keyframe-interval=4 || fail "rc-cqp: exit $?"
expect_line rc-cqp "^encconfig .*rc=cqp" "constant QP for rate-control=quality"
if [ "$personality" = mesa ]; then
    # Old Mesa codes every picture at pic_init_qp (slice_qp_delta is not read): the P pictures' QP.
    expect_line rc-cqp "^encpic type=I .*qp=20" "I pictures at pic_init_qp 20 (old Mesa reads no slice_qp_delta)"
    expect_line rc-cqp "^encpic type=B .*qp=20" "B pictures at pic_init_qp 20"
else
    expect_line rc-cqp "^encpic type=I .*qp=17" "I pictures at QP 17 (51 x 0.4 - 3)"
    expect_line rc-cqp "^encpic type=B .*qp=22" "B pictures at QP 22"
fi
expect_line rc-cqp "^encpic type=P .*qp=20" "P pictures at QP 20"
# The P pictures' QP travels in the PPS too (pic_init_qp 20, slice_qp_delta -3/0/+2), for drivers
# that read only pic_init_qp; FFmpeg's bitstream tracer reads the PPS SwiftVT wrote.
init_qp="$(ffmpeg -v trace -i "$work/rc-cqp.h264" -c copy -bsf:v trace_headers -f null - 2>&1 \
    | grep -m1 -o 'pic_init_qp_minus26 .*= *-\?[0-9]*' | grep -o -- '-\?[0-9]*$' || true)"
if [ "$init_qp" = "-6" ]; then pass "rc-cqp: PPS pic_init_qp_minus26 $init_qp (QP 20, the P pictures')"
else fail "rc-cqp: PPS pic_init_qp_minus26 '$init_qp', expected -6 (pic_init_qp 20)"; fi
if grep "^encmisc ratecontrol" "$work/rc-cqp.params" >/dev/null; then fail "rc-cqp: a rate-control misc parameter in CQP mode"; fi
for run in rc-cbr rc-vbr rc-cqp; do clean "$run" || fail "$run: driver report: $(grep -m1 -e VALIDATION -e live-objects "$work/$run.report")"; done

echo "== 4. vtmultipasssink hardware=require"
rm -f "$work/mp.report" "$work/mp.params"
rc=0
SWIFTVT_VA_REPORT="$work/mp.report" SWIFTVT_VA_PARAMLOG="$work/mp.params" timeout 300 gst-launch-1.0 -m $small_src \
    ! vtmultipasssink hardware=require location="$work/mp.mp4" bitrate=300 max-passes=3 >"$work/mp.log" 2>&1 || rc=$?
done_line="$(grep -m1 "vtmultipasssink-done" "$work/mp.log" || true)"
passes="$(echo "$done_line" | sed -n 's/.*passes=(u\?int)\([0-9]*\).*/\1/p')"
reencoded="$(echo "$done_line" | sed -n 's/.*frames-reencoded=(u\?int)\([0-9]*\).*/\1/p')"
mp_frames="$(frame_count "$work/mp.mp4" 2>/dev/null || echo 0)"
mp_md5="$(timeout 120 gst-launch-1.0 -q filesrc location="$work/mp.mp4" ! qtdemux ! h264parse ! avdec_h264 ! video/x-raw,format=I420 ! fdsink fd=1 | md5sum | cut -d' ' -f1)"
cqp_configs="$(count "^encconfig .*rc=cqp" "$work/mp.params")"
pass_2_kept=no
[ "${passes:-0}" -ge 2 ] && [ "${reencoded:-0}" -gt 0 ] && pass_2_kept=yes
grep -q "WARNING.*pass 2 came out farther from bitrate=300 kbit/s" "$work/mp.log" && pass_2_kept="taken back"
if [ "$rc" = 0 ] && [ "$pass_2_kept" != no ] && grep -q "Progress: (pass-2) pass 2 complete (62 frames)" "$work/mp.log" \
    && [ "$mp_frames" = "$small_frames" ] && [ "$mp_md5" = "$small_md5" ] && [ "$cqp_configs" -gt 0 ] && clean mp; then
    pass "vtmultipasssink on VA-API: pass 2 re-encoded 62 frames on the device (constant-QP configs: $cqp_configs), pass 2 $pass_2_kept, $passes pass(es) in the file, $mp_frames frames, lossless, nothing leaked"
else
    fail "vtmultipasssink: exit $rc, passes ${passes:-?}, re-encoded ${reencoded:-?}, $mp_frames frames, md5 $mp_md5 (source $small_md5), cqp configs $cqp_configs: $(grep -m1 ERROR "$work/mp.log" || echo "$done_line")"
fi
grep -m1 "with VA-API" "$work/mp.log" >/dev/null || grep -q "vtmultipasssink-done" "$work/mp.log" || true

echo "== 5. fault injection and refusals"
printf '%-18s %-8s %-6s %-7s %s\n' case policy exit frames result
# fault CASE POLICY EXPECT ENV... -- PROPS...: EXPECT is "fallback" (exit 0, 9 frames decodable,
# x264 named), "warn:PATTERN" (exit 0, 9 frames, a WARNING matching PATTERN) or "error:PATTERN"
# (exit != 0, an ERROR matching PATTERN).
fault() {
    local name="$1" policy="$2" expect="$3"
    shift 3
    local environment=()
    while [ "$1" != "--" ]; do environment+=("$1"); shift; done
    shift
    local rc=0
    (export "${environment[@]}"; encode "fault-$name-$policy" "$cisco_src" hardware="$policy" max-keyframe-interval=4 "$@") || rc=$?
    local log="$work/fault-$name-$policy.log" out="$work/fault-$name-$policy.h264"
    local frames=0 result=ok
    [ -s "$out" ] && frames="$(frame_count "$out" 2>/dev/null || echo 0)"
    case "$expect" in
        fallback)
            if [ "$rc" != 0 ] || [ "$frames" != 9 ]; then result="FAIL: expected x264 to encode all 9 frames"
            elif ! grep -q "with x264" "$log"; then result="FAIL: the log does not say x264 encoded"; fi ;;
        warn:*)
            if [ "$rc" != 0 ] || [ "$frames" != 9 ]; then result="FAIL: expected 9 frames"
            elif ! grep -q "WARNING.*${expect#warn:}" "$log"; then result="FAIL: no warning matching '${expect#warn:}'"; fi ;;
        error:*)
            if [ "$rc" = 0 ]; then result="FAIL: expected an error"
            elif ! grep -q "ERROR.*${expect#error:}" "$log"; then result="FAIL: no error matching '${expect#error:}': $(grep -m1 ERROR "$log")"; fi ;;
    esac
    if [ -f "$work/fault-$name-$policy.report" ] && [ -n "$(leaks "$work/fault-$name-$policy.report")" ]; then
        result="FAIL: leaked $(leaks "$work/fault-$name-$policy.report")"
    fi
    printf '%-18s %-8s %-6s %-7s %s\n' "$name" "$policy" "$rc" "$frames" "$result"
    [ "$result" = ok ] || { failures=$((failures + 1)); grep -m3 -e ERROR -e WARNING "$log" || true; }
}
fault create-config auto fallback SWIFTVT_VA_FAIL=create-config --
fault create-config require "error:vaCreateConfig" SWIFTVT_VA_FAIL=create-config --
fault create-context auto fallback SWIFTVT_VA_FAIL=create-context --
fault create-context require "error:vaCreateContext" SWIFTVT_VA_FAIL=create-context --
fault create-surfaces auto fallback SWIFTVT_VA_FAIL=create-surfaces --
fault create-surfaces require "error:vaCreateSurfaces" SWIFTVT_VA_FAIL=create-surfaces --
fault busy auto fallback SWIFTVT_VA_BUSY=1 --
fault busy require "error:vaInitialize" SWIFTVT_VA_BUSY=1 --
fault end-picture-5 auto "warn:VA-API.*failed.*x264" SWIFTVT_VA_FAIL_END_PICTURE=5 --
fault end-picture-5 require "error:vaEndPicture.*hardware=require allows no software fallback" SWIFTVT_VA_FAIL_END_PICTURE=5 --
fault overflow-3 auto "warn:did not fit in the" SWIFTVT_VA_FAIL_CODED=overflow:3 --
fault overflow-3 require "error:did not fit in the" SWIFTVT_VA_FAIL_CODED=overflow:3 --
fault bad-bitstream-3 auto "warn:bad bitstream" SWIFTVT_VA_FAIL_CODED=bad-bitstream:3 --
fault bad-bitstream-3 require "error:bad bitstream" SWIFTVT_VA_FAIL_CODED=bad-bitstream:3 --
# CABAC: refused (this driver at vaRenderPicture, iHD at vaEndPicture) or ignored (Mesa).
fault cabac auto "warn:entropy-mode: the VA-API encoder \(refused\|ignored\) CABAC" SWIFTVT_VA_LOG=0 -- entropy-mode=cabac
fault cabac require "error:\(refused\|ignored\) CABAC" SWIFTVT_VA_LOG=0 -- entropy-mode=cabac
# Rate-control modes advertised and then refused at vaCreateContext: the other bit-rate mode
# with a warning (auto) or a clear error (require); constant QP refused everywhere ends in x264.
fault refuses-vbr auto "warn:bitrate: the VA-API device advertises VBR rate control but refused a context with it.*encoding CBR instead" \
    SWIFTVT_VA_CONTEXT_REFUSES_RC=vbr -- bitrate=800
fault refuses-vbr require "error:advertises VBR rate control but refused a context with it.*hardware=require" \
    SWIFTVT_VA_CONTEXT_REFUSES_RC=vbr -- bitrate=800
fault refuses-cqp auto fallback SWIFTVT_VA_CONTEXT_REFUSES_RC=cqp --
fault refuses-cqp require "error:advertises CQP rate control but refused a context with it" SWIFTVT_VA_CONTEXT_REFUSES_RC=cqp --
fault no-vbr auto "warn:bitrate: the VA-API encoder has no VBR" SWIFTVT_VA_ENCODE_RC=cqp,cbr -- bitrate=800
fault no-vbr require "error:(bitrate).*no VBR" SWIFTVT_VA_ENCODE_RC=cqp,cbr -- bitrate=800
fault no-cqp auto fallback SWIFTVT_VA_ENCODE_RC=cbr,vbr --
fault no-cqp require "error:no constant-QP rate control" SWIFTVT_VA_ENCODE_RC=cbr,vbr --
# After a mid-stream failure the stream goes on in x264 from an IDR picture: every frame is
# there, the frames before the failure came from the device (lossless), and the decode time
# stamps stay in order (h264parse and avdec_h264 decoded all 9 above).
if [ "$(grep -c "type=" "$work/fault-end-picture-5-auto.params" 2>/dev/null || echo 0)" -ge 4 ]; then
    pass "end-picture-5 auto: the device coded $(grep -c "^encpic" "$work/fault-end-picture-5-auto.params") pictures before the failure, x264 the rest"
else
    fail "end-picture-5 auto: the device's pictures are not in the parameter log"
fi
# CABAC refused under auto: the stream is CAVLC and still lossless.
cabac_md5="$(decoded_md5 "$work/fault-cabac-auto.h264")"
if [ "$cabac_md5" = "$cisco_md5" ] && grep -q "^encpic .*entropy=cavlc" "$work/fault-cabac-auto.params"; then
    pass "entropy-mode=cabac refused by the device: CAVLC, lossless"
else
    fail "entropy-mode=cabac under auto: md5 $cabac_md5, $(grep -m1 encpic "$work/fault-cabac-auto.params")"
fi

# An advertised VBR refused at vaCreateContext: CBR, still lossless.
if grep -q "^encconfig .*rc=cbr" "$work/fault-refuses-vbr-auto.params" && [ "$(decoded_md5 "$work/fault-refuses-vbr-auto.h264")" = "$cisco_md5" ]; then
    pass "VBR refused at vaCreateContext: the stream is CBR ($(grep -c "^encconfig" "$work/fault-refuses-vbr-auto.params") configs made), lossless"
else
    fail "VBR refused at vaCreateContext, auto: $(grep "^encconfig" "$work/fault-refuses-vbr-auto.params" | tr '\n' ';')"
fi

echo "== 6. pictures in flight: SWIFTVT_VA_ASYNC_DEPTH 1 and 4, the device completing 20 ms after vaEndPicture"
# The same stream and time stamps either way; 4 in flight overlap the device's latency (62 x 20
# ms waited one by one take over a second); the driver checks that no source surface is written
# before its picture is complete (a VALIDATION line).
declare -A depth_ms
for depth in 1 4; do
    rm -f "$work/depth-$depth.report"
    started=$(date +%s%N)
    rc=0
    SWIFTVT_VA_LATENCY_MS=20 SWIFTVT_VA_ASYNC_DEPTH=$depth SWIFTVT_VA_REPORT="$work/depth-$depth.report" GST_DEBUG="vtenc:4" \
        GST_DEBUG_NO_COLOR=1 "$run_pipeline" --timeout 300 -- $small_src ! vtenc hardware=require max-keyframe-interval=24 \
        ! h264parse ! mp4mux ! filesink location="$work/depth-$depth.mp4" >"$work/depth-$depth.log" 2>&1 || rc=$?
    depth_ms[$depth]=$((($(date +%s%N) - started) / 1000000))
    [ "$rc" = 0 ] || fail "depth $depth: exit $rc: $(grep -m1 ERROR "$work/depth-$depth.log")"
    ffprobe -v error -show_entries packet=pts,dts,flags -of csv=p=0 "$work/depth-$depth.mp4" >"$work/depth-$depth.packets"
    ffmpeg -v error -i "$work/depth-$depth.mp4" -c copy -bsf:v h264_mp4toannexb -f h264 - | md5sum | cut -d' ' -f1 >"$work/depth-$depth.md5"
done
depth_md5="$(timeout 120 gst-launch-1.0 -q filesrc location="$work/depth-4.mp4" ! qtdemux ! h264parse ! avdec_h264 ! video/x-raw,format=I420 ! fdsink fd=1 | md5sum | cut -d' ' -f1)"
delays="$(grep -ho "[0-9]* frames of delay" "$work/depth-1.log" "$work/depth-4.log" | tr '\n' ',')"
if [ "$depth_md5" != "$small_md5" ]; then fail "depth 4: decoded MD5 $depth_md5, source $small_md5"
elif ! cmp -s "$work/depth-1.packets" "$work/depth-4.packets"; then fail "depth 1 and 4: the packets' pts/dts/flags differ"
elif ! cmp -s "$work/depth-1.md5" "$work/depth-4.md5"; then fail "depth 1 and 4: the coded streams differ"
elif [ "$delays" != "2 frames of delay,5 frames of delay," ]; then fail "frame delays reported: $delays (expected 2, then 5: two B pictures + 3 more in flight)"
elif ! clean depth-1 || ! clean depth-4; then fail "depth runs: driver report: $(grep -h -m1 -e VALIDATION -e live-objects "$work/depth-1.report" "$work/depth-4.report")"
elif [ $((depth_ms[4] * 4)) -ge $((depth_ms[1] * 3)) ]; then fail "4 in flight took ${depth_ms[4]} ms, 1 in flight ${depth_ms[1]} ms: not faster"
else
    pass "depth 1 and 4: identical stream and time stamps ($(grep -c . "$work/depth-4.packets") packets), lossless, $delays ${depth_ms[1]} ms vs ${depth_ms[4]} ms"
fi

echo "== 7. driver personalities"
# In-band and avcC SPS of a run: the first SPS NAL unit of an Annex B stream, as hex.
first_sps() {
    /usr/bin/python3 -c '
import sys
data = open(sys.argv[1], "rb").read()
units = [u.lstrip(b"\x00") for u in data.split(b"\x00\x00\x01")]
print(next((u.hex() for u in units if u and u[0] & 0x1f == 7), "none"))' "$1"
}
# personality_encode PERSONALITY NAME PROPS...: encode (above) with the driver behaving like one.
personality_encode() {
    local p="$1"
    shift
    SWIFTVT_VA_PERSONALITY="$p" encode "$@"
}
# Uploads without vaDeriveImage (refused) under iHD's image IDs, which start at 0: the picture goes
# through vaCreateImage + vaPutImage, and no image is destroyed that the driver never gave (a zeroed
# VAImage after a refused derive named image 0, another session's image on iHD).
rc=0
SWIFTVT_VA_NO_DERIVE=1 personality_encode ihd ihd-no-derive "$cisco_src" hardware=require entropy-mode=cavlc max-keyframe-interval=4 || rc=$?
if [ "$rc" = 0 ] && [ "$(decoded_md5 "$work/ihd-no-derive.h264")" = "$cisco_md5" ] && clean ihd-no-derive; then
    pass "ihd, derive refused: uploads through vaPutImage, lossless, no image destroyed that was never created"
else
    fail "ihd, derive refused: exit $rc: $(grep -m1 ERROR "$work/ihd-no-derive.log") $(grep -m1 VALIDATION "$work/ihd-no-derive.report")"
fi
# iHD refuses CABAC at vaEndPicture (the High profile's default): the first picture goes again in CAVLC.
rc=0
personality_encode ihd ihd-cabac "$cisco_src" hardware=require max-keyframe-interval=4 || rc=$?
if [ "$rc" = 0 ] && [ "$(decoded_md5 "$work/ihd-cabac.h264")" = "$cisco_md5" ] && grep -q "REFUSED.*CABAC.*at vaEndPicture" "$work/ihd-cabac.report" \
    && ! grep -q "^encpic .*entropy=cabac" "$work/ihd-cabac.params" && clean ihd-cabac; then
    pass "ihd: CABAC refused at vaEndPicture, coded again in CAVLC, lossless"
else
    fail "ihd CABAC: exit $rc: $(grep -m1 ERROR "$work/ihd-cabac.log") $(grep -m1 -e REFUSED -e VALIDATION "$work/ihd-cabac.report")"
fi
# iHD with constant QP refused on every entrypoint: EncSlice, then EncSliceLP (CQP only) are tried.
rc=0
SWIFTVT_VA_CONTEXT_REFUSES_RC=cqp personality_encode ihd ihd-refuses-cqp "$cisco_src" hardware=require || rc=$?
if [ "$rc" != 0 ] && grep -q "ERROR.*advertises CQP rate control but refused a context with it on VAEntrypointEncSlice and VAEntrypointEncSliceLP" "$work/ihd-refuses-cqp.log" \
    && [ "$(count "^encconfig .*rc=cqp" "$work/ihd-refuses-cqp.params")" = 2 ]; then
    pass "ihd: constant QP refused by EncSlice, then by EncSliceLP: $(grep -m1 -o 'advertises CQP.\{0,100\}' "$work/ihd-refuses-cqp.log")"
else
    fail "ihd CQP refused: exit $rc: $(grep -m1 ERROR "$work/ihd-refuses-cqp.log"), $(count "^encconfig" "$work/ihd-refuses-cqp.params") configs"
fi
# Mesa stores CABAC and writes CAVLC slices: seen in the first picture's slice data, coded again.
rc=0
personality_encode mesa mesa-cabac "$cisco_src" hardware=require max-keyframe-interval=4 || rc=$?
entropies="$(grep "^encpic" "$work/mesa-cabac.params" | grep -o "entropy=[a-z]*" | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')"
if [ "$rc" = 0 ] && [ "$(decoded_md5 "$work/mesa-cabac.h264")" = "$cisco_md5" ] && [ "$entropies" = "entropy=cabac x1, entropy=cavlc x9" ] && clean mesa-cabac; then
    pass "mesa: CABAC ignored, caught in the first picture, which is coded again in CAVLC: $entropies pictures, lossless"
else
    fail "mesa CABAC: exit $rc, pictures $entropies, md5 $(decoded_md5 "$work/mesa-cabac.h264"): $(grep -m1 ERROR "$work/mesa-cabac.log")"
fi
# Mesa's SPS has no VUI: it describes the stream in band and in avcC alike, with a warning.
rc=0
SWIFTVT_VA_PERSONALITY=mesa "$run_pipeline" --timeout 120 -- $cisco_src ! vtenc hardware=require entropy-mode=cavlc \
    ! video/x-h264,stream-format=avc ! mp4mux ! filesink location="$work/mesa-vui.mp4" >"$work/mesa-vui.log" 2>&1 || rc=$?
ffmpeg -v error -y -i "$work/mesa-vui.mp4" -c copy -bsf:v h264_mp4toannexb "$work/mesa-vui-avcc.h264" || rc=$?
in_band="$(first_sps "$work/mesa-cabac.h264")"
from_avcc="$(first_sps "$work/mesa-vui-avcc.h264")"
vui_flag="$(ffmpeg -v trace -i "$work/mesa-cabac.h264" -c copy -bsf:v trace_headers -f null - 2>&1 | grep -m1 -o 'vui_parameters_present_flag *[0-9]* *= *[0-9]*' | grep -o '[0-9]*$' || true)"
if [ "$rc" = 0 ] && [ "$in_band" != none ] && [ "$in_band" = "$from_avcc" ] && [ "$vui_flag" = 0 ] \
    && grep -q "WARNING.*the VA-API device wrote its own SPS without timing" "$work/mesa-cabac.log"; then
    pass "mesa: the device's SPS (no VUI) in band and in avcC alike ($in_band), $(grep -m1 -o 'wrote its own SPS without.\{0,60\}' "$work/mesa-cabac.log")..."
else
    fail "mesa SPS: exit $rc, in band $in_band, avcC $from_avcc, vui_parameters_present_flag '$vui_flag'"
fi
if grep -q "^encmisc quality level=3 bitfield=valid:1,preset:balanced,pre_encode:0,vbaq:0" "$work/mesa-cabac.params"; then
    pass "mesa: the quality level as radeonsi's bit-field: $(grep -m1 '^encmisc quality' "$work/mesa-cabac.params")"
else
    fail "mesa quality level: $(grep -m1 '^encmisc quality' "$work/mesa-cabac.params")"
fi
# nvidia-vaapi-driver decodes only: require says so, auto is x264.
rc=0
SWIFTVT_VA_PERSONALITY=nvdec "$run_pipeline" --timeout 120 --expect error -- $cisco_src ! vtenc hardware=require ! fakesink \
    >"$work/nvdec-require.log" 2>&1 || rc=$?
if [ "$rc" = 0 ] && grep -q "ERROR.*hardware=require, but .*NVDEC.*: no H.264 encoder" "$work/nvdec-require.log"; then
    pass "nvdec, hardware=require: $(grep -m1 -o 'no H.264 encoder.\{0,40\}' "$work/nvdec-require.log")..."
else
    fail "nvdec, require: exit $rc: $(grep -m1 ERROR "$work/nvdec-require.log")"
fi
rc=0
SWIFTVT_VA_PERSONALITY=nvdec GST_DEBUG="vtenc:4" GST_DEBUG_NO_COLOR=1 timeout 120 gst-launch-1.0 $cisco_src ! vtenc \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$work/nvdec-auto.h264" >"$work/nvdec-auto.log" 2>&1 || rc=$?
if [ "$rc" = 0 ] && [ "$(frame_count "$work/nvdec-auto.h264")" = 9 ] && grep -q "with x264" "$work/nvdec-auto.log"; then
    pass "nvdec, hardware=auto: x264 encodes all 9 frames"
else
    fail "nvdec, auto: exit $rc"
fi

echo "== no VA device"
rc=0
env -u DISPLAY GST_DEBUG="vtenc:4" GST_DEBUG_NO_COLOR=1 timeout 120 gst-launch-1.0 $cisco_src ! vtenc \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$work/nodevice.h264" >"$work/nodevice.log" 2>&1 || rc=$?
if [ "$rc" = 0 ] && [ "$(frame_count "$work/nodevice.h264")" = 9 ] && grep -q "with x264" "$work/nodevice.log"; then
    pass "no VA device, hardware=auto: x264 encodes all 9 frames"
else
    fail "no VA device, auto: exit $rc"
fi
rc=0
env -u DISPLAY "$run_pipeline" --timeout 120 --expect error -- $cisco_src ! vtenc hardware=require ! fakesink >"$work/nodevice-require.log" 2>&1 || rc=$?
if [ "$rc" = 0 ] && grep -q "ERROR.*hardware=require, but no VA-API device here encodes H.264.*X11: DISPLAY is not set" "$work/nodevice-require.log"; then
    pass "no VA device, hardware=require: $(grep -m1 -o 'hardware=require, but.\{0,60\}' "$work/nodevice-require.log")..."
else
    fail "no VA device, require: exit $rc: $(grep -m1 ERROR "$work/nodevice-require.log")"
fi

if [ "$failures" = 0 ]; then
    echo "vtenc-va: all checks passed"
    exit 0
fi
echo "vtenc-va: $failures check(s) failed"
exit 1
