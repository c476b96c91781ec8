#!/usr/bin/env bash
# Bounded picture pools (issue 21, item 2): a decoder whose pictures pile up in an unbounded queue
# before a slow sink must wait for the sink (back pressure), not allocate a picture per queued
# frame. Measured as the peak RSS of one gst-launch-1.0 process per run:
#
#   multifilesrc location=VID_1920x1080 loop=true num-buffers=LOOPS ! h264parse ! DECODER
#     ! queue max-size-buffers=0 max-size-time=0 max-size-bytes=0
#     ! identity sleep-time=25000 ! SINK
#
# DECODER is vtdec hardware=disable, then avdec_h264 in the same pipeline; LOOPS is 2 and 4
# (108 and 216 frames); SINK is
#   - fdsink: no GstVideoMeta downstream, so vtdec copies into the base class's output pool
#     (bounded by vtdec's decide_allocation); the output goes to a checker that cuts it into
#     passes of the stream and compares each pass's MD5 with MANIFEST.tsv's ref_md5;
#   - fakevideosink: GstVideoMeta and min_buffers 2 downstream, so vtdec hands on the pictures of
#     its own pool, libavcodec's get_buffer2 pool (bounded by the DPB, threads and min_buffers).
# The sink renders at most 40 frames a second, slower than either decoder on two cores.
#
# Passes when, for each sink: vtdec's peak RSS at 4 loops exceeds its peak at 2 loops by at most
# 32 MiB (ten 1080p pictures: no growth with the stream's length), and vtdec's peak is at most
# avdec_h264's plus 32 MiB at both lengths; and every pass of vtdec's fdsink output has the
# reference MD5. Prints the figures. About 40 s on two cores.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
source "$root/tests/lib/require.sh"
stream=VID_1920x1080_cabac_temporal_direct.264
require_file "$corpus/h264/$stream" "bounded-pools: the test corpus $corpus (set SWIFTVT_CORPUS to the corpus folder)"
require_file /usr/bin/time "bounded-pools: GNU time (/usr/bin/time, Debian's package time), which reports the peak RSS"
source "$root/pipelines/lib/plugin-env.sh"
gst-inspect-1.0 avdec_h264 >/dev/null 2>&1 || require_input "bounded-pools: avdec_h264 (gstreamer1.0-libav), the peer decoder"
gst-inspect-1.0 fakevideosink >/dev/null 2>&1 || require_input "bounded-pools: fakevideosink (gstreamer1.0-plugins-bad)"

failures=0
fail() { echo "bounded-pools: FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "bounded-pools: ok: $*"; }
field() { awk -F'\t' -v f="$stream" -v c="$1" '$1 == f { print $c }' "$corpus/h264/MANIFEST.tsv"; }
width="$(field 4)" height="$(field 5)" frames="$(field 7)" reference="$(field 8)"
pass_bytes=$((width * height * 3 / 2 * frames))
margin_kib=$((32 * 1024))

# The MD5 of each whole pass of the stream in the decoded output on stdin, one per line, then
# the count of bytes after the last whole pass.
checker='
import hashlib, sys
size = int(sys.argv[1]); digest = hashlib.md5(); filled = 0
while True:
    chunk = sys.stdin.buffer.read(min(1 << 20, size - filled))
    if not chunk:
        break
    digest.update(chunk); filled += len(chunk)
    if filled == size:
        print(digest.hexdigest()); digest = hashlib.md5(); filled = 0
print("rest", filled)
'

# run DECODER LOOPS SINK: prints the peak RSS in KiB; with fdsink, the checker's report goes to
# $work_report.
work="$swiftvt_work_dir"
run() {
    local decoder="$1" loops="$2" sink="$3" rss
    local pipeline="multifilesrc location=$corpus/h264/$stream loop=true num-buffers=$loops ! h264parse ! $decoder
        ! queue max-size-buffers=0 max-size-time=0 max-size-bytes=0 ! identity sleep-time=25000 ! $sink"
    if [ "$sink" = "fdsink fd=1" ]; then
        # shellcheck disable=SC2086
        /usr/bin/time -o "$work/rss" -f %M gst-launch-1.0 -q $pipeline 2>"$work/stderr" \
            | /usr/bin/python3 -c "$checker" "$pass_bytes" >"$work/report"
    else
        # shellcheck disable=SC2086
        /usr/bin/time -o "$work/rss" -f %M gst-launch-1.0 -q $pipeline >/dev/null 2>"$work/stderr"
    fi
    rss="$(tail -1 "$work/rss")"
    [[ "$rss" =~ ^[0-9]+$ ]] || { echo "bounded-pools: $decoder $loops loops into $sink failed: $(cat "$work/stderr")" >&2; rss=0; }
    echo "$rss"
}

for sink in "fdsink fd=1" "fakevideosink sync=false"; do
    declare -A peak=()
    for loops in 2 4; do
        for decoder in "vtdec hardware=disable" avdec_h264; do
            peak["$decoder/$loops"]="$(run "$decoder" "$loops" "$sink")"
            if [ "$sink" = "fdsink fd=1" ] && [ "$decoder" != avdec_h264 ]; then
                digests="$(grep -v '^rest' "$work/report" | sort | uniq -c | awk '{ print $1 "x" $2 }' | tr '\n' ' ')"
                if [ "$digests" = "${loops}x$reference " ] && grep -q '^rest 0$' "$work/report"; then
                    pass "$decoder, $loops loops into $sink: every pass has the reference MD5 $reference"
                else
                    fail "$decoder, $loops loops into $sink: passes' MD5s '$digests', $(grep '^rest' "$work/report"), reference ${loops}x$reference"
                fi
            fi
        done
        echo "bounded-pools: $sink, $loops loops ($((loops * frames)) frames): peak RSS vtdec $((peak["vtdec hardware=disable/$loops"] / 1024)) MiB, avdec_h264 $((peak["avdec_h264/$loops"] / 1024)) MiB"
    done
    ours_short="${peak["vtdec hardware=disable/2"]}" ours_long="${peak["vtdec hardware=disable/4"]}"
    if [ "$ours_short" -gt 0 ] && [ "$ours_long" -le $((ours_short + margin_kib)) ]; then
        pass "$sink: vtdec's peak RSS does not grow with the stream: $((ours_short / 1024)) MiB at 2 loops, $((ours_long / 1024)) MiB at 4"
    else
        fail "$sink: vtdec's peak RSS grows with the stream: $((ours_short / 1024)) MiB at 2 loops, $((ours_long / 1024)) MiB at 4 (allowed: +32 MiB)"
    fi
    for loops in 2 4; do
        ours="${peak["vtdec hardware=disable/$loops"]}" theirs="${peak["avdec_h264/$loops"]}"
        if [ "$ours" -gt 0 ] && [ "$theirs" -gt 0 ] && [ "$ours" -le $((theirs + margin_kib)) ]; then
            pass "$sink, $loops loops: vtdec $((ours / 1024)) MiB, at most avdec_h264's $((theirs / 1024)) MiB + 32 MiB"
        else
            fail "$sink, $loops loops: vtdec $((ours / 1024)) MiB against avdec_h264's $((theirs / 1024)) MiB (allowed: +32 MiB)"
        fi
    done
    unset peak
done

if [ "$failures" -gt 0 ]; then
    echo "bounded-pools: $failures failure(s)" >&2
    exit 1
fi
echo "bounded-pools: all checks passed"
