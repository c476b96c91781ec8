"""Every H.265 corpus stream through `filesrc ! h265parse-to-hvcc ! avdec_h265` decodes to the
manifest's ref_md5 (libavcodec's pictures, cropped, in output order) with its frame count. The
field-coded stream included: avdec_h265 outputs its fields one per buffer (interlace-mode
alternate), as after h265parse, and they hash to the manifest's MD5 field by field."""
import pytest

from h265parse_testing import decode, stream_names


@pytest.mark.parametrize("name", stream_names())
def test_decodes_to_the_reference_md5(h265_env, manifest, stream, name):
    path = stream(name)
    result = decode(h265_env, f"filesrc location={path} ! h265parse-to-hvcc ! avdec_h265")
    row = manifest[name]
    assert (result["ended"], result["frames"], result["md5"]) == ("eos", int(row["frames"]), row["ref_md5"]), result


def test_every_corpus_stream_is_listed(manifest):
    assert len(manifest) >= 13, sorted(manifest)


# NAL- and AU-aligned input (h265parse's byte-stream output) splits at buffer boundaries instead of
# waiting for the next start code; the pictures are the same.
@pytest.mark.parametrize("alignment", ["nal", "au"])
@pytest.mark.parametrize("name", ["main_ld_cif_slices.265", "main_opengop_cra.265", "main_interlaced_tff.265"])
def test_aligned_input_decodes_to_the_reference_md5(h265_env, manifest, stream, name, alignment):
    result = decode(h265_env, f"filesrc location={stream(name)} ! h265parse "
                              f"! video/x-h265,stream-format=byte-stream,alignment={alignment} "
                              "! h265parse-to-hvcc ! avdec_h265")
    row = manifest[name]
    assert (result["ended"], result["frames"], result["md5"]) == ("eos", int(row["frames"]), row["ref_md5"]), result
