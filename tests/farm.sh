#!/usr/bin/env bash
# pipelines/multipass-farm.py end to end (issue 22): multi-pass encoding of one file in chunks on
# Dask workers, SwiftVT's rate control planning for the whole file.
#  a. a LocalCluster of 2 workers: the MP4 passes ffprobe (h264, avc1 with an avcC record, as many
#     frames as the input, its duration), FFmpeg decodes it without an error, the frames' time
#     stamps are i/30 s, every chunk starts with an IDR picture whose idr_pic_id differs from the IDR
#     before it (the splice), PSNR-Y against the input at least vtmultipasssink's at the same target
#     minus 1 dB (derived below), bit rate within 5 % of the target;
#  b. a real `dask scheduler` and two `dask worker --nthreads 1 --nworkers 1` processes on localhost
#     (started in / so that nothing of this repository is on their path; stopped by the test): the
#     same checks, and the same H.264 stream and time stamps as (a): with one encoder thread x264
#     is deterministic and the plan depends on the bits only (checked here, not assumed: the packet
#     MD5 and the packet table are compared; the MP4 files themselves differ in mp4mux's creation
#     times);
#  c. kill -9 of the worker process (not its nanny) running a pass-1 encoder: the encoder dies with
#     it (SIGKILL through PR_SET_PDEATHSIG), Dask reruns the chunk, the job says so and its
#     --timings record a second attempt, and the output is the same stream as (a);
#  d. --shared-dir: paths instead of bytes through Dask, the same stream as (a);
#  e. faults of the input, each a clear one-line error, exit 1 and nothing at OUTPUT (no temporary
#     file either): an MP4 whose moov (first) says 8 s but whose data stops at about half, found
#     by the frame index before any work ("INPUT is truncated: its data ends at ..."); a missing input; a file without
#     video; a scheduler that cannot be reached; a missing swiftvt-farm.
# The inputs are made at test time: 320x240, 240 frames at 30/1 of videotestsrc patterns changing
# every 48 frames, x264enc key-int-max=30, in MP4. Every job runs under `timeout`.
# Needs FFmpeg, Dask distributed (python3-distributed) and swiftvt-farm (SWIFTVT_FARM_TOOL, default
# build/swiftvt-farm): skipped (77) without them, failed under SWIFTVT_REQUIRE_TEST_INPUTS (CI).
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/tests/lib/require.sh"
for tool in ffmpeg ffprobe; do
    require_command "$tool" "farm: $tool not found (Debian package ffmpeg; scripts/install-deps.sh installs it)"
done
python=/usr/bin/python3
"$python" -c 'import distributed' 2>/dev/null \
    || require_input "farm: Dask distributed not importable by $python (Debian package python3-distributed; scripts/install-deps.sh installs it)"
