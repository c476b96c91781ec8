#!/usr/bin/env bash
# H.264 decoding speed and peak memory of our vtdec against GStreamer's avdec_h264 (gst-libav) at
# the same thread count, and against the ffmpeg command line on the same files.
#
#   bench/decode-throughput.sh
#
# Inputs: (a) the corpus stream VID_1920x1080_cabac_temporal_direct.264 concatenated five times
# (a temporary file, 5 x 54 frames); (b) the corpus stream VID_1280x720_cabac_temporal_direct.264
# (300 frames). Frames are counted once per input with ffprobe -count_frames.
# For each input and each thread count N (1, 2 and 0; 0 is each decoder's automatic default: vtdec
# max-threads=0 is one thread per core, avdec_h264 max-threads=0 is libavcodec's automatic count,
# ffmpeg -threads 0 likewise), four commands:
#   vtdec       gst-launch-1.0 -q filesrc location=F ! h264parse ! vtdec max-threads=N ! fakesink sync=false
#   avdec_h264  gst-launch-1.0 -q filesrc location=F ! h264parse ! avdec_h264 max-threads=N ! fakesink sync=false
#   ffmpeg      ffmpeg -nostdin -threads N -i F -f null -
#   vtdec-avcc  the vtdec pipeline with h264parse-to-avcc in place of h264parse (for information)
# Each command is run several times after one warm-up run and the median wall time kept, with
# hyperfine when available (installed here with apt-get if missing), otherwise with `date +%s%N`.
# Times are whole processes (start, registry load, file reading, parsing, decoding); the inputs are
# long enough (about 1 to 3 s per run on one thread) that start-up is a few percent at most.
# Peak RSS: GNU time (/usr/bin/time -f %M, installed with apt-get if missing) around the vtdec
# and avdec_h264 pipelines, interleaved, the median of a few runs each.
# Before timing, one verbose run of each pipeline (at the highest thread count) checks that it
# succeeds and counts the frames that reach fakesink, and one ffmpeg run counts its output frames;
# the backend vtdec picked (VA-API or libavcodec) is read from its INFO log.
#
# Printed per input and thread count: median, spread (max - min over the median) and frames/s of
# each command, peak RSS of vtdec and avdec_h264, and the goals: speed vtdec/avdec_h264 >= 1.05x,
# speed vtdec/ffmpeg >= 1.00x, peak RSS vtdec <= avdec_h264. Also how busy the machine
# was: the CPU time that other processes used while the measurements ran (from /proc/stat minus
# this script's own children), so disturbed figures can be told apart and re-run.
# With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh), the figures of input (a) at one thread and at the
# automatic count go to FILE (bench_summary, bench/lib/common.sh) with issue 19's goals: wall time
# vtdec/avdec_h264 <= 0.95 (one thread and automatic), vtdec/ffmpeg <= 1.00 (one thread; the
# automatic one for information), peak RSS vtdec/avdec_h264 <= 1.00; the load beside each is the
# load average at the end of that measurement and the cores other processes used during it.
# It is a measurement: it exits 0 when a goal is missed, non-zero only when something fails
# (build, a pipeline, ffmpeg/ffprobe, a missing element).
#
# Builds the release plugin (.build/release/libgstswiftvt.so) first; GStreamer is pointed at a
# copy of it alone in the temporary directory with GST_PLUGIN_PATH, and at a private registry file
# there. Setup and timing are shared with the other bench scripts (bench/lib/common.sh).
# Environment: SWIFTVT_CORPUS (folder containing h264/, default ../shared/corpus),
# SWIFTVT_BENCH_RUNS (timed runs per command, default 5), SWIFTVT_BENCH_RSS_RUNS (peak-RSS runs
# per pipeline, default 3), SWIFTVT_BENCH_THREADS (thread counts, default "1 2 0"),
# SWIFTVT_BENCH_TIMER=date (skip hyperfine), SWIFTVT_BENCH_QUICK=1 (input (a) only, for checking
# the script), SWIFTVT_BENCH_SUMMARY (above), SWIFTVT_PLUGIN (bench/lib/common.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="decode-throughput"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
stream_1080p="$corpus/VID_1920x1080_cabac_temporal_direct.264"
stream_720p="$corpus/VID_1280x720_cabac_temporal_direct.264"
bench_require_corpus -f "$stream_1080p"
bench_require_corpus -f "$stream_720p"
runs="${SWIFTVT_BENCH_RUNS:-5}"
rss_runs="${SWIFTVT_BENCH_RSS_RUNS:-3}"
read -r -a thread_counts <<<"${SWIFTVT_BENCH_THREADS:-1 2 0}"
check_threads="${thread_counts[${#thread_counts[@]} - 1]}"
loadavg_start="$(cut -d' ' -f1-3 /proc/loadavg)"

