#!/usr/bin/env bash
# Soak: long runs of vtdec and vtenc with the pipeline process's resident memory sampled along the
# way, to catch per-frame leaks that a short test or a peak-RSS figure cannot show.
#
#   bench/soak.sh
#
# Three runs, each a pipeline in one process (bench/lib/soak_run.py, Python GI) that counts the
# buffers reaching fakesink with a pad probe and reads VmRSS from /proc/self/status every
# SWIFTVT_SOAK_INTERVAL frames (default 5,000):
#   vtdec-sw  100,000 frames: multifilesrc location=CLIP loop=true ! h264parse
#             ! vtdec hardware=disable ! fakesink sync=false            (libavcodec)
#   vtdec-va  100,000 frames: the same with vtdec hardware=require, inside
#             scripts/with-software-va.sh (the project's software VA driver on Xvfb)
#   vtenc-sw  30,000 frames: videotestsrc pattern=ball ! I420 320x240 ! vtenc hardware=disable
#             ! fakesink sync=false                                     (x264)
# CLIP is encoded once into the temporary directory: 1,000 frames of 320x240 videotestsrc
# pattern=ball (moving), x264enc key-int-max=60 bframes=2, byte-stream. multifilesrc hands the
# whole file over again at each loop; the stream starts with SPS/PPS/IDR so h264parse and vtdec
# see a plain concatenation of closed GOPs. Small frames keep the whole script to about two
# minutes on two cores while still pushing every frame through a full session.
#
# Printed per run: the machine load (uptime) before and after, the backend vtdec/vtenc reported
# (active-backend), a table of frames and RSS (MiB), the growth from the warm-up sample (the
# second one: the first includes the decoder's and the allocators' start-up growth) to the last
# one, and MET or MISSED for the goal "growth < 5 %". Exits 1 when a run misses the goal or
# fails (ERROR, early EOS, a stall, a missing element); 0 when all three meet it.
#
# Uses the plugin SWIFTVT_PLUGIN, else build/libgstswiftvt.so (scripts/build.sh), else a release
# build (bench/lib/common.sh). It is copied alone into the temporary directory with a private
# registry, so a rebuild of build/ during the soak cannot change the library under the running
# pipeline (a rewritten mapped .so ends the process with SIGBUS).
# Environment: SWIFTVT_PLUGIN, SWIFTVT_SOAK_DECODE_FRAMES (default 100000),
# SWIFTVT_SOAK_ENCODE_FRAMES (default 30000), SWIFTVT_SOAK_INTERVAL (default 5000),
# SWIFTVT_SOAK_RUNS (which runs, default "vtdec-sw vtdec-va vtenc-sw"), SWIFTVT_SOAK_STALL
# (seconds without a frame that count as a failure, default 60), SWIFTVT_VA_DRIVER_DIR (where
# scripts/with-software-va.sh finds or builds the VA driver).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="soak"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
decode_frames="${SWIFTVT_SOAK_DECODE_FRAMES:-100000}"
encode_frames="${SWIFTVT_SOAK_ENCODE_FRAMES:-30000}"
interval="${SWIFTVT_SOAK_INTERVAL:-5000}"
read -r -a runs_wanted <<<"${SWIFTVT_SOAK_RUNS:-vtdec-sw vtdec-va vtenc-sw}"
# Debian's interpreter: it has python3-gi, a pyenv or venv python3 earlier on PATH may not.
python=/usr/bin/python3
max_growth_percent=5

bench_install_deps
if ! "$python" -c 'import gi; gi.require_version("Gst", "1.0")' 2>/dev/null; then
    echo "$bench_name: $python has no GStreamer GI bindings (python3-gi, gir1.2-gstreamer-1.0)" >&2
    exit 1
fi
if [ -z "${SWIFTVT_PLUGIN:-}" ] && [ -f build/libgstswiftvt.so ]; then
    SWIFTVT_PLUGIN=build/libgstswiftvt.so
fi
bench_build_plugin
bench_make_workdir
bench_use_private_plugin vtdec vtenc h264parse x264enc multifilesrc

