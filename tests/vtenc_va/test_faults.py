"""Fault injection and refusals (was section 5 of tests/vtenc-va.sh): each ends in x264 (`auto`, with a
warning where it happens mid-stream) or one clear ERROR from vtenc naming the cause (`require`);
never a hang; nothing leaked. One test per case and policy."""
import re

import pytest

from swiftvt_testing import swiftvt_errors
from va_client_testing import clean, decoded_md5, driver_complaint, frame_count

X264 = "x264 (software)"

# (case, policy, expected, driver variables, vtenc properties); expected: "fallback" (EOS, 9 frames,
# active-backend x264), "warn:REGEX" (EOS, 9 frames, a WARNING matching) or "error:REGEX" (vtenc's one
# ERROR matching).
CASES = [
    ("create-config", "auto", "fallback", {"SWIFTVT_VA_FAIL": "create-config"}, []),
    ("create-config", "require", "error:vaCreateConfig", {"SWIFTVT_VA_FAIL": "create-config"}, []),
    ("create-context", "auto", "fallback", {"SWIFTVT_VA_FAIL": "create-context"}, []),
    ("create-context", "require", "error:vaCreateContext", {"SWIFTVT_VA_FAIL": "create-context"}, []),
    ("create-surfaces", "auto", "fallback", {"SWIFTVT_VA_FAIL": "create-surfaces"}, []),
    ("create-surfaces", "require", "error:vaCreateSurfaces", {"SWIFTVT_VA_FAIL": "create-surfaces"}, []),
    ("busy", "auto", "fallback", {"SWIFTVT_VA_BUSY": "1"}, []),
    ("busy", "require", "error:vaInitialize", {"SWIFTVT_VA_BUSY": "1"}, []),
    ("end-picture-5", "auto", "warn:VA-API.*failed.*x264", {"SWIFTVT_VA_FAIL_END_PICTURE": "5"}, []),
    ("end-picture-5", "require", "error:vaEndPicture.*hardware=require allows no software fallback",
     {"SWIFTVT_VA_FAIL_END_PICTURE": "5"}, []),
    ("overflow-3", "auto", "warn:did not fit in the", {"SWIFTVT_VA_FAIL_CODED": "overflow:3"}, []),
    ("overflow-3", "require", "error:did not fit in the", {"SWIFTVT_VA_FAIL_CODED": "overflow:3"}, []),
    ("bad-bitstream-3", "auto", "warn:bad bitstream", {"SWIFTVT_VA_FAIL_CODED": "bad-bitstream:3"}, []),
    ("bad-bitstream-3", "require", "error:bad bitstream", {"SWIFTVT_VA_FAIL_CODED": "bad-bitstream:3"}, []),
    # CABAC: refused (this driver at vaRenderPicture, iHD at vaEndPicture) or ignored (Mesa).
    ("cabac", "auto", "warn:entropy-mode: the VA-API encoder (refused|ignored) CABAC", {"SWIFTVT_VA_LOG": "0"},
     ["entropy-mode=cabac"]),
    ("cabac", "require", "error:(refused|ignored) CABAC", {"SWIFTVT_VA_LOG": "0"}, ["entropy-mode=cabac"]),
    # Rate-control modes advertised and then refused at vaCreateContext: the other bit-rate mode with a
    # warning (auto) or a clear error (require); constant QP refused everywhere ends in x264.
    ("refuses-vbr", "auto", "warn:bitrate: the VA-API device advertises VBR rate control but refused a context with "
     "it.*encoding CBR instead", {"SWIFTVT_VA_CONTEXT_REFUSES_RC": "vbr"}, ["bitrate=800"]),
    ("refuses-vbr", "require", "error:advertises VBR rate control but refused a context with it.*hardware=require",
     {"SWIFTVT_VA_CONTEXT_REFUSES_RC": "vbr"}, ["bitrate=800"]),
    ("refuses-cqp", "auto", "fallback", {"SWIFTVT_VA_CONTEXT_REFUSES_RC": "cqp"}, []),
    ("refuses-cqp", "require", "error:advertises CQP rate control but refused a context with it",
     {"SWIFTVT_VA_CONTEXT_REFUSES_RC": "cqp"}, []),
    ("no-vbr", "auto", "warn:bitrate: the VA-API encoder has no VBR",
     {"SWIFTVT_VA_ENCODE_RC": "cqp,cbr"}, ["bitrate=800"]),
    ("no-vbr", "require", r"error:\(bitrate\).*no VBR", {"SWIFTVT_VA_ENCODE_RC": "cqp,cbr"}, ["bitrate=800"]),
    ("no-cqp", "auto", "fallback", {"SWIFTVT_VA_ENCODE_RC": "cbr,vbr"}, []),
    ("no-cqp", "require", "error:no constant-QP rate control", {"SWIFTVT_VA_ENCODE_RC": "cbr,vbr"}, []),
]
IDS = [f"{case}-{policy}" for case, policy, *_ in CASES]


