import Testing

@testable import H265

@Suite("H.265 access units and POC")
struct H265AccessUnitTests {
    /// The test SPS with 4-bit POC LSBs (MaxPicOrderCntLsb 16), so that POC wraps quickly.
    static let sps: H265SequenceParameterSet = {
        var sps = H265TestStreams.sequenceParameterSet()
        sps.log2MaxPicOrderCntLsbMinus4 = 0
        return sps
    }()

    static var parameterSets: [[UInt8]] {
        [H265TestStreams.videoParameterSet().nalUnit(), sps.nalUnit(), H265TestStreams.pictureParameterSet().nalUnit()]
    }

    static func slice(_ type: H265NALUnitType, lsb: Int = 0, first: Bool = true, temporalID: Int = 0) -> [UInt8] {
        H265TestStreams.sliceNALUnit(
            H265TestStreams.slice(type, lsb: lsb, first: first, temporalID: temporalID), sps: sps)
    }

    struct Run {
        var steps: [H265AccessUnitAssemblyStep] = []
        var pictures: [H265AccessUnitPicture] = []
    }

    static func run(_ nalUnits: [[UInt8]], handleCRAAsBLA: Bool = false) -> Run {
        var assembler = H265AccessUnitAssembler(handleCRAAsBLA: handleCRAAsBLA)
        var run = Run()
        for nal in nalUnits {
            let step = nal.withUnsafeBytes { assembler.push(nalUnit: $0) }
            run.steps.append(step)
            if let picture = step.completedPicture { run.pictures.append(picture) }
        }
        if let last = assembler.finish() { run.pictures.append(last) }
        return run
    }

    static let accessUnitDelimiter: [UInt8] = [0x46, 0x01, 0x50] // pic_type 2, then the stop bit
    static let md5 = [UInt8(0)] + [UInt8](repeating: 7, count: 48)

    @Test func boundariesPOCWrapAndPrevTid0Pic() throws {
        let stream: [[UInt8]] =
            [Self.accessUnitDelimiter] + Self.parameterSets + [
                H265TestStreams.seiNALUnit([(5, Array(UInt8(0)..<16) + [1])]),
                Self.slice(.idrWithRADL),
                Self.slice(.idrWithRADL, first: false),
                H265TestStreams.seiNALUnit(suffix: true, [(132, Self.md5)]),
                Self.slice(.trailR, lsb: 4),
                Self.slice(.trailR, lsb: 8),
                Self.slice(.trailR, lsb: 12),
                Self.slice(.trailR, lsb: 0), // wraps: POC 16
                // A sub-layer non-reference picture refers back across the wrap (POC 10), and is not
                // prevTid0Pic: the next picture's POC is taken from POC 16's.
                Self.slice(.trailN, lsb: 10),
                Self.slice(.trailR, lsb: 4), // POC 20
                // A picture of sub-layer 1 is not prevTid0Pic either: the next picture's LSB 13 is
                // 9 ahead of POC 20's LSB 4 (so it is POC 13, before it) but only 3 ahead of LSB 10.
                Self.slice(.tsaR, lsb: 10, temporalID: 1), // POC 26
                Self.slice(.trailR, lsb: 13) // POC 13
            ]
        let run = Self.run(stream)
        #expect(run.steps.compactMap(\.problem).isEmpty, "\(run.steps.compactMap(\.problem))")
        #expect(run.pictures.map(\.pictureOrderCount) == [0, 4, 8, 12, 16, 10, 20, 26, 13])
        #expect(run.pictures.allSatisfy { $0.codedVideoSequenceIndex == 0 && $0.picOutputFlag })
        let idr = try #require(run.pictures.first)
        #expect(idr.isIDR && idr.noRaslOutputFlag && idr.hasAccessUnitDelimiter)
        #expect(idr.sliceSegmentCount == 2 && idr.independentSliceSegmentCount == 2 && idr.isIntra)
        #expect(idr.decodedPictureHash == .md5([[UInt8]](repeating: [UInt8](repeating: 7, count: 16), count: 3)))
        #expect(idr.seiMessages.first?.payloadType == 5 && idr.seiErrors.isEmpty)
        // The access unit boundaries: at the AUD (the stream's first NAL unit), then at each
        // picture's first slice.
        let starts = run.steps.enumerated().filter(\.element.startsNewAccessUnit).map(\.offset)
        #expect(starts == [0] + Array(8...15))
        #expect(run.steps[8].completedPicture?.isIDR == true)
    }

