#!/usr/bin/env bash
# FFmpeg's own VA-API client (an independent client) on SwiftVT's software VA driver
# (tests/va-driver/), on an Xvfb display through scripts/with-software-va.sh:
#
# 1. every undamaged, progressive, 8-bit 4:2:0 corpus stream is decoded with
#      ffmpeg -init_hw_device vaapi=va:$DISPLAY,connection_type=x11 -hwaccel vaapi
#             -hwaccel_output_format vaapi -i STREAM -vf hwdownload,format=nv12 -pix_fmt <native> ...
#    and must give MANIFEST.tsv's ref_md5 (all frames, cropped, in the stream's native pixel format,
#    as the manifest defines it), with zero VALIDATION complaints from the driver, zero SELFCHECK
#    failures and no VA object left at vaTerminate (pic_order_cnt_type 1 streams included: the
#    driver rebuilds them as type 0 from FFmpeg's POCs). Streams the driver refuses are listed as
#    refused, not failed;
# 2. the validation layer is alive: each simulated client bug (SWIFTVT_VA_TAMPER) is reported,
#    naming the field, and fails the picture;
# 3. fault injection: each SWIFTVT_VA_FAIL value, a busy device and a failed vaEndPicture end in a
#    clean FFmpeg error or a reported decoding error, never a hang (every run is under timeout 300);
# 4. both image read-back paths (vaDeriveImage, vaCreateImage + vaGetImage) give the same pictures;
# 5. streams generated with libx264 for what the corpus lacks (asymmetric 4x4 and 8x8 scaling
#    matrices, multiple slices, B-pyramid, an odd size) match libavcodec's own decoding;
# 6. driver personalities (SWIFTVT_VA_PERSONALITY=ihd|mesa|nvdec, tests/va-driver/README.md): a
#    subset of the corpus (a pic_order_cnt_type 1 stream among them) decodes exactly under each,
#    the personality is the one vaInitialize read, completion is asynchronous (a latency of 100 ms
#    per picture shows in the run time), and iHD's decoding error from vaSyncSurface reaches
#    FFmpeg. The whole test also runs with SWIFTVT_VA_PERSONALITY set in the environment (every
#    run then has that personality unless a section sets another).
#
# Prints a per-stream table. Exit 0 when everything holds, 1 otherwise, 77 (skipped) when the corpus,
# FFmpeg or Xvfb is absent (1 instead under SWIFTVT_REQUIRE_TEST_INPUTS, as in CI; so is a missing
# libx264 encoder, which locally skips only the generated streams). Environment: SWIFTVT_CORPUS
# (default ../shared/corpus), SWIFTVT_VA_DRIVER_DIR (where the driver is built),
# SWIFTVT_FFMPEG_PARAMLOG_DIR (keep the driver's normalised parameter log of each stream there,
# <stream>.paramlog, for comparison with another client).
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/tests/lib/require.sh"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
manifest="$corpus/h264/MANIFEST.tsv"
require_file "$manifest" "va-driver-ffmpeg: test corpus not found at $corpus (set SWIFTVT_CORPUS to the folder holding h264/MANIFEST.tsv)"
for tool in ffmpeg ffprobe; do
    require_command "$tool" "va-driver-ffmpeg: $tool not found (Debian package ffmpeg; scripts/install-deps.sh installs it)"
done
# One Xvfb and one driver build for the whole test.
if [ -z "${SWIFTVT_VA_FFMPEG_WRAPPED:-}" ]; then
    exec env SWIFTVT_VA_FFMPEG_WRAPPED=1 bash "$root/scripts/with-software-va.sh" bash "$0" "$@"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/va-driver-ffmpeg.XXXXXX")"
trap 'rm -rf "$work"' EXIT
source "$root/tests/lib/va-report.sh"
damaged="$va_damaged_streams"
failures=0
fail() {
    echo "va-driver-ffmpeg: FAIL: $*"
    failures=$((failures + 1))
}

# decode STREAM PIX_FMT OUTPUT [FFMPEG OPTIONS...]: FFmpeg's VA client, frames read back with
# hwdownload. allow_profile_mismatch lets FFmpeg try plain Baseline streams on the Constrained
# Baseline profile (what VA drivers offer). The driver's variables come from the caller's env.
decode() {
    local stream="$1" pix_fmt="$2" output="$3"
    shift 3
    timeout 300 ffmpeg -nostdin -hide_banner -v error \
        -init_hw_device "vaapi=va:$DISPLAY,connection_type=x11" -hwaccel vaapi -hwaccel_device va \
        -hwaccel_output_format vaapi -hwaccel_flags allow_profile_mismatch \
        -i "$stream" "$@" -vf hwdownload,format=nv12 -pix_fmt "$pix_fmt" -f rawvideo "$output"
}



