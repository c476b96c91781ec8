"""A damaged copy (seeded bit flips after the parameter sets) of a B-pyramid corpus stream decodes
as far as avdec_h265 does in the same pipeline: at least its frames, ended by EOS or one ERROR, never
a crash or a hang."""
import random

import pytest

from vtdec_h265_testing import frames_in

STREAM = "main_bpyramid_refs5.265"   # 960x540, B-pyramid, 5 references
WIDTH, HEIGHT = 960, 540


@pytest.fixture(scope="module")
def damaged_runs(h265_corpus, runner, tmp_path_factory):
    folder, _ = h265_corpus
    work = tmp_path_factory.mktemp("damaged")
    data = bytearray((folder / STREAM).read_bytes())
    generator = random.Random(35)
    for _ in range(40):
        position = generator.randrange(4096, len(data))
        data[position] ^= 1 << generator.randrange(8)
    copy = work / "bitflips.265"
    copy.write_bytes(bytes(data))
    runs = {}
    for decoder in ("vtdec", "avdec_h265"):
        output = work / f"{decoder}.yuv"
        result = runner(f"filesrc location={copy} ! h265parse ! {decoder} ! video/x-raw,format=I420 "
                        f"! filesink location={output}", timeout=180)
        runs[decoder] = (result, frames_in(output, WIDTH, HEIGHT))
    return runs


def test_ends_without_crash_or_hang(damaged_runs):
    result, _ = damaged_runs["vtdec"]
    assert result.ended_by in ("eos", "error"), f"ended by {result.ended_by}: {result.log[-2000:]}"


def test_decodes_at_least_avdec_h265s_frames(damaged_runs):
    (_, ours), (peer_result, peer) = damaged_runs["vtdec"], damaged_runs["avdec_h265"]
    assert peer > 0, peer_result.log[-1500:]
    assert ours >= peer, f"vtdec {ours} frames, avdec_h265 {peer}"
