import CVA
import H264
import SwiftVT
import Testing
import VAPlumbing

@testable import VAAPICodecs

/// A VA call's failure reaches the session's error as values (issue 33: layers talk in types):
/// the VAStatus and the call that returned it, not only text.
@Suite("VA-API H.264 decoder errors")
struct VAH264DecoderErrorTests {
    @Test("an accelerator failure keeps its VAStatus and call as the VTError's backendStatus and operation")
    func acceleratorFailureKeepsTheStatus() {
        let failure = VAError(call: "vaEndPicture", status: VAStatus(VA_STATUS_ERROR_DECODING_ERROR))
        let error = VAH264Decoder.sessionError(
            .acceleratorFailed(failure.description, status: failure.status, operation: failure.call))
        #expect(error.code == .decoderFailed)
        #expect(error.backendStatus == failure.status)
        #expect(error.operation == "vaEndPicture")
        #expect(error.description.contains("vaEndPicture returned \(failure.status)"))
    }

    @Test("a failure without a device status (a picture before its sequence) has none")
    func failureWithoutStatus() {
        let error = VAH264Decoder.sessionError(.acceleratorFailed("VA-API: a slice arrived before its sequence"))
        #expect(error.code == .decoderFailed && error.backendStatus == nil && error.operation == nil)
    }
}
