#!/usr/bin/env bash
# Encoding throughput and bit-rate accuracy of our vtenc (x264 backend) against GStreamer's x264enc
# at equal settings, on 300 frames of 1280x720 I420, run through gst-launch-1.0.
#
#   bench/encode-throughput.sh
#
# Input: the corpus clip VID_1280x720_cabac_temporal_direct.264 (300 frames) decoded once with
# avdec_h264 into a raw I420 file in the temporary directory (1280*720*1.5*300 = 414,720,000 bytes),
# read back as 25 frames/s (300 frames = 12 s of video). Pipelines, all with fakesink sync=false:
#   floor   filesrc location=RAW ! rawvideoparse width=1280 height=720 format=i420 framerate=25/1 ! fakesink
#   enc     filesrc ... ! rawvideoparse ... ! ENCODER ! video/x-h264,stream-format=byte-stream ! fakesink
# (byte-stream for both, so the file written for the size is a plain .264 with every header.)
# Two configurations, both with 2 encoding threads (the machine has 2 cores), target T = 2000 kbit/s
# (issue 19's figure; SWIFTVT_BENCH_TARGET sets another):
#   fast    x264enc threads=2 speed-preset=veryfast tune=zerolatency bitrate=T
#           vtenc   max-threads=2 realtime=true bitrate=T      (x264 preset veryfast + zerolatency)
#   medium  x264enc threads=2 speed-preset=medium bitrate=T     (x264 preset medium, B-frames)
#           vtenc   max-threads=2 bitrate=T                    (x264 preset medium, B-frames)
# Both bitrate properties are in kbit/s (x264enc's too; its default is 2048). Known difference left
# in on purpose (these are each element's own settings): x264enc's default pass=cbr is x264 ABR
# plus a VBV of maxrate=bitrate, bufsize=bitrate*0.6 s (vbv-buf-capacity=600); vtenc with
# rate-control=abr is x264 ABR without VBV. The x264enc rate-control options are read back from
# its x264 SEI and printed.
#
# Per configuration: each encoder is run once writing to a file (filesink), which gives the output
# size and the PSNR-Y against the raw input (mean over the frames of FFmpeg's psnr filter's psnr_y),
# is checked for 300 frames with ffprobe, and serves as the warm-up; then each pipeline is
# timed SWIFTVT_BENCH_RUNS times (default 5) and the median wall time kept. The two encoders are
# interleaved (rounds of one run each, order reversed every other round) so a drift of the shared
# machine's speed does not fall on one of them; each run is timed by hyperfine --runs 1 (installed
# here with apt-get if missing), or with `date +%s%N` when SWIFTVT_BENCH_TIMER=date.
# Printed: median (min..max) wall time, frames/s on the wall time and above the floor (300 / (median
# - floor median), which removes process start, registry load and reading 415 MB), CPU seconds per
# run (user+sys, mean), the ratios vtenc/x264enc, and the bit-rate error of both:
# (output bytes * 8 / 12 s) / target - 1, and PSNR-Y. Goal: vtenc/x264enc frames/s above the floor
# >= 0.98x in each configuration (the wall-time ratio is printed next to it). The CPU time other
# processes used in each phase (the machine's total from /proc/stat minus this script's own) tells
# whether the machine was busy. It is a measurement: it exits 0 when a goal is missed, non-zero
# only when something fails (build, a pipeline, wrong frame count).
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh), per configuration the time above the floor
# vtenc/x264enc (goal <= 1.02, issue 19's form of the same goal) and the PSNR-Y difference vtenc -
# x264enc (goal >= 0 dB) go to FILE (bench_summary, bench/lib/common.sh), beside the load average
# at the end of the configuration's phase and the cores other processes used during it.
#
# Builds the release plugin (.build/release/libgstswiftvt.so) first, or uses
# SWIFTVT_PLUGIN=/path/to/libgstswiftvt.so as it is (bench/lib/common.sh); GStreamer is pointed at a
# copy of it alone in the temporary directory with GST_PLUGIN_PATH, and at a private registry file
# there. Environment: SWIFTVT_CORPUS (folder containing h264/, default ../shared/corpus),
# SWIFTVT_PLUGIN, SWIFTVT_BENCH_RUNS (timed runs per pipeline, default 5), SWIFTVT_BENCH_TARGET
# (kbit/s, default 2000), SWIFTVT_BENCH_TIMER=date (skip hyperfine), SWIFTVT_BENCH_SUMMARY (above).
set -euo pipefail
cd "$(dirname "$0")/.."

