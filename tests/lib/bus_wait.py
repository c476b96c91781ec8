"""The bus loop of the helper scripts that run one pipeline in their own process
(tests/lib/autoplug_decode.py, tests/lib/decoded_md5.py): PLAYING until EOS, the first ERROR or a
deadline, then NULL."""
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def play_until_end(pipeline, timeout, with_debug=True, warnings=None):
    """Plays `pipeline` until EOS, an ERROR or `timeout` seconds: ("eos" | "error" | "timeout",
    ["element: message (debug)", ...], the debug text only `with_debug`). With a `warnings` list,
    each WARNING's "element: message" is appended to it. The pipeline is set to NULL before
    returning."""
    errors = []
    ended = "timeout"
    pipeline.set_state(Gst.State.PLAYING)
    bus = pipeline.get_bus()
    deadline = time.monotonic() + timeout
    wanted = Gst.MessageType.EOS | Gst.MessageType.ERROR | Gst.MessageType.WARNING
    while time.monotonic() < deadline:
        message = bus.timed_pop_filtered(100 * Gst.MSECOND, wanted)
        if message is None:
            continue
        if message.type == Gst.MessageType.EOS:
            ended = "eos"
            break
        if message.type == Gst.MessageType.WARNING:
            if warnings is not None:
                warnings.append(f"{message.src.get_name()}: {message.parse_warning()[0].message}")
            continue
        error, debug = message.parse_error()
        errors.append(f"{message.src.get_name()}: {error.message}" + (f" ({debug})" if debug and with_debug else ""))
        ended = "error"
        break
    pipeline.set_state(Gst.State.NULL)
    return ended, errors
