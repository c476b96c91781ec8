"""pipelines/multipass-farm.py end to end on Dask (issue 22): multi-pass encoding of one file in
chunks on workers, SwiftVT's rate control planning for the whole file. (Was tests/farm.sh a-d.)

Four runs of the job on the 8-s patterns clip (conftest.py's `patterns_clip`) at 300 kbit/s in
chunks of 4 s, each run once per module and asserted on by several tests:
- `local`: a LocalCluster of 2 workers;
- `cluster`: a real `dask scheduler` and two `dask worker --nthreads 1 --nworkers 1` processes on
  localhost (started in / so that nothing of this repository is on their path; stopped after): with
  one encoder thread x264 is deterministic and the plan depends on the bits only, so its H.264
  stream and packet table are (a)'s (checked, not assumed: the MP4 files differ in mp4mux's
  creation times);
- `killed`: kill -9 of the worker process (not its nanny) running a pass-1 encoder: the encoder dies
  with it (SIGKILL through PR_SET_PDEATHSIG), Dask reruns the chunk, the job says so and its
  --timings record a second attempt, the output is (a)'s stream;
- `shared`: --shared-dir (paths instead of bytes through Dask): (a)'s stream, the folder left empty.

Every output of local, cluster and killed passes the same checks (`test_output_*`): ffprobe (h264,
avc1 with an avcC record, 240 frames, 8 s), FFmpeg decodes it without an error, frames i/30 s
apart, every chunk starts with an IDR picture whose idr_pic_id differs from the IDR before it (the
splice), the bit rate within 5 % of the target, PSNR-Y at least vtmultipasssink's at the same target
minus 1 dB: the farm starts an IDR picture at every chunk (here every 4 s, where the sink has one
GOP per scene of the 8 s), which costs it a fraction of a dB at this rate; frames out of place, a
chunk missing or a damaged splice cost far more (10 dB and up).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from farm_testing import (PATTERN_FRAMES, Farm, idr_pictures, kbps, packet_table, psnr_y, stream_field,
                          stream_md5)
from swiftvt_testing import require, run

TARGET = 300
SECONDS = PATTERN_FRAMES / 30
ARGS = ("--bitrate", TARGET, "--workers", 2, "--chunk-seconds", 4)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("cluster")


def new_farm(farm_env, work, name):
    folder = work / name
    folder.mkdir()
    return Farm(farm_env, folder)


def job(farm_env, work, source, name, *args):
    """One run of the job (exit status not asserted here: the tests do), with its --timings."""
    farm = new_farm(farm_env, work, name)
    timings = work / f"{name}.json"
    result = farm.run(source, work / f"{name}.mp4", *args, "--timings", timings, timeout=180)
    result.timings = timings
    return result


@pytest.fixture(scope="module")
def psnr_floor(farm_env, patterns_clip, work):
    """vtmultipasssink at the same target on the same decoded frames, minus 1 dB."""
    reference = work / "reference.mp4"
    run(["gst-launch-1.0", "-q", "filesrc", f"location={patterns_clip}", "!", "decodebin", "!", "videoconvert", "!",
         "video/x-raw,format=I420", "!", "vtmultipasssink", f"location={reference}", f"bitrate={TARGET}"],
        farm_env, timeout=120)
    return psnr_y(farm_env, reference, patterns_clip) - 1


@pytest.fixture(scope="module")
def local(farm_env, patterns_clip, work):
    return job(farm_env, work, patterns_clip, "local", *ARGS)


def stop(process):
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def cluster(farm_env, patterns_clip, work):
    require(shutil.which("dask"), "farm: the dask command is missing (Debian package python3-distributed)")
    scheduler_file = work / "scheduler.json"
    processes = []
    try:
        with open(work / "scheduler.log", "w") as log:
            processes.append(subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                               "--no-dashboard", "--scheduler-file", scheduler_file],
                                              stdout=log, stderr=subprocess.STDOUT, env=farm_env))
        for _ in range(60):
            if scheduler_file.exists() and scheduler_file.stat().st_size:
                break
            time.sleep(0.5)
        assert scheduler_file.exists() and scheduler_file.stat().st_size, \
            f"dask scheduler did not start: {(work / 'scheduler.log').read_text()[-1000:]}"
        address = json.loads(scheduler_file.read_text())["address"]
        for n in (1, 2):
            with open(work / f"worker{n}.log", "w") as log:
                processes.append(subprocess.Popen(["dask", "worker", address, "--nthreads", "1", "--nworkers", "1",
                                                   "--no-dashboard", "--local-directory", work / f"worker{n}"],
                                                  cwd="/", stdout=log, stderr=subprocess.STDOUT, env=farm_env))
        yield job(farm_env, work, patterns_clip, "cluster", *ARGS, "--scheduler", address)
    finally:
        # The workers first: a worker whose scheduler went away first keeps trying to reach it.
        for process in reversed(processes):
            stop(process)


def descendants_of(pid):
    """{pid: ppid} of the processes below `pid`."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = {}, {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier and child not in found}
        found.update({child: parents[child] for child in frontier})
    return found


