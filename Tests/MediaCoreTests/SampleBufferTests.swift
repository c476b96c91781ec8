import Testing

@testable import MediaCore

extension MediaCoreTests {
    @Suite struct SampleBufferTests {
        let data = BlockBuffer(Array(0..<30))
        let frame = t(1001, 30000)

        func timing(_ pts: Int64, _ dts: Int64) -> SampleTimingInfo {
            SampleTimingInfo(
                duration: frame, presentationTimeStamp: t(pts * 1001, 30000), decodeTimeStamp: t(dts * 1001, 30000))
        }

        @Test func validationErrors() {
            #expect(throws: SampleBufferError.negativeSampleCount(-1)) {
                try SampleBuffer(dataBuffer: data, formatDescription: nil, sampleCount: -1)
            }
            #expect(throws: SampleBufferError.timingCountMismatch(sampleCount: 3, timingCount: 2)) {
                try SampleBuffer(
                    dataBuffer: data, formatDescription: nil, sampleCount: 3,
                    timings: .perSample([timing(0, 0), timing(1, 1)]))
            }
            #expect(throws: SampleBufferError.sizeCountMismatch(sampleCount: 3, sizeCount: 2)) {
                try SampleBuffer(dataBuffer: data, formatDescription: nil, sampleCount: 3, sizes: .perSample([10, 20]))
            }
            #expect(throws: SampleBufferError.sampleSizesDoNotMatchData(totalSize: 29, dataSize: 30)) {
                try SampleBuffer(
                    dataBuffer: data, formatDescription: nil, sampleCount: 3, sizes: .perSample([10, 10, 9]))
            }
            #expect(throws: SampleBufferError.negativeSampleSize(index: 1, size: -5)) {
                try SampleBuffer(
                    dataBuffer: data, formatDescription: nil, sampleCount: 3, sizes: .perSample([20, -5, 15]))
            }
            #expect(throws: SampleBufferError.sampleSizesDoNotMatchData(totalSize: 33, dataSize: 30)) {
                try SampleBuffer(dataBuffer: data, formatDescription: nil, sampleCount: 3, sizes: .uniform(11))
            }
            #expect(throws: SampleBufferError.sampleSizesDoNotMatchData(totalSize: nil, dataSize: 30)) {
                try SampleBuffer(dataBuffer: data, formatDescription: nil, sampleCount: 3, sizes: .uniform(Int.max))
            }
            #expect(throws: SampleBufferError.sampleSizesDoNotMatchData(totalSize: nil, dataSize: 30)) {
                try SampleBuffer(
                    dataBuffer: data, formatDescription: nil, sampleCount: 2, sizes: .perSample([Int.max, 1]))
            }
            #expect(throws: SampleBufferError.negativeSampleSize(index: 0, size: -10)) {
                try SampleBuffer(dataBuffer: data, formatDescription: nil, sampleCount: 3, sizes: .uniform(-10))
            }
            #expect(throws: SampleBufferError.attachmentCountMismatch(sampleCount: 3, attachmentCount: 1)) {
                try SampleBuffer(
                    dataBuffer: data, formatDescription: nil, sampleCount: 3, sampleAttachments: [SampleAttachments()])
            }
        }

        @Test func perSampleTimingAndSizes() throws {
            // Decode order I P B: presentation order I B P.
            let buffer = try SampleBuffer(
                dataBuffer: data, formatDescription: nil, sampleCount: 3,
                timings: .perSample([timing(1, 0), timing(3, 1), timing(2, 2)]),
                sizes: .perSample([15, 10, 5]),
                sampleAttachments: [
                    SampleAttachments(dependsOnOthers: false, isDependedOnByOthers: true),
                    SampleAttachments(notSync: true, dependsOnOthers: true),
                    SampleAttachments(
                        notSync: true, dependsOnOthers: true, isDependedOnByOthers: false,
                        earlierDisplayTimesAllowed: true)
                ])
            #expect(buffer.presentationTimeStamp == t(1001, 30000))
            #expect(buffer.decodeTimeStamp == .zero)
            #expect(buffer.duration == t(3003, 30000))
            #expect(buffer.presentationTimeRange == MediaTimeRange(start: t(1001, 30000), duration: t(3003, 30000)))
            #expect(try buffer.timingInfo(at: 2) == timing(2, 2))
            #expect(try buffer.sampleSize(at: 0) == 15)
            #expect(try buffer.sampleSize(at: 2) == 5)
            #expect(try buffer.sampleData(at: 1).copyToArray() == Array(15..<25))
            #expect(try buffer.sampleData(at: 2).copyToArray() == Array(25..<30))
            #expect(buffer.isSync)
            #expect(try buffer.attachments(forSampleAt: 1).notSync)
            #expect(throws: SampleBufferError.sampleIndexOutOfRange(index: 3, sampleCount: 3)) {
                try buffer.timingInfo(at: 3)
            }
            #expect(throws: SampleBufferError.sampleIndexOutOfRange(index: -1, sampleCount: 3)) {
                try buffer.sampleSize(at: -1)
            }
            #expect(buffer.totalSampleSize == 30 && buffer.dataBuffer != nil && buffer.imageBuffer == nil)
        }

        @Test func uniformTimingIsExtrapolated() throws {
            let buffer = try SampleBuffer(
                dataBuffer: data, formatDescription: nil, sampleCount: 3,
                timings: .uniform(timing(10, 10)), sizes: .uniform(10))
            let third = try buffer.timingInfo(at: 2)
            #expect(third.presentationTimeStamp == t(12 * 1001, 30000))
            #expect(third.decodeTimeStamp == t(12 * 1001, 30000))
            #expect(buffer.duration == t(3003, 30000))
            #expect(try buffer.sampleData(at: 1).copyToArray() == Array(10..<20))
        }

        @Test func missingInformation() throws {
            var buffer = try SampleBuffer(dataBuffer: data, formatDescription: nil)
            #expect(!buffer.presentationTimeStamp.isValid && !buffer.duration.isValid)
            #expect(try buffer.timingInfo(at: 0) == .invalid)
            #expect(try buffer.sampleSize(at: 0) == 30) // one sample: the whole buffer
            #expect(buffer.isSync)
            try buffer.setAttachments(SampleAttachments(notSync: true), forSampleAt: 0)
            #expect(!buffer.isSync)
            buffer.attachments.resetDecoderBeforeDecoding = true
            buffer.attachments.custom["gst-flags"] = .integer(0x40)
            #expect(buffer.attachments.custom["gst-flags"] == .integer(0x40))

            let several = try SampleBuffer(dataBuffer: data, formatDescription: nil, sampleCount: 2)
            #expect(throws: SampleBufferError.sampleSizesUnavailable) { try several.sampleSize(at: 0) }

            let ptsOnly = try SampleBuffer(
                dataBuffer: data, formatDescription: nil,
                timings: .uniform(SampleTimingInfo(presentationTimeStamp: t(5, 1))))
            #expect(ptsOnly.decodeTimeStampOrPresentationTimeStamp == t(5, 1))
        }

        @Test func imageBuffers() throws {
            let picture = try PixelBuffer(width: 64, height: 48, pixelFormat: .nv12VideoRange)
            let format = try FormatDescription(
                codecType: PixelFormat.nv12VideoRange.rawValue, dimensions: VideoDimensions(width: 64, height: 48))
            let sample = try SampleBuffer(
                imageBuffer: picture, formatDescription: format, timing: timing(0, 0))
            #expect(sample.sampleCount == 1 && sample.imageBuffer === picture && sample.dataBuffer == nil)
            #expect(sample.presentationTimeStamp == .zero)
            #expect(throws: SampleBufferError.sampleSizesUnavailable) { try sample.sampleSize(at: 0) }
            let wrongSize = try FormatDescription(
                codecType: PixelFormat.nv12VideoRange.rawValue, dimensions: VideoDimensions(width: 64, height: 50))
            #expect(throws: SampleBufferError.formatDescriptionMismatch) {
                try SampleBuffer(imageBuffer: picture, formatDescription: wrongSize, timing: timing(0, 0))
            }
            let audio = try FormatDescription(
                mediaType: .audio, codecType: "lpcm", dimensions: VideoDimensions(width: 64, height: 48))
            #expect(throws: SampleBufferError.formatDescriptionMismatch) {
                try SampleBuffer(imageBuffer: picture, formatDescription: audio, timing: timing(0, 0))
            }
        }
    }
}
