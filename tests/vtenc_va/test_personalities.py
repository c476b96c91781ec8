"""Driver personalities (was section 7 of tests/vtenc-va.sh; tests/va-driver/README.md "Driver
personalities"), each set explicitly for its run: iHD refuses CABAC at vaEndPicture and gives image
IDs from 0, Mesa ignores CABAC (CAVLC slices under a CABAC PPS: caught in the first picture's slice
data and coded again), Mesa's SPS without VUI describes the stream in avcC and in band alike, Mesa's
quality level is a bit-field, advertised rate-control modes refused at context creation."""
import re
import subprocess

import pytest

from swiftvt_testing import swiftvt_errors
from va_client_testing import clean, decoded_md5, driver_complaint, first_sps, trace_header_field


@pytest.fixture(scope="module")
def personality_run(vtenc, sources, encoder_device):
    def get(name, personality, *props, **variables):
        return vtenc.encode(name, sources["cisco"], "hardware=require", *props, SWIFTVT_VA_PERSONALITY=personality,
                            **variables)
    return get


def test_ihd_derive_refused_uploads_through_put_image(personality_run, sources, va_env):
    """Uploads without vaDeriveImage (refused) under iHD's image IDs, which start at 0: the picture
    goes through vaCreateImage + vaPutImage, and no image is destroyed that the driver never gave."""
    run = personality_run("ihd-no-derive", "ihd", "entropy-mode=cavlc", "max-keyframe-interval=4",
                          SWIFTVT_VA_NO_DERIVE=1)
    assert run.ok, run.why()
    assert decoded_md5(va_env, run.output) == sources["cisco"].md5
    assert clean(run), driver_complaint(run)


def test_ihd_cabac_refused_at_end_picture_coded_again_in_cavlc(personality_run, sources, va_env):
    run = personality_run("ihd-cabac", "ihd", "max-keyframe-interval=4")
    assert run.ok, run.why()
    assert decoded_md5(va_env, run.output) == sources["cisco"].md5
    assert run.report.count("REFUSED.*CABAC.*at vaEndPicture") > 0, run.report
    assert run.params.count(r"^encpic .*entropy=cabac") == 0
    assert clean(run), driver_complaint(run)


def test_ihd_constant_qp_refused_on_both_entrypoints(personality_run):
    """iHD with constant QP refused on every entrypoint: EncSlice, then EncSliceLP (CQP only) are tried."""
    run = personality_run("ihd-refuses-cqp", "ihd", SWIFTVT_VA_CONTEXT_REFUSES_RC="cqp")
    errors = swiftvt_errors(run.result)
    assert len(errors) == 1, run.why()
    assert ("advertises CQP rate control but refused a context with it on VAEntrypointEncSlice and "
            "VAEntrypointEncSliceLP") in errors[0]["message"], errors[0]["message"]
    assert run.params.count(r"^encconfig .*rc=cqp") == 2


@pytest.fixture(scope="module")
def mesa_cabac(personality_run):
    return personality_run("mesa-cabac", "mesa", "max-keyframe-interval=4")


def test_mesa_cabac_ignored_caught_in_the_first_picture(mesa_cabac, sources, va_env):
    """Mesa stores CABAC and writes CAVLC slices: seen in the first picture's slice data, which is
    coded again in CAVLC (1 CABAC picture, then 9 CAVLC ones), lossless."""
    assert mesa_cabac.ok, mesa_cabac.why()
    entropies = [re.search(r"entropy=(\w+)", line).group(1) for line in mesa_cabac.params.lines(r"^encpic .*entropy=")]
    assert entropies == ["cabac"] + ["cavlc"] * 9, entropies
    assert decoded_md5(va_env, mesa_cabac.output) == sources["cisco"].md5
    assert clean(mesa_cabac), driver_complaint(mesa_cabac)


def test_mesa_sps_without_vui_in_band_and_in_avcc(vtenc, sources, mesa_cabac, va_env):
    """Mesa's SPS has no VUI: it describes the stream in band and in avcC alike, with a warning."""
    output = vtenc.work / "mesa-vui.mp4"
    result, _, _ = vtenc.pipeline("mesa-vui", *sources["cisco"].pipeline, "!", "vtenc", "hardware=require",
                                  "entropy-mode=cavlc", "!", "video/x-h264,stream-format=avc", "!", "mp4mux", "!",
                                  "filesink", f"location={output}", SWIFTVT_VA_PERSONALITY="mesa")
    assert result.ended_by == "eos", result.log[-3000:]
    from_avcc = vtenc.work / "mesa-vui-avcc.h264"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(output), "-c", "copy", "-bsf:v", "h264_mp4toannexb",
                    str(from_avcc)], env=va_env, check=True, timeout=120)
    in_band = first_sps(mesa_cabac.output)
    assert in_band is not None and in_band == first_sps(from_avcc)
    assert trace_header_field(va_env, mesa_cabac.output, "vui_parameters_present_flag") == 0
    # The caps' colorimetry (the VUI's video signal type) and the timing are what Mesa's SPS lacks.
    assert any("the VA-API device wrote its own SPS without video signal type" in w["message"]
               and "timing" in w["message"] and w["message"].startswith("vtenc: colorimetry (from the caps)")
               for w in mesa_cabac.result.warnings), \
        [w["message"] for w in mesa_cabac.result.warnings]


def test_mesa_quality_level_as_a_bit_field(mesa_cabac):
    quality = r"^encmisc quality level=3 bitfield=valid:1,preset:balanced,pre_encode:0,vbaq:0"
    assert mesa_cabac.params.count(quality) > 0, \
        mesa_cabac.params.first(r"^encmisc quality")
