"""What vtmultipasssink refuses or cannot do, one ERROR each and nothing written (was
tests/multipass-sink.sh 4, 5 and 8), through tests/lib/run-pipeline.py (which cannot hang on an
early ERROR as gst-launch-1.0 can):
- an unwritable location: a clear error naming it, nothing written;
- a full temporary directory (a 512 KiB tmpfs, or a file-size limit where mounting is not allowed):
  a clear error, nothing at location, no temporary file left there nor beside location;
- settings that can never work, refused at the state change: GOPs shorter than 4 frames (where two
  IDR pictures could be consecutive, and a spliced range's fresh encoder could repeat its
  neighbour's idr_pic_id, 7.4.3), CABAC with profile=baseline; caps the encoder refuses (an odd
  height in 4:2:0): one ERROR from the sink, not one per sticky-event retry, and no second "nothing
  to write" at the EOS that follows.
"""
import subprocess

import pytest

from multipass_sink_testing import run_pipeline_limited, source

SINK = "SwiftVTMultiPassSink"


def sink_errors(result):
    return [e for e in result.errors if SINK in e["path"]]


@pytest.fixture(scope="module")
def unwritable(sink_env, clip, tmp_path_factory):
    from swiftvt_testing import PipelineRunner
    return PipelineRunner(sink_env, tmp_path_factory.mktemp("unwritable")).error(
        *source(clip), "!", "vtmultipasssink", "location=/nonexistent-dir/out.mp4")


def test_unwritable_location_is_one_error_from_the_sink(unwritable):
    """GST_RESOURCE_ERROR_OPEN_WRITE, from the sink alone."""
    assert unwritable.error_domains() == [("swiftvtmultipasssink0", "gst-resource-error-quark", 6)], \
        unwritable.log[-2000:]


def test_unwritable_location_error_names_it(unwritable):
    assert 'cannot write "/nonexistent-dir/out.mp4"' in unwritable.errors[0]["message"], unwritable.errors


def test_unwritable_location_nothing_written(unwritable):
    from pathlib import Path
    assert not Path("/nonexistent-dir/out.mp4").exists()


@pytest.fixture(scope="module")
def full(sink_env, clip, tmp_path_factory):
    """(result, files left in the temporary folder, work folder, output, how it was made full)."""
    work = tmp_path_factory.mktemp("full")
    small = work / "small"
    small.mkdir()
    output = work / "full.mp4"
    description = [*source(clip), "!", "vtmultipasssink", f"location={output}",
                   f"temp-location={small}", "bitrate=4000"]
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(small)],
                             capture_output=True).returncode == 0
    try:
        if mounted:
            how = "a 512 KiB tmpfs"
            result = run_pipeline_limited(sink_env, work, *description)
        else:
            how = "a 512 KiB file-size limit (no tmpfs allowed here)"
            result = run_pipeline_limited(sink_env, work, *description, file_size_limit=512 * 1024)
        leftovers = sorted(p.name for p in small.iterdir())
    finally:
        if mounted:
            subprocess.run(["umount", str(small)])
    return result, leftovers, work, output, how


def test_full_temporary_folder_ends_in_an_error(full):
    result, *_, how = full
    assert result.status == 0 and result.ended_by == "error", f"{how}: {result.log[-2000:]}"


def test_full_temporary_folder_error_says_so(full):
    result = full[0]
    assert any(text in e["message"] for e in result.errors
               for text in ("No space left", "file-size limit", "File too large")), result.errors


def test_full_temporary_folder_nothing_at_location(full):
    assert not full[3].exists()


def test_full_temporary_folder_no_temporary_file_left(full):
    assert full[1] == []


def test_full_temporary_folder_no_temporary_output_beside_location(full):
    assert [p.name for p in full[2].iterdir() if p.name.startswith(".swiftvt-")] == []


# name: (the text of the ERROR, how the pipeline ends, the pipeline, the sink's (GError domain, code):
# GST_LIBRARY_ERROR_SETTINGS for settings, GST_STREAM_ERROR_FORMAT for caps).
SETTINGS, FORMAT = ("gst-library-error-quark", 5), ("gst-stream-error-quark", 11)
REFUSED = {
    "max-keyframe-interval=1": ("max-keyframe-interval=1 is too short", "state-change-failure",
                                lambda clip, out: [*source(clip), "!", "vtmultipasssink", f"location={out}",
                                                   "max-keyframe-interval=1"], SETTINGS),
    "profile=baseline entropy-mode=cabac": (
        "CABAC is not allowed in the baseline profile; use entropy-mode=cavlc or auto", "state-change-failure",
        lambda clip, out: [*source(clip), "!", "vtmultipasssink", f"location={out}", "profile=baseline",
                           "entropy-mode=cabac"], SETTINGS),
    "66x65 I420": ("height 65 is odd", "error",
                   lambda clip, out: ["videotestsrc", "num-buffers=10", "!",
                                      "video/x-raw,format=I420,width=66,height=65",
                                      "!", "vtmultipasssink", f"location={out}"], FORMAT),
}


@pytest.fixture(scope="module")
def refused(sink_env, short_clip, tmp_path_factory):
    from swiftvt_testing import PipelineRunner
    done = {}

    def get(name):
        if name not in done:
            work = tmp_path_factory.mktemp("refused")
            output = work / "refused.mp4"
            result = PipelineRunner(sink_env, work)(*REFUSED[name][2](short_clip, output), expect="error")
            done[name] = (result, output)
        return done[name]
    return get


@pytest.mark.parametrize("name", REFUSED)
def test_refused_ends_in_an_error(refused, name):
    result, _ = refused(name)
    assert result.status == 0, result.log[-2000:]


@pytest.mark.parametrize("name", REFUSED)
def test_refused_error_says_why(refused, name):
    result, _ = refused(name)
    assert any(REFUSED[name][0] in e["message"] for e in result.errors), result.errors


@pytest.mark.parametrize("name", REFUSED)
def test_refused_is_one_error_from_the_sink(refused, name):
    result, _ = refused(name)
    assert [(e["domain"], e["code"]) for e in sink_errors(result)] == [REFUSED[name][3]], result.errors


@pytest.mark.parametrize("name", REFUSED)
def test_refused_ends_where_expected(refused, name):
    result, _ = refused(name)
    assert result.ended_by == REFUSED[name][1]


@pytest.mark.parametrize("name", REFUSED)
def test_refused_writes_nothing(refused, name):
    _, output = refused(name)
    assert not output.exists()
