"""What OUTPUT carries besides the encoded video, decided before any encoding: its container
(from OUTPUT's extension), INPUT's audio tracks copied as they are, and a note for every other
stream left out. An audio track the container cannot carry stops the job here, in one line that
says what to do, rather than in the muxer after every pass has run."""
import dataclasses
import os

from .errors import JobError

# OUTPUT's extension -> the muxer that writes it. The MP4 family gets its edit lists rewritten
# after muxing (mp4edits); Matroska has none to rewrite.
MUXERS = {".mp4": "mp4mux", ".m4v": "mp4mux", ".mov": "qtmux", ".mkv": "matroskamux"}
MUXER_FORMATS = {"mp4mux": "MP4", "qtmux": "QuickTime", "matroskamux": "Matroska"}
# Extensions offered when a track does not fit, in this order (ALAC fits MP4 but not Matroska).
ALTERNATIVES = [(".mp4", "mp4mux"), (".mov", "qtmux"), (".mkv", "matroskamux")]

# Caps fields a parser converts for the muxer when it links (aacparse writes ADTS AAC from an
# MPEG-TS as the raw AAC that the MP4 muxers ask for): the stream is checked as converted.
PARSER_CONVERSIONS = {("audio/mpeg", "stream-format", "adts"): "raw"}

# How the note names a stream kind that the farm does not copy.
KIND_NAMES = {"subtitle": "subtitle", "application": "data", "text": "text", "image": "image"}


@dataclasses.dataclass
class OutputStreams:
    muxer: str                      # the GStreamer element that writes OUTPUT
    audio: list                     # caps strings of INPUT's audio tracks to copy, in parsebin's order
    notes: list = dataclasses.field(default_factory=list)  # one line each, for the user
    audio_lead: int = 0             # ns the earliest audio packet lies before running time zero (frameindex)

    @property
    def edits_rewritten(self):
        """mp4mux and qtmux: the output's edit lists are rewritten after muxing (mp4edits)."""
        return self.muxer in ("mp4mux", "qtmux")


def muxer_for(output):
    """The muxer for OUTPUT's extension. JobError for an extension the farm does not write."""
    extension = os.path.splitext(output)[1].lower()
    muxer = MUXERS.get(extension)
    if muxer is None:
        raise JobError(f"cannot write {output}: the farm writes .mp4, .m4v, .mov (QuickTime) or .mkv (Matroska), "
                       f"not {extension or 'a file without an extension'}")
    return muxer


def _accepts(Gst, muxer, kind, caps):
    """Whether `muxer`'s request pad for `kind` ("audio") takes `caps`, after the conversions a
    parser makes when it links."""
    as_converted = Gst.Caps.new_empty()
    for index in range(caps.get_size()):
        structure = caps.get_structure(index)  # a copy (PyGObject): changed, then appended
        for (name, field, value), converted in PARSER_CONVERSIONS.items():
            if structure.get_name() == name and structure.get_value(field) == value:
                structure.set_value(field, converted)
        as_converted.append_structure(structure)
    factory = Gst.ElementFactory.find(muxer)
    for template in factory.get_static_pad_templates():
        if template.direction == Gst.PadDirection.SINK and template.name_template.startswith(kind + "_"):
            if template.get_caps().can_intersect(as_converted):
                return True
    return False


def _describe(caps):
    """'MPEG-4 AAC (audio/mpeg)': a codec's name as GStreamer's tags say it, and its caps name."""
    from gi.repository import GstPbutils
    name = caps.get_structure(0).get_name()
    description = GstPbutils.pb_utils_get_codec_description(caps) if caps.is_fixed() else None
    return f"{description} ({name})" if description else name


def plan(Gst, index, input_name, output, copy_audio):
    """OutputStreams for INPUT's frame index (`index.streams`). JobError, before any work, when an
    audio track that is to be copied does not fit OUTPUT's container, or the muxer is missing."""
    muxer = muxer_for(output)
    if Gst.ElementFactory.find(muxer) is None:
        raise JobError(f"cannot write {output}: GStreamer has no {muxer} (Debian package gstreamer1.0-plugins-good)")
    audio = [caps for kind, caps in index.streams if kind == "audio"]
    notes = []
    if audio and not copy_audio:
        notes.append(f"{input_name}'s audio track(s) ({len(audio)}) are not copied (--no-audio)")
        audio = []
    for number, caps_text in enumerate(audio, start=1):
        caps = Gst.Caps.from_string(caps_text)
        if _accepts(Gst, muxer, "audio", caps):
            continue
        fits = [f"{extension} ({other})" for extension, other in ALTERNATIVES
                if other != muxer and Gst.ElementFactory.find(other) is not None
                and _accepts(Gst, other, "audio", caps)]
        remedy = "pass --no-audio" + (f", or write OUTPUT as {' or '.join(fits)}, which "
                                      f"carr{'ies' if len(fits) == 1 else 'y'} it"
                                      if fits else "")
        raise JobError(f"{input_name}'s audio track {number} of {len(audio)} is {_describe(caps)}, which {muxer} "
                       f"cannot carry in {MUXER_FORMATS[muxer]} ({os.path.basename(output)}): {remedy}")
    counts = {}
    for kind, _ in index.streams:
        counts[kind] = counts.get(kind, 0) + 1
    if counts.get("video", 0) > 1:
        notes.append(f"{input_name}'s other video track(s) ({counts['video'] - 1}) are not copied "
                     "(the farm encodes the first video track)")
    for kind, count in counts.items():
        if kind not in ("video", "audio"):
            notes.append(f"{input_name}'s {KIND_NAMES.get(kind, kind)} track(s) ({count}) are not copied "
                         "(the farm copies audio only)")
    return OutputStreams(muxer, audio, notes, index.audio_lead if audio else 0)
