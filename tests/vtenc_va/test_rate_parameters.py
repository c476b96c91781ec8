"""Rate control, HRD, frame rate and quality level as the driver received them (was section 3 of
tests/vtenc-va.sh): the misc parameters match vtenc's properties (CBR, VBR with a peak, constant QP
from quality; max-bitrate and vbv-buffer-size as the peak and HRD buffer, issue 36); the QP bounds
(min/max-allowed-frame-qp, issue 36) reach the device as min_qp and max_qp in CBR/VBR and clamp the
pictures' QP in constant QP; b-frames sets the B pictures between anchors (ip_period) and
reference-buffer-count=1 leaves them out (max_num_ref_frames 1)."""
import pytest

from va_client_testing import PERSONALITY, clean, driver_complaint, trace_header_field

RUNS = {
    "rc-cbr": ("cisco", ["rate-control=cbr", "bitrate=500"]),
    "rc-vbr": ("hd30", ["bitrate=800", "data-rate-limits=200000,1", "realtime=true"]),
    "rc-vbv": ("hd30", ["bitrate=800", "max-bitrate=1200", "vbv-buffer-size=300"]),
    "rc-cbr-vbv": ("cisco", ["rate-control=cbr", "bitrate=500", "vbv-buffer-size=250"]),
    "rc-cqp": ("cisco", ["rate-control=quality", "quality=0.6", "max-keyframe-interval=4"]),
    "rc-cbr-bounded": ("cisco", ["rate-control=cbr", "bitrate=500", "min-allowed-frame-qp=24",
                                 "max-allowed-frame-qp=40"]),
    "rc-cqp-bounded": ("cisco", ["rate-control=quality", "quality=0.6", "max-keyframe-interval=4",
                                 "min-allowed-frame-qp=19", "max-allowed-frame-qp=21"]),
    "rc-cqp-types": ("cisco", ["rate-control=cqp", "qp-i=20", "qp-p=30", "qp-b=36", "max-keyframe-interval=4"]),
    "gop-b0": ("cisco", ["bitrate=500", "b-frames=0"]),
    "speed": ("cisco", ["bitrate=500", "prioritize-speed=true"]),
    "gop-b3": ("cisco", ["bitrate=500", "b-frames=3"]),
    "gop-ref1": ("cisco", ["bitrate=500", "reference-buffer-count=1"]),
}

# run: [(pattern a parameter-log line must match, what it shows)]
EXPECTED = {
    "rc-cbr": [
        (r"^encconfig .*rc=cbr", "CBR config"),
        # cbr = bitrate=500 as a hard limit of 62500 bytes over any second (DataRateBuffer, 12
        # pictures a second): a quarter of it buffer, 125000 bits (3/4 full at the start), the rest
        # arriving over the 11/12 s a window of 12 pictures spans: 375000 / (11/12) = 409090 bit/s.
        (r"^encmisc ratecontrol bits_per_second=409090 target_percentage=100 window_size=1000 ",
         "CBR at the rate that holds 500 kbit over every second"),
        (r"^encmisc hrd buffer_size=125000 initial_buffer_fullness=93750", "HRD buffer of a quarter second, 3/4 full"),
        (r"^encmisc ratecontrol .*min_qp=1 max_qp=51$", "no bounds set: QP 1...51, as before the bounds existed"),
        (r"^encmisc framerate 12/1", "frame rate 12/1"),
        # radeonsi's EncQualityRange (32) is the size of a bit-field (Mesa vlVaQualityBits), not a
        # number of levels: the balanced preset is valid bit + preset 1.
        (r"^encmisc quality level=3 bitfield=valid:1,preset:balanced,pre_encode:0,vbaq:0" if PERSONALITY == "mesa"
         else r"^encmisc quality level=4", "quality level: balanced"),
        (r"^encseq .*bits_per_second=409090", "sequence bits_per_second"),
        (r"^encseq .*timing=1/24", "VUI timing 1/24 (two ticks a frame)"),
    ],
    "rc-vbr": [
        (r"^encconfig .*rc=vbr", "VBR config for an average bit rate under a peak"),
        # The 200000-byte limit over any second at 30 pictures a second: 400000 bits of buffer, peak
        # 1200000 / (29/30) = 1241379 bit/s; the average 800 kbit/s is 64 % of it.
        (r"^encmisc ratecontrol bits_per_second=1241379 target_percentage=64 window_size=1000 ",
         "VBR peak 1.24 Mbit/s, target 64 %"),
        (r"^encmisc hrd buffer_size=400000 ", "HRD buffer = a quarter of the 200000-byte window"),
        (r"^encmisc quality level=0$" if PERSONALITY == "mesa" else r"^encmisc quality level=7",
         "realtime: the fastest quality level"),
    ],
    "rc-vbv": [
        # max-bitrate and vbv-buffer-size as given (issue 36): no derivation from limits.
        (r"^encconfig .*rc=vbr", "VBR config for an average under max-bitrate"),
        (r"^encmisc ratecontrol bits_per_second=1200000 target_percentage=67 window_size=1000 ",
         "VBR peak = max-bitrate, target 800/1200"),
        (r"^encmisc hrd buffer_size=300000 initial_buffer_fullness=225000", "HRD buffer = vbv-buffer-size, 3/4 full"),
    ],
    "rc-cbr-vbv": [
        (r"^encconfig .*rc=cbr", "CBR config"),
        (r"^encmisc ratecontrol bits_per_second=500000 target_percentage=100 ", "CBR at bitrate"),
        (r"^encmisc hrd buffer_size=250000 ", "HRD buffer = vbv-buffer-size"),
    ],
    "rc-cqp": [
        (r"^encconfig .*rc=cqp", "constant QP for rate-control=quality"),
        # Old Mesa codes every picture at pic_init_qp (slice_qp_delta is not read): the P pictures' QP.
        (r"^encpic type=I .*qp=20" if PERSONALITY == "mesa" else r"^encpic type=I .*qp=17",
         "I pictures (51 x 0.4 - 3)"),
        (r"^encpic type=B .*qp=20" if PERSONALITY == "mesa" else r"^encpic type=B .*qp=22", "B pictures"),
        (r"^encpic type=P .*qp=20", "P pictures at QP 20"),
    ],
    "rc-cbr-bounded": [
        (r"^encmisc ratecontrol bits_per_second=409090 .*min_qp=24 max_qp=40", "the bounds as min_qp and max_qp"),
    ],
    "rc-cqp-types": [
        (r"^encconfig .*rc=cqp", "constant QP for rate-control=cqp"),
        (r"^encpic type=I .*qp=30" if PERSONALITY == "mesa" else r"^encpic type=I .*qp=20", "I pictures at qp-i"),
        (r"^encpic type=P .*qp=30", "P pictures at qp-p"),
        (r"^encpic type=B .*qp=30" if PERSONALITY == "mesa" else r"^encpic type=B .*qp=36", "B pictures at qp-b"),
    ],
    "speed": [
        (r"^encmisc quality level=0$" if PERSONALITY == "mesa" else r"^encmisc quality level=7",
         "prioritize-speed: the fastest quality level"),
        (r"^encpic type=B ", "B pictures kept (unlike realtime)"),
    ],
    "gop-b3": [
        (r"^encseq .*ip_period=4 .*max_num_ref_frames=2", "three B pictures between anchors, two references"),
        (r"^encpic type=B ", "B pictures"),
    ],
    "gop-ref1": [
        (r"^encseq .*ip_period=1 .*max_num_ref_frames=1", "one reference: no B pictures"),
    ],
    "rc-cqp-bounded": [
        # I 17 and B 22 clamped into 19...21; P stays at 20.
        (r"^encpic type=I .*qp=20" if PERSONALITY == "mesa" else r"^encpic type=I .*qp=19", "I pictures raised to 19"),
        (r"^encpic type=B .*qp=20" if PERSONALITY == "mesa" else r"^encpic type=B .*qp=21", "B pictures lowered to 21"),
        (r"^encpic type=P .*qp=20", "P pictures at QP 20"),
    ],
}


