"""Autoplugging (issue 15; was tests/autoplug.sh 2): with avdec_h264 and openh264dec ranked out,
playbin, playbin3, decodebin, decodebin3, uridecodebin and gst-play-1.0 decode a corpus stream with
the reference MD5 (over I420 pictures), through vtdec without a device and through vtdec_hw on the
software VA driver; gst-discoverer-1.0 reports the H.264 stream without an error. Each app runs once
per mode (cached) and two tests look at it."""
import hashlib
import re
import subprocess

import pytest

from autoplug_testing import EXPECTED_DECODER, Decoded, decode

APPS = ["playbin", "playbin3", "decodebin", "decodebin3", "uridecodebin", "gst-play-1.0"]
_decoded = {}


@pytest.fixture
def decoded(request, mode, mode_env, stream, tmp_path):
    app = request.param
    key = (mode, app)
    if key not in _decoded:
        _decoded[key] = play_app(mode_env, app, stream, tmp_path)
    return _decoded[key]


def play_app(env, app, stream, work):
    if app == "gst-play-1.0":
        return play(env, stream, work)
    return decode(env, app, stream)


def play(env, stream, work):
    """gst-play-1.0 into a file of I420 pictures; its decoder from vtdec's INFO log (gst-play-1.0
    names no element)."""
    yuv = work / "play.yuv"
    try:
        result = subprocess.run(["gst-play-1.0", "--no-interactive",
                                 f"--videosink=videoconvert ! video/x-raw,format=I420 ! filesink location={yuv}",
                                 "--audiosink=fakesink", str(stream)],
                                env=dict(env, GST_DEBUG="vtdec:4", GST_DEBUG_NO_COLOR="1"), capture_output=True,
                                text=True, timeout=120, stdin=subprocess.DEVNULL)
        log = result.stdout + result.stderr
    except subprocess.TimeoutExpired:
        log = ""
    decoder = ("vtdec_hw" if re.search(r"<swiftvtdechardware\d", log)
               else "vtdec" if re.search(r"<swiftvtdec\d", log) else "none")
    data = yuv.read_bytes() if yuv.exists() else b""
    return Decoded([decoder], len(data) // 38016, hashlib.md5(data).hexdigest(), 0, "", log[-500:])


@pytest.mark.parametrize("decoded", APPS, indirect=True)
def test_app_autoplugs_the_expected_decoder(mode, decoded):
    assert decoded.decoders == [EXPECTED_DECODER[mode]], decoded.line


@pytest.mark.parametrize("decoded", APPS, indirect=True)
def test_app_decodes_the_reference_md5(decoded, reference_md5):
    assert decoded.md5 == reference_md5, f"{decoded.frames} frames: {decoded.line}"


def test_discoverer_reports_the_h264_stream_without_an_error(mode_env, stream):
    result = subprocess.run(["gst-discoverer-1.0", str(stream)],
                            env=dict(mode_env, GST_DEBUG="vtdec:4", GST_DEBUG_NO_COLOR="1"),
                            capture_output=True, text=True, timeout=120)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-2000:]
    assert "video #0: H.264" in log, log[-2000:]
    assert "error" not in log.lower(), [line for line in log.splitlines() if "error" in line.lower()][:3]
