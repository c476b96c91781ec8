#!/usr/bin/env bash
# Builds libgstswiftvt.so in release (Swift runtime linked statically) and copies it to OUTPUT.
#   scripts/swiftpm-build-plugin.sh SOURCE_ROOT SCRATCH_PATH OUTPUT
set -euo pipefail
source_root="$1"
scratch="$2"
output="$3"
status=0
swift build -c release --package-path "$source_root" --scratch-path "$scratch" --product gstswiftvt 2>&1 \
    | grep -v "prohibited flag" || status=${PIPESTATUS[0]}
if [ "$status" != 0 ]; then
    echo "swiftpm-build-plugin: swift build failed ($status)" >&2
    exit "$status"
fi
built="$scratch/release/libgstswiftvt.so"
if [ ! -f "$built" ]; then
    echo "swiftpm-build-plugin: the build did not produce $built" >&2
    exit 1
fi
# Copy only when changed, so that Meson and GStreamer's registry see a stable file.
if ! cmp -s "$built" "$output"; then cp "$built" "$output"; fi
