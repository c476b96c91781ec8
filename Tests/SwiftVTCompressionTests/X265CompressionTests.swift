import Glibc
import H265
import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Synchronization
import Testing

/// HEVC through the x265 backend: the session encodes, SwiftVT's own libavcodec decoder session
/// decodes the samples back with the session's hvc1 format description.
extension CompressionTests {
    @Suite("CompressionSession over x265 (HEVC)")
    struct X265CompressionTests {
        /// Encodes `pictures` as HEVC at 12 frames per second and completes them.
        static func encode(
            _ pictures: [PixelBuffer], properties: CompressionProperties = .init(),
            forceKeyFrameAt forced: Set<Int> = [], threadCount: Int = 0
        ) throws -> Encoded {
            let first = try #require(pictures.first)
            let frames = Mutex<[EncodedFrame]>([])
            let session = try CompressionSession(
                width: first.width, height: first.height, codecType: .hevc,
                encoderSpecification: EncoderSpecification(threadCount: threadCount),
                sourcePixelFormat: first.pixelFormat, properties: properties,
                backends: [X264EncoderFactory(), X265EncoderFactory()]
            ) { frame in frames.withLock { $0.append(frame) } }
            defer { session.invalidate() }
            #expect(session.activeBackendName == "x265 (software)")
            try session.prepareToEncodeFrames()
            var outputs: [Int] = []
            let duration = Encoder.frameDuration12
            for (index, picture) in pictures.enumerated() {
                try session.encode(
                    picture, presentationTimeStamp: duration.multiplied(by: index), duration: duration,
                    frameProperties: FrameProperties(forceKeyFrame: forced.contains(index)),
                    frameReference: UInt64(index))
                outputs.append(frames.withLock { $0.count })
            }
            try session.completeFrames()
            let encoded = frames.withLock { $0 }
            for frame in encoded { #expect(frame.status == nil, "\(String(describing: frame.status))") }
            return Encoded(
                frames: encoded, outputsAfterEncode: outputs, frameDelay: session.frameDelay,
                formatDescription: session.formatDescription)
        }

        /// The NAL unit types of a length-prefixed sample (Table 7-1).
        static func nalUnitTypes(_ sample: SampleBuffer) -> [UInt8] {
            guard let bytes = sample.dataBuffer?.copyToArray() else { return [] }
            var types: [UInt8] = []
            var offset = 0
            while offset + 4 < bytes.count {
                let length =
                    Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                    | Int(bytes[offset + 3])
                guard length > 0, offset + 4 + length <= bytes.count else { return types + [0xFF] }
                types.append(bytes[offset + 4] >> 1 & 0x3F)
                offset += 4 + length
            }
            return offset == bytes.count ? types : types + [0xFF]
        }

        static func sequenceParameterSet(_ encoded: Encoded) throws -> H265SequenceParameterSet {
            let format = try #require(encoded.formatDescription)
            return try H265SequenceParameterSet.parse(nalUnit: try #require(format.hevcSequenceParameterSets.first))
        }

        /// PSNR of the luma planes for samples of `bitDepth` bits (8: bytes, more: 16-bit words).
        static func psnrY(_ a: PixelBuffer, _ b: PixelBuffer, bitDepth: Int) -> Double {
            let pa = a.planes[0]
            let pb = b.planes[0]
            var sum: Double = 0
            for row in 0..<pa.height {
                let ra = pa.baseAddress + row * pa.bytesPerRow
                let rb = pb.baseAddress + row * pb.bytesPerRow
                for column in 0..<pa.width {
                    let d: Int
                    if bitDepth > 8 {
                        d =
                            Int(ra.load(fromByteOffset: column * 2, as: UInt16.self))
                            - Int(rb.load(fromByteOffset: column * 2, as: UInt16.self))
                    } else {
                        d =
                            Int(ra.load(fromByteOffset: column, as: UInt8.self))
                            - Int(rb.load(fromByteOffset: column, as: UInt8.self))
                    }
                    sum += Double(d * d)
                }
            }
            let peak = Double((1 << bitDepth) - 1)
            let mse = sum / Double(pa.width * pa.height)
            return mse == 0 ? 100 : 10 * log10(peak * peak / mse)
        }

        /// Whether every sample of every plane is equal.
        static func identical(_ a: PixelBuffer, _ b: PixelBuffer) -> Bool {
            guard a.pixelFormat == b.pixelFormat, a.planes.count == b.planes.count else { return false }
            let bytesPerSample = a.pixelFormat.bitDepth > 8 ? 2 : 1
            for (pa, pb) in zip(a.planes, b.planes) {
                for row in 0..<pa.height
                where memcmp(
                    pa.baseAddress + row * pa.bytesPerRow, pb.baseAddress + row * pb.bytesPerRow,
                    pa.width * bytesPerSample) != 0
                {
                    return false
                }
            }
            return true
        }

        /// The 8-bit I420 clip widened to `format` (10-bit samples are the 8-bit ones times 4;
        /// 4:2:2 rows of chroma repeat the 4:2:0 row above). A test input, so copied on purpose.
        static func widened(_ source: [PixelBuffer], to format: PixelFormat) throws -> [PixelBuffer] {
            try source.map { picture in
                let out = try PixelBuffer(width: picture.width, height: picture.height, pixelFormat: format)
                for (index, plane) in out.planes.enumerated() {
                    let input = picture.planes[index]
                    for row in 0..<plane.height {
                        let sourceRow =
                            input.baseAddress + min(row * input.height / plane.height, input.height - 1)
                            * input.bytesPerRow
                        let target = plane.baseAddress + row * plane.bytesPerRow
                        for column in 0..<plane.width {
                            let value = sourceRow.load(fromByteOffset: column, as: UInt8.self)
                            if format.bitDepth > 8 {
                                target.storeBytes(of: UInt16(value) << 2, toByteOffset: column * 2, as: UInt16.self)
                            } else {
                                target.storeBytes(of: value, toByteOffset: column, as: UInt8.self)
                            }
                        }
                    }
                }
                return out
            }
        }

        @Test("the raw corpus clip at 1 Mbit/s: 9 hvc1 samples, IRAP first, DTS <= PTS, PSNR-Y >= 35 dB")
        func ciscoRoundTrip() throws {
            let source = try #require(Clips.cisco)
            #expect(source.count == 9)
            let encoded = try Self.encode(source, properties: CompressionProperties(averageBitRate: 1_000_000))
            #expect(encoded.samples.count == 9)
            let pts = encoded.samples.map(\.presentationTimeStamp).sorted()
            #expect(pts == (0..<9).map { Encoder.frameDuration12.multiplied(by: $0) })
            let dts = encoded.samples.map(\.decodeTimeStamp)
            #expect(zip(dts, dts.dropFirst()).allSatisfy { $0.0 < $0.1 }, "DTS strictly increasing")
            #expect(encoded.samples.allSatisfy { $0.decodeTimeStamp <= $0.presentationTimeStamp })
            #expect(encoded.frames.map(\.frameReference).sorted() == (0..<9).map(UInt64.init))
            #expect(encoded.samples.first?.isSync == true)
            #expect(encoded.formatDescription?.codecType == .hevc)
            // Sync samples are exactly the IRAP pictures; no parameter sets or AUD in band.
            for sample in encoded.samples {
                let types = Self.nalUnitTypes(sample)
                #expect(!types.isEmpty && !types.contains(0xFF), "length-prefixed NAL units: \(types)")
                #expect(!types.contains { (32...35).contains($0) })
                #expect(sample.isSync == types.contains { (16...23).contains($0) })
            }
            let sps = try Self.sequenceParameterSet(encoded)
            #expect(sps.profileTierLevel.general?.profileIdc == 1, "Main")
            #expect(sps.picWidthInLumaSamples >= 320 && sps.picHeightInLumaSamples >= 192)
            #expect(encoded.formatDescription?.dimensions.width == 320)
            #expect(encoded.formatDescription?.dimensions.height == 192)
            let (psnr, count) = try meanPSNR(encoded, source: source)
            print("x265 cisco 1 Mbit/s: \(encoded.totalBytes) bytes, PSNR-Y \(psnr) dB")
            #expect(count == 9)
            #expect(psnr >= 35)
        }

        @Test(
            "the analysis QP is the slice QP (7-54): a forced QP comes back whole on I, P and B pictures, with weighted prediction on; ABR's are whole QPs too"
        )
        func analysisQuantizerIsTheSliceQP() throws {
            let source = try #require(Clips.ciscoLoop(3))
            let first = try #require(source.first)
            let factory = X265EncoderFactory()
            let properties = CompressionProperties(averageBitRate: 500_000)
            let backend = try factory.makeBackend(
                configuration: EncoderConfiguration(
                    width: first.width, height: first.height, pixelFormat: first.pixelFormat, properties: properties,
                    threadCount: 1))
            // A forced QP per frame, away from what the rate control would pick, and not one x265's
            // AQ and cutree offsets leave as the frame's mean (frame_stats.qp).
            func forced(_ index: Int) -> Double { Double(24 + (index * 7) % 17) + 0.25 }
            try backend.prepare(properties: properties, frameRate: 12)
            let ppsBytes = try #require(backend.formatDescription?.hevcPictureParameterSets.first)
            #expect(
                try H265PictureParameterSet.parse(nalUnit: ppsBytes).weightedPredFlag,
                "x265 codes P slices with pred_weight_table (7.3.6.3), which the QP follows")
            let duration = Encoder.frameDuration12
            for pass in 0..<2 {
                if pass > 0 { try backend.prepare(properties: properties, frameRate: 12) }
                var frames: [EncodedFrame] = []
                for (index, picture) in source.enumerated() {
                    frames += try backend.encode(
                        EncoderFrameRequest(
                            image: picture, presentationTimeStamp: duration.multiplied(by: index),
                            duration: duration, frameType: index == 0 ? .idr : .automatic,
                            frameReference: UInt64(index), quantizer: pass == 1 ? forced(index) : nil))
                }
                frames += try backend.flush()
                #expect(frames.count == source.count)
                let types = Set(frames.compactMap { $0.analysis?.frameType })
                for frame in frames {
                    let quantizer = try #require(frame.analysis?.quantizer)
                    #expect(quantizer == quantizer.rounded(), "a slice QP is whole: \(quantizer)")
                    if pass == 1 {
                        #expect(quantizer == forced(Int(frame.frameReference)).rounded())
                    }
                }
                if pass == 1 {
                    #expect(types.isSuperset(of: [.idr, .predicted, .bidirectional]), "\(types)")
                }
            }
        }

        @Test("QP bounds: x265's slice QPs stay within min/maxAllowedFrameQP at a starved rate and at fine quality")
        func frameQPBounds() throws {
            let source = try #require(Clips.ciscoLoop(2))
            func sliceQPs(_ properties: CompressionProperties) throws -> [Double] {
                try Self.encode(source, properties: properties).frames.compactMap { $0.analysis?.quantizer }
            }
            var starved = CompressionProperties(averageBitRate: 20_000)
            #expect(try sliceQPs(starved).contains { $0 > 30 })
            starved.maxAllowedFrameQP = 30
            let capped = try sliceQPs(starved)
            #expect(capped.count == source.count && capped.allSatisfy { $0 <= 30 }, "\(capped)")
            var fine = CompressionProperties(quality: 0.95)
            #expect(try sliceQPs(fine).contains { $0 < 28 })
            fine.minAllowedFrameQP = 28
            let floored = try sliceQPs(fine)
            #expect(floored.count == source.count && floored.allSatisfy { $0 >= 28 }, "\(floored)")
        }

        @Test(
            "HDR metadata: masteringDisplayColorVolume and contentLightLevelInfo come back from the IRAP sample's SEI through H265SEI"
        )
        func hdrMetadataSEI() throws {
            let source = try #require(Clips.cisco)
            var properties = CompressionProperties(averageBitRate: 500_000)
            let display = MasteringDisplayColorVolume(
                green: Chromaticity(x: 8500, y: 39850), blue: Chromaticity(x: 6550, y: 2300),
                red: Chromaticity(x: 35400, y: 14600), whitePoint: Chromaticity(x: 15635, y: 16450),
                maxLuminance: 10_000_000, minLuminance: 1)
            properties.masteringDisplayColorVolume = display
            properties.contentLightLevelInfo = ContentLightLevelInfo(
                maxContentLightLevel: 1000, maxPictureAverageLightLevel: 400)
            let encoded = try Self.encode(source, properties: properties)
            let first = try #require(encoded.samples.first { $0.isSync })
            let bytes = try #require(first.dataBuffer?.copyToArray())
            var messages: [H265SEIMessage] = []
            let units = try bytes.withUnsafeBytes {
                try H265LengthPrefixed.nalUnitRanges(in: $0, nalUnitHeaderLength: 4)
            }
            // PREFIX_SEI_NUT (Table 7-1).
            for range in units where bytes[range.lowerBound] >> 1 & 0x3F == 39 {
                messages += try H265SEI.parse(nalUnit: Array(bytes[range]), activeSequenceParameterSet: nil).messages
            }
            var expected = H265MasteringDisplayColourVolume()
            expected.displayPrimariesX = [8500, 6550, 35400]
            expected.displayPrimariesY = [39850, 2300, 14600]
            expected.whitePointX = 15635
            expected.whitePointY = 16450
            expected.maxDisplayMasteringLuminance = 10_000_000
            expected.minDisplayMasteringLuminance = 1
            var light = H265ContentLightLevel()
            light.maxContentLightLevel = 1000
            light.maxPicAverageLightLevel = 400
            #expect(messages.contains(.masteringDisplayColourVolume(expected)), "\(messages)")
            #expect(messages.contains(.contentLightLevel(light)), "\(messages)")
        }

        @Test("hvcC: parses, and its VPS/SPS/PPS are the format description's, VPS first")
        func decoderConfigurationRecord() throws {
            let source = try #require(Clips.ciscoLoop(3))
            let encoded = try Self.encode(source)
            let format = try #require(encoded.formatDescription)
            let bytes = try #require(format.hevcDecoderConfigurationRecord)
            let record = try HEVCDecoderConfigurationRecord(parsing: bytes)
            #expect(record.nalUnitHeaderLength == 4)
            #expect(record.videoParameterSets.count == 1)
            #expect(record.sequenceParameterSets.count == 1)
            #expect(record.pictureParameterSets.count == 1)
            #expect(record.videoParameterSets == format.hevcVideoParameterSets)
            #expect(record.sequenceParameterSets == format.hevcSequenceParameterSets)
            #expect(record.pictureParameterSets == format.hevcPictureParameterSets)
            #expect(
                format.parameterSets
                    == record.videoParameterSets + record.sequenceParameterSets + record.pictureParameterSets)
            #expect(record.chromaFormat == 1)
            #expect(record.bitDepthLumaMinus8 == 0)
            #expect(record.generalProfile.profileIdc == 1)
            // A description made again from the record alone is the same description.
            let again = try FormatDescription(hevcDecoderConfigurationRecord: bytes)
            #expect(again.parameterSets == format.parameterSets)
        }

