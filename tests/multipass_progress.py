#!/usr/bin/env python3
"""Runs a gst-launch style pipeline ending in vtmultipasssink and checks the GstMessageProgress
messages it posts (code "pass-N"): each pass starts at 0 %, its `percent` field rises while it
runs (CONTINUE messages between 0 and 100, never falling) and the pass ends COMPLETE at 100 %.
Prints one line per message; exits 0 when every pass passes, 1 otherwise (or on an ERROR, or
when fewer than MIN_PASSES passes ran).

    multipass_progress.py MIN_PASSES PIPELINE

The percentage is read from the message's structure: gst_message_parse_progress gives the type,
code and text only, and gst_message_new_progress sets `percent` to 0 for START and CONTINUE
(GStreamer's own helpers never fill it in), which is what an element that does not set the field
reports (issue 32 row 12).
"""
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    min_passes = int(sys.argv[1])
    Gst.init(None)
    pipeline = Gst.parse_launch(sys.argv[2])
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    passes: dict[str, list[tuple[Gst.ProgressType, int, str]]] = {}
    problems = []
    try:
        while True:
            message = bus.timed_pop_filtered(
                300 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR | Gst.MessageType.PROGRESS)
            if message is None:
                problems.append("no EOS within 300 s")
                break
            if message.type == Gst.MessageType.ERROR:
                error, debug = message.parse_error()
                problems.append(f"ERROR: {error.message} ({debug})")
                break
            if message.type == Gst.MessageType.EOS:
                break
            kind, code, text = message.parse_progress()
            found, percent = message.get_structure().get_int("percent")
            if not found:
                problems.append(f"{code}: no int field 'percent' in {message.get_structure().to_string()}")
                continue
            print(f"{code} {kind.value_nick} {percent} % - {text}")
            passes.setdefault(code, []).append((kind, percent, text))
    finally:
        pipeline.set_state(Gst.State.NULL)

    if len(passes) < min_passes:
        problems.append(f"{len(passes)} pass(es) reported, at least {min_passes} expected")
    for code, messages in passes.items():
        percents = [percent for _, percent, _ in messages]
        kinds = [kind for kind, _, _ in messages]
        if kinds[0] != Gst.ProgressType.START or percents[0] != 0:
            problems.append(f"{code}: does not start with START at 0 %: {percents}")
        if kinds[-1] != Gst.ProgressType.COMPLETE or percents[-1] != 100:
            problems.append(f"{code}: does not end with COMPLETE at 100 %: {percents}")
        if any(later < earlier for earlier, later in zip(percents, percents[1:])):
            problems.append(f"{code}: the percentage falls: {percents}")
        running = [percent for kind, percent, _ in messages if kind == Gst.ProgressType.CONTINUE]
        if not any(0 < percent < 100 for percent in running):
            problems.append(f"{code}: no CONTINUE message between 0 and 100 %: {running}")
        if len(set(running)) < min(3, len(running)):
            problems.append(f"{code}: the CONTINUE messages do not rise: {running}")
    for problem in problems:
        print(f"multipass_progress: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
