#!/usr/bin/env bash
# vtdec on the VA-API path, against SwiftVT's software VA driver (tests/va-driver/) on Xvfb:
#
# 1. every undamaged, progressive corpus stream through `vtdec hardware=require`: the MD5 of the
#    decoded frames (I420, cropped) equals MANIFEST.tsv's ref_md5, with zero VALIDATION complaints
#    and zero SELFCHECK failures from the driver and no VA object left at vaTerminate. A stream
#    the driver refuses (none in the corpus today; pic_order_cnt_type 1 streams are decoded by
#    rewriting them as type 0 from the client's POCs) must fail cleanly under require and decode
#    exactly under auto (software fallback);
# 2. FFmpeg's own VA-API client through the same driver on streams with P, B and weighted
#    prediction, and on a pic_order_cnt_type 1 stream (the client's own 8.2.1.2 POCs): the
#    driver's normalised parameter logs of both clients must be identical;
# 3. fault injection: each injected failure ends in software fallback (auto) or a clear error
#    (require), never a hang (every run is under a time limit), and nothing is leaked;
# 4. no VA device at all (no render node, no DISPLAY): auto decodes in software, require fails
#    with an error listing what was tried.
#
# Pipelines run through tests/lib/run-pipeline.py (gst-launch-1.0's output format, but no hang
# when an ERROR comes before its main loop runs, which the require cases provoke).
#
# Exit 0 when everything holds, 1 otherwise, 77 (skipped) without the corpus, FFmpeg or Xvfb
# (1 instead under SWIFTVT_REQUIRE_TEST_INPUTS, as in CI). Environment: SWIFTVT_PLUGIN (the
# plugin to test), SWIFTVT_CORPUS, SWIFTVT_VA_DRIVER_DIR.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/tests/lib/require.sh"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
manifest="$corpus/h264/MANIFEST.tsv"
require_file "$manifest" "vtdec-va: test corpus not found at $corpus (set SWIFTVT_CORPUS to the folder holding h264/MANIFEST.tsv)"
for tool in ffmpeg ffprobe; do
    require_command "$tool" "vtdec-va: $tool not found (Debian package ffmpeg; scripts/install-deps.sh installs it)"
done
if [ -z "${SWIFTVT_VTDEC_VA_WRAPPED:-}" ]; then
    exec env SWIFTVT_VTDEC_VA_WRAPPED=1 bash "$root/scripts/with-software-va.sh" bash "$0" "$@"
fi
source "$root/pipelines/lib/plugin-env.sh"
work="$swiftvt_work_dir"
source "$root/tests/lib/va-report.sh"
run_pipeline="$root/tests/lib/run-pipeline.py"
damaged="$va_damaged_streams"
failures=0
fail() {
    echo "vtdec-va: FAIL: $*"
    failures=$((failures + 1))
}

# decode STREAM HARDWARE OUTPUT: vtdec to I420 frames in OUTPUT; the log (with vtdec's INFO lines)
# on stderr. Exit 0 at EOS, 1 after an ERROR (require on a stream the driver refuses), 124 on a hang.
decode() {
    env GST_DEBUG="vtdec:4" GST_DEBUG_NO_COLOR=1 "$run_pipeline" --timeout 300 -- filesrc location="$1" ! h264parse-to-avcc \
        ! vtdec hardware="$2" ! video/x-raw,format=I420 ! filesink location="$3"
}

