import H264
import Testing

@Suite("AVCC framing")
struct AVCCTests {
    @Test(
        "in-place conversion refuses, and leaves the bytes untouched, unless every start code is four bytes and units tile the buffer",
        arguments: [
            [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3], // three-byte start code second
            [0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x68, 3], // three-byte start code first
            [9, 0, 0, 0, 1, 0x67, 1, 2], // leading garbage
            [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 0, 0, 1, 0x68, 3], // trailing_zero_8bits between units
            [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x68, 3, 0] // trailing zero at the end
        ] as [[UInt8]])
    func inPlaceRefusal(input: [UInt8]) {
        var bytes = input
        let converted = bytes.withUnsafeMutableBytes { AVCC.convertAnnexBInPlace($0) }
        #expect(!converted)
        #expect(bytes == input)
    }

    @Test("in-place conversion writes big-endian lengths over four-byte start codes")
    func inPlaceConversion() throws {
        var bytes: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x68, 3]
        #expect(bytes.withUnsafeMutableBytes { AVCC.convertAnnexBInPlace($0) })
        #expect(bytes == [0, 0, 0, 3, 0x67, 1, 2, 0, 0, 0, 2, 0x68, 3])
        try bytes.withUnsafeMutableBytes { try AVCC.convertLengthPrefixedToAnnexBInPlace($0) }
        #expect(bytes == [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 0, 1, 0x68, 3])
    }

    @Test(
        "a length running past the sample, or a sample ending inside a length, is an error",
        arguments: [
            ([0, 0, 0, 9, 0x65, 1], 4), ([0, 0, 0, 1, 0x65, 0, 0], 4), ([5, 0x65], 1), ([0, 2, 0x65, 1, 0], 2)
        ] as [([UInt8], Int)])
    func malformedSamples(sample: [UInt8], lengthSize: Int) {
        #expect(throws: H264Error.self) {
            try sample.withUnsafeBytes { try AVCC.nalUnitRanges(in: $0, nalUnitHeaderLength: lengthSize) }
        }
    }

    @Test("NAL length size 3 is rejected; a NAL unit too long for a 1-byte length is refused, not truncated")
    func lengthSizes() throws {
        #expect(throws: H264Error.self) {
            try AVCC.lengthPrefixed(fromAnnexB: [0, 0, 1, 0x65, 1], nalUnitHeaderLength: 3)
        }
        let big: [UInt8] = [0, 0, 1, 0x65] + [UInt8](repeating: 0x11, count: 300)
        #expect(throws: H264Error.self) { try AVCC.lengthPrefixed(fromAnnexB: big, nalUnitHeaderLength: 1) }
        let twoByte = try AVCC.lengthPrefixed(fromAnnexB: big, nalUnitHeaderLength: 2)
        #expect(twoByte.prefix(2) == [1, 45])
    }

    @Test("the scanner: 3- and 4-byte start codes, leading garbage, trailing zeros, empty units")
    func scanner() {
        let stream: [UInt8] = [0xFF, 0, 0, 1, 0x67, 0xAA, 0, 0, 0, 0, 1, 0x68, 0xBB, 0, 0, 1, 0, 0, 1, 0x65, 0xCC, 0, 0]
        let units = AnnexB.nalUnits(in: stream)
        #expect(units.map { Array(stream[$0.payloadRange]) } == [[0x67, 0xAA], [0x68, 0xBB], [0x65, 0xCC]])
        #expect(units.map(\.startCodeLength) == [3, 4, 3])
        #expect(AnnexB.nalUnits(in: [0, 0, 0, 0]).isEmpty)
        #expect(AnnexB.nalUnits(in: []).isEmpty)
    }

    @Test("the streaming splitter holds a start code split across chunks")
    func splitterAcrossChunkBoundaries() {
        let stream: [UInt8] = [0, 0, 0, 1, 0x67, 0xAA, 0, 0, 0, 1, 0x68, 0xBB]
        for cut in 1..<stream.count {
            var splitter = AnnexBStreamSplitter()
            var units = splitter.append(Array(stream[..<cut]))
            units += splitter.append(Array(stream[cut...]))
            if let last = splitter.finish() { units.append(last) }
            #expect(units == [[0x67, 0xAA], [0x68, 0xBB]], "cut at \(cut)")
        }
    }
}
