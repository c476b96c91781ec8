import Testing

@testable import MediaCore

extension MediaCoreTests {
    @Suite struct FormatDescriptionTests {
        let sps: [UInt8] = [0x67, 0x64, 0x00, 0x28, 0xAC, 0xD9]
        let pps: [UInt8] = [0x68, 0xEB, 0xE3, 0xCB]

        func h264(
            width: Int32 = 1920, height: Int32 = 1080, bitDepth: Int? = 8,
            chroma: ChromaSubsampling? = .yuv420, parameterSets: [[UInt8]]? = nil,
            primaries: ColorPrimaries? = .bt709
        ) throws -> FormatDescription {
            try FormatDescription(
                codecType: .h264, dimensions: VideoDimensions(width: width, height: height),
                extensions: FormatDescriptionExtensions(
                    colorPrimaries: primaries, chromaSubsampling: chroma, bitDepth: bitDepth,
                    sampleDescriptionAtoms: [.avcDecoderConfigurationAtom: [1, 0x64, 0, 0x28]]),
                parameterSets: parameterSets ?? [sps, pps], nalUnitHeaderLength: 4)
        }

        @Test func fourCharCodes() {
            let code: FourCharCode = "avc1"
            #expect(code.rawValue == 0x6176_6331)
            #expect(code.description == "avc1")
            #expect(FourCharCode(string: "avc1") == code)
            #expect(FourCharCode(string: "avc") == nil)
            #expect(FourCharCode(string: "avc12") == nil)
            #expect(FourCharCode(string: "avé") == nil)
            #expect(FourCharCode(string: "") == nil)
            #expect(FourCharCode(rawValue: 1).description == "0x00000001")
            #expect(FourCharCode.h264InBandParameterSets.description == "avc3")
            #expect(PixelFormat.nv12VideoRange.description == "420v")
        }

        @Test func equalityAndHashing() throws {
            let a = try h264()
            let b = try h264()
            #expect(a == b && a.hashValue == b.hashValue)
            #expect(Set([a, b]).count == 1)
            #expect(try h264(primaries: .bt2020) != a)
            #expect(try h264(parameterSets: [sps]) != a)
            #expect(try h264(width: 1280) != a)
        }

        @Test func parameterSetAccess() throws {
            let format = try h264()
            let first = try format.parameterSet(at: 0)
            #expect(first.parameterSet == sps && first.count == 2 && first.nalUnitHeaderLength == 4)
            #expect(try format.parameterSet(at: 1).parameterSet == pps)
            #expect(throws: FormatDescriptionError.parameterSetIndexOutOfRange(index: 2, count: 2)) {
                try format.parameterSet(at: 2)
            }
            #expect(throws: FormatDescriptionError.parameterSetIndexOutOfRange(index: -1, count: 2)) {
                try format.parameterSet(at: -1)
            }
            let empty = try FormatDescription(codecType: .h264InBandParameterSets, nalUnitHeaderLength: 4)
            #expect(throws: FormatDescriptionError.parameterSetIndexOutOfRange(index: 0, count: 0)) {
                try empty.parameterSet(at: 0)
            }
        }

        @Test func initializerValidation() {
            #expect(throws: FormatDescriptionError.invalidNALUnitHeaderLength(3)) {
                try FormatDescription(codecType: .h264, nalUnitHeaderLength: 3)
            }
            #expect(throws: FormatDescriptionError.invalidNALUnitHeaderLength(-1)) {
                try FormatDescription(codecType: .h264, nalUnitHeaderLength: -1)
            }
            let negative = VideoDimensions(width: -1, height: 10)
            #expect(throws: FormatDescriptionError.negativeDimensions(negative)) {
                try FormatDescription(codecType: .h264, dimensions: negative)
            }
            for length in [0, 1, 2, 4] {
                #expect((try? FormatDescription(codecType: .h264, nalUnitHeaderLength: length)) != nil)
            }
        }

        @Test func genericCompatibility() throws {
            let base = try h264()
            // Parameter sets and colour are codec-layer decisions, not compared here.
            #expect(base.isCompatible(with: try h264(parameterSets: [[0x67, 0x42]], primaries: .bt2020)))
            #expect(!base.isCompatible(with: try h264(width: 1280)))
            #expect(!base.isCompatible(with: try h264(height: 720)))
            #expect(!base.isCompatible(with: try h264(bitDepth: 10)))
            #expect(!base.isCompatible(with: try h264(chroma: .yuv422)))
            let avc3 = try FormatDescription(
                codecType: .h264InBandParameterSets, dimensions: base.dimensions, extensions: base.extensions)
            #expect(!base.isCompatible(with: avc3))
            let audio = try FormatDescription(
                mediaType: .audio, codecType: .h264, dimensions: base.dimensions, extensions: base.extensions)
            #expect(!base.isCompatible(with: audio))
        }

        @Test func colourCodePointsMapDirectlyAndArePreserved() {
            #expect(ColorPrimaries(rawValue: 1) == .bt709)
            #expect(ColorPrimaries(rawValue: 9) == .bt2020)
            #expect(TransferFunction(rawValue: 16) == .smpteST2084PQ)
            #expect(TransferFunction(rawValue: 18) == .hybridLogGamma)
            #expect(YCbCrMatrix(rawValue: 6) == .smpte170M)
            #expect(YCbCrMatrix(rawValue: 2) == .unspecified)
            #expect(ChromaLocation(rawValue: 2) == .topLeft)
            // A reserved code point survives unchanged.
            #expect(ColorPrimaries(rawValue: 200).rawValue == 200)
            #expect(ChromaSubsampling(rawValue: 1) == .yuv420)
            #expect(Rational(1, 2) != Rational(2, 4) && Rational(1, 2).isNumericallyEqual(to: Rational(2, 4)))
            #expect(!Rational(1, 0).isNumericallyEqual(to: Rational(2, 0)))
        }
    }
}
