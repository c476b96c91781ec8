import Synchronization

/// An element's VA-API backend factory, made when first needed and kept until the element closes
/// (READY -> NULL): it holds the opened device, so the hardware=require check at the state change
/// and every session after it use one display, and a device that appears later is found at the
/// next open.
final class HardwareFactoryHolder<Factory: Sendable>: Sendable {
    private let factory = Mutex<Factory?>(nil)
    private let make: @Sendable () -> Factory

    init(make: @escaping @Sendable () -> Factory) {
        self.make = make
    }

    var current: Factory {
        factory.withLock { factory in
            if let factory { return factory }
            let made = make()
            factory = made
            return made
        }
    }

    func close() {
        factory.withLock { $0 = nil }
    }
}
