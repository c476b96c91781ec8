#!/usr/bin/env bash
# Parity with the peers, round 2 (issue 32), the decoding side: each check runs vtdec (or
# h264parse-to-avcc) and the peer (avdec_h264, h264parse) in the same pipeline and fails where
# SwiftVT does less. Row numbers are the issue's table.
#
#  1  reverse playback (seek rate -1.0 over [2 s, 6 s)) of an MP4: the frames avdec_h264 gives,
#     backwards, with the same pictures and time stamps, then EOS; software and VA (vtdec_hw on
#     the software VA driver).
#  2  an application keeping the last K = 4, 8, 32 samples: every frame (copies, appsink) and
#     every frame with GstVideoMeta (zero copy, fakevideosink with a probe keeping references).
#  3  seeking in a raw byte-stream file (no index) through h264parse-to-avcc, against h264parse:
#     accurate and key-unit seeks back and forth on a 10-s file give the pictures h264parse gives
#     under the same times (frame 150 at 5 s); on a 40-s file (seeks by GstBaseParse's byte-rate
#     estimate, where h264parse gives pictures decoded without their references) a picture
#     decoded with its references every time, accurate seeks at the time asked for.
#  7  the latency vtdec reports on live input: none for a constrained-baseline zerolatency stream,
#     the reorder depth with B-frames, equal to avdec_h264's.
#  8  live input through RTP: each picture leaves while its own frame is handled (no frame-thread
#     delay), and none waits for EOS.
# 10  empty input (/dev/null) through h264parse-to-avcc ! vtdec: a clean EOS, as h264parse.
# 11  one-picture streams concatenated (the same IDR and idr_pic_id after SPS/PPS: a 320x240
#     picture and a 1920x1080 picture of 8160 one-macroblock slices, 5 copies each): 5 frames
#     with avdec_h264's pictures through h264parse-to-avcc ! vtdec, as through h264parse.
# 13  a capsfilter switched from I420 to NV12 after 60 frames (RECONFIGURE while playing): vtdec
#     (software and VA) delivers NV12 from the same frame as avdec_h264 ! videoconvert, with the
#     same pictures.
#
# Pipelines that may fail run through Python GI scripts with their own deadlines
# (tests/held_frames.py, tests/live_latency.py), never gst-launch-1.0's main loop.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
source "$root/tests/lib/require.sh"
require_file "$corpus/h264/MANIFEST.tsv" "parity-decoding: the test corpus $corpus (set SWIFTVT_CORPUS to the corpus folder)"
source "$root/pipelines/lib/plugin-env.sh"
gst-inspect-1.0 avdec_h264 >/dev/null 2>&1 || require_input "parity-decoding: avdec_h264 (gstreamer1.0-libav), the peer decoder"
gst-inspect-1.0 x264enc >/dev/null 2>&1 || require_input "parity-decoding: x264enc (gstreamer1.0-plugins-ugly), which makes the test clips"
work="$swiftvt_work_dir"
failures=0
fail() { echo "parity-decoding: FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "parity-decoding: ok: $*"; }
python=(/usr/bin/python3)
src720="$corpus/h264/VID_1280x720_cabac_temporal_direct.264"
require_file "$src720" "parity-decoding: the corpus stream $src720"

# seek.mp4: the 720p clip at 640x360, GOPs of 30 with B-frames, in MP4 (the issue's clip).
gst-launch-1.0 -q filesrc location="$src720" ! h264parse ! avdec_h264 ! videoscale ! video/x-raw,width=640,height=360 \
    ! x264enc key-int-max=30 bframes=2 ! mp4mux ! filesink location="$work/seek.mp4"

# with_va COMMAND...: under the software VA driver (vtdec_hw decodes on it).
with_va() {
    bash "$root/scripts/with-software-va.sh" "$@"
}

# Rows 1 and 2: the peer's line, then vtdec's (software, then VA) must be the same.
held_check() {
    local label="$1" mode="$2"; shift 2
    local peer ours decoder
    peer="$(timeout 120 "${python[@]}" "$root/tests/held_frames.py" "$mode" "$work/seek.mp4" avdec_h264 "$@" 2>/dev/null | tail -1 || true)"
    for decoder in "vtdec hardware=disable" vtdec_hw; do
        if [ "$decoder" = vtdec_hw ]; then
            ours="$(with_va timeout 120 "${python[@]}" "$root/tests/held_frames.py" "$mode" "$work/seek.mp4" "$decoder" "$@" 2>/dev/null | tail -1 || true)"
        else
            ours="$(timeout 120 "${python[@]}" "$root/tests/held_frames.py" "$mode" "$work/seek.mp4" "$decoder" "$@" 2>/dev/null | tail -1 || true)"
        fi
        if [[ "$ours" == *"ended eos"* ]] && [ "$ours" = "$peer" ]; then
            pass "$label, $decoder: $ours (as avdec_h264)"
        else
            fail "$label, $decoder: '$ours'; avdec_h264: '$peer'"
        fi
    done
}
held_check "row 1: reverse playback of [2 s, 6 s)" reverse 2 6
for keep in 4 8 32; do
    held_check "row 2: an application keeping the last $keep samples (copies)" hold "$keep"
done
# Zero copy: the peer copies into its own pool, so its line differs only in the video-meta count.
for keep in 8 32; do
    line="$(timeout 120 "${python[@]}" "$root/tests/held_frames.py" hold-meta "$work/seek.mp4" "vtdec hardware=disable" "$keep" 2>/dev/null | tail -1 || true)"
    if [[ "$line" =~ ^frames\ 300\ .*video_meta\ 300\ ended\ eos$ ]]; then
        pass "row 2: a downstream with GstVideoMeta keeping $keep pictures (zero copy): $line"
    else
        fail "row 2: a downstream with GstVideoMeta keeping $keep pictures: '$line', wanted all 300 frames, each with GstVideoMeta"
    fi
done

# Row 3: seeking in a raw byte-stream file.
gst-launch-1.0 -q filesrc location="$work/seek.mp4" ! qtdemux ! h264parse ! video/x-h264,stream-format=byte-stream \
    ! filesink location="$work/seek.264"
for _ in 1 2 3 4; do cat "$work/seek.264"; done >"$work/seek40.264"
seek_positions=(5 2 7.5 9 6.5 3.2)
timeout 300 "${python[@]}" "$root/tests/raw_seek.py" "$work/seek.264" h264parse "${seek_positions[@]}" >"$work/r3-peer.txt" 2>/dev/null || true
timeout 300 "${python[@]}" "$root/tests/raw_seek.py" "$work/seek.264" h264parse-to-avcc "${seek_positions[@]}" >"$work/r3.txt" 2>/dev/null || true
timeout 300 "${python[@]}" "$root/tests/raw_seek.py" "$work/seek40.264" h264parse-to-avcc 30 25.5 12 >"$work/r3-long.txt" 2>/dev/null || true
verdict="$("${python[@]}" - "$work/r3.txt" "$work/r3-peer.txt" "$work/r3-long.txt" <<'PY'
import sys
def lines(path):
    return [line.split() for line in open(path) if "->" in line]
ours, peer, long = lines(sys.argv[1]), lines(sys.argv[2]), lines(sys.argv[3])
problems = []
if len(ours) != 12 or len(peer) != 12 or len(long) != 6:
    problems.append(f"{len(ours)}/{len(peer)}/{len(long)} seeks reported, wanted 12/12/6")
for ours_line, peer_line in zip(ours, peer):
    if len(ours_line) < 9 or len(peer_line) < 7:
        problems.append(" ".join(ours_line))
        continue
    kind, target, _, _, frame, _, pts = ours_line[:7]
    if frame == "-1" or (kind == "accurate" and float(pts) != float(target)):
        problems.append(" ".join(ours_line))
    elif (frame, pts) != (peer_line[4], peer_line[6]):
        problems.append(" ".join(ours_line) + f" (h264parse: frame {peer_line[4]} at {peer_line[6]})")
for line in long:
    if len(line) < 7:
        problems.append("40 s: " + " ".join(line))
        continue
    kind, target, _, _, frame, _, pts = line[:7]
    if frame == "-1" or (kind == "accurate" and float(pts) != float(target)):
        problems.append("40 s: " + " ".join(line))
print("ok" if not problems else "; ".join(problems))
PY
)"
if [ "$verdict" = ok ]; then
    pass "row 3: 12 seeks in the 10-s raw file give h264parse's pictures at its times ($(grep '^accurate 5 ' "$work/r3.txt")), 6 in the 40-s file a real picture each"