require_command dask "farm: the dask command is missing (Debian package python3-distributed)"
export SWIFTVT_FARM_TOOL="${SWIFTVT_FARM_TOOL:-$root/build/swiftvt-farm}"
require_file "$SWIFTVT_FARM_TOOL" "farm: swiftvt-farm not found at $SWIFTVT_FARM_TOOL (meson compile -C build builds it; or set SWIFTVT_FARM_TOOL)"
source "$root/pipelines/lib/plugin-env.sh"
work="$swiftvt_work_dir"
farm="$root/pipelines/multipass-farm.py"
dask_pids=()
cleanup() { # the workers first: a worker whose scheduler went away first keeps trying to reach it
    local pid i
    for (( i = ${#dask_pids[@]} - 1; i >= 0; i-- )); do
        pid=${dask_pids[i]}
        kill -TERM "$pid" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "farm: FAILED: $*" >&2; exit 1; }
target=300 frames=240

# The input: patterns that change (each scrolling), key frames every 30 frames at most.
raw_patterns() {
    local pattern
    for pattern in "smpte" "zone-plate kx2=20 ky2=20 kt=1" "pinwheel" "spokes" "ball"; do
        # shellcheck disable=SC2086 # the pattern's properties are words
        timeout 60 gst-launch-1.0 -q videotestsrc pattern=$pattern horizontal-speed=2 num-buffers=48 \
            ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! fdsink fd=1
    done
}
make_clip() { # make_clip OUT [mp4mux properties]
    raw_patterns | timeout 60 gst-launch-1.0 -q fdsrc fd=0 ! rawvideoparse width=320 height=240 format=i420 framerate=30/1 \
        ! x264enc key-int-max=30 speed-preset=fast bitrate=2000 ! mp4mux "${@:2}" ! filesink location="$1"
}
clip="$work/clip.mp4"
make_clip "$clip"
[ "$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$clip")" = $frames ] \
    || fail "the generated input does not have $frames frames"

run_farm() { # run_farm NAME ARGS... -> the job's output in $work/NAME.log; returns its status
    local name="$1" status=0
    shift
    timeout 180 "$python" "$farm" "$@" >"$work/$name.log" 2>&1 || status=$?
    if [ "$status" = 124 ]; then fail "$name: the job did not finish in 180 s: $(tail -5 "$work/$name.log")"; fi
    return "$status"
}
kbps() { ffprobe -v error -select_streams v -show_entries packet=size -of csv=p=0 "$1" | awk -v f=$frames '{s += $1} END {printf "%.2f", s * 8 / (f / 30) / 1000}'; }
psnr_y() { # mean PSNR-Y of $1's frames against the input's
    ffmpeg -v error -i "$1" -i "$clip" -lavfi "[0:v][1:v]psnr=stats_file=-" -f null - 2>/dev/null \
        | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^psnr_y:/) {split($i, a, ":"); s += a[2]; n++}} END {printf "%.3f", s / n}'
}
stream_field() { ffprobe -v error "${@:3}" -select_streams v -show_entries "stream=$2" -of csv=p=0 "$1"; }
stream_md5() { ffmpeg -v error -i "$1" -map 0:v -c copy -f md5 -; }
packet_table() { ffprobe -v error -select_streams v -show_entries packet=pts,dts,duration,flags,size -of csv=p=0 "$1"; }

# The PSNR-Y floor: vtmultipasssink at the same target on the same decoded frames, minus 1 dB. The
# farm starts an IDR picture at every chunk (here every 4 s, where the sink has one GOP
# per scene of the 8 s), which costs it a fraction of a dB at this rate; frames out of place, a
# chunk missing or a damaged splice cost far more (10 dB and up).
timeout 120 gst-launch-1.0 -q filesrc location="$clip" ! decodebin ! videoconvert ! video/x-raw,format=I420 \
    ! vtmultipasssink location="$work/reference.mp4" bitrate=$target || fail "vtmultipasssink (the reference) failed"
reference_psnr=$(psnr_y "$work/reference.mp4")
psnr_floor=$(awk -v p="$reference_psnr" 'BEGIN {printf "%.3f", p - 1}')
echo "farm: reference vtmultipasssink bitrate=$target: PSNR-Y $reference_psnr dB at $(kbps "$work/reference.mp4") kbit/s; floor $psnr_floor dB"

# The checks every successful run passes: check_output NAME OUT TIMINGS
check_output() {
    local name="$1" out="$2" timings="$3" probe rate psnr
    [ -f "$out" ] || fail "$name: no output: $(tail -5 "$work/$name.log")"
    probe="$(stream_field "$out" codec_name) $(stream_field "$out" codec_tag_string) $(stream_field "$out" nb_read_frames -count_frames)"
    [ "$probe" = "h264 avc1 $frames" ] || fail "$name: ffprobe says $probe (expected h264 avc1 $frames: codec, sample entry, frames)"
    grep -q avcC "$out" || fail "$name: no avcC record"
    [ "$(stream_field "$out" extradata_size)" -gt 8 ] || fail "$name: the avcC record is empty"
    awk -v d="$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$out")" 'BEGIN {exit !((d - 8) ^ 2 < 0.05 ^ 2)}' \
        || fail "$name: duration $(ffprobe -v error -show_entries format=duration -of csv=p=0 "$out") s, not 8 s"
    [ -z "$(ffmpeg -v error -i "$out" -f null - 2>&1)" ] || fail "$name: FFmpeg reports decoding errors: $(ffmpeg -v error -i "$out" -f null - 2>&1 | head -3)"
    ffprobe -v error -select_streams v -show_entries frame=pts_time -of csv=p=0 "$out" | sort -g \
        | awk 'NR == 1 {first = $1} {if ((($1 - first) * 30 - NR + 1) ^ 2 > 0.0001) {print "frame " NR " at " $1 " s"; bad = 1}} END {exit bad}' \
        || fail "$name: the frames' time stamps are not i/30 s apart"
    # Every chunk begins with an IDR picture, and its idr_pic_id differs from the IDR's before it.
    ffmpeg -v verbose -i "$out" -c copy -bsf:v trace_headers -f null - 2>&1 \
        | awk '/ nal_unit_type / && ($NF == 1 || $NF == 5) {frame++; idr = ($NF == 5)} / idr_pic_id / && idr {print frame - 1, $NF}' >"$work/$name.idr"
    "$python" - "$timings" "$work/$name.idr" <<'EOF' || fail "$name: the IDR pictures at the chunk junctions are wrong"
import json, sys
timings = json.load(open(sys.argv[1]))
idr = [tuple(map(int, line.split())) for line in open(sys.argv[2])]
ids = dict(idr)
starts = [round(c["start_s"] * 30) for c in timings["chunks"]]
for start in starts[1:]:
    if start not in ids:
        sys.exit(f"chunk at frame {start}: no IDR picture there (IDRs at {sorted(ids)})")
    before = [i for frame, i in idr if frame < start]
    if before and before[-1] == ids[start]:
        sys.exit(f"chunk at frame {start}: idr_pic_id {ids[start]}, the same as the IDR before it")
print(f"   {len(starts)} chunks at frames {starts}; IDR pictures (frame, idr_pic_id): {idr}")
EOF
    rate=$(kbps "$out")
    awk -v r="$rate" -v t=$target 'BEGIN {exit !((r / t - 1) ^ 2 <= 0.05 ^ 2)}' || fail "$name: $rate kbit/s is not within 5 % of $target"
    psnr=$(psnr_y "$out")
    awk -v p="$psnr" -v f="$psnr_floor" 'BEGIN {exit !(p >= f)}' || fail "$name: PSNR-Y $psnr dB is below $psnr_floor"
    echo "farm: $name: ffprobe h264/avc1 $frames frames 8 s, decodes cleanly, time stamps i/30 s, chunk junctions ok; $rate kbit/s (target $target), PSNR-Y $psnr dB (floor $psnr_floor)"
}

