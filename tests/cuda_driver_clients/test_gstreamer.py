"""GStreamer 1.22's nvcodec plugin on the software CUDA double: the plugin registers its H.264
decoders under the double (a fresh registry, scanned with the double first in LD_LIBRARY_PATH),
and nvh264sldec, the one built on GStreamer's own parser and GstH264Decoder (the reference client;
nvh264dec uses NVDEC's video parser, which the double does not implement), decodes every
undamaged progressive 8-bit 4:2:0 corpus stream exactly.

    /usr/bin/python3 -m pytest -q tests/cuda_driver_clients/test_gstreamer.py
"""
import shutil
from pathlib import Path

import pytest

from swiftvt_testing import require
from va_testing import DAMAGED_STREAMS, corpus_stream_names, field_order_and_pix_fmt

STREAMS = [name for name in corpus_stream_names() if name not in DAMAGED_STREAMS]
PLUGIN = Path("/lib/x86_64-linux-gnu/gstreamer-1.0/libgstnvcodec.so")


@pytest.fixture(scope="module")
def gstreamer(cuda):
    require(shutil.which("gst-launch-1.0") and shutil.which("gst-inspect-1.0"),
            "cuda-driver-clients: gst-launch-1.0 not found (Debian package gstreamer1.0-tools)")
    require(PLUGIN.is_file(), f"cuda-driver-clients: GStreamer's nvcodec plugin is not at {PLUGIN} "
            "(Debian package gstreamer1.0-plugins-bad)")
    return cuda


def test_the_plugin_registers_its_h264_decoders(gstreamer):
    run = gstreamer.run(["gst-inspect-1.0", "nvcodec"])
    assert run.status == 0, run.log[-1500:]
    assert "nvh264sldec" in run.log and "nvh264dec" in run.log, run.log[-1500:]
    inspect = gstreamer.run(["gst-inspect-1.0", "nvh264sldec"])
    assert "GstH264Decoder" in inspect.log and "Codec/Decoder/Video/Hardware" in inspect.log


@pytest.mark.parametrize("name", STREAMS)
def test_nvh264sldec_decodes_exactly(gstreamer, manifest, reference_md5, name):
    stream = manifest[name]
    field_order, pix_fmt = field_order_and_pix_fmt(stream.path, gstreamer.env)
    if field_order not in ("progressive", "unknown") or pix_fmt not in ("yuv420p", "yuvj420p"):
        pytest.skip(f"{name}: {field_order} {pix_fmt} (progressive 8-bit 4:2:0 only)")
    output = gstreamer.work / f"gst-{name}.yuv"
    run = gstreamer.run(["gst-launch-1.0", "-q", "filesrc", f"location={stream.path}", "!", "h264parse", "!",
                         "nvh264sldec", "!", "videoconvert", "!", "video/x-raw,format=I420", "!", "filesink",
                         f"location={output}"], output=output)
    output.unlink(missing_ok=True)
    assert run.status != 124, f"{name}: gst-launch-1.0 timed out"
    refused = run.lines("REFUSED")
    if refused:
        assert run.status != 0, f"{name}: refused by the double but the pipeline succeeded"
        pytest.skip(f"{name}: refused by the double: {refused[0]}")
    assert run.status == 0, f"{name}: exit {run.status}: {run.log[-1500:]}"
    assert run.lines("VALIDATION") == []
    assert run.pictures >= stream.frames
    assert run.md5 == reference_md5(name, run.md5)
    assert run.leaks == [], run.leaks