echo "== corpus through vtdec hardware=require (driver: $LIBVA_DRIVERS_PATH, display $DISPLAY)"
printf '%-44s %7s %-5s %10s %9s %-6s %s\n' stream frames md5 validation selfcheck leaks result
decoded_ok=0
refused_ok=0
while IFS=$'\t' read -r file _bytes _sha width height _profile frames ref_md5 _avdec_md5; do
    [ "$file" = file ] && continue
    stream="$corpus/h264/$file"
    if [[ "$damaged" == *" $file "* ]]; then
        printf '%-44s %7s %-5s %10s %9s %-6s %s\n' "$file" - - - - - "skipped: damaged on purpose"
        continue
    fi
    probe="$(ffprobe -v error -select_streams v:0 -show_entries stream=field_order -of csv=p=0 "$stream")"
    if [ "$probe" != progressive ] && [ "$probe" != unknown ]; then
        printf '%-44s %7s %-5s %10s %9s %-6s %s\n' "$file" - - - - - "skipped: $probe (frames only)"
        continue
    fi
    report="$work/$file.report"
    rc=0
    SWIFTVT_VA_REPORT="$report" SWIFTVT_VA_SELFCHECK=1 decode "$stream" require "$work/out.yuv" \
        >"$work/$file.log" 2>&1 || rc=$?
    md5="$(md5sum <"$work/out.yuv" | cut -d' ' -f1)"
    frame_size=$((width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)))
    got_frames=$(($(stat -c %s "$work/out.yuv" 2>/dev/null || echo 0) / frame_size))
    rm -f "$work/out.yuv"
    validation="$(count "VALIDATION" "$report")"
    selfcheck="$(count "SELFCHECK" "$report")"
    refused="$(count "REFUSED" "$report")"
    leaked="$(leaks "$report")"
    terminated="$(count "^live-objects" "$report")"
    md5_ok=no
    [ "$md5" = "$ref_md5" ] && md5_ok=yes
    if [ "$refused" -gt 0 ]; then
        # The driver cannot take the stream: require must fail with a clear error, auto must
        # fall back to software and decode it exactly.
        reason="$(grep -m1 REFUSED "$report" | sed 's/.*REFUSED: //; s/:.*//')"
        auto_rc=0
        SWIFTVT_VA_REPORT="$work/$file.auto.report" decode "$stream" auto "$work/auto.yuv" >"$work/$file.auto.log" 2>&1 || auto_rc=$?
        auto_md5="$(md5sum <"$work/auto.yuv" | cut -d' ' -f1)"
        rm -f "$work/auto.yuv"
        if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "hardware=require allows no software fallback" "$work/$file.log" &&
           [ "$auto_rc" = 0 ] && [ "$auto_md5" = "$ref_md5" ] && [ -z "$leaked" ] &&
           grep -q "decoding goes on in software" "$work/$file.auto.log"; then
            result="refused by the driver ($reason): require errors, auto falls back and matches"
            refused_ok=$((refused_ok + 1))
        else
            result="FAIL (refused: require exit $rc, auto exit $auto_rc md5 $auto_md5)"
            fail "$file: refused stream not handled: require exit $rc, auto exit $auto_rc, md5 $auto_md5 (want $ref_md5)"
            grep -m3 "ERROR\|WARN" "$work/$file.log" "$work/$file.auto.log" | cut -c1-300 | sed 's/^/    /' || true
        fi
    elif [ "$rc" = 124 ]; then
        result="FAIL: timed out"
        fail "$file: timed out"
    elif [ "$rc" != 0 ] || [ "$md5_ok" != yes ] || [ "$validation" != 0 ] || [ "$selfcheck" != 0 ] ||
         [ -n "$leaked" ] || [ "$terminated" = 0 ] || [ "$got_frames" != "$frames" ] ||
         ! grep -q "with VA-API" "$work/$file.log"; then
        result="FAIL (exit $rc, $got_frames/$frames frames)"
        fail "$file: exit $rc, md5 $md5 (want $ref_md5), $validation validation complaint(s), $selfcheck self-check failure(s), ${leaked:-no leak}, $terminated vaTerminate"
        grep -m5 "VALIDATION\|SELFCHECK\|DECODE" "$report" 2>/dev/null | sed 's/^/    /' || true
        grep -m3 "ERROR" "$work/$file.log" | cut -c1-300 | sed 's/^/    /' || true
    else
        result=ok
        decoded_ok=$((decoded_ok + 1))
    fi
    printf '%-44s %7s %-5s %10s %9s %-6s %s\n' "$file" "$got_frames" "$md5_ok" "$validation" "$selfcheck" \
        "$([ -n "$leaked" ] && echo yes || echo no)" "$result"
