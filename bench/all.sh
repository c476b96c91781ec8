#!/usr/bin/env bash
# Every bench in one command (issue 19): runs the bench scripts one after another and prints one
# table of their figures against the peers, each with its goal, MET or MISSED, and the machine's
# load while it was measured.
#
#   bench/all.sh [--quick]
#
# Runs, in this order (each script's header says what it measures and how):
#   decode-throughput   vtdec against avdec_h264 and ffmpeg -f null (1080p x5, one thread and
#                       automatic threads), wall time and peak RSS
#   h265-decode-throughput  vtdec against avdec_h265 on H.265 (1080p x19, one thread and automatic
#                       threads), wall time
#   parse-throughput    h264parse-to-avcc against h264parse, cost above the filesrc ! fakesink floor
#                       (1080p to ~1 GB; 8160 slices per picture x120)
#   h265-parse-throughput
#                       h265parse-to-hvcc against h265parse, cost above the same floor (the H.265
#                       corpus 1080p stream to ~1 GB; its 4-slice CIF stream to ~300 MB)
#   multipass-quality   vtmultipasssink against x264enc two-pass, 720p 1000 kbit/s: time, PSNR-Y,
#                       bit-rate error
#   encode-throughput   vtenc against x264enc at equal presets (medium, realtime), 720p 2000 kbit/s:
#                       time above the floor, PSNR-Y
#   constant-quality    vtenc and vtenc_h265 at quality 0.6 against x264enc and x265enc at the same CRF,
#                       360p, 720p, 1080p: PSNR-Y and bit rate per size
#   vtenc-h265          vtenc_h265 against x265enc at equal presets (medium, realtime), 720p
#                       1000 kbit/s: wall time, PSNR-Y
#   multipass-h265      vtmultipasssink codec=h265 against x265's two-pass (the x265 CLI), 720p
#                       1000 kbit/s: PSNR-Y, bit-rate error, time
#   plugin-load-time    gst-inspect-1.0 of the plugin against a minimal C plugin
#   va-encode-depth     VA-API encoding against FFmpeg h264_vaapi on the software VA driver (Xvfb),
#                       1 and 4 pictures in flight, 1 and 5 ms latency
#   annexb-to-avcc      in-process Annex B -> AVCC conversion (for information); it needs the
#                       swiftvt-bench program: skipped when SWIFTVT_PLUGIN is given (no build
#                       wanted) without SWIFTVT_BENCH_TOOL=/path/to/swiftvt-bench
# Not run here: bench/exclusivity.sh (builds the plugin twice, with and without exclusivity checks)
# and bench/soak.sh (long memory soak, minutes per run, a pass/fail check rather than a ratio): run
# them on their own.
#
# How: every script is run with SWIFTVT_BENCH_SUMMARY pointing at one file, to which it appends one
# line per figure (bench_summary in bench/lib/common.sh: row, description, value, goal, MET /
# MISSED / INFO / UNDETERMINED computed from the goal, load at measurement); its own human-readable
# output is shown as it runs. At the end: the machine (cores, CPU model), the load average before
# and after, the table, and the counts of MET and MISSED. Without SWIFTVT_PLUGIN the release
# plugin is built once here and handed to every script.
#
# It is a measurement: it exits 0 when goals are missed, non-zero only when a bench fails (exits
# non-zero, or writes no figure); the other benches still run and the table shows the failure.
#
# --quick: small run counts (SWIFTVT_BENCH_RUNS=1, SWIFTVT_BENCH_RSS_RUNS=1 unless set) and smaller
# inputs where a script supports it (SWIFTVT_BENCH_QUICK=1): for checking the scripts, not for
# figures.
# Environment: SWIFTVT_CORPUS (folder containing h264/, default ../shared/corpus), SWIFTVT_PLUGIN
# (a built libgstswiftvt.so, used as it is), SWIFTVT_BENCH_TOOL (a built swiftvt-bench),
# SWIFTVT_VA_DRIVER_DIR (the software VA driver, scripts/with-software-va.sh), SWIFTVT_BENCH_RUNS
# and SWIFTVT_BENCH_TIMER (passed to every script), SWIFTVT_BENCH_THREADS (decode-throughput's
# thread counts, default here "1 0": one thread and automatic), SWIFTVT_BENCH_ONLY (names of the
# benches to run, default all of the above), SWIFTVT_BENCH_SUMMARY (if set, the collected lines are
# also appended to that file).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="all"
quick=0
for argument in "$@"; do
    case "$argument" in
        --quick) quick=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "usage: bench/all.sh [--quick]" >&2; exit 2 ;;
    esac
done
user_summary="${SWIFTVT_BENCH_SUMMARY:-}"
user_plugin="${SWIFTVT_PLUGIN:-}"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh

benches=(decode-throughput h265-decode-throughput parse-throughput h265-parse-throughput multipass-quality
         encode-throughput constant-quality vtenc-h265 multipass-h265 plugin-load-time va-encode-depth
         annexb-to-avcc)
read -r -a selected <<<"${SWIFTVT_BENCH_ONLY:-${benches[*]}}"
for name in "${selected[@]}"; do
    if [ ! -f "bench/$name.sh" ] || [ "$name" = all ]; then
        echo "$bench_name: unknown bench $name in SWIFTVT_BENCH_ONLY (one of: ${benches[*]})" >&2
        exit 2
    fi
