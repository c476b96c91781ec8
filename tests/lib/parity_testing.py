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
    regular expression `pattern` (the user-facing sentence the test protects; tests/lib/
    expect-one-error.sh's rule). Returns that error, for the test to check its domain and code."""
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
