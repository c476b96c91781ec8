import Glibc
import H264
import SwiftVTFileSupport

/// Seeds for the decoder mode, made from the corpus: the state machine reads slice headers only,
/// and a corpus picture is kilobytes of slice data, so a 4 KiB fuzz input cut from a corpus file
/// would hold one picture or less. With each slice cut after its first bytes (its header and a
/// little slice data), a seed holds tens of pictures of the stream's real GOP, reference marking
/// and POC pattern for the fuzzer to mutate.
///
///     swiftvt-h264-fuzz compact-seeds CORPUS-DIR OUTPUT-DIR
enum SeedCompaction {
    /// Bytes kept of each slice NAL unit: slice headers with MMCO lists and weight tables are
    /// longer than this, and get cut like damaged ones, which the decoder mode wants too.
    static let sliceBytesKept = 48
    /// The size of a seed (fuzz/run.sh's -max_len for the decoder mode).
    static let seedBytes = 1024
    static let seedsPerFile = 16

    /// Runs the compaction when the arguments ask for it; returns the exit status, or nil.
    static func runIfAsked(_ arguments: [String]) -> Int32? {
        guard arguments.count >= 2, arguments[1] == "compact-seeds" else { return nil }
        guard arguments.count == 4 else {
            FileContents.printError("usage: swiftvt-h264-fuzz compact-seeds CORPUS-DIR OUTPUT-DIR")
            return 2
        }
        let input = arguments[2], output = arguments[3]
        guard let names = fileNames(in: input) else {
            FileContents.printError("compact-seeds: cannot list \(input)")
            return 1
        }
        var written = 0
        for name in names.sorted() {
            guard let bytes = FileContents.read(input + "/" + name) else { continue }
            for (index, seed) in seeds(from: bytes).enumerated() {
                guard write(seed, to: "\(output)/\(name).\(index).seed") else {
                    FileContents.printError("compact-seeds: cannot write into \(output)")
                    return 1
                }
                written += 1
            }
        }
        print("compact-seeds: \(written) seeds from \(names.count) files in \(input)")
        return 0
    }

    /// Cuts one Annex B stream into seeds: each starts with the parameter sets seen so far, then
    /// the stream's NAL units with slices shortened, up to `seedBytes`.
    static func seeds(from stream: [UInt8]) -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        var parameterSets: [[UInt8]] = []
        var seed: [UInt8] = []
        var seedHasPictures = false
        stream.withUnsafeBytes { bytes in
            AnnexB.forEachNALUnit(in: bytes) { unit in
                guard seeds.count < seedsPerFile else { return }
                var nal = Array(bytes[unit.payloadRange])
                switch nal[0] & 0x1F {
                case 7, 8:
                    if !parameterSets.contains(nal) { parameterSets.append(nal) }
                case 1, 5:
                    if nal.count > sliceBytesKept { nal.removeLast(nal.count - sliceBytesKept) }
                    // A NAL unit does not end in 00 (B.1): the scanner would take it off.
                    while nal.last == 0 { nal.removeLast() }
                    seedHasPictures = true
                default:
                    break
                }
                if seed.count + 4 + nal.count > seedBytes {
                    if seedHasPictures { seeds.append(seed) }
                    seed = []
                    seedHasPictures = false
                }
                if seed.isEmpty {
                    for set in parameterSets where set != nal { seed += [0, 0, 0, 1] + set }
                }
                if seed.count + 4 + nal.count <= seedBytes { seed += [0, 0, 0, 1] + nal }
            }
        }
        if seedHasPictures && seeds.count < seedsPerFile { seeds.append(seed) }
        return seeds
    }

    /// The names of the regular files in `directory`.
    private static func fileNames(in directory: String) -> [String]? {
        guard let handle = opendir(directory) else { return nil }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if entry.pointee.d_type == UInt8(DT_REG) { names.append(name) }
        }
        return names
    }

    private static func write(_ bytes: [UInt8], to path: String) -> Bool {
        guard let file = fopen(path, "wb") else { return false }
        let count = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        return fclose(file) == 0 && count == bytes.count
    }
}
