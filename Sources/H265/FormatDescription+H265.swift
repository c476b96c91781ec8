import MediaCore

/// HEVC format descriptions: the counterparts of CoreMedia's
/// `CMVideoFormatDescriptionCreateFromHEVCParameterSets` and of a description made from an hvcC
/// sample-description atom.
extension FormatDescription {
    /// Describes an HEVC stream from its parameter sets (VPS, SPS and PPS NAL units in any order,
    /// header included, without start codes or lengths), as VideoToolbox does.
    ///
    /// Dimensions are the output size after the SPS's conformance window (7.4.3.2.1), as CoreMedia
    /// reports them; the window itself is kept as the clean aperture. Pixel aspect ratio, colour,
    /// full range and chroma siting come from the VUI (E.3.1) when it has them; with field_seq_flag
    /// each sample is one field, and the field count is 2. The hvcC record is built and stored as
    /// the `hvcC` sample-description atom; the parameter sets are kept VPS first, then SPS, then
    /// PPS.
    ///
    /// - Parameters:
    ///   - nalUnitHeaderLength: size of the length prefix of the samples: 1, 2 or 4.
    ///   - inBandParameterSets: the samples may carry parameter sets too (`hev1`), rather than
    ///     only this description (`hvc1`).
    public init(
        hevcParameterSets parameterSets: [[UInt8]], nalUnitHeaderLength: Int = 4, inBandParameterSets: Bool = false
    ) throws(H265Error) {
        var videoParameterSets: [[UInt8]] = []
        var sequenceParameterSets: [[UInt8]] = []
        var pictureParameterSets: [[UInt8]] = []
        for set in parameterSets {
            switch try H265NALUnitHeader(parsing: set).nalUnitType {
            case .videoParameterSet: videoParameterSets.append(set)
            case .sequenceParameterSet: sequenceParameterSets.append(set)
            case .pictureParameterSet: pictureParameterSets.append(set)
            case let other: throw H265Error.malformedFraming("NAL unit type \(other) is not a parameter set")
            }
        }
        let record = try HEVCDecoderConfigurationRecord(
            videoParameterSets: videoParameterSets, sequenceParameterSets: sequenceParameterSets,
            pictureParameterSets: pictureParameterSets, nalUnitHeaderLength: nalUnitHeaderLength,
            arrayCompleteness: !inBandParameterSets)
        try self.init(hevcRecord: record, inBandParameterSets: inBandParameterSets)
    }

    /// Describes an HEVC stream from an hvcC record (GStreamer's `codec_data`, an MP4 `hvcC` box
    /// payload).
    public init(hevcDecoderConfigurationRecord bytes: [UInt8], inBandParameterSets: Bool = false) throws(H265Error) {
        let record = try HEVCDecoderConfigurationRecord(parsing: bytes)
        try self.init(hevcRecord: record, inBandParameterSets: inBandParameterSets)
    }

    private init(hevcRecord record: HEVCDecoderConfigurationRecord, inBandParameterSets: Bool) throws(H265Error) {
        guard let firstSPS = record.sequenceParameterSets.first else {
            throw H265Error.malformedFraming("the hvcC record holds no SPS")
        }
        guard !record.videoParameterSets.isEmpty, !record.pictureParameterSets.isEmpty else {
            throw H265Error.malformedFraming("the hvcC record lacks a VPS or a PPS")
        }
        let sps = try H265SequenceParameterSet.parse(nalUnit: firstSPS)
        // Every parameter set must parse, and every PPS must fit the SPS it names: a description
        // whose PPS cannot be used would only fail later, inside a decoder.
        var spsByID: [Int: H265SequenceParameterSet] = [:]
        for nal in record.sequenceParameterSets {
            let parsed = try H265SequenceParameterSet.parse(nalUnit: nal)
            spsByID[parsed.seqParameterSetID] = parsed
        }
        for nal in record.videoParameterSets { _ = try H265VideoParameterSet.parse(nalUnit: nal) }
        for nal in record.pictureParameterSets {
            let pps = try H265PictureParameterSet.parse(nalUnit: nal)
            guard let referenced = spsByID[pps.seqParameterSetID] else {
                throw H265Error.missingParameterSet(kind: "SPS", id: pps.seqParameterSetID)
            }
            try pps.validate(against: referenced)
        }

        let window = sps.conformanceWindow
        var extensions = FormatDescriptionExtensions()
        extensions.cleanAperture = CleanAperture(
            cropping: window.x, window.y, width: window.width, height: window.height,
            codedWidth: sps.picWidthInLumaSamples, codedHeight: sps.picHeightInLumaSamples)
        extensions.chromaSubsampling = ChromaSubsampling(rawValue: UInt8(truncatingIfNeeded: sps.chromaFormatIdc))
        extensions.bitDepth = sps.bitDepthLuma
        extensions.fieldCount = sps.picturesAreFields ? 2 : 1
        if let vui = sps.vui {
            extensions.applyVideoUsability(
                sampleAspectRatio: vui.sampleAspectRatio, videoSignalTypePresent: vui.videoSignalTypePresentFlag,
                videoFullRange: vui.videoFullRangeFlag, colourDescriptionPresent: vui.colourDescriptionPresentFlag,
                colourPrimaries: vui.colourPrimaries, transferCharacteristics: vui.transferCharacteristics,
                matrixCoefficients: vui.matrixCoeffs,
                chromaSampleLocations: vui.chromaLocInfoPresentFlag
                    ? (vui.chromaSampleLocTypeTopField, vui.chromaSampleLocTypeBottomField) : nil)
        }
        extensions.sampleDescriptionAtoms[.hevcDecoderConfigurationAtom] = try record.serialized()
        do {
            try self.init(
                mediaType: .video, codecType: inBandParameterSets ? .hevcInBandParameterSets : .hevc,
                dimensions: VideoDimensions(
                    width: Int32(clamping: window.width), height: Int32(clamping: window.height)),
                extensions: extensions,
                parameterSets: record.videoParameterSets + record.sequenceParameterSets + record.pictureParameterSets,
                nalUnitHeaderLength: record.nalUnitHeaderLength)
        } catch {
            throw H265Error.malformedFraming("\(error)")
        }
    }

