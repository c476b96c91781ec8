"""swiftvt-example-compress (seed case 4; was tests/examples.sh): 150 frames of 320x240 to Annex B
for the network: an SPS and a PPS right before every IDR picture, as many IDR pictures as the
program reports (at least 2), Main profile, no B pictures (no frame reordering), every frame
decodable by FFmpeg."""
import re
import subprocess

import pytest

from swiftvt_testing import run


@pytest.fixture(scope="module")
def compressed(examples_bin, tmp_path_factory):
    output = tmp_path_factory.mktemp("compress") / "network.h264"
    result = subprocess.run([str(examples_bin / "swiftvt-example-compress"), str(output), "--frames", "150", "--width",
                             "320", "--height", "240", "--hardware", "disable"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=300)
    return result.returncode, result.stdout, output


def nal_types(data):
    starts = [m.end() for m in re.finditer(b"\x00\x00\x01", data) if m.end() + 1 < len(data)]
    return starts, [data[p] & 0x1F for p in starts]


def idr_pictures(data):
    """Indexes (in NAL units) of the first slice of each IDR picture: first_mb_in_slice 0 is ue(v)
    "1", the first bit after the NAL header (x264's sliced threads make several slices per picture)."""
    starts, types = nal_types(data)
    return [i for i, t in enumerate(types) if t == 5 and data[starts[i] + 1] & 0x80], types


def reported_key_frames(log):
    match = re.search(r"\((\d+) key frames", log)
    return int(match.group(1)) if match else None


def test_compress_exits_0(compressed):
    assert compressed[0] == 0, compressed[1][-2000:]


def test_compress_reports_at_least_2_key_frames(compressed):
    assert (reported_key_frames(compressed[1]) or 0) >= 2, compressed[1][-1000:]


def test_compress_idr_pictures_as_reported(compressed):
    idr, _ = idr_pictures(compressed[2].read_bytes())
    assert len(idr) == reported_key_frames(compressed[1])


def test_compress_sps_and_pps_before_every_idr_picture(compressed):
    idr, types = idr_pictures(compressed[2].read_bytes())
    assert all(i >= 2 and types[i - 2] == 7 and types[i - 1] == 8 for i in idr), types[:40]


def test_compress_main_profile_no_b_frames_every_frame(compressed):
    probe = run(["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                 "stream=profile,has_b_frames,nb_read_frames", "-of", "csv=p=0", compressed[2]], None).strip()
    assert probe == "Main,0,150", "profile, has_b_frames, frames"


def test_compress_decodes_without_an_error(probe, compressed):
    assert probe.decode_errors(compressed[2]) == ""
