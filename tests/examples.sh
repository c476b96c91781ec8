#!/usr/bin/env bash
# The sessions API without GStreamer (Examples/, README "Examples"): builds the three example
# programs and checks what they write, not only their exit status.
#
# - swiftvt-example-decode (seed case 2): corpus streams (Baseline, Main with CABAC and B
#   pictures, High with scaling lists) decoded to raw frames whose MD5 equals MANIFEST.tsv's
#   ref_md5, in software and (on the project's software VA driver) with --hardware require;
# - swiftvt-example-compress (seed case 4): the Annex B stream has an SPS and a PPS right before
#   every IDR picture, as many IDR pictures as the program reports, Main profile, no B pictures
#   (no frame reordering), every frame decodable by FFmpeg;
# - swiftvt-example-multipass (the WWDC multi-pass flow): more than one pass, a stream FFmpeg
#   decodes to every frame, the bit rate within 5 % of the target.
#
#   tests/examples.sh [SWIFTPM_SCRATCH_PATH]   # meson passes swift-test's scratch path (a shared debug build)
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/tests/lib/require.sh"
scratch="${1:-$root/.build}"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
manifest="$corpus/h264/MANIFEST.tsv"
require_file "$manifest" "examples: test corpus not found at $corpus (set SWIFTVT_CORPUS to the folder holding h264/MANIFEST.tsv)"
for tool in ffmpeg ffprobe; do
    require_command "$tool" "examples: $tool not found (Debian package ffmpeg; scripts/install-deps.sh installs it)"
done
work="$(mktemp -d /tmp/swiftvt-examples-XXXXXX)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
    echo "examples: FAIL: $*"
    failures=$((failures + 1))
}

echo "== building the examples (scratch path $scratch)"
for product in swiftvt-example-decode swiftvt-example-compress swiftvt-example-multipass; do
    swift build --package-path "$root" --scratch-path "$scratch" --product "$product" 2>&1 \
        | grep -v "prohibited flag" | tail -1
done
bin="$(swift build --package-path "$root" --scratch-path "$scratch" --show-bin-path 2>/dev/null)"

echo
echo "== swiftvt-example-decode: corpus streams to raw frames, MD5 against the manifest"
# decode_checked STREAM HARDWARE [WRAPPER...]
decode_checked() {
    local file="$1" hardware="$2"
    shift 2
    local want frames
    want="$(awk -F'\t' -v f="$file" '$1 == f { print $8 }' "$manifest")"
    frames="$(awk -F'\t' -v f="$file" '$1 == f { print $7 }' "$manifest")"
    local rc=0
    "$@" "$bin/swiftvt-example-decode" "$corpus/h264/$file" "$work/frames.yuv" --hardware "$hardware" \
        >"$work/decode.log" 2>&1 || rc=$?
    local got
    got="$(md5sum <"$work/frames.yuv" 2>/dev/null | cut -d' ' -f1)"
    if [ "$rc" = 0 ] && [ "$got" = "$want" ] && grep -q "^$frames frames" "$work/decode.log"; then
        echo "$file (--hardware $hardware): $(tail -1 "$work/decode.log"), MD5 as in the manifest"
    else
        fail "$file (--hardware $hardware): exit $rc, md5 $got (manifest: $want, $frames frames): $(tail -2 "$work/decode.log" | tr '\n' ' ')"
    fi
    rm -f "$work/frames.yuv"
}
for file in BA_MW_D.264 Cisco_Men_whisper_640x320_CABAC_Bframe_9.264 test_scalinglist_jm.264; do
    decode_checked "$file" disable
done
# The same program on a VA device (the project's software VA driver on Xvfb): hardware=require.
decode_checked Cisco_Men_whisper_640x320_CABAC_Bframe_9.264 require \
    env SWIFTVT_VA_DRIVER_DIR="${SWIFTVT_VA_DRIVER_DIR:-$root/.build-va-driver}" bash "$root/scripts/with-software-va.sh"
