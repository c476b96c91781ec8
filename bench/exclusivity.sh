#!/usr/bin/env bash
# Does `-enforce-exclusivity=unchecked` pay? The release plugin built twice in this run, with
# Swift's run-time exclusivity checks (the default) and without them
# (SWIFTVT_UNCHECKED_EXCLUSIVITY=1, which Package.swift turns into the flag for every Swift target),
# then the same pipelines timed with each, interleaved:
#
#   bench/exclusivity.sh
#
#   parse   filesrc ! h264parse-to-avcc ! fakesink (the Swift bitstream layer is the work), cost
#           above the `filesrc ! fakesink` floor, on a many-slice stream (x264enc, 64 slices per
#           picture, repeated to ~70 MB: small NAL units, the parser's hardest case)
#   decode  filesrc (the 1080p stream x5) ! h264parse ! vtdec max-threads=1 ! fakesink
#   encode  videotestsrc num-buffers=300 720p ! vtenc bitrate=2000 max-threads=1 ! fakesink
#
# The pipelines run interleaved (the date timer unless SWIFTVT_BENCH_TIMER says otherwise), so the
# two builds share whatever the machine does meanwhile. Printed: the median of each, and the ratio
# unchecked/checked per pipeline (below 1: the flag pays). A measurement: it exits 0 whatever the figures, non-zero only when a build or a pipeline
# fails. Environment: SWIFTVT_CORPUS, SWIFTVT_BENCH_RUNS (default 5), SWIFTVT_BENCH_TIMER=date.
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="exclusivity"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream_1080p="$corpus/VID_1920x1080_cabac_temporal_direct.264"
bench_require_corpus -f "$stream_1080p"
runs="${SWIFTVT_BENCH_RUNS:-5}"
export SWIFTVT_BENCH_TIMER="${SWIFTVT_BENCH_TIMER:-date}"

bench_install_deps
bench_setup_timer
bench_make_workdir

build_variant() { # build_variant NAME SCRATCH [ENV=VALUE] -> copies the plugin to $work/NAME/
    echo "== building the release plugin, $1"
    env "${@:3}" swift build -c release --product gstswiftvt --scratch-path "$2" 2>&1 | grep -v "prohibited flag" | tail -1
    mkdir -p "$work/$1"
    cp "$2/release/libgstswiftvt.so" "$work/$1/"
    GST_PLUGIN_PATH="$work/$1" GST_REGISTRY="$work/$1.registry" gst-inspect-1.0 vtdec >/dev/null
}
build_variant checked .build
build_variant unchecked .build-exclusivity-unchecked SWIFTVT_UNCHECKED_EXCLUSIVITY=1

echo "== generating the many-slice stream (x264enc, 64 slices per picture, 600 pictures)"
slices_once="$work/many-slices-once.264"
gst-launch-1.0 -q videotestsrc num-buffers=600 ! video/x-raw,width=1280,height=720,framerate=30/1 \
    ! x264enc option-string=slices=64 speed-preset=ultrafast bitrate=4000 key-int-max=60 \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$slices_once"
input_parse="$work/many-slices.264"
size=$(stat -c %s "$slices_once")
for _ in $(seq $(( (70000000 + size - 1) / size ))); do cat "$slices_once"; done >"$input_parse"
rm -f "$slices_once"
input_decode="$work/1080p-x5.264"
for _ in 1 2 3 4 5; do cat "$stream_1080p"; done >"$input_decode"

with() { # with VARIANT -> the env prefix that points GStreamer at that build alone
    printf 'env GST_PLUGIN_PATH=%q GST_REGISTRY=%q ' "$work/$1" "$work/$1.registry"
}
floor="gst-launch-1.0 -q filesrc location=$input_parse ! fakesink sync=false"
parse="gst-launch-1.0 -q filesrc location=$input_parse ! h264parse-to-avcc ! fakesink sync=false"
decode="gst-launch-1.0 -q filesrc location=$input_decode ! h264parse ! vtdec max-threads=1 hardware=disable ! fakesink sync=false"
encode="gst-launch-1.0 -q videotestsrc num-buffers=300 ! video/x-raw,width=1280,height=720,framerate=30/1 ! vtenc bitrate=2000 max-threads=1 hardware=disable ! fakesink sync=false"

# Each pair runs in both orders (checked first, then unchecked first: an ABBA design), since the
# second of two heavy runs in a row was measured up to 10 % faster whatever its build.
mapfile -t medians < <(bench_median_seconds \
    "$(with checked)$floor" \
    "$(with checked)$parse" "$(with unchecked)$parse" "$(with unchecked)$parse" "$(with checked)$parse" \
    "$(with checked)$decode" "$(with unchecked)$decode" "$(with unchecked)$decode" "$(with checked)$decode" \
    "$(with checked)$encode" "$(with unchecked)$encode" "$(with unchecked)$encode" "$(with checked)$encode")
python3 - "${medians[@]}" <<'PY'
import sys
values = list(map(float, sys.argv[1:]))
floor = values[0]
print(f"floor (filesrc ! fakesink)      {floor:.3f} s")
names = ["parse many slices (above floor)", "decode 1080p x5, one thread", "encode 720p x300, one thread"]
for index, name in enumerate(names):
    c1, u1, u2, c2 = values[1 + 4 * index: 5 + 4 * index]
    base = floor if index == 0 else 0.0
    checked = (c1 + c2) / 2 - base
    unchecked = (u1 + u2) / 2 - base
    print(f"{name:32s} checked {checked:.3f} s  unchecked {unchecked:.3f} s  ratio unchecked/checked {unchecked / checked:.3f}")
PY

# What the checks cost where they run: the share of CPU samples in the run-time exclusivity
# entry points (swift_beginAccess / swift_endAccess) in the checked build, from perf (Debian's
# linux-perf, installed if missing). Timings of a few percent between two builds are within the
# run-to-run spread of x264 and of a 70 MB read; this share says what the flag could ever save.
if ! command -v perf >/dev/null 2>&1; then bench_apt_install linux-perf; fi
if command -v perf >/dev/null 2>&1; then
    for name in parse encode; do
        command="$(with checked)${!name}"
        if ! eval "perf record -q -F 4999 -o $(printf %q "$work/$name.perf") -- $command" >/dev/null 2>&1; then
            echo "perf record failed for $name"
            continue
        fi
        perf report -i "$work/$name.perf" --no-children --sort symbol -g none --percent-limit 0 2>/dev/null | python3 -c '
import re, sys
total = access = 0.0
for line in sys.stdin:
    m = re.match(r"\s*([0-9.]+)%\s+\[\.\]\s+(\S+)", line)
    if not m: continue
    share = float(m.group(1)); total += share
    if m.group(2) in ("swift_beginAccess", "swift_endAccess"): access += share
print(f"{sys.argv[1]:6s} checked build: {access:.2f} % of CPU samples in swift_beginAccess/swift_endAccess")' "$name"
    done
else
    echo "perf is not available: no profile of the checks"
fi
