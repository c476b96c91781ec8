#!/usr/bin/env bash
# Whole-pipeline cost of our h264parse-to-avcc against GStreamer's h264parse, both converting an
# H.264 Annex B byte-stream to AVCC (stream-format=avc, alignment=au), run through gst-launch-1.0.
#
#   bench/parse-throughput.sh
#
# Three pipelines per input, all with the same filesrc (default blocksize) and fakesink sync=false:
#   floor  filesrc location=F ! fakesink
#   ours   filesrc location=F ! h264parse-to-avcc ! fakesink
#   peer   filesrc location=F ! h264parse ! video/x-h264,stream-format=avc,alignment=au ! fakesink
# Each is run several times (after one warm-up run) and the median wall time kept, with hyperfine
# when available (installed here with apt-get if missing), otherwise with `date +%s%N` and the
# pipelines interleaved. The cost of a converter is its median minus the floor's, which removes
# process start, registry load and file reading.
#
# Inputs: (a) the corpus 1080p stream VID_1920x1080_cabac_temporal_direct.264 repeated to about
# 1 GB; (b) a many-slice stream made here with x264enc, 1920x1080, one slice per macroblock
# (option-string slice-max-mbs=1: 8160 slices per picture, like JM's jm_1080p_allslice), 120
# pictures, not repeated; (c) one such picture coded alone (SPS, PPS, IDR) and the file repeated
# 120 times with cat: the same IDR with the same idr_pic_id after SPS/PPS each time, which the
# access-unit boundary of 7.4.1.2.4 alone does not see (issue 32 row 11: the parser once built one
# 35 MB access unit of it). NAL units are counted once per input (00 00 01 start codes).
# Printed per input: floor, ours, peer, the costs above the floor, the cost ratio ours/peer and the
# NAL-unit rates above the floor with their ratio ours/peer. Goals: cost ratio <= 0.34 on (a), NAL
# rate ratio >= 3.5x on (b). It is a measurement: it exits 0 when a goal is missed, non-zero only
# when something fails (build, a pipeline, wrong output caps).
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh), the cost ratio ours/peer of each input goes to
# FILE (bench_summary, bench/lib/common.sh) with issue 19's goals, <= 0.34 on (a) and <= 0.29 on
# (b), beside the load average at the end of that input's timing.
#
# Builds the release plugin (.build/release/libgstswiftvt.so) first; GStreamer is pointed at a
# copy of it alone in the temporary directory with GST_PLUGIN_PATH, and at a private registry file
# there. Setup and timing are shared with the other bench scripts (bench/lib/common.sh).
# Environment: SWIFTVT_CORPUS (folder containing h264/, default ../shared/corpus),
# SWIFTVT_BENCH_RUNS (timed runs per pipeline, default 5), SWIFTVT_BENCH_TIMER=date (skip
# hyperfine), SWIFTVT_BENCH_QUICK=1 (inputs of about 50 MB and 20 pictures, for checking the
# script), SWIFTVT_BENCH_SUMMARY (above), SWIFTVT_PLUGIN (bench/lib/common.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="parse-throughput"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream_1080p="$corpus/VID_1920x1080_cabac_temporal_direct.264"
bench_require_corpus -f "$stream_1080p"
runs="${SWIFTVT_BENCH_RUNS:-5}"

bench_install_deps
bench_setup_timer
bench_build_plugin
bench_make_workdir
bench_use_private_plugin h264parse-to-avcc

# Inputs.
bytes_a=1000000000 pictures_b=120
if [ "$bench_quick" = 1 ]; then bytes_a=50000000 pictures_b=20; fi
input_a="$work/1080p.264"
repeat_a=$(bench_repeat_into "$stream_1080p" "$bytes_a" "$input_a")

echo "== generating the many-slice stream (x264enc 1920x1080, slice-max-mbs=1: 8160 slices per picture, $pictures_b pictures)"
input_b="$work/many-slices.264"
gst-launch-1.0 -q videotestsrc num-buffers="$pictures_b" ! video/x-raw,width=1920,height=1080,framerate=30/1 \
    ! x264enc option-string=slice-max-mbs=1 speed-preset=ultrafast bitrate=4000 key-int-max=60 \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$input_b"

echo "== generating the repeated one-picture stream (one 8160-slice picture, cat x$pictures_b)"
input_c="$work/one-picture-repeated.264"
gst-launch-1.0 -q videotestsrc num-buffers=1 ! video/x-raw,width=1920,height=1080,framerate=30/1 \
    ! x264enc option-string=slice-max-mbs=1 speed-preset=ultrafast bitrate=4000 \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$work/one-picture.264"
for _ in $(seq "$pictures_b"); do cat "$work/one-picture.264"; done >"$input_c"

count_nal_units() {
    python3 - "$1" <<'EOF'
import sys
with open(sys.argv[1], "rb") as f:
    print(f.read().count(b"\x00\x00\x01"))
EOF
}

# Commands, as strings (words quoted with %q) for hyperfine --shell=none or eval.
pipeline_command() { # pipeline_command floor|ours|peer FILE
    local location
    location=$(printf %q "location=$2")
    case "$1" in
        floor) echo "gst-launch-1.0 -q filesrc $location ! fakesink sync=false" ;;
        ours) echo "gst-launch-1.0 -q filesrc $location ! h264parse-to-avcc ! fakesink sync=false" ;;
        peer) echo "gst-launch-1.0 -q filesrc $location ! h264parse ! video/x-h264,stream-format=avc,alignment=au ! fakesink sync=false" ;;
    esac
}


