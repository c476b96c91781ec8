"""A farm job that stopped goes on where it was (issue 38 "Resume", rows 9 and 10).

- row 9: after kill -9 of the client in pass 1 (which leaves the job's folders, the pipeline's
  plugin folder and the LocalCluster workers' folders, the input's copies among them), the next
  run leaves nothing behind in the temporary folder nor beside OUTPUT (it left them all, for good);
- row 10: Ctrl-C (SIGINT to the job's process group, as a terminal sends it, the LocalCluster
  workers included) ends with exactly one line, `multipass-farm: interrupted: ...` with what was
  kept (it printed some 80 lines of tracebacks first);
- resume: run again with the same command after kill -9 (or Ctrl-C), the job says where it
  resumes ("resuming the job in DIR: pass 2, 1 of 5 chunks done"), encodes fewer chunks (its
  --timings) and writes the same H.264 stream as an uninterrupted run (x264 with one thread is
  deterministic; compared as `ffmpeg -map 0:v -c copy -f md5`); --no-resume starts over, as does
  a changed input or a changed setting, each with one line saying why; a second job for the
  same OUTPUT while one runs is refused.

Input: 5 s of 320x240 at 30/1, a key frame every second; chunks of 1 s on 2 workers, 100 kbit/s,
so that the job runs 3 passes of 5 chunks. Needs what conftest.py lists.
"""
import fcntl
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from farm_testing import FARM_JOB, JOB_PYTHON, Farm
from swiftvt_testing import run as run_command

ARGS = ("--bitrate", 100, "--workers", 2, "--chunk-seconds", 1)


@pytest.fixture(scope="module")
def clip(media):
    return media.clip("resume.mp4", frames=150, key_int=30)


def stream_md5(env, path):
    return run_command(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v", "-c", "copy", "-f",
                        "md5", "-"], env).strip()


@pytest.fixture(scope="module")
def reference(farm_env, clip, tmp_path_factory):
    """An uninterrupted run: (its stream's MD5, its timings)."""
    farm = Farm(farm_env, tmp_path_factory.mktemp("reference"))
    output = farm.tmp_path / "reference.mp4"
    timings = farm.tmp_path / "reference.json"
    run = farm.ok(clip, output, *ARGS, "--timings", timings)
    assert "plan after pass 2" in run.log, "the case needs more than one pass"
    return stream_md5(farm_env, output), json.loads(timings.read_text())


def chunks_encoded(timings):
    return sum(len(p["chunks"]) for p in timings["passes"])


def job_folder(output):
    return output.parent / f".{output.name}.farm"