else
    fail "row 3: seeking in a raw byte-stream file: $verdict"
fi

# Row 2: filesink keeps small buffers until it has 64 KiB to write (its buffer-mode default):
# 30 frames of 64x48 (4.6 KB each) must all reach the file.
gst-launch-1.0 -q videotestsrc num-buffers=30 ! video/x-raw,format=I420,width=64,height=48 ! x264enc \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$work/small.264"
status=0
output="$(timeout 90 "${python[@]}" "$root/tests/lib/run-pipeline.py" --timeout 60 --expect eos \
    "filesrc location=$work/small.264 ! h264parse ! vtdec hardware=disable ! filesink location=$work/small.yuv" 2>&1)" || status=$?
if [ "$status" = 0 ] && [ "$(stat -c %s "$work/small.yuv" 2>/dev/null || echo 0)" = $((64 * 48 * 3 / 2 * 30)) ]; then
    pass "row 2: vtdec ! filesink (which keeps buffers up to 64 KiB): all 30 frames of 64x48 written, EOS"
else
    fail "row 2: vtdec ! filesink with 64x48 frames: runner exit $status, $(stat -c %s "$work/small.yuv" 2>/dev/null || echo 0) bytes: $(tail -1 <<<"$output")"
fi

# Rows 7 and 8: live input, against avdec_h264.
for kind in baseline bframes; do
    peer="$(timeout 120 "${python[@]}" "$root/tests/live_latency.py" avdec_h264 "$kind" 2>/dev/null | tail -1 || true)"
    ours="$(timeout 120 "${python[@]}" "$root/tests/live_latency.py" "vtdec hardware=disable" "$kind" 2>/dev/null | tail -1 || true)"
    if [[ "$ours" =~ ^latency_ms\ ([0-9.]+)\ held_max\ ([0-9]+)\ .*after_eos\ ([0-9]+)\ frames\ 60$ ]]; then
        latency="${BASH_REMATCH[1]}" held="${BASH_REMATCH[2]}" after="${BASH_REMATCH[3]}"
        if [[ "$peer" =~ ^latency_ms\ ([0-9.]+)\ held_max\ ([0-9]+)\ .*after_eos\ ([0-9]+) ]] \
            && [ "$latency" = "${BASH_REMATCH[1]}" ] && [ "$held" -le "${BASH_REMATCH[2]}" ] && [ "$after" -le "${BASH_REMATCH[3]}" ]; then
            pass "rows 7-8: live $kind stream: vtdec '$ours'; avdec_h264 '$peer'"
        else
            fail "rows 7-8: live $kind stream: vtdec '$ours'; avdec_h264 '$peer' (latency must be equal, held frames and frames after EOS no more)"
        fi
        if [ "$kind" = baseline ] && { [ "$latency" != 0.0 ] || [ "$held" != 1 ] || [ "$after" != 0 ]; }; then
            fail "rows 7-8: a zerolatency stream must add no latency, hold no other frame and leave nothing for EOS: '$ours'"
        fi
    else
        fail "rows 7-8: live $kind stream through vtdec: '$ours'"
    fi
