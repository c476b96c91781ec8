"""Issue 32 row 17, what gst-inspect-1.0 shows: each element's `hardware` enumeration names its own
software backend (the decoders libavcodec and not x264, the encoders x264, and x265 for H.265, and
not libavcodec);
vtmultipasssink's description says which inherited GstBaseSink properties have no effect, and they
have none: with them set the sink writes the same H.264 stream, every frame. Read as data through
Python GI (inspect_element), what gst-inspect-1.0 prints from."""
import pytest

from parity_testing import decoded_frames, inspect_element, md5_of
from swiftvt_testing import run

INHERITED = ("max-bitrate", "throttle-time", "render-delay", "processing-deadline")


ENCODERS = "x264; x265 for H.265"


@pytest.mark.parametrize("element, named, other", [
    ("vtdec", "libavcodec", "x264"), ("vtdec_hw", "libavcodec", "x264"), ("vtenc", ENCODERS, "libavcodec"),
    ("vtenc_h264", ENCODERS, "libavcodec"), ("vtenc_h264_hw", ENCODERS, "libavcodec"),
    ("vtenc_h265", ENCODERS, "libavcodec"), ("vtmultipasssink", ENCODERS, "libavcodec")])
def test_hardware_enumeration_names_its_software_backend(misc_env, element, named, other):
    hardware = inspect_element(misc_env, element)["properties"]["hardware"]
    labels = "\n".join([hardware["blurb"]] + [f"({v['value']}): {v['nick']} - {v['name']}" for v in hardware["enum"]])
    assert f"software ({named})" in labels, labels
    assert other.lower() not in labels.lower(), labels


def test_vtmultipasssink_description_says_inherited_properties_have_no_effect(misc_env):
    description = inspect_element(misc_env, "vtmultipasssink")["description"]
    missing = [p for p in INHERITED if p not in description]
    assert not missing, f"the description does not name {missing}: {description}"
    assert "have no effect" in description, description


@pytest.fixture(scope="module")
def plain_and_set(misc_env, clip_source, tmp_path_factory):
    """vtmultipasssink into .h264 without and with the inherited properties set (sync stays false,
    as for filesink)."""
    work = tmp_path_factory.mktemp("r17")
    plain, changed = work / "r17-plain.h264", work / "r17-set.h264"
    source = clip_source.split()
    run(["gst-launch-1.0", "-q", *source, "!", "vtmultipasssink", f"location={plain}", "bitrate=150"], misc_env,
        timeout=300, check=False)
    run(["gst-launch-1.0", "-q", *source, "!", "vtmultipasssink", f"location={changed}", "bitrate=150",
         "max-bitrate=100000", "throttle-time=100000000", "render-delay=1000000000", "processing-deadline=1000000000"],
        misc_env, timeout=300, check=False)
    return plain, changed


def test_inherited_properties_set_give_the_same_stream(plain_and_set):
    plain, changed = plain_and_set
    assert plain.is_file() and plain.stat().st_size > 0, "no stream without the properties set"
    assert md5_of(plain) == md5_of(changed), "with the inherited properties set the stream differs"


def test_inherited_properties_set_give_every_frame(misc_env, plain_and_set):
    _, changed = plain_and_set
    frames = decoded_frames(misc_env, changed)
    assert frames == 150
