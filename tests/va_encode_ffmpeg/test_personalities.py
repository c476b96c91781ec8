"""Driver personalities (SWIFTVT_VA_PERSONALITY, tests/va-driver/README.md), each set explicitly:
iHD's EncSliceLP is CQP only and CABAC fails at vaEndPicture; old Mesa encodes at pic_init_qp
(FFmpeg's B-picture slice_qp_delta is lost), regenerates the SPS without VUI, reads the quality
level as a bit-field and ignores CABAC (FFmpeg "succeeds" with a broken stream);
nvidia-vaapi-driver has no encoder. With SWIFTVT_VA_PERSONALITY=nvdec set for the whole run,
every configuration must fail cleanly ("No usable encoding entrypoint").
"""
import pytest

from va_client_testing import PERSONALITY, ffmpeg_decode, md5_of, trace_header_field


@pytest.fixture(scope="module")
def personality_run(encoded, sources):
    def get(name, personality, options, **variables):
        return encoded(name, "320x192", sources["long"], *options.split(),
                       SWIFTVT_VA_PERSONALITY=personality, **variables)
    return get


def lossless(env, run, source):
    return md5_of(ffmpeg_decode(env, run.output, run.output.with_suffix(".decoded.yuv"))) == md5_of(source)


# -- iHD -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ihd_lp_cqp(personality_run):
    return personality_run("ihd-lp-cqp", "ihd", "-low_power 1 -coder cavlc -qp 20 -bf 0", SWIFTVT_VA_LOG=1)


def test_ihd_low_power_cqp_encodes(ihd_lp_cqp):
    assert ihd_lp_cqp.status == 0, ihd_lp_cqp.log[-2000:]


def test_ihd_low_power_cqp_is_lossless(ihd_lp_cqp, va_env, sources):
    assert lossless(va_env, ihd_lp_cqp, sources["long"])


def test_ihd_low_power_cqp_is_on_encslicelp(ihd_lp_cqp):
    assert "EncSliceLP, rate control cqp" in ihd_lp_cqp.log, "not on EncSliceLP"


@pytest.fixture(scope="module")
def ihd_lp_cbr(personality_run):
    return personality_run("ihd-lp-cbr", "ihd", "-low_power 1 -coder cavlc -b:v 1M -maxrate 1M -bf 0")


def test_ihd_low_power_cbr_fails(ihd_lp_cbr):
    assert ihd_lp_cbr.status != 0


def test_ihd_low_power_cbr_no_hang(ihd_lp_cbr):
    assert not ihd_lp_cbr.hung


def test_ihd_low_power_cbr_no_rc_mode(ihd_lp_cbr):
    assert "does not support any RC mode" in ihd_lp_cbr.log, "expected FFmpeg to find no RC mode"


@pytest.fixture(scope="module")
def ihd_cabac(personality_run):
    return personality_run("ihd-cabac", "ihd", "-coder cabac -profile:v high -qp 20 -bf 0")


def test_ihd_cabac_fails(ihd_cabac):
    assert ihd_cabac.status != 0


def test_ihd_cabac_no_hang(ihd_cabac):
    assert not ihd_cabac.hung


def test_ihd_cabac_fails_at_end_picture(ihd_cabac):
    assert "Failed to end picture" in ihd_cabac.log


def test_ihd_cabac_refused_in_the_report(ihd_cabac):
    assert "REFUSED encode: CABAC (entropy_coding_mode_flag 1), at vaEndPicture" in ihd_cabac.report.text, \
        ihd_cabac.report


# -- Mesa ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mesa_ibbp(personality_run):
    return personality_run("mesa-ibbp", "mesa", "-coder cavlc -profile:v high -qp 20 -g 30 -bf 2 -compression_level 4")


def test_mesa_ibbp_encodes(mesa_ibbp):
    assert mesa_ibbp.status == 0, mesa_ibbp.log[-2000:]


def test_mesa_ibbp_is_lossless(mesa_ibbp, va_env, sources):
    assert lossless(va_env, mesa_ibbp, sources["long"])


def test_mesa_b_pictures_at_pic_init_qp(mesa_ibbp):
    # FFmpeg's slice_qp_delta of +4 (QP 24) is not read: the B pictures are at pic_init_qp 20.
    b_qps = mesa_ibbp.params.lines("^encpic type=B ")
    assert mesa_ibbp.params.count("^encpic type=B .* qp=20 ") > 0, b_qps[:3]
    assert mesa_ibbp.params.count("^encpic type=B .* qp=24 ") == 0, b_qps[:3]


def test_mesa_sps_without_vui(mesa_ibbp, va_env):
    assert trace_header_field(va_env, mesa_ibbp.output, "vui_parameters_present_flag") == 0


def test_mesa_quality_level_bitfield(mesa_ibbp):
    assert mesa_ibbp.params.count("^encmisc quality level=4 bitfield=valid:0,preset:quality,") > 0, \
        mesa_ibbp.params.first("^encmisc quality")


@pytest.fixture(scope="module")
def mesa_cabac(personality_run):
    return personality_run("mesa-cabac", "mesa", "-coder cabac -profile:v high -qp 20 -bf 0")


def test_mesa_cabac_silent_success(mesa_cabac):
    assert mesa_cabac.status == 0, "expected a silent success"


def test_mesa_cabac_stream_is_broken(mesa_cabac, va_env, sources):
    # CAVLC slices under a CABAC PPS: the stream does not decode to the source.
    assert not lossless(va_env, mesa_cabac, sources["long"])


def test_mesa_cabac_no_complaint(mesa_cabac):
    assert mesa_cabac.report.count("VALIDATION|REFUSED") == 0, mesa_cabac.report


# -- nvidia-vaapi-driver (decodes only) ------------------------------------------------------

NO_ENCODER = "No usable encoding entrypoint"


@pytest.fixture(scope="module")
def nvdec_encode(personality_run):
    return personality_run("nvdec-encode", "nvdec", "-coder cavlc -qp 20 -bf 0")


def test_nvdec_fails(nvdec_encode):
    assert nvdec_encode.status != 0


def test_nvdec_no_hang(nvdec_encode):
    assert not nvdec_encode.hung


def test_nvdec_no_encoder(nvdec_encode):
    assert NO_ENCODER in nvdec_encode.log, f"expected '{NO_ENCODER}'"


NVDEC_CONFIGURATIONS = ["-coder cavlc -profile:v high -qp 20 -bf 2", "-profile:v constrained_baseline -qp 20 -bf 0",
                        "-coder cavlc -profile:v main -b:v 1M -maxrate 1M -bf 0"]


@pytest.fixture(scope="module")
def nvdec_configuration(encoded, sources):
    def get(index):
        return encoded(f"nvdec-config-{index}", "320x192", sources["long"], *NVDEC_CONFIGURATIONS[index].split())
    return get


@pytest.mark.skipif(PERSONALITY != "nvdec", reason="only under SWIFTVT_VA_PERSONALITY=nvdec")
@pytest.mark.parametrize("index", range(len(NVDEC_CONFIGURATIONS)), ids=["high-ibbp", "cb", "main-cbr"])
def test_nvdec_configuration_refused(nvdec_configuration, index):
    run = nvdec_configuration(index)
    assert run.status != 0 and not run.hung, f"exit {run.status}"
    assert NO_ENCODER in run.log, f"expected '{NO_ENCODER}'"
