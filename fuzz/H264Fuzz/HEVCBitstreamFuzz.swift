// The hevc-bitstream mode: the H.265 layer (H265) on arbitrary bytes, as the bitstream mode does
// for H.264. Every parser must give a typed error or a value, never trap; and what can be checked
// for any input is checked with `require`, so that a violation is a crash the fuzzer reports.
import H265
import MediaCore

/// Exercises every entry point of the H.265 layer on one input.
func exerciseHEVCBitstreamLayer(_ data: UnsafeRawBufferPointer) {
    // 1. Scanning and access-unit assembly, which runs the header, parameter set, slice header and
    //    SEI parsers and the POC computation.
    var assembler = H265AccessUnitAssembler()
    var units: [[UInt8]] = []
    var pictures: [H265AccessUnitPicture] = []
    AnnexB.forEachNALUnit(in: data) { unit in
        let nal = UnsafeRawBufferPointer(rebasing: data[unit.payloadRange])
        units.append(Array(nal))
        if let picture = assembler.push(nalUnit: nal).completedPicture { pictures.append(picture) }
    }
    if let last = assembler.finish() { pictures.append(last) }
    for picture in pictures {
        require(picture.sliceSegmentCount >= picture.independentSliceSegmentCount, "more independent slices than slices")
        require(picture.codedVideoSequenceIndex >= 0, "a picture outside any coded video sequence")
    }
    let store = assembler.parameterSets
    checkAccessUnitSplitter(data)

    // 2. Each NAL unit handed straight to each parser, whatever its type says; what parses is
    //    written back and must parse to the same value.
    var sequenceParameterSets: [H265SequenceParameterSet] = []
    for unit in units {
        unit.withUnsafeBytes { nal in
            if let vps = try? H265VideoParameterSet.parse(nalUnit: nal), !vps.vpsExtensionFlag {
                require((try? H265VideoParameterSet.parse(nalUnit: vps.nalUnit())) == vps, "VPS writer -> parser changed the VPS")
            }
            if let sps = try? H265SequenceParameterSet.parse(nalUnit: nal) {
                sequenceParameterSets.append(sps)
                if !sps.hasUnparsedExtensions {
                    require((try? H265SequenceParameterSet.parse(nalUnit: sps.nalUnit())) == sps, "SPS writer -> parser changed the SPS")
                }
            }
            if let pps = try? H265PictureParameterSet.parse(nalUnit: nal) {
                if !pps.hasUnparsedExtensions {
                    require((try? H265PictureParameterSet.parse(nalUnit: pps.nalUnit())) == pps, "PPS writer -> parser changed the PPS")
                }
                for sps in sequenceParameterSets { _ = try? pps.validate(against: sps) }
            }
            _ = try? H265SEI.parse(nalUnit: nal, activeSequenceParameterSet: sequenceParameterSets.last)
            _ = try? H265SEI.parse(nalUnit: nal, activeSequenceParameterSet: nil)
            checkSliceHeader(nal, store: store)
        }
    }

    // 3. Annex B -> length-prefixed -> Annex B keeps every NAL unit.
    for lengthSize in [4, 1] {
        guard let prefixed = try? H265LengthPrefixed.lengthPrefixed(fromAnnexB: Array(data), nalUnitHeaderLength: lengthSize) else {
            continue
        }
        let ranges = (try? prefixed.withUnsafeBytes { try H265LengthPrefixed.nalUnitRanges(in: $0, nalUnitHeaderLength: lengthSize) }) ?? []
        require(ranges.count == units.count, "length-prefixed round trip changed the NAL unit count")
        for (range, unit) in zip(ranges, units) {
            require(prefixed[range].elementsEqual(unit), "length-prefixed round trip changed a NAL unit")
        }
    }

    // 4. The same bytes as an hvcC record: what parses serializes and parses back the same.
    if let record = try? HEVCDecoderConfigurationRecord(parsing: data), let bytes = try? record.serialized() {
        require((try? HEVCDecoderConfigurationRecord(parsing: bytes)) == record, "hvcC serialize -> parse did not round-trip")
        _ = try? FormatDescription(hevcDecoderConfigurationRecord: bytes)
    }

    // 5. A record and a format description built from the parameter sets the stream holds.
    let vpss = store.videoParameterSetIDs.compactMap { store.rawVideoParameterSet(id: $0) }
    let spss = store.sequenceParameterSetIDs.compactMap { store.rawSequenceParameterSet(id: $0) }
    let ppss = store.pictureParameterSetIDs.compactMap { store.rawPictureParameterSet(id: $0) }
    if let record = try? HEVCDecoderConfigurationRecord(
        videoParameterSets: vpss, sequenceParameterSets: spss, pictureParameterSets: ppss),
        let bytes = try? record.serialized() {
        require((try? HEVCDecoderConfigurationRecord(parsing: bytes)) == record, "hvcC built from parameter sets did not round-trip")
    }
    if let description = try? FormatDescription(hevcParameterSets: vpss + spss + ppss) {
        require(description.dimensions.width > 0 && description.dimensions.height > 0, "an HEVC description without a size")
    }
}

