"""Timestamps (issue 35 item 3): without upstream timestamps (filesrc) the presentation times come
from the POC, on the frame grid, with decode times that never pass them; with upstream timestamps
(an MP4 file) they are kept. Checked on the MP4 file mp4mux writes, read by ffprobe, which must
report hvc1."""
import pytest

from h265parse_testing import decode


@pytest.mark.parametrize("name", ["main_ra_720p.265", "main_opengop_cra.265", "main10_ra_720p.265",
                                  "main_aud_repeat_hdrs.265", "main_ld_cif_slices.265"])
def test_pts_from_the_poc_fill_the_frame_grid_in_other_streams(runner, probe, manifest, stream, work, name):
    output = work / f"{name}.mp4"
    runner.eos(f"filesrc location={stream(name)} ! h265parse-to-hvcc ! mp4mux ! filesink location={output}",
               timeout=120)
    times = sorted(round(pts * 30) for pts, _, _, _ in probe.packets(output))
    assert times == list(range(times[0], times[0] + int(manifest[name]["frames"]))), times


@pytest.fixture(scope="module")
def from_file(h265_env, runner, stream, work):
    """main_bpyramid_refs5.265 (60 pictures, B-pyramids, 30 fps) through the element into MP4."""
    output = work / "bpyramid.mp4"
    runner.eos(f"filesrc location={stream('main_bpyramid_refs5.265')} ! h265parse-to-hvcc ! mp4mux "
               f"! filesink location={output}", timeout=120)
    return output


def test_mp4_reports_hvc1(probe, from_file):
    assert [s["codec_tag_string"] for s in probe.streams(from_file)] == ["hvc1"]


def test_mp4_decodes_to_the_reference(h265_env, manifest, from_file):
    decoded = decode(h265_env, f"filesrc location={from_file} ! qtdemux ! avdec_h265")
    assert (decoded["frames"], decoded["md5"]) == (60, manifest["main_bpyramid_refs5.265"]["ref_md5"]), decoded


def test_pts_from_the_poc_fill_the_frame_grid(probe, from_file):
    packets = probe.packets(from_file)
    times = sorted(round(pts * 30) for pts, _, _, _ in packets)
    assert times == list(range(times[0], times[0] + 60)), times
    # B-pyramids: presentation order differs from decoding order.
    assert [p[0] for p in packets] != sorted(p[0] for p in packets)


def test_dts_never_after_pts(probe, from_file):
    assert all(dts <= pts + 1e-6 for pts, dts, _, _ in probe.packets(from_file))


def test_hev1_when_downstream_asks_muxes_as_hev1(h265_env, runner, probe, manifest, stream, work):
    output = work / "hev1.mp4"
    runner.eos(f"filesrc location={stream('main_aud_repeat_hdrs.265')} ! h265parse-to-hvcc "
               f"! video/x-h265,stream-format=hev1 ! mp4mux ! filesink location={output}", timeout=120)
    assert [s["codec_tag_string"] for s in probe.streams(output)] == ["hev1"]
    decoded = decode(h265_env, f"filesrc location={output} ! qtdemux ! avdec_h265")
    assert decoded["md5"] == manifest["main_aud_repeat_hdrs.265"]["ref_md5"], decoded


def test_upstream_timestamps_are_kept(h265_env, runner, probe, from_file, work):
    """The MP4 file's times (qtdemux, then h265parse back to a byte stream) come out unchanged."""
    output = work / "remuxed.mp4"
    runner.eos(f"filesrc location={from_file} ! qtdemux ! h265parse ! video/x-h265,stream-format=byte-stream "
               f"! h265parse-to-hvcc ! mp4mux ! filesink location={output}", timeout=120)
    assert [p[0] for p in probe.packets(output)] == [p[0] for p in probe.packets(from_file)]
