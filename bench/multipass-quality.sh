#!/usr/bin/env bash
# Quality, bit-rate accuracy and time of vtmultipasssink (SwiftVT multi-pass, one pipeline run)
# against x264enc two-pass (two pipeline runs) and x264enc single-pass ABR at the same achieved
# size, on the 300-frame 1280x720 clip, in one run.
#
#   bench/multipass-quality.sh [TARGET_KBIT]      # default 1000 kbit/s
#
# Input: the corpus stream VID_1280x720_cabac_temporal_direct.264, its first 300 frames decoded
# once by ffmpeg into a raw I420 file in the temporary directory, read back as 30 frames/s (10 s).
# Source part of every pipeline: filesrc location=CLIP ! rawvideoparse width=1280 height=720
# format=i420 framerate=30/1. Three encodings, each into an MP4 file:
#   (a) SwiftVT multi-pass   ... ! vtmultipasssink location=OUT bitrate=T          (default settings:
#                            up to 3 passes, x264 preset medium, its default GOP), gst-launch-1.0 -m;
#                            passes and frames re-encoded are read from its vtmultipasssink-done message
#   (b) x264enc two-pass     ... ! x264enc pass=pass1 multipass-cache-file=F bitrate=T ! fakesink
#                            ... ! x264enc pass=pass2 multipass-cache-file=F bitrate=T ! mp4mux ! filesink
#                            (x264enc's default preset, medium; its first pass is x264's fast first pass)
#   (c) x264enc ABR          ... ! x264enc bitrate=B ! mp4mux ! filesink, B tuned (at most 6 runs, B
#                            scaled by the size ratio each time) until its size is within 1 % of (a)'s
# All three run with their elements' default thread counts. x264enc puts a VBV (maxrate = bitrate,
# buffer 0.6 s) on every pass mode, two-pass included; vtmultipasssink has none. The x264 options
# from each x264enc file's SEI are printed.
#
# Per encoding: frame count (ffprobe, must be 300), achieved kbit/s (sum of the video packet sizes
# from ffprobe x 8 / 10 s) and its error against the target, PSNR-Y (mean over the frames of
# FFmpeg's psnr filter's psnr_y against the raw clip), SSIM-Y (mean of the ssim filter's Y), total
# wall time (GNU time %e of each gst-launch-1.0 process; two-pass: pass 1 + pass 2), and for (a)
# the passes run and the frames re-encoded (frames-reencoded / frames: a frame re-encoded in
# passes 2 and 3 counts twice; x264 two-pass encodes every frame twice: 1.00). Times are the
# median of SWIFTVT_BENCH_RUNS rounds (default 1; round 1 is the one that writes the measured
# files, later rounds write to a scratch file, the order of the encoders reversed every other round).
# Goals (issue 19's): PSNR-Y at least x264 two-pass's; bit-rate error at most 1 % (x264
# two-pass's printed next to it); total time at most x264 two-pass's (ratio ours/x264 printed).
# Also printed: the CPU time other processes used while the encodings ran (/proc/stat minus this
# script's own children), so that times taken on a busy machine can be told apart and re-run.
# It is a measurement: it exits 0 when a goal is missed, non-zero only when something fails (a
# pipeline, a wrong frame count, a missing tool or element).
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh), three figures go to FILE (bench_summary,
# bench/lib/common.sh) with issue 19's goals: time ours/x264 two-pass <= 1.00, PSNR-Y ours - x264
# two-pass >= 0 dB, |bit-rate error| <= 1 %; beside each, the
# load average at the end of the timing rounds and the cores other processes used during them.
#
# Builds the release plugin (.build/release/libgstswiftvt.so) first, or uses
# SWIFTVT_PLUGIN=/path/to/libgstswiftvt.so as it is; GStreamer is pointed at a copy of it alone in
# the temporary directory, with a private registry (bench/lib/common.sh).
# Environment: SWIFTVT_CORPUS (folder containing h264/, default ../shared/corpus), SWIFTVT_PLUGIN,
# SWIFTVT_BENCH_RUNS (timed rounds, default 1), SWIFTVT_BENCH_TARGET (kbit/s, default 1000; the
# argument wins), SWIFTVT_BENCH_SUMMARY (above).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="multipass-quality"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream="$corpus/VID_1280x720_cabac_temporal_direct.264"
bench_require_corpus -f "$stream"
runs="${SWIFTVT_BENCH_RUNS:-1}"
target="${1:-${SWIFTVT_BENCH_TARGET:-1000}}"
width=1280 height=720 frames=300 fps=30
seconds=$(( frames / fps ))
loadavg_start="$(cut -d' ' -f1-3 /proc/loadavg)"

bench_install_deps
bench_require_gnu_time %e
for tool in ffmpeg ffprobe; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$bench_name: $tool not found (scripts/install-deps.sh installs ffmpeg)" >&2
        exit 1
    fi
done
bench_build_plugin
bench_make_workdir
bench_use_private_plugin vtmultipasssink
for element in x264enc mp4mux rawvideoparse; do
    if ! gst-inspect-1.0 "$element" >/dev/null 2>&1; then
        echo "$bench_name: element $element not found (gstreamer1.0-plugins-ugly/-good/-bad)" >&2
        exit 1
    fi
done

echo "== decoding the first $frames frames of $(basename "$stream") to raw I420"
clip="$work/clip720.yuv"
ffmpeg -v error -nostdin -i "$stream" -frames:v "$frames" -pix_fmt yuv420p -f rawvideo "$clip"
if [ "$(stat -c %s "$clip")" -ne $(( width * height * frames * 3 / 2 )) ]; then
    echo "$bench_name: the raw clip is $(stat -c %s "$clip") bytes, not $frames frames of ${width}x$height" >&2
    exit 1
fi
source_part=(filesrc "location=$clip" ! rawvideoparse "width=$width" "height=$height" format=i420 "framerate=$fps/1")

# timed LOG CMD... -> prints the wall seconds of CMD (stdout and stderr to LOG); exits on failure.
timed() {
    local log="$1"
    shift
    if ! "$gnu_time" -f %e -o "$work/time.txt" "$@" >"$log" 2>&1; then
        echo "$bench_name: failed: $*" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    tail -1 "$work/time.txt"
}

# Achieved kbit/s: the video packets' bytes over the clip's duration.
kbps() {
    ffprobe -v error -select_streams v -show_entries packet=size -of csv=p=0 "$1" \
        | awk -v s="$seconds" '{ b += $1 } END { printf "%.2f", b * 8 / s / 1000 }'
}
check_frames() { # check_frames FILE LABEL
    local count
    count=$(ffprobe -v error -select_streams v -show_entries stream=nb_frames -of csv=p=0 "$1" | tr -d '[:space:],')
    if [ "$count" != "$frames" ]; then
        echo "$bench_name: $2 wrote ${count:-no} frames, expected $frames" >&2
        exit 1
    fi
}
# PSNR-Y and SSIM-Y of FILE against the raw clip, each the mean over the frames: "psnr ssim".
quality() {
    ffmpeg -v error -nostdin -i "$1" -f rawvideo -pix_fmt yuv420p -s "${width}x$height" -framerate "$fps" -i "$clip" \
        -lavfi "[0:v]split[a0][a1];[1:v]split[b0][b1];[a0][b0]psnr=stats_file=$work/psnr.log;[a1][b1]ssim=stats_file=$work/ssim.log" \
        -f null - >/dev/null
    local n_psnr n_ssim psnr ssim
    n_psnr=$(grep -c psnr_y: "$work/psnr.log" || true)
    n_ssim=$(grep -c ' Y:' "$work/ssim.log" || true)
    if [ "$n_psnr" != "$frames" ] || [ "$n_ssim" != "$frames" ]; then
        echo "$bench_name: $1: PSNR over $n_psnr frames, SSIM over $n_ssim, expected $frames" >&2
        exit 1
    fi
    psnr=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^psnr_y:/) { split($i, a, ":"); s += a[2]; n++ } } END { printf "%.3f", s / n }' "$work/psnr.log")
    ssim=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^Y:/) { split($i, a, ":"); s += a[2]; n++ } } END { printf "%.5f", s / n }' "$work/ssim.log")
    echo "$psnr $ssim"
}
# The x264 rate-control options in an x264enc file's SEI.
x264_options() {
    strings -n 20 "$1" | grep -m1 -o 'options: .*' | tr ' ' '\n' \
        | grep -E '^(rc|bitrate|ratetol|vbv_maxrate|vbv_bufsize|bframes|mbtree|threads|subme|ref|keyint)=' \
        | tr '\n' ' ' || true
}