echo "== corpus through FFmpeg's VA-API client (driver: $LIBVA_DRIVERS_PATH, display $DISPLAY)"
printf '%-44s %7s %-5s %10s %9s %-7s %s\n' stream frames md5 validation selfcheck leaks result
decoded_ok=0
while IFS=$'\t' read -r file _bytes _sha width height _profile frames ref_md5 _avdec_md5; do
    [ "$file" = file ] && continue
    stream="$corpus/h264/$file"
    if [[ "$damaged" == *" $file "* ]]; then
        printf '%-44s %7s %-5s %10s %9s %-7s %s\n' "$file" - - - - - "skipped: damaged on purpose"
        continue
    fi
    probe="$(ffprobe -v error -select_streams v:0 -show_entries stream=pix_fmt,field_order -of csv=p=0 "$stream")"
    pix_fmt="${probe%%,*}"
    field_order="${probe#*,}"
    if [ "$field_order" != progressive ] && [ "$field_order" != unknown ]; then
        printf '%-44s %7s %-5s %10s %9s %-7s %s\n' "$file" - - - - - "skipped: $field_order (frames only)"
        continue
    fi
    if [ "$pix_fmt" != yuv420p ] && [ "$pix_fmt" != yuvj420p ]; then
        printf '%-44s %7s %-5s %10s %9s %-7s %s\n' "$file" - - - - - "skipped: $pix_fmt (8-bit 4:2:0 only)"
        continue
    fi
    report="$work/$file.report"
    paramlog="$work/$file.paramlog"
    rc=0
    SWIFTVT_VA_REPORT="$report" SWIFTVT_VA_SELFCHECK=1 SWIFTVT_VA_PARAMLOG="$paramlog" \
        decode "$stream" "$pix_fmt" "$work/out.yuv" -y 2>"$work/$file.stderr" || rc=$?
    md5="$(md5sum <"$work/out.yuv" | cut -d' ' -f1)"
    frame_size=$((width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)))
    got_frames=$(($(stat -c %s "$work/out.yuv") / frame_size))
    rm -f "$work/out.yuv"
    validation="$(count "VALIDATION" "$report")"
    selfcheck="$(count "SELFCHECK" "$report")"
    refused="$(count "REFUSED" "$report")"
    leaked="$(leaks "$report")"
    terminated="$(count "^live-objects" "$report")"
    md5_ok=no
    [ "$md5" = "$ref_md5" ] && md5_ok=yes
    if [ -n "${SWIFTVT_FFMPEG_PARAMLOG_DIR:-}" ] && [ -f "$paramlog" ]; then
        mkdir -p "$SWIFTVT_FFMPEG_PARAMLOG_DIR"
        cp "$paramlog" "$SWIFTVT_FFMPEG_PARAMLOG_DIR/$file.paramlog"
    fi
    if [ "$refused" -gt 0 ]; then
        result="refused by the driver: $(grep -m1 REFUSED "$report" | sed 's/.*REFUSED: //; s/:.*//')"
    elif [ "$rc" = 124 ]; then
        result="FAIL: timed out"
        fail "$file: ffmpeg timed out"
    elif [ "$rc" != 0 ] || [ "$md5_ok" != yes ] || [ "$validation" != 0 ] || [ "$selfcheck" != 0 ] ||
         [ -n "$leaked" ] || [ "$terminated" = 0 ] || [ "$got_frames" != "$frames" ]; then
        result="FAIL (ffmpeg exit $rc, $got_frames/$frames frames)"
        fail "$file: exit $rc, md5 $md5 (want $ref_md5), $validation validation complaint(s), $selfcheck self-check failure(s), ${leaked:-no leak}, $terminated vaTerminate"
        grep -m5 "VALIDATION\|SELFCHECK\|DECODE" "$report" 2>/dev/null | sed 's/^/    /' || true
        head -5 "$work/$file.stderr" | sed 's/^/    /'
    else
        result=ok
        decoded_ok=$((decoded_ok + 1))
    fi
    printf '%-44s %7s %-5s %10s %9s %-7s %s\n' "$file" "$got_frames" "$md5_ok" "$validation" "$selfcheck" \
        "$([ -n "$leaked" ] && echo yes || echo no)" "$result"
done <"$manifest"
if [ "$decoded_ok" -lt 3 ]; then
    fail "only $decoded_ok stream(s) decoded correctly; expected the whole corpus"
fi

