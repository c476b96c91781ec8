"""NAL units of layers above the base layer (nuh_layer_id > 0, 7.4.2.2: scalable, multiview and
3D extensions) are passed over with one WARNING, however many there are, and the base layer
decodes exactly."""
from h265parse_testing import decode, with_layer_nal_units


def test_layer_nal_units_give_one_warning_and_the_base_layer(h265_env, runner, manifest, stream, work):
    layered = work / "layered.265"
    layered.write_bytes(with_layer_nal_units(stream("main_bpyramid_refs5.265").read_bytes(), every=10))
    result = runner.eos(f"filesrc location={layered} ! h265parse-to-hvcc name=parse ! fakesink", timeout=60)
    ours = [w for w in result.warnings if w["element"] == "parse"]
    assert len(ours) == 1 and "nuh_layer_id > 0" in ours[0]["message"], result.warnings
    decoded = decode(h265_env, f"filesrc location={layered} ! h265parse-to-hvcc ! avdec_h265")
    assert decoded["md5"] == manifest["main_bpyramid_refs5.265"]["ref_md5"], decoded