swiftvt_out="$work/swiftvt.mp4" twopass_out="$work/x264-2pass.mp4" abr_out="$work/x264-abr.mp4"
stats="$work/x264.stats"
run_swiftvt() { # run_swiftvt OUT -> wall seconds; log in $work/swiftvt.log
    timed "$work/swiftvt.log" gst-launch-1.0 -m "${source_part[@]}" ! vtmultipasssink "location=$1" "bitrate=$target"
}
run_twopass() { # run_twopass OUT -> "pass1_seconds pass2_seconds"
    local t1 t2
    rm -f "$stats" "$stats.mbtree"
    t1=$(timed "$work/pass1.log" gst-launch-1.0 -q "${source_part[@]}" \
        ! x264enc pass=pass1 "multipass-cache-file=$stats" "bitrate=$target" ! fakesink)
    t2=$(timed "$work/pass2.log" gst-launch-1.0 -q "${source_part[@]}" \
        ! x264enc pass=pass2 "multipass-cache-file=$stats" "bitrate=$target" ! mp4mux ! filesink "location=$1")
    echo "$t1 $t2"
}
run_abr() { # run_abr BITRATE OUT -> wall seconds
    timed "$work/abr.log" gst-launch-1.0 -q "${source_part[@]}" ! x264enc "bitrate=$1" ! mp4mux ! filesink "location=$2"
}

