"""The farm job's command line (issue 38 rows 6, 7, 8 and 11): what it refuses before any work,
each with one line, and what it says about the chunks it cut.

- row 6: --max-passes beyond what swiftvt-farm plan takes (1...10) is refused at once (it was
  refused by the planner after pass 1, with a usage fragment for a message); a swiftvt-farm
  failure is reported by its line that says what was wrong, not the usage printed after it;
- row 7: an OUTPUT folder, a --shared-dir or a --work-dir where no file can be made (tried for
  real: os.access says yes to root, and sysfs says yes to root and then refuses) is refused at
  once (it was a traceback, or the whole job and then a crash in the mux step);
- row 8: OUTPUT that is INPUT (the same path, a hard link, a symbolic link) is refused and INPUT
  is left as it was (it was silently replaced);
- row 11: the chunk line says the chunks' real lengths and, when they came out longer than asked,
  why ("3 chunks of 1.00-2.00 s (asked for 0.50 s: the input's key frames are 2.00 s apart)"; it
  said "5 chunks of about 0.50 s"), with singular and plural right ("1 chunk of 5.00 s"); and a
  job whose chunk directories exceed 1 MB prints no Dask warning (it printed a 12-line "Large
  object ... consider scattering" warning).

Inputs: 320x240 clips of 2 to 5 s made at test time. Needs what conftest.py lists.
"""
import hashlib
import os
import re
import subprocess
import tempfile

import pytest

from farm_testing import FARM_JOB, JOB_PYTHON


def job_lines(run):
    """The lines the job printed, without its progress lines."""
    return [line for line in run.log.splitlines() if line.strip() and not line.startswith("pass ")]


def assert_refused_at_once(run, farm, status, pattern):
    """Exit `status`, exactly one line (matching `pattern`), no pass started, nothing at OUTPUT
    and nothing left in the job's temporary folder nor beside OUTPUT."""
    assert run.status == status, f"exit {run.status}, expected {status}:\n{run.log[-2000:]}"
    lines = run.log.strip().splitlines()
    assert len(lines) == 1, f"{len(lines)} lines, expected one:\n{run.log[-3000:]}"
    assert re.search(pattern, lines[0]), f"{lines[0]!r} does not match {pattern!r}"
    assert not run.output.exists()
    assert farm.leftovers() == []
    if run.output.parent.is_dir() and os.access(run.output.parent, os.R_OK):
        assert [p.name for p in run.output.parent.iterdir() if p.name.startswith(f".{run.output.name}")] == []


@pytest.fixture(scope="module")
def clip(media):
    """5 s, a key frame every 2 s."""
    return media.clip("key-frames-2s.mp4", frames=150, key_int=60)


def test_row6_max_passes_beyond_the_planner_is_refused_at_once(farm, clip, tmp_path):
    """Was: pass 1 ran, then "swiftvt-farm plan failed (exit 2): swiftvt-farm splice --output FILE CHUNK_DIR..."."""
    run = farm.run(clip, tmp_path / "out.mp4", "--bitrate", 300, "--workers", 2, "--max-passes", 11)
    assert_refused_at_once(run, farm, 2, r"^multipass-farm: error: --max-passes 11 is out of range: 1 to 10")


