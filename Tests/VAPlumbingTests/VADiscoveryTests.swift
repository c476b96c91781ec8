import CVA
import Glibc
import SwiftVTTestSupport
import Testing
import VAPlumbing

/// What runs without a VA device: discovery that finds nothing says what it tried, and errors
/// read as sentences.
@Suite("VA discovery without a device")
struct VADiscoveryTests {
    /// Discovery starts with loading libva; where it is not installed that is the one attempt.
    static var hasLibva: Bool { cva_load() == nil }

    @Test("no render node and no X11 display: the error lists both attempts and the driver variables")
    func nothingToOpen() throws {
        let empty = try TemporaryDirectory("va-plumbing")
        do throws(VADisplayDiscoveryError) {
            _ = try VADisplayConnection.open(renderNodeDirectory: empty.path, x11DisplayNames: [])
            Issue.record("a display was opened without any device")
        } catch {
            if Self.hasLibva {
                #expect(error.attempts == ["\(empty.path): no render nodes", "X11: DISPLAY is not set"])
            } else {
                #expect(error.attempts.count == 1 && error.attempts[0].hasPrefix("libva: cannot load libva.so.2"))
                return
            }
            let text = error.description
            #expect(text.hasPrefix("no VA-API display could be opened"), "\(text)")
            #expect(text.contains("\(empty.path): no render nodes"), "\(text)")
            #expect(text.contains("DISPLAY is not set"), "\(text)")
            #expect(text.contains("LIBVA_DRIVER_NAME") && text.contains("LIBVA_DRIVERS_PATH"), "\(text)")
        }
    }

    @Test("a render node directory that does not exist has no render nodes", .enabled(if: hasLibva, "needs libva"))
    func missingDirectory() throws {
        let empty = try TemporaryDirectory("va-plumbing")
        let missing = empty.path + "/no-such-directory"
        do throws(VADisplayDiscoveryError) {
            _ = try VADisplayConnection.open(renderNodeDirectory: missing, x11DisplayNames: [])
            Issue.record("a display was opened without any device")
        } catch {
            #expect(error.attempts.first == "\(missing): no render nodes", "\(error.attempts)")
        }
    }

    @Test("an X11 display without a server is an attempt that could not connect", .enabled(if: hasLibva, "needs libva"))
    func x11WithoutServer() throws {
        let empty = try TemporaryDirectory("va-plumbing")
        // A display number nothing listens on (with-software-va.sh uses :90 to :189).
        let name = ":4711"
        do throws(VADisplayDiscoveryError) {
            _ = try VADisplayConnection.open(renderNodeDirectory: empty.path, x11DisplayNames: [name])
            Issue.record("a display was opened on \(name)")
        } catch {
            #expect(error.attempts.count == 2, "\(error.attempts)")
            #expect(error.attempts.last?.hasPrefix("X11 display \(name): ") == true, "\(error.attempts)")
        }
    }

    @Test("VAError reads as a sentence: the call, libva's text, the status, what was being done")
    func errorDescription() {
        let error = VAError(
            call: "vaCreateContext", status: VAStatus(VA_STATUS_ERROR_ALLOCATION_FAILED),
            context: "creating a 1280x720 context")
        #expect(error.call == "vaCreateContext")
        #expect(error.status == 2)
        #expect(error.description.hasPrefix("vaCreateContext failed: "))
        #expect(error.description.hasSuffix(" (VAStatus 0x2) while creating a 1280x720 context"), "\(error)")
        if cva_load() == nil {
            #expect(error.statusText == "resource allocation failed")
        }
        let bare = VAError(call: "vaSyncSurface", status: VAStatus(VA_STATUS_ERROR_DECODING_ERROR))
        #expect(bare.description.hasSuffix("(VAStatus 0x17)"), "\(bare)")
    }

    @Test("vaCall passes success through, names the call on failure, and builds the context only then")
    func helper() {
        var calls = 0
        var contextEvaluations = 0
        func context() -> String {
            contextEvaluations += 1
            return "ending picture 3"
        }
        #expect(throws: Never.self) {
            try vaCall("vaEndPicture", context: context()) {
                calls += 1
                return VAStatus(VA_STATUS_SUCCESS)
            }
        }
        #expect(calls == 1)
        #expect(contextEvaluations == 0)
        do throws(VAError) {
            try vaCall("vaEndPicture", context: context()) { VAStatus(VA_STATUS_ERROR_DECODING_ERROR) }
            Issue.record("a failing status did not throw")
        } catch {
            #expect(error.call == "vaEndPicture")
            #expect(error.status == Int32(VA_STATUS_ERROR_DECODING_ERROR))
            #expect(error.context == "ending picture 3")
        }
        #expect(contextEvaluations == 1)
    }
}
