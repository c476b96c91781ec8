#!/usr/bin/env bash
# FFmpeg's own VA-API encoder (h264_vaapi, an independent client) on the encoding side of
# SwiftVT's software VA driver (tests/va-driver/), on an Xvfb display through
# scripts/with-software-va.sh: proof that the driver is a valid H.264 encoder.
#
# 1. A raw clip of the corpus (yuv/CiscoVT2people_320x192_12fps.yuv, looped to 36 frames so that
#    -g 30 starts a second IDR) and a 152x100 cut of it (frame cropping) are encoded with
#      ffmpeg -init_hw_device vaapi=va:$DISPLAY,connection_type=x11 -filter_hw_device va
#             -f rawvideo ... -i CLIP -vf format=nv12,hwupload -c:v h264_vaapi OPTIONS out.h264
#    in several configurations (High IP and IBBP, Constrained Baseline, Main CBR, the cut with B
#    pictures, the cut with every header written by the driver, a VBR fallback when the driver
#    offers no CBR). The driver's output is lossless (I_PCM), so out.h264 decoded by FFmpeg's h264
#    decoder and by GStreamer's avdec_h264 must give exactly the source frames (MD5 of all frames),
#    with no VALIDATION, REFUSED or ENCODE line in the driver's report, no VA object left at
#    vaTerminate, and a parameter log (SWIFTVT_VA_PARAMLOG) that says what FFmpeg asked for;
# 2. refusals and failures end cleanly: -coder cabac (REFUSED at vaRenderPicture), CBR when the
#    driver offers CQP only (SWIFTVT_VA_ENCODE_RC), a failed vaEndPicture, the create-* faults, a
#    busy device; every run is under timeout;
# 3. the validation layer is alive: a simulated client bug (SWIFTVT_VA_TAMPER=encode-frame-num,
#    encode-ref-list) is reported, naming the field, and fails the picture;
# 4. driver personalities (SWIFTVT_VA_PERSONALITY, tests/va-driver/README.md): iHD's EncSliceLP is
#    CQP only and CABAC fails at vaEndPicture; old Mesa encodes at pic_init_qp (FFmpeg's B-picture
#    slice_qp_delta is lost), regenerates the SPS without VUI, reads the quality level as a
#    bit-field and ignores CABAC (FFmpeg "succeeds" with a broken stream); nvidia-vaapi-driver
#    has no encoder. The whole test also runs with SWIFTVT_VA_PERSONALITY set in the environment:
#    under nvdec every configuration must then fail cleanly ("No usable encoding entrypoint"),
#    under ihd the CABAC refusal comes from vaEndPicture, under mesa CABAC is checked in 4.
#
# Prints PASS/FAIL per check. Exit 0 when everything holds, 1 otherwise, 77 (skipped) when the
# corpus clip, FFmpeg (with h264_vaapi) or Xvfb is missing, like the other corpus tests (1 instead
# under SWIFTVT_REQUIRE_TEST_INPUTS, as in CI; so is a missing avdec_h264, which locally skips
# only that decoder's check). Environment: SWIFTVT_CORPUS (default ../shared/corpus),
# SWIFTVT_VA_DRIVER_DIR (where the driver is built).
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/tests/lib/require.sh"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
clip="$corpus/yuv/CiscoVT2people_320x192_12fps.yuv"
clip_width=320
clip_height=192
require_file "$clip" "va-encode-ffmpeg: the corpus clip $clip is missing (set SWIFTVT_CORPUS to the folder holding yuv/)"
require_command ffmpeg "va-encode-ffmpeg: ffmpeg not found (Debian package ffmpeg; scripts/install-deps.sh installs it)"
encoders="$(ffmpeg -hide_banner -encoders 2>/dev/null || true)"
if [[ "$encoders" != *h264_vaapi* ]]; then
    require_input "va-encode-ffmpeg: this ffmpeg has no h264_vaapi encoder (Debian's ffmpeg has it)"
fi
# One Xvfb and one driver build for the whole test.
if [ -z "${SWIFTVT_VA_ENCODE_FFMPEG_WRAPPED:-}" ]; then
    exec env SWIFTVT_VA_ENCODE_FFMPEG_WRAPPED=1 bash "$root/scripts/with-software-va.sh" bash "$0" "$@"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/va-encode-ffmpeg.XXXXXX")"
