/// A device surface lent to one picture (the state machine's `H264Picture` holds it as its
/// accelerator data): back in its pool when the picture goes away. Shared by the VA-API (surface
/// IDs) and NVDEC (surface indices) accelerators.
public final class DeviceSurfaceLease<Surface> {
    public let surface: Surface
    /// The device reported the picture in this surface damaged: it holds what the device concealed.
    public var damaged = false
    private let pool: DeviceSurfacePool<Surface>

    init(surface: Surface, pool: DeviceSurfacePool<Surface>) {
        self.surface = surface
        self.pool = pool
    }

    deinit { pool.giveBack(surface) }
}

/// The decoding surfaces of one sequence: the DPB plus the picture being decoded plus headroom
/// for pictures in flight. Not Sendable: the accelerator's thread only.
public final class DeviceSurfacePool<Surface> {
    public let surfaces: [Surface]
    private var free: [Surface]

    public init(surfaces: [Surface]) {
        self.surfaces = surfaces
        free = surfaces.reversed()
    }

    public var count: Int { surfaces.count }

    /// A free surface, or nil when every one is lent.
    public func lease() -> DeviceSurfaceLease<Surface>? {
        guard let surface = free.popLast() else { return nil }
        return DeviceSurfaceLease(surface: surface, pool: self)
    }

    fileprivate func giveBack(_ surface: Surface) { free.append(surface) }
}
