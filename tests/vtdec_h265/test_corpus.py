"""Every stream of the H.265 corpus (x265 over real content; MANIFEST.tsv: libavcodec's MD5 of the
decoded planes) through `filesrc ! PARSER ! vtdec verify-picture-hash=true`, with h265parse and with
the project's h265parse-to-hvcc (skipped while the plugin has none): the planes' MD5 is the manifest's,
with its frame count, and no picture differs from its decoded picture hash SEI (no WARNING). The
field-coded stream comes out one picture per field, as libavcodec decodes it (avdec_h265 stops on it
with a not-negotiated error: h265parse announces frames twice as high as its pictures)."""
import csv

import pytest

from swiftvt_testing import corpus_root
from vtdec_h265_testing import PARSERS, vtdec_warnings


def corpus_names():
    manifest = corpus_root() / "h265" / "MANIFEST.tsv"
    if not manifest.is_file():
        return ["(corpus absent)"]
    with open(manifest, newline="") as table:
        return [row["file"] for row in csv.DictReader(table, delimiter="\t")]


NAMES = corpus_names()


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("name", NAMES)
def test_decodes_to_the_manifest_md5(decoded, h265_corpus, name, parser):
    stream = decoded(name, parser)
    row = h265_corpus[1][name]
    assert stream.md5 == row["ref_md5"], f"{stream.frames} frames; {stream.result.log[-1500:]}"


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("name", NAMES)
def test_decodes_every_frame(decoded, h265_corpus, name, parser):
    stream = decoded(name, parser)
    assert stream.frames == int(h265_corpus[1][name]["frames"]), stream.result.log[-1500:]


@pytest.mark.parametrize("parser", PARSERS)
@pytest.mark.parametrize("name", NAMES)
def test_every_picture_matches_its_hash_sei(decoded, name, parser):
    stream = decoded(name, parser)
    assert vtdec_warnings(stream.result) == [], "verify-picture-hash warned"


@pytest.mark.parametrize("name", NAMES)
def test_active_backend_is_libavcodec(h265_corpus, runner, name):
    folder, _ = h265_corpus
    result = runner(f"filesrc location={folder / name} ! h265parse ! vtdec name=dec ! fakesink", timeout=120,
                    expect="eos", properties=("active-backend",))
    assert result.property("dec", "active-backend") == "libavcodec (software)", result.log[-1500:]


@pytest.mark.parametrize("stream_format", ["hvc1", "hev1", "byte-stream"])
@pytest.mark.parametrize("name", ["main_aud_repeat_hdrs.265", "main_opengop_cra.265"])
def test_each_stream_format_decodes_to_the_manifest_md5(plugin_env, h265_corpus, runner, tmp_path, name, stream_format):
    """h265parse's three stream formats (alignment=au): hvc1 with the hvcC record, hev1 with
    parameter sets in band, Annex B."""
    from vtdec_h265_testing import decode_to_planes
    folder, manifest = h265_corpus
    stream = decode_to_planes(runner, folder / name, manifest[name],
                              f"h265parse ! video/x-h265,stream-format={stream_format},alignment=au", tmp_path)
    expected = (int(manifest[name]["frames"]), manifest[name]["ref_md5"])
    assert (stream.frames, stream.md5) == expected, stream.result.log[-1500:]
