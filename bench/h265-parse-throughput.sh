#!/usr/bin/env bash
# Whole-pipeline cost of our h265parse-to-hvcc against GStreamer's h265parse, both converting an
# H.265 Annex B byte-stream to hvc1 (stream-format=hvc1, alignment=au), run through gst-launch-1.0
# (issue 35 item 5; bench/parse-throughput.sh is the H.264 one).
#
#   bench/h265-parse-throughput.sh
#
# Three pipelines per input, all with the same filesrc (default blocksize) and fakesink sync=false:
#   floor  filesrc location=F ! fakesink
#   ours   filesrc location=F ! h265parse-to-hvcc ! fakesink
#   peer   filesrc location=F ! h265parse ! video/x-h265,stream-format=hvc1,alignment=au ! fakesink
# Each is run several times (after one warm-up run) and the median wall time kept (hyperfine when
# available, bench/lib/common.sh). The cost of a converter is its median minus the floor's, which
# removes process start, registry load and file reading.
#
# Inputs, made here by cat (each copy starts with its VPS, SPS, PPS and IDR picture): (a) the corpus
# stream main_1080p.265 (54 pictures, large NAL units) repeated to about 1 GB; (b) main_ld_cif_slices.265
# (352x288, 4 slices per picture: many small NAL units) repeated to about 300 MB. Printed per input:
# floor, ours, peer, the costs above the floor and the cost ratio ours/peer. Goal (issue 35): cost
# ratio <= 0.33 on both. It is a measurement: it exits 0 when a goal is missed, non-zero only when
# something fails (build, a pipeline, output other than hvc1/au, a different access-unit count).
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh), each input's cost ratio goes to FILE
# (bench_summary, bench/lib/common.sh) with the goal and the load at the end of its timing.
#
# Environment: SWIFTVT_CORPUS (folder containing h265/, default ../shared/corpus), SWIFTVT_BENCH_RUNS
# (timed runs per pipeline, default 5), SWIFTVT_BENCH_TIMER=date (skip hyperfine),
# SWIFTVT_BENCH_QUICK=1 (inputs of about 50 MB, for checking the script), SWIFTVT_BENCH_SUMMARY
# (above), SWIFTVT_PLUGIN (bench/lib/common.sh: a built plugin, no build).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="h265-parse-throughput"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
h265_corpus="${SWIFTVT_CORPUS:-../shared/corpus}/h265"
stream_a="$h265_corpus/main_1080p.265"
stream_b="$h265_corpus/main_ld_cif_slices.265"
bench_require_corpus -f "$stream_a"
bench_require_corpus -f "$stream_b"
runs="${SWIFTVT_BENCH_RUNS:-5}"

bench_install_deps
bench_setup_timer
bench_build_plugin
bench_make_workdir
bench_use_private_plugin h265parse-to-hvcc

bytes_a=1000000000 bytes_b=300000000
if [ "${bench_quick:-0}" = 1 ]; then bytes_a=50000000 bytes_b=50000000; fi
input_a="$work/1080p.265"
input_b="$work/cif-slices.265"
repeat_a=$(bench_repeat_into "$stream_a" "$bytes_a" "$input_a")
repeat_b=$(bench_repeat_into "$stream_b" "$bytes_b" "$input_b")

pipeline_command() { # pipeline_command floor|ours|peer FILE
    local location
    location=$(printf %q "location=$2")
    case "$1" in
        floor) echo "gst-launch-1.0 -q filesrc $location ! fakesink sync=false" ;;
        ours) echo "gst-launch-1.0 -q filesrc $location ! h265parse-to-hvcc ! fakesink sync=false" ;;
        peer) echo "gst-launch-1.0 -q filesrc $location ! h265parse ! video/x-h265,stream-format=hvc1,alignment=au ! fakesink sync=false" ;;
    esac
}


measure_input() { # measure_input KEY LABEL FILE
    local key="$1" label="$2" file="$3" units_ours units_peer floor ours peer
    echo "== ($key) $label, $(( $(stat -c %s "$file") / 1000000 )) MB: $runs runs per pipeline, timer $timer"
    units_ours=$(bench_check_converter "$file" hvc1 h265parse-to-hvcc)
    units_peer=$(bench_check_converter "$file" hvc1 h265parse ! video/x-h265,stream-format=hvc1,alignment=au)
    if [ "$units_ours" != "$units_peer" ]; then
        echo "$bench_name: access units out differ: ours $units_ours, h265parse $units_peer" >&2
        exit 1
    fi
    { read -r floor; read -r ours; read -r peer; } < <(bench_median_seconds "$(pipeline_command floor "$file")" \
        "$(pipeline_command ours "$file")" "$(pipeline_command peer "$file")")
    python3 - "$key" "$units_ours" "$floor" "$ours" "$peer" >"$work/ratio" <<'PY'
import sys
key, units, floor, ours, peer = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:])
ours_cost, peer_cost = ours - floor, peer - floor
print(f"{ours_cost / peer_cost:.3f}" if ours_cost > 0 and peer_cost > 0 else "n/a")
print(f"   {units} access units; floor {floor * 1e3:.1f} ms, ours {ours * 1e3:.1f} ms, peer {peer * 1e3:.1f} ms",
      file=sys.stderr)
print(f"   cost above the floor: ours {ours_cost * 1e3:.1f} ms, peer {peer_cost * 1e3:.1f} ms", file=sys.stderr)
PY
    ratio=$(cat "$work/ratio")
    echo "   cost ratio ours/peer: $ratio (goal <= 0.33)"
    bench_summary "h265-parse-$key-cost" "parse H.265 $label: cost above floor h265parse-to-hvcc/h265parse" "$ratio" "<= 0.33"
}
measure_input 1080p "main_1080p.265 x$repeat_a" "$input_a"
measure_input cif-slices "main_ld_cif_slices.265 (4 slices per picture) x$repeat_b" "$input_b"
