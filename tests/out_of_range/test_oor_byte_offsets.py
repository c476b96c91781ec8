"""Upstream byte offsets at the top of the 64-bit range into h264parse-to-avcc (GstBaseParse hands
upstream's offsets to the element in each frame): every access unit, then EOS
(parser_byte_offsets.py feeds the stream from an appsrc)."""
import json
from pathlib import Path

import pytest

from swiftvt_testing import SYSTEM_PYTHON, run

HELPER = Path(__file__).with_name("parser_byte_offsets.py")


@pytest.fixture(scope="module")
def fed(plugin_env, work):
    stream = work / "stream.h264"
    run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=20", "!",
         "video/x-raw,format=I420,width=320,height=240,framerate=30/1", "!", "x264enc", "speed-preset=ultrafast", "!",
         "video/x-h264,stream-format=byte-stream", "!", "filesink", f"location={stream}"], plugin_env)
    return json.loads(run([SYSTEM_PYTHON, HELPER, stream], plugin_env, timeout=120))


def test_byte_offsets_at_2_64_reach_eos(fed):
    assert fed["ended"] == "eos", fed


def test_byte_offsets_at_2_64_give_every_access_unit(fed):
    assert fed["access_units"] == 20, fed
