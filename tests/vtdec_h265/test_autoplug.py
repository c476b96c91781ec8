"""Autoplugging an H.265 MP4 (hvc1, made here by `videotestsrc ! x265enc ! h265parse ! mp4mux`): with
avdec_h265 ranked out (the H.264 suite ranks avdec_h264 out the same way: vtdec is secondary, as for
H.264), decodebin and playbin pick vtdec and decode avdec_h265's pictures; gst-discoverer-1.0 reports
the H.265 stream without an error, through vtdec. vtdec registers for video/x-h265 at the rank it has for H.264;
vtdec_hw, whose VA backend decodes H.264 only, offers no H.265 caps."""
import re
import subprocess

import pytest

from autoplug_testing import decode, factories

RANKS = "avdec_h265:NONE,libde265dec:NONE,nvh265dec:NONE,vah265dec:NONE,vaapih265dec:NONE"


@pytest.fixture(scope="module")
def movie(plugin_env, runner, tmp_path_factory):
    path = tmp_path_factory.mktemp("autoplug") / "clip-hvc1.mp4"
    runner(f"videotestsrc num-buffers=30 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! x265enc "
           f"! h265parse ! video/x-h265,stream-format=hvc1 ! mp4mux ! filesink location={path}",
           timeout=120, expect="eos")
    return path


@pytest.fixture(scope="module")
def ranked_env(no_device_env):
    return dict(no_device_env, GST_PLUGIN_FEATURE_RANK=RANKS)


@pytest.fixture(scope="module")
def reference(no_device_env, movie):
    peer = decode(dict(no_device_env, GST_PLUGIN_FEATURE_RANK="vtdec:NONE"), "decodebin", movie)
    assert peer.decoders == ["avdec_h265"] and peer.frames == 30, peer.line
    return peer


_decoded = {}


@pytest.fixture
def autoplugged(request, ranked_env, movie):
    app = request.param
    if app not in _decoded:
        _decoded[app] = decode(ranked_env, app, movie)
    return _decoded[app]


@pytest.mark.parametrize("autoplugged", ["decodebin", "playbin"], indirect=True)
def test_app_picks_vtdec(autoplugged):
    assert autoplugged.decoders == ["vtdec"], autoplugged.line


@pytest.mark.parametrize("autoplugged", ["decodebin", "playbin"], indirect=True)
def test_app_decodes_avdec_h265s_pictures(autoplugged, reference):
    assert (autoplugged.frames, autoplugged.md5) == (reference.frames, reference.md5), autoplugged.line


def test_discoverer_reports_the_h265_stream_without_an_error(ranked_env, movie):
    result = subprocess.run(["gst-discoverer-1.0", str(movie)],
                            env=dict(ranked_env, GST_DEBUG="vtdec:4", GST_DEBUG_NO_COLOR="1"),
                            capture_output=True, text=True, timeout=120)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-2000:]
    assert re.search(r"video #\d+: H.265", log), log[-2000:]
    assert "<swiftvtdec" in log, "the discoverer did not plug vtdec"
    assert "error" not in log.lower(), [line for line in log.splitlines() if "error" in line.lower()][:3]


def test_vtdec_takes_h265_at_its_h264_rank(no_device_env):
    vtdec = factories(no_device_env, "vtdec")["vtdec"]
    assert "video/x-h265" in vtdec["templates"]["sink"] and "video/x-h264" in vtdec["templates"]["sink"]
    assert vtdec["rank"] == 128  # secondary, as for H.264


def test_vtdec_hw_offers_no_h265(no_device_env):
    assert "video/x-h265" not in factories(no_device_env, "vtdec_hw")["vtdec_hw"]["templates"]["sink"]
