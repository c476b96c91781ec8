import CVA

/// A VA-API call that failed: which call, its `VAStatus`, libva's text for it, and what SwiftVT
/// was doing.
///
/// `description` reads "vaCreateContext failed: resource allocation failed (VAStatus 0x3) while
/// creating a 1280x720 context".
public struct VAError: Error, Sendable, CustomStringConvertible {
    /// The libva function, e.g. "vaCreateContext".
    public var call: String
    /// The `VAStatus` it returned (VA_STATUS_ERROR_* in va.h).
    public var status: Int32
    /// What SwiftVT was doing, e.g. "creating a 1280x720 context"; nil when the call says it all.
    public var context: String?

    /// - Parameter status: a VA_STATUS_ERROR_* value; also used for problems SwiftVT detects
    ///   before or after a call (an argument out of range, an image too small), with the call
    ///   they concern.
    public init(call: String, status: VAStatus, context: String? = nil) {
        self.call = call
        self.status = Int32(truncatingIfNeeded: status)
        self.context = context
    }

    /// libva's description of the status (vaErrorStr), e.g. "resource allocation failed".
    /// vaErrorStr returns static strings (va.c), so this is safe from any thread; an error made
    /// where libva is not loaded says the number instead.
    public var statusText: String {
        guard cva_load() == nil, let text = vaErrorStr(VAStatus(status)) else { return "VA status \(status)" }
        return String(cString: text)
    }

    public var description: String {
        let hex = "0x" + String(UInt32(bitPattern: status), radix: 16)
        return "\(call) failed: \(statusText) (VAStatus \(hex))" + (context.map { " while \($0)" } ?? "")
    }
}

/// The one way SwiftVT calls libva: runs `body` and turns a status other than
/// VA_STATUS_SUCCESS into a ``VAError`` naming the call.
///
/// - Parameters:
///   - name: the libva function `body` calls, e.g. "vaCreateContext".
///   - context: what is being done, for the message; only evaluated on failure.
@inline(__always)
public func vaCall(_ name: String, context: @autoclosure () -> String? = nil, _ body: () -> VAStatus) throws(VAError) {
    let status = body()
    if status != cva_status_success() {
        throw VAError(call: name, status: status, context: context())
    }
}

/// `value` as the C integer type `call` takes. A value that does not fit (a negative count, a
/// size beyond 32 bits) is `call`'s VA_STATUS_ERROR_INVALID_PARAMETER instead of a trap: sizes
/// and counts come from bitstreams.
@inline(__always)
func vaArgument<T: FixedWidthInteger>(_ value: Int, _ call: String, _ what: String) throws(VAError) -> T {
    guard let converted = T(exactly: value) else {
        throw VAError(
            call: call, status: VAStatus(VA_STATUS_ERROR_INVALID_PARAMETER),
            context: "passing \(what) \(value), which is out of range")
    }
    return converted
}
