// swiftvt-farm: the Swift half of multi-pass encoding across machines (pipelines/multipass-farm.py,
// a Python GI + Dask job). Every decision that vtmultipasssink makes on one host is made here with
// the same Swift code: a chunk's passes run through MultiPassDriver over a CompressionSession,
// a MultiPassStorage and a FrameSilo; the plan for the whole file is MultiPassRateControl's over
// every chunk's analysis; the splice reads the chunks' silos. The job decodes (GStreamer),
// schedules and moves the data (Dask), and muxes (mp4mux).
//
//   swiftvt-farm encode CHUNK_DIR --bitrate BITS_PER_SECOND [--codec h264|h265] [--threads N] [--max-keyframe-interval N] [--plan FILE]
//   swiftvt-farm plan --bitrate BITS_PER_SECOND --max-passes N --completed-passes K [--codec h264|h265] --state DIR --out DIR CHUNK_DIR...
//   swiftvt-farm splice --output FILE CHUNK_DIR...
//   swiftvt-farm defaults        (the rules the job shares with the encoder, one "name value" a line)
//
// docs/farm.md describes the frame stream (encode's standard input), the chunk directory and the
// splice file.
import Glibc
import SwiftVTFileSupport

let arguments = Array(CommandLine.arguments.dropFirst())
let usage = """
    usage: swiftvt-farm encode CHUNK_DIR --bitrate BITS_PER_SECOND [--codec h264|h265] [--threads N] [--max-keyframe-interval FRAMES] [--plan FILE]
           swiftvt-farm plan --bitrate BITS_PER_SECOND --max-passes N --completed-passes K [--codec h264|h265] --state DIR --out DIR CHUNK_DIR...
           swiftvt-farm splice --output FILE CHUNK_DIR...
           swiftvt-farm defaults
    """

guard let command = arguments.first else {
    FileContents.printError(usage)
    exit(2)
}
do throws(FarmFailure) {
    let options = try FarmOptions(Array(arguments.dropFirst()))
    switch command {
    case "encode": try EncodeCommand(options).run()
    case "plan": try PlanCommand(options).run()
    case "splice": try SpliceCommand(options).run()
    case "defaults": DefaultsCommand.run()
    default: throw FarmFailure.usage("unknown command \"\(command)\"")
    }
} catch .usage(let problem) {
    FileContents.printError("swiftvt-farm: \(problem)\n\(usage)")
    exit(2)
} catch .failed(let problem) {
    FileContents.printError("swiftvt-farm: \(problem)")
    exit(1)
}
exit(0)
