"""vtdec inside existing applications (was tests/vtdec-in-apps.sh): with
GST_PLUGIN_FEATURE_RANK=vtdec:MAX, decodebin and playbin (gst-launch-1.0 -v, as users run them),
gst-play-1.0 and a Python GI program (tests/lib/vtdec_playbin.py) pick vtdec for an MP4 (60 frames,
B-frames, made at test time) and play it to the end."""
import json
import subprocess

import pytest

from swiftvt_testing import ROOT, SYSTEM_PYTHON, run


@pytest.fixture(scope="module")
def movie(plugin_env, tmp_path_factory):
    path = tmp_path_factory.mktemp("apps") / "clip.mp4"
    run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=60", "!",
         "video/x-raw,format=I420,width=320,height=240,framerate=30/1", "!", "x264enc", "bframes=2", "!",
         "video/x-h264,stream-format=byte-stream", "!", "h264parse-to-avcc", "!", "mp4mux", "!", "filesink",
         f"location={path}"], plugin_env, timeout=60)
    return path


@pytest.fixture(scope="module")
def apps_env(plugin_env):
    return dict(plugin_env, GST_PLUGIN_FEATURE_RANK="vtdec:MAX")


LAUNCHES = {
    "decodebin": lambda movie: ["filesrc", f"location={movie}", "!", "decodebin", "!", "videoconvert", "!", "fakesink"],
    "playbin": lambda movie: ["playbin", f"uri=file://{movie}", "video-sink=fakesink", "audio-sink=fakesink"],
}


@pytest.fixture(scope="module")
def launched(apps_env, movie):
    done = {}

    def get(name):
        if name not in done:
            result = subprocess.run(["gst-launch-1.0", "-v", *LAUNCHES[name](movie)], env=apps_env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
            done[name] = (result.returncode, result.stdout)
        return done[name]
    return get


@pytest.mark.parametrize("name", LAUNCHES)
def test_gst_launch_succeeds(launched, name):
    status, log = launched(name)
    assert status == 0, log[-2000:]


@pytest.mark.parametrize("name", LAUNCHES)
def test_gst_launch_plays_to_the_end(launched, name):
    assert "Got EOS" in launched(name)[1], f"{name} did not play to the end"


@pytest.mark.parametrize("name", LAUNCHES)
def test_gst_launch_uses_vtdec(launched, name):
    assert "SwiftVTDec" in launched(name)[1], f"{name} did not use vtdec"


@pytest.fixture(scope="module")
def played(apps_env, movie):
    """gst-play-1.0 with vtdec's INFO log: (exit status, log)."""
    result = subprocess.run(["gst-play-1.0", "--no-interactive", "--videosink=fakesink", "--audiosink=fakesink",
                             str(movie)], env=dict(apps_env, GST_DEBUG="vtdec:4"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=60)
    return result.returncode, result.stdout


def test_gst_play_succeeds(played):
    assert played[0] == 0, played[1][-2000:]


def test_gst_play_uses_vtdec(played):
    """(gst-play-1.0 names no element; vtdec's log lines say it ran.)"""
    assert "vtdec" in played[1], "gst-play-1.0 did not use vtdec"


@pytest.fixture(scope="module")
def python_app(apps_env, movie):
    return json.loads(run([SYSTEM_PYTHON, ROOT / "tests" / "lib" / "vtdec_playbin.py", movie], apps_env, timeout=90))


def test_python_playbin_plays_to_the_end(python_app):
    assert python_app["ended"] == "eos", python_app


def test_python_playbin_chooses_vtdec(python_app):
    assert "vtdec" in python_app["factories"], python_app["factories"]


def test_python_playbin_gets_every_frame(python_app):
    assert python_app["frames"] == 60