    /// The hvcC record of an HEVC description.
    public var hevcDecoderConfigurationRecord: [UInt8]? {
        extensions.sampleDescriptionAtoms[.hevcDecoderConfigurationAtom]
    }

    /// The parameter sets of one NAL unit type.
    private func hevcParameterSets(ofType type: H265NALUnitType) -> [[UInt8]] {
        parameterSets.filter { $0.count >= 2 && H265NALUnitType(sixBits: $0[0] >> 1) == type }
    }

    /// The VPS NAL units among the parameter sets.
    public var hevcVideoParameterSets: [[UInt8]] { hevcParameterSets(ofType: .videoParameterSet) }
    /// The SPS NAL units among the parameter sets.
    public var hevcSequenceParameterSets: [[UInt8]] { hevcParameterSets(ofType: .sequenceParameterSet) }
    /// The PPS NAL units among the parameter sets.
    public var hevcPictureParameterSets: [[UInt8]] { hevcParameterSets(ofType: .pictureParameterSet) }

    /// Whether a decoder configured for `self` can decode samples described by `other` without
    /// being rebuilt: the counterpart of `VTDecompressionSessionCanAcceptFormatDescription`.
    ///
    /// New PPSs and SPSs that change only what a decoder reads per picture are accepted; a change
    /// of coded size, chroma format, bit depth, field coding or profile is not, nor a larger level
    /// or DPB (A.4: the decoder sized its picture buffers for the old values).
    public func hevcSessionCanAccept(_ other: FormatDescription) -> Bool {
        let hevc: Set<FourCharCode> = [.hevc, .hevcInBandParameterSets]
        guard mediaType == other.mediaType, hevc.contains(codecType), hevc.contains(other.codecType),
            dimensions == other.dimensions
        else { return false }
        let mine = hevcSequenceParameterSets.compactMap { try? H265SequenceParameterSet.parse(nalUnit: $0) }
        guard let largestLevel = mine.map(\.profileTierLevel.generalLevelIdc).max(),
            let largestDPB = mine.map(\.maxDecPicBufferingMinus1).max()
        else { return false }
        let theirSets = other.hevcSequenceParameterSets
        for nal in theirSets {
            guard let theirs = try? H265SequenceParameterSet.parse(nalUnit: nal) else { return false }
            let sameStructure = mine.contains { sps in
                theirs.picWidthInLumaSamples == sps.picWidthInLumaSamples
                    && theirs.picHeightInLumaSamples == sps.picHeightInLumaSamples
                    && theirs.chromaFormatIdc == sps.chromaFormatIdc
                    && theirs.separateColourPlaneFlag == sps.separateColourPlaneFlag
                    && theirs.bitDepthLuma == sps.bitDepthLuma && theirs.bitDepthChroma == sps.bitDepthChroma
                    && theirs.picturesAreFields == sps.picturesAreFields
                    && theirs.profileTierLevel.general?.profileIdc == sps.profileTierLevel.general?.profileIdc
            }
            guard sameStructure, theirs.profileTierLevel.generalLevelIdc <= largestLevel,
                theirs.maxDecPicBufferingMinus1 <= largestDPB
            else { return false }
        }
        return !theirSets.isEmpty
    }
}

extension FormatDescription {
    /// How many pictures may precede a picture in decoding order and follow it in output order,
    /// over the description's SPSs (``H265SequenceParameterSet/outputReorderDepth``, the
    /// largest); nil without a readable SPS. What a decoder's latency and libavcodec's initial
    /// delay start from.
    public var hevcOutputReorderDepth: Int? {
        hevcSequenceParameterSets.compactMap { try? H265SequenceParameterSet.parse(nalUnit: $0).outputReorderDepth }
            .max()
    }
}