bench_install_deps
bench_setup_timer
bench_require_gnu_time %M
for tool in ffmpeg ffprobe; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "$bench_name: $tool not found (scripts/install-deps.sh installs ffmpeg)" >&2
        exit 1
    fi
done

bench_build_plugin
bench_make_workdir
bench_use_private_plugin vtdec h264parse-to-avcc
if ! gst-inspect-1.0 avdec_h264 >/dev/null 2>&1; then
    echo "$bench_name: element avdec_h264 not found (gstreamer1.0-libav)" >&2
    exit 1
fi

# Inputs.
input_a="$work/1080p-x5.264"
for _ in 1 2 3 4 5; do cat "$stream_1080p"; done >"$input_a"
input_b="$stream_720p"

count_frames() { # count_frames FILE -> frames ffprobe decodes
    local frames
    if ! frames=$(ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames \
            -of csv=p=0 "$1") || [ -z "$frames" ]; then
        echo "$bench_name: ffprobe -count_frames failed on $1" >&2
        exit 1
    fi
    echo "$frames"
}

# Commands, as strings (words quoted with %q) for hyperfine --shell=none, eval and GNU time.
pipeline_command() { # pipeline_command vtdec|avdec_h264|vtdec-avcc|ffmpeg FILE THREADS
    local file
    file=$(printf %q "$2")
    case "$1" in
        vtdec) echo "gst-launch-1.0 -q filesrc location=$file ! h264parse ! vtdec max-threads=$3 ! fakesink sync=false" ;;
        avdec_h264) echo "gst-launch-1.0 -q filesrc location=$file ! h264parse ! avdec_h264 max-threads=$3 ! fakesink sync=false" ;;
        vtdec-avcc) echo "gst-launch-1.0 -q filesrc location=$file ! h264parse-to-avcc ! vtdec max-threads=$3 ! fakesink sync=false" ;;
        ffmpeg) echo "ffmpeg -nostdin -threads $3 -i $file -f null -" ;;
    esac
}

# One verbose run of a pipeline: fails when it fails; prints the number of buffers that reached
# fakesink and, for vtdec, the backend it decoded with.
check_pipeline() { # check_pipeline vtdec|avdec_h264|vtdec-avcc FILE THREADS
    local log="$work/check.log" frames backend
    local -a elements
    case "$1" in
        vtdec) elements=(h264parse ! vtdec "max-threads=$3") ;;
        avdec_h264) elements=(h264parse ! avdec_h264 "max-threads=$3") ;;
        vtdec-avcc) elements=(h264parse-to-avcc ! vtdec "max-threads=$3") ;;
    esac
    if ! GST_DEBUG=vtdec:4 GST_DEBUG_NO_COLOR=1 gst-launch-1.0 -v filesrc location="$2" ! "${elements[@]}" \
            ! fakesink sync=false silent=false >"$log" 2>&1; then
        echo "$bench_name: the $1 pipeline failed on $2:" >&2
        grep -iE "error|warn" "$log" | head -20 >&2
        exit 1
    fi
    frames=$(grep -c "fakesink0: last-message = chain" "$log" || true)
    backend=$(sed -n 's/.* decoding [0-9]*x[0-9]* with \(.*\)$/\1/p' "$log" | head -1)
    echo "$frames ${backend:--}"
}

