"""Helpers of the parity and encoder suites (tests/parity*/, tests/encoder_*/, tests/out_of_range/):
ffprobe's stream fields and decoded frame counts, MD5s of files, one clear ERROR from SwiftVT."""
import hashlib
import re
import subprocess
from pathlib import Path

from swiftvt_testing import swiftvt_errors


def stream_fields(env, path, fields, count_frames=True, stream=None):
    """ffprobe's first stream line of `fields` ("profile,level,nb_read_frames") as one string, as
    the bash tests compared it ("Constrained Baseline,41,30"); "" when ffprobe cannot read the file."""
    command = ["ffprobe", "-v", "error"]
    if count_frames:
        command.append("-count_frames")
    if stream:
        command += ["-select_streams", stream]
    command += ["-show_entries", f"stream={fields}", "-of", "csv=p=0", str(path)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    lines = result.stdout.splitlines()
    return lines[0].strip().rstrip(",") if lines else ""


def decoded_frames(env, path):
    """The frames FFmpeg decodes from the first stream of `path` (nb_read_frames), None if unreadable."""
    text = stream_fields(env, path, "nb_read_frames")
    return int(text) if text.isdigit() else None


def md5_of(path):
    path = Path(path)
    return hashlib.md5(path.read_bytes()).hexdigest() if path.is_file() else None


def assert_one_swiftvt_error(result, pattern):
    """The pipeline ended by an ERROR, exactly one came from SwiftVT and its text matches the
    regular expression `pattern` (the user-facing sentence the test protects; the rule of the bash
    tests' former expect_one_error). Returns that error, for the test to check its domain and code."""
    assert result.status == 0, f"expected an ERROR, got {result.ended_by}:\n{result.log[-3000:]}"
    ours = swiftvt_errors(result)
    assert len(ours) == 1, f"{len(ours)} ERRORs from SwiftVT, expected one:\n{result.log[-3000:]}"
    text = ours[0]["message"] + "\n" + (ours[0]["debug"] or "")
    assert re.search(pattern, text), f"the ERROR does not say {pattern!r}: {text}"
    return ours[0]


INSPECT = r"""
import json, sys
import gi
gi.require_version("Gst", "1.0")
from gi.repository import GObject, Gst
Gst.init(None)
factory = Gst.ElementFactory.find(sys.argv[1])
element = factory.create(None)
properties = {}
for spec in element.list_properties():
    entry = {"blurb": spec.blurb, "type": spec.value_type.name}
    if spec.value_type.is_a(GObject.TYPE_ENUM):
        entry["enum"] = [{"value": int(v), "nick": v.value_nick, "name": v.value_name}
                         for v in sorted(spec.enum_class.__enum_values__.values(), key=int)]
    properties[spec.name] = entry
print(json.dumps({"description": factory.get_metadata("description"), "properties": properties}))
"""


def inspect_element(env, factory):
    """What gst-inspect-1.0 shows of `factory`, as data read through Python GI: {"description",
    "properties": {name: {"blurb", "type", "enum": [{"value", "nick", "name"}] for enumerations}}}."""
    import json
    from swiftvt_testing import SYSTEM_PYTHON, run
    return json.loads(run([SYSTEM_PYTHON, "-c", INSPECT, factory], env, timeout=60))


# GStreamer's error domains and their codes by nick (gst/gsterror.h), to name what an ERROR is.
ERROR_CODES = {
    "gst-core-error-quark": ["", "failed", "too-lazy", "not-implemented", "state-change", "pad", "thread",
                             "negotiation", "event", "seek", "caps", "tag", "missing-plugin", "clock", "disabled"],
    "gst-library-error-quark": ["", "failed", "too-lazy", "init", "shutdown", "settings", "encode"],
    "gst-resource-error-quark": ["", "failed", "too-lazy", "not-found", "busy", "open-read", "open-write",
                                 "open-read-write", "close", "read", "write", "seek", "sync", "settings",
                                 "no-space-left", "not-authorized"],
    "gst-stream-error-quark": ["", "failed", "too-lazy", "not-implemented", "type-not-found", "wrong-type",
                               "codec-not-found", "decode", "encode", "demux", "mux", "format", "decrypt",
                               "decrypt-nokey"],
}


def error_kind(error):
    """(element, "domain/code") of a report's ERROR, as ("enc", "stream/encode")."""
    codes = ERROR_CODES.get(error["domain"], [])
    code = codes[error["code"]] if 0 <= error["code"] < len(codes) else str(error["code"])
    return error["element"], f"{error['domain'].removeprefix('gst-').removesuffix('-error-quark')}/{code}"


CAPS = r"""
import json, sys
import gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst
Gst.init(None)
pipeline = Gst.parse_launch(sys.argv[1] + " ! fakesink name=sink")
pipeline.set_state(Gst.State.PAUSED)
pipeline.get_state(60 * Gst.SECOND)
caps = pipeline.get_by_name("sink").get_static_pad("sink").get_current_caps()
fields = {}
if caps is not None:
    structure = caps.get_structure(0)
    for index in range(structure.n_fields()):
        name = structure.nth_field_name(index)
        kind = structure.get_field_type(name).name
        if kind == "GstFraction":
            _, num, den = structure.get_fraction(name)
            value = f"{num}/{den}"
        else:
            value = str(structure.get_value(name))
        fields[name] = [kind, value]
pipeline.set_state(Gst.State.NULL)
print(json.dumps({"caps": caps.to_string() if caps is not None else None, "fields": fields}))
"""


def negotiated_caps(env, description):
    """The caps `description` negotiates into a fakesink at preroll (PAUSED): {"caps": the string,
    "fields": {name: [GType name, value as a string]}}; read through Python GI, not gst-launch -v."""
    import json
    from swiftvt_testing import SYSTEM_PYTHON, run
    return json.loads(run([SYSTEM_PYTHON, "-c", CAPS, description], env, timeout=120))


SRC = "videotestsrc num-buffers=30 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"


def reference_md5(manifest, name):
    """The MD5 the parity suite compares decoded frames with, as tests/parity.sh did: the manifest's
    9th column, avdec_md5 (FFmpeg's decode), not ref_md5 (the conformance MD5)."""
    return manifest[name]["avdec_md5"]
