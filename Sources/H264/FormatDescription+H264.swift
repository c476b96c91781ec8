import MediaCore

/// H.264 format descriptions: the counterparts of CoreMedia's
/// `CMVideoFormatDescriptionCreateFromH264ParameterSets` and of a description made from an avcC
/// sample-description atom.
extension FormatDescription {
    /// Describes an H.264 stream from its parameter sets (any number of SPS and PPS NAL units,
    /// header byte included, without start codes or lengths).
    ///
    /// Dimensions are the displayed size after the SPS frame cropping (7.4.2.1.1), as CoreMedia
    /// reports them; the crop itself is kept as the clean aperture, measured from the centre of the
    /// coded picture as CoreMedia measures it. Pixel aspect ratio, colour description, full range
    /// and chroma siting come from the VUI (E.2.1) when it has them. The avcC record is built and
    /// stored as the `avcC` sample-description atom.
    ///
    /// - Parameters:
    ///   - nalUnitHeaderLength: size of the length prefix of the samples: 1, 2 or 4.
    ///   - inBandParameterSets: the samples may carry parameter sets too (`avc3`), rather than
    ///     only this description (`avc1`).
    public init(
        h264ParameterSets parameterSets: [[UInt8]], nalUnitHeaderLength: Int = 4, inBandParameterSets: Bool = false
    ) throws(H264Error) {
        var sequenceParameterSets: [[UInt8]] = []
        var pictureParameterSets: [[UInt8]] = []
        var extensions: [[UInt8]] = []
        for set in parameterSets {
            guard let header = set.first else { throw H264Error.truncated(what: "parameter set") }
            switch NALUnitType(rawValue: header) {
            case .sequenceParameterSet: sequenceParameterSets.append(set)
            case .pictureParameterSet: pictureParameterSets.append(set)
            case .sequenceParameterSetExtension: extensions.append(set)
            case .subsetSequenceParameterSet:
                throw H264Error.unsupported("a subset SPS (SVC/MVC) cannot describe an AVC stream")
            default:
                throw H264Error.malformedFraming("NAL unit type \(header & 0x1F) is not a parameter set")
            }
        }
        guard !sequenceParameterSets.isEmpty else {
            throw H264Error.malformedFraming("an H.264 format description needs at least one SPS")
        }
        guard !pictureParameterSets.isEmpty else {
            throw H264Error.malformedFraming("an H.264 format description needs at least one PPS")
        }
        let record = try AVCDecoderConfigurationRecord(
            sequenceParameterSets: sequenceParameterSets, pictureParameterSets: pictureParameterSets,
            sequenceParameterSetExtensions: extensions, nalUnitHeaderLength: nalUnitHeaderLength)
        try self.init(h264Record: record, inBandParameterSets: inBandParameterSets)
    }

    /// Describes an H.264 stream from an avcC record (GStreamer's `codec_data`, an MP4 `avcC`
    /// box payload).
    public init(avcDecoderConfigurationRecord bytes: [UInt8], inBandParameterSets: Bool = false) throws(H264Error) {
        let record = try AVCDecoderConfigurationRecord(parsing: bytes)
        try self.init(h264Record: record, inBandParameterSets: inBandParameterSets)
    }

    private init(h264Record record: AVCDecoderConfigurationRecord, inBandParameterSets: Bool) throws(H264Error) {
        guard let firstSPS = record.sequenceParameterSets.first else {
            throw H264Error.malformedFraming("the avcC record holds no SPS")
        }
        let sps = try SequenceParameterSet.parse(nalUnit: firstSPS)
        // Every PPS must parse against the SPS it names: a description whose PPS cannot be used
        // would only fail later, inside a decoder.
        var spsByID: [Int: SequenceParameterSet] = [:]
        for nal in record.sequenceParameterSets {
            let parsed = try SequenceParameterSet.parse(nalUnit: nal)
            spsByID[parsed.seqParameterSetID] = parsed
        }
        for nal in record.pictureParameterSets {
            _ = try PictureParameterSet.parse(nalUnit: nal, sequenceParameterSets: { spsByID[$0] })
        }

        let crop = sps.cropRect
        var extensions = FormatDescriptionExtensions()
        extensions.cleanAperture = CleanAperture(
            cropping: crop.x, crop.y, width: crop.width, height: crop.height,
            codedWidth: sps.codedWidth, codedHeight: sps.codedHeight)
        extensions.chromaSubsampling = ChromaSubsampling(rawValue: UInt8(truncatingIfNeeded: sps.chromaFormatIdc))
        extensions.bitDepth = sps.bitDepthLuma
        extensions.fieldCount = sps.frameMbsOnlyFlag ? 1 : 2
        if let vui = sps.vui {
            extensions.applyVideoUsability(
                sampleAspectRatio: vui.sampleAspectRatio, videoSignalTypePresent: vui.videoSignalTypePresentFlag,
                videoFullRange: vui.videoFullRangeFlag, colourDescriptionPresent: vui.colourDescriptionPresentFlag,
                colourPrimaries: vui.colourPrimaries, transferCharacteristics: vui.transferCharacteristics,
                matrixCoefficients: vui.matrixCoefficients,
                chromaSampleLocations: vui.chromaLocInfoPresentFlag
                    ? (vui.chromaSampleLocTypeTopField, vui.chromaSampleLocTypeBottomField) : nil)
        }
        extensions.sampleDescriptionAtoms[.avcDecoderConfigurationAtom] = try record.serialized()
        let allSets =
            record.sequenceParameterSets + record.pictureParameterSets
            + (record.highProfileExtension?.sequenceParameterSetExtensions ?? [])
        do {
            try self.init(
                mediaType: .video, codecType: inBandParameterSets ? .h264InBandParameterSets : .h264,
                dimensions: VideoDimensions(width: Int32(clamping: crop.width), height: Int32(clamping: crop.height)),
                extensions: extensions, parameterSets: allSets, nalUnitHeaderLength: record.nalUnitHeaderLength)
        } catch {
            throw H264Error.malformedFraming("\(error)")
        }
    }