# The default chunking: no more chunks than the 10-s GOPs vtmultipasssink would code (each chunk
# starts with an IDR picture), 4 per worker at most, a multiple of the workers above that.
# (The cases below pass --chunk-seconds 4: this 8-s clip is one chunk by default.)
"$python" - "$farm" <<'EOF' || fail "default_chunk_seconds cuts wrong chunk counts"
import importlib.util, sys
sys.dont_write_bytecode = True
spec = importlib.util.spec_from_file_location("farm", sys.argv[1])
farm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(farm)
for seconds, workers, expected in ((8, 2, 1), (10, 2, 1), (301 / 30, 2, 2), (15, 2, 2), (3284 / 30, 2, 8), (60, 8, 6), (7200, 8, 32)):
    count = round(seconds / farm.default_chunk_seconds(seconds, workers))
    if count != expected:
        sys.exit(f"{seconds:.2f} s on {workers} workers: {count} chunks, expected {expected}")
print("farm: default chunks: 8 s -> 1, 10.03 s -> 2, 109.47 s on 2 workers -> 8, 60 s on 8 workers -> 6")
EOF

# a. LocalCluster of 2 workers.
run_farm local "$clip" "$work/local.mp4" --bitrate $target --workers 2 --chunk-seconds 4 --timings "$work/local.json" \
    || fail "a. the job failed: $(tail -5 "$work/local.log")"
grep -q "^pass 1: [0-9]*/[0-9]* chunks done" "$work/local.log" || fail "a. no progress lines"
grep "^multipass-farm: .*local.mp4" "$work/local.log"
check_output local "$work/local.mp4" "$work/local.json"
reference_md5=$(stream_md5 "$work/local.mp4")
packet_table "$work/local.mp4" >"$work/local.packets"

# b. A real scheduler and two worker processes on localhost.
dask scheduler --host 127.0.0.1 --port 0 --no-dashboard --scheduler-file "$work/scheduler.json" >"$work/scheduler.log" 2>&1 &
dask_pids+=($!)
for _ in $(seq 1 60); do [ -s "$work/scheduler.json" ] && break; sleep 0.5; done
[ -s "$work/scheduler.json" ] || fail "b. dask scheduler did not start: $(tail -5 "$work/scheduler.log")"
address=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["address"])' "$work/scheduler.json")
for n in 1 2; do
    (cd / && exec dask worker "$address" --nthreads 1 --nworkers 1 --no-dashboard --local-directory "$work/worker$n" \
        >"$work/worker$n.log" 2>&1) &
    dask_pids+=($!)
done
run_farm cluster "$clip" "$work/cluster.mp4" --bitrate $target --scheduler "$address" --workers 2 --chunk-seconds 4 --timings "$work/cluster.json" \
    || fail "b. the job failed: $(tail -5 "$work/cluster.log")"
