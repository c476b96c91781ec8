// In-process benchmarks of the bitstream layer. Run through bench/annexb-to-avcc.sh, which makes
// the inputs and prints the ratios; this program only measures. Figures are medians of several
// runs, each ratio taken against a plain memcpy of the same bytes in the same process.
import Glibc
import H264
import SwiftVTFileSupport

@main
struct SwiftVTBench {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2, arguments[0] == "annexb-to-avcc" else {
            FileContents.printError("usage: swiftvt-bench annexb-to-avcc FILE [REPEAT]\n"
                + "  Reads an Annex B H.264 file, repeats it REPEAT times in memory (default 1), and\n"
                + "  measures start-code scanning and Annex B -> AVCC conversion against memcpy.")
            exit(2)
        }
        let repeatCount = arguments.count > 2 ? Int(arguments[2]) ?? 1 : 1
        guard let file = FileContents.read(arguments[1]) else {
            FileContents.printError("swiftvt-bench: cannot read \(arguments[1])")
            exit(1)
        }
        var input: [UInt8] = []
        input.reserveCapacity(file.count * repeatCount)
        for _ in 0..<repeatCount { input.append(contentsOf: file) }
        runAnnexBToAVCC(input, name: arguments[1])
        runAccessUnitSplitting(input)
    }

    /// The parser's own work per NAL unit: access-unit splitting with slice-header parsing and POC.
    static func runAccessUnitSplitting(_ input: [UInt8]) {
        var units = 0
        var nalCount = 0
        let seconds = median(runs: 5) {
            var splitter = AccessUnitSplitter()
            units = 0
            nalCount = 0
            input.withUnsafeBytes { data in
                var offset = 0
                while offset < data.count {
                    let rest = UnsafeRawBufferPointer(rebasing: data[offset...])
                    switch splitter.next(in: rest, dataEnd: .accessUnitBoundary) {
                    case .skip(let count): offset += count
                    case .needMoreData: offset = data.count
                    case .accessUnit(let unit):
                        units += 1
                        nalCount += unit.nalUnits.count + unit.problems.count
                        offset += unit.byteCount
                    }
                }
            }
        }
        print("access-unit splitting (parse + POC): \(units) access units, \(String(format2: Double(nalCount) / seconds / 1_000_000)) M NAL/s, \(String(format2: Double(input.count) / seconds / 1_000_000)) MB/s")
    }

    static func runAnnexBToAVCC(_ input: [UInt8], name: String) {
        let megabytes = Double(input.count) / 1_000_000
        var output = [UInt8](repeating: 0, count: input.count + input.count / 3 + 16)
        var nalCount = 0

        let memcpySeconds = median(runs: 7) {
            output.withUnsafeMutableBytes { destination in
                input.withUnsafeBytes { destination.copyMemory(from: $0) }
            }
        }
        let scanSeconds = median(runs: 7) {
            var count = 0
            input.withUnsafeBytes { AnnexB.forEachNALUnit(in: $0) { _ in count += 1 } }
            nalCount = count
        }
        var converted: [UInt8] = []
        converted.reserveCapacity(output.count)
        let convertSeconds = median(runs: 7) {
            converted.removeAll(keepingCapacity: true)
            _ = try? input.withUnsafeBytes {
                try AVCC.appendLengthPrefixed(fromAnnexB: $0, nalUnitHeaderLength: 4, to: &converted)
            }
        }
        // In place: the input rewritten with four-byte start codes only (before any clock
        // starts), since only then can start codes become 4-byte lengths without moving a byte.
        let fourByteInput = (try? AVCC.annexB(fromLengthPrefixed: converted, nalUnitHeaderLength: 4)) ?? []
        var scratch = fourByteInput
        var inPlaceOK = true
        let inPlaceSeconds = median(runs: 7) {
            scratch.withUnsafeMutableBytes { inPlaceOK = AVCC.convertAnnexBInPlace($0) && inPlaceOK }
        } setUp: {
            scratch.withUnsafeMutableBytes { bytes in
                fourByteInput.withUnsafeBytes { bytes.copyMemory(from: $0) }
            }
        }
        print("input: \(name), \(String(format2: megabytes)) MB, \(nalCount) NAL units")
        report("memcpy (reference)", seconds: memcpySeconds, megabytes: megabytes, nalCount: nalCount, memcpy: memcpySeconds)
        report("start-code scan", seconds: scanSeconds, megabytes: megabytes, nalCount: nalCount, memcpy: memcpySeconds)
        report("Annex B -> AVCC (copying)", seconds: convertSeconds, megabytes: megabytes, nalCount: nalCount, memcpy: memcpySeconds)
        if inPlaceOK {
            report("Annex B (4-byte start codes) -> AVCC in place", seconds: inPlaceSeconds, megabytes: megabytes, nalCount: nalCount, memcpy: memcpySeconds)
        } else {
            print("Annex B -> AVCC (in place): FAILED to convert the four-byte start-code input")
        }
    }

    static func report(_ label: String, seconds: Double, megabytes: Double, nalCount: Int, memcpy: Double) {
        let rate = megabytes / seconds
        let nalRate = Double(nalCount) / seconds / 1_000_000
        let ratio = memcpy / seconds
        print("\(label): \(String(format2: rate)) MB/s, \(String(format2: nalRate)) M NAL/s, "
            + "speed ratio to memcpy \(String(format2: ratio))")
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func median(runs: Int, _ body: () -> Void, setUp: () -> Void = {}) -> Double {
        var times: [Double] = []
        for _ in 0..<runs {
            setUp()
            let start = now()
            body()
            times.append(now() - start)
        }
        times.sort()
        return times[times.count / 2]
    }

}

extension String {
    /// Two decimals, without Foundation's String(format:).
    init(format2 value: Double) {
        let scaled = (value * 100).rounded()
        let whole = Int(scaled / 100)
        let fraction = Int(abs(scaled).truncatingRemainder(dividingBy: 100))
        self = "\(whole).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
