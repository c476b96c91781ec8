"""Output formats by their GStreamer names: each corpus profile's native format negotiated without a
capsfilter (I420, I420_10LE for Main 10, I422_10LE, Y444); Y444_10LE for a Main 4:4:4 10 stream made
here with x265enc (avdec_h265's pictures); NV12 when downstream asks for it (avdec_h265 ! videoconvert's
pictures); the latency is the stream's reorder depth (sps_max_num_reorder_pics) plus a frame per extra
frame thread, the rule of the H.264 path."""
import hashlib
import re
import subprocess

import pytest

from vtdec_h265_testing import FORMATS, gst_launch_raw, planes_per_frame, unpadded, vtdec_output_format

NATIVE = {
    "main_ra_720p.265": "I420",
    "main10_ra_720p.265": "I420_10LE",
    "main422_10_cif.265": "I422_10LE",
    "main444_8_cif.265": "Y444",
}


@pytest.mark.parametrize("name", NATIVE)
def test_native_format_is_negotiated(plugin_env, h265_corpus, name):
    folder, _ = h265_corpus
    assert vtdec_output_format(plugin_env, f"filesrc location={folder / name} ! h265parse ! vtdec") == NATIVE[name]


@pytest.fixture(scope="module")
def main444_10(runner, tmp_path_factory):
    path = tmp_path_factory.mktemp("formats") / "main444-10.265"
    runner(f"videotestsrc num-buffers=10 pattern=ball ! video/x-raw,format=Y444_10LE,width=320,height=240 ! x265enc "
           f"! video/x-h265,stream-format=byte-stream ! filesink location={path}", timeout=120, expect="eos")
    return path


def test_main444_10_decodes_to_y444_10le_as_avdec_h265(plugin_env, main444_10):
    assert vtdec_output_format(plugin_env, f"filesrc location={main444_10} ! h265parse ! vtdec") == "Y444_10LE"
    ours = gst_launch_raw(plugin_env, f"filesrc location={main444_10} ! h265parse ! vtdec "
                                      "! video/x-raw,format=Y444_10LE")
    peer = gst_launch_raw(plugin_env, f"filesrc location={main444_10} ! h265parse ! avdec_h265 "
                                      "! video/x-raw,format=Y444_10LE")
    assert len(peer) == 10 * 320 * 240 * 3 * 2
    assert hashlib.md5(ours).hexdigest() == hashlib.md5(peer).hexdigest()


def test_nv12_when_downstream_asks(plugin_env, h265_corpus):
    folder, _ = h265_corpus
    source = f"filesrc location={folder / 'main_ld_cif_slices.265'} ! h265parse"
    ours = gst_launch_raw(plugin_env, f"{source} ! vtdec ! video/x-raw,format=NV12")
    peer = gst_launch_raw(plugin_env, f"{source} ! avdec_h265 ! videoconvert ! video/x-raw,format=NV12")
    assert len(ours) == 60 * 352 * 288 * 3 // 2
    assert hashlib.md5(ours).hexdigest() == hashlib.md5(peer).hexdigest()


@pytest.mark.parametrize("threads, expected", [(1, 2), (3, 4)])
def test_latency_is_the_reorder_depth_plus_frame_threads(plugin_env, h265_corpus, threads, expected):
    """main_bpyramid_refs5.265: sps_max_num_reorder_pics 2, 30 frames/s: 2 frames (66.7 ms) with one
    thread, a frame more per extra frame thread."""
    folder, _ = h265_corpus
    result = subprocess.run(["gst-launch-1.0", "filesrc", f"location={folder / 'main_bpyramid_refs5.265'}", "!",
                             "h265parse", "!", "vtdec", f"max-threads={threads}", "!", "fakesink"],
                            env=dict(plugin_env, GST_DEBUG="vtdec:5", GST_DEBUG_NO_COLOR="1"), capture_output=True,
                            text=True, timeout=120)
    frames = re.findall(r"latency (\d+) frames", result.stdout + result.stderr)
    assert frames and int(frames[0]) == expected, frames


@pytest.mark.parametrize("fmt, width, height", [("Y444", 345, 281), ("I420_10LE", 346, 282)])
def test_odd_conformance_window_is_exact(plugin_env, runner, tmp_path, fmt, width, height):
    """x265 codes 352x288 and crops the rest with the conformance window: 7 columns and 7 rows in
    4:4:4 (offsets in luma samples, odd), 3 chroma columns and rows in 4:2:0 10-bit (an odd chroma
    offset): the same pictures as avdec_h265."""
    path = tmp_path / f"odd-{fmt}.265"
    caps = f"video/x-raw,format={fmt},width={width},height={height}"
    runner(f"videotestsrc num-buffers=5 pattern=ball ! {caps} ! x265enc ! video/x-h265,stream-format=byte-stream "
           f"! filesink location={path}", timeout=120, expect="eos")
    ours = gst_launch_raw(plugin_env, f"filesrc location={path} ! h265parse ! vtdec ! {caps}", timeout=60)
    peer = gst_launch_raw(plugin_env, f"filesrc location={path} ! h265parse ! avdec_h265 ! {caps}", timeout=60)
    # The planes without the rows' padding, which avdec_h265 leaves uninitialized.
    _, bytes_per_sample, sub_x, sub_y = FORMATS["yuv444p" if fmt == "Y444" else "yuv420p10le"]
    planes = planes_per_frame(width, height, bytes_per_sample, sub_x, sub_y)
    (ours, ours_frames), (peer, peer_frames) = unpadded(ours, planes), unpadded(peer, planes)
    assert peer_frames == 5 and (ours_frames, hashlib.md5(ours).hexdigest()) == (5, hashlib.md5(peer).hexdigest())
