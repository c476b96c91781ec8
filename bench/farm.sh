#!/usr/bin/env bash
# The Dask farm (pipelines/multipass-farm.py, issue 22) against vtmultipasssink (one pipeline run,
# the same rate control over the whole file) at the same bit rate: quality, bit-rate accuracy,
# wall time with 1 and 2 workers, and the time predicted for 2, 4, 8 and 16 workers from the
# chunks' critical path.
#
#   bench/farm.sh [--quick] [TARGET_KBIT]      # default 1000 kbit/s
#
# Inputs (made in the temporary directory, MP4, x264 preset veryfast CRF 16, a key frame every
# 30 frames and no other, so that chunks can be cut every second):
#   short  the 300-frame 1280x720 clip of bench/multipass-quality.sh (the corpus stream
#          VID_1280x720_cabac_temporal_direct.264 decoded, as 30 frames/s);
#   long   >= 3000 frames of 1280x720: videotestsrc patterns (290 frames each, moving) between corpus
#          clips scaled to 1280x720 (the 720p and 1080p streams, CIF and QCIF ones; at most 290
#          frames each), 30 frames/s. No segment lasts 300 frames: a scene cut exactly 300 frames
#          (vtmultipasssink's 10 s GOP) after the one before makes its x264 code two IDR pictures in
#          a row, which it then refuses ("two IDR pictures in a row"; reported, not this bench's).
# Both encoders get the same decoded frames (filesrc ! decodebin ! videoconvert), and PSNR-Y (mean
# over the frames of FFmpeg's psnr filter) is measured against the decoded input.
# Per input:
#   (a) vtmultipasssink bitrate=T at its defaults (max-keyframe-interval 0 = 10 s GOPs plus scene
#       cuts, x264 threads automatic): PSNR-Y, kbit/s, wall time;
#   (a') vtmultipasssink with max-keyframe-interval = the farm's chunk length in frames, when the
#       chunks are materially shorter than its default GOP (more than 20 % shorter): the farm starts
#       an IDR picture at every chunk, so this is the comparison at the same GOP layout;
#   (b) the farm on a LocalCluster of 1 worker, (c) of 2 workers, one Dask thread each (each chunk
#       encoded with one x264 thread and decoded with one decoder thread), both with the chunks the
#       job cuts by default for 2 workers (the same chunks, so the same output): PSNR-Y, kbit/s and
#       error, wall time of the whole job (GNU time, cluster start included), passes;
#   (b') the farm with 1 worker on one core (taskset -c 0: client, worker, decoder and encoder):
#       in (b) the worker's decoder and the client use the core its encoder leaves idle, which the
#       2 workers of (c) cannot; (b')/(c) is the scaling from one core per worker to two;
#   where the job's default cutting leaves one chunk (a clip of one 10-s GOP: the short clip),
#       (b), (b') and (c) again with the clip cut in 2 (--chunk-seconds): the speed-up is measured
#       there, and its PSNR-Y shows what the cut's IDR picture costs;
#   prediction: from (b)'s --timings, for N = 1, 2, 4, 8, 16 workers: the client's serial parts
#       (probe, cluster, cut, scatter, plans, splice, mux, Dask's dispatch per pass = the pass's
#       wall time minus its chunks' time) plus, per pass, the list schedule of that pass's chunk
#       times on N workers, longest first (what the job submits). Printed beside the measured time
#       for 1 and 2 workers. It assumes a core per worker: on this machine the 2 workers share 2
#       cores with their decoders and the client, which the measured figure includes.
# Goals (issue 22): PSNR-Y within 0.05 dB of vtmultipasssink's (farm - sink >= -0.05 dB), bit-rate
# error at most 1 %, 2 workers at least 1.7x faster than 1. The machine's load (1-minute load
# average, and the cores other processes used while the runs were timed) is printed beside each
# figure. It is a measurement: it exits 0 when a goal is missed, non-zero when something fails.
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh), its figures go to FILE (bench_summary).
# --quick (or SWIFTVT_BENCH_QUICK=1): 60 frames of the short clip and 600 of the long one, to
# check the script; the figures mean little.
# Uses SWIFTVT_PLUGIN=/path/to/libgstswiftvt.so as it is (else builds the release plugin) and
# SWIFTVT_FARM_TOOL (else build/swiftvt-farm, else .build/release/swiftvt-farm, built when missing);
# SWIFTVT_CORPUS (folder containing h264/, default ../shared/corpus).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="farm"
target=1000
for argument in "$@"; do
    case "$argument" in
        --quick) export SWIFTVT_BENCH_QUICK=1 ;;
        [0-9]*) target="$argument" ;;
        *) echo "usage: bench/farm.sh [--quick] [TARGET_KBIT]" >&2; exit 2 ;;
    esac