def command_line(pid):
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")).decode(errors="replace")
    except OSError:
        return ""


@pytest.fixture(scope="module")
def killed(farm_env, patterns_clip, work):
    """The job with the worker process running a pass-1 encoder killed (-9): the FarmRun, plus
    `encoder_state` (what /proc says of the encoder 0.5 s later: None when reaped)."""
    farm = new_farm(farm_env, work, "killed")
    timings = work / "killed.json"
    output = work / "killed.mp4"
    log = open(work / "killed.log", "w+")
    process = subprocess.Popen(farm.command(patterns_clip, output, *ARGS, "--timings", timings), env=farm.env,
                               stdout=log, stderr=subprocess.STDOUT, text=True)
    encoder = worker = None
    try:
        for _ in range(1500):
            for pid in descendants_of(process.pid):
                arguments = command_line(pid)
                if "swiftvt-farm encode " not in arguments or "--plan" in arguments:
                    continue
                # Stopped first (SIGSTOP), so that its task cannot finish and hand its result to the
                # client between finding it and killing its worker: a kill after that would cost no rerun.
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    continue
                parent = descendants_of(process.pid).get(pid)
                if parent:
                    os.kill(parent, signal.SIGKILL)
                    encoder, worker = pid, parent
                    break
                os.kill(pid, signal.SIGCONT)
            if encoder or process.poll() is not None:
                break
            time.sleep(0.02)
        state = None
        if encoder:
            time.sleep(0.5)
            try:
                fields = Path(f"/proc/{encoder}/stat").read_text().rsplit(")", 1)[1].split()
                state = (fields[0], int(fields[49]))   # the state and the exit code (proc(5) fields 3 and 52)
            except (OSError, IndexError):
                state = None
        try:
            status = process.wait(180)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail("the killed job did not finish in 180 s")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log.seek(0)
    from farm_testing import FarmRun
    result = FarmRun(status, log.read(), output)
    result.timings, result.encoder, result.worker, result.encoder_state = timings, encoder, worker, state
    return result


@pytest.fixture(scope="module")
def shared(farm_env, patterns_clip, work):
    folder = work / "shared-dir"
    folder.mkdir()
    result = job(farm_env, work, patterns_clip, "shared", *ARGS, "--shared-dir", folder)
    result.shared = folder
    return result


RUNS = ["local", "cluster", "killed"]


@pytest.fixture(params=RUNS)
def finished(request):
    """Each run whose output passes every check: it must have ended well."""
    result = request.getfixturevalue(request.param)
    assert result.status == 0, f"{request.param}: the job failed ({result.status}):\n{result.log[-3000:]}"
    assert result.output.is_file(), f"{request.param}: no output:\n{result.log[-2000:]}"
    return result


def test_the_input_has_240_frames(farm_env, patterns_clip):
    assert stream_field(farm_env, patterns_clip, "nb_read_frames", "-count_frames") == str(PATTERN_FRAMES)


def test_job_ends_well_with_an_output(finished):
    """The job exits 0 and writes OUTPUT (the `finished` fixture's assertions)."""


def test_output_is_h264_avc1_with_every_frame(farm_env, finished):
    probed = [stream_field(farm_env, finished.output, "codec_name"),
              stream_field(farm_env, finished.output, "codec_tag_string"),
              stream_field(farm_env, finished.output, "nb_read_frames", "-count_frames")]
    assert probed == ["h264", "avc1", str(PATTERN_FRAMES)], "codec, sample entry, frames"


def test_output_has_an_avcc_record(farm_env, finished):
    assert b"avcC" in finished.output.read_bytes(), "no avcC record"
    assert int(stream_field(farm_env, finished.output, "extradata_size")) > 8, "the avcC record is empty"


def test_output_lasts_8_s(farm_env, finished):
    duration = float(run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                          finished.output], farm_env))
    assert abs(duration - SECONDS) < 0.05