echo
echo "== generated streams (libx264, made in a temporary folder): what the corpus does not cover"
# Asymmetric scaling matrices in both 4x4 and 8x8 (a raster/zig-zag mix-up or a transposition
# changes the pictures), 8x8 transform, three slices per picture, B-pyramid (MMCO), explicit
# weighted P prediction, four references; and a size that is not a multiple of 16 (right and
# bottom cropping of the coded picture).
printf '%-44s %7s %-5s %10s %9s %-7s %s\n' stream frames md5 validation selfcheck leaks result
encoders="$(ffmpeg -hide_banner -encoders 2>/dev/null || true)"
if [[ "$encoders" != *libx264* ]]; then
    missing_input_part "va-driver-ffmpeg: generated streams: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)" ||
        fail "generated streams: no libx264 encoder in ffmpeg"
else
    python3 - "$work/asymmetric.cqm" <<'PY'
import sys
def matrix(n, base, step):
    return ",".join(str(min(255, base + step * i + (i % n) * 3)) for i in range(n * n))
names = ["INTRA4X4_LUMA", "INTRA4X4_CHROMAU", "INTRA4X4_CHROMAV", "INTER4X4_LUMA", "INTER4X4_CHROMAU", "INTER4X4_CHROMAV"]
text = [f"{name} =\n{matrix(4, 6 + k, 2)}\n" for k, name in enumerate(names)]
text += [f"INTRA8X8_LUMA =\n{matrix(8, 6, 1)}\n", f"INTER8X8_LUMA =\n{matrix(8, 9, 1)}\n"]
open(sys.argv[1], "w").write("\n".join(text))
PY
    for case in "high-cqm-slices-pyramid 352x288 high cqmfile=$work/asymmetric.cqm:8x8dct=1:bframes=3:b-pyramid=normal:weightp=2:slices=3:ref=4:keyint=20" \
                "main-cavlc-odd-size 322x182 main cabac=0:bframes=2:weightp=1:ref=3:keyint=15"; do
        read -r name size profile params <<<"$case"
        stream="$work/$name.264"
        if ! ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=$size:rate=25" -frames:v 40 -c:v libx264 \
            -profile:v "$profile" -x264-params "$params" -f h264 "$stream" 2>"$work/$name.encode"; then
            fail "$name: could not be encoded"; head -3 "$work/$name.encode"; continue
        fi
        ref_md5="$(ffmpeg -nostdin -v error -flags unaligned -threads 1 -i "$stream" -f rawvideo -pix_fmt yuv420p - | md5sum | cut -d' ' -f1)"
        report="$work/$name.report"
        rc=0
        SWIFTVT_VA_REPORT="$report" SWIFTVT_VA_SELFCHECK=1 decode "$stream" yuv420p "$work/out.yuv" -y 2>"$work/$name.stderr" || rc=$?
        md5="$(md5sum <"$work/out.yuv" | cut -d' ' -f1)"
        width="${size%x*}"; height="${size#*x}"
        got_frames=$(($(stat -c %s "$work/out.yuv") / (width * height * 3 / 2)))
        rm -f "$work/out.yuv"
        validation="$(count "VALIDATION" "$report")"
        selfcheck="$(count "SELFCHECK" "$report")"
        leaked="$(leaks "$report")"
        md5_ok=no
        [ "$md5" = "$ref_md5" ] && md5_ok=yes
        if [ "$rc" = 0 ] && [ "$md5_ok" = yes ] && [ "$validation" = 0 ] && [ "$selfcheck" = 0 ] && [ -z "$leaked" ] &&
           [ "$got_frames" = 40 ]; then
            result=ok
        else
            result="FAIL (ffmpeg exit $rc)"
            fail "$name: exit $rc, md5 $md5 (libavcodec: $ref_md5), $validation validation complaint(s), ${leaked:-no leak}"
            grep -m5 "VALIDATION\|SELFCHECK\|DECODE" "$report" 2>/dev/null | sed 's/^/    /' || true
        fi
        printf '%-44s %7s %-5s %10s %9s %-7s %s\n' "$name" "$got_frames" "$md5_ok" "$validation" "$selfcheck" \
            "$([ -n "$leaked" ] && echo yes || echo no)" "$result"
    done
fi

# A short stream for the error paths, one with explicit weighted prediction and several reference
# frames for the validation self-test.
small="$corpus/h264/BA_MW_D.264"
rich="$corpus/h264/VID_1280x720_cabac_temporal_direct.264"