done

export SWIFTVT_BENCH_THREADS="${SWIFTVT_BENCH_THREADS:-1 0}"
if [ "$quick" = 1 ]; then
    export SWIFTVT_BENCH_QUICK=1 SWIFTVT_BENCH_RUNS="${SWIFTVT_BENCH_RUNS:-1}" \
        SWIFTVT_BENCH_RSS_RUNS="${SWIFTVT_BENCH_RSS_RUNS:-1}"
fi

cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
loadavg_start="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "== bench/all.sh$([ "$quick" = 1 ] && echo " --quick"): ${selected[*]}"
echo "== machine: $(nproc) cores, ${cpu_model:-unknown CPU}; load average (1, 5, 15 min) $loadavg_start"

bench_make_workdir
bench_build_plugin
export SWIFTVT_PLUGIN="$plugin_so"
summary="$work/summary.tsv"
status="$work/status.tsv" # name, exit status or SKIPPED, seconds, note
: >"$summary"
: >"$status"

failed=0
index=0
for name in "${selected[@]}"; do
    index=$((index + 1))
    echo
    echo "=== [$index/${#selected[@]}] bench/$name.sh ($(date +%H:%M:%S), load average $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ "$name" = annexb-to-avcc ] && [ -n "$user_plugin" ] && [ -z "${SWIFTVT_BENCH_TOOL:-}" ]; then
        echo "skipped: it builds swiftvt-bench, and SWIFTVT_PLUGIN says not to build (set SWIFTVT_BENCH_TOOL)"
        printf '%s\tSKIPPED\t0\tneeds a build of swiftvt-bench (SWIFTVT_BENCH_TOOL not set)\n' "$name" >>"$status"
        continue
    fi
    : >"$work/one.tsv"
    start=$(date +%s)
    rc=0
    SWIFTVT_BENCH_SUMMARY="$work/one.tsv" bash "bench/$name.sh" || rc=$?
    seconds=$(( $(date +%s) - start ))
    figures=$(wc -l <"$work/one.tsv")
    cat "$work/one.tsv" >>"$summary"
    if [ "$rc" = 77 ]; then # scripts/with-software-va.sh: Xvfb missing
        printf '%s\tSKIPPED\t%s\t%s\n' "$name" "$seconds" "exit 77: a requirement is missing (see above)" >>"$status"
    elif [ "$rc" != 0 ]; then
        failed=$((failed + 1))
        printf '%s\tFAILED\t%s\texit status %s\n' "$name" "$seconds" "$rc" >>"$status"
    elif [ "$figures" = 0 ]; then
        failed=$((failed + 1))
        printf '%s\tFAILED\t%s\texit status 0 but no figure written\n' "$name" "$seconds" >>"$status"
    else
        printf '%s\tok\t%s\t%s figure(s)\n' "$name" "$seconds" "$figures" >>"$status"
    fi
done
if [ -n "$user_summary" ]; then cat "$summary" >>"$user_summary"; fi

echo
python3 - "$summary" "$status" "$(nproc)" "$cpu_model" "$loadavg_start" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$quick" <<'EOF'
import sys

summary_path, status_path, cores, cpu_model, load_start, load_end, quick = sys.argv[1:]
rows = [line.rstrip("\n").split("\t") for line in open(summary_path) if line.strip()]
status = [line.rstrip("\n").split("\t") for line in open(status_path)]

print(f"== bench/all.sh{' --quick (small runs and inputs: checks the scripts, the figures mean little)' if quick == '1' else ''}")
print(f"   machine: {cores} cores, {cpu_model or 'unknown CPU'}")
print(f"   load average (1, 5, 15 min): {load_start} before, {load_end} after")
print()
header = ("row", "figure", "measured", "goal", "verdict", "load at measurement")
table = [header] + [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows if len(r) == 6]
widths = [max(len(t[i]) for t in table) for i in range(5)]
for t in table:
    print("   " + "  ".join(f"{t[i]:<{widths[i]}}" if i != 2 else f"{t[i]:>{widths[i]}}" for i in range(5))
          + "  " + t[5])
if not rows:
    print("   (no figures)")
malformed = [r for r in rows if len(r) != 6]
for r in malformed:
    print(f"   (malformed summary line: {r})")
print()
print("== benches")
for name, state, seconds, note in status:
    print(f"   {name:<19} {state:<8} {int(seconds):5d} s  {note}")
counts = {v: sum(1 for r in rows if len(r) == 6 and r[4] == v) for v in ("MET", "MISSED", "INFO", "UNDETERMINED")}
print()
print(f"== {counts['MET']} MET, {counts['MISSED']} MISSED"
      + (f", {counts['UNDETERMINED']} UNDETERMINED (re-run)" if counts["UNDETERMINED"] else "")
      + f", {counts['INFO']} for information"
      + "".join(f"; {name} {state}" for name, state, _, _ in status if state in ("FAILED", "SKIPPED")))
EOF
if [ "$failed" -gt 0 ]; then
    echo "$bench_name: $failed bench(es) failed" >&2
    exit 1
fi
