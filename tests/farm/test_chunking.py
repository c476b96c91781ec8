"""How the farm job cuts its chunks (was tests/farm.sh: the default chunking, and case f).

- The default chunking: no more chunks than the 10-s GOPs vtmultipasssink would code (each chunk
  starts with an IDR picture), 4 per worker at most, a multiple of the workers above that;
- a clip whose last chunk's scene-cut window reaches past its last key frame: 2 s with B-frames
  (the container's edit list shifts its time stamps), key frames at 0 and 1 s, chunks of 1 s. A
  KEY_UNIT|SNAP_AFTER seek there lands on the last key frame again and once came back 1 ns after
  it, which made the scene-cut search step forward 1 ns at a time for ever.
"""
import importlib.util
import re
import sys

import pytest

from farm_testing import FARM_JOB, stream_field
from swiftvt_testing import run


@pytest.fixture(scope="module")
def job_module():
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location("multipass_farm", FARM_JOB)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seconds, workers, expected", [
    (8, 2, 1), (10, 2, 1), (301 / 30, 2, 2), (15, 2, 2), (3284 / 30, 2, 8), (60, 8, 6), (7200, 8, 32)],
    ids=["8s-2w", "10s-2w", "10.03s-2w", "15s-2w", "109.47s-2w", "60s-8w", "7200s-8w"])
def test_default_chunk_count(job_module, gop_seconds, seconds, workers, expected):
    assert round(seconds / job_module.default_chunk_seconds(seconds, workers, gop_seconds)) == expected


@pytest.fixture(scope="module")
def gop_seconds(farm_env):
    """The one-host GOP as swiftvt-farm reports it (the Swift rule the job plans with)."""
    from swiftvt_farm.worker import farm_tool_defaults
    return farm_tool_defaults(farm_env["SWIFTVT_FARM_TOOL"])["gop-seconds"]


def test_gop_from_the_encoder(gop_seconds):
    """vtmultipasssink's automatic GOP (MultiPassGOP.automaticDuration), read from swiftvt-farm."""
    assert gop_seconds == 10.0


@pytest.fixture(scope="module")
def bframes_run(farm_env, tmp_path_factory):
    from farm_testing import Farm
    work = tmp_path_factory.mktemp("bframes")
    clip = work / "bframes.mp4"
    run(["gst-launch-1.0", "-q", "videotestsrc", "pattern=ball", "num-buffers=60", "!",
         "video/x-raw,format=I420,width=320,height=240,framerate=30/1", "!", "x264enc", "key-int-max=30", "bframes=2",
         "speed-preset=fast", "!", "mp4mux", "!", "filesink", f"location={clip}"], farm_env, timeout=60)
    return Farm(farm_env, work).run(clip, work / "out.mp4", "--bitrate", 300, "--workers", 2, "--chunk-seconds", 1,
                                    timeout=180)


def test_bframes_last_chunk_past_the_last_key_frame_ends(bframes_run):
    assert bframes_run.status == 0, f"the job failed:\n{bframes_run.log[-3000:]}"


def test_bframes_clip_is_cut_in_2_chunks(bframes_run):
    assert ", 2 chunks, " in bframes_run.log, "\n".join(re.findall(r"^multipass-farm.*", bframes_run.log, re.M))


def test_bframes_output_has_every_frame(farm_env, bframes_run):
    assert bframes_run.status == 0
    assert stream_field(farm_env, bframes_run.output, "nb_read_frames", "-count_frames") == "60"