done <"$manifest"
echo "decoded exactly on the VA path: $decoded_ok; refused by the driver and handled: $refused_ok"
if [ "$decoded_ok" -lt 15 ]; then
    fail "only $decoded_ok stream(s) decoded exactly on the VA path"
fi

echo
echo "== the same driver, two clients: SwiftVT's and FFmpeg's normalised VA parameters (SWIFTVT_VA_PARAMLOG)"
printf '%-44s %9s %9s %s\n' stream pictures slices result
for file in BA_MW_D.264 CVPCMNL1_SVA_C.264 Cisco_Men_whisper_640x320_CABAC_Bframe_9.264 \
            VID_1280x720_cabac_temporal_direct.264 test_scalinglist_jm.264 MPS_MW_A.264 BAMQ1_JVC_C.264; do
    stream="$corpus/h264/$file"
    [ -f "$stream" ] || { fail "$file: missing from the corpus"; continue; }
    rm -f "$work/ours.paramlog" "$work/ffmpeg.paramlog"
    rc=0
    SWIFTVT_VA_PARAMLOG="$work/ours.paramlog" decode "$stream" require /dev/null >"$work/params.log" 2>&1 || rc=$?
    frc=0
    SWIFTVT_VA_PARAMLOG="$work/ffmpeg.paramlog" timeout 300 ffmpeg -nostdin -hide_banner -v error \
        -init_hw_device "vaapi=va:$DISPLAY,connection_type=x11" -hwaccel vaapi -hwaccel_device va \
        -hwaccel_output_format vaapi -hwaccel_flags allow_profile_mismatch -i "$stream" -f null - 2>"$work/ffmpeg.stderr" || frc=$?
    pictures="$(count "^pic " "$work/ours.paramlog")"
    slices="$(count "^slice " "$work/ours.paramlog")"
    if [ "$rc" = 0 ] && [ "$frc" = 0 ] && [ "$pictures" -gt 0 ] && cmp -s "$work/ours.paramlog" "$work/ffmpeg.paramlog"; then
        result="identical"
    else
        result="FAIL (exit $rc / ffmpeg $frc)"
        fail "$file: parameter logs differ (SwiftVT exit $rc, FFmpeg exit $frc)"
        diff "$work/ours.paramlog" "$work/ffmpeg.paramlog" | head -6 | sed 's/^/    /' || true
    fi
    printf '%-44s %9s %9s %s\n' "$file" "$pictures" "$slices" "$result"
done