check_ffmpeg() { # check_ffmpeg FILE THREADS -> frames ffmpeg reports
    local log="$work/ffmpeg.log"
    if ! eval "$(pipeline_command ffmpeg "$1" "$2")" >/dev/null 2>"$log"; then
        echo "$bench_name: ffmpeg failed on $1:" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    tr '\r' '\n' <"$log" | sed -n 's/^frame= *\([0-9]*\).*/\1/p' | tail -1
}

# peak_rss_kb CMD... -> one median peak RSS (kB, GNU time %M) per command; the commands' runs are
# interleaved.
peak_rss_kb() {
    local i round
    local -a cmds=("$@") values=()
    for (( i = 0; i < ${#cmds[@]}; i++ )); do values[i]=""; done
    for (( round = 0; round < rss_runs; round++ )); do
        for (( i = 0; i < ${#cmds[@]}; i++ )); do
            if ! eval "$gnu_time -f %M -o $(printf %q "$work/rss.txt") ${cmds[i]}" >/dev/null 2>"$work/rss.err"; then
                echo "$bench_name: pipeline failed: ${cmds[i]}" >&2
                cat "$work/rss.err" >&2
                exit 1
            fi
            values[i]+="$(tail -1 "$work/rss.txt") "
        done
    done
    for (( i = 0; i < ${#cmds[@]}; i++ )); do
        # shellcheck disable=SC2086 # a list of numbers
        python3 -c 'import statistics, sys; print(int(statistics.median(int(v) for v in sys.argv[1:])))' ${values[i]}
    done
}

# CPU accounting around the measurements: busy jiffies of the whole machine (/proc/stat) and the
# user + system time of this script's children (bash `times`, which includes hyperfine's and GNU
# time's waited-for children).
cpu_snapshot() { # cpu_snapshot FILE
    { head -1 /proc/stat; times; date +%s%N; } >"$1"
}

inputs="$work/inputs.tsv" timings="$work/timings.tsv"
: >"$inputs"
: >"$timings"
measure_input() { # measure_input KEY LABEL FILE
    local key="$1" label="$2" file="$3" frames threads line check_vtdec check_avdec check_avcc frames_ffmpeg
    local -a times rss
    frames=$(count_frames "$file")
    echo "== checking ($key) $label: $frames frames (ffprobe), pipelines at max-threads=$check_threads"
    check_vtdec=$(check_pipeline vtdec "$file" "$check_threads")
    check_avdec=$(check_pipeline avdec_h264 "$file" "$check_threads")
    check_avcc=$(check_pipeline vtdec-avcc "$file" "$check_threads")
    frames_ffmpeg=$(check_ffmpeg "$file" "$check_threads")
    # check_* are "FRAMES BACKEND"; the backend (vtdec's, may contain spaces) is the rest of the line.
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "$label" "$(stat -c %s "$file")" "$frames" \
        "${check_vtdec%% *}" "${check_avdec%% *}" "${check_avcc%% *}" "${frames_ffmpeg:--}" "${check_vtdec#* }" >>"$inputs"
    for threads in "${thread_counts[@]}"; do
        echo "== measuring ($key) max-threads=$threads: $runs runs per command (timer $timer), $rss_runs peak-RSS runs"
        cpu_snapshot "$work/cpu.$key.$threads.start"
        # Into files, not through < <(...): a process substitution is not waited for, so its CPU time
        # could be missing from this shell's `times` at the snapshot below and count as others'.
        bench_time_commands "$(pipeline_command vtdec "$file" "$threads")" \
            "$(pipeline_command avdec_h264 "$file" "$threads")" "$(pipeline_command ffmpeg "$file" "$threads")" \
            "$(pipeline_command vtdec-avcc "$file" "$threads")" >"$work/times.txt"
        mapfile -t times <"$work/times.txt"
        if [ "${#times[@]}" -ne 4 ]; then
            echo "$bench_name: timing failed for ($key) max-threads=$threads" >&2
            exit 1
        fi
        peak_rss_kb "$(pipeline_command vtdec "$file" "$threads")" \
            "$(pipeline_command avdec_h264 "$file" "$threads")" >"$work/rss-medians.txt"
        mapfile -t rss <"$work/rss-medians.txt"
        if [ "${#rss[@]}" -ne 2 ]; then
            echo "$bench_name: peak RSS measurement failed for ($key) max-threads=$threads" >&2
            exit 1
        fi
        cpu_snapshot "$work/cpu.$key.$threads.end"
        line="$key $threads ${times[0]} ${times[1]} ${times[2]} ${times[3]} ${rss[0]} ${rss[1]} $(cut -d' ' -f1 /proc/loadavg)"
        echo "${line// /$'\t'}" >>"$timings"
    done
}

cpu_snapshot "$work/cpu.start"
measure_input a "corpus VID_1920x1080_cabac_temporal_direct.264 x5" "$input_a"
if [ "$bench_quick" = 0 ]; then # SWIFTVT_BENCH_QUICK=1: input (a) only
    measure_input b "corpus VID_1280x720_cabac_temporal_direct.264" "$input_b"
fi
cpu_snapshot "$work/cpu.end"

echo
python3 - "$inputs" "$timings" "$work/cpu.start" "$work/cpu.end" "$(getconf CLK_TCK)" "$(nproc)" \
    "$loadavg_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$work" <<'EOF'
import re, sys

inputs_path, timings_path, cpu_start, cpu_end, clk_tck, cores, load_start, load_end, work = sys.argv[1:]
clk_tck, cores = int(clk_tck), int(cores)

inputs = {}
for line in open(inputs_path):
    key, label, size, frames, f_vtdec, f_avdec, f_avcc, f_ffmpeg, backend = line.rstrip("\n").split("\t")
    inputs[key] = dict(label=label, size=int(size), frames=int(frames), backend=backend,
                       out={"vtdec": f_vtdec, "avdec_h264": f_avdec, "vtdec-avcc": f_avcc, "ffmpeg": f_ffmpeg})
rows = {}
for line in open(timings_path):
    v = line.split()
    key, threads = v[0], int(v[1])
    t = [tuple(float(x) for x in v[2 + 3 * i: 5 + 3 * i]) for i in range(4)]
    rows.setdefault(key, []).append(dict(threads=threads, vtdec=t[0], avdec_h264=t[1], ffmpeg=t[2],
                                         avcc=t[3], rss_vtdec=int(v[14]), rss_avdec=int(v[15]), loadavg=v[16]))

def verdict(ok):
    return "MET" if ok else "MISSED"

summary, met, missed = [], 0, 0
for key, info in inputs.items():
    frames = info["frames"]
    print(f"== ({key}) {info['label']}: {info['size'] / 1e6:.1f} MB, {frames} frames (ffprobe -count_frames)")
    outs = ", ".join(f"{name} {count}" for name, count in info["out"].items())
    differ = [name for name, count in info["out"].items() if count != str(frames)]
    print(f"   frames out: {outs}" + (f"  (differs from ffprobe: {', '.join(differ)})" if differ else ""))
    print(f"   vtdec backend: {info['backend']}; vtdec-avcc (vtdec after h264parse-to-avcc) is for information")
    for r in rows[key]:
        n = r["threads"]
        print(f"   max-threads={n:<3} {'command':<39} {'median':>8} {'spread':>7} {'frames/s':>9} {'peak RSS':>10}")
        table = [("vtdec", "h264parse ! vtdec", r["vtdec"], r["rss_vtdec"]),
                 ("avdec_h264", "h264parse ! avdec_h264", r["avdec_h264"], r["rss_avdec"]),
                 ("ffmpeg", f"ffmpeg -threads {n} -f null", r["ffmpeg"], None),
                 ("vtdec-avcc", f"h264parse-to-avcc ! vtdec", r["avcc"], None)]
        for name, text, (median, low, high), rss in table:
            rss_text = f"{rss / 1024:7.1f} MiB" if rss is not None else ""
            print(f"   {'':<15} {name:<11} {text:<27} {median:7.3f}s {(high - low) / median * 100:6.1f}%"
                  f" {frames / median:9.1f} {rss_text:>10}")
        vs_avdec = r["avdec_h264"][0] / r["vtdec"][0]
        vs_ffmpeg = r["ffmpeg"][0] / r["vtdec"][0]
        rss_ratio = r["rss_vtdec"] / r["rss_avdec"]
        goals = [("speed vtdec/avdec_h264 >= 1.05x", f"{vs_avdec:.3f}x", vs_avdec >= 1.05),
                 ("speed vtdec/ffmpeg >= 1.00x", f"{vs_ffmpeg:.3f}x", vs_ffmpeg >= 1.0),
                 ("peak RSS vtdec <= avdec_h264", f"{r['rss_vtdec'] / 1024:.1f} vs {r['rss_avdec'] / 1024:.1f} MiB"
                  f" ({rss_ratio:.2f}x)", rss_ratio <= 1.0)]
        for text, value, ok in goals:
            print(f"   {'':<15} goal {text}: {value} -> {verdict(ok)}")
            summary.append(f"   ({key}) max-threads={n}: {text}: {value} -> {verdict(ok)}")
            met, missed = met + ok, missed + (not ok)
    print()

print("== goals")
print("\n".join(summary))
print(f"   {met} met, {missed} missed")

def snapshot(path):
    lines = open(path).read().split("\n")
    cpu = [int(x) for x in lines[0].split()[1:]]
    busy = sum(cpu[i] for i in (0, 1, 2, 5, 6)) / clk_tck  # user nice system irq softirq
    steal = (cpu[7] if len(cpu) > 7 else 0) / clk_tck
    def seconds(text):
        m, s = re.fullmatch(r"(\d+)m([\d.]+)s", text).groups()
        return int(m) * 60 + float(s)
    shell, children = lines[1].split(), lines[2].split()
    ours = sum(seconds(x) for x in shell + children)
    return busy, steal, ours, int(lines[3]) / 1e9

busy0, steal0, ours0, t0 = snapshot(cpu_start)
busy1, steal1, ours1, t1 = snapshot(cpu_end)
wall = t1 - t0
others = max(0.0, (busy1 - busy0) - (ours1 - ours0)) / wall
ours = (ours1 - ours0) / wall
steal = (steal1 - steal0) / wall
state = "busy: other processes competed for the cores, figures may be disturbed" if others >= 0.10 else "quiet"
print(f"== machine: {cores} cores; load average {load_start} at the start, {load_end} at the end")
print(f"   during the {wall:.0f} s of measurements: this benchmark used {ours:.2f} cores on average,"
      f" other processes {others:.2f} cores" + (f", steal {steal:.2f}" if steal >= 0.01 else "") + f" -> {state}")

# Figures for bench/all.sh (bench_summary_file): input (a), one thread and automatic.
with open(f"{work}/summary.tsv", "w") as out:
    for r in rows.get("a", []):
        n = r["threads"]
        if n not in (1, 0):
            continue
        b0, _, o0, w0 = snapshot(f"{work}/cpu.a.{n}.start")
        b1, _, o1, w1 = snapshot(f"{work}/cpu.a.{n}.end")
        load = f"loadavg {r['loadavg']}, others {max(0.0, (b1 - b0) - (o1 - o0)) / (w1 - w0):.2f} cores"
        tag, text = ("1t", "one thread") if n == 1 else ("auto", "automatic threads")
        figures = [
            ("vs-avdec", f"decode 1080p x5, {text}: wall vtdec/avdec_h264", r["vtdec"][0] / r["avdec_h264"][0], "<= 0.95"),
            ("vs-ffmpeg", f"decode 1080p x5, {text}: wall vtdec/ffmpeg -f null", r["vtdec"][0] / r["ffmpeg"][0],
             "<= 1.00" if n == 1 else "-"),
            ("rss", f"decode 1080p x5, {text}: peak RSS vtdec/avdec_h264", r["rss_vtdec"] / r["rss_avdec"], "<= 1.00"),
        ]
        for row, text2, value, goal in figures:
            print(f"decode-1080p-{tag}-{row}\t{text2}\t{value:.3f}\t{goal}\t{load}", file=out)
EOF
bench_summary_file "$work/summary.tsv"
