/// A frame rate as the fraction that caps, containers and the VUI carry (GStreamer's `framerate`
/// field, 30000/1001), not a Double, so that NTSC rates stay exact through every layer. 0/1 is
/// GStreamer's "unknown or variable" (``unknown``).
public struct FrameRate: Sendable, Hashable, CustomStringConvertible {
    public var numerator: Int
    public var denominator: Int

    public init(_ numerator: Int, _ denominator: Int) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// GStreamer's 0/1: no rate is known (or the rate varies).
    public static let unknown = FrameRate(0, 1)

    /// Both terms positive: a rate frames can be timed by.
    public var isKnown: Bool { numerator > 0 && denominator > 0 }

    /// Frames per second; nil when the rate is not known.
    public var framesPerSecond: Double? { isKnown ? Double(numerator) / Double(denominator) : nil }

    /// The duration of one frame, or of one field with `fieldsPerFrame` 2; nil when the rate is
    /// not known. The timescale is clamped to MediaTime's 32 bits (VUI time scales can exceed it).
    public func frameDuration(fieldsPerFrame: Int = 1) -> MediaTime? {
        guard isKnown else { return nil }
        return MediaTime(
            value: Int64(denominator),
            timescale: Int32(clamping: numerator.multipliedReportingOverflow(by: fieldsPerFrame).partialValue))
    }

    /// The same rate in lowest terms (60000/2002 -> 30000/1001).
    public var reduced: FrameRate {
        var (a, b) = (numerator, denominator)
        while b != 0 { (a, b) = (b, a % b) }
        return a > 0 ? FrameRate(numerator / a, denominator / a) : self
    }

    public var description: String { "\(numerator)/\(denominator)" }
}
