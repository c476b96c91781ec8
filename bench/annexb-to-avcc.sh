#!/usr/bin/env bash
# Annex B -> AVCC conversion speed, in process, against a plain memcpy of the same bytes.
#
#   bench/annexb-to-avcc.sh
#
# (a) the corpus 1080p stream repeated to about 100 MB in memory;
# (b) a many-slice stream made here with x264enc (64 slices per picture, small NAL units).
# Prints MB/s, NAL units/s and the speed ratio to memcpy for each. Goals (issue 2): >= 3 GB/s on
# (a), >= 5 million NAL units/s on (b).
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh), the copying conversion's MB/s on (a) and
# million NAL units/s on (b) go to FILE (bench_summary, bench/lib/common.sh) for information.
# Builds the swiftvt-bench program (release), or uses SWIFTVT_BENCH_TOOL=/path/to/swiftvt-bench as
# it is. Environment: SWIFTVT_CORPUS (folder containing h264/, default ../shared/corpus),
# SWIFTVT_BENCH_TOOL, SWIFTVT_BENCH_SUMMARY.
set -euo pipefail
cd "$(dirname "$0")/.."
bench_name="annexb-to-avcc"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream_1080p="$corpus/VID_1920x1080_cabac_temporal_direct.264"
if [ ! -f "$stream_1080p" ]; then
    echo "bench: corpus not found at $corpus (set SWIFTVT_CORPUS)" >&2
    exit 1
fi
bash scripts/install-deps.sh
if [ -n "${SWIFTVT_BENCH_TOOL:-}" ]; then
    bench="$SWIFTVT_BENCH_TOOL"
    echo "== using $bench (SWIFTVT_BENCH_TOOL; not rebuilt)"
else
    swift build -c release --product swiftvt-bench 2>&1 | grep -v "prohibited flag" | tail -1
    bench=".build/release/swiftvt-bench"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

many_slices="$work/many-slices.264"
gst-launch-1.0 -q videotestsrc num-buffers=600 pattern=smpte ! video/x-raw,width=1280,height=720,framerate=30/1 \
    ! x264enc option-string=slices=64 speed-preset=ultrafast bitrate=4000 key-int-max=60 \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$many_slices"

size=$(stat -c %s "$stream_1080p")
repeat=$(( (100000000 + size - 1) / size ))
echo "== (a) corpus 1080p stream x$repeat"
"$bench" annexb-to-avcc "$stream_1080p" "$repeat" | tee "$work/a.txt"
load_a="$(bench_load)"
echo "== (b) many-slice stream (64 slices per picture, x264enc), x4"
"$bench" annexb-to-avcc "$many_slices" 4 | tee "$work/b.txt"
load_b="$(bench_load)"

# figure FILE FIELD: from the line "Annex B -> AVCC (copying): X MB/s, Y M NAL/s, ...", X (FIELD 1)
# or Y (FIELD 2).
figure() {
    # shellcheck disable=SC1003 # the backslash before the closing quote is literal: with "$2", \1 or \2
    sed -n 's|^Annex B -> AVCC (copying): \([0-9.]*\) MB/s, \([0-9.]*\) M NAL/s.*|\'"$2"'|p' "$1" | head -1
}
bench_summary annexb-1080p-mbs "Annex B -> AVCC in process, 1080p x$repeat: MB/s (issue 2: >= 3000)" \
    "$(figure "$work/a.txt" 1)" - "$load_a"
bench_summary annexb-slices-mnal "Annex B -> AVCC in process, 64 slices/picture: M NAL units/s (issue 2: >= 5)" \
    "$(figure "$work/b.txt" 2)" - "$load_b"
