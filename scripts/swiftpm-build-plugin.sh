#!/usr/bin/env bash
# Builds a SwiftPM product in release (Swift runtime linked statically) and copies it to OUTPUT:
# libgstswiftvt.so (product gstswiftvt, the default) or swiftvt-farm.
#   scripts/swiftpm-build-plugin.sh SOURCE_ROOT SCRATCH_PATH OUTPUT [PRODUCT]
set -euo pipefail
source_root="$1"
scratch="$2"
output="$3"
product="${4:-gstswiftvt}"
status=0
swift build -c release --package-path "$source_root" --scratch-path "$scratch" --product "$product" 2>&1 \
    | grep -v "prohibited flag" || status=${PIPESTATUS[0]}
if [ "$status" != 0 ]; then
    echo "swiftpm-build-plugin: swift build of $product failed ($status)" >&2
    exit "$status"
fi
case "$product" in
    gstswiftvt) built="$scratch/release/libgstswiftvt.so" ;;
    *) built="$scratch/release/$product" ;;
esac
if [ ! -f "$built" ]; then
    echo "swiftpm-build-plugin: the build did not produce $built" >&2
    exit 1
fi
# Copy only when changed, so that Meson and GStreamer's registry see a stable file.
if ! cmp -s "$built" "$output"; then cp "$built" "$output"; fi
