#!/usr/bin/env bash
# The release plugin must load on a machine without the Swift toolchain: no Swift runtime
# libraries among its dependencies (the runtime is linked in statically), and it must load with
# the toolchain's library directories out of reach.
set -euo pipefail
plugin="${SWIFTVT_PLUGIN:?set SWIFTVT_PLUGIN to the release libgstswiftvt.so}"
if ldd "$plugin" | grep -E "libswift|libFoundation|libdispatch|libBlocksRuntime"; then
    echo "plugin-without-toolchain: $plugin depends on Swift toolchain libraries (above)" >&2
    exit 1
fi
# Load it with only the system library path: a dependency on the toolchain's directory would fail.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/plugins"
cp "$plugin" "$work/plugins/libgstswiftvt.so"
output="$(env -i PATH=/usr/bin:/bin HOME="$work" GST_REGISTRY="$work/registry.bin" GST_PLUGIN_PATH="$work/plugins" \
    gst-inspect-1.0 "$work/plugins/libgstswiftvt.so" 2>&1)" || { echo "$output" >&2; exit 1; }
grep -q "h264parse-to-avcc" <<<"$output" || { echo "plugin-without-toolchain: element missing" >&2; echo "$output" >&2; exit 1; }
echo "plugin-without-toolchain: OK ($(stat -c %s "$plugin") bytes, no Swift runtime dependency)"