    @Test func craStartsASequenceAndItsRASLPicturesAreNotOutput() throws {
        let stream: [[UInt8]] =
            Self.parameterSets + [
                Self.slice(.cra, lsb: 8),
                Self.slice(.raslN, lsb: 6),
                Self.slice(.radlR, lsb: 7),
                Self.slice(.trailR, lsb: 9),
                // A CRA in the middle of the stream keeps its RASL pictures.
                Self.slice(.cra, lsb: 12),
                Self.slice(.raslR, lsb: 11),
                // After an end of sequence the CRA starts a new CVS: POC MSB 0 again.
                [0x48, 0x01], // EOS_NUT
                Self.slice(.cra, lsb: 2),
                Self.slice(.raslN, lsb: 1)
            ]
        let run = Self.run(stream)
        #expect(run.steps.compactMap(\.problem).isEmpty, "\(run.steps.compactMap(\.problem))")
        #expect(run.pictures.map(\.pictureOrderCount) == [8, 6, 7, 9, 12, 11, 2, 1])
        #expect(run.pictures.map(\.picOutputFlag) == [true, false, true, true, true, true, true, false])
        #expect(run.pictures.map(\.noRaslOutputFlag) == [true, false, false, false, false, false, true, false])
        #expect(run.pictures.map(\.codedVideoSequenceIndex) == [0, 0, 0, 0, 0, 0, 1, 1])
        #expect(run.pictures[5].endsSequence)
        // The EOS ended its access unit: the CRA after it starts the next one.
        #expect(run.steps[10].startsNewAccessUnit && run.steps[10].completedPicture?.pictureOrderCount == 11)

        // HandleCraAsBlaFlag: every CRA starts a sequence, and its RASL pictures are dropped.
        let handled = Self.run(Array(stream.prefix(9)), handleCRAAsBLA: true)
        #expect(handled.pictures.map(\.picOutputFlag) == [true, false, true, true, true, false])
        #expect(handled.pictures.map(\.codedVideoSequenceIndex) == [0, 0, 0, 0, 1, 1])
    }

    @Test func damagedStreamsBecomeProblemsNotMergedPictures() throws {
        let stream: [[UInt8]] =
            [
                // Slices before any parameter set: their pictures are unusable, but they still
                // delimit access units.
                Self.slice(.idrNoLeadingPictures),
                Self.slice(.trailR, lsb: 1)
            ] + Self.parameterSets + [
                Self.slice(.idrNoLeadingPictures),
                // A slice segment whose picture's first segment was lost (another POC LSB).
                Self.slice(.trailR, lsb: 5, first: false),
                // A suffix SEI with its picture's slices, then a broken NAL unit header.
                H265TestStreams.seiNALUnit(suffix: true, [(132, Self.md5)]),
                [0x80, 0x01],
                Self.slice(.trailR, lsb: 2),
                // An AUD with a reserved pic_type.
                [0x46, 0x01, 0xF0],
                Self.slice(.trailR, lsb: 3)
            ]
        let run = Self.run(stream)
        #expect(run.steps[0].problem == .missingParameterSet(kind: "PPS", id: 0))
        #expect(run.steps[1].startsNewAccessUnit && run.steps[1].completedPicture == nil)
        #expect(run.steps[6].problem?.field == "first_slice_segment_in_pic_flag (slice segment of another picture)")
        #expect(run.steps[8].problem?.field == "forbidden_zero_bit" && run.steps[8].nalUnitType == nil)
        #expect(run.steps[10].problem?.field == "pic_type")
        #expect(run.pictures.map(\.pictureOrderCount) == [0, 2, 3])
        #expect(run.pictures[0].sliceSegmentCount == 1 && run.pictures[0].decodedPictureHash != nil)
    }