trap 'rm -rf "$work"' EXIT
source "$root/tests/lib/va-report.sh"
failures=0
pass() { echo "PASS: $*"; }
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# The sources, made in the temporary folder (never in the repository): the clip looped four times
# (36 frames), and a 152x100 cut at an odd offset (10x7 macroblocks, cropped right and bottom).
long="$work/clip36.yuv"
cut="$work/cut152x100.yuv"
ffmpeg -nostdin -v error -y -stream_loop 3 -f rawvideo -pix_fmt yuv420p -s "${clip_width}x${clip_height}" -i "$clip" \
    -f rawvideo "$long"
ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuv420p -s "${clip_width}x${clip_height}" -i "$clip" \
    -vf crop=152:100:37:41 -f rawvideo "$cut"
have_avdec=0
if command -v gst-launch-1.0 >/dev/null 2>&1 && gst-inspect-1.0 avdec_h264 >/dev/null 2>&1; then
    have_avdec=1
else
    missing_input_part "va-encode-ffmpeg: GStreamer's avdec_h264 not found (Debian package gstreamer1.0-libav): the second decoder's check is not run" ||
        fail "avdec_h264 missing"
fi

# encode NAME SIZE INPUT [FFMPEG OPTIONS...]: h264_vaapi through the driver into $work/NAME.h264,
# with the report, parameter log and stderr next to it. The driver's variables come from the caller.
encode() {
    local name="$1" size="$2" input="$3"
    shift 3
    SWIFTVT_VA_REPORT="$work/$name.report" SWIFTVT_VA_PARAMLOG="$work/$name.paramlog" \
        timeout 120 ffmpeg -nostdin -hide_banner -v warning -y \
        -init_hw_device "vaapi=va:$DISPLAY,connection_type=x11" -filter_hw_device va \
        -f rawvideo -pix_fmt yuv420p -s "$size" -r 30 -i "$input" \
        -vf format=nv12,hwupload -c:v h264_vaapi "$@" -f h264 "$work/$name.h264" 2>"$work/$name.stderr"
}

# file_md5 FILE: MD5 of the file's content.
file_md5() { md5sum <"$1" | cut -d' ' -f1; }

# lossless NAME INPUT: whether $work/NAME.h264, decoded by FFmpeg, gives INPUT exactly.
lossless() {
    ffmpeg -nostdin -v error -i "$work/$1.h264" -f rawvideo -pix_fmt yuv420p "$work/$1.decoded.yuv" -y 2>/dev/null || true
    [ -f "$work/$1.decoded.yuv" ] && [ "$(file_md5 "$work/$1.decoded.yuv")" = "$(file_md5 "$2")" ]
}