done

# Row 10: empty input.
for parser in h264parse-to-avcc h264parse; do
    status=0
    output="$(timeout 60 "${python[@]}" "$root/tests/lib/run-pipeline.py" --timeout 30 --expect eos \
        "filesrc location=/dev/null ! $parser ! vtdec ! fakesink" 2>&1)" || status=$?
    if [ "$status" = 0 ] && grep -q "0 error(s), 0 warning(s), ended by eos" <<<"$output"; then
        pass "row 10: /dev/null ! $parser ! vtdec: a clean EOS"
    else
        fail "row 10: /dev/null ! $parser ! vtdec: runner exit $status: $(tail -3 <<<"$output")"
    fi
done

# Row 11: one-picture streams concatenated.
gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=ball ! video/x-raw,format=I420,width=320,height=240 ! x264enc \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$work/one.264"
gst-launch-1.0 -q videotestsrc num-buffers=1 ! video/x-raw,format=I420,width=1920,height=1080 \
    ! x264enc option-string=slice-max-mbs=1 ! video/x-h264,stream-format=byte-stream ! filesink location="$work/slices.264"
for one in one slices; do
    for _ in 1 2 3 4 5; do cat "$work/$one.264"; done >"$work/${one}x5.264"
    frame_bytes=$([ "$one" = one ] && echo $((320 * 240 * 3 / 2)) || echo $((1920 * 1080 * 3 / 2)))
    peer="$(gst-launch-1.0 -q filesrc location="$work/${one}x5.264" ! h264parse ! avdec_h264 ! fdsink 2>/dev/null | md5sum | cut -d' ' -f1)"
    gst-launch-1.0 -q filesrc location="$work/${one}x5.264" ! h264parse-to-avcc ! vtdec hardware=disable ! fdsink \
        2>/dev/null >"$work/${one}x5.yuv" || true
    ours="$(md5sum <"$work/${one}x5.yuv" | cut -d' ' -f1)" frames=$(($(stat -c %s "$work/${one}x5.yuv") / frame_bytes))
    if [ "$frames" = 5 ] && [ "$ours" = "$peer" ]; then
        pass "row 11: $one picture x5 through h264parse-to-avcc ! vtdec: 5 frames, avdec_h264's MD5 $ours"
    else
        fail "row 11: $one picture x5 through h264parse-to-avcc ! vtdec: $frames frames, MD5 $ours (h264parse ! avdec_h264: 5 frames, $peer)"
    fi
    rm -f "$work/${one}x5.yuv"
