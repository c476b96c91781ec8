import Testing

@testable import H265

/// H265AccessUnitSplitter over Annex B bytes (7.4.2.4.4), the assembler's `accessUnits` depth and
/// reset, and GStreamer's names for profile, tier and level: what h265parse-to-hvcc builds on.
@Suite("H.265 access-unit splitter")
struct H265AccessUnitSplitterTests {
    static let parameterSets = H265AccessUnitTests.parameterSets
    static func slice(_ type: H265NALUnitType, lsb: Int = 0, first: Bool = true) -> [UInt8] {
        H265AccessUnitTests.slice(type, lsb: lsb, first: first)
    }

    /// IDR (two slice segments, a suffix SEI), TRAIL_R, TRAIL_R, then a layer-1 NAL unit inside
    /// the last access unit.
    static let nalUnits: [[UInt8]] =
        parameterSets + [
            slice(.idrWithRADL), slice(.idrWithRADL, first: false),
            H265TestStreams.seiNALUnit(suffix: true, [(132, H265AccessUnitTests.md5)]),
            slice(.trailR, lsb: 8), slice(.trailR, lsb: 4),
            [0x02, 0x09, 0x80, 0x12, 0x34, 0x80] // TRAIL_R of nuh_layer_id 1
        ]

    struct Split {
        var units: [H265AccessUnitSplitter.AccessUnit] = []
        var skipped = 0
    }

    /// Feeds `bytes` in pieces of `chunk` bytes, as GstBaseParse's adapter would (the data passed
    /// always starts at the first byte not consumed), then drains at the end.
    static func split(_ bytes: [UInt8], chunk: Int, dataEnd: H265AccessUnitSplitter.DataEnd = .streamContinues) -> Split
    {
        var splitter = H265AccessUnitSplitter()
        var split = Split()
        var consumed = 0
        var available = min(chunk, bytes.count)
        while consumed < bytes.count {
            let atEnd = available == bytes.count
            let result = bytes[consumed..<available].withUnsafeBytes {
                splitter.next(in: $0, dataEnd: atEnd ? .accessUnitBoundary : dataEnd)
            }
            switch result {
            case .skip(let count):
                consumed += count
                split.skipped += count
            case .accessUnit(let unit):
                consumed += unit.byteCount
                split.units.append(unit)
            case .needMoreData:
                if atEnd { return split }
                available = min(available + chunk, bytes.count)
            }
            if available <= consumed { available = min(consumed + chunk, bytes.count) }
        }
        return split
    }