    @Test func otherLayersAndReservedTypesAreIgnored() {
        let layerOne = H265NALUnitHeader(nalUnitType: .prefixSEI, nuhLayerID: 1).bytes + [0x05, 0x00, 0x80]
        let reserved = H265NALUnitHeader(nalUnitType: .reservedNonVCL45).bytes + [0x80]
        let stream: [[UInt8]] =
            Self.parameterSets + [Self.slice(.idrWithRADL), layerOne, reserved, Self.slice(.trailR, lsb: 1)]
        let run = Self.run(stream)
        #expect(run.steps[4].isIgnored && !run.steps[4].startsNewAccessUnit)
        #expect(run.steps[5].isIgnored && !run.steps[5].startsNewAccessUnit)
        #expect(run.pictures.map(\.pictureOrderCount) == [0, 1])
    }

    @Test func pocCalculatorFollows8_3_1() {
        var calculator = H265PictureOrderCountCalculator()
        func poc(_ lsb: Int, _ type: H265NALUnitType = .trailR, temporalID: Int = 0, startsSequence: Bool = false)
            -> Int
        {
            calculator.pictureOrderCount(
                slicePicOrderCntLsb: lsb, maxPicOrderCntLsb: 16, nalUnitType: type, temporalID: temporalID,
                isIRAPWithNoRaslOutputFlag: startsSequence
            ).value
        }
        #expect(poc(3, .idrWithRADL, startsSequence: true) == 3)
        #expect(poc(12) == -4) // 12 - 3 > 8: the LSB went backwards across the wrap
        #expect(poc(2) == 2 + 0) // from -4 (LSB 12): 12 - 2 >= 8, MSB back to 0
        #expect(poc(9, .radlR) == 9)
        #expect(poc(15, .raslN) == -1) // RADL is not prevTid0Pic: still from LSB 2
        #expect(poc(7, .cra, startsSequence: true) == 7)
    }
}

@Suite("H.265 hvcC and length-prefixed samples")
struct H265ConfigurationRecordTests {
    static func record() throws -> HEVCDecoderConfigurationRecord {
        var sps = H265TestStreams.sequenceParameterSet()
        sps.vuiParametersPresentFlag = true
        var vui = H265VUIParameters()
        vui.timingInfoPresentFlag = true
        vui.numUnitsInTick = 1001
        vui.timeScale = 30000
        vui.bitstreamRestrictionFlag = true
        vui.minSpatialSegmentationIdc = 4
        sps.vui = vui
        var pps = H265TestStreams.pictureParameterSet()
        pps.entropyCodingSyncEnabledFlag = true
        return try HEVCDecoderConfigurationRecord(
            videoParameterSets: [H265TestStreams.videoParameterSet().nalUnit()], sequenceParameterSets: [sps.nalUnit()],
            pictureParameterSets: [pps.nalUnit()],
            seiNALUnits: [H265TestStreams.seiNALUnit([(144, [0, 1, 0, 2])])], nalUnitHeaderLength: 2)
    }

