"""Lossless round trips through `vtenc hardware=require` (was section 1 of tests/vtenc-va.sh): on the
corpus raw clip (320x192, 9 frames), the 300-frame 720p clip and a 152x100 clip (cropping: 160x112
coded), IDR-only, IPPP and IBBP (reordering) decode with avdec_h264 to the source MD5, with key frames
where the key-frame interval puts them and where force-key-unit events ask; the driver validates
every picture's parameters against SwiftVT's packed headers (no VALIDATION line) and nothing is
leaked. One test per run and property."""
import pytest

from va_client_testing import clean, decoded_md5, driver_complaint, expected_key_frames, key_frames

# name: (source, key-frame interval, forced frames, structure, vtenc properties, driver variables)
RUNS = {
    "cisco-idr-only": ("cisco", 1, (), "IDR", ["max-keyframe-interval=1"], {}),
    "cisco-ippp": ("cisco", 4, (), "IPPP", ["allow-frame-reordering=false", "max-keyframe-interval=4"], {}),
    "cisco-ibbp": ("cisco", 4, (), "IBBP", ["max-keyframe-interval=4"], {}),
    "cisco-ibbp-forced": ("cisco", 0, (2, 7), "IBBP", [], {}),
    # A device that takes no packed headers writes its own SPS, PPS and slice headers from the VA
    # parameters: the stream is described by the device's parameter sets, still lossless.
    "cisco-device-headers": ("cisco", 4, (), "IBBP", ["max-keyframe-interval=4"], {"SWIFTVT_VA_ENCODE_PACKED": "none"}),
    "small-idr-only": ("small", 1, (), "IDR", ["max-keyframe-interval=1"], {}),
    "small-ippp": ("small", 30, (), "IPPP", ["allow-frame-reordering=false", "max-keyframe-interval=30"], {}),
    "small-ibbp-forced": ("small", 24, (7, 40), "IBBP", ["max-keyframe-interval=24"], {}),
    "hd-idr-only": ("hd", 1, (), "IDR", ["max-keyframe-interval=1"], {}),
    "hd-ippp": ("hd", 60, (), "IPPP", ["allow-frame-reordering=false", "max-keyframe-interval=60"], {}),
    "hd-ibbp-forced": ("hd", 60, (45, 100), "IBBP", ["max-keyframe-interval=60"], {}),
}


@pytest.fixture(scope="module")
def encoded(vtenc, sources, encoder_device):
    def get(name):
        source, _, forced, _, props, variables = RUNS[name]
        return vtenc.encode(name, sources[source], "hardware=require", *props, force_key_units=forced, **variables)
    return get


@pytest.mark.parametrize("name", RUNS)
def test_encodes_on_the_device(encoded, name):
    run = encoded(name)
    assert run.ok, run.why()
    assert run.backend.startswith("VA-API"), f"active-backend {run.backend!r}"


@pytest.mark.parametrize("name", RUNS)
def test_decodes_to_the_source(encoded, sources, va_env, name):
    assert decoded_md5(va_env, encoded(name).output) == sources[RUNS[name][0]].md5


@pytest.mark.parametrize("name", RUNS)
def test_key_frames_where_asked(encoded, sources, va_env, name):
    source, interval, forced = RUNS[name][:3]
    assert key_frames(va_env, encoded(name).output) == expected_key_frames(sources[source].frames, interval, forced)


@pytest.mark.parametrize("name", RUNS)
def test_picture_structure(encoded, name):
    b_pictures = encoded(name).params.count("type=B")
    if RUNS[name][3] == "IBBP":
        assert b_pictures > 0, "no B picture"
    else:
        assert b_pictures == 0, f"{b_pictures} B pictures"


@pytest.mark.parametrize("name", RUNS)
def test_driver_report_clean(encoded, name):
    assert clean(encoded(name)), driver_complaint(encoded(name))


def test_device_headers_when_no_packed_header(encoded):
    """The config asked for no packed header, so the device's own SPS/PPS describe the stream."""
    params = encoded("cisco-device-headers").params
    assert params.count(r"^encconfig .*packed=(0|0x0)( |$)") > 0, params.first(r"^encconfig")


def test_cropping_in_the_sps(encoded):
    """152x100 is coded as 10x7 macroblocks with frame_crop_right_offset 4, frame_crop_bottom_offset 6."""
    params = encoded("small-ippp").params
    assert params.count("mbs=10x7 frame_cropping=1 crop=0,4,0,6") > 0, params.first("^encseq")
