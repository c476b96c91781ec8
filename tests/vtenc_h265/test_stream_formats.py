"""vtenc_h265's three stream formats (issue 37 item 2): hvc1 by default; hev1 (hvcC too, and the
parameter sets in band before every IRAP picture, ISO/IEC 14496-15 8.4.1) and byte-stream (Annex B
with VPS/SPS/PPS before every IRAP picture, no codec_data) when downstream asks; each parses with
h265parse and decodes with avdec_h265."""
import re

import pytest

from parity_testing import stream_fields
from vtenc_h265_testing import caps_fields

SOURCE = "videotestsrc num-buffers=30 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"


def test_hvc1_is_the_default(h265_env):
    fields = caps_fields(h265_env, f"{SOURCE} ! vtenc_h265")
    assert fields["stream-format"] == "hvc1" and fields["codec_data"], fields


@pytest.mark.parametrize("stream_format", ["hev1", "byte-stream"])
def test_parses_with_h265parse_and_decodes(runner, work, stream_format):
    result = runner(f"{SOURCE} ! vtenc_h265 ! video/x-h265,stream-format={stream_format} ! h265parse ! "
                    f"avdec_h265 ! fakesink name=sink", timeout=120, expect="eos")
    assert result.status == 0 and not result.errors and not result.warnings, result.log[-3000:]


def test_byte_stream_has_no_codec_data(h265_env):
    fields = caps_fields(h265_env, f"{SOURCE} ! vtenc_h265 ! video/x-h265,stream-format=byte-stream")
    assert fields["stream-format"] == "byte-stream" and not fields["codec_data"], fields


def test_byte_stream_repeats_the_parameter_sets_before_every_irap(runner, work, h265_env):
    """30 frames with a key frame every 10: three IRAP pictures, each led by a VPS, an SPS and a PPS
    (NAL unit types 32, 33, 34, Table 7-1)."""
    path = work / "keyint.h265"
    runner.eos(f"{SOURCE} ! vtenc_h265 max-keyframe-interval=10 ! video/x-h265,stream-format=byte-stream ! "
               f"filesink location={path}", timeout=120)
    data = path.read_bytes()
    types = [data[m.end()] >> 1 & 0x3F for m in re.finditer(b"\x00\x00\x01", data) if m.end() < len(data)]
    irap = [t for t in types if 16 <= t <= 23]
    assert len(irap) == 3, types
    for index, kind in enumerate(types):
        if 16 <= kind <= 23 and (index == 0 or not 16 <= types[index - 1] <= 23):
            assert types[index - 3:index] == [32, 33, 34], (index, types)
    assert stream_fields(h265_env, path, "nb_read_frames") == "30"


def test_hev1_in_mp4_has_the_hev1_sample_entry_and_decodes(runner, work, h265_env):
    path = work / "hev1.mp4"
    runner.eos(f"{SOURCE} ! vtenc_h265 ! video/x-h265,stream-format=hev1 ! mp4mux ! filesink location={path}",
               timeout=120)
    assert stream_fields(h265_env, path, "codec_tag_string,nb_read_frames") == "hev1,30"


def array_completeness(mp4):
    """(NAL unit type, array_completeness) of each array of the first hvcC box in `mp4` (ISO/IEC
    14496-15 8.3.3.1.2: 22 bytes of header, then numOfArrays and per array one byte of
    array_completeness(1) reserved(1) NAL_unit_type(6), numNalus(16), each unit's length and bytes)."""
    data = mp4.read_bytes()
    at = data.index(b"hvcC") + 4
    offset, arrays = at + 23, []
    for _ in range(data[at + 22]):
        head, count = data[offset], int.from_bytes(data[offset + 1:offset + 3], "big")
        arrays.append((head & 0x3F, head >> 7))
        offset += 3
        for _ in range(count):
            offset += 2 + int.from_bytes(data[offset:offset + 2], "big")
    return arrays


@pytest.mark.parametrize("stream_format, complete", [("hvc1", 1), ("hev1", 0)])
def test_hvcc_array_completeness_says_where_the_parameter_sets_are(runner, work, stream_format, complete):
    """hvc1: every VPS/SPS/PPS in hvcC only (array_completeness 1); hev1: more may come in band (0)."""
    path = work / f"completeness-{stream_format}.mp4"
    runner.eos(f"{SOURCE} ! vtenc_h265 ! video/x-h265,stream-format={stream_format} ! mp4mux ! "
               f"filesink location={path}", timeout=120)
    assert array_completeness(path) == [(32, complete), (33, complete), (34, complete)]