clip="$work/clip.h264"
gst-launch-1.0 -q videotestsrc num-buffers=1000 pattern=ball \
    ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 \
    ! x264enc key-int-max=60 bframes=2 ! video/x-h264,stream-format=byte-stream,alignment=au \
    ! filesink location="$clip"

load() { cut -d' ' -f1-3 /proc/loadavg; }

declare -A verdict=()
failed=0
soak() { # soak NAME FRAMES PIPELINE [WRAPPER...]: one run, its table and its verdict
    local name="$1" frames="$2" pipeline="$3"
    shift 3
    local log="$work/$name.log" status=0
    echo
    echo "== $name: $frames frames"
    echo "   $pipeline"
    echo "   load before: $(load)"
    "$@" "$python" bench/lib/soak_run.py "$frames" "$interval" "$pipeline" >"$log" 2>"$work/$name.err" \
        || status=$?
    echo "   load after:  $(load)"
    if [ "$status" != 0 ] || ! grep -q '^done ' "$log"; then
        echo "   FAILED (exit status $status): $(grep -v '^sample ' "$log" | tail -1)"
        tail -5 "$work/$name.err" | sed 's/^/   | /'
        verdict[$name]="FAILED"
        failed=1
        return
    fi
    # Table, growth and verdict from the samples ("sample FRAMES RSS_KIB ELAPSED").
    local summary
    summary="$("$python" - "$log" "$max_growth_percent" <<'PY'
import sys
samples, backend, elapsed = [], "?", "?"
for line in open(sys.argv[1]):
    words = line.split()
    if words[0] == "sample":
        samples.append((int(words[1]), int(words[2]) / 1024))
    elif words[0] == "backend":
        backend = " ".join(words[1:]) or "?"
    elif words[0] == "done":
        elapsed = words[2]
limit = float(sys.argv[2])
print(f"   backend: {backend}; {elapsed} s, {samples[-1][0] / float(elapsed):.0f} frames/s")
print(f"   {'frames':>8}  {'RSS MiB':>8}")
for frames, mib in samples:
    print(f"   {frames:>8}  {mib:>8.1f}")
if len(samples) < 3:
    print(f"   too few samples ({len(samples)}) for a warm-up sample and a later one")
    print("verdict MISSED")
    sys.exit()
warm, last = samples[1], samples[-1]
growth = (last[1] - warm[1]) / warm[1] * 100
peak = max(mib for _, mib in samples[1:])
print(f"   after warm-up ({warm[0]} frames -> {last[0]}): {warm[1]:.1f} -> {last[1]:.1f} MiB, "
      f"growth {growth:+.2f} % (goal < {limit:g} %), peak {peak:.1f} MiB")
print("verdict " + ("MET" if growth < limit else "MISSED"))
PY
)"
    grep -v '^verdict ' <<<"$summary"
    verdict[$name]="$(sed -n 's/^verdict //p' <<<"$summary")"
    echo "   $name: ${verdict[$name]}"
    if [ "${verdict[$name]}" != MET ]; then failed=1; fi
}

for run in "${runs_wanted[@]}"; do
    case "$run" in
        vtdec-sw)
            soak vtdec-sw "$decode_frames" \
                "multifilesrc location=$clip loop=true ! h264parse ! vtdec name=codec hardware=disable ! fakesink name=sink sync=false" ;;
        vtdec-va)
            soak vtdec-va "$decode_frames" \
                "multifilesrc location=$clip loop=true ! h264parse ! vtdec name=codec hardware=require ! fakesink name=sink sync=false" \
                bash scripts/with-software-va.sh ;;
        vtenc-sw)
            # num-buffers above the frame count: the run ends at the count, not at EOS.
            soak vtenc-sw "$encode_frames" \
                "videotestsrc num-buffers=$((encode_frames + 100)) pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! vtenc name=codec hardware=disable ! fakesink name=sink sync=false" ;;
        *)
            echo "$bench_name: unknown run $run (SWIFTVT_SOAK_RUNS: vtdec-sw vtdec-va vtenc-sw)" >&2
            exit 2 ;;
    esac
done

echo
echo "== summary (RSS growth after warm-up < $max_growth_percent %)"
for run in "${runs_wanted[@]}"; do
    echo "   $run: ${verdict[$run]}"
done
exit "$failed"