echo
echo "== fault injection (every run under a 120 s limit; frames of 100; leaks after vaTerminate)"
small="$corpus/h264/BA_MW_D.264"
small_md5="$(grep -P "^BA_MW_D.264\t" "$manifest" | cut -f8)"
multi="$corpus/h264/MIDR_MW_D.264"
multi_md5="$(grep -P "^MIDR_MW_D.264\t" "$manifest" | cut -f8)"
multi_frames="$(grep -P "^MIDR_MW_D.264\t" "$manifest" | cut -f7)"
printf '%-32s %-8s %5s %6s %-6s %s\n' injection hardware exit frames leaks outcome
run_fault() { # run_fault LABEL HARDWARE STREAM EXPECT ENV...
    local label="$1" hardware="$2" stream="$3" expect="$4"
    shift 4
    local report="$work/fault.report" log="$work/fault.log" rc=0
    rm -f "$report" "$work/fault.yuv"
    env "$@" SWIFTVT_VA_REPORT="$report" GST_DEBUG="vtdec:4" GST_DEBUG_NO_COLOR=1 "$run_pipeline" --timeout 120 -- \
        filesrc location="$stream" ! h264parse-to-avcc ! vtdec hardware="$hardware" ! video/x-raw,format=I420 \
        ! filesink location="$work/fault.yuv" >"$log" 2>&1 || rc=$?
    local frames=$(($(stat -c %s "$work/fault.yuv" 2>/dev/null || echo 0) / 38016))
    local md5
    md5="$(md5sum <"$work/fault.yuv" 2>/dev/null | cut -d' ' -f1 || true)"
    local leaked leak_column=no
    leaked="$(leaks "$report")"
    [ -n "$leaked" ] && leak_column=yes
    [ "$(count "^live-objects" "$report")" = 0 ] && leak_column="-"
    local message outcome ok=no
    message="$(grep -m1 -o "vtdec: [^\"]*" "$log" | cut -c1-220 || true)"
    case "$expect" in
    software-exact)
        # auto: software decodes everything exactly, and the log says VA was passed over or failed.
        if [ "$rc" = 0 ] && [ "$md5" = "$small_md5" ] && [ -z "$leaked" ] &&
           grep -q "libavcodec (software)" "$log"; then
            ok=yes
            outcome="software fallback, exact: $(grep -m1 -o "passed over: [^)]*)\|decoding goes on in software[^\"]*" "$log" | cut -c1-160)"
        fi ;;
    software-from-next-idr)
        # auto, failure mid-stream: a warning, software from the next IDR, the end reached.
        if [ "$rc" = 0 ] && [ "$frames" -gt 0 ] && [ -z "$leaked" ] && grep -q "WARNING.*decoding goes on in software" "$log"; then
            ok=yes
            outcome="warning, software from the next IDR: $message"
        fi ;;
    damaged-goes-on)
        # VA_STATUS_ERROR_DECODING_ERROR: the picture is damaged, the device goes on (va.h):
        # every frame comes out on the VA path, the damaged one counted as corrupt (max-errors),
        # no switch to software and no ERROR, under auto and require alike.
        if [ "$rc" = 0 ] && [ "$frames" = "$multi_frames" ] && [ -z "$leaked" ] &&
           grep -q "corrupt data in a frame: .*VA_STATUS_ERROR_DECODING_ERROR" "$log" &&
           ! grep -q "decoding goes on in software\|now decoding with libavcodec" "$log"; then
            ok=yes
            outcome="damaged picture output on VA, $frames frames, md5 $([ "$md5" = "$multi_md5" ] && echo exact || echo differs)"
        fi ;;
    va-exact)
        # A passing state (HW_BUSY): retried, nothing to report, every picture exact on VA.
        if [ "$rc" = 0 ] && [ "$md5" = "$multi_md5" ] && [ -z "$leaked" ] && ! grep -q "WARN" "$log" &&
           ! grep -q "decoding goes on in software\|now decoding with libavcodec" "$log"; then
            ok=yes
            outcome="retried on VA, exact, no warning"
        fi ;;
    error)
        if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "ERROR" "$log" && [ -n "$message" ] && [ -z "$leaked" ]; then
            ok=yes
            outcome="clean error: $message"
        fi ;;
    esac
    if [ "$rc" = 124 ]; then
        outcome="FAIL: hang (timed out)"
        fail "$label $hardware: hung"
    elif [ "$ok" != yes ]; then
        outcome="FAIL (expected $expect): ${message:-no message}"
        fail "$label $hardware: expected $expect, got exit $rc, $frames frames, md5 $md5, leaks ${leaked:-none}"
        grep -m4 "ERROR\|WARN" "$log" | cut -c1-300 | sed 's/^/    /' || true
    fi
    printf '%-32s %-8s %5s %6s %-6s %s\n' "$label" "$hardware" "$rc" "$frames" "$leak_column" "$outcome"
}
for injection in "SWIFTVT_VA_FAIL=create-config" "SWIFTVT_VA_FAIL=create-context" "SWIFTVT_VA_FAIL=create-surfaces" \
                 "SWIFTVT_VA_BUSY=1"; do
    run_fault "$injection" auto "$small" software-exact "$injection"
    run_fault "$injection" require "$small" error "$injection"
done
# MIDR_MW_D.264 has an IDR picture every few frames: a device failure at picture 5 is picked up
# by software at the next one.
run_fault "END_PICTURE=5:operation-failed" auto "$multi" software-from-next-idr "SWIFTVT_VA_FAIL_END_PICTURE=5:operation-failed"
run_fault "END_PICTURE=5:operation-failed" require "$multi" error "SWIFTVT_VA_FAIL_END_PICTURE=5:operation-failed"
# A damaged picture (DECODING_ERROR) from vaEndPicture or vaSyncSurface (iHD): output, decoding
# goes on on the device; a busy engine (HW_BUSY at vaSyncSurface) is retried.
for hardware in auto require; do
    run_fault "END_PICTURE=5 (decoding error)" "$hardware" "$multi" damaged-goes-on "SWIFTVT_VA_FAIL_END_PICTURE=5"
    run_fault "SYNC_ERROR=decoding-error:5" "$hardware" "$multi" damaged-goes-on "SWIFTVT_VA_SYNC_ERROR=decoding-error:5"
