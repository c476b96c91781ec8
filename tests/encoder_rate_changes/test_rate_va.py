"""Issue 32 rows 4 and 5 on the VA-API path (vtenc hardware=require on the software VA driver): the
rate-control configs and parameters the driver received after a change while PLAYING (its
SWIFTVT_VA_PARAMLOG): bitrate 0 -> 500 gives VBR at 500000 bit/s after CQP, and the stream decodes
whole with an IDR picture at the change; back to 0 gives CQP again; data-rate-limits under a bit
rate gives the CBR rate and HRD buffer of the limit; under constant QP (no rate to hold it) one
WARNING says so."""
import pytest

from rate_changes_testing import SMALL, encode, ended_by_eos, ffmpeg_decode, one_warning


@pytest.fixture(scope="module")
def to_vbr(va_env, work):
    return encode(va_env, SMALL, "vtenc name=enc hardware=require", [(30, "bitrate=500")], output=work / "va-r4.h264",
                  params=work / "va-r4.params")


def test_va_bitrate_set_while_playing_gives_vbr(to_vbr):
    run = ended_by_eos(to_vbr)
    assert run.configs() == "rc=cqp rc=vbr"
    assert any(line.startswith("encmisc ratecontrol bits_per_second=500000 ") for line in run.param_lines("encmisc")), \
        run.param_lines("encmisc ratecontrol")


def test_va_bitrate_change_stream_decodes_whole(va_env, to_vbr, work):
    ended_by_eos(to_vbr)
    assert ffmpeg_decode(va_env, work / "va-r4.h264") == ("", 60, [0, 30])


def test_va_bitrate_back_to_0_gives_cqp(va_env, work):
    run = encode(va_env, SMALL, "vtenc name=enc hardware=require bitrate=500", [(30, "bitrate=0")],
                 params=work / "va-r4-back.params")
    assert ended_by_eos(run).configs() == "rc=vbr rc=cqp"


def test_va_data_rate_limits_under_a_bitrate_give_cbr_and_hrd(va_env, work):
    # 50000 bytes over any second at 30 fps (DataRateBuffer): 100000 bits of buffer, and 300000
    # bits over the 29/30 s a window spans: 310344 bit/s, below the 800 kbit/s average: CBR.
    run = ended_by_eos(encode(va_env, SMALL, "vtenc name=enc hardware=require bitrate=800",
                              [(30, "data-rate-limits=50000,1")], params=work / "va-r5.params"))
    assert run.configs() == "rc=vbr rc=cbr"
    assert any(line.startswith("encmisc ratecontrol bits_per_second=310344 ") for line in run.param_lines("encmisc")), \
        run.param_lines("encmisc ratecontrol")
    assert any(line.startswith("encmisc hrd buffer_size=100000 ") for line in run.param_lines("encmisc")), \
        run.param_lines("encmisc hrd")


def test_va_data_rate_limits_under_constant_qp_is_one_warning(va_env, work):
    run = encode(va_env, SMALL, "vtenc name=enc hardware=require", [(30, "data-rate-limits=50000,1")],
                 params=work / "va-r5-cqp.params")
    one_warning(ended_by_eos(run), "data-rate-limits: the VA-API encoder holds data rate limits only with a bit rate")