grep -q "VA-API" "$work/decode.log" || fail "--hardware require did not decode with VA-API: $(tail -1 "$work/decode.log")"
# A file that is not H.264: one clear message, exit 1, no output file.
head -c 4096 /dev/urandom >"$work/noise.bin"
rc=0
"$bin/swiftvt-example-decode" "$work/noise.bin" "$work/noise.yuv" >"$work/noise.log" 2>&1 || rc=$?
if [ "$rc" = 1 ] && [ ! -e "$work/noise.yuv" ] && [ ! -e "$work/noise.yuv.partial" ]; then
    echo "a file of noise: exit 1, no output file: $(tail -1 "$work/noise.log")"
else
    fail "a file of noise: exit $rc, output file $(ls "$work"/noise.yuv* 2>/dev/null || echo none)"
fi

echo
echo "== swiftvt-example-compress: Annex B for the network, SPS and PPS before every key frame"
rc=0
"$bin/swiftvt-example-compress" "$work/network.h264" --frames 150 --width 320 --height 240 --hardware disable \
    >"$work/compress.log" 2>&1 || rc=$?
cat "$work/compress.log"
reported_keys="$(sed -n 's/.*(\([0-9]*\) key frames.*/\1/p' "$work/compress.log")"
# The NAL unit types in stream order (Annex B start codes), then every IDR picture's two predecessors.
nal_check="$(/usr/bin/python3 - "$work/network.h264" <<'PY'
import re, sys
data = open(sys.argv[1], "rb").read()
starts = [m.end() for m in re.finditer(b"\x00\x00\x01", data) if m.end() + 1 < len(data)]
types = [data[p] & 0x1F for p in starts]
# The first slice of each IDR picture: first_mb_in_slice 0 is ue(v) "1", the first bit after the
# NAL header (x264's sliced threads make several slices per picture).
idr = [i for i, t in enumerate(types) if t == 5 and data[starts[i] + 1] & 0x80]
ok = all(i >= 2 and types[i - 2] == 7 and types[i - 1] == 8 for i in idr)
print(len(idr), "ok" if ok else "missing")
PY
)"
probe="$(ffprobe -v error -count_frames -show_entries stream=profile,has_b_frames,nb_read_frames -of csv=p=0 "$work/network.h264")"
decode_errors="$(ffmpeg -nostdin -v error -i "$work/network.h264" -f null - 2>&1 | wc -l)"
if [ "$rc" = 0 ] && [ "$nal_check" = "$reported_keys ok" ] && [ "$reported_keys" -ge 2 ] &&
   [ "$probe" = "Main,0,150" ] && [ "$decode_errors" = 0 ]; then
    echo "network.h264: $reported_keys IDR pictures, each right after an SPS and a PPS; ffprobe: $probe (profile, has_b_frames, frames)"
else
    fail "compress: exit $rc, IDR check '$nal_check' (reported $reported_keys key frames), ffprobe '$probe', $decode_errors FFmpeg error line(s)"
fi

echo
echo "== swiftvt-example-multipass: MultiPassStorage + FrameSilo + beginPass/endPass"
rc=0
"$bin/swiftvt-example-multipass" "$work/multipass.h264" --frames 240 --width 320 --height 240 --bitrate 400000 \
    >"$work/multipass.log" 2>&1 || rc=$?
cat "$work/multipass.log"
passes="$(sed -n 's/.*after \([0-9]*\) pass(es).*/\1/p' "$work/multipass.log")"
error_percent="$(sed -n 's/.*(\(-\{0,1\}[0-9.]*\) %).*/\1/p' "$work/multipass.log")"
frames="$(ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$work/multipass.h264" 2>/dev/null || echo 0)"
decode_errors="$(ffmpeg -nostdin -v error -i "$work/multipass.h264" -f null - 2>&1 | wc -l)"
if [ "$rc" = 0 ] && [ "${passes:-0}" -ge 2 ] && [ "$frames" = 240 ] && [ "$decode_errors" = 0 ] &&
   awk -v e="${error_percent:-100}" 'BEGIN { exit !(e <= 5 && e >= -5) }'; then
    echo "multipass.h264: $passes passes, 240 frames decodable by FFmpeg, bit rate ${error_percent} % off the target"
else
    fail "multipass: exit $rc, $passes pass(es), $frames frames, bit-rate error ${error_percent:-?} %, $decode_errors FFmpeg error line(s)"
fi

echo
if [ "$failures" -gt 0 ]; then
    echo "examples: $failures failure(s)"
    exit 1
fi
echo "examples: all checks passed"