done
run_fault "SYNC_ERROR=hw-busy:5" require "$multi" va-exact "SWIFTVT_VA_SYNC_ERROR=hw-busy:5"
# A slice refused by vaRenderPicture in the middle of a picture: the device failed, software takes
# over, and the picture already begun is still ended on the device (nvidia-vaapi-driver would
# otherwise decode its slices with the next picture): the driver finds no open picture when the
# context goes.
run_fault "RENDER=7 (nvdec)" auto "$multi" software-from-next-idr "SWIFTVT_VA_FAIL_RENDER=7" "SWIFTVT_VA_PERSONALITY=nvdec"
if grep -q "VALIDATION.*never ended" "$work/fault.report"; then
    fail "a failed render left its picture open: $(grep -m1 VALIDATION "$work/fault.report")"
else
    echo "RENDER=7: the picture begun before the refused slice was ended (no picture left open)"
fi
# No VA device at all: no render nodes and no X display.
run_fault "no VA device (no DISPLAY)" auto "$small" software-exact DISPLAY= 
run_fault "no VA device (no DISPLAY)" require "$small" error DISPLAY=
if [ -d /dev/dri ] && ls /dev/dri/renderD* >/dev/null 2>&1; then
    echo "(this machine has DRM render nodes: the no-device case above also tried them)"
fi
grep -q "no VA-API display could be opened" "$work/fault.log" ||
    fail "no VA device, require: the error does not say what was tried"
grep -m1 -o "tried: [^\"]*" "$work/fault.log" | cut -c1-300 | sed 's/^/    require without a device says: /' || true

echo
echo "== image read-back: the faster of vaDeriveImage and vaGetImage, measured; vaGetImage when derive is refused"
# The first pictures try both; then the faster is kept. Derived maps of this driver's surfaces
# are system memory (fast, no copy); with SWIFTVT_VA_DERIVE_NS_PER_BYTE=20 they cost what iHD's
# uncached memory does, and vaGetImage must win; with SWIFTVT_VA_NO_DERIVE=1 (nvidia-vaapi-driver)
# only vaGetImage is left. The driver's report counts each call.
# read_back LABEL ENV EXPECT: EXPECT is derive or copy (the method used for all but the trials).
read_back() {
    local rc=0 md5 reads derived copied
    rm -f "$work/path.report"
    (export "$2" SWIFTVT_VA_REPORT="$work/path.report"; decode "$small" require "$work/path.yuv") >"$work/path.log" 2>&1 || rc=$?
    md5="$(md5sum <"$work/path.yuv" | cut -d' ' -f1)"
    # One line per display terminated (a plugin-load probe may add one that read nothing).
    derived="$(grep '^image-reads' "$work/path.report" | sed 's/.*derived=\([0-9]*\).*/\1/' | awk '{ n += $1 } END { print n + 0 }')"
    copied="$(grep '^image-reads' "$work/path.report" | sed 's/.*copied=\([0-9]*\).*/\1/' | awk '{ n += $1 } END { print n + 0 }')"
    reads="vaDeriveImage $derived, vaGetImage $copied"
    local kept=no
    case "$3" in
    derive) [ "${derived:-0}" -gt 90 ] && [ "${copied:-0}" -le 2 ] && kept=yes ;;
    copy) [ "${copied:-0}" -gt 90 ] && [ "${derived:-0}" -le 2 ] && kept=yes ;;
    esac
    if [ "$rc" = 0 ] && [ "$md5" = "$small_md5" ] && [ "$kept" = yes ]; then
        echo "$1: exact, $reads"
    else
        fail "$1: exit $rc, md5 $md5 (want $small_md5), $reads (expected mostly $3)"
    fi
}
# The nvdec personality refuses derive altogether (nvidia-vaapi-driver): vaGetImage there.
fast_derive_expected=derive
[ "${SWIFTVT_VA_PERSONALITY:-}" = nvdec ] && fast_derive_expected=copy
read_back "derive in system memory" SWIFTVT_VA_DERIVE_NS_PER_BYTE=0 "$fast_derive_expected"
read_back "derive as slow as uncached memory (20 ns/byte)" SWIFTVT_VA_DERIVE_NS_PER_BYTE=20 copy
read_back "derive refused (SWIFTVT_VA_NO_DERIVE=1)" SWIFTVT_VA_NO_DERIVE=1 copy
# Downstream taking NV12 as well (videoconvert): the surfaces' own layout goes out, no de-interleave
# (vtdec logs the pixel format by its CoreVideo code: 420v is NV12).
rc=0
GST_DEBUG="vtdec:4" GST_DEBUG_NO_COLOR=1 "$run_pipeline" --timeout 120 -- filesrc location="$small" ! h264parse-to-avcc \
    ! vtdec hardware=require ! videoconvert ! video/x-raw,format=I420 ! filesink location="$work/nv12.yuv" >"$work/nv12.log" 2>&1 || rc=$?
