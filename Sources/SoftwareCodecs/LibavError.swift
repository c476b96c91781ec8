import CFFmpeg
import SwiftVT

/// The one place an AVERROR becomes a ``VTError``: every libav* call that can fail
/// goes through ``check(_:_:)`` (or ``error(_:_:)`` when the failure is reported, not thrown),
/// so each error carries the operation and the status.
enum Libav {
    /// Returns `status` when it is not an error, throws the typed error otherwise.
    @discardableResult
    static func check(_ status: Int32, _ operation: String) throws(VTError) -> Int32 {
        guard status < 0 else { return status }
        throw error(status, operation)
    }

    static func error(_ status: Int32, _ operation: String) -> VTError {
        let code: VTError.Code
        let advice: String
        switch status {
        case cffmpeg_error_invalid_data():
            code = .badData
            advice = "the H.264 data is damaged; decoding continues with the next sample"
        case cffmpeg_error_no_memory():
            code = .allocationFailed
            advice = "out of memory (or picture buffers); release held frames or lower the thread count"
        case cffmpeg_error_patch_welcome(), cffmpeg_error_not_implemented():
            code = .unsupportedFormat
            advice = "the stream uses a feature libavcodec does not implement"
        case cffmpeg_error_invalid_argument():
            code = .decoderFailed
            advice = "libavcodec rejected the call; this is a bug in SwiftVT's use of it, please report it"
        default:
            code = .decoderFailed
            advice = "libavcodec failed"
        }
        return VTError(
            code, "\(advice): \(describe(status))", backendStatus: status, operation: operation)
    }

    /// av_strerror's text for `status`.
    static func describe(_ status: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        let found = av_strerror(status, &buffer, buffer.count) == 0
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return found ? text : "AVERROR \(status)"
    }
}