done

# Row 13: downstream asks for NV12 instead of I420 while playing.
timeout 120 "${python[@]}" "$root/tests/reconfigure_format.py" "$src720" "avdec_h264 ! videoconvert" >"$work/r13-peer.txt" 2>/dev/null || true
for decoder in "vtdec hardware=disable" vtdec_hw; do
    if [ "$decoder" = vtdec_hw ]; then
        with_va timeout 120 "${python[@]}" "$root/tests/reconfigure_format.py" "$src720" "$decoder" >"$work/r13.txt" 2>/dev/null || true
    else
        timeout 120 "${python[@]}" "$root/tests/reconfigure_format.py" "$src720" "$decoder" >"$work/r13.txt" 2>/dev/null || true
    fi
    formats="$(awk '{ print $2 }' "$work/r13.txt" | uniq -c | awk '{ print $1 "x" $2 }' | tr '\n' ' ')"
    peer_formats="$(awk '{ print $2 }' "$work/r13-peer.txt" | uniq -c | awk '{ print $1 "x" $2 }' | tr '\n' ' ')"
    if [[ "$formats" == *"xNV12 " ]] && [ "$formats" = "$peer_formats" ] && cmp -s "$work/r13.txt" "$work/r13-peer.txt"; then
        pass "row 13: $decoder: I420 then NV12 after the capsfilter changed ($formats), the same pictures as avdec_h264 ! videoconvert"
    else
        fail "row 13: $decoder: formats $formats, avdec_h264 ! videoconvert $peer_formats (pictures equal: $(cmp -s "$work/r13.txt" "$work/r13-peer.txt" && echo yes || echo no))"
    fi
done

if [ "$failures" -gt 0 ]; then
    echo "parity-decoding: $failures failure(s)" >&2
    exit 1
fi
echo "parity-decoding: all checks passed"