        @Test("quality 1 is lossless: every plane of every frame decodes bit-exact")
        func lossless() throws {
            let source = try #require(Clips.cisco)
            let encoded = try Self.encode(source, properties: CompressionProperties(quality: 1))
            let decoded = try Clips.decode(encoded.samples, format: try #require(encoded.formatDescription))
            #expect(decoded.count == source.count)
            for (index, (frame, original)) in zip(decoded, source).enumerated() {
                #expect(Self.identical(frame.picture, original), "frame \(index) differs")
            }
            print("x265 cisco lossless: \(encoded.totalBytes) bytes")
        }

        @Test("10-bit 4:2:0 round-trips as Main 10 (PSNR-Y >= 35 dB at 10 bits)")
        func tenBit() throws {
            let source = try Self.widened(try #require(Clips.cisco), to: .i420TenBit)
            let encoded = try Self.encode(source, properties: CompressionProperties(averageBitRate: 1_000_000))
            #expect(encoded.samples.count == 9)
            let sps = try Self.sequenceParameterSet(encoded)
            #expect(sps.profileTierLevel.general?.profileIdc == 2, "Main 10")
            #expect(sps.bitDepthLuma == 10)
            let decoded = try Clips.decode(encoded.samples, format: try #require(encoded.formatDescription))
            #expect(decoded.count == 9)
            #expect(decoded.allSatisfy { $0.picture.pixelFormat == .i420TenBit })
            let values = zip(decoded, source).map { Self.psnrY($0.picture, $1, bitDepth: 10) }
            let psnr = values.reduce(0, +) / Double(max(values.count, 1))
            print("x265 cisco 10-bit 1 Mbit/s: \(encoded.totalBytes) bytes, PSNR-Y \(psnr) dB")
            #expect(psnr >= 35)
        }

        @Test(
            "the profile follows the pixel format",
            arguments: [
                (PixelFormat.i422TenBit, 4, 2), (PixelFormat.i444, 4, 3), (PixelFormat.i444TenBit, 4, 3)
            ])
        func rangeExtensionProfiles(_ format: PixelFormat, _ profileIdc: Int, _ chromaFormatIdc: Int) throws {
            let source = try Self.widened(try #require(Clips.ciscoLoop(2)), to: format)
            let encoded = try Self.encode(source, properties: CompressionProperties(quality: 0.6))
            let sps = try Self.sequenceParameterSet(encoded)
            #expect(sps.profileTierLevel.general?.profileIdc == profileIdc)
            #expect(sps.chromaFormatIdc == chromaFormatIdc)
            #expect(sps.bitDepthLuma == max(8, format.bitDepth))
            let decoded = try Clips.decode(encoded.samples, format: try #require(encoded.formatDescription))
            #expect(decoded.count == 2)
            #expect(decoded.allSatisfy { $0.picture.pixelFormat == format })
        }

        @Test("entropyMode cavlc is refused, naming the property; cabac is accepted")
        func cavlcRefused() throws {
            let source = try #require(Clips.ciscoLoop(1))
            do {
                _ = try Self.encode(source, properties: CompressionProperties(entropyMode: .cavlc))
                Issue.record("CAVLC was accepted")
            } catch let error as VTError {
                #expect(error.code == .invalidProperty)
                #expect(error.property == .entropyMode)
                #expect(error.message.contains("CABAC"), "\(error)")
            }
            #expect(try Self.encode(source, properties: CompressionProperties(entropyMode: .cabac)).samples.count == 1)
        }

        @Test("a forced key frame is an IDR sample (sync)")
        func forcedKeyFrame() throws {
            let source = try #require(Clips.ciscoLoop(12))
            let encoded = try Self.encode(source, forceKeyFrameAt: [6])
            let forced = try #require(
                encoded.samples.first { $0.presentationTimeStamp == Encoder.frameDuration12.multiplied(by: 6) })
            #expect(forced.isSync)
            #expect(Self.nalUnitTypes(forced).contains { $0 == 19 || $0 == 20 }, "IDR_W_RADL or IDR_N_LP")
            let syncTimes = encoded.samples.filter(\.isSync).map {
                Int(($0.presentationTimeStamp.seconds * 12).rounded())
            }
            #expect(syncTimes.sorted() == [0, 6], "\(syncTimes)")
        }

        @Test("allowFrameReordering false: DTS == PTS and decode order is display order (the default reorders)")
        func noReordering() throws {
            let source = try #require(Clips.ciscoLoop(24))
            let reordered = try Self.encode(source)
            #expect(reordered.samples.contains { $0.decodeTimeStamp != $0.presentationTimeStamp })
            let encoded = try Self.encode(source, properties: CompressionProperties(allowFrameReordering: false))
            #expect(encoded.samples.count == 24)
            #expect(encoded.samples.allSatisfy { $0.decodeTimeStamp == $0.presentationTimeStamp })
            let pts = encoded.samples.map(\.presentationTimeStamp)
            #expect(pts == pts.sorted())
        }

        @Test(
            "realTime: frameDelay 0 and every frame out from its own encode call, whatever the thread count",
            arguments: [0, 1, 4])
        func realTime(_ threadCount: Int) throws {
            let source = try #require(Clips.ciscoLoop(12))
            let encoded = try Self.encode(
                source, properties: CompressionProperties(realTime: true), threadCount: threadCount)
            #expect(encoded.frameDelay == 0)
            #expect(encoded.outputsAfterEncode == Array(1...12))
        }

        @Test(
            "maxFrameDelayCount and the default: no frame held longer than frameDelay says",
            arguments: [nil, 0, 2, 4, 8])
        func frameDelay(_ count: Int?) throws {
            let source = try #require(Clips.ciscoLoop(40))
            let encoded = try Self.encode(source, properties: CompressionProperties(maxFrameDelayCount: count))
            if let count { #expect(encoded.frameDelay <= count) }
            #expect(encoded.samples.count == 40)
            for (index, outputs) in encoded.outputsAfterEncode.enumerated() {
                #expect(outputs >= index + 1 - encoded.frameDelay, "after frame \(index): \(outputs) out")
            }
        }

        @Test("a bit rate set while encoding restarts x265 at the next frame; the stream still decodes")
        func rateChange() throws {
            let source = try #require(Clips.ciscoLoop(16))
            let frames = Mutex<[EncodedFrame]>([])
            let session = try CompressionSession(
                width: 320, height: 192, codecType: .hevc, sourcePixelFormat: .i420,
                properties: CompressionProperties(quality: 0.5), backends: [X265EncoderFactory()]
            ) { frame in frames.withLock { $0.append(frame) } }
            defer { session.invalidate() }
            for (index, picture) in source.enumerated() {
                if index == 8 { try session.setProperties { $0.averageBitRate = 200_000 } }
                try session.encode(
                    picture, presentationTimeStamp: Encoder.frameDuration12.multiplied(by: index),
                    duration: Encoder.frameDuration12, frameReference: UInt64(index))
            }
            try session.completeFrames()
            let samples = frames.withLock { $0 }.compactMap(\.sampleBuffer)
            #expect(samples.count == 16)
            let dts = samples.map(\.decodeTimeStamp)
            #expect(zip(dts, dts.dropFirst()).allSatisfy { $0.0 < $0.1 }, "DTS strictly increasing")
            let syncFrames = samples.filter { $0.isSync }.map {
                Int(($0.presentationTimeStamp.seconds * 12).rounded())
            }
            #expect(syncFrames.sorted() == [0, 8], "\(syncFrames)")
            let decoded = try Clips.decode(samples, format: try #require(session.formatDescription))
            #expect(decoded.count == 16)
        }

        @Test("a size off the 8x8 coding grid (318x190): conformance window, decoded at that size")
        func conformanceWindow() throws {
            // The clip's top-left 318x190 (a test input, copied on purpose).
            let source = try #require(Clips.cisco).prefix(3).map { picture in
                let out = try PixelBuffer(width: 318, height: 190, pixelFormat: .i420)
                for (plane, input) in zip(out.planes, picture.planes) {
                    for row in 0..<plane.height {
                        (plane.baseAddress + row * plane.bytesPerRow).copyMemory(
                            from: input.baseAddress + row * input.bytesPerRow, byteCount: plane.width)
                    }
                }
                return out
            }
            let encoded = try Self.encode(source, properties: CompressionProperties(averageBitRate: 1_000_000))
            let format = try #require(encoded.formatDescription)
            #expect(format.dimensions.width == 318 && format.dimensions.height == 190)
            let decoded = try Clips.decode(encoded.samples, format: format)
            #expect(decoded.count == 3)
            #expect(decoded.allSatisfy { $0.picture.width == 318 && $0.picture.height == 190 })
            let psnr = zip(decoded, source).map { Self.psnrY($0.picture, $1, bitDepth: 8) }.min() ?? 0
            #expect(psnr >= 35, "\(psnr)")
        }

        @Test("the smallest picture, 66x64 (off the 8x8 grid), decoded at its size; under 64 on a side refused")
        func smallPictures() throws {
            // The clip's top-left 66x64 (a test input, copied on purpose).
            let source = try #require(Clips.cisco).prefix(3).map { picture in
                let out = try PixelBuffer(width: 66, height: 64, pixelFormat: .i420)
                for (plane, input) in zip(out.planes, picture.planes) {
                    for row in 0..<plane.height {
                        (plane.baseAddress + row * plane.bytesPerRow).copyMemory(
                            from: input.baseAddress + row * input.bytesPerRow, byteCount: plane.width)
                    }
                }
                return out
            }
            let encoded = try Self.encode(source, properties: CompressionProperties(quality: 0.9))
            let sps = try Self.sequenceParameterSet(encoded)
            // CtbLog2SizeY = MinCbLog2SizeY + log2_diff_max_min_luma_coding_block_size (7-10, 7-11).
            #expect(sps.log2MinLumaCodingBlockSizeMinus3 + 3 + sps.log2DiffMaxMinLumaCodingBlockSize == 6)
            let format = try #require(encoded.formatDescription)
            let decoded = try Clips.decode(encoded.samples, format: format)
            #expect(decoded.count == 3)
            #expect(decoded.allSatisfy { $0.picture.width == 66 && $0.picture.height == 64 })
            let psnr = zip(decoded, source).map { Self.psnrY($0.picture, $1, bitDepth: 8) }.min() ?? 0
            #expect(psnr >= 40, "\(psnr)")
            #expect(throws: VTError.self) {
                _ = try CompressionSession(
                    width: 48, height: 64, codecType: .hevc, sourcePixelFormat: .i420,
                    backends: [X265EncoderFactory()]
                ) { _ in }
            }
        }

        @Test("colour properties reach the VUI, and so the format description")
        func colour() throws {
            let source = try #require(Clips.ciscoLoop(2))
            let encoded = try Self.encode(
                source,
                properties: CompressionProperties(
                    colorPrimaries: .bt2020, transferFunction: .bt2020TenBit,
                    yCbCrMatrix: .bt2020NonConstantLuminance, fullRange: true))
            let extensions = try #require(encoded.formatDescription?.extensions)
            #expect(extensions.colorPrimaries == .bt2020)
            #expect(extensions.transferFunction == .bt2020TenBit)
            #expect(extensions.yCbCrMatrix == .bt2020NonConstantLuminance)
            #expect(extensions.fullRange == true)
        }

        @Test("dataRateLimits: VBV keeps the clip under the limit that is far below the unlimited rate")
        func dataRateLimits() throws {
            let source = try #require(Clips.ciscoLoop(36))
            let unlimited = try Self.encode(source, properties: CompressionProperties(quality: 0.8))
            let limit = DataRateLimit(bytes: 8_000, seconds: 1)
            let limited = try Self.encode(
                source, properties: CompressionProperties(dataRateLimits: [limit], quality: 0.8))
            print(
                "x265 36 frames quality 0.8: \(unlimited.totalBytes) bytes; limited to 8000 B/s: \(limited.totalBytes)")
            #expect(unlimited.totalBytes > 3 * limit.bytes * 2, "the limit must bite")
            // Every window of 12 frames (one second) in decode order.
            let sizes = limited.samples.map(\.totalSampleSize)
            let windows = (0...(sizes.count - 12)).map { sizes[$0..<($0 + 12)].reduce(0, +) }
            #expect(windows.allSatisfy { $0 <= limit.bytes }, "\(windows)")
        }

        @Test("allowTemporalCompression false and maxKeyFrameInterval: IRAP placement")
        func keyFrames() throws {
            let source = try #require(Clips.ciscoLoop(12))
            let intra = try Self.encode(source, properties: CompressionProperties(allowTemporalCompression: false))
            #expect(intra.samples.count == 12)
            #expect(intra.samples.allSatisfy { $0.isSync })
            let limited = try Self.encode(source, properties: CompressionProperties(maxKeyFrameInterval: 4))
            let syncFrames = limited.samples.filter(\.isSync)
                .map { Int(($0.presentationTimeStamp.seconds * 12).rounded()) }.sorted()
            #expect(syncFrames.first == 0)
            #expect(zip(syncFrames, syncFrames.dropFirst() + [12]).allSatisfy { $1 - $0 <= 4 }, "\(syncFrames)")
        }

        @Test("HEVC sessions: hardwarePolicy .require fails clearly; no HEVC backend given fails clearly")
        func sessionRefusals() throws {
            do {
                _ = try CompressionSession(
                    width: 64, height: 64, codecType: .hevc,
                    encoderSpecification: EncoderSpecification(hardwarePolicy: .require), sourcePixelFormat: .i420,
                    backends: [X265EncoderFactory()]
                ) { _ in }
                Issue.record("hardware HEVC encoding was accepted")
            } catch {
                #expect(error.code == .hardwareUnavailable)
                #expect(error.message.contains("HEVC"), "\(error)")
            }
            do {
                _ = try CompressionSession(
                    width: 64, height: 64, codecType: .hevc, sourcePixelFormat: .i420, backends: [X264EncoderFactory()]
                ) { _ in }
                Issue.record("an H.264 backend was taken for HEVC")
            } catch {
                #expect(error.code == .unsupportedFormat)
                #expect(error.message.contains("X265EncoderFactory"), "\(error)")
            }
            // And the other way: an H.264 session never takes x265.
            let h264 = try CompressionSession(
                width: 64, height: 64, sourcePixelFormat: .i420, backends: [X265EncoderFactory(), X264EncoderFactory()]
            ) { _ in }
            #expect(h264.activeBackendName == "x264 (software)")
            h264.invalidate()
        }
    }
}