def stop_when(farm, source, output, marker, how, *args):
    """Starts the job in its own session, waits for `marker` in its output, stops it (`how`:
    "kill" is SIGKILL to the client alone, "interrupt" SIGINT to its process group, as Ctrl-C) and
    waits until every process of its session is gone (LocalCluster workers die with the client).
    Returns (exit status, everything it printed)."""
    job = subprocess.Popen(farm.command(source, output, *args), env=farm.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True,
                           # A test run in the background may have SIGINT ignored, which the job would inherit.
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    printed = []
    try:
        for line in job.stdout:
            printed.append(line)
            if marker in line:
                break
        else:
            pytest.fail(f"the job ended before {marker!r}:\n{''.join(printed)[-2000:]}")
        if how == "kill":
            os.kill(job.pid, signal.SIGKILL)
        else:
            os.killpg(job.pid, signal.SIGINT)
        rest, _ = job.communicate(timeout=60)
        printed.append(rest)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    deadline = time.monotonic() + 60
    while in_session(job.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not in_session(job.pid), "processes of the stopped job are still running"
    return job.returncode, "".join(printed)


def in_session(session):
    """Processes of session `session` still running (zombies aside)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session and fields[0] != "Z":
                found.append(int(name))
    return found


def test_row9_what_a_killed_job_left_is_removed_by_the_next_run(farm, clip, tmp_path):
    """Was: the client's job folder, the chunk folders, the pipeline's plugin folder and a copy of
    the input per worker stayed in the temporary folder, and the next run left them there."""
    output = tmp_path / "out.mp4"
    status, _ = stop_when(farm, clip, output, "pass 1: 1/", "kill", *ARGS)
    assert status == -signal.SIGKILL
    assert farm.leftovers() != [], "kill -9 should have left something for the next run to remove"
    farm.ok(clip, output, *ARGS)
    assert farm.leftovers() == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("marker", ["pass 1: 1/", "pass 2: 1/"])
def test_row10_ctrl_c_prints_one_line(farm, clip, tmp_path, marker):
    """Was: about 80 lines of tracebacks (the LocalCluster workers' and Dask's in the client)
    before "multipass-farm: interrupted"."""
    output = tmp_path / "out.mp4"
    status, printed = stop_when(farm, clip, output, marker, "interrupt", *ARGS)
    assert status == 130, printed[-3000:]
    after = printed.split(marker, 1)[1].splitlines()[1:]
    after = [line for line in after if line.strip()
             and not re.match(r"(pass \d+: \d+/\d+ chunks done|plan after pass )", line)]
    assert len(after) == 1, "more than one line after Ctrl-C:\n" + "\n".join(after[:40])
    assert re.fullmatch(rf"multipass-farm: interrupted: pass \d, \d of 5 chunks done, kept in "
                        rf"{re.escape(str(job_folder(output)))}: the same command goes on from there "
                        r"\(--no-resume starts over\)", after[0]), after[0]
    assert farm.leftovers() == []
    assert not output.exists()


@pytest.mark.parametrize("how", ["kill", "interrupt"])
def test_resume_goes_on_and_writes_the_same_stream(farm, clip, tmp_path, reference, how):
    """Stopped after the plan after pass 1 (kill -9 of the client, or Ctrl-C), run again with the
    same command: pass 1 is not run again, the output is the uninterrupted run's stream."""
    output = tmp_path / "out.mp4"
    status, _ = stop_when(farm, clip, output, "plan after pass 1", how, *ARGS)
    assert status in (-signal.SIGKILL, 130)
    timings_path = tmp_path / "timings.json"
    run = farm.ok(clip, output, *ARGS, "--timings", timings_path)
    resuming = [line for line in run.log.splitlines() if "resuming" in line]
    assert len(resuming) == 1 and re.fullmatch(
        rf"multipass-farm: resuming the job in {re.escape(str(job_folder(output)))}: pass 2, \d of 5 chunks done",
        resuming[0]), run.log[-3000:]
    timings = json.loads(timings_path.read_text())
    assert [p["pass"] for p in timings["passes"]][0] == 2, "pass 1 ran again"
    assert chunks_encoded(timings) < chunks_encoded(reference[1])
    assert stream_md5(farm.env, output) == reference[0]
    assert not job_folder(output).exists()
    assert farm.leftovers() == []


def test_no_resume_starts_over(farm, clip, tmp_path, reference):
    output = tmp_path / "out.mp4"
    stop_when(farm, clip, output, "plan after pass 1", "kill", *ARGS)
    timings_path = tmp_path / "timings.json"
    run = farm.ok(clip, output, *ARGS, "--no-resume", "--timings", timings_path)
    assert (f"multipass-farm: starting over (--no-resume): the earlier job's work in {job_folder(output)} is removed"
            in run.log), run.log[-3000:]
    assert "resuming" not in run.log
    assert chunks_encoded(json.loads(timings_path.read_text())) == chunks_encoded(reference[1])
    assert stream_md5(farm.env, output) == reference[0]
    assert not job_folder(output).exists()


def test_a_changed_input_starts_over(farm, media, clip, tmp_path):
    source = tmp_path / "input.mp4"
    source.write_bytes(clip.read_bytes())
    output = tmp_path / "out.mp4"
    stop_when(farm, source, output, "plan after pass 1", "kill", *ARGS)
    source.write_bytes(media.clip("resume-other.mp4", frames=150, key_int=30, pattern="smpte").read_bytes())
    run = farm.ok(source, output, *ARGS)
    assert re.search(r"^multipass-farm: starting over \(the input differs from the one it encoded \(.*: "
                     r"its size or SHA-256 changed\)\)", run.log, re.M), run.log[-3000:]
    assert "resuming" not in run.log
    assert "pass 1: 5/5 chunks done" in run.log


def test_a_changed_setting_starts_over(farm, clip, tmp_path):
    output = tmp_path / "out.mp4"
    stop_when(farm, clip, output, "plan after pass 1", "kill", *ARGS)
    run = farm.ok(clip, output, "--bitrate", 120, *ARGS[2:])
    assert "multipass-farm: starting over (--bitrate differs (100 then, 120 now))" in run.log, run.log[-3000:]
    assert "pass 1: 5/5 chunks done" in run.log


def test_a_second_job_for_the_same_output_is_refused(farm, clip, tmp_path):
    """The job folder's lock held (as a running job holds it): the second job stops at once."""
    output = tmp_path / "out.mp4"
    folder = job_folder(output)
    folder.mkdir()
    with open(folder / ".owner.lock", "w") as lock:
        lock.write("4242\n")
        lock.flush()
        fcntl.flock(lock, fcntl.LOCK_EX)
        run = farm.run(clip, output, *ARGS)
    assert run.status == 1
    assert run.log.strip() == (f"multipass-farm: error: another multipass-farm job (process 4242) is writing {output}: "
                               f"its folder {folder} is in use"), run.log
    assert not output.exists()


def test_owned_folders_of_dead_owners_are_removed(farm_env, tmp_path):
    """pipelines/lib/owned_folder.py, what the job's folders rely on: a folder whose owner lives
    stays, one whose owner died (kill -9) goes, one without a lock file (being made, or of an
    older job) stays."""
    script = ("import os, sys, time; sys.path.insert(0, sys.argv[1]); from owned_folder import OwnedFolder\n"
              "folder = OwnedFolder.create(sys.argv[2], 'owned-')\n"
              "print(folder.path, flush=True)\n"
              "time.sleep(600)\n")
    lib = str(FARM_JOB.parent / "lib")
    owners = [subprocess.Popen([JOB_PYTHON, "-c", script, lib, tmp_path], stdout=subprocess.PIPE,
                               text=True) for _ in range(2)]
    try:
        alive, dead = (Path(owner.stdout.readline().strip()) for owner in owners)
        owners[1].kill()
        owners[1].wait()
        unlocked = tmp_path / "owned-without-lock"
        unlocked.mkdir()
        removed = subprocess.run([JOB_PYTHON, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                                  "from owned_folder import remove_dead; print(remove_dead(sys.argv[2], 'owned-'))",
                                  lib, tmp_path], capture_output=True, text=True, timeout=60)
        assert removed.stdout.strip() == repr([str(dead)]), removed.stdout + removed.stderr
        assert alive.is_dir() and unlocked.is_dir() and not dead.exists()
    finally:
        for owner in owners:
            owner.kill()
            owner.wait()