# The driver personalities, each set explicitly (section 4).
personality_checks() {
    echo
    echo "== driver personalities (SWIFTVT_VA_PERSONALITY; each run under timeout)"
    local rc
    # iHD: EncSliceLP (FFmpeg -low_power 1) offers CQP only.
    rc=0
    (export SWIFTVT_VA_PERSONALITY=ihd SWIFTVT_VA_LOG=1
     encode ihd-lp-cqp 320x192 "$long" -low_power 1 -coder cavlc -qp 20 -bf 0) || rc=$?
    if [ "$rc" = 0 ] && lossless ihd-lp-cqp "$long" && grep -q "EncSliceLP, rate control cqp" "$work/ihd-lp-cqp.stderr"; then
        pass "ihd: EncSliceLP with CQP: lossless"
    else
        fail "ihd: EncSliceLP with CQP: exit $rc, or not lossless, or not on EncSliceLP"
    fi
    rc=0
    SWIFTVT_VA_PERSONALITY=ihd encode ihd-lp-cbr 320x192 "$long" -low_power 1 -coder cavlc -b:v 1M -maxrate 1M -bf 0 || rc=$?
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "does not support any RC mode" "$work/ihd-lp-cbr.stderr"; then
        pass "ihd: EncSliceLP with CBR refused: $(grep -m1 "does not support any RC mode" "$work/ihd-lp-cbr.stderr" | sed 's/^\[[^]]*\] //')"
    else
        fail "ihd: EncSliceLP with CBR: exit $rc, expected FFmpeg to find no RC mode"
    fi
    rc=0
    SWIFTVT_VA_PERSONALITY=ihd encode ihd-cabac 320x192 "$long" -coder cabac -profile:v high -qp 20 -bf 0 || rc=$?
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "Failed to end picture" "$work/ihd-cabac.stderr" &&
       grep -qF "REFUSED encode: CABAC (entropy_coding_mode_flag 1), at vaEndPicture" "$work/ihd-cabac.report"; then
        pass "ihd: CABAC refused at vaEndPicture: $(grep -m1 "Failed to end picture" "$work/ihd-cabac.stderr" | sed 's/^\[[^]]*\] //')"
    else
        fail "ihd: CABAC: exit $rc, expected a refusal at vaEndPicture"
    fi
    # Old Mesa: QP from pic_init_qp only, SPS without VUI, quality level as radeonsi's bit-field.
    rc=0
    SWIFTVT_VA_PERSONALITY=mesa encode mesa-ibbp 320x192 "$long" -coder cavlc -profile:v high -qp 20 -g 30 -bf 2 \
        -compression_level 4 || rc=$?
    local vui
    vui="$(ffmpeg -nostdin -v trace -i "$work/mesa-ibbp.h264" -c copy -bsf:v trace_headers -f null - 2>&1 |
        grep -m1 -o "vui_parameters_present_flag *[0-9]* = [01]" | sed 's/.*= //' || true)"
    if [ "$rc" = 0 ] && lossless mesa-ibbp "$long" && [ "$(count "^encpic type=B .* qp=20 " "$work/mesa-ibbp.paramlog")" -gt 0 ] &&
       [ "$(count "^encpic type=B .* qp=24 " "$work/mesa-ibbp.paramlog")" = 0 ] && [ "$vui" = 0 ] &&
       [ "$(count "^encmisc quality level=4 bitfield=valid:0,preset:quality," "$work/mesa-ibbp.paramlog")" -gt 0 ]; then
        pass "mesa: lossless; B pictures at pic_init_qp 20 (FFmpeg's slice_qp_delta +4 not read); SPS without VUI; $(grep -m1 "^encmisc quality" "$work/mesa-ibbp.paramlog")"
    else
        fail "mesa: exit $rc, B-picture QPs $(grep -o "^encpic type=B .* qp=[0-9]*" "$work/mesa-ibbp.paramlog" | grep -o "qp=[0-9]*" | sort -u | tr '\n' ' '), vui_parameters_present_flag '$vui', quality '$(grep -m1 "^encmisc quality" "$work/mesa-ibbp.paramlog")'"
    fi
    rc=0
    SWIFTVT_VA_PERSONALITY=mesa encode mesa-cabac 320x192 "$long" -coder cabac -profile:v high -qp 20 -bf 0 || rc=$?
    if [ "$rc" = 0 ] && ! lossless mesa-cabac "$long" && [ "$(count "VALIDATION\|REFUSED" "$work/mesa-cabac.report")" = 0 ]; then
        pass "mesa: CABAC stored and ignored: FFmpeg exits 0 with a stream whose slices are CAVLC under a CABAC PPS"
    else
        fail "mesa: CABAC: exit $rc, expected a silent success with a stream that does not decode to the source"
    fi
    # nvidia-vaapi-driver decodes only.
    rc=0
    SWIFTVT_VA_PERSONALITY=nvdec encode nvdec-encode 320x192 "$long" -coder cavlc -qp 20 -bf 0 || rc=$?
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "No usable encoding entrypoint" "$work/nvdec-encode.stderr"; then
        pass "nvdec: no encoder: $(grep -m1 "No usable encoding entrypoint" "$work/nvdec-encode.stderr" | sed 's/^\[[^]]*\] //')"
    else
        fail "nvdec: exit $rc, expected 'No usable encoding entrypoint'"
    fi
}

if [ "${SWIFTVT_VA_PERSONALITY:-}" = nvdec ]; then
    echo "== SWIFTVT_VA_PERSONALITY=nvdec: the driver has no encoding entrypoint (nvidia-vaapi-driver decodes only)"
    for options in "-coder cavlc -profile:v high -qp 20 -bf 2" "-profile:v constrained_baseline -qp 20 -bf 0" \
                   "-coder cavlc -profile:v main -b:v 1M -maxrate 1M -bf 0"; do
        rc=0
        # shellcheck disable=SC2086 # the options are a word list
        encode nvdec-config 320x192 "$long" $options || rc=$?
        if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "No usable encoding entrypoint" "$work/nvdec-config.stderr"; then
            pass "$options: $(grep -m1 "No usable encoding entrypoint" "$work/nvdec-config.stderr" | sed 's/^\[[^]]*\] //')"
        else
            fail "$options: exit $rc, expected 'No usable encoding entrypoint'"
        fi
    done
    personality_checks
    echo
    if [ "$failures" -gt 0 ]; then
        echo "va-encode-ffmpeg: FAIL: $failures failure(s)"
        exit 1
    fi
    echo "va-encode-ffmpeg: PASS: all checks (nvdec: no encoder, every configuration refused cleanly; personalities)"
    exit 0