echo
echo "== validation self-test (SWIFTVT_VA_TAMPER: a simulated client bug must be reported and fail the picture)"
printf '%-12s %-28s %11s %s\n' tamper "expected field" complaints result
for case in "bit-offset slice_data_bit_offset" "ref-list RefPicList0" "poc CurrPic.TopFieldOrderCnt" \
            "ref-frames ReferenceFrames" "weights weights_l0" "qp-delta slice_qp_delta"; do
    tamper="${case%% *}"
    field="${case#* }"
    report="$work/tamper-$tamper.report"
    rc=0
    SWIFTVT_VA_TAMPER="$tamper" SWIFTVT_VA_REPORT="$report" \
        decode "$rich" yuv420p /dev/null -y -frames:v 12 2>"$work/tamper.stderr" || rc=$?
    complaints="$(count "VALIDATION: [^:]*$field" "$report")"
    if [ "$rc" = 124 ]; then
        result="FAIL: timed out"
        fail "tamper $tamper: timed out"
    elif [ "$complaints" -gt 0 ] && grep -q "Failed to end picture" "$work/tamper.stderr"; then
        result="ok: $(grep -m1 "VALIDATION: [^:]*$field" "$report" | sed 's/.*VALIDATION: //')"
    else
        result="FAIL: not reported (ffmpeg exit $rc)"
        fail "tamper $tamper: no VALIDATION line naming $field, or vaEndPicture did not fail"
    fi
    printf '%-12s %-28s %11s %s\n' "$tamper" "$field" "$complaints" "$result"
done

echo
echo "== fault injection (BA_MW_D.264; every run under timeout 300; leaks '-': FFmpeg exited without vaTerminate)"
printf '%-34s %5s %-6s %s\n' injection exit leaks outcome
for case in "SWIFTVT_VA_FAIL=create-config" "SWIFTVT_VA_FAIL=create-context" "SWIFTVT_VA_FAIL=create-surfaces" \
            "SWIFTVT_VA_BUSY=1" "SWIFTVT_VA_FAIL_END_PICTURE=5"; do
    report="$work/fault.report"
    rm -f "$report"
    rc=0
    (export "${case?}" SWIFTVT_VA_REPORT="$report"; decode "$small" yuv420p "$work/fault.yuv" -y) 2>"$work/fault.stderr" || rc=$?
    got_frames=$(($(stat -c %s "$work/fault.yuv" 2>/dev/null || echo 0) / 38016))
    leaked="$(leaks "$report")"
    message="$(grep -v "^swiftvt_sw" "$work/fault.stderr" | grep -m1 -i "fail\|error\|busy" | sed 's/^\[[^]]*\] //' || true)"
    # FFmpeg's CLI leaves the VA display open when it gives up during setup: no vaTerminate, no count.
    leak_column=no
    [ -n "$leaked" ] && leak_column=yes
    [ "$(count "^live-objects" "$report")" = 0 ] && leak_column="-"
    if [ "$rc" = 124 ]; then
        outcome="FAIL: hang (timed out)"
        fail "$case: ffmpeg hung"
    elif [ "$case" = "SWIFTVT_VA_FAIL_END_PICTURE=5" ]; then
        # One picture fails: FFmpeg reports it and goes on; the display is terminated normally.
        if grep -q "Failed to end picture" "$work/fault.stderr" && [ -z "$leaked" ] &&
           [ "$(count "^live-objects" "$report")" -gt 0 ]; then
            outcome="ok: error reported, decoding went on ($got_frames frames, exit $rc): $message"
        else
            outcome="FAIL: $message"
            fail "$case: the failed vaEndPicture was not reported, or objects leaked"
        fi
    elif [ "$rc" != 0 ] && [ -n "$message" ]; then
        outcome="ok: clean error: $message"
    else
        outcome="FAIL: exit $rc without an error message"
        fail "$case: FFmpeg did not fail cleanly"
    fi
    printf '%-34s %5s %-6s %s\n' "$case" "$rc" "$leak_column" "$outcome"
    rm -f "$work/fault.yuv"
done

echo
echo "== image read-back paths (BA_MW_D.264)"
want="$(grep -P "^BA_MW_D.264\t" "$manifest" | cut -f8)"
for no_derive in 0 1; do
    rc=0
    SWIFTVT_VA_NO_DERIVE="$no_derive" decode "$small" yuv420p "$work/path.yuv" -y 2>"$work/path.stderr" || rc=$?
    md5="$(md5sum <"$work/path.yuv" | cut -d' ' -f1)"
    path="vaDeriveImage allowed"
    [ "$no_derive" = 1 ] && path="vaDeriveImage refused (vaGetImage)"
    if [ "$rc" = 0 ] && [ "$md5" = "$want" ]; then
        echo "$path: ok"
    else
        echo "$path: FAIL (exit $rc, md5 $md5)"
        fail "$path: wrong pictures"
    fi
done

