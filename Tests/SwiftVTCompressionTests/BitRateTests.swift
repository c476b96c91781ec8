import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Testing

/// averageBitRate accuracy on the corpus's 300-frame 720p clip (decoded in process by
/// DecompressionSession + libavcodec), and a mid-stream bit-rate change. Serialized: each encode
/// uses both cores.
extension CompressionTests {
    @Suite("x264 ABR accuracy")
    struct BitRateTests {
        static let frameDuration = MediaTime(value: 1, timescale: 25)

        @Test(
            "averageBitRate on 300 frames of 720p: within ±3 % of the target; PSNR-Y floor",
            arguments: [1_000_000, 2_500_000])
        func averageBitRate(_ target: Int) throws {
            let source = try #require(Clips.hd720)
            #expect(source.count == 300)
            let encoded = try Encoder.encode(
                source, properties: CompressionProperties(averageBitRate: target), frameDuration: Self.frameDuration)
            #expect(encoded.samples.count == 300)
            let achieved = encoded.bitRate
            let error = (achieved - Double(target)) / Double(target) * 100
            let (psnr, decodedCount) = try meanPSNR(encoded, source: source)
            print(
                "ABR target \(target / 1000) kbit/s: achieved \(Int(achieved / 1000)) kbit/s (\((error * 100).rounded() / 100) %), PSNR-Y \((psnr * 100).rounded() / 100) dB"
            )
            #expect(abs(error) <= 3)
            #expect(decodedCount == 300)
            #expect(psnr >= (target >= 2_000_000 ? 38 : 35))
            let pts = encoded.samples.map(\.presentationTimeStamp).sorted()
            #expect(pts == (0..<300).map { Self.frameDuration.multiplied(by: $0) })
        }

        @Test("setProperties(averageBitRate) mid-stream: the second half moves to the new target")
        func midStreamChange() throws {
            let source = try #require(Clips.hd720).prefix(120)
            let encoded = try Encoder.encode(
                Array(source), properties: CompressionProperties(averageBitRate: 600_000),
                frameDuration: Self.frameDuration
            ) { session, index in
                if index == 60 { try session.setProperties { $0.averageBitRate = 2_400_000 } }
            }
            let samples = encoded.samples.sorted { $0.presentationTimeStamp < $1.presentationTimeStamp }
            let first = samples.prefix(60).reduce(0) { $0 + $1.totalSampleSize } * 8 * 25 / 60
            let second = samples.dropFirst(60).reduce(0) { $0 + $1.totalSampleSize } * 8 * 25 / 60
            print(
                "bit rate 600 -> 2400 kbit/s at frame 60: first half \(first / 1000) kbit/s, second half \(second / 1000) kbit/s"
            )
            #expect(Double(second) > Double(first) * 2)
        }
    }
}