grep "^multipass-farm: .*cluster.mp4" "$work/cluster.log"
"$python" -c 'import json, sys; w = {c["worker"] for p in json.load(open(sys.argv[1]))["passes"] for c in p["chunks"]}; sys.exit(len(w) != 2)' \
    "$work/cluster.json" || fail "b. the chunks did not run on both workers"
check_output cluster "$work/cluster.mp4" "$work/cluster.json"
[ "$(stream_md5 "$work/cluster.mp4")" = "$reference_md5" ] || fail "b. the H.264 stream differs from (a)'s"
packet_table "$work/cluster.mp4" | cmp -s - "$work/local.packets" || fail "b. the packet table differs from (a)'s"
echo "farm: b. dask scheduler + 2 dask workers at $address: the same H.264 stream and packet table as (a) ($reference_md5)"

# c. kill -9 of the worker process running a pass-1 encoder.
timeout 180 "$python" "$farm" "$clip" "$work/killed.mp4" --bitrate $target --workers 2 --chunk-seconds 4 --timings "$work/killed.json" \
    >"$work/killed.log" 2>&1 &
job=$!
encoder="" worker=""
descends_from() { # descends_from PID ANCESTOR: PID is ANCESTOR's child, grandchild, ...
    local pid="$1"
    while [ -n "$pid" ] && [ "$pid" -gt 1 ]; do
        [ "$pid" = "$2" ] && return 0
        pid=$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ')
    done
    return 1
}
for _ in $(seq 1 1500); do
    # This job's encoders only (encoder -> worker -> the job's Python -> timeout): other jobs may
    # run on the same machine.
    for pid in $(pgrep -f "swiftvt-farm encode " || true); do
        descends_from "$pid" "$job" || continue
        # The encoder may end between pgrep and here: a missing /proc entry means "not this one".
        arguments=$( { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null || true)
        [ -n "$arguments" ] || continue
        # Stopped first (SIGSTOP), so that its task cannot finish and hand its result to the
        # client between finding it and killing its worker: a kill after that would cost no rerun.
        if ! grep -q -- "--plan" <<<"$arguments" && kill -STOP "$pid" 2>/dev/null; then encoder=$pid; break; fi
    done
    if [ -n "$encoder" ]; then
        worker=$(ps -o ppid= -p "$encoder" | tr -d ' ')
        worker_args=$(ps -o args= -p "$worker" 2>/dev/null | cut -c1-70 || true)
        [ -n "$worker" ] && kill -KILL "$worker" && break
        kill -CONT "$encoder" 2>/dev/null || true
        encoder=""
    fi
    sleep 0.02
done
[ -n "$worker" ] || { wait "$job" || true; fail "c. found no pass-1 encoder to kill"; }
echo "farm: c. killed (-9) worker process $worker ($worker_args) running encoder $encoder"
sleep 0.5
# The encoder is gone, or a zombie (its new parent has not reaped it yet): it ended with its worker,
# not left to finish on the frames it had. Either the death signal (SIGKILL, exit code 9) killed it,
# or it saw its input end first (the kernel closes the dead worker's end of the pipe before it sends
# the children their death signal) and stopped with "the frame stream ended in the middle of a
# record" (exit status 1: wait status 256).
if [ -r "/proc/$encoder/stat" ]; then
    state=$(sed 's/.*) //' "/proc/$encoder/stat" | awk '{print $1, $50}')
    case "$state" in
        "Z 9") echo "farm: c. the encoder died of SIGKILL with its worker" ;;
        "Z 256") echo "farm: c. the encoder stopped at the end of its input when its worker died (exit status 1)" ;;
        *) fail "c. the encoder $encoder outlived its worker (state and exit code: $state)" ;;
    esac
else
    echo "farm: c. the encoder is gone (reaped; its signal was not observable)"
fi
status=0
wait "$job" || status=$?
[ "$status" = 0 ] || fail "c. the job failed after the kill (exit $status): $(tail -5 "$work/killed.log")"
grep "was rerun" "$work/killed.log" || fail "c. the job did not report the rerun"
"$python" -c 'import json, sys; sys.exit(not any(c["attempts"] > 1 for c in json.load(open(sys.argv[1]))["passes"][0]["chunks"]))' \
    "$work/killed.json" || fail "c. the timings record no second attempt"
