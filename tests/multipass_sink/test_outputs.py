"""vtmultipasssink's other containers (was tests/multipass-sink.sh 7): .h264 (Annex B) and .mov
outputs decode to every frame."""
import pytest

from multipass_sink_testing import launch, read_frames, source


@pytest.fixture(scope="module", params=["h264", "mov"])
def written(request, sink_env, short_clip, tmp_path_factory):
    output = tmp_path_factory.mktemp("outputs") / f"short.{request.param}"
    status, log = launch(sink_env, *source(short_clip), "!", "vtmultipasssink", f"location={output}", "bitrate=1000",
                         "max-keyframe-interval=30", messages=False, extra=["-q"], check=False)
    return status, log, output


def test_output_run_succeeds(written):
    assert written[0] == 0, written[1][-2000:]


def test_output_decodes_to_every_frame(sink_env, written):
    assert read_frames(sink_env, written[2]) == "60"
