#!/usr/bin/env bash
# Plugin load time: median wall time of `gst-inspect-1.0 <plugin .so>` for our release plugin
# (.build/release/libgstswiftvt.so, Swift runtime linked statically) against a minimal C plugin
# built here (libgstloadtimeref.so: one passthrough GstBaseTransform element).
#
#   bench/plugin-load-time.sh
#
# Both plugins are measured the same way: SWIFTVT_BENCH_RUNS runs each (default 30, after 3
# warm-up runs), with hyperfine when available (installed here with apt-get if missing), otherwise
# with `date +%s%N`. Every run starts with a fresh private GST_REGISTRY file (deleted before the
# run), so no registry cache stands in for the load, and with GST_PLUGIN_SYSTEM_PATH_1_0 pointing
# at an empty folder, so gst_init does not rescan the ~260 system plugins (about 0.6 s, which would
# drown the figure): what remains is process start, gst_init, and dlopen + plugin_init + feature
# listing of the one plugin. Prints both medians, the difference and the ratio; goal: ours at most
# 16 ms. Also prints the size of our .so and its libswift* dependencies from ldd (expected none).
# It is a measurement: it exits 0 when the goal is missed, non-zero only when something fails.
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh), two figures go to FILE (bench_summary,
# bench/lib/common.sh): our load time in ms (goal <= 16) and the ratio ours/reference (for
# information), beside the load average at the end of the timing.
# Needs the corpus only to keep the bench scripts' preconditions alike: SWIFTVT_CORPUS (folder
# containing h264/, default ../shared/corpus). Setup and timing are shared with the other bench
# scripts (bench/lib/common.sh). Environment: SWIFTVT_PLUGIN, SWIFTVT_BENCH_RUNS,
# SWIFTVT_BENCH_TIMER=date, SWIFTVT_BENCH_SUMMARY (above).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="plugin-load-time"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
bench_require_corpus -d "$corpus"
runs="${SWIFTVT_BENCH_RUNS:-30}"
goal_ms=16

bench_install_deps
bench_setup_timer
bench_build_plugin
ours="$plugin_so"
bench_make_workdir

echo "== building the C reference plugin"
cat >"$work/loadtimeref.c" <<'EOF'
#define PACKAGE "loadtimeref"
#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

typedef struct { GstBaseTransform parent; } GstLoadTimeRef;
typedef struct { GstBaseTransformClass parent_class; } GstLoadTimeRefClass;
GType gst_load_time_ref_get_type (void);
G_DEFINE_TYPE (GstLoadTimeRef, gst_load_time_ref, GST_TYPE_BASE_TRANSFORM)

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static void gst_load_time_ref_class_init (GstLoadTimeRefClass *klass)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Load time reference",
      "Generic", "Passes buffers through unchanged", "SwiftVT bench");
  GST_BASE_TRANSFORM_CLASS (klass)->passthrough_on_same_caps = TRUE;
}

static void gst_load_time_ref_init (GstLoadTimeRef *self)
{
  gst_base_transform_set_passthrough (GST_BASE_TRANSFORM (self), TRUE);
}

static gboolean plugin_init (GstPlugin *plugin)
{
  return gst_element_register (plugin, "loadtimeref", GST_RANK_NONE,
      gst_load_time_ref_get_type ());
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, loadtimeref,
    "Minimal C plugin, the load time reference of bench/plugin-load-time.sh",
    plugin_init, "1.0", "LGPL", "SwiftVT bench", "https://gstreamer.freedesktop.org/")
EOF
reference="$work/libgstloadtimeref.so"
# shellcheck disable=SC2046 # pkg-config output is a list of flags
gcc -O2 -Wall -shared -fPIC -o "$reference" "$work/loadtimeref.c" \
    $(pkg-config --cflags --libs gstreamer-1.0 gstreamer-base-1.0)

# Only the plugin given on the command line: no system plugins, no plugin path, a registry file
# that each run finds absent.
mkdir "$work/no-plugins"
unset GST_PLUGIN_PATH GST_PLUGIN_PATH_1_0 GST_REGISTRY_1_0 GST_PLUGIN_SYSTEM_PATH
export GST_PLUGIN_SYSTEM_PATH_1_0="$work/no-plugins"
registry="$work/registry.bin"
export GST_REGISTRY="$registry"

for plugin in "$ours:h264parse-to-avcc" "$reference:loadtimeref"; do
    path="${plugin%:*}" element="${plugin##*:}"
    rm -f "$registry"
    if ! gst-inspect-1.0 "$path" >"$work/inspect.log" 2>&1 || ! grep -q "^  $element: " "$work/inspect.log"; then
        echo "plugin-load-time: gst-inspect-1.0 $path did not list the element $element:" >&2
        cat "$work/inspect.log" >&2
        exit 1
    fi
done

# Timing (bench_median_seconds): 3 warm-up runs, the registry file deleted before every run.
bench_warmup=3
bench_prepare="rm -f $registry"
bench_noun=run

echo "== measuring: $runs runs each, timer $timer"
mapfile -t medians < <(bench_median_seconds "gst-inspect-1.0 $(printf %q "$ours")" "gst-inspect-1.0 $(printf %q "$reference")")
if [ "${#medians[@]}" -ne 2 ]; then
    echo "plugin-load-time: timing failed" >&2
    exit 1
fi
load_timed="$(bench_load)"

swift_libraries="$(ldd "$ours" | grep libswift || true)"
echo
python3 - "${medians[0]}" "${medians[1]}" "$goal_ms" "$(stat -c %s "$ours")" "$(stat -c %s "$reference")" <<'EOF'
import sys
ours, reference, goal_ms = float(sys.argv[1]) * 1e3, float(sys.argv[2]) * 1e3, float(sys.argv[3])
ours_size, reference_size = int(sys.argv[4]), int(sys.argv[5])
print("== gst-inspect-1.0 <plugin .so>, median wall time, fresh registry each run")
print(f"   ours       libgstswiftvt.so     {ours:7.2f} ms   ({ours_size / 1e6:.1f} MB)")
print(f"   reference  libgstloadtimeref.so {reference:7.2f} ms   ({reference_size / 1e3:.1f} kB, C)")
print(f"   ours - reference: {ours - reference:+.2f} ms   ours / reference: {ours / reference:.2f}x")
print(f"   goal: ours <= {goal_ms:g} ms: measured {ours:.2f} ms -> {'MET' if ours <= goal_ms else 'MISSED'}")
EOF
echo "== ldd $ours | grep libswift"
if [ -n "$swift_libraries" ]; then
    # shellcheck disable=SC2001 # indents every line of a multi-line value, which ${var//...} cannot anchor
    echo "$swift_libraries" | sed 's/^/   /'
    echo "   (the Swift runtime is linked dynamically: expected static)"
else
    echo "   (none: the Swift runtime is linked statically)"
fi
echo "== size of libgstswiftvt.so: $(stat -c %s "$ours") bytes ($(du -h "$ours" | cut -f1))"
bench_summary plugin-load-ms "plugin load: gst-inspect-1.0 libgstswiftvt.so, fresh registry (ms)" \
    "$(awk -v t="${medians[0]}" 'BEGIN { printf "%.2f", t * 1000 }')" "<= $goal_ms" "$load_timed"
bench_summary plugin-load-ratio "plugin load: gst-inspect-1.0 ours/minimal C plugin" \
    "$(awk -v a="${medians[0]}" -v b="${medians[1]}" 'BEGIN { printf "%.2f", a / b }')" - "$load_timed"
