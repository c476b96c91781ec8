"""verify-picture-hash (H.265 D.3.19): one WARNING names the first picture whose decoded planes
differ from its decoded picture hash SEI (a corpus stream with one byte of the 6th picture's MD5
changed in a tmp copy: picture 5 in decoding order, POC 5); a stream without hash SEIs (x265enc's
default) gets one WARNING saying there is nothing to check; the property is off by default, and then
no picture is checked."""
import re

import pytest

from vtdec_h265_testing import vtdec_warnings

STREAM = "main_ld_cif_slices.265"   # low delay: decoding order is output order, POC = picture number


def damage_hash(source, target, picture):
    """Flips the 4th byte of picture_md5[0] in the `picture`-th decoded picture hash SEI (a suffix SEI,
    nal_unit_type 40, payloadType 132) of an Annex B stream."""
    data = bytearray(source.read_bytes())
    position = -1
    for _ in range(picture + 1):
        position = data.find(b"\x00\x00\x01\x50\x01\x84", position + 1)
        assert position >= 0, f"fewer than {picture + 1} hash SEIs"
    # start code (3), NAL header (2), payloadType (1), payloadSize (1), hash_type (1), then the MD5.
    data[position + 8 + 3] ^= 0xFF
    target.write_bytes(bytes(data))
    return target


@pytest.fixture(scope="module")
def damaged_hash_run(h265_corpus, runner, tmp_path_factory):
    folder, _ = h265_corpus
    copy = damage_hash(folder / STREAM, tmp_path_factory.mktemp("hash") / "damaged-hash.265", picture=5)
    return runner(f"filesrc location={copy} ! h265parse ! vtdec name=dec verify-picture-hash=true ! fakesink",
                  timeout=120, expect="eos")


def test_one_warning_for_a_picture_that_differs(damaged_hash_run):
    assert len(vtdec_warnings(damaged_hash_run)) == 1, vtdec_warnings(damaged_hash_run)


def test_the_warning_names_the_picture_and_its_poc(damaged_hash_run):
    message = vtdec_warnings(damaged_hash_run)[0]["message"]
    assert re.search(r"picture 5 in decoding order \(POC 5, PTS [^)]*\) differs from its decoded picture hash SEI \(MD5 of Y",
                     message), message


def test_off_by_default(h265_corpus, runner, tmp_path):
    folder, _ = h265_corpus
    copy = damage_hash(folder / STREAM, tmp_path / "damaged-hash.265", picture=5)
    result = runner(f"filesrc location={copy} ! h265parse ! vtdec name=dec ! fakesink", timeout=120, expect="eos")
    assert vtdec_warnings(result) == []


@pytest.fixture(scope="module")
def without_hashes(plugin_env, runner, tmp_path_factory):
    path = tmp_path_factory.mktemp("nohash") / "nohash.265"
    runner(f"videotestsrc num-buffers=10 ! video/x-raw,format=I420,width=320,height=240 ! x265enc ! "
           f"video/x-h265,stream-format=byte-stream ! filesink location={path}", timeout=120, expect="eos")
    return runner(f"filesrc location={path} ! h265parse ! vtdec name=dec verify-picture-hash=true ! fakesink",
                  timeout=120, expect="eos")


def test_a_stream_without_hash_sei_is_said_once(without_hashes):
    warnings = vtdec_warnings(without_hashes)
    assert len(warnings) == 1 and "carries no decoded picture hash SEI" in warnings[0]["message"], warnings
