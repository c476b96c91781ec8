"""h265parse-to-hvcc's caps carry every field h265parse (1.22) sets, with the same GType and the
same value (codec_data aside: both are hvcC records of the same parameter sets, written by
different code), over the H.265 corpus; hvc1 unless downstream asks for hev1."""
import re

import pytest

from h265parse_testing import stream_names
from parity_testing import negotiated_caps
from swiftvt_testing import run


def fields(env, description):
    return negotiated_caps(env, description)["fields"]


@pytest.mark.parametrize("name", stream_names())
def test_fields_types_and_values_are_h265parses(h265_env, stream, name):
    path = stream(name)
    theirs = fields(h265_env, f"filesrc location={path} ! h265parse ! video/x-h265,stream-format=hvc1,alignment=au")
    ours = fields(h265_env, f"filesrc location={path} ! h265parse-to-hvcc")
    assert theirs, "h265parse negotiated no caps"
    assert {n: t for n, (t, _) in ours.items()} == {n: t for n, (t, _) in theirs.items()}
    values = {n: v for n, (_, v) in ours.items() if n != "codec_data"}
    assert values == {n: v for n, (_, v) in theirs.items() if n != "codec_data"}


def hvcc(env, description):
    """The caps' codec_data read as an hvcC record (ISO/IEC 14496-15 8.3.3.1): the summary fields
    and the NAL unit arrays."""
    caps = negotiated_caps(env, description)["caps"]
    data = bytes.fromhex(re.search(r"codec_data=\(buffer\)([0-9a-f]+)", caps).group(1))
    record = {"configurationVersion": data[0], "general_profile_idc": data[1] & 0x1F, "general_level_idc": data[12],
              "chromaFormat": data[16] & 3, "bitDepthLumaMinus8": data[17] & 7, "bitDepthChromaMinus8": data[18] & 7,
              "lengthSizeMinusOne": data[21] & 3, "arrays": {}}
    position = 23
    for _ in range(data[22]):
        nal_type, count = data[position] & 0x3F, int.from_bytes(data[position + 1:position + 3], "big")
        position += 3
        units = []
        for _ in range(count):
            length = int.from_bytes(data[position:position + 2], "big")
            units.append(data[position + 2:position + 2 + length].hex())
            position += 2 + length
        record["arrays"][nal_type] = units
    assert position == len(data), "bytes after the last array"
    return record


@pytest.mark.parametrize("name", stream_names())
def test_codec_data_holds_h265parses_parameter_sets(h265_env, stream, name):
    path = stream(name)
    theirs = hvcc(h265_env, f"filesrc location={path} ! h265parse ! video/x-h265,stream-format=hvc1,alignment=au")
    ours = hvcc(h265_env, f"filesrc location={path} ! h265parse-to-hvcc")
    assert ours == theirs


def test_hvc1_by_default(h265_env, stream):
    ours = fields(h265_env, f"filesrc location={stream('main_ra_720p.265')} ! h265parse-to-hvcc")
    assert ours["stream-format"] == ["gchararray", "hvc1"]


def test_hev1_when_downstream_asks(h265_env, stream):
    ours = fields(h265_env, f"filesrc location={stream('main_ra_720p.265')} ! h265parse-to-hvcc "
                            "! video/x-h265,stream-format=hev1")
    assert ours["stream-format"] == ["gchararray", "hev1"]


def test_bit_depth_as_uint_negotiates(h265_env, stream):
    run(["gst-launch-1.0", "-q", "filesrc", f"location={stream('main10_ra_720p.265')}", "!", "h265parse-to-hvcc", "!",
         "video/x-h265,bit-depth-luma=(uint)10,tier=main,level=(string)3.1", "!", "fakesink"], h265_env, timeout=60)


@pytest.mark.parametrize("parser", ["h265parse-to-hvcc", "h265parse"])
def test_upstream_framerate_wins_over_the_vui(h265_env, stream, parser):
    """The sink caps' framerate (25/1) over the VUI's (30/1), for both parsers."""
    ours = fields(h265_env, f"filesrc location={stream('main_ra_720p.265')} ! h265parse "
                            "! video/x-h265,stream-format=byte-stream ! capssetter caps=video/x-h265,framerate=25/1 "
                            f"! {parser} ! video/x-h265,stream-format=hvc1")
    assert ours["framerate"] == ["GstFraction", "25/1"]