done
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream720="$corpus/VID_1280x720_cabac_temporal_direct.264"
long_corpus=(VID_1920x1080_cabac_temporal_direct.264 test_cif_I_CABAC_slice.264 CI_MW_D.264
             VID_1280x720_cabac_temporal_direct.264 BA_MW_D.264 CVPCMNL1_SVA_C.264 NRF_MW_E.264)
long_patterns=("smpte horizontal-speed=4" "ball motion=wavy" "zone-plate kx2=20 ky2=20 kt=1" "pinwheel horizontal-speed=3"
               "spokes horizontal-speed=2" "circular horizontal-speed=5" "gamut horizontal-speed=3" "colors horizontal-speed=6")
for clip in "${long_corpus[@]}"; do bench_require_corpus -f "$corpus/$clip"; done
width=1280 height=720 fps=30
if [ "$bench_quick" = 1 ]; then short_frames=60 long_frames=600 pattern_frames=75; else short_frames=300 long_frames=3000 pattern_frames=290; fi

bench_install_deps
bench_require_gnu_time %e
for tool in ffmpeg ffprobe dask taskset; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$bench_name: $tool not found (scripts/install-deps.sh installs ffmpeg and python3-distributed)" >&2; exit 1; }
done
python=/usr/bin/python3
bench_build_plugin
if [ -z "${SWIFTVT_FARM_TOOL:-}" ]; then
    for candidate in build/swiftvt-farm .build/release/swiftvt-farm; do
        if [ -x "$candidate" ]; then SWIFTVT_FARM_TOOL="$PWD/$candidate"; break; fi
    done
    if [ -z "${SWIFTVT_FARM_TOOL:-}" ]; then
        echo "== building swiftvt-farm (release)"
        swift build -c release --product swiftvt-farm 2>&1 | grep -v "prohibited flag" | tail -1
        SWIFTVT_FARM_TOOL="$PWD/.build/release/swiftvt-farm"
    fi
fi
[ -x "$SWIFTVT_FARM_TOOL" ] || { echo "$bench_name: swiftvt-farm not found at $SWIFTVT_FARM_TOOL" >&2; exit 1; }
export SWIFTVT_FARM_TOOL
echo "== swiftvt-farm: $SWIFTVT_FARM_TOOL"
bench_make_workdir
bench_use_private_plugin vtmultipasssink
# The job's own plugin handling (SWIFTVT_PLUGIN) would make a second private registry; it uses ours.
unset SWIFTVT_PLUGIN