fi

echo "== lossless encoding through FFmpeg's VA-API encoder (driver: $LIBVA_DRIVERS_PATH, display $DISPLAY)"
printf '%-20s %-9s %6s %-9s %-9s %7s %s\n' config size frames ffmpeg avdec seconds result
# name | size | input | expected frames | environment | ffmpeg options
configurations=(
    "high-ip|320x192|$long|36||-coder cavlc -profile:v high -qp 20 -g 30 -bf 0"
    "high-ibbp|320x192|$long|36||-coder cavlc -profile:v high -qp 20 -g 30 -bf 2"
    "cb|320x192|$long|36||-profile:v constrained_baseline -qp 20 -g 30 -bf 0"
    "main-cbr|320x192|$long|36||-coder cavlc -profile:v main -b:v 1M -maxrate 1M -g 30 -bf 0"
    "high-crop-ibbp|152x100|$cut|9||-coder cavlc -profile:v high -qp 20 -g 30 -bf 2"
    "driver-headers|152x100|$cut|9|SWIFTVT_VA_ENCODE_PACKED=none|-coder cavlc -profile:v high -qp 20 -g 30 -bf 2"
    "vbr-fallback|320x192|$long|36|SWIFTVT_VA_ENCODE_RC=cqp,vbr|-coder cavlc -profile:v main -b:v 1M -maxrate 1M -g 30 -bf 0"
)
for configuration in "${configurations[@]}"; do
    IFS='|' read -r name size input frames environment options <<<"$configuration"
    width="${size%x*}"
    height="${size#*x}"
    frame_size=$((width * height * 3 / 2))
    rc=0
    started=$(date +%s.%N)
    # shellcheck disable=SC2086 # the options are a word list
    (if [ -n "$environment" ]; then export "${environment?}"; fi; encode "$name" "$size" "$input" $options) || rc=$?
    seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    want="$(file_md5 "$input")"
    ffmpeg -nostdin -v error -i "$work/$name.h264" -f rawvideo -pix_fmt yuv420p "$work/$name.decoded.yuv" -y \
        2>"$work/$name.decode" || true
    got="$(file_md5 "$work/$name.decoded.yuv" 2>/dev/null || echo none)"
    got_frames=$(($(stat -c %s "$work/$name.decoded.yuv" 2>/dev/null || echo 0) / frame_size))
    ffmpeg_ok=no
    [ "$got" = "$want" ] && ffmpeg_ok=yes
    avdec_ok=-
    if [ "$have_avdec" = 1 ]; then
        timeout 120 gst-launch-1.0 -q filesrc location="$work/$name.h264" ! h264parse ! avdec_h264 ! video/x-raw,format=I420 ! \
            filesink location="$work/$name.avdec.yuv" >/dev/null 2>&1 || true
        avdec_ok=no
        [ -f "$work/$name.avdec.yuv" ] && [ "$(file_md5 "$work/$name.avdec.yuv")" = "$want" ] && avdec_ok=yes
    fi
    report="$work/$name.report"
    paramlog="$work/$name.paramlog"
    problems=""
    [ "$rc" != 0 ] && problems+=" ffmpeg exit $rc;"
    [ "$got_frames" != "$frames" ] && problems+=" $got_frames of $frames frames decoded;"
    [ "$ffmpeg_ok" != yes ] && problems+=" FFmpeg's decoding differs from the source (md5 $got, want $want);"
    [ "$avdec_ok" = no ] && problems+=" avdec_h264's decoding differs from the source;"
    for kind in VALIDATION REFUSED ENCODE; do
        n="$(count "swiftvt_sw $kind" "$report")"
        [ "$n" != 0 ] && problems+=" $n $kind line(s): $(grep -m1 "swiftvt_sw $kind" "$report");"
    done
    [ -n "$(leaks "$report")" ] && problems+=" objects left: $(leaks "$report");"
    [ "$(count "^live-objects" "$report")" = 0 ] && problems+=" no vaTerminate;"
    # The parameter log says what FFmpeg asked for.
    [ "$(count "^encpic " "$paramlog")" != "$frames" ] && problems+=" $(count "^encpic " "$paramlog") encpic lines for $frames frames;"
    [ "$(count "^encseq profile=" "$paramlog")" = 0 ] && problems+=" no encseq line;"
    [ "$(count "^encconfig profile=" "$paramlog")" != 1 ] && problems+=" not one encconfig line;"
    [ "$(count "^encpic type=P .* l0=-" "$paramlog")" != 0 ] && problems+=" a P picture without list 0;"
    [ "$(count "^encpic .*entropy=cabac" "$paramlog")" != 0 ] && problems+=" a CABAC picture;"
    case "$name" in
    high-ip | cb)
        [ "$(count "^encpic type=I idr=1 " "$paramlog")" != 2 ] && problems+=" not two IDRs in 36 frames with -g 30;"
        [ "$(count "^encpic type=B" "$paramlog")" != 0 ] && problems+=" B pictures with -bf 0;" ;;
    high-ibbp | high-crop-ibbp | driver-headers)
        [ "$(count "^encpic type=B idr=0 ref=0 " "$paramlog")" = 0 ] && problems+=" no (non-reference) B pictures with -bf 2;"
        [ "$(count "^encpic type=B .* l1=-$" "$paramlog")" != 0 ] && problems+=" a B picture without list 1;"
        [ "$(count "^encseq .*ip_period=3 " "$paramlog")" = 0 ] && problems+=" ip_period is not 3;" ;;
    esac
    case "$name" in
    cb) [ "$(count "^encconfig profile=cb rc=cqp " "$paramlog")" = 1 ] || problems+=" encconfig is not cb/cqp;" ;;
    main-cbr)
        [ "$(count "^encconfig profile=main rc=cbr " "$paramlog")" = 1 ] || problems+=" encconfig is not main/cbr;"
        [ "$(count "^encmisc ratecontrol bits_per_second=1000000 " "$paramlog")" = 0 ] && problems+=" no ratecontrol misc parameter of 1 Mbit/s;"
        [ "$(count "^encmisc hrd buffer_size=" "$paramlog")" = 0 ] && problems+=" no HRD misc parameter;"
        [ "$(count "^encmisc framerate 30/1$" "$paramlog")" = 0 ] && problems+=" no framerate 30/1;" ;;
    vbr-fallback)
        [ "$(count "^encconfig profile=main rc=vbr " "$paramlog")" = 1 ] || problems+=" FFmpeg did not fall back to VBR;" ;;
    high-crop-ibbp | driver-headers)
        [ "$(count "^encseq .*mbs=10x7 frame_cropping=1 crop=0,4,0,6 " "$paramlog")" = 0 ] && problems+=" the sequence is not 10x7 macroblocks cropped by 8 and 12;" ;;
    esac
    if [ "$name" = driver-headers ]; then
        [ "$(count "^encconfig .* packed=0$" "$paramlog")" = 1 ] || problems+=" the config has packed headers;"
    elif [ "$(count "^encconfig .* packed=0x5$" "$paramlog")" != 1 ]; then
        problems+=" the config's packed headers are not sequence+slice (FFmpeg's choice);"
    fi
    if [ -z "$problems" ]; then
        result=PASS
    else
        result="FAIL:$problems"
        fail "$name:$problems"
        grep -v "^\[rawvideo" "$work/$name.stderr" | head -5 | sed 's/^/    /' || true
    fi
    printf '%-20s %-9s %6s %-9s %-9s %7s %s\n' "$name" "$size" "$got_frames" "$ffmpeg_ok" "$avdec_ok" "$seconds" "$result"
