import SwiftVT
import Synchronization

/// An element's hardware backend factory, made when first needed and kept until the element
/// closes (READY -> NULL) or asks for another device: it holds the opened device, so the
/// hardware=require check at the state change and every session after it use one device, and a
/// device that appears later is found at the next open.
final class HardwareFactoryHolder<Factory: HardwareBackendFactory>: Sendable {
    private let factory = Mutex<Factory?>(nil)
    private let make: @Sendable (HardwareDeviceChoice) -> Factory

    init(make: @escaping @Sendable (HardwareDeviceChoice) -> Factory) {
        self.make = make
    }

    /// The factory for `device`, made now if there is none or the one kept is for another device.
    func current(for device: HardwareDeviceChoice) -> Factory {
        factory.withLock { factory in
            if let factory, factory.device == device { return factory }
            let made = make(device)
            factory = made
            return made
        }
    }

    func close() {
        factory.withLock { $0 = nil }
    }
}