# The inputs. Raw I420 frames of 1280x720 on a pipe into one x264 encode: no raw file on disk.
encode_input() { # encode_input OUT.mp4 (raw frames on stdin)
    ffmpeg -v error -nostdin -f rawvideo -s ${width}x$height -pix_fmt yuv420p -framerate $fps -i - \
        -c:v libx264 -preset veryfast -crf 16 -g 30 -keyint_min 30 -sc_threshold 0 -movflags +faststart -y "$1"
}
short_input="$work/short.mp4" long_input="$work/long.mp4"
echo "== inputs: short ($short_frames frames of $(basename "$stream720")), long (>= $long_frames frames: patterns and corpus clips)"
ffmpeg -v error -nostdin -i "$stream720" -frames:v "$short_frames" -pix_fmt yuv420p -f rawvideo - | encode_input "$short_input"
long_parts() {
    local i=0 clip pattern
    for pattern in "${long_patterns[@]}"; do
        # shellcheck disable=SC2086 # the pattern's properties are words
        gst-launch-1.0 -q videotestsrc pattern=$pattern num-buffers="$pattern_frames" \
            ! "video/x-raw,format=I420,width=$width,height=$height,framerate=$fps/1" ! fdsink fd=1
        if [ "$bench_quick" = 0 ] || [ "$i" = 0 ]; then
            for clip in "${long_corpus[@]:i:1}"; do
                ffmpeg -v error -nostdin -i "$corpus/$clip" -frames:v "$pattern_frames" -vf "scale=$width:$height" -pix_fmt yuv420p -f rawvideo -
            done
        fi
        i=$((i + 1))
    done
}
long_parts | encode_input "$long_input"
frame_count() { ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$1"; }
short_count=$(frame_count "$short_input") long_count=$(frame_count "$long_input")
[ "$short_count" = "$short_frames" ] || { echo "$bench_name: the short input has $short_count frames" >&2; exit 1; }
[ "$long_count" -ge "$long_frames" ] || { echo "$bench_name: the long input has $long_count frames, fewer than $long_frames" >&2; exit 1; }
echo "   short: $short_count frames, long: $long_count frames"

# Whether something else was running: the machine's CPU time (/proc/stat) minus this script's
# children's (bash `times`, which counts the workers the job started and reaped), per second.
clock_ticks=$(getconf CLK_TCK)
cpu_snapshot() { # -> "wall_s machine_busy_cpu_s own_children_cpu_s"
    local busy
    busy=$(awk -v hz="$clock_ticks" '/^cpu /{ print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat)
    times >"$work/times.txt"
    echo "$(date +%s.%N) $busy $(tail -1 "$work/times.txt" | awk '{ n = 0; for (i = 1; i <= NF; i++) { split($i, a, "m"); n += a[1] * 60 + a[2] } print n }')"
}
# timed LABEL LOG CMD... : runs CMD under GNU time; appends "LABEL wall loadavg others_cores" to
# $work/runs.tsv; exits on failure.
timed() {
    local label="$1" log="$2"
    shift 2
    cpu_snapshot >"$work/cpu.txt" # not in $(...): a subshell's `times` has no children
    if ! "$gnu_time" -f %e -o "$work/time.txt" "$@" >"$log" 2>&1; then
        echo "$bench_name: $label failed: $*" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    cpu_snapshot >>"$work/cpu.txt"
    printf '%s\t%s\t%s\t%s\n' "$label" "$(tail -1 "$work/time.txt")" "$(cut -d' ' -f1 /proc/loadavg)" \
        "$(tr '\n' ' ' <"$work/cpu.txt" | awk '{ printf "%.2f", (($5 - $2) - ($6 - $3)) / ($4 - $1) }')" >>"$work/runs.tsv"
}
: >"$work/runs.tsv"
: >"$work/quality.tsv"
# measure LABEL OUT INPUT FRAMES: frames check, kbit/s and PSNR-Y against the decoded input.
measure() {
    local label="$1" out="$2" input="$3" frames="$4" count kbps psnr
    count=$(ffprobe -v error -select_streams v -show_entries stream=nb_frames -of csv=p=0 "$out" | tr -d '[:space:],')
    [ "$count" = "$frames" ] || { echo "$bench_name: $label: $count frames, expected $frames" >&2; exit 1; }
    kbps=$(ffprobe -v error -select_streams v -show_entries packet=size -of csv=p=0 "$out" \
        | awk -v s="$(awk -v f="$frames" -v r=$fps 'BEGIN { print f / r }')" '{ b += $1 } END { printf "%.2f", b * 8 / s / 1000 }')
    # PSNR-Y: the mean over the frames, a frame coded without error (MSE 0, psnr_y "inf": flat
    # pattern frames) counted as 100 dB; beside it the PSNR of the mean MSE, which needs no such bound.
    read -r psnr n global infinite < <(ffmpeg -v error -nostdin -i "$out" -i "$input" -lavfi "[0:v][1:v]psnr=stats_file=-" -f null - 2>/dev/null \
        | awk '{ for (i = 1; i <= NF; i++) {
                    if ($i ~ /^psnr_y:/) { split($i, a, ":"); if (a[2] == "inf") { a[2] = 100; inf++ } s += a[2]; n++ }
                    if ($i ~ /^mse_y:/) { split($i, b, ":"); mse += b[2] } } }
               END { printf "%.3f %d %.3f %d\n", s / n, n, (mse > 0) ? 10 * log(255 * 255 / (mse / n)) / log(10) : 100, inf }')
    [ "$n" = "$frames" ] || { echo "$bench_name: $label: PSNR over $n frames, expected $frames" >&2; exit 1; }
    printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$kbps" "$psnr" "$global" "$infinite" >>"$work/quality.tsv"
    echo "   $label: $kbps kbit/s, PSNR-Y $psnr dB (of the mean MSE: $global dB; $infinite frame(s) without error)"
}
# The chunk length the job cuts by default for 2 workers (its default_chunk_seconds).
chunk_seconds() { # chunk_seconds FRAMES
    "$python" - "$1" "$SWIFTVT_FARM_TOOL" <<'EOF'
import importlib.util, sys
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
spec = importlib.util.spec_from_file_location("farm", "pipelines/multipass-farm.py")
farm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(farm)
from swiftvt_farm.worker import farm_tool_defaults
gop_seconds = farm_tool_defaults(sys.argv[2])["gop-seconds"]
print(f"{farm.default_chunk_seconds(int(sys.argv[1]) / 30, 2, gop_seconds):.6f}")
EOF
}

stream_md5() { ffmpeg -v error -nostdin -i "$1" -map 0:v -c copy -f md5 -; }
# farm_runs LABEL CHUNK_SECONDS: (b), (b') and (c) below with that chunk length.
farm_runs() {
    local label="$1" chunk="$2" workers
    for workers in 1 2; do
        echo "   ($([ $workers = 1 ] && echo b || echo c)) the farm, LocalCluster of $workers worker(s), 1 thread each, chunks of $chunk s"
        timed "$label-farm$workers" "$work/$label-farm$workers.log" "$python" pipelines/multipass-farm.py "$input" "$work/$label-farm$workers.mp4" \
            --bitrate "$target" --workers "$workers" --threads-per-worker 1 --chunk-seconds "$chunk" --timings "$work/$label-farm$workers.json"
        grep -E "^(plan after|multipass-farm: .*frames)" "$work/$label-farm$workers.log" | sed 's/^/      /'
        measure "$label-farm$workers" "$work/$label-farm$workers.mp4" "$input" "$frames"
    done
    # (b') 1 worker with one core: the job, its worker, decoder and encoder all on CPU 0, against
    # (c) whose 2 workers have the machine's 2 cores. In (b) the worker's decoder and the client
    # run on the core its encoder leaves idle, which (c) cannot do: that run measures the farm on
    # this machine, this one the scaling from one core per worker to two.
    echo "   (b') the farm, LocalCluster of 1 worker, on one core (taskset -c 0)"
    timed "$label-farm1core" "$work/$label-farm1core.log" taskset -c 0 "$python" pipelines/multipass-farm.py "$input" "$work/$label-farm1core.mp4" \
        --bitrate "$target" --workers 1 --threads-per-worker 1 --chunk-seconds "$chunk"
    measure "$label-farm1core" "$work/$label-farm1core.mp4" "$input" "$frames"
    if [ "$(stream_md5 "$work/$label-farm1.mp4")" = "$(stream_md5 "$work/$label-farm2.mp4")" ] \
        && [ "$(stream_md5 "$work/$label-farm1.mp4")" = "$(stream_md5 "$work/$label-farm1core.mp4")" ]; then
        echo "   1 worker (2 cores, 1 core) and 2 workers: the same H.264 stream"
    else
        echo "   1 and 2 workers: different H.264 streams (not expected: same chunks, one encoder thread)"
    fi
}

for name in short long; do
    if [ "$name" = short ]; then input="$short_input" frames=$short_count; else input="$long_input" frames=$long_count; fi
    chunk=$(chunk_seconds "$frames")
    chunk_frames=$(awk -v c="$chunk" -v r=$fps 'BEGIN { printf "%d", c * r + 0.5 }')
    # A clip of one GOP is one chunk by default (no parallelism); the speed of 2 workers is then
    # measured with the clip cut in 2 (--chunk-seconds), whose extra IDR picture costs quality.
    split_chunk=""
    if [ "$chunk_frames" -ge "$frames" ]; then
        split_chunk=$(awk -v f="$frames" -v r=$fps 'BEGIN { printf "%.6f", f / r / 2 }')
    fi
    layout_frames=$(awk -v c="${split_chunk:-$chunk}" -v r=$fps 'BEGIN { printf "%d", c * r + 0.5 }')
    sink_source=(filesrc "location=$input" ! decodebin ! videoconvert ! "video/x-raw,format=I420")
    echo "== $name: $frames frames, target $target kbit/s, chunks of about $chunk s ($chunk_frames frames) for the farm by default" \
        "${split_chunk:+(and cut in 2 chunks of $split_chunk s for the speed-up)}"
    echo "   (a) vtmultipasssink bitrate=$target (defaults)"
    timed "$name-sink" "$work/$name-sink.log" gst-launch-1.0 -q "${sink_source[@]}" ! vtmultipasssink "location=$work/$name-sink.mp4" "bitrate=$target"
    measure "$name-sink" "$work/$name-sink.mp4" "$input" "$frames"
    if [ "$layout_frames" -lt 240 ]; then # 20 % below the sink's 300-frame (10 s) GOP
        echo "   (a') vtmultipasssink bitrate=$target max-keyframe-interval=$layout_frames (the GOP layout of the farm's chunks)"
        timed "$name-sink-matched" "$work/$name-sink-matched.log" gst-launch-1.0 -q "${sink_source[@]}" \
            ! vtmultipasssink "location=$work/$name-sink-matched.mp4" "bitrate=$target" "max-keyframe-interval=$layout_frames"
        measure "$name-sink-matched" "$work/$name-sink-matched.mp4" "$input" "$frames"
    fi
    farm_runs "$name" "$chunk"
    if [ -n "$split_chunk" ]; then
        echo "   the same, the clip cut in 2 chunks"
        farm_runs "$name-split" "$split_chunk"
    fi
done

echo
"$python" - "$work" "$target" "$(nproc)" <<'EOF'
import json, sys
work, target, cores = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
runs = {label: (float(wall), load, float(others)) for label, wall, load, others in
        (line.rstrip("\n").split("\t") for line in open(f"{work}/runs.tsv"))}
quality = {label: (float(kbps), float(psnr), float(overall), int(exact)) for label, kbps, psnr, overall, exact in
           (line.rstrip("\n").split("\t") for line in open(f"{work}/quality.tsv"))}

def list_schedule(times, workers):
    """Makespan of `times` run longest first, each on the worker free first."""
    free = [0.0] * workers
    for t in sorted(times, reverse=True):
        i = free.index(min(free))
        free[i] += t
    return max(free)

def predict(timings, workers, process_wall):
    """process_wall: the job's wall time as GNU time measured it; what it has beyond the job's own
    total (interpreter start, GStreamer and Dask imports, cluster shutdown) counts as serial."""
    client = timings["client"]
    serial = max(0.0, process_wall - client["total_s"]) + sum(client[k] for k in ("probe_s", "cluster_s", "cut_s", "scatter_s", "splice_s", "mux_s")) + sum(client["plan_s"])
    total = serial
    for p in timings["passes"]:
        times = [c["seconds"] for c in p["chunks"]]
        dispatch = max(0.0, p["wall_s"] - list_schedule(times, timings["threads"]))
        total += dispatch + list_schedule(times, workers)
    return total

summary = []
def load_of(label):
    wall, load, others = runs[label]
    return f"loadavg {load}, others {others:.2f} cores"
for name in ("short", "long"):
    # The speed runs: the clip cut in 2 where the default cutting leaves one chunk.
    speed = f"{name}-split" if f"{name}-split-farm1" in runs else name
    default_timings = json.load(open(f"{work}/{name}-farm1.json"))
    timings = json.load(open(f"{work}/{speed}-farm1.json"))
    frames = timings["frames"]
    print(f"== farm: {name} clip, {frames} frames 1280x720 at 30/1, target {target:.0f} kbit/s, {cores} CPUs; "
          f"{len(default_timings['chunks'])} chunk(s) by default, {default_timings['pass_count']} passes ({default_timings['decision']})"
          + (f"; cut in {len(timings['chunks'])} for the speed-up, {timings['pass_count']} passes" if speed != name else ""))
    print(f"   {'encoding':<50} {'PSNR-Y':>9} {'(of MSE)':>9} {'kbit/s':>8} {'error':>7} {'wall s':>7}  load")
    rows = [("vtmultipasssink (defaults)", f"{name}-sink")]
    if f"{name}-sink-matched" in quality:
        rows.append(("vtmultipasssink (GOP = the farm's chunks)", f"{name}-sink-matched"))
    rows += [("farm, 1 worker", f"{name}-farm1"), ("farm, 1 worker on 1 core (taskset)", f"{name}-farm1core"),
             ("farm, 2 workers", f"{name}-farm2")]
    if speed != name:
        rows += [("farm cut in 2 chunks, 1 worker", f"{speed}-farm1"), ("farm cut in 2 chunks, 1 worker on 1 core", f"{speed}-farm1core"),
                 ("farm cut in 2 chunks, 2 workers", f"{speed}-farm2")]
    for title, label in rows:
        kbps, psnr, overall, _ = quality[label]
        print(f"   {title:<50} {psnr:6.3f} dB {overall:6.3f} dB {kbps:8.2f} {(kbps / target - 1) * 100:+6.2f}% {runs[label][0]:7.2f}  {load_of(label)}")
    sink_psnr = quality[f"{name}-sink"][1]
    farm_kbps, farm_psnr = quality[f"{name}-farm2"][:2]
    delta = farm_psnr - sink_psnr
    error = abs(farm_kbps / target - 1) * 100
    speedup = runs[f"{speed}-farm1"][0] / runs[f"{speed}-farm2"][0]
    per_core = runs[f"{speed}-farm1core"][0] / runs[f"{speed}-farm2"][0]
    print(f"   PSNR-Y farm (default chunks) - vtmultipasssink (defaults): {delta:+.3f} dB (goal >= -0.05) -> {'MET' if delta >= -0.05 else 'MISSED'}"
          f"; of the mean MSE: {quality[f'{name}-farm2'][2] - quality[f'{name}-sink'][2]:+.3f} dB")
    if speed != name:
        split_delta = quality[f"{speed}-farm2"][1] - sink_psnr
        print(f"   PSNR-Y farm cut in 2 - vtmultipasssink (defaults): {split_delta:+.3f} dB (the IDR picture the cut adds)")
        summary.append((f"farm-{name}-split-psnr-vs-sink", f"farm {name} cut in 2: PSNR-Y farm - vtmultipasssink (dB)",
                        f"{split_delta:.3f}", "-", load_of(f"{speed}-farm2")))
    if f"{name}-sink-matched" in quality:
        matched = quality[f"{speed}-farm2"][1] - quality[f"{name}-sink-matched"][1]
        print(f"   PSNR-Y farm - vtmultipasssink (the same GOP layout): {matched:+.3f} dB")
        summary.append((f"farm-{name}-psnr-matched-gop", f"farm {name} {frames} frames: PSNR-Y farm - vtmultipasssink with GOP = chunk (dB)",
                        f"{matched:.3f}", "-", load_of(f"{speed}-farm2")))
    print(f"   bit-rate error: {error:.2f} % (goal <= 1 %; vtmultipasssink: {abs(quality[f'{name}-sink'][0] / target - 1) * 100:.2f} %) -> {'MET' if error <= 1 else 'MISSED'}")
    cut = " (cut in 2)" if speed != name else ""
    print(f"   speed-up 2 workers vs 1{cut}: {speedup:.2f}x (goal >= 1.7x) -> {'MET' if speedup >= 1.7 else 'MISSED'}")
    print(f"   speed-up 2 workers on 2 cores vs 1 worker on 1 core{cut}: {per_core:.2f}x (a core per worker) -> {'MET' if per_core >= 1.7 else 'MISSED'}")
    print(f"   wall time{cut}, measured and predicted from the 1-worker run's chunk times (critical path, a core per worker):")
    for workers in (1, 2, 4, 8, 16):
        measured = runs.get(f"{speed}-farm{workers}")
        predicted = predict(timings, workers, runs[f"{speed}-farm1"][0])
        print(f"      {workers:>2} worker(s): predicted {predicted:7.2f} s" + (f", measured {measured[0]:7.2f} s" if measured else ""))
        summary.append((f"farm-{name}-predicted-{workers}w", f"farm {name}{cut}: predicted wall time with {workers} worker(s) (s)",
                        f"{predicted:.2f}", "-", "from the 1-worker run"))
    longest = max(c["seconds"] for p in timings["passes"] for c in p["chunks"])
    print(f"      (the longest chunk takes {longest:.2f} s: with {len(timings['chunks'])} chunks, more workers than chunks cannot help;"
          f" --chunk-seconds cuts finer)")
    summary += [
        (f"farm-{name}-psnr-vs-sink", f"farm {name} {frames} frames: PSNR-Y farm (2 workers) - vtmultipasssink (dB)", f"{delta:.3f}", ">= -0.05", load_of(f"{name}-farm2")),
        (f"farm-{name}-rate-error", f"farm {name}: |bit-rate error| (%)", f"{error:.2f}", "<= 1.00", load_of(f"{name}-farm2")),
        (f"farm-{name}-speedup-2w", f"farm {name}{cut}: wall time 1 worker / 2 workers", f"{speedup:.3f}", ">= 1.70", load_of(f"{speed}-farm2")),
        (f"farm-{name}-speedup-per-core", f"farm {name}{cut}: wall time 1 worker on 1 core / 2 workers on 2 cores", f"{per_core:.3f}", ">= 1.70", load_of(f"{speed}-farm2")),
    ]
    print()
with open(f"{work}/summary.tsv", "w") as out:
    for row in summary:
        print("\t".join(row), file=out)
EOF
bench_summary_file "$work/summary.tsv"
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
