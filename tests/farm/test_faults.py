"""Faults of the farm job's input (was tests/farm.sh case e): each is a clear one-line error, exit
1, nothing at OUTPUT and no temporary file beside it:
- an MP4 whose moov (first: faststart) says 8 s but whose data stops at about half, found by the
  frame index before any work ("INPUT is truncated: its data ends at ...");
- a missing input; a file without video; a scheduler that cannot be reached; a missing swiftvt-farm.
Each job runs once (module fixture `faults`); four tests look at it.
"""
import re

import pytest

from farm_testing import Farm, make_patterns_clip
from swiftvt_testing import run

FAULTS = {
    "truncated": r"^multipass-farm: error: .*short-data.mp4 is truncated: its data ends at [0-9.]+ s \([0-9]+ video "
                 r"frames\), its header says 8.000 s",
    "missing": r"^multipass-farm: error: .*nothing-here.mp4 does not exist",
    "novideo": r"^multipass-farm: error: .*audio.wav has no video stream",
    "noscheduler": r"^multipass-farm: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9",
    "notool": r"^multipass-farm: error: swiftvt-farm not found",
}


@pytest.fixture(scope="module")
def faults(farm_env, patterns_clip, tmp_path_factory):
    """name -> the job's FarmRun, each made on first use."""
    work = tmp_path_factory.mktemp("faults")
    done = {}

    def arguments(name):
        if name == "truncated":
            whole = make_patterns_clip(farm_env, work, "faststart.mp4", ["faststart=true"])
            data = whole.read_bytes()
            (work / "short-data.mp4").write_bytes(data[:len(data) * 55 // 100])
            return [work / "short-data.mp4", "--bitrate", 300, "--workers", 2, "--chunk-seconds", 2]
        if name == "missing":
            return [work / "nothing-here.mp4", "--bitrate", 300]
        if name == "novideo":
            run(["gst-launch-1.0", "-q", "audiotestsrc", "num-buffers=50", "!", "wavenc", "!", "filesink",
                 f"location={work / 'audio.wav'}"], farm_env, timeout=60)
            return [work / "audio.wav", "--bitrate", 300]
        if name == "noscheduler":
            return [patterns_clip, "--bitrate", 300, "--scheduler", "tcp://127.0.0.1:9"]
        return [patterns_clip, "--bitrate", 300, "--farm-tool", work / "no-such-tool"]

    def get(name):
        if name not in done:
            source, *rest = arguments(name)
            folder = work / name
            folder.mkdir()
            done[name] = Farm(farm_env, folder).run(source, work / f"{name}.mp4", *rest, timeout=180)
        return done[name]
    return get


@pytest.mark.parametrize("name", FAULTS)
def test_fault_exits_1(faults, name):
    result = faults(name)
    assert result.status == 1, result.log[-1000:]


@pytest.mark.parametrize("name", FAULTS)
def test_fault_says_what_is_wrong(faults, name):
    result = faults(name)
    assert re.search(FAULTS[name], result.log, re.M), result.log[-1000:]


@pytest.mark.parametrize("name", FAULTS)
def test_fault_writes_nothing_at_output(faults, name):
    assert not faults(name).output.exists()


@pytest.mark.parametrize("name", FAULTS)
def test_fault_leaves_no_temporary_file(faults, name):
    output = faults(name).output
    left = [p.name for p in output.parent.iterdir() if re.match(rf"^\.{re.escape(output.name)}\..*\.part$", p.name)]
    assert left == []
