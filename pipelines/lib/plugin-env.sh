# shellcheck shell=bash
# Sourced by the pipeline scripts and tests: makes GStreamer find the swiftvt plugin.
#
# With SWIFTVT_PLUGIN=/path/to/libgstswiftvt.so (what `meson test` and scripts/demo.sh set), that
# exact file is used, through a private plugin directory and a private registry file: a plugin
# that failed to load once is blacklisted in the shared registry, and a stale copy elsewhere on
# GST_PLUGIN_PATH must not be picked up instead. Without it, the installed plugin is used.
swiftvt_work_dir="$(mktemp -d /tmp/swiftvt-pipeline-XXXXXX)"
trap 'rm -rf "$swiftvt_work_dir"' EXIT
if [ -n "${SWIFTVT_PLUGIN:-}" ]; then
    if [ ! -f "$SWIFTVT_PLUGIN" ]; then
        echo "SWIFTVT_PLUGIN=$SWIFTVT_PLUGIN does not exist: build the plugin first (meson compile -C build)" >&2
        exit 1
    fi
    mkdir -p "$swiftvt_work_dir/plugins"
    ln -s "$(readlink -f "$SWIFTVT_PLUGIN")" "$swiftvt_work_dir/plugins/libgstswiftvt.so"
    export GST_PLUGIN_PATH="$swiftvt_work_dir/plugins"
    export GST_REGISTRY="$swiftvt_work_dir/registry.bin"
fi
if ! gst-inspect-1.0 swiftvt >/dev/null 2>&1; then
    echo "GStreamer cannot load the swiftvt plugin (gst-inspect-1.0 swiftvt failed)." >&2
    echo "Install it (meson install -C build) or set SWIFTVT_PLUGIN to libgstswiftvt.so." >&2
    gst-inspect-1.0 -b >&2 || true
    exit 1
fi