/// Parses a NAL unit as a slice segment with the stream's parameter sets and checks that the
/// writer reproduces the bits the parser read.
private func checkSliceHeader(_ nal: UnsafeRawBufferPointer, store: H265ParameterSetStore) {
    guard let slice = try? H265SliceSegmentHeader.parse(
        nalUnit: nal, pictureParameterSet: { store.pictureParameterSet(id: $0) },
        sequenceParameterSet: { store.sequenceParameterSet(id: $0) }),
        let pps = store.pictureParameterSet(id: slice.slicePicParameterSetID),
        let sps = store.sequenceParameterSet(id: pps.seqParameterSetID)
    else { return }
    var writer = BitWriter()
    slice.writeParsedPart(to: &writer, pps: pps, sps: sps)
    require(writer.bitCount == slice.parsedBitCount, "slice header writer wrote \(writer.bitCount) bits, the parser read \(slice.parsedBitCount)")
    let rbsp = RBSP.extractRBSP(from: UnsafeRawBufferPointer(rebasing: nal[2...]), maxBytes: 4096)
    let written = writer.bytes
    let wholeBytes = writer.bitCount / 8
    require(rbsp.count >= wholeBytes && rbsp.prefix(wholeBytes).elementsEqual(written.prefix(wholeBytes)),
            "slice header writer -> bits differ from the parsed ones")
}

/// The access-unit splitter of h265parse-to-hvcc fed the input in pieces (their size from the
/// first byte), as GstBaseParse's adapter does: every byte is consumed once (skipped or in an
/// access unit), every NAL unit lies inside its access unit, and the pieces give the access units
/// the whole input gives (but where the first start code's zero_byte goes).
private func checkAccessUnitSplitter(_ data: UnsafeRawBufferPointer) {
    func split(chunk: Int) -> [(byteCount: Int, nalUnits: [Range<Int>])] {
        var splitter = H265AccessUnitSplitter()
        var units: [(byteCount: Int, nalUnits: [Range<Int>])] = []
        var consumed = 0
        var available = min(chunk, data.count)
        while consumed < data.count {
            let atEnd = available == data.count
            switch splitter.next(in: UnsafeRawBufferPointer(rebasing: data[consumed..<available]),
                                 dataEnd: atEnd ? .accessUnitBoundary : .streamContinues) {
            case .skip(let count):
                require(count > 0 && count <= available - consumed, "the splitter skipped \(count) of \(available - consumed) bytes")
                consumed += count
            case .accessUnit(let unit):
                require(unit.byteCount > 0 && unit.byteCount <= available - consumed, "an access unit of \(unit.byteCount) bytes")
                for nal in unit.nalUnits {
                    require(nal.offset >= 0 && nal.range.upperBound <= unit.byteCount, "a NAL unit outside its access unit")
                }
                units.append((unit.byteCount, unit.nalUnits.map(\.range)))
                consumed += unit.byteCount
            case .needMoreData:
                if atEnd { return units }
                available = min(available + chunk, data.count)
            }
            if available <= consumed { available = min(consumed + chunk, data.count) }
        }
        return units
    }
    let whole = split(chunk: max(data.count, 1))
    let pieces = split(chunk: 1 + Int(data.first ?? 0) % 64)
    require(whole.map(\.byteCount).reduce(0, +) <= data.count, "the splitter handed out more bytes than it was given")
    // Pieces only change where the first start code's zero_byte goes (skipped or not).
    require(abs(whole.count - pieces.count) <= 1, "pieces gave \(pieces.count) access units, the whole input \(whole.count)")
}
