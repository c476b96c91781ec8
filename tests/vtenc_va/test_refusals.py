"""Where the VA-API encoder cannot run (was the device probe and the last sections of
tests/vtenc-va.sh): a decode-only device (nvidia-vaapi-driver, SWIFTVT_VA_PERSONALITY=nvdec) and no
VA device at all (no DISPLAY). `hardware=require` fails with one ERROR from vtenc saying why;
`hardware=auto` encodes every frame with x264 (active-backend)."""
import pytest

from swiftvt_testing import swiftvt_errors
from va_client_testing import frame_count

X264 = "x264 (software)"


@pytest.fixture(scope="module")
def without_display(va_env):
    return {k: v for k, v in va_env.items() if k != "DISPLAY"}


@pytest.mark.parametrize("name, message, variables, no_display", [
    ("nvdec-require", "hardware=require, but ", {"SWIFTVT_VA_PERSONALITY": "nvdec"}, False),
    ("nodevice-require", "hardware=require, but no VA-API device here encodes H.264", {}, True),
])
def test_require_fails_clearly(vtenc, sources, without_display, name, message, variables, no_display):
    run = vtenc.encode(name, sources["cisco"], "hardware=require", environment=without_display if no_display else None,
                       **variables)
    errors = swiftvt_errors(run.result)
    assert run.result.ended_by in ("error", "state-change-failure") and len(errors) == 1, run.why()
    assert message in errors[0]["message"], errors[0]["message"]
    if no_display:
        assert "X11: DISPLAY is not set" in errors[0]["message"], errors[0]["message"]
    else:
        assert "NVDEC" in errors[0]["message"] and "no H.264 encoder" in errors[0]["message"], errors[0]["message"]


@pytest.mark.parametrize("name, variables, no_display", [
    ("nvdec-auto", {"SWIFTVT_VA_PERSONALITY": "nvdec"}, False),
    ("nodevice-auto", {}, True),
])
def test_auto_encodes_with_x264(vtenc, sources, va_env, without_display, name, variables, no_display):
    run = vtenc.encode(name, sources["cisco"], environment=without_display if no_display else None, **variables)
    assert run.ok, run.why()
    assert run.backend == X264, f"active-backend {run.backend!r}"
    assert frame_count(va_env, run.output) == 9


# What SwiftVT's VA-API encoder cannot do (issue 36): one ERROR naming it under hardware=require,
# every frame with x264 under auto.
UNSUPPORTED = {
    # VA-API has no switch for a device's adaptive quantization.
    "aq-off": ("spatial-adaptive-qp=disable", "adaptive quantization off was asked for, and VA-API has no switch"),
    "slices": ("slices=2", "2 slices per picture were asked for, and SwiftVT's VA-API encoder codes one"),
    # No rolling intra refresh (with the recovery point SEI a joining decoder needs).
    "intra-refresh": ("intra-refresh=true", "intra refresh was asked for"),
}


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_control_under_require_is_one_error(vtenc, sources, name):
    setting, message = UNSUPPORTED[name]
    run = vtenc.encode(f"{name}-require", sources["cisco"], "hardware=require", setting)
    errors = swiftvt_errors(run.result)
    assert len(errors) == 1, run.why()
    assert message in errors[0]["message"], errors[0]["message"]


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_control_under_auto_encodes_with_x264(vtenc, sources, va_env, name):
    run = vtenc.encode(f"{name}-auto", sources["cisco"], UNSUPPORTED[name][0])
    assert run.ok and run.backend == X264, run.why()
    assert frame_count(va_env, run.output) == 9


def test_hdr_metadata_under_auto_encodes_with_x264(vtenc, sources, va_env):
    """SwiftVT's VA-API encoder writes no HDR SEI: caps carrying it choose x264 (issue 36)."""
    run = vtenc.encode("hdr-auto", sources["cisco-hdr"], "hardware=auto")
    assert run.ok and run.backend == X264, run.why()