results="$work/results.tsv"
: >"$results"
measure_input() { # measure_input KEY LABEL FILE
    local key="$1" label="$2" file="$3" nal_units aus_ours aus_peer
    echo "== measuring ($key) $label: $runs runs per pipeline, timer $timer"
    nal_units=$(count_nal_units "$file")
    aus_ours=$(bench_check_converter "$file" avc h264parse-to-avcc)
    aus_peer=$(bench_check_converter "$file" avc h264parse ! video/x-h264,stream-format=avc,alignment=au)
    local -a medians
    mapfile -t medians < <(bench_median_seconds "$(pipeline_command floor "$file")" \
        "$(pipeline_command ours "$file")" "$(pipeline_command peer "$file")")
    if [ "${#medians[@]}" -ne 3 ]; then
        echo "parse-throughput: timing failed for ($key)" >&2
        exit 1
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "$label" "$(stat -c %s "$file")" "$nal_units" \
        "$aus_ours" "$aus_peer" "${medians[0]}" "${medians[1]}" "${medians[2]}" "$(bench_load)" >>"$results"
}
measure_input a "corpus VID_1920x1080_cabac_temporal_direct.264 x$repeat_a" "$input_a"
measure_input b "x264enc 1920x1080, one slice per macroblock (8160 per picture), $pictures_b pictures" "$input_b"
measure_input c "one 8160-slice 1080p picture (SPS, PPS, IDR) repeated by cat, $pictures_b pictures" "$input_c"

echo
python3 - "$results" "$work/summary.tsv" <<'EOF'
import sys

GOALS = {  # input -> (figure, comparison, bound, text)
    "a": ("cost", "<=", 0.34, "ours_cost/peer_cost <= 0.34"),
    "b": ("nal", ">=", 3.5, "NAL-unit rate above floor ours/peer >= 3.5x"),
    "c": ("cost", "<=", 0.29, "ours_cost/peer_cost <= 0.29 (as (b)), one access unit per picture"),
}
SUMMARY = {  # input -> bench/all.sh row, description, issue 19's goal on the cost ratio
    "a": ("parse-1080p-cost", "parse 1080p x{repeat} ({mb:.0f} MB): cost above floor h264parse-to-avcc/h264parse", "<= 0.34"),
    "b": ("parse-allslice-cost", "parse 8160 slices/picture x{pictures}: cost above floor h264parse-to-avcc/h264parse", "<= 0.29"),
    "c": ("parse-repeated-picture-cost", "parse one 8160-slice picture repeated x{pictures}: cost above floor h264parse-to-avcc/h264parse", "<= 0.29"),
}
summary = []
summary_out = open(sys.argv[2], "w")
for line in open(sys.argv[1]):
    key, label, size, nals, aus_ours, aus_peer, floor, ours, peer, load = line.rstrip("\n").split("\t")
    size, nals = int(size), int(nals)
    floor, ours, peer = float(floor), float(ours), float(peer)
    ours_cost, peer_cost = ours - floor, peer - floor
    print(f"== ({key}) {label}")
    print(f"   {size / 1e6:.1f} MB, {nals} NAL units, access units out: ours {aus_ours}, peer {aus_peer}"
          + ("" if aus_ours == aus_peer else "  (counts differ)"))
    print(f"   {'pipeline':<47} {'median':>9} {'above floor':>12} {'NAL units/s':>14} {'MB/s':>9}")
    rows = [("floor  filesrc ! fakesink", floor, None),
            ("ours   filesrc ! h264parse-to-avcc ! fakesink", ours, ours_cost),
            ("peer   filesrc ! h264parse ! avc,au ! fakesink", peer, peer_cost)]
    for name, median, cost in rows:
        if cost is None:
            print(f"   {name:<47} {median * 1e3:7.1f}ms")
        elif cost > 0:
            print(f"   {name:<47} {median * 1e3:7.1f}ms {cost * 1e3:10.1f}ms {nals / cost:14,.0f} {size / 1e6 / cost:9,.0f}")
        else:
            print(f"   {name:<47} {median * 1e3:7.1f}ms {cost * 1e3:10.1f}ms {'(at floor)':>14}")
    measurable = ours_cost > 0 and peer_cost > 0
    cost_ratio = ours_cost / peer_cost if measurable else None
    nal_ratio = peer_cost / ours_cost if measurable else None
    figure, comparison, bound, text = GOALS[key]
    value = cost_ratio if figure == "cost" else nal_ratio
    if aus_ours != aus_peer:
        verdict = "MISSED (access units out differ from h264parse's)"
    elif value is None:
        verdict = "NOT DETERMINED (a cost is at or below the floor; re-run)"
    elif (value <= bound) if comparison == "<=" else (value >= bound):
        verdict = "MET"
    else:
        verdict = "MISSED"
    def goal_note(this):
        return f"   goal {text}: {verdict}" if figure == this else ""
    print(f"   cost above floor ours/peer:          "
          + (f"{cost_ratio:.3f}" if measurable else "n/a") + goal_note("cost"))
    print(f"   NAL-unit rate above floor ours/peer: "
          + (f"{nal_ratio:.2f}x" if measurable else "n/a") + goal_note("nal"))
    print()
    row, description, goal = SUMMARY[key]
    description = description.format(repeat=label.rsplit("x", 1)[-1], mb=size / 1e6,
                                     pictures=label.rsplit(", ", 1)[-1].split()[0])
    print(row, description, "n/a" if cost_ratio is None else f"{cost_ratio:.3f}", goal, load, sep="\t", file=summary_out)
    summary.append(f"   ({key}) {text}: measured "
                   + ("n/a" if value is None else (f"{value:.3f}" if figure == "cost" else f"{value:.2f}x"))
                   + f" -> {verdict}")
print("== goals")
print("\n".join(summary))
summary_out.close()
EOF
bench_summary_file "$work/summary.tsv"