    /// The avcC record of an H.264 description.
    public var avcDecoderConfigurationRecord: [UInt8]? {
        extensions.sampleDescriptionAtoms[.avcDecoderConfigurationAtom]
    }

    /// The SPS NAL units among the parameter sets.
    public var h264SequenceParameterSets: [[UInt8]] {
        parameterSets.filter { $0.first.map { NALUnitType(rawValue: $0) == .sequenceParameterSet } ?? false }
    }

    /// The PPS NAL units among the parameter sets.
    public var h264PictureParameterSets: [[UInt8]] {
        parameterSets.filter { $0.first.map { NALUnitType(rawValue: $0) == .pictureParameterSet } ?? false }
    }

    /// Whether a decoder configured for `self` can decode samples described by `other` without
    /// being rebuilt: the counterpart of `VTDecompressionSessionCanAcceptFormatDescription`.
    ///
    /// New PPSs, and SPSs that change only what a running decoder re-reads per picture (VUI,
    /// POC and frame_num sizes), are accepted. A change of coded size, chroma format, bit depth,
    /// frame/field coding or profile is not, nor a larger level, reference-frame count or DPB
    /// (the decoder allocated its picture buffers for the old values; A.3.1, A.3.2).
    public func h264SessionCanAccept(_ other: FormatDescription) -> Bool {
        guard mediaType == other.mediaType,
            codecType == FourCharCode.h264 || codecType == FourCharCode.h264InBandParameterSets,
            other.codecType == FourCharCode.h264 || other.codecType == FourCharCode.h264InBandParameterSets,
            dimensions == other.dimensions
        else { return false }
        let mine = h264SequenceParameterSets.compactMap { try? SequenceParameterSet.parse(nalUnit: $0) }
        // The session sized itself for the largest of its SPSs.
        guard let largestLevel = mine.map(\.levelIdc).max(),
            let largestReferenceCount = mine.map(\.maxNumRefFrames).max(),
            let largestDPB = mine.map(\.maxDpbFrames).max()
        else { return false }
        for nal in other.h264SequenceParameterSets {
            guard let theirs = try? SequenceParameterSet.parse(nalUnit: nal) else { return false }
            let sameStructure = mine.contains { sps in
                theirs.codedWidth == sps.codedWidth && theirs.codedHeight == sps.codedHeight
                    && theirs.chromaFormatIdc == sps.chromaFormatIdc
                    && theirs.separateColourPlaneFlag == sps.separateColourPlaneFlag
                    && theirs.bitDepthLuma == sps.bitDepthLuma && theirs.bitDepthChroma == sps.bitDepthChroma
                    && theirs.frameMbsOnlyFlag == sps.frameMbsOnlyFlag
                    && theirs.profileIdc == sps.profileIdc
            }
            guard sameStructure, theirs.levelIdc <= largestLevel, theirs.maxNumRefFrames <= largestReferenceCount,
                theirs.maxDpbFrames <= largestDPB
            else { return false }
        }
        return !other.h264SequenceParameterSets.isEmpty
    }
}

extension FormatDescription {
    /// How many frames may precede a picture in decoding order and follow it in output order, over
    /// the description's SPSs (``SequenceParameterSet/outputReorderDepth``, the largest); nil
    /// without a readable SPS. What a decoder's latency and libavcodec's initial delay start from.
    public var h264OutputReorderDepth: Int? {
        h264SequenceParameterSets.compactMap { try? SequenceParameterSet.parse(nalUnit: $0).outputReorderDepth }.max()
    }
}
