"""The caption tests' side of tests/lib/captions_tool.py (tests/encoder_controls/test_captions.py,
tests/vtenc_va/test_captions.py): it runs in its own process with GStreamer's Python bindings."""
import json
import subprocess

from captions_tool import expected_cc_data
from swiftvt_testing import ROOT, SYSTEM_PYTHON

TOOL = ROOT / "tests" / "lib" / "captions_tool.py"


def tool(env, *arguments):
    completed = subprocess.run([SYSTEM_PYTHON, str(TOOL), *map(str, arguments)], env=env, capture_output=True,
                               text=True, timeout=300)
    assert completed.stdout.strip(), completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["ended"] == "eos", result
    return result


def write(env, kind, tail, frames):
    """Frames with captions of `kind` into the pipeline tail; the runner's {ended, errors, warnings}."""
    return tool(env, "write", frames, kind, tail)


def captions_in_presentation_order(env, description):
    """The cc_data of each output picture's caption meta, by presentation time, and the picture count."""
    result = tool(env, "read", description)
    return [bytes.fromhex(data) for _, data in sorted(result["captions"])], result["frames"]


def expected(kind, frames):
    """What a decoder's metas hold for `frames` frames written with captions of `kind`."""
    return [expected_cc_data(kind, index) for index in range(frames)]