# Whether something else was running while timing: CPU time of the whole machine (/proc/stat)
# minus that of this script's own children (bash `times`, which counts the pipelines run inside
# command substitutions too: they are waited for), as a share of the machine.
clock_ticks=$(getconf CLK_TCK)
cpu_snapshot() { # -> "wall_s machine_busy_cpu_s own_children_cpu_s"
    local busy
    busy=$(awk -v hz="$clock_ticks" '/^cpu /{ print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat)
    times >"$work/times.txt" # here, not in $(...): a subshell would report its own (empty) children
    echo "$(date +%s.%N) $busy $(tail -1 "$work/times.txt" | awk '{ n = 0; for (i = 1; i <= NF; i++) { split($i, a, "m"); n += a[1] * 60 + a[2] } print n }')"
}

times_tsv="$work/times.tsv"
: >"$times_tsv"
echo "== load average (1, 5, 15 min) at the start: $loadavg_start ($(nproc) CPUs); target $target kbit/s"
cpu_snapshot >"$work/load.txt"

echo "== (a) SwiftVT multi-pass: vtmultipasssink bitrate=$target"
t=$(run_swiftvt "$swiftvt_out")
printf 'swiftvt\t%s\t%s\n' "$t" "$t" >>"$times_tsv"
grep -q "Got EOS" "$work/swiftvt.log" || { echo "$bench_name: vtmultipasssink: no EOS" >&2; tail -20 "$work/swiftvt.log" >&2; exit 1; }
done_message=$(grep -o "vtmultipasssink-done.*" "$work/swiftvt.log" | tail -1)
if [ -z "$done_message" ]; then
    echo "$bench_name: no vtmultipasssink-done message" >&2
    exit 1
fi
field() { echo "$done_message" | sed -n "s/.* $1=([a-z]*)\([0-9.e+-]*\).*/\1/p"; }
passes=$(field passes) done_frames=$(field frames) reencoded=$(field frames-reencoded)
echo "   ${done_message%;}"
check_frames "$swiftvt_out" vtmultipasssink
swiftvt_kbps=$(kbps "$swiftvt_out")
echo "   ${t} s, $swiftvt_kbps kbit/s"

echo "== (b) x264enc two-pass: pass=pass1 ! fakesink, then pass=pass2 ! mp4mux, bitrate=$target"
t=$(run_twopass "$twopass_out")
read -r t1 t2 <<<"$t"
printf 'twopass\t%s\t%s+%s\n' "$(python3 -c "print(round($t1 + $t2, 2))")" "$t1" "$t2" >>"$times_tsv"
check_frames "$twopass_out" "x264enc pass2"
twopass_kbps=$(kbps "$twopass_out")
echo "   pass 1 ${t1} s + pass 2 ${t2} s, $twopass_kbps kbit/s"

echo "== (c) x264enc single-pass ABR, bitrate tuned until its size is within 1 % of (a)'s ($swiftvt_kbps kbit/s)"
setting=$(awk -v r="$swiftvt_kbps" 'BEGIN { printf "%d", r + 0.5 }')
matched=no
for attempt in 1 2 3 4 5 6; do
    t=$(run_abr "$setting" "$abr_out")
    abr_kbps=$(kbps "$abr_out")
    echo "   attempt $attempt: bitrate=$setting -> $abr_kbps kbit/s (${t} s)"
    if awk -v a="$abr_kbps" -v b="$swiftvt_kbps" 'BEGIN { exit !((a - b) ^ 2 <= (b * 0.01) ^ 2) }'; then
        matched=yes
        break
    fi
    setting=$(awk -v s="$setting" -v a="$abr_kbps" -v b="$swiftvt_kbps" 'BEGIN { printf "%d", s * b / a + 0.5 }')
done
printf 'abr\t%s\t%s\n' "$t" "$t" >>"$times_tsv"
check_frames "$abr_out" "x264enc ABR"

# Further timing rounds: the same pipelines into a scratch file, the order reversed every other round.
for (( round = 2; round <= runs; round++ )); do
    echo "== timing round $round of $runs"
    order=(swiftvt twopass abr)
    if (( round % 2 == 0 )); then order=(abr twopass swiftvt); fi
    for which in "${order[@]}"; do
        case "$which" in
            swiftvt) t=$(run_swiftvt "$work/scratch.mp4"); printf 'swiftvt\t%s\t%s\n' "$t" "$t" >>"$times_tsv" ;;
            twopass) t=$(run_twopass "$work/scratch.mp4"); read -r t1 t2 <<<"$t"
                     printf 'twopass\t%s\t%s+%s\n' "$(python3 -c "print(round($t1 + $t2, 2))")" "$t1" "$t2" >>"$times_tsv" ;;
            abr) t=$(run_abr "$setting" "$work/scratch.mp4"); printf 'abr\t%s\t%s\n' "$t" "$t" >>"$times_tsv" ;;
        esac
        rm -f "$work/scratch.mp4"
    done
