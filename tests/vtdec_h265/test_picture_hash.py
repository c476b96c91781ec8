"""verify-picture-hash (H.265 D.3.19): one WARNING names the first picture whose decoded planes
differ from its decoded picture hash SEI (a corpus stream with one byte of the 6th picture's MD5
changed in a tmp copy: picture 5 in decoding order, POC 5); a stream without hash SEIs (x265enc's
default) gets one WARNING saying there is nothing to check; the property is off by default, and then
no picture is checked. CRC and checksum SEIs (x265 --hash 2 and 3) are checked too."""
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
    expected = r"picture 5 in decoding order \(POC 5, PTS [^)]*\) differs from its decoded picture hash SEI \(MD5 of Y"
    assert re.search(expected, message), message


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


def encode_with_hash(runner, folder, option, kind):
    """x265 --hash OPTION (2 CRC, 3 checksum) over a 4:2:0 10-bit clip of 8 pictures."""
    path = folder / f"hash-{kind}.265"
    runner(f"videotestsrc num-buffers=8 pattern=ball ! video/x-raw,format=I420_10LE,width=320,height=240 ! "
           f"x265enc option-string=hash={option} ! video/x-h265,stream-format=byte-stream ! filesink location={path}",
           timeout=120, expect="eos")
    return path


@pytest.fixture(scope="module", params=[(2, "CRC"), (3, "checksum")], ids=["crc", "checksum"])
def other_hash_kind(request, runner, tmp_path_factory):
    """A stream with CRC or checksum hash SEIs, and the kind's name."""
    option, kind = request.param
    return encode_with_hash(runner, tmp_path_factory.mktemp("hashes"), option, kind), kind


def test_crc_and_checksum_pictures_match(runner, other_hash_kind):
    """Checksums match in every component. x265 (3.5 here) resets its chroma CRCs at every CTU row
    (FrameFilter::processPostRow sets m_crc[1] and m_crc[2] to 0xffff before each row's update,
    where D.3.19 starts once per picture), so its Cb and Cr CRCs cover the last CTU row only: the
    check reports exactly that, the first picture's Cb and Cr, while Y's CRC matches."""
    path, kind = other_hash_kind
    result = runner(f"filesrc location={path} ! h265parse ! vtdec name=dec verify-picture-hash=true ! fakesink",
                    timeout=120, expect="eos")
    messages = [w["message"] for w in vtdec_warnings(result)]
    if kind == "checksum":
        assert messages == []
    else:
        assert len(messages) == 1, messages
        assert "picture 0 in decoding order" in messages[0] and "(CRC of Cb, Cr," in messages[0], messages


def test_a_checksum_difference_is_named(runner, tmp_path):
    """The 4th picture's picture_checksum[0] damaged: one WARNING naming picture 3 and the checksum of
    Y (not done with CRCs: x265's own chroma CRCs already differ at picture 0, above)."""
    data = bytearray(encode_with_hash(runner, tmp_path, 3, "checksum").read_bytes())
    position = -1
    for _ in range(4):   # the 4th picture's hash SEI
        position = data.find(b"\x00\x00\x01\x50\x01\x84", position + 1)
    data[position + 8] ^= 0x5A   # the first byte of picture_checksum[0]
    damaged = tmp_path / "damaged.265"
    damaged.write_bytes(bytes(data))
    result = runner(f"filesrc location={damaged} ! h265parse ! vtdec name=dec verify-picture-hash=true ! fakesink",
                    timeout=120, expect="eos")
    messages = [w["message"] for w in vtdec_warnings(result)]
    assert len(messages) == 1, messages
    assert "(checksum of Y" in messages[0] and "picture 3 in decoding order" in messages[0], messages
