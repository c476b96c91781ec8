#!/usr/bin/env python3
"""Runs a gst-launch style pipeline ending in vtmultipasssink and prints, as JSON, the
GstMessageProgress messages it posts (code "pass-N") and its WARNINGs for tests/parity_misc/
test_misc_progress.py and tests/parity/test_parity_multipass_sink.py to assert on: {"ended": "eos",
"error" or "timeout", "error": its text or null, "messages": [{"code", "kind" (start, continue,
complete...), "percent" (the structure's int field, null when absent), "text", "structure"}],
"warnings": [{"element", "domain", "code", "message"}]}.

    multipass_progress.py PIPELINE

The percentage is read from the message's structure: gst_message_parse_progress gives the type,
code and text only, and gst_message_new_progress sets `percent` to 0 for START and CONTINUE
(GStreamer's own helpers never fill it in), which is what an element that does not set the field
reports (issue 32 row 12).
"""
import json
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    Gst.init(None)
    pipeline = Gst.parse_launch(sys.argv[1])
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    report = {"ended": None, "error": None, "messages": [], "warnings": []}
    try:
        while True:
            message = bus.timed_pop_filtered(
                300 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR | Gst.MessageType.PROGRESS
                | Gst.MessageType.WARNING)
            if message is None:
                report["ended"] = "timeout"
                break
            if message.type == Gst.MessageType.ERROR:
                error, debug = message.parse_error()
                report["ended"], report["error"] = "error", f"{error.message} ({debug})"
                break
            if message.type == Gst.MessageType.WARNING:
                warning, _debug = message.parse_warning()
                report["warnings"].append({"element": message.src.get_name(), "message": warning.message,
                                           "domain": GLib.quark_to_string(warning.domain)
                                           if isinstance(warning.domain, int) else str(warning.domain),
                                           "code": warning.code})
                continue
            if message.type == Gst.MessageType.EOS:
                report["ended"] = "eos"
                break
            kind, code, text = message.parse_progress()
            found, percent = message.get_structure().get_int("percent")
            report["messages"].append({"code": code, "kind": kind.value_nick, "percent": percent if found else None,
                                       "text": text, "structure": message.get_structure().to_string()})
    finally:
        pipeline.set_state(Gst.State.NULL)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