def test_output_decodes_cleanly(probe, finished):
    assert probe.decode_errors(finished.output) == ""


def test_output_frames_are_i_over_30_s_apart(probe, finished):
    times = probe.frames(finished.output)
    off = [(i, t) for i, t in enumerate(times) if ((t - times[0]) * 30 - i) ** 2 > 0.0001]
    assert off == [], f"frames out of place (index, s): {off[:10]}"


def test_output_chunks_start_with_a_new_idr_picture(farm_env, finished):
    """Every chunk after the first begins with an IDR picture whose idr_pic_id differs from the IDR
    picture's before it (7.4.3: consecutive IDR pictures must differ)."""
    idr = idr_pictures(farm_env, finished.output)
    ids = dict(idr)
    starts = [round(c["start_s"] * 30) for c in json.loads(finished.timings.read_text())["chunks"]]
    assert len(starts) > 1
    for start in starts[1:]:
        assert start in ids, f"chunk at frame {start}: no IDR picture there (IDRs at {sorted(ids)})"
        before = [i for frame, i in idr if frame < start]
        assert not before or before[-1] != ids[start], \
            f"chunk at frame {start}: idr_pic_id {ids[start]}, the same as the IDR before it"


def test_output_bit_rate_within_5_percent(farm_env, finished):
    rate = kbps(farm_env, finished.output, SECONDS)
    assert abs(rate / TARGET - 1) <= 0.05, f"{rate:.2f} kbit/s"


def test_output_psnr_at_least_the_sinks_minus_1_db(farm_env, finished, patterns_clip, psnr_floor):
    assert psnr_y(farm_env, finished.output, patterns_clip) >= psnr_floor


def test_local_cluster_reports_progress(local):
    assert re.search(r"^pass 1: \d+/\d+ chunks done", local.log, re.M), local.log[-2000:]


def test_dask_cluster_runs_chunks_on_both_workers(cluster):
    assert cluster.status == 0, cluster.log[-3000:]
    timings = json.loads(cluster.timings.read_text())
    assert len({c["worker"] for p in timings["passes"] for c in p["chunks"]}) == 2


def test_dask_cluster_writes_the_local_clusters_stream(farm_env, cluster, local):
    assert cluster.status == 0 and local.status == 0
    assert stream_md5(farm_env, cluster.output) == stream_md5(farm_env, local.output)


def test_dask_cluster_writes_the_local_clusters_packet_table(farm_env, cluster, local):
    assert cluster.status == 0 and local.status == 0
    assert packet_table(farm_env, cluster.output) == packet_table(farm_env, local.output)


def test_killed_worker_was_running_a_pass_1_encoder(killed):
    assert killed.worker, f"found no pass-1 encoder to kill:\n{killed.log[-2000:]}"


def test_killed_workers_encoder_ends_with_it(killed):
    """Gone, or a zombie (its new parent has not reaped it yet): it ended with its worker, not left
    to finish on the frames it had. Either the death signal (SIGKILL, exit code 9) killed it, or it
    saw its input end first (the kernel closes the dead worker's end of the pipe before it sends the
    children their death signal) and stopped with "the frame stream ended inside frame N's picture"
    (exit status 1: wait status 256)."""
    assert killed.worker
    assert killed.encoder_state in (None, ("Z", 9), ("Z", 256)), \
        f"the encoder {killed.encoder} outlived its worker (state and exit code: {killed.encoder_state})"


def test_killed_job_completes(killed):
    assert killed.status == 0, f"the job failed after the kill:\n{killed.log[-3000:]}"


def test_killed_job_reports_the_rerun(killed):
    assert "was rerun" in killed.log, killed.log[-3000:]


def test_killed_job_timings_record_a_second_attempt(killed):
    passes = json.loads(killed.timings.read_text())["passes"]
    assert any(c["attempts"] > 1 for c in passes[0]["chunks"])


def test_killed_job_writes_the_fault_free_stream(farm_env, killed, local):
    assert killed.status == 0 and local.status == 0
    assert stream_md5(farm_env, killed.output) == stream_md5(farm_env, local.output)


def test_shared_dir_writes_the_local_clusters_stream(farm_env, shared, local):
    assert shared.status == 0, f"the job failed:\n{shared.log[-3000:]}"
    assert local.status == 0
    assert stream_md5(farm_env, shared.output) == stream_md5(farm_env, local.output)


def test_shared_dir_is_left_empty(shared):
    assert shared.status == 0, f"the job failed:\n{shared.log[-3000:]}"
    assert list(shared.shared.iterdir()) == []