done

cpu_snapshot >>"$work/load.txt"
loadavg_timed="$(cut -d' ' -f1 /proc/loadavg)"
echo "== PSNR-Y and SSIM-Y against the raw clip"
q=$(quality "$swiftvt_out"); read -r swiftvt_psnr swiftvt_ssim <<<"$q"
q=$(quality "$twopass_out"); read -r twopass_psnr twopass_ssim <<<"$q"
q=$(quality "$abr_out"); read -r abr_psnr abr_ssim <<<"$q"

echo
python3 - "$times_tsv" <<EOF
import statistics, sys

frames, seconds, target, runs = $frames, $seconds, float("$target"), $runs
times = {}
for line in open(sys.argv[1]):
    which, total, parts = line.rstrip("\n").split("\t")
    times.setdefault(which, []).append((float(total), parts))
def median(which): # -> (median total, "median pass 1+median pass 2" or the total)
    values = times[which]
    split = [[float(x) for x in parts.split("+")] for _, parts in values]
    return statistics.median(t for t, _ in values), "+".join(f"{statistics.median(p):.2f}" for p in zip(*split))

rows = [
    ("SwiftVT multi-pass", "swiftvt", float("$swiftvt_psnr"), float("$swiftvt_ssim"), float("$swiftvt_kbps"),
     "$passes", "${reencoded}/${done_frames}", int("$reencoded") / int("$done_frames")),
    ("x264enc two-pass", "twopass", float("$twopass_psnr"), float("$twopass_ssim"), float("$twopass_kbps"),
     "2", f"{frames}/{frames}", 1.0),
    ("x264enc ABR bitrate=$setting", "abr", float("$abr_psnr"), float("$abr_ssim"), float("$abr_kbps"),
     "1", "-", None),
]
print(f"== $bench_name: {frames} frames ${width}x${height} I420 at ${fps}/1 ({seconds} s), target {target:.0f} kbit/s, "
      f"$(nproc) CPUs, time = median of {runs} run(s)")