@pytest.fixture(scope="module")
def encoded(vtenc, sources, encoder_device):
    def get(name):
        source, props = RUNS[name]
        return vtenc.encode(name, sources[source], "hardware=require", *props)
    return get


@pytest.mark.parametrize("name", RUNS)
def test_encodes(encoded, name):
    assert encoded(name).ok, encoded(name).why()


@pytest.mark.parametrize("name, pattern, what", [(name, p, w) for name, rows in EXPECTED.items() for p, w in rows],
                         ids=[f"{name}-{i}" for name, rows in EXPECTED.items() for i in range(len(rows))])
def test_parameter_received(encoded, name, pattern, what):
    params = encoded(name).params
    assert params.count(pattern) > 0, (f"{what}: no line matching {pattern!r} in "
                                       + "; ".join(sorted(set(params.lines(r"^enc(config|misc)")))))


def test_realtime_codes_no_b_pictures(encoded):
    assert encoded("rc-vbr").params.count("type=B") == 0


@pytest.mark.parametrize("name", ["gop-b0", "gop-ref1"])
def test_no_b_pictures_where_asked(encoded, name):
    assert encoded(name).params.count("type=B") == 0 and encoded(name).params.count("type=P") > 0


def test_constant_qp_has_no_rate_control_parameter(encoded):
    assert encoded("rc-cqp").params.count(r"^encmisc ratecontrol") == 0


def test_p_pictures_qp_in_the_pps(encoded, va_env):
    """The P pictures' QP travels in the PPS too (pic_init_qp 20, slice_qp_delta -3/0/+2), for
    drivers that read only pic_init_qp; FFmpeg's bitstream tracer reads the PPS SwiftVT wrote."""
    assert trace_header_field(va_env, encoded("rc-cqp").output, "pic_init_qp_minus26") == -6


@pytest.mark.parametrize("name", RUNS)
def test_driver_report_clean(encoded, name):
    assert clean(encoded(name)), driver_complaint(encoded(name))


def test_constant_quality_is_icq_where_the_device_offers_it(vtenc, sources, encoder_device):
    """rate-control=quality on a device that offers VA_RC_ICQ (issue 36 item 2): the device's own
    constant-quality rate control at ICQ_quality_factor 51 * (1 - quality), x264's CRF scale (0.6:
    20), with no bit rate and no HRD buffer; CQP where it is not offered (rc-cqp above)."""
    run = vtenc.encode("rc-icq", sources["cisco"], "hardware=require", "rate-control=quality", "quality=0.6",
                       SWIFTVT_VA_ENCODE_RC="cqp,cbr,vbr,icq")
    assert run.ok, run.why()
    assert run.params.count(r"^encconfig .*rc=icq") > 0, run.params.first("^encconfig")
    assert run.params.count(r"^encmisc icq quality_factor=20$") > 0
    assert run.params.count(r"^encmisc ratecontrol bits_per_second=0 .* min_qp=1 max_qp=51$") > 0
    assert run.params.count(r"^encmisc hrd") == 0
    assert clean(run), driver_complaint(run)