md5="$(md5sum <"$work/nv12.yuv" | cut -d' ' -f1)"
if [ "$rc" = 0 ] && [ "$md5" = "$small_md5" ] && grep -q "output 176x144 420[vf]" "$work/nv12.log"; then
    echo "downstream takes NV12: vtdec outputs the surfaces' NV12, exact after videoconvert"
else
    fail "downstream takes NV12: exit $rc, md5 $md5, $(grep -m1 -o 'output 176x144 [a-z0-9]*' "$work/nv12.log" || echo 'no output line')"
fi

echo
echo "== interlaced coding: refused by the VA path with a clear reason, decoded in software under auto"
interlaced="$work/interlaced.264"
if [[ "$(ffmpeg -hide_banner -encoders 2>/dev/null || true)" != *libx264* ]]; then
    missing_input_part "vtdec-va: interlaced case: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)" ||
        fail "interlaced case: no libx264 encoder in ffmpeg"
elif ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=352x288:rate=25" -frames:v 10 -c:v libx264 \
        -flags +ildct+ilme -x264-params interlaced=1 -f h264 "$interlaced" 2>"$work/interlaced.encode"; then
    want="$(ffmpeg -nostdin -v error -i "$interlaced" -f rawvideo -pix_fmt yuv420p - | md5sum | cut -d' ' -f1)"
    rc=0
    decode "$interlaced" require "$work/i.yuv" >"$work/interlaced-require.log" 2>&1 || rc=$?
    auto_rc=0
    decode "$interlaced" auto "$work/i.yuv" >"$work/interlaced-auto.log" 2>&1 || auto_rc=$?
    got="$(md5sum <"$work/i.yuv" | cut -d' ' -f1)"
    if [ "$rc" != 0 ] && grep -q "interlaced coding.*not supported by the VA path" "$work/interlaced-require.log" &&
       [ "$auto_rc" = 0 ] && [ "$got" = "$want" ] && grep -q "with libavcodec (software)" "$work/interlaced-auto.log"; then
        echo "interlaced (x264 interlaced=1): require: $(grep -m1 -o "interlaced coding[^;)]*" "$work/interlaced-require.log"); auto: software, exact"
    else
        fail "interlaced stream: require exit $rc, auto exit $auto_rc, md5 $got (libavcodec: $want)"
    fi
else
    fail "could not encode an interlaced stream with libx264"; head -3 "$work/interlaced.encode"
fi

echo
echo "== frame_num gaps (8.2.5.2): inferred frames are surfaces in ReferenceFrames"
# tests/frame_num_gap_stream.py turns an x264 Baseline stream into one with two frame_num gaps whose
# last pictures predict from a fixed index of lists that count the inferred frames; the nvdec and
# mesa personalities check that every inferred frame is in ReferenceFrames (those devices build
# their lists from it), which fails when the inferred frames get no surface.
gap_base="$work/gap-base.264"
gap="$work/frame-num-gap.264"
if [[ "$(ffmpeg -hide_banner -encoders 2>/dev/null || true)" != *libx264* ]]; then
    missing_input_part "vtdec-va: frame_num gap case: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)" ||
        fail "frame_num gap case: no libx264 encoder in ffmpeg"