    @Test func builtFromParameterSetsAndRoundTrips() throws {
        let record = try Self.record()
        #expect(record.generalProfile.profileIdc == 1 && record.generalLevelIdc == 93)
        #expect(record.parallelismType == 3 && record.minSpatialSegmentationIdc == 4)
        #expect(record.avgFrameRate == 7672) // 29.97 * 256, rounded
        #expect(record.numTemporalLayers == 1 && record.temporalIdNested)
        #expect(
            record.arrays.map(\.nalUnitType) == [
                .videoParameterSet, .sequenceParameterSet, .pictureParameterSet, .prefixSEI
            ])
        let bytes = try record.serialized()
        #expect(bytes[0] == 1 && bytes[1] == 0x01 && Array(bytes[2...5]) == [0x60, 0, 0, 0] && bytes[12] == 93)
        #expect(bytes[13] == 0xF0 && bytes[14] == 4) // reserved 1111, min_spatial_segmentation_idc 4
        #expect(bytes[15] == 0xFF && bytes[16] == 0xFD) // parallelismType 3, chromaFormat 1
        #expect(bytes[21] == 0x0D && bytes[22] == 4) // 1 temporal layer, nested, 2-byte lengths; 4 arrays
        let parsed = try HEVCDecoderConfigurationRecord(parsing: bytes)
        #expect(parsed == record)
        #expect(try parsed.serialized() == bytes)
    }

    @Test func rejectsMalformedRecords() throws {
        let bytes = try Self.record().serialized()
        func rejection(_ change: (inout [UInt8]) -> Void) -> H265Error? {
            var bad = bytes
            change(&bad)
            return h265Error { _ = try HEVCDecoderConfigurationRecord(parsing: bad) }
        }
        #expect(rejection { $0[0] = 0 }?.field == "configurationVersion")
        #expect(rejection { $0[21] = $0[21] & 0xFC | 2 }?.field == "lengthSizeMinusOne")
        // The first array (VPS) relabelled as an SPS array.
        guard case .malformedFraming? = rejection({ $0[23] = 0x80 | 33 }) else {
            Issue.record("an array holding another type's NAL units was accepted")
            return
        }
        guard case .malformedFraming? = rejection({ $0[23] = 0x80 | 35 }) else {
            Issue.record("an array of access unit delimiters was accepted")
            return
        }
        for length in [1, 10, 23, 30, bytes.count - 1] {
            guard case .truncated? = rejection({ $0.removeLast($0.count - length) }) else {
                Issue.record("an hvcC record cut to \(length) bytes was accepted")
                continue
            }
        }
        #expect(
            h265Error {
                _ = try HEVCDecoderConfigurationRecord(
                    videoParameterSets: [], sequenceParameterSets: [H265TestStreams.sequenceParameterSet().nalUnit()],
                    pictureParameterSets: [H265TestStreams.pictureParameterSet().nalUnit()])
            } == .malformedFraming("an hvcC record needs at least one VPS"))
    }

    @Test func annexBAndLengthPrefixedRoundTrip() throws {
        let units =
            H265AccessUnitTests.parameterSets + [
                H265AccessUnitTests.slice(.idrWithRADL), H265AccessUnitTests.slice(.trailR, lsb: 1)
            ]
        let annexB = H265TestStreams.annexB(units)
        for lengthSize in [1, 2, 4] {
            let prefixed = try H265LengthPrefixed.lengthPrefixed(fromAnnexB: annexB, nalUnitHeaderLength: lengthSize)
            let back = try H265LengthPrefixed.annexB(fromLengthPrefixed: prefixed, nalUnitHeaderLength: lengthSize)
            #expect(back == annexB)
        }
        // The parameter sets an hvc1 record carries are dropped from the samples.
        let slicesOnly = try H265LengthPrefixed.lengthPrefixed(fromAnnexB: annexB) { $0.isVCL }
        let ranges = try slicesOnly.withUnsafeBytes {
            try H265LengthPrefixed.nalUnitRanges(in: $0, nalUnitHeaderLength: 4)
        }
        #expect(ranges.map { Array(slicesOnly[$0]) } == Array(units.suffix(2)))
        // A length that runs past the end is an H.265 framing error.
        var damaged = slicesOnly
        damaged[3] &+= 100
        #expect(throws: H265Error.self) {
            _ = try damaged.withUnsafeBytes { try H265LengthPrefixed.nalUnitRanges(in: $0, nalUnitHeaderLength: 4) }
        }
        // In place, for 4-byte start codes and lengths.
        var inPlace = annexB
        #expect(inPlace.withUnsafeMutableBytes { H265LengthPrefixed.convertAnnexBInPlace($0) })
        #expect(inPlace == (try H265LengthPrefixed.lengthPrefixed(fromAnnexB: annexB)))
        try inPlace.withUnsafeMutableBytes { try H265LengthPrefixed.convertLengthPrefixedToAnnexBInPlace($0) }
        #expect(inPlace == annexB)
    }
}