    @Test(
        "access units, whatever the input's chunking; garbage in front skipped; layer-1 NAL units passed over",
        arguments: [1, 3, 7, 64, 100_000])
    func accessUnitsInAnyChunking(chunk: Int) throws {
        let bytes = [0x55, 0x00, 0x13] + H265TestStreams.annexB(Self.nalUnits)
        let split = Self.split(bytes, chunk: chunk)
        // The garbage, and with small pieces also the first start code's zero_byte (B.2.1: it
        // belongs to no NAL unit), which was skipped before the rest of the start code came.
        #expect((3...4).contains(split.skipped))
        #expect(split.units.map(\.byteCount).reduce(0, +) + split.skipped == bytes.count)
        #expect(split.units.map { $0.picture?.pictureOrderCount } == [0, 8, 4])
        #expect(
            split.units.map { $0.nalUnits.map(\.type) } == [
                [
                    .videoParameterSet, .sequenceParameterSet, .pictureParameterSet, .idrWithRADL, .idrWithRADL,
                    .suffixSEI
                ],
                [.trailR], [.trailR]
            ])
        #expect(split.units.map(\.skippedLayerNALUnitCount) == [0, 0, 1])
        #expect(split.units.map(\.parameterSetsChanged) == [true, false, false])
        #expect(split.units.allSatisfy { $0.problems.isEmpty })
        // NAL unit offsets are relative to the access unit: each range holds its NAL unit.
        let first = try #require(split.units.first)
        let start = split.skipped
        for (nal, expected) in zip(first.nalUnits, Self.nalUnits) {
            #expect(Array(bytes[(start + nal.offset)..<(start + nal.offset + nal.length)]) == expected)
        }
    }

    @Test("the accessUnits depth counts a picture's later slice segments without parsing them, and reads no suffix SEI")
    func accessUnitsDepth() throws {
        let split = Self.split(H265TestStreams.annexB(Self.nalUnits), chunk: 100_000)
        let idr = try #require(split.units.first?.picture)
        #expect(idr.sliceSegmentCount == 2 && idr.independentSliceSegmentCount == 1)
        #expect(idr.decodedPictureHash == nil && idr.seiErrors.isEmpty)
    }

    @Test("a damaged NAL unit is left out and reported; its access unit goes on")
    func damagedNALUnit() throws {
        var nalUnits = Self.nalUnits
        nalUnits.insert([0x80, 0x01, 0x00], at: 4) // forbidden_zero_bit set
        let split = Self.split(H265TestStreams.annexB(nalUnits), chunk: 100_000)
        #expect(
            split.units.map { $0.problems.map(\.error) } == [
                [.invalidValue(field: "forbidden_zero_bit", value: 1)], [], []
            ])
        #expect(split.units.map { $0.picture?.pictureOrderCount } == [0, 8, 4])
    }

    @Test("after reset the next CRA picture starts a coded video sequence; parameter sets are kept")
    func resetRestartsAtACRA() throws {
        var assembler = H265AccessUnitAssembler(depth: .accessUnits)
        for nal in Self.parameterSets + [Self.slice(.idrWithRADL), Self.slice(.trailR, lsb: 4)] {
            _ = nal.withUnsafeBytes { assembler.push(nalUnit: $0) }
        }
        assembler.reset()
        var pictures: [H265AccessUnitPicture] = []
        for nal in [Self.slice(.cra, lsb: 12), Self.slice(.raslN, lsb: 10), Self.slice(.trailR, lsb: 14)] {
            let step = nal.withUnsafeBytes { assembler.push(nalUnit: $0) }
            #expect(step.problem == nil)
            if let picture = step.completedPicture { pictures.append(picture) }
        }
        if let last = assembler.finish() { pictures.append(last) }
        #expect(pictures.map(\.nalUnitType) == [.cra, .raslN, .trailR])
        #expect(pictures[0].noRaslOutputFlag && pictures[0].codedVideoSequenceIndex == 1)
        #expect(pictures.map(\.picOutputFlag) == [true, false, true])
        #expect(pictures.map(\.pictureOrderCount) == [12, 10, 14])
    }

    static func profile(idc: Int, compatible: [Int] = [], constraints: [Int] = []) -> H265ProfileTierLevel {
        var profile = H265ProfileTierLevel.Profile()
        profile.profileIdc = idc
        for j in compatible { profile.compatibilityFlags |= UInt32(1) << UInt32(31 - j) }
        // Bits 4...12 of the 48 are max_12bit ... lower_bit_rate (7.3.3).
        for bit in constraints { profile.constraintIndicatorFlags |= UInt64(1) << UInt64(47 - bit) }
        return H265ProfileTierLevel(general: profile, generalLevelIdc: 93)
    }

    @Test("profile names as h265parse writes them, from profile_idc, compatibility flags and Table A-2")
    func profileNames() {
        #expect(Self.profile(idc: 1, compatible: [1, 2]).gstreamerProfileName == "main")
        #expect(Self.profile(idc: 2, compatible: [2]).gstreamerProfileName == "main-10")
        #expect(Self.profile(idc: 0, compatible: [2]).gstreamerProfileName == "main-10")
        // max_12bit, max_10bit, max_422chroma, lower_bit_rate: Main 4:2:2 10.
        #expect(Self.profile(idc: 4, constraints: [4, 5, 7, 12]).gstreamerProfileName == "main-422-10")
        // max_12bit, max_10bit, max_8bit, lower_bit_rate: Main 4:4:4.
        #expect(Self.profile(idc: 4, constraints: [4, 5, 6, 12]).gstreamerProfileName == "main-444")
        // The 4:2:0 8-bit flags with intra: Main Intra (lower_bit_rate not required).
        #expect(Self.profile(idc: 4, constraints: [4, 5, 6, 7, 8, 10]).gstreamerProfileName == "main-intra")
        #expect(Self.profile(idc: 9).gstreamerProfileName == nil)
        #expect(H265ProfileTierLevel(general: nil).gstreamerProfileName == nil)
    }

    @Test("tier and level names")
    func tierAndLevel() {
        var ptl = Self.profile(idc: 1)
        #expect(ptl.gstreamerTierName == "main" && ptl.gstreamerLevelName == "3.1")
        ptl.general?.tierFlag = true
        #expect(ptl.gstreamerTierName == "high")
        let names = [30, 60, 63, 90, 120, 153, 156, 186, 0, 255, 91].map { idc -> String? in
            ptl.generalLevelIdc = idc
            return ptl.gstreamerLevelName
        }
        #expect(names == ["1", "2", "2.1", "3", "4", "5.1", "5.2", "6.2", nil, nil, nil])
    }
}