@pytest.fixture(scope="module")
def faulted(vtenc, sources, encoder_device):
    by_id = dict(zip(IDS, CASES))

    def get(case_id):
        case, policy, _, variables, props = by_id[case_id]
        return vtenc.encode(f"fault-{case_id}", sources["cisco"], f"hardware={policy}", "max-keyframe-interval=4",
                            *props, **variables)
    return get


@pytest.mark.parametrize("case_id, expected", [(i, c[2]) for i, c in zip(IDS, CASES)], ids=IDS)
def test_ending(faulted, va_env, case_id, expected):
    run = faulted(case_id)
    if expected.startswith("error:"):
        errors = swiftvt_errors(run.result)
        assert run.result.ended_by in ("error", "state-change-failure") and len(errors) == 1, run.why()
        assert re.search(expected[len("error:"):], errors[0]["message"]), errors[0]["message"]
        return
    assert run.ok, run.why()
    assert frame_count(va_env, run.output) == 9
    if expected == "fallback":
        assert run.backend.startswith(X264), f"active-backend {run.backend!r}"
    else:
        pattern = expected[len("warn:"):]
        assert any(re.search(pattern, w["message"]) for w in run.result.warnings), \
            [w["message"] for w in run.result.warnings]


@pytest.mark.parametrize("case_id", IDS)
def test_nothing_leaked(faulted, case_id):
    report = faulted(case_id).report
    assert not report.leaks(), report.leaks()


def test_mid_stream_failure_device_pictures_first(faulted):
    """After a mid-stream failure the stream goes on in x264 from an IDR picture: the pictures before
    the failure came from the device (h264parse and avdec_h264 decoded all 9 above)."""
    run = faulted("end-picture-5-auto")
    assert run.params.count("type=") >= 4, run.params
    assert run.backend.startswith(X264 + ", after VA-API"), f"active-backend {run.backend!r} after the failure"


def test_cabac_refused_codes_cavlc_losslessly(faulted, sources, va_env):
    run = faulted("cabac-auto")
    assert decoded_md5(va_env, run.output) == sources["cisco"].md5
    assert run.params.count(r"^encpic .*entropy=cavlc") > 0, run.params.first("^encpic")


def test_vbr_refused_at_context_creation_encodes_cbr(faulted, sources, va_env):
    run = faulted("refuses-vbr-auto")
    assert run.params.count(r"^encconfig .*rc=cbr") > 0, run.params.lines("^encconfig")
    assert decoded_md5(va_env, run.output) == sources["cisco"].md5


def test_device_runs_clean(faulted):
    """Where the device encoded the whole stream after a refusal, the driver saw only valid calls."""
    for case_id in ("cabac-auto", "refuses-vbr-auto", "no-vbr-auto"):
        assert clean(faulted(case_id)), f"{case_id}: {driver_complaint(faulted(case_id))}"
