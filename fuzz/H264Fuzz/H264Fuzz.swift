// A libFuzzer target over the H.264 layer, in three modes (SWIFTVT_FUZZ_MODE):
//
// - bitstream (the default): the start-code scanner, the streaming splitter, Annex B <-> AVCC
//   conversion, the avcC parser and, through the access-unit assembler, the SPS/PPS/SEI/
//   slice-header parsers and the POC computation;
// - decoder: the decoding state machine (H264PictureDecoder: DPB, marking, reference lists,
//   frame_num gaps, POC, output) over an accelerator that checks what a driver relies on
//   (DecoderStateMachineFuzz.swift, CheckingAccelerator.swift);
// - writers: random valid SPS/PPS/slice headers written and parsed back, and the coding planner's
//   GOPs decoded by the state machine (WriterRoundTripFuzz.swift);
// - hevc-bitstream: the H.265 layer likewise: scanning, access units, VPS/SPS/PPS/slice header/SEI
//   parsers and their writers, POC, length-prefixed conversion, hvcC and format descriptions
//   (HEVCBitstreamFuzz.swift).
//
// Built with `-D FUZZING -sanitize=fuzzer,address` by fuzz/run.sh. Without FUZZING the same body
// runs over files named on the command line, to replay a crash or check a corpus.
import H264
import SwiftVTFileSupport

import Glibc

/// What one fuzz input exercises.
enum FuzzMode: String, CaseIterable, Sendable {
    case bitstream, decoder, writers
    case hevcBitstream = "hevc-bitstream"

    /// From SWIFTVT_FUZZ_MODE (an environment variable, so that libFuzzer's own command line
    /// stays its own, and child processes it starts inherit the mode).
    static let selected: FuzzMode = {
        guard let value = getenv("SWIFTVT_FUZZ_MODE") else { return .bitstream }
        let name = String(cString: value)
        guard let mode = FuzzMode(rawValue: name) else {
            FileContents.printError(
                "SWIFTVT_FUZZ_MODE=\(name) is not one of \(FuzzMode.allCases.map(\.rawValue).joined(separator: ", "))")
            exit(2)
        }
        return mode
    }()

    func exercise(_ data: UnsafeRawBufferPointer) {
        switch self {
        case .bitstream: exerciseBitstreamLayer(data)
        case .decoder: exerciseDecoder(data)
        case .writers: exerciseWriters(data)
        case .hevcBitstream: exerciseHEVCBitstreamLayer(data)
        }
    }
}

/// Exercises every entry point of the bitstream layer on one input. Invariants that must hold
/// for any input are checked with `precondition`, so that a violation is a crash the fuzzer
/// reports.
func exerciseBitstreamLayer(_ data: UnsafeRawBufferPointer) {
    // 1. Scanning and access-unit assembly (which runs every parser).
    var assembler = AccessUnitAssembler()
    var units: [[UInt8]] = []
    AnnexB.forEachNALUnit(in: data) { unit in
        let nal = UnsafeRawBufferPointer(rebasing: data[unit.payloadRange])
        units.append(Array(nal))
        _ = assembler.push(nalUnit: nal)
    }
    _ = assembler.finish()

    // 2. Annex B -> AVCC -> Annex B keeps every NAL unit.
    for lengthSize in [4, 2] {
        if let avcc = try? AVCC.lengthPrefixed(fromAnnexB: Array(data), nalUnitHeaderLength: lengthSize) {
            let ranges = (try? avcc.withUnsafeBytes { try AVCC.nalUnitRanges(in: $0, nalUnitHeaderLength: lengthSize) }) ?? []
            precondition(ranges.count == units.count, "AVCC round trip changed the NAL unit count")
            for (range, unit) in zip(ranges, units) {
                precondition(avcc[range].elementsEqual(unit), "AVCC round trip changed a NAL unit")
            }
        }
    }

    // 3. The streaming splitter finds the same NAL units however the data is chunked.
    var splitter = AnnexBStreamSplitter()
    var streamed: [[UInt8]] = []
    var offset = 0
    var chunkSize = 1
    while offset < data.count {
        let end = min(data.count, offset + chunkSize)
        streamed += splitter.append(UnsafeRawBufferPointer(rebasing: data[offset..<end]))
        offset = end
        chunkSize = chunkSize % 97 + 7
    }
    if let last = splitter.finish() { streamed.append(last) }
    precondition(streamed == units, "streaming splitter disagrees with the whole-buffer scanner")

    // 4. The same bytes as an AVCC sample and as an avcC record.
    _ = try? AVCC.nalUnitRanges(in: data, nalUnitHeaderLength: 4)
    if let record = try? AVCDecoderConfigurationRecord(parsing: data) {
        if let bytes = try? record.serialized() {
            let again = try? AVCDecoderConfigurationRecord(parsing: bytes)
            precondition(again == record, "avcC serialize -> parse did not round-trip")
        }
    }

    // 5. Each NAL unit handed straight to each parser, whatever its type says.
    for unit in units {
        unit.withUnsafeBytes { nal in
            _ = try? SequenceParameterSet.parse(nalUnit: nal)
            var store = assembler.parameterSets
            _ = try? store.storePictureParameterSet(nal)
        }
    }
}

#if FUZZING
/// libFuzzer's driver (LLVM 12 and later): runs the fuzzing loop with our callback.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// SwiftPM links an executable target's entry point under the name `<module>_main`; libFuzzer
/// would otherwise provide `main` itself, so hand control to its driver from here.
@_cdecl("H264Fuzz_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    if let status = SeedCompaction.runIfAsked(CommandLine.arguments) { return status }
    _ = FuzzMode.selected
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in
        FuzzMode.selected.exercise(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }
}
#else
@main
struct ReplayFuzzInputs {
    static func main() {
        if let status = SeedCompaction.runIfAsked(CommandLine.arguments) { exit(status) }
        let paths = CommandLine.arguments.dropFirst()
        if paths.isEmpty {
            FileContents.printError(
                "usage: [SWIFTVT_FUZZ_MODE=bitstream|decoder|writers|hevc-bitstream] swiftvt-h264-fuzz FILE...  (replays fuzz inputs without libFuzzer)\n"
                    + "       swiftvt-h264-fuzz compact-seeds CORPUS-DIR OUTPUT-DIR  (decoder-mode seeds: slices cut to their headers)")
            exit(2)
        }
        let mode = FuzzMode.selected
        for path in paths {
            guard let bytes = FileContents.read(path) else {
                FileContents.printError("cannot read \(path)")
                exit(1)
            }
            bytes.withUnsafeBytes { mode.exercise($0) }
            print("ok \(mode.rawValue) \(path) (\(bytes.count) bytes)")
        }
    }
}
#endif
