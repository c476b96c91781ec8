"""What cannot be decoded fails once, early and clearly: caps announcing an H.265 profile vtdec cannot
decode (Main 12) and codec_data that is no hvcC record give one ERROR from vtdec at the caps, naming
the problem and what to do; hardware=require on H.265 fails at the state change without a device, and
at the caps where a VA device exists (no hardware backend decodes H.265)."""
from parity_testing import assert_one_swiftvt_error, error_kind


def test_an_impossible_profile_is_refused_at_the_caps(h265_corpus, runner):
    folder, _ = h265_corpus
    result = runner.error(f"filesrc location={folder / 'main_ld_cif_slices.265'} ! h265parse ! "
                          f"capssetter caps=video/x-h265,profile=main-12 ! vtdec name=dec ! fakesink", timeout=60)
    error = assert_one_swiftvt_error(
        result, r"^dec: the caps announce H.265 profile \"main-12\", which vtdec cannot decode")
    assert (error["element"], error["domain"]) == ("dec", "gst-stream-error-quark"), error


def test_bad_codec_data_is_refused_at_the_caps(h265_corpus, runner):
    folder, _ = h265_corpus
    result = runner.error(f"filesrc location={folder / 'main_ld_cif_slices.265'} ! h265parse "
                          "! video/x-h265,stream-format=hvc1 ! "
                          "capssetter caps=\"video/x-h265,codec_data=(buffer)0102030405\" ! vtdec name=dec ! fakesink",
                          timeout=60)
    error = assert_one_swiftvt_error(result, r"^dec: the codec_data in the caps is not a valid hvcC record.*h265parse")
    assert error["element"] == "dec", error


def test_hardware_require_without_a_device_fails_at_the_state_change(h265_corpus, no_device_env, tmp_path):
    from swiftvt_testing import PipelineRunner
    folder, _ = h265_corpus
    result = PipelineRunner(no_device_env, tmp_path).error(
        f"filesrc location={folder / 'main_ld_cif_slices.265'} ! h265parse ! vtdec name=dec hardware=require "
        "! fakesink", timeout=60)
    assert result.ended_by == "state-change-failure", result.ended_by
    error = assert_one_swiftvt_error(result, r"^dec: hardware=require, but no hardware device here decodes H.264")
    assert error_kind(error) == ("dec", "resource/not-found"), error


def test_hardware_require_with_a_device_refuses_h265_at_the_caps(h265_corpus, plugin_env, software_va, tmp_path):
    from swiftvt_testing import PipelineRunner
    folder, _ = h265_corpus
    result = PipelineRunner(software_va.env(plugin_env), tmp_path).error(
        f"filesrc location={folder / 'main_ld_cif_slices.265'} ! h265parse ! vtdec name=dec hardware=require "
        "! fakesink", timeout=60)
    error = assert_one_swiftvt_error(
        result, r"^dec: hardware=require, but no hardware decoder in SwiftVT decodes H.265.*hardware=auto")
    assert error_kind(error) == ("dec", "stream/codec-not-found"), error