elif ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=128x96:rate=25" -frames:v 10 -c:v libx264 \
        -profile:v baseline -x264-params ref=4:bframes=0:keyint=300 -f h264 "$gap_base" 2>"$work/gap.encode" &&
     python3 "$root/tests/frame_num_gap_stream.py" "$gap_base" "$gap"; then
    gap_want="$(ffmpeg -nostdin -v error -i "$gap" -f rawvideo -pix_fmt yuv420p - | md5sum | cut -d' ' -f1)"
    # The last two frames are copies of the last x264 frame (exactly, no residual).
    gap_copies="$(ffmpeg -nostdin -v error -i "$gap" -f framemd5 - | grep -v '^#' | tail -3 | awk -F', *' '{ print $6 }' | sort -u | wc -l)"
    [ "$gap_copies" = 1 ] || fail "frame_num gap stream: libavcodec does not decode its last two frames as copies of frame 10"
    for personality in "${SWIFTVT_VA_PERSONALITY:-}" nvdec mesa; do
        rc=0
        SWIFTVT_VA_PERSONALITY="$personality" SWIFTVT_VA_REPORT="$work/gap.report" SWIFTVT_VA_SELFCHECK=1 \
            decode "$gap" require "$work/gap.yuv" >"$work/gap.log" 2>&1 || rc=$?
        md5="$(md5sum <"$work/gap.yuv" | cut -d' ' -f1)"
        frames=$(($(stat -c %s "$work/gap.yuv") / (128 * 96 * 3 / 2)))
        validation="$(count "VALIDATION" "$work/gap.report")"
        if [ "$rc" = 0 ] && [ "$md5" = "$gap_want" ] && [ "$frames" = 12 ] && [ "$validation" = 0 ] &&
           grep -q "with VA-API" "$work/gap.log"; then
            echo "personality ${personality:-none}: 12 frames, equal to libavcodec, 0 validation complaints"
        else
            fail "frame_num gaps, personality ${personality:-none}: exit $rc, $frames frames, md5 $md5 (libavcodec: $gap_want), $validation validation complaint(s)"
            grep -m3 "VALIDATION" "$work/gap.report" | cut -c1-300 | sed 's/^/    /' || true
        fi
    done
else
    fail "could not make the frame_num gap stream"; head -3 "$work/gap.encode"
fi

echo
echo "== hardware=disable never opens a VA display"
rc=0
SWIFTVT_VA_LOG=1 decode "$small" disable "$work/disable.yuv" >"$work/disable.log" 2>&1 || rc=$?
if [ "$rc" = 0 ] && [ "$(md5sum <"$work/disable.yuv" | cut -d' ' -f1)" = "$small_md5" ] &&
   ! grep -q "swiftvt_sw\|libva" "$work/disable.log"; then
    echo "disable: software, exact, libva never loaded the driver"
else
    fail "hardware=disable touched VA-API or decoded wrongly (exit $rc)"
fi