def test_row6_a_swiftvt_farm_failure_is_reported_by_its_reason(farm_env, tmp_path):
    """planner.run_tool (how the job runs plan and splice) on a usage error: the line beginning
    "swiftvt-farm: ", not the last line of the usage printed after it."""
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from swiftvt_farm import planner, errors\n"
              "try:\n"
              "    planner.run_tool(sys.argv[2:], 'swiftvt-farm plan')\n"
              "except errors.JobError as error:\n"
              "    print(error)\n")
    tool = farm_env["SWIFTVT_FARM_TOOL"]
    result = subprocess.run([JOB_PYTHON, "-c", script, str(FARM_JOB.parent / "lib"), tool,
                             "plan", "--bitrate", "300000",
                             "--max-passes", "11", "--completed-passes", "1", "--state", tmp_path / "state",
                             "--out", tmp_path / "plans", tmp_path / "chunk-0000"],
                            env=farm_env, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == ("swiftvt-farm plan failed (exit 2): "
                                     "swiftvt-farm: --max-passes 11 is not a whole number in 1...10"), \
        result.stdout + result.stderr


def unwritable_folder(tmp_path):
    """A folder in which this process cannot make a file although os.access may say it can:
    /sys for root (sysfs: access() yes, creat() EACCES), else a folder without write permission.
    None when there is none (the test is skipped)."""
    candidates = ["/sys"] if os.geteuid() == 0 else []
    locked = tmp_path / "read-only"
    locked.mkdir()
    locked.chmod(0o555)
    candidates.append(str(locked))
    for folder in candidates:
        try:
            fd, path = tempfile.mkstemp(dir=folder)
        except OSError:
            return folder
        os.close(fd)
        os.unlink(path)
    return None


@pytest.mark.parametrize("where", ["output", "shared-dir", "work-dir"])
def test_row7_a_folder_that_cannot_be_written_is_refused_at_once(farm, clip, tmp_path, where):
    """Was: a traceback (--shared-dir), or the whole job and then a crash in the mux step (OUTPUT's
    folder), when os.access says yes and writing fails: root, or sysfs."""
    folder = unwritable_folder(tmp_path)
    if folder is None:
        pytest.skip("no folder here refuses this user a new file")
    output = os.path.join(folder, "out.mp4") if where == "output" else tmp_path / "out.mp4"
    extra = [] if where == "output" else [f"--{where}", folder]
    run = farm.run(clip, output, "--bitrate", 300, "--workers", 2, *extra)
    expected = {"output": rf"cannot write {re.escape(str(output))}: cannot write in {re.escape(folder)}",
                "shared-dir": rf"--shared-dir: cannot write in {re.escape(folder)}",
                "work-dir": rf"--work-dir: cannot write in {re.escape(folder)}"}[where]
    assert_refused_at_once(run, farm, 1, rf"^multipass-farm: error: {expected} \(")


def file_digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.mark.parametrize("how", ["same path", "hard link", "symbolic link"])
def test_row8_output_that_is_the_input_is_refused(farm, clip, tmp_path, how):
    """Was: the job ran and replaced INPUT by its output (ffmpeg refuses)."""
    source = tmp_path / "input.mp4"
    source.write_bytes(clip.read_bytes())
    before = file_digest(source)
    output = {"same path": tmp_path / "." / "input.mp4", "hard link": tmp_path / "hard.mp4",
              "symbolic link": tmp_path / "link.mp4"}[how]
    if how == "hard link":
        os.link(source, output)
    elif how == "symbolic link":
        output.symlink_to(source.name)
    run = farm.run(source, output, "--bitrate", 300, "--workers", 2)
    assert run.status == 1, run.log[-2000:]
    lines = run.log.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"multipass-farm: error: {output} is the same "
                                                   "file as the input "), run.log
    assert file_digest(source) == before
    assert farm.leftovers() == []


def chunk_line(run):
    lines = [line for line in run.log.splitlines() if line.startswith("multipass-farm: ") and " frames from " in line]
    assert lines, f"no chunk line:\n{run.log[-2000:]}"
    return lines[0]


def test_row11_chunks_longer_than_asked_say_so_and_why(farm, clip, tmp_path):
    """Was: "3 chunks of about 0.50 s at key frames or scene cuts" for chunks of 2, 2 and 1 s."""
    run = farm.ok(clip, tmp_path / "out.mp4", "--bitrate", 300, "--workers", 2, "--chunk-seconds", 0.5)
    assert ("; 3 chunks of 1.00-2.00 s (asked for 0.50 s: the input's key frames are 2.00 s apart); "
            "2 workers, 2 threads (LocalCluster)") in chunk_line(run)


def test_row11_one_chunk_is_one_chunk(farm, media, tmp_path):
    """Was: "1 chunks of about 2.00 s" for one chunk of 5 s, and "1 chunks, 1 pass(es)"."""
    one_key_frame = media.clip("one-key-frame.mp4", frames=150, key_int=300)
    run = farm.ok(one_key_frame, tmp_path / "out.mp4", "--bitrate", 300, "--workers", 2, "--chunk-seconds", 2)
    assert "; 1 chunk of 5.00 s (asked for 2.00 s: the input has one key frame, at its start); " in chunk_line(run)
    assert re.search(r", 1 chunk, \d+ pass(es)?, ", run.summary()), run.summary()


def test_row11_large_chunks_bring_no_dask_warning(farm, media, tmp_path):
    """Chunk directories of about 1 MB (2 s of noise at 8 Mbit/s, 2 chunks) sent to the second pass.
    Was: "UserWarning: Large object of size 1.22 MiB detected in task graph" and 11 more lines: the
    chunks' bytes were task arguments, which go through the scheduler."""
    noise = media.clip("noise.mp4", frames=60, pattern="snow")
    run = farm.ok(noise, tmp_path / "out.mp4", "--bitrate", 8000, "--workers", 2, "--chunk-seconds", 1)
    assert "plan after pass 2" in run.log, "the case needs a second pass"
    unexpected = [line for line in run.log.splitlines()
                  if not re.match(r"(multipass-farm: |pass \d+: |plan after pass \d+: )", line)]
    assert unexpected == [], "lines that are not the job's:\n" + "\n".join(unexpected[:20])