check_output killed "$work/killed.mp4" "$work/killed.json"
[ "$(stream_md5 "$work/killed.mp4")" = "$reference_md5" ] || fail "c. the H.264 stream differs from the fault-free run's"
echo "farm: c. after kill -9: complete, the same H.264 stream as the fault-free run"

# d. --shared-dir.
mkdir "$work/shared"
run_farm shared "$clip" "$work/shared.mp4" --bitrate $target --workers 2 --chunk-seconds 4 --shared-dir "$work/shared" --timings "$work/shared.json" \
    || fail "d. the job failed: $(tail -5 "$work/shared.log")"
[ "$(stream_md5 "$work/shared.mp4")" = "$reference_md5" ] || fail "d. the H.264 stream differs from (a)'s"
[ -z "$(ls -A "$work/shared")" ] || fail "d. the job left files in the shared folder: $(ls -A "$work/shared")"
echo "farm: d. --shared-dir: the same H.264 stream as (a), the shared folder left empty"

# f. A clip whose last chunk's scene-cut window reaches past its last key frame: 2 s with B-frames
# (the container's edit list shifts its time stamps), key frames at 0 and 1 s, chunks of 1 s. A
# KEY_UNIT|SNAP_AFTER seek there lands on the last key frame again and once came back 1 ns after
# it, which made the scene-cut search step forward 1 ns at a time for ever.
timeout 60 gst-launch-1.0 -q videotestsrc pattern=ball num-buffers=60 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 \
    ! x264enc key-int-max=30 bframes=2 speed-preset=fast ! mp4mux ! filesink location="$work/bframes.mp4"
run_farm bframes "$work/bframes.mp4" "$work/bframes-out.mp4" --bitrate $target --workers 2 --chunk-seconds 1 \
    || fail "f. the job failed: $(tail -5 "$work/bframes.log")"
grep -q ", 2 chunks, " "$work/bframes.log" || fail "f. not 2 chunks: $(grep '^multipass-farm' "$work/bframes.log")"
[ "$(stream_field "$work/bframes-out.mp4" nb_read_frames -count_frames)" = 60 ] || fail "f. the output does not have 60 frames"
echo "farm: f. 2 s with B-frames in chunks of 1 s: 2 chunks, 60 frames"

# e. Faults: exit 1, one clear line, nothing at OUTPUT.
expect_error() { # expect_error NAME PATTERN ARGS...
    local name="$1" pattern="$2" status=0 out
    shift 2
    out="$work/$name.mp4"
    run_farm "$name" "$@" || status=$?
    [ "$status" = 1 ] || fail "e. $name: exit $status, expected 1: $(tail -3 "$work/$name.log")"
    grep -qE "$pattern" "$work/$name.log" || fail "e. $name: no message matching \"$pattern\": $(tail -3 "$work/$name.log")"
    [ ! -e "$out" ] || fail "e. $name: something was written at OUTPUT"
    ! ls -A "$work" | grep -q "^\.$name\.mp4\..*\.part$" || fail "e. $name: a temporary file was left: $(ls -A "$work" | grep part)"
    echo "farm: e. $name: $(grep -E "$pattern" "$work/$name.log" | head -1)"
}
make_clip "$work/faststart.mp4" faststart=true
size=$(stat -c %s "$work/faststart.mp4")
head -c $((size * 55 / 100)) "$work/faststart.mp4" >"$work/short-data.mp4"
expect_error truncated "^multipass-farm: error: .*short-data.mp4 is truncated: its data ends at [0-9.]+ s \([0-9]+ video frames\), its header says 8.000 s" \
    "$work/short-data.mp4" "$work/truncated.mp4" --bitrate $target --workers 2 --chunk-seconds 2
expect_error missing "^multipass-farm: error: .*nothing-here.mp4 does not exist" "$work/nothing-here.mp4" "$work/missing.mp4" --bitrate $target
timeout 60 gst-launch-1.0 -q audiotestsrc num-buffers=50 ! wavenc ! filesink location="$work/audio.wav"
expect_error novideo "^multipass-farm: error: .*audio.wav has no video stream" "$work/audio.wav" "$work/novideo.mp4" --bitrate $target
expect_error noscheduler "^multipass-farm: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9" \
    "$clip" "$work/noscheduler.mp4" --bitrate $target --scheduler tcp://127.0.0.1:9
expect_error notool "^multipass-farm: error: swiftvt-farm not found" "$clip" "$work/notool.mp4" --bitrate $target --farm-tool "$work/no-such-tool"
echo "farm: all cases passed"