echo
echo "== driver personalities (SWIFTVT_VA_PERSONALITY; each run under timeout 300)"
printf '%-6s %-44s %7s %-5s %10s %-7s %s\n' driver stream frames md5 validation leaks result
for personality in ihd mesa nvdec; do
    for file in BA_MW_D.264 BAMQ1_JVC_C.264 Cisco_Men_whisper_640x320_CABAC_Bframe_9.264 test_scalinglist_jm.264; do
        line="$(grep -P "^$file\t" "$manifest")"
        IFS=$'\t' read -r _file _bytes _sha width height _profile frames ref_md5 _avdec_md5 <<<"$line"
        report="$work/$personality-$file.report"
        rc=0
        SWIFTVT_VA_PERSONALITY="$personality" SWIFTVT_VA_LOG=1 SWIFTVT_VA_REPORT="$report" \
            decode "$corpus/h264/$file" yuv420p "$work/out.yuv" -y 2>"$work/$personality.stderr" || rc=$?
        md5="$(md5sum <"$work/out.yuv" | cut -d' ' -f1)"
        frame_size=$((width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)))
        got_frames=$(($(stat -c %s "$work/out.yuv") / frame_size))
        rm -f "$work/out.yuv"
        validation="$(count "VALIDATION" "$report")"
        leaked="$(leaks "$report")"
        md5_ok=no
        [ "$md5" = "$ref_md5" ] && md5_ok=yes
        if [ "$rc" = 0 ] && [ "$md5_ok" = yes ] && [ "$validation" = 0 ] && [ -z "$leaked" ] &&
           [ "$got_frames" = "$frames" ] && grep -q "personality $personality, latency 3 ms" "$work/$personality.stderr"; then
            result=ok
        else
            result="FAIL (ffmpeg exit $rc)"
            fail "personality $personality: $file: exit $rc, md5 $md5 (want $ref_md5), $validation validation complaint(s), ${leaked:-no leak}, initialised as: $(grep -m1 -o "personality [a-z]*, latency [0-9]* ms" "$work/$personality.stderr" || echo "?")"
            grep -m3 "VALIDATION\|DECODE" "$report" 2>/dev/null | sed 's/^/    /' || true
        fi
        printf '%-6s %-44s %7s %-5s %10s %-7s %s\n' "$personality" "$file" "$got_frames" "$md5_ok" "$validation" \
            "$([ -n "$leaked" ] && echo yes || echo no)" "$result"
    done
done
# Asynchronous completion: FFmpeg waits for each of 100 pictures before reading it back. Its
# decoder runs a few pictures ahead of the read-back, so the waits overlap: 100 ms each gave
# about 4 s here (0.3 s without a latency); 2 s is the bound.
started=$(date +%s.%N)
rc=0
SWIFTVT_VA_PERSONALITY=mesa SWIFTVT_VA_LATENCY_MS=100 decode "$small" yuv420p "$work/async.yuv" -y 2>"$work/async.stderr" || rc=$?
seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
async_md5="$(md5sum <"$work/async.yuv" | cut -d' ' -f1)"
if [ "$rc" = 0 ] && [ "$async_md5" = "$(grep -P "^BA_MW_D.264\t" "$manifest" | cut -f8)" ] &&
   awk -v s="$seconds" 'BEGIN { exit !(s >= 2.0) }'; then
    echo "asynchronous completion (100 ms per picture, 100 pictures): exact, $seconds s"
else
    fail "asynchronous completion: exit $rc, md5 $async_md5, $seconds s (at least 2 s expected with 100 ms per picture)"
fi
# iHD: a damaged picture is reported by vaSyncSurface (VA_STATUS_ERROR_DECODING_ERROR).
rc=0
SWIFTVT_VA_PERSONALITY=ihd SWIFTVT_VA_SYNC_ERROR=decoding-error:5 \
    decode "$small" yuv420p /dev/null -y 2>"$work/sync-error.stderr" || rc=$?
if [ "$rc" != 124 ] && grep -q "Failed to sync surface" "$work/sync-error.stderr"; then
    echo "ihd, SWIFTVT_VA_SYNC_ERROR=decoding-error:5: FFmpeg sees it: $(grep -m1 "Failed to sync surface" "$work/sync-error.stderr" | sed 's/^\[[^]]*\] //')"
else
    fail "ihd: the decoding error of vaSyncSurface did not reach FFmpeg (exit $rc)"
fi

echo
if [ "$failures" -gt 0 ]; then
    echo "va-driver-ffmpeg: $failures failure(s)"
    exit 1
fi
echo "va-driver-ffmpeg: all checks passed ($decoded_ok streams decoded exactly)"
