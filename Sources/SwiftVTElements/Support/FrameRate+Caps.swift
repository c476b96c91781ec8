import CGStreamer
import CSwiftVTShim
import MediaCore

extension FrameRate {
    /// The `framerate` field of the first structure of `caps`; nil when it has none.
    init?(inCaps caps: UnsafeMutablePointer<GstCaps>) {
        var numerator: Int32 = 0
        var denominator: Int32 = 1
        guard swiftvt_caps_get_fraction(caps, "framerate", &numerator, &denominator) != 0 else { return nil }
        self.init(Int(numerator), Int(denominator))
    }

    /// Sets `caps`' `framerate` field to this rate (a GstFraction has 32-bit terms; an unknown
    /// rate is GStreamer's 0/1).
    func setField(of caps: UnsafeMutablePointer<GstCaps>) {
        let rate = isKnown ? self : .unknown
        swiftvt_caps_set_fraction(caps, "framerate", Int32(clamping: rate.numerator), Int32(clamping: rate.denominator))
    }
}
