#!/usr/bin/env bash
# Does `-enforce-exclusivity=unchecked` pay? The release plugin built twice in this run, with
# Swift's run-time exclusivity checks (the default) and without them
# (SWIFTVT_UNCHECKED_EXCLUSIVITY=1, which Package.swift turns into the flag for every Swift target),
# then the same pipelines timed with each, interleaved:
#
#   bench/exclusivity.sh
#
#   parse   filesrc (the corpus 1080p stream repeated to ~100 MB) ! h264parse-to-avcc ! fakesink
#           (the Swift bitstream layer is the work), cost above the `filesrc ! fakesink` floor
#   decode  filesrc (the 1080p stream x5) ! h264parse ! vtdec max-threads=1 ! fakesink
#   encode  videotestsrc num-buffers=300 720p ! vtenc bitrate=2000 max-threads=1 ! fakesink
#
# Printed: the median of each, and the ratio unchecked/checked per pipeline (below 1: the flag
# pays). A measurement: it exits 0 whatever the figures, non-zero only when a build or a pipeline
# fails. Environment: SWIFTVT_CORPUS, SWIFTVT_BENCH_RUNS (default 5), SWIFTVT_BENCH_TIMER=date.
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="exclusivity"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream_1080p="$corpus/VID_1920x1080_cabac_temporal_direct.264"
bench_require_corpus -f "$stream_1080p"
runs="${SWIFTVT_BENCH_RUNS:-5}"

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

input_parse="$work/1080p-100MB.264"
size=$(stat -c %s "$stream_1080p")
for _ in $(seq $(( (100000000 + size - 1) / size ))); do cat "$stream_1080p"; done >"$input_parse"
input_decode="$work/1080p-x5.264"
for _ in 1 2 3 4 5; do cat "$stream_1080p"; done >"$input_decode"

with() { # with VARIANT -> the env prefix that points GStreamer at that build alone
    printf 'env GST_PLUGIN_PATH=%q GST_REGISTRY=%q ' "$work/$1" "$work/$1.registry"
}
floor="gst-launch-1.0 -q filesrc location=$input_parse ! fakesink sync=false"
parse="gst-launch-1.0 -q filesrc location=$input_parse ! h264parse-to-avcc ! fakesink sync=false"
decode="gst-launch-1.0 -q filesrc location=$input_decode ! h264parse ! vtdec max-threads=1 hardware=disable ! fakesink sync=false"
encode="gst-launch-1.0 -q videotestsrc num-buffers=300 ! video/x-raw,width=1280,height=720,framerate=30/1 ! vtenc bitrate=2000 max-threads=1 hardware=disable ! fakesink sync=false"

mapfile -t medians < <(bench_median_seconds \
    "$(with checked)$floor" \
    "$(with checked)$parse" "$(with unchecked)$parse" \
    "$(with checked)$decode" "$(with unchecked)$decode" \
    "$(with checked)$encode" "$(with unchecked)$encode")
python3 - "${medians[@]}" <<'PY'
import sys
floor, parse_c, parse_u, dec_c, dec_u, enc_c, enc_u = map(float, sys.argv[1:])
print(f"floor (filesrc ! fakesink)      {floor:.3f} s")
rows = [("parse (cost above the floor)", parse_c - floor, parse_u - floor),
        ("decode 1080p x5, one thread", dec_c, dec_u),
        ("encode 720p x300, one thread", enc_c, enc_u)]
for name, checked, unchecked in rows:
    print(f"{name:32s} checked {checked:.3f} s  unchecked {unchecked:.3f} s  ratio unchecked/checked {unchecked / checked:.3f}")
PY
