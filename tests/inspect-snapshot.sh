#!/usr/bin/env bash
# The interface of every element (pads, caps, properties, rank), as gst-inspect-1.0 prints it,
# is checked in under docs/gst-inspect/; this test diffs it so an interface change is seen in
# review. After an intended change: SWIFTVT_UPDATE_SNAPSHOTS=1 meson test -C build inspect-snapshot
# Elements built into test builds only (Elements.swift's testBuildOnly, in the debug plugin that
# `swift build --build-tests` makes; SwiftVTElementsTests runs this script on it) keep their
# snapshots in docs/gst-inspect/test-build/, so docs/gst-inspect/ lists what users get; an update
# writes a snapshot where it already is.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/pipelines/lib/plugin-env.sh"
# The interface as on a machine without a VA device (vtdec_hw and vtenc_h264_hw rank none, vtdec_hw
# with every profile), also where one exists: with a device their rank and sink caps follow it,
# which tests/autoplug.sh checks on the software VA driver.
unset DISPLAY
export LIBVA_DRIVER_NAME=swiftvt-no-such-driver
snapshots="$root/docs/gst-inspect"
status=0
for element in $(gst-inspect-1.0 swiftvt | sed -n 's/^ *\([a-z0-9_-]*\): .*/\1/p'); do
    # The file name and the plugin's build-dependent lines are not interface.
    actual="$(gst-inspect-1.0 "$element" | sed -e 's|^\(  Filename *\).*/\(libgstswiftvt.so\)$|\1\2|')"
    expected_file="$snapshots/$element.txt"
    if [ ! -f "$expected_file" ] && [ -f "$snapshots/test-build/$element.txt" ]; then
        expected_file="$snapshots/test-build/$element.txt"
    fi
    if [ "${SWIFTVT_UPDATE_SNAPSHOTS:-}" = 1 ]; then
        mkdir -p "$snapshots"
        printf '%s\n' "$actual" >"$expected_file"
        echo "updated $expected_file"
        continue
    fi
    if [ ! -f "$expected_file" ]; then
        echo "inspect-snapshot: no snapshot for $element ($expected_file); run with SWIFTVT_UPDATE_SNAPSHOTS=1" >&2
        status=1
        continue
    fi
    if diff -u "$expected_file" <(printf '%s\n' "$actual"); then
        echo "inspect-snapshot: $element matches"
    else
        echo "inspect-snapshot: the interface of $element changed (diff above)" >&2
        status=1
    fi
done
exit "$status"