done
echo "(parameter log of high-ibbp, first lines:)"
head -9 "$work/high-ibbp.paramlog" | sed 's/^/    /'

echo
echo "== refusals and failures (each under timeout; leaks '-': FFmpeg exited without vaTerminate)"
printf '%-34s %5s %-6s %s\n' case exit leaks outcome
failure_cases=(
    "cabac||-coder cabac -profile:v high -qp 20 -bf 0"
    "cbr-without-cbr|SWIFTVT_VA_ENCODE_RC=cqp|-coder cavlc -b:v 1M -maxrate 1M -bf 0"
    "end-picture-fails|SWIFTVT_VA_FAIL_END_PICTURE=5|-coder cavlc -qp 20 -bf 0"
    "create-config|SWIFTVT_VA_FAIL=create-config|-coder cavlc -qp 20 -bf 0"
    "create-context|SWIFTVT_VA_FAIL=create-context|-coder cavlc -qp 20 -bf 0"
    "create-surfaces|SWIFTVT_VA_FAIL=create-surfaces|-coder cavlc -qp 20 -bf 0"
    "busy|SWIFTVT_VA_BUSY=1|-coder cavlc -qp 20 -bf 0"
)
for failure_case in "${failure_cases[@]}"; do
    IFS='|' read -r name environment options <<<"$failure_case"
    if [ "$name" = cabac ] && [ "${SWIFTVT_VA_PERSONALITY:-}" = mesa ]; then
        printf '%-34s %5s %-6s %s\n' "$name" - - "(mesa stores the flag and ignores it: checked in the personality section)"
        continue
    fi
    rc=0
    # shellcheck disable=SC2086 # the options are a word list
    (if [ -n "$environment" ]; then export "${environment?}"; fi; encode "$name" 320x192 "$long" $options) || rc=$?
    report="$work/$name.report"
    leaked="$(leaks "$report")"
    leak_column=no
    [ -n "$leaked" ] && leak_column=yes
    [ "$(count "^live-objects" "$report")" = 0 ] && leak_column="-"
    message="$(grep -v "^swiftvt_sw\|^\[rawvideo\|packed headers" "$work/$name.stderr" | grep -m1 -i "fail\|error\|support\|busy" | sed 's/^\[[^]]*\] //' || true)"
    expected=""
    case "$name" in
    cabac)
        expected="REFUSED encode: CABAC (entropy_coding_mode_flag 1); this driver encodes CAVLC only"
        [ "${SWIFTVT_VA_PERSONALITY:-}" = ihd ] && expected="REFUSED encode: CABAC (entropy_coding_mode_flag 1), at vaEndPicture"
        ;;
    end-picture-fails) expected="Failed to end picture" ;;
    cbr-without-cbr) expected="does not support any RC mode" ;;
    esac
    if [ "$rc" = 124 ]; then
        outcome="FAIL: hang (timed out)"
        fail "$name: ffmpeg hung"
    elif [ "$rc" = 0 ]; then
        outcome="FAIL: ffmpeg succeeded"
        fail "$name: ffmpeg did not fail"
    elif [ -z "$message" ]; then
        outcome="FAIL: exit $rc without an error message"
        fail "$name: no error message"
    elif [ -n "$leaked" ]; then
        outcome="FAIL: objects left at vaTerminate: $leaked"
        fail "$name: $leaked"
    elif [ "$name" = cabac ] && ! grep -qF "swiftvt_sw $expected" "$report" 2>/dev/null; then
        outcome="FAIL: no REFUSED line in the report"
        fail "$name: the report has no '$expected' line"
    elif [ -n "$expected" ] && [ "$name" != cabac ] && ! grep -qF "$expected" "$work/$name.stderr"; then
        outcome="FAIL: $message"
        fail "$name: FFmpeg did not say '$expected'"
    else
        outcome="PASS: $message"
        [ "$name" = cabac ] && outcome="PASS: $(grep -m1 REFUSED "$report" | sed 's/^swiftvt_sw //'); FFmpeg: $message"
    fi
    printf '%-34s %5s %-6s %s\n' "$name" "$rc" "$leak_column" "$outcome"