print(f"   {'encoding':<29} {'PSNR-Y':>9} {'SSIM-Y':>8} {'kbit/s':>8} {'error':>7} {'time s':>7}  {'passes':>6}  {'re-encoded':>17}")
figures = {}
for title, key, psnr, ssim, kbps, npasses, count, fraction in rows:
    wall, parts = median(key)
    error = kbps / target - 1
    figures[key] = dict(psnr=psnr, kbps=kbps, error=error, wall=wall)
    share = "-" if fraction is None else f"{fraction:.2f} ({count})"
    if "+" in parts:
        figures[key]["split"] = parts.replace("+", " s + pass 2 ")
    print(f"   {title:<29} {psnr:6.3f} dB {ssim:8.5f} {kbps:8.2f} {error * 100:+6.2f}% {wall:7.2f}  {npasses:>6}  {share:>17}")
ours, x264 = figures["swiftvt"], figures["twopass"]
size_gap = figures["abr"]["kbps"] / ours["kbps"] - 1
print(f"   x264enc ABR size vs SwiftVT's: {size_gap * 100:+.2f}% ({'matched within 1 %' if '$matched' == 'yes' else 'NOT matched within 1 % after 6 runs'});"
      f" SwiftVT PSNR-Y - ABR's: {ours['psnr'] - figures['abr']['psnr']:+.3f} dB")
print(f"   x264enc two-pass time: pass 1 {figures['twopass']['split']} s (medians of each)")
print(f"   x264enc two-pass SEI: $(x264_options "$twopass_out")")
print(f"   x264enc ABR SEI:      $(x264_options "$abr_out")")
print()
def verdict(ok): return "MET" if ok else "MISSED"
delta = ours["psnr"] - x264["psnr"]
ratio = ours["wall"] / x264["wall"]
print("== goals")
print(f"   PSNR-Y at least x264 two-pass's: {ours['psnr']:.3f} vs {x264['psnr']:.3f} dB "
      f"({delta:+.3f} dB) -> {verdict(delta >= 0)}")
print(f"   bit-rate error <= 1 %: {ours['error'] * 100:+.2f}% (x264 two-pass: {x264['error'] * 100:+.2f}%) "
      f"-> {verdict(abs(ours['error']) <= 0.01)}")
print(f"   total time <= x264 two-pass's: {ours['wall']:.2f} s vs {x264['wall']:.2f} s, ours/x264 {ratio:.2f}x "
      f"-> {verdict(ratio <= 1.0)}")

# Figures for bench/all.sh (bench_summary_file), with the load while the encodings were timed.
(w0, b0, o0), (w1, b1, o1) = [[float(x) for x in line.split()] for line in open("$work/load.txt")][:2]
load = f"loadavg $loadavg_timed, others {max(0.0, (b1 - b0) - (o1 - o0)) / (w1 - w0):.2f} cores"
with open("$work/summary.tsv", "w") as out:
    for row, text, value, goal in (
            ("multipass-time", "time vtmultipasssink/x264enc two-pass (pass 1 + pass 2)", f"{ratio:.3f}", "<= 1.00"),
            ("multipass-psnr", "PSNR-Y vtmultipasssink - x264enc two-pass (dB)", f"{delta:.3f}", ">= 0.00"),
            ("multipass-rate-error", "|bit-rate error| of vtmultipasssink (%)", f"{abs(ours['error']) * 100:.2f}", "<= 1.00")):
        print(f"{row}\tmulti-pass 720p {target:.0f} kbit/s: {text}\t{value}\t{goal}\t{load}", file=out)
EOF
bench_summary_file "$work/summary.tsv"
awk -v cpus="$(nproc)" 'NR == 1 { w = $1; b = $2; o = $3 } NR == 2 {
        wall = $1 - w; others = ($2 - b) - ($3 - o); share = others / (wall * cpus)
        printf "== other processes used %.1f CPU-s while the encodings ran (%.0f s) = %+.1f%% of the %d CPUs: %s\n",
            others, wall, share * 100, cpus, (share > 0.05) ? "BUSY (times disturbed; re-run)" : "quiet" }' "$work/load.txt"
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