name="encode-throughput"
bench_name="$name"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
clip="$corpus/VID_1280x720_cabac_temporal_direct.264"
if [ ! -f "$clip" ]; then
    echo "$name: corpus not found: $clip does not exist" \
         "(set SWIFTVT_CORPUS to the folder that contains h264/)" >&2
    exit 1
fi
runs="${SWIFTVT_BENCH_RUNS:-5}"
width=1280 height=720 frames=300 fps=25 target_kbps="${SWIFTVT_BENCH_TARGET:-2000}" threads=2

bash scripts/install-deps.sh
timer="${SWIFTVT_BENCH_TIMER:-hyperfine}"
if [ "$timer" = hyperfine ] && ! command -v hyperfine >/dev/null 2>&1; then
    echo "$name: installing hyperfine"
    sudo_prefix=()
    if [ "$(id -u)" != 0 ]; then sudo_prefix=(sudo); fi
    apt_install=("${sudo_prefix[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
    "${apt_install[@]}" install -y -qq hyperfine >/dev/null 2>&1 \
        || { "${apt_install[@]}" update -qq && "${apt_install[@]}" install -y -qq hyperfine >/dev/null 2>&1; } \
        || true
fi
if [ "$timer" = hyperfine ] && ! command -v hyperfine >/dev/null 2>&1; then
    echo "$name: hyperfine unavailable, timing with date +%s%N" >&2
    timer="date"
fi

bench_build_plugin

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/plugins"
cp "$plugin_so" "$work/plugins/"
unset GST_PLUGIN_PATH_1_0 GST_REGISTRY_1_0
export GST_PLUGIN_PATH="$work/plugins"
export GST_REGISTRY="$work/registry.bin"
for element in vtenc x264enc avdec_h264 rawvideoparse; do
    if ! gst-inspect-1.0 "$element" >/dev/null 2>&1; then
        echo "$name: element $element not found" >&2
        if [ "$element" = vtenc ]; then gst-inspect-1.0 "$work/plugins/libgstswiftvt.so" >&2 || true; fi
        exit 1
    fi
done

# Whether something else was running: CPU time of the whole machine (/proc/stat) minus the CPU
# time of this script's own children (bash `times`; every command below is waited for by this
# shell, none runs in a process substitution), per phase.
clock_ticks=$(getconf CLK_TCK)
read_own_cpu() { # sets own_cpu: user+sys CPU seconds of this shell's finished children so far
    times >"$work/times.txt" # here, not in $(...): a subshell would report its own (empty) children
    own_cpu=$(tail -1 "$work/times.txt" | awk '{ n = 0; for (i = 1; i <= NF; i++) { split($i, a, "m"); n += a[1] * 60 + a[2] } print n }')
}
snapshot() { # snapshot PHASE -> appends "PHASE wall_s machine_busy_cpu_s own_cpu_s" to $work/load.txt
    local busy
    busy=$(awk -v hz="$clock_ticks" '/^cpu /{ print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat)
    read_own_cpu
    echo "$1 $(date +%s.%N) $busy $own_cpu" >>"$work/load.txt"
    echo "$1 $(cut -d' ' -f1 /proc/loadavg)" >>"$work/loadavg.txt"
}
echo "== load average (1, 5, 15 min) at the start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
snapshot start

echo "== decoding $(basename "$clip") to raw I420"
raw="$work/720p.i420"
gst-launch-1.0 -q filesrc location="$clip" ! h264parse ! avdec_h264 ! video/x-raw,format=I420 \
    ! filesink location="$raw"
raw_expected=$(( width * height * frames * 3 / 2 ))
if [ "$(stat -c %s "$raw")" -ne "$raw_expected" ]; then
    echo "$name: raw file is $(stat -c %s "$raw") bytes, expected $raw_expected ($frames frames)" >&2
    exit 1
fi

# Pipelines as strings (words quoted with %q) for hyperfine --shell=none or eval.
source_part="filesrc $(printf %q "location=$raw") ! rawvideoparse width=$width height=$height format=i420 framerate=$fps/1"
encoder_of() { # encoder_of fast|medium x264enc|vtenc -> the encoder with its properties
    case "$1/$2" in
        fast/x264enc) echo "x264enc threads=$threads speed-preset=veryfast tune=zerolatency bitrate=$target_kbps" ;;
        fast/vtenc) echo "vtenc max-threads=$threads realtime=true bitrate=$target_kbps" ;;
        medium/x264enc) echo "x264enc threads=$threads speed-preset=medium bitrate=$target_kbps" ;;
        medium/vtenc) echo "vtenc max-threads=$threads bitrate=$target_kbps" ;;
    esac
}
pipeline_command() { # pipeline_command floor | pipeline_command CONFIG ENCODER [OUTPUT_FILE]
    if [ "$1" = floor ]; then
        echo "gst-launch-1.0 -q $source_part ! fakesink sync=false"
        return
    fi
    local sink="fakesink sync=false"
    if [ $# -ge 3 ]; then sink="filesink $(printf %q "location=$3")"; fi
    echo "gst-launch-1.0 -q $source_part ! $(encoder_of "$1" "$2") ! video/x-h264,stream-format=byte-stream ! $sink"
}

# time_commands CMD... -> one line "median min max cpu" (seconds; cpu = mean user+sys) per command,
# in order. The commands are interleaved: `runs` rounds of one run each, in reversed order every
# other round, so a drift of the machine's speed does not fall on one command. No warm-up (the
# file-writing run of each encoder just before is the warm-up).
time_commands() {
    local -a cmds=("$@") order
    local round i cpu0 start end
    : >"$work/times.tsv"
    for (( round = 0; round < runs; round++ )); do
        order=()
        for (( i = 0; i < ${#cmds[@]}; i++ )); do
            if (( round % 2 )); then order=("$i" "${order[@]}"); else order+=("$i"); fi
        done
        for i in "${order[@]}"; do
            if [ "$timer" = hyperfine ]; then
                if ! hyperfine --shell=none --runs 1 --style none --export-json "$work/hyperfine.json" "${cmds[i]}" \
                        >"$work/hyperfine.log" 2>&1; then
                    echo "$name: pipeline failed: ${cmds[i]}" >&2
                    cat "$work/hyperfine.log" >&2
                    exit 1
                fi
                python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["results"][0]; print(sys.argv[2], r["times"][0], r["user"] + r["system"], sep="\t")' \
                    "$work/hyperfine.json" "$i" >>"$work/times.tsv"
            else
                read_own_cpu
                cpu0=$own_cpu
                start=$(date +%s%N)
                if ! eval "${cmds[i]}" >/dev/null 2>"$work/pipeline.err"; then
                    echo "$name: pipeline failed: ${cmds[i]}" >&2
                    cat "$work/pipeline.err" >&2
                    exit 1
                fi
                end=$(date +%s%N)
                read_own_cpu
                printf '%s\t%s\t%s\n' "$i" "$(( end - start ))e-9" "$(python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$cpu0" "$own_cpu")" \
                    >>"$work/times.tsv"
            fi
        done
    done
    python3 - "$work/times.tsv" "${#cmds[@]}" <<'PY'
import statistics, sys
walls, cpus = {}, {}
for line in open(sys.argv[1]):
    i, wall, cpu = line.split("\t")
    walls.setdefault(int(i), []).append(float(wall))
    cpus.setdefault(int(i), []).append(float(cpu))
for i in range(int(sys.argv[2])):
    print(statistics.median(walls[i]), min(walls[i]), max(walls[i]), statistics.mean(cpus[i]))
PY
}

# Output of one file-writing run: fails on a pipeline error or a frame count other than $frames;
# prints "bytes<TAB>PSNR-Y<TAB>x264 rate-control options from the SEI, if any".
encode_to_file() { # encode_to_file CONFIG ENCODER
    local out="$work/$1-$2.264" count options psnr
    if ! eval "$(pipeline_command "$1" "$2" "$out")" >"$work/encode.log" 2>&1; then
        echo "$name: the $1 $2 pipeline failed:" >&2
        cat "$work/encode.log" >&2
        exit 1
    fi
    count=$(ffprobe -v error -f h264 -count_packets -select_streams v:0 \
        -show_entries stream=nb_read_packets -of csv=p=0 "$out" | tr -d '[:space:],')
    if [ "$count" != "$frames" ]; then
        echo "$name: the $1 $2 output has ${count:-no} frames, expected $frames" >&2
        exit 1
    fi
    options=$(strings -n 20 "$out" | grep -m1 -o 'options: .*' | tr ' ' '\n' \
        | grep -E '^(rc|bitrate|vbv_maxrate|vbv_bufsize|bframes|rc_lookahead|threads|sliced_threads)=' \
        | tr '\n' ' ' || true)
    # PSNR-Y against the raw input: the mean of psnr_y over the frames (FFmpeg's psnr filter).
    rm -f "$work/psnr.log"
    if ! ffmpeg -v error -nostdin -i "$out" -f rawvideo -pix_fmt yuv420p -s "${width}x$height" -framerate "$fps" \
            -i "$raw" -lavfi "[0:v][1:v]psnr=stats_file=$work/psnr.log" -f null - >"$work/psnr.err" 2>&1; then
        echo "$name: PSNR of the $1 $2 output failed:" >&2
        cat "$work/psnr.err" >&2
        exit 1
    fi
    count=$(grep -c psnr_y: "$work/psnr.log" || true)
    if [ "$count" != "$frames" ]; then
        echo "$name: PSNR of the $1 $2 output over $count frames, expected $frames" >&2
        exit 1
    fi
    psnr=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^psnr_y:/) { split($i, a, ":"); s += a[2]; n++ } } END { printf "%.3f", s / n }' "$work/psnr.log")
    printf '%s\t%s\t%s\n' "$(stat -c %s "$out")" "$psnr" "${options% }"
    rm -f "$out"
}

results="$work/results.tsv"
: >"$results"

echo "== measuring the floor: $runs runs, timer $timer"
eval "$(pipeline_command floor)" # warm-up
time_commands "$(pipeline_command floor)" >"$work/timings.txt"
read -r floor_median floor_min floor_max floor_cpu <"$work/timings.txt"
printf 'floor\t-\t-\t%s\t%s\t%s\t%s\t-\t-\t-\n' "$floor_median" "$floor_min" "$floor_max" "$floor_cpu" >>"$results"
snapshot floor

for config in fast medium; do
    echo "== measuring ($config): one file-writing run per encoder, then $runs timed runs per pipeline, timer $timer"
    declare -A size=() psnr=() options=()
    for encoder in x264enc vtenc; do
        encode_to_file "$config" "$encoder" >"$work/encoded.txt"
        IFS=$'\t' read -r "size[$encoder]" "psnr[$encoder]" "options[$encoder]" <"$work/encoded.txt"
    done
    time_commands "$(pipeline_command "$config" x264enc)" "$(pipeline_command "$config" vtenc)" >"$work/timings.txt"
    mapfile -t timings <"$work/timings.txt"
    if [ "${#timings[@]}" -ne 2 ]; then
        echo "$name: timing failed for ($config)" >&2
        exit 1
    fi
    i=0
    for encoder in x264enc vtenc; do
        read -r median min max cpu <<<"${timings[i]}"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$config" "$encoder" "$(encoder_of "$config" "$encoder")" \
            "$median" "$min" "$max" "$cpu" "${size[$encoder]}" "${psnr[$encoder]}" "${options[$encoder]:-}" >>"$results"
        i=$((i + 1))
    done
    unset size psnr options
    snapshot "$config"
done

echo
python3 - "$results" "$frames" "$fps" "$target_kbps" "$work/load.txt" "$(nproc)" "$work" <<'EOF'
import math, sys

path, frames, fps, target_kbps, load_path, cpus, work = sys.argv[1:]
frames, fps, target_kbps = int(frames), int(fps), int(target_kbps)
seconds = frames / fps
GOAL = 0.98
rows = {}
for line in open(path):
    config, encoder, element, median, lo, hi, cpu, size, psnr, options = line.rstrip("\n").split("\t")
    rows[(config, encoder)] = dict(element=element, median=float(median), min=float(lo), max=float(hi),
                                   cpu=float(cpu), size=None if size == "-" else int(size),
                                   psnr=None if psnr == "-" else float(psnr), options=options)
floor = rows[("floor", "-")]
print(f"== input: {frames} frames 1280x720 I420 at {fps}/1 ({seconds:.0f} s of video), "
      f"target {target_kbps} kbit/s = {target_kbps * 1000 / 8 * seconds:,.0f} bytes")
print(f"   bitrate is kbit/s on both elements (x264enc's default is 2048 kbit/s; set explicitly here)")
print(f"   floor  rawvideoparse ! fakesink: {floor['median'] * 1e3:.0f} ms "
      f"(min {floor['min'] * 1e3:.0f}, max {floor['max'] * 1e3:.0f})")
print()
summary, figures_all = [], {}
for config, title in (("fast", "x264 preset veryfast + tune zerolatency, no B-frames"), ("medium", "x264 preset medium, B-frames")):
    print(f"== ({config}) {title}")
    print(f"   {'encoder':<8} {'median':>8} {'min..max':>13} {'fps wall':>9} {'fps >floor':>11} "
          f"{'CPU s':>6} {'bytes':>10} {'bit rate':>10} {'error':>7} {'PSNR-Y':>9}")
    figures = {}
    for encoder in ("x264enc", "vtenc"):
        r = rows[(config, encoder)]
        above = r["median"] - floor["median"]
        fps_wall = frames / r["median"]
        fps_above = frames / above if above > 0 else math.nan
        kbps = r["size"] * 8 / seconds / 1000
        error = kbps / target_kbps - 1
        figures[encoder] = (fps_wall, fps_above)
        cpu = "n/a" if math.isnan(r["cpu"]) else f"{r['cpu']:.1f}"
        print(f"   {encoder:<8} {r['median']:7.2f}s {r['min']:6.2f}..{r['max']:<6.2f} {fps_wall:9.1f} "
              f"{fps_above:11.1f} {cpu:>6} {r['size']:10,} {kbps:7.0f} kb/s {error * 100:+6.2f}% {r['psnr']:6.3f} dB")
    for encoder in ("x264enc", "vtenc"):
        print(f"   {encoder:<8} = {rows[(config, encoder)]['element']}")
    if rows[(config, "x264enc")]["options"]:
        print(f"   x264enc's x264 SEI says: {rows[(config, 'x264enc')]['options']}")
    wall_ratio = figures["vtenc"][0] / figures["x264enc"][0]
    above_ratio = figures["vtenc"][1] / figures["x264enc"][1]
    if math.isnan(above_ratio):
        verdict = "NOT DETERMINED (a median is at or below the floor; re-run)"
    else:
        verdict = "MET" if above_ratio >= GOAL else "MISSED"
    print(f"   vtenc/x264enc frames/s: above floor {above_ratio:.3f}x   goal >= {GOAL}x: {verdict}")
    print(f"                           wall time   {wall_ratio:.3f}x")
    print()
    summary.append(f"   ({config}) vtenc/x264enc frames/s above floor >= {GOAL}x: measured {above_ratio:.3f}x -> {verdict}")
    figures_all[config] = (above_ratio, rows[(config, "vtenc")]["psnr"] - rows[(config, "x264enc")]["psnr"])
print("== goals")
print("\n".join(summary))
print(f"== other processes' CPU use while measuring ({cpus} CPUs; busy = above 5% of the machine, re-run)")
snapshots = [line.split() for line in open(load_path)]
busy_phases = []
for (_, wall0, busy0, own0), (phase, wall1, busy1, own1) in zip(snapshots, snapshots[1:]):
    wall = float(wall1) - float(wall0)
    others = (float(busy1) - float(busy0)) - (float(own1) - float(own0))  # about +-1% of noise
    share = others / (wall * int(cpus))
    label = "decode + floor" if phase == "floor" else phase
    print(f"   {label:<15} {wall:6.1f} s wall, others {others:+6.1f} CPU-s = {share * 100:+5.1f}% of the machine")
    if share > 0.05:
        busy_phases.append(label)
print("   machine: " + ("BUSY during " + ", ".join(busy_phases) + " (figures disturbed; re-run)" if busy_phases else "quiet"))

# Figures for bench/all.sh (bench_summary_file), with the load of each configuration's phase.
others_cores = {}
for (_, wall0, busy0, own0), (phase, wall1, busy1, own1) in zip(snapshots, snapshots[1:]):
    others_cores[phase] = max(0.0, (float(busy1) - float(busy0)) - (float(own1) - float(own0))) / (float(wall1) - float(wall0))
loadavg = dict(line.split() for line in open(f"{work}/loadavg.txt"))
with open(f"{work}/summary.tsv", "w") as out:
    for config, text in (("medium", "medium"), ("fast", "realtime (x264enc veryfast+zerolatency)")):
        above_ratio, psnr_delta = figures_all[config]
        load = f"loadavg {loadavg[config]}, others {others_cores[config]:.2f} cores"
        time_ratio = f"{1 / above_ratio:.3f}" if above_ratio > 0 else "n/a"
        print(f"encode-{config}-time\tencode 720p {target_kbps} kbit/s {text}: time above floor vtenc/x264enc"
              f"\t{time_ratio}\t<= 1.02\t{load}", file=out)
        print(f"encode-{config}-psnr\tencode 720p {target_kbps} kbit/s {text}: PSNR-Y vtenc - x264enc (dB)"
              f"\t{psnr_delta:.3f}\t>= 0.00\t{load}", file=out)
EOF
bench_summary_file "$work/summary.tsv"
