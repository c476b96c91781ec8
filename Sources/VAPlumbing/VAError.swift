import CVA

/// A VA-API call that failed: which call, its `VAStatus`, libva's text for it, and what SwiftVT
/// was doing.
public struct VAError: Error, Sendable, CustomStringConvertible {
    /// The libva function, e.g. "vaCreateContext".
    public var call: String
    public var status: Int32
    public var context: String?

    public init(call: String, status: VAStatus, context: String? = nil) {
        self.call = call
        self.status = Int32(truncatingIfNeeded: status)
        self.context = context
    }

    /// libva's description of the status (vaErrorStr), e.g. "resource allocation failed".
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
@inline(__always)
public func vaCall(_ name: String, context: @autoclosure () -> String? = nil, _ body: () -> VAStatus) throws(VAError) {
    let status = body()
    if status != cva_status_success() {
        throw VAError(call: name, status: status, context: context())
    }
}