done

echo
echo "== validation self-test (SWIFTVT_VA_TAMPER: a simulated client bug must be reported and fail the picture)"
for case in "encode-frame-num frame_num" "encode-ref-list RefPicList0"; do
    tamper="${case%% *}"
    field="${case#* }"
    rc=0
    SWIFTVT_VA_TAMPER="$tamper" encode "tamper-$tamper" 320x192 "$long" -coder cavlc -qp 20 -bf 2 || rc=$?
    report="$work/tamper-$tamper.report"
    complaints="$(count "VALIDATION: encode picture [0-9]*: .*$field" "$report")"
    if [ "$rc" = 124 ]; then
        fail "tamper $tamper: timed out"
    elif [ "$complaints" -gt 0 ] && grep -q "Failed to end picture" "$work/tamper-$tamper.stderr"; then
        pass "tamper $tamper: $(grep -m1 "VALIDATION" "$report" | sed 's/.*VALIDATION: //')"
    else
        fail "tamper $tamper: no VALIDATION line naming $field, or vaEndPicture did not fail (ffmpeg exit $rc)"
    fi
done

personality_checks

echo
if [ "$failures" -gt 0 ]; then
    echo "va-encode-ffmpeg: FAIL: $failures failure(s)"
    exit 1
fi
echo "va-encode-ffmpeg: PASS: all checks (${#configurations[@]} configurations lossless, ${#failure_cases[@]} failures clean, validation alive)"
