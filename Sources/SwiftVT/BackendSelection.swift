/// The hardware policy, shared by both sessions: which backend factory wins, and what was tried.
///
/// Candidates are taken in order (hardware first under ``HardwarePolicy/auto``); the first that is
/// available and starts wins; every refusal is recorded for the error message. Each session turns
/// the outcome into its own error type.
enum BackendSelection<Factory, Backend> {
    /// `passedOver` lists the candidates tried before it and why each was not taken (empty
    /// when the first candidate won), for the log: "auto" says why it did not use hardware.
    case chosen(Factory, Backend, passedOver: [VTError.BackendRefusal])
    /// ``HardwarePolicy/require`` and no hardware backend could take the stream.
    case hardwareUnavailable(tried: [VTError.BackendRefusal])
    /// A candidate was available but failed to start (the first such failure).
    case startFailed(VTError, tried: [VTError.BackendRefusal], candidateCount: Int)
    /// No candidate was available.
    case unavailable(tried: [VTError.BackendRefusal])

    /// - Parameter what: e.g. "H.264 decoder", for the note on a missing VA-API backend.
    static func select(
        policy: HardwarePolicy, factories: [Factory], what: String,
        name: (Factory) -> String, isHardware: (Factory) -> Bool,
        unavailableReason: (Factory) -> VTError.Reason?, make: (Factory) throws(VTError) -> Backend
    ) -> BackendSelection {
        var tried: [VTError.BackendRefusal] = []
        var candidates: [Factory] = []
        switch policy {
        case .disable:
            for factory in factories {
                if isHardware(factory) {
                    tried.append(.init(backend: name(factory), why: .excludedByHardwarePolicy(policy)))
                } else {
                    candidates.append(factory)
                }
            }
        case .require:
            for factory in factories {
                if isHardware(factory) {
                    candidates.append(factory)
                } else {
                    tried.append(.init(backend: name(factory), why: .excludedByHardwarePolicy(policy)))
                }
            }
            if candidates.isEmpty {
                tried.append(.init(backend: "VA-API \(what)", why: .notInThisBuild))
            }
        case .auto:
            candidates = factories.filter(isHardware) + factories.filter { !isHardware($0) }
        }
        var firstStartError: VTError?
        for factory in candidates {
            if let reason = unavailableReason(factory) {
                tried.append(.init(backend: name(factory), why: .unavailable(reason)))
                continue
            }
            do {
                return .chosen(factory, try make(factory), passedOver: tried)
            } catch {
                tried.append(.init(backend: name(factory), why: .failed(error)))
                if firstStartError == nil { firstStartError = error }
            }
        }
        if policy == .require { return .hardwareUnavailable(tried: tried) }
        if let firstStartError { return .startFailed(firstStartError, tried: tried, candidateCount: candidates.count) }
        return .unavailable(tried: tried)
    }
}
