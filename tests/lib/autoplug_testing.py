"""The drop-in tests' helpers (tests/autoplug/; fixtures in its conftest.py)."""
import dataclasses
import json
import re
import subprocess

from swiftvt_testing import ROOT, SYSTEM_PYTHON

# The other H.264 decoders are ranked out, so that SwiftVT's are the ones autopluggers find:
# GStreamer's NVDEC decoders register on the CUDA double too (nvh264dec, primary, on NVIDIA's own
# parser, which the double does not provide; nvh264sldec), as they would on a real GPU.
RANKS = "avdec_h264:NONE,openh264dec:NONE,nvh264dec:NONE,nvh264sldec:NONE"
MODES = ["no-device", "software-va", "software-cuda"]
EXPECTED_DECODER = {"no-device": "vtdec", "software-va": "vtdec_hw", "software-cuda": "vtdec_hw"}
DECODE = ROOT / "tests" / "lib" / "autoplug_decode.py"


@dataclasses.dataclass
class Decoded:
    decoders: list     # the decoder factories the app plugged, in order
    frames: int
    md5: str
    errors: int
    ended: str
    line: str


def decode(env, app, path, timeout=60):
    """tests/lib/autoplug_decode.py: `path` through `app` (playbin, decodebin...), as an application."""
    try:
        out = subprocess.run([SYSTEM_PYTHON, str(DECODE), app, str(path), str(timeout)], env=env, capture_output=True,
                             text=True, timeout=timeout + 60).stdout
    except subprocess.TimeoutExpired:
        out = ""
    line = out.splitlines()[0] if out else ""
    fields = dict(re.findall(r" (\w+)=(\S+)", line))
    return Decoded(fields.get("decoder", "none").split(","), int(fields.get("frames", 0)), fields.get("md5", "none"),
                   int(fields.get("errors", -1)), fields.get("ended", "none"),
                   line or f"(no result: {app} did not finish)")


FACTORIES = """
import json, sys
import gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst
Gst.init(None)
out = {}
for name in sys.argv[1:]:
    factory = Gst.ElementFactory.find(name)
    templates = {t.name_template: t.get_caps().to_string() for t in factory.get_static_pad_templates()}
    out[name] = {"rank": factory.get_rank(), "templates": templates}
print(json.dumps(out))
"""


def factories(env, *names):
    """{name: {"rank", "templates": {pad template: caps}}} as GStreamer registers them in `env`."""
    result = subprocess.run([SYSTEM_PYTHON, "-c", FACTORIES, *names], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)