echo
echo "== an SPS re-sent mid-GOP with only its VUI changed: references kept, one VA context"
# The same slices; the SPS/PPS that h264_metadata rewrote (colour description, full range) are
# inserted before picture 10, a non-IDR picture. Nothing decoding depends on changed, so the
# decoder adopts the SPS without a new sequence (GStreamer's H.264 decoder does the same): the
# pictures are the original's, and the VA context is not made again (NVDEC stalls on that).
if gst-launch-1.0 -q videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 \
        ! x264enc key-int-max=30 bframes=2 speed-preset=ultrafast ! video/x-h264,stream-format=byte-stream,profile=high \
        ! filesink location="$work/vui-original.h264" &&
   ffmpeg -v error -y -i "$work/vui-original.h264" -c copy \
        -bsf:v h264_metadata=colour_primaries=9:transfer_characteristics=16:matrix_coefficients=9:video_full_range_flag=1 \
        "$work/vui-modified.h264" &&
   /usr/bin/python3 "$root/tests/splice_sps.py" "$work/vui-original.h264" "$work/vui-modified.h264" "$work/vui-spliced.h264" 10 &&
   gst-launch-1.0 -q filesrc location="$work/vui-original.h264" ! h264parse ! avdec_h264 ! video/x-raw,format=I420 \
        ! filesink location="$work/vui-reference.yuv"; then
    rc=0
    SWIFTVT_VA_LOG=1 decode "$work/vui-spliced.h264" require "$work/vui-spliced.yuv" >"$work/vui.log" 2>&1 || rc=$?
    expected="$(md5sum <"$work/vui-reference.yuv" | cut -d' ' -f1)"
    got="$(md5sum <"$work/vui-spliced.yuv" | cut -d' ' -f1)"
    contexts="$(grep -c 'vaCreateContext:' "$work/vui.log" || true)"
    if [ "$rc" = 0 ] && [ "$got" = "$expected" ] && [ "$contexts" = 1 ]; then
        echo "VUI-only SPS change mid-GOP: MD5 $got = avdec_h264 on the original stream, $contexts VA context"
    else
        fail "VUI-only SPS change mid-GOP: exit $rc, MD5 $got (expected $expected), $contexts VA contexts (expected 1)"
    fi
else
    fail "could not make the stream with a re-sent SPS (x264enc, ffmpeg h264_metadata, tests/splice_sps.py)"
fi

echo
echo "== one VA display per process: the SwiftVT elements of a pipeline share it"
# shared_display LABEL PIPELINE: the driver writes one live-objects line at each vaTerminate, one
# per display opened.
shared_display() {
    local rc=0 displays
    rm -f "$work/shared.report"
    SWIFTVT_VA_REPORT="$work/shared.report" GST_DEBUG="vtdec:5,vtenc:5" GST_DEBUG_NO_COLOR=1 "$run_pipeline" --timeout 120 -- \
        $2 >"$work/shared.log" 2>&1 || rc=$?
    displays="$(grep -c '^live-objects' "$work/shared.report" || true)"
    if [ "$rc" = 0 ] && [ "$displays" = 1 ] && grep -q "shared with the other SwiftVT elements" "$work/shared.log"; then
        echo "$1: one VA display for all ($displays vaTerminate)"
    else
        fail "$1: exit $rc, $displays displays opened (expected 1, shared)"
    fi
}
shared_display "two vtdec" "filesrc location=$small ! h264parse-to-avcc ! tee name=t t. ! queue ! vtdec hardware=require ! fakesink \
    t. ! queue ! vtdec hardware=require ! fakesink"
# A decode-only device (the nvdec personality) has no encoder to share with.
if [ "${SWIFTVT_VA_PERSONALITY:-}" != nvdec ]; then
    shared_display "vtenc ! vtdec" "videotestsrc num-buffers=10 ! video/x-raw,format=I420,width=320,height=240 \
        ! vtenc hardware=require ! vtdec hardware=require ! fakesink"
fi

echo
echo "== a failed device discovery is not remembered: the next session of the same elements finds the device"
# tests/va_discovery_retry.py: a Python application's first run with the driver offering no H.264
# (SWIFTVT_VA_NO_H264=any) decodes and encodes in software; after the variable is unset, READY ->
# PLAYING again uses VA-API (active-backend), as after a driver was installed or a permission fixed.
if /usr/bin/python3 "$root/tests/va_discovery_retry.py" "$small" >"$work/retry.log" 2>&1; then
    grep -E "^vt(dec|enc):" "$work/retry.log"
else
    fail "discovery after a failed one: $(grep -E "^vt(dec|enc):|Error|error" "$work/retry.log" | tr '\n' ' ' | cut -c1-400)"
fi

echo
if [ "$failures" -gt 0 ]; then
    echo "vtdec-va: $failures failure(s)"
    exit 1
fi
echo "vtdec-va: all checks passed ($decoded_ok streams exact on the VA path, $refused_ok refused streams handled)"
