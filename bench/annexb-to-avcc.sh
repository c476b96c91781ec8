#!/usr/bin/env bash
# Annex B -> AVCC conversion speed, in process, against a plain memcpy of the same bytes.
#
#   bench/annexb-to-avcc.sh
#
# (a) the corpus 1080p stream repeated to about 100 MB in memory;
# (b) a many-slice stream made here with x264enc (64 slices per picture, small NAL units).
# Prints MB/s, NAL units/s and the speed ratio to memcpy for each. Goals (issue 2): >= 3 GB/s on
# (a), >= 5 million NAL units/s on (b).
set -euo pipefail
cd "$(dirname "$0")/.."
corpus="${SWIFTVT_CORPUS:-../shared/corpus}/h264"
stream_1080p="$corpus/VID_1920x1080_cabac_temporal_direct.264"
if [ ! -f "$stream_1080p" ]; then
    echo "bench: corpus not found at $corpus (set SWIFTVT_CORPUS)" >&2
    exit 1
fi
bash scripts/install-deps.sh
swift build -c release --product swiftvt-bench 2>&1 | grep -v "prohibited flag" | tail -1
bench=".build/release/swiftvt-bench"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

many_slices="$work/many-slices.264"
gst-launch-1.0 -q videotestsrc num-buffers=600 pattern=smpte ! video/x-raw,width=1280,height=720,framerate=30/1 \
    ! x264enc option-string=slices=64 speed-preset=ultrafast bitrate=4000 key-int-max=60 \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$many_slices"

size=$(stat -c %s "$stream_1080p")
repeat=$(( (100000000 + size - 1) / size ))
echo "== (a) corpus 1080p stream x$repeat"
"$bench" annexb-to-avcc "$stream_1080p" "$repeat"
echo "== (b) many-slice stream (64 slices per picture, x264enc), x4"
"$bench" annexb-to-avcc "$many_slices" 4
