#!/usr/bin/env bash
# Drop-in behaviour (issue 15): SwiftVT as autopluggers and applications meet it.
#
# 1. Registration matches the machine: without a VA device vtdec_hw and vtenc_h264_hw have rank
#    none (never autoplugged); with one (the software VA driver) they outrank vtdec/vtenc and
#    vtdec_hw's sink caps list the profiles the device decodes.
# 2. With avdec_h264 and openh264dec ranked out, playbin, playbin3, decodebin, decodebin3,
#    uridecodebin, gst-play-1.0 and gst-discoverer-1.0 decode a corpus stream with the reference
#    MD5: through vtdec without a device, through vtdec_hw on the software VA driver.
# 3. An unmet hardware=require fails the state change with exactly one ERROR (vtdec, vtdec_hw,
#    vtenc, vtenc_h264_hw, vtmultipasssink), and decodebin given vtdec_hw first moves on to vtdec.
# 4. Caps that can never work give one ERROR from vtdec (not one per retry); a byte-stream labelled
#    alignment=au straight from filesrc is not refused with "Output caps are unfixed".
# 5. The gst-launch-1.0 hang: h264parse-to-avcc ! vtdec hardware=require without a device, 20 runs
#    through gst-launch-1.0 itself (the failure is now synchronous, so its main loop is never
#    needed): 0 hangs. (bench/ has no part in this; 200 runs are shown in the closing note.)
#
# Failing pipelines run through tests/lib/run-pipeline.py (never gst-launch-1.0's main loop), except
# in 5, which is about gst-launch-1.0 itself and bounds each run with timeout(1).
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
stream="$corpus/h264/BA_MW_D.264"
source "$root/tests/lib/require.sh"
require_file "$stream" "autoplug: the test corpus stream $stream (set SWIFTVT_CORPUS to the corpus folder)"
fixture="${SWIFTVT_FIXTURES:-$root/build/fixtures}/yuv422p.264"
require_file "$fixture" "autoplug: the generated 4:2:2 fixture $fixture (meson builds it: scripts/make-test-fixtures.sh)"
reference_md5="$(awk -F'\t' '$1 == "BA_MW_D.264" { print $9 }' "$corpus/h264/MANIFEST.tsv")"
runner=(/usr/bin/python3 "$root/tests/lib/run-pipeline.py")
failures=0
fail() { echo "autoplug: FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "autoplug: ok: $*"; }

if [ "${1:-}" != "--with-device" ]; then
    source "$root/pipelines/lib/plugin-env.sh"
    # No VA device, also on a machine that has a GPU: no X11 display, and a driver name that does
    # not exist for the render nodes.
    unset DISPLAY
    export LIBVA_DRIVER_NAME=swiftvt-no-such-driver
    mode="no VA device"
    expected_decoder=vtdec
else
    mode="software VA driver on $DISPLAY"
    expected_decoder=vtdec_hw
fi
export GST_PLUGIN_FEATURE_RANK="avdec_h264:NONE,openh264dec:NONE"
echo "== $mode"

# 1. Registration.
vtdec_hw_inspect="$(gst-inspect-1.0 vtdec_hw)"
hw_rank="$(awk '/Rank/ { print $NF }' <<<"$vtdec_hw_inspect")"
enc_rank="$(gst-inspect-1.0 vtenc_h264_hw | awk '/Rank/ { print $NF }')"
if [ "$expected_decoder" = vtdec ]; then
    [ "$hw_rank" = "(0)" ] && [ "$enc_rank" = "(0)" ] && pass "vtdec_hw and vtenc_h264_hw have rank none" \
        || fail "vtdec_hw rank $hw_rank, vtenc_h264_hw rank $enc_rank without a device (expected none)"
else
    [ "$hw_rank" = "(129)" ] && [ "$enc_rank" = "(129)" ] && pass "vtdec_hw and vtenc_h264_hw have rank secondary + 1" \
        || fail "vtdec_hw rank $hw_rank, vtenc_h264_hw rank $enc_rank with a device (expected 129)"
    grep -q "profile: { (string)constrained-baseline, (string)baseline, (string)main, (string)high" \
        <<<"$vtdec_hw_inspect" && pass "vtdec_hw's sink caps list the device's profiles" || fail "vtdec_hw's sink caps do not list the device's profiles"
fi

# 2. Autoplugging, with the reference MD5.
printf '%-14s %-10s %6s %-34s %s\n' app decoder frames md5 verdict
check_row() {
    local app="$1" decoder="$2" frames="$3" md5="$4"
    local verdict=ok
    if [ "$decoder" != "$expected_decoder" ] || [ "$md5" != "$reference_md5" ]; then
        verdict="FAIL (expected $expected_decoder, $reference_md5)"
        failures=$((failures + 1))
    fi
    printf '%-14s %-10s %6s %-34s %s\n' "$app" "$decoder" "$frames" "$md5" "$verdict"
}
for app in playbin playbin3 decodebin decodebin3 uridecodebin; do
    line="$(timeout 120 /usr/bin/python3 "$root/tests/autoplug_decode.py" "$app" "$stream" 60 2>/dev/null || true)"
    decoder="$(sed -n 's/.* decoder=\([^ ]*\).*/\1/p' <<<"$line" | head -1)"
    frames="$(sed -n 's/.* frames=\([0-9]*\).*/\1/p' <<<"$line" | head -1)"
    md5="$(sed -n 's/.* md5=\([0-9a-f]*\).*/\1/p' <<<"$line" | head -1)"
    check_row "$app" "${decoder:-none}" "${frames:-0}" "${md5:-none}"
    [ -n "$line" ] || echo "  (no result: $app did not finish)"
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
GST_DEBUG="vtdec:4" GST_DEBUG_NO_COLOR=1 timeout 120 gst-play-1.0 --no-interactive \
    --videosink="videoconvert ! video/x-raw,format=I420 ! fdsink fd=3" --audiosink=fakesink "$stream" \
    3>"$work/play.yuv" >"$work/play.log" 2>&1 || true
play_decoder=none
if grep -q "<swiftvtdechardware[0-9]" "$work/play.log"; then play_decoder=vtdec_hw
elif grep -q "<swiftvtdec[0-9]" "$work/play.log"; then play_decoder=vtdec; fi
check_row gst-play-1.0 "$play_decoder" "$(( $(stat -c %s "$work/play.yuv") / 38016 ))" "$(md5sum <"$work/play.yuv" | cut -d' ' -f1)"
if GST_DEBUG="vtdec:4" GST_DEBUG_NO_COLOR=1 timeout 120 gst-discoverer-1.0 "$stream" >"$work/discover.log" 2>&1 \
    && grep -q "video #0: H.264" "$work/discover.log" && ! grep -qi "error" "$work/discover.log"; then
    pass "gst-discoverer-1.0 reports the H.264 stream without an error"
else
    fail "gst-discoverer-1.0: $(grep -iE 'error|video' "$work/discover.log" | head -3)"
fi

if [ "$expected_decoder" = vtdec_hw ]; then
    # A stream the device cannot decode: vtdec_hw's profile caps keep decodebin on vtdec, and
    # vtdec hardware=require refuses it at the caps (codec_data), not at the first frame.
    line="$(timeout 120 /usr/bin/python3 "$root/tests/autoplug_decode.py" decodebin "$fixture" 60 2>/dev/null || true)"
    grep -q "decoder=vtdec frames=12 .*errors=0 ended=eos" <<<"$line" \
        && pass "decodebin passes over vtdec_hw for a 4:2:2 stream (its caps list the device's profiles) and decodes with vtdec" \
        || fail "4:2:2 through decodebin: $line"
    "${runner[@]}" --timeout 30 filesrc location="$fixture" ! h264parse ! vtdec hardware=require ! fakesink \
        >"$work/refuse.log" 2>&1 || true
    grep -m1 '^ERROR' "$work/refuse.log" | grep -q "vtdec: hardware=require, but the VA-API device cannot decode this stream: chroma_format_idc 2" \
        && pass "vtdec hardware=require refuses a 4:2:2 stream at the caps with one clear ERROR" \
        || { fail "vtdec hardware=require with a 4:2:2 stream"; cat "$work/refuse.log" >&2; }
fi

if [ "$expected_decoder" = vtdec ]; then
    # 3. hardware=require without a device: the state change fails, with one ERROR.
    expect_one_error() {
        local name="$1" pattern="$2"; shift 2
        local rc=0
        "${runner[@]}" --timeout 30 "$@" >"$work/require.log" 2>&1 || rc=$?
        local errors
        errors="$(grep -c '^ERROR: from element' "$work/require.log" || true)"
        if [ "$rc" = 1 ] && [ "$errors" = 1 ] && grep -q "ended by state-change-failure" "$work/require.log" \
            && grep -q "$pattern" "$work/require.log"; then
            pass "$name: the state change fails with one ERROR: $(grep -m1 '^ERROR' "$work/require.log" | cut -c1-160)..."
        else
            fail "$name: exit $rc, $errors ERROR(s); expected one ERROR at the state change matching '$pattern'"
            cat "$work/require.log" >&2
        fi
    }
    expect_one_error "vtdec hardware=require" "vtdec: hardware=require, but no VA-API device here decodes H.264.*Use hardware=auto" \
        filesrc location="$stream" ! h264parse-to-avcc ! vtdec hardware=require ! video/x-raw,format=I420 ! filesink location="$work/out.yuv"
    expect_one_error "vtdec_hw" "vtdec_hw: hardware=require, but no VA-API device" \
        filesrc location="$stream" ! h264parse ! vtdec_hw ! fakesink
    expect_one_error "vtenc hardware=require" "vtenc: hardware=require, but no VA-API device here encodes H.264" \
        videotestsrc num-buffers=5 ! vtenc hardware=require ! fakesink
    expect_one_error "vtenc_h264_hw" "vtenc_h264_hw: hardware=require" videotestsrc num-buffers=5 ! vtenc_h264_hw ! fakesink
    expect_one_error "vtmultipasssink hardware=require" "vtmultipasssink: hardware=require" \
        videotestsrc num-buffers=5 ! vtmultipasssink hardware=require location="$work/mp.mp4"
    [ ! -e "$work/mp.mp4" ] && pass "vtmultipasssink left nothing at its location" || fail "vtmultipasssink wrote $work/mp.mp4"

    # decodebin (decodebin2, with its error filter) given vtdec_hw first moves on to vtdec.
    line="$(GST_PLUGIN_FEATURE_RANK="$GST_PLUGIN_FEATURE_RANK,vtdec_hw:MAX" timeout 120 \
        /usr/bin/python3 "$root/tests/autoplug_decode.py" decodebin "$stream" 60 2>/dev/null || true)"
    if grep -q "decoder=vtdec_hw,vtdec frames=100 md5=$reference_md5 errors=0 ended=eos" <<<"$line"; then
        pass "decodebin tried vtdec_hw, which failed at its state change, and decoded with vtdec"
    else
        fail "decodebin with vtdec_hw first: $line"
    fi

    # 4. One ERROR for caps that can never work.
    expect_vtdec_error_once() {
        local name="$1" pattern="$2"; shift 2
        "${runner[@]}" --timeout 30 "$@" >"$work/caps.log" 2>&1 || true
        local from_vtdec
        from_vtdec="$(grep -c '^ERROR: from element .*swiftvtdec0: ' "$work/caps.log" || true)"
        if [ "$from_vtdec" = 1 ] && grep -m1 '^ERROR' "$work/caps.log" | grep -q "$pattern"; then
            pass "$name: one ERROR from vtdec, first on the bus"
        else
            fail "$name: $from_vtdec ERROR(s) from vtdec (expected 1, first, matching '$pattern')"
            cat "$work/caps.log" >&2
        fi
    }
    expect_vtdec_error_once "avc without codec_data" "stream-format=avc needs codec_data" filesrc location="$stream" ! h264parse \
        ! video/x-h264,stream-format=avc ! capssetter replace=true caps=video/x-h264,stream-format=avc,alignment=au ! vtdec ! fakesink
    expect_vtdec_error_once "a bad codec_data" "codec_data in the caps is not a valid avcC" filesrc location="$stream" ! h264parse \
        ! video/x-h264,stream-format=avc ! capssetter caps="video/x-h264,codec_data=(buffer)0142" ! vtdec ! fakesink
    svc="$corpus/h264/sps_subsetsps_bothVUI.264"
    expect_vtdec_error_once "an SVC stream" "SVC/MVC" filesrc location="$svc" ! h264parse ! vtdec ! fakesink
    rc=0
    "${runner[@]}" --timeout 60 filesrc location="$stream" ! video/x-h264,stream-format=byte-stream,alignment=au ! vtdec \
        ! fakesink >"$work/unfixed.log" 2>&1 || rc=$?
    if [ "$rc" = 0 ] && ! grep -q "unfixed" "$work/unfixed.log"; then
        pass "filesrc ! video/x-h264,stream-format=byte-stream,alignment=au ! vtdec reaches EOS (no 'Output caps are unfixed')"
    else
        fail "byte-stream caps straight from filesrc: exit $rc"; cat "$work/unfixed.log" >&2
    fi

    # 5. gst-launch-1.0 itself on the pipeline that used to hang 2 times in 40.
    hangs=0
    for run in $(seq 1 20); do
        rc=0
        timeout 20 gst-launch-1.0 filesrc location="$stream" ! h264parse-to-avcc ! vtdec hardware=require \
            ! video/x-raw,format=I420 ! filesink location="$work/hang.yuv" >"$work/hang.log" 2>&1 || rc=$?
        [ "$rc" = 124 ] && hangs=$((hangs + 1))
    done
    [ "$hangs" = 0 ] && pass "gst-launch-1.0 with h264parse-to-avcc ! vtdec hardware=require: 0 hangs in 20 runs" \
        || fail "gst-launch-1.0 hung $hangs times in 20 runs"

    # The same checks with a device, on the software VA driver (with-software-va.sh requires Xvfb).
    unset LIBVA_DRIVER_NAME
    bash "$root/scripts/with-software-va.sh" bash "$0" --with-device || failures=$((failures + 1))
fi

if [ "$failures" -gt 0 ]; then
    echo "autoplug ($mode): $failures failure(s)" >&2
    exit 1
fi
echo "autoplug ($mode): all checks passed"
