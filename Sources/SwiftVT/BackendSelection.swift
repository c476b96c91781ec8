/// The hardware policy, shared by both sessions: which backend factory wins, and what was tried.
///
/// Candidates are taken in order (hardware first under ``HardwarePolicy/auto``); the first that is
/// available and starts wins; every refusal is recorded for the error message. Each session turns
/// the outcome into its own error type.
enum BackendSelection<Factory, Backend, Failure: Error> {
    /// `passedOver` lists the candidates tried before it and why each was not taken (empty
    /// when the first candidate won), for the log: "auto" says why it did not use hardware.
    case chosen(Factory, Backend, passedOver: String)
    /// ``HardwarePolicy/require`` and no hardware backend could take the stream.
    case hardwareUnavailable(tried: String)
    /// A candidate was available but failed to start (the first such failure).
    case startFailed(Failure, tried: String, candidateCount: Int)
    /// No candidate was available.
    case unavailable(tried: String)

    /// - Parameter what: e.g. "H.264 decoder", for the note on a missing VA-API backend.
    static func select(
        policy: HardwarePolicy, factories: [Factory], what: String,
        name: (Factory) -> String, isHardware: (Factory) -> Bool, unavailableReason: (Factory) -> String?,
        message: (Failure) -> String, make: (Factory) throws(Failure) -> Backend
    ) -> BackendSelection {
        var tried: [String] = []
        var candidates: [Factory] = []
        switch policy {
        case .disable:
            for factory in factories {
                if isHardware(factory) {
                    tried.append("\(name(factory)): hardware, excluded by hardwarePolicy .disable")
                } else {
                    candidates.append(factory)
                }
            }
        case .require:
            for factory in factories {
                if isHardware(factory) {
                    candidates.append(factory)
                } else {
                    tried.append("\(name(factory)): software, excluded by hardwarePolicy .require")
                }
            }
            if candidates.isEmpty {
                tried.append("no VA-API \(what): SwiftVT's VA-API backend is not available in this build")
            }
        case .auto:
            candidates = factories.filter(isHardware) + factories.filter { !isHardware($0) }
        }
        var firstStartError: Failure?
        for factory in candidates {
            if let reason = unavailableReason(factory) {
                tried.append("\(name(factory)): \(reason)")
                continue
            }
            do {
                return .chosen(factory, try make(factory), passedOver: tried.joined(separator: "; "))
            } catch {
                tried.append("\(name(factory)): \(message(error))")
                if firstStartError == nil { firstStartError = error }
            }
        }
        let list = tried.isEmpty ? "no backends were given" : tried.joined(separator: "; ")
        if policy == .require { return .hardwareUnavailable(tried: list) }
        if let firstStartError { return .startFailed(firstStartError, tried: list, candidateCount: candidates.count) }
        return .unavailable(tried: list)
    }
}
