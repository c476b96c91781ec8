import CGStreamer
import CSwiftVTShim

/// A GstBaseSink subclass in Swift (vtmultipasssink). Each requirement is one of the base class's
/// vfuncs; the defaults chain up to the parent class (``BaseSinkParent``).
protocol BaseSinkSubclass: SwiftElement {
    /// The GObject this object implements.
    var sink: UnsafeMutablePointer<GstBaseSink> { get }
    func start() -> Bool
    func stop() -> Bool
    func setCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool
    /// A buffer to render (borrowed: the base class keeps its reference).
    func render(_ buffer: UnsafeMutablePointer<GstBuffer>) -> GstFlowReturn
    func event(_ event: consuming OwnedEvent) -> Bool
}

extension BaseSinkSubclass {
    var parent: BaseSinkParent { BaseSinkParent(sink: sink) }

    func start() -> Bool { parent.start() }
    func stop() -> Bool { parent.stop() }
    func setCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool { parent.setCaps(caps) }
    func render(_ buffer: UnsafeMutablePointer<GstBuffer>) -> GstFlowReturn { parent.render(buffer) }
    func event(_ event: consuming OwnedEvent) -> Bool { parent.event(event) }
}

/// GstBaseSink's own behaviour for each vfunc: the parent class's implementation where it has
/// one, else what the base class does for a subclass that leaves the vfunc unset.
struct BaseSinkParent {
    let sink: UnsafeMutablePointer<GstBaseSink>

    private var vfuncs: UnsafeMutablePointer<GstBaseSinkClass>? { ParentClass.of(sink, as: GstBaseSinkClass.self) }

    func start() -> Bool { vfuncs?.pointee.start.map { $0(sink) != 0 } ?? true }
    func stop() -> Bool { vfuncs?.pointee.stop.map { $0(sink) != 0 } ?? true }
    func setCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool {
        vfuncs?.pointee.set_caps.map { $0(sink, caps) != 0 } ?? true
    }
    func render(_ buffer: UnsafeMutablePointer<GstBuffer>) -> GstFlowReturn {
        vfuncs?.pointee.render.map { $0(sink, buffer) } ?? GST_FLOW_OK
    }

    func event(_ event: consuming OwnedEvent) -> Bool {
        guard let handle = vfuncs?.pointee.event else { return false }
        return handle(sink, event.take()) != 0
    }
}

/// GstBaseSinkClass's vfuncs, each wired to the Swift object of the instance it is called on.
enum BaseSinkVirtualMethods {
    static func wire(_ klass: UnsafeMutableRawPointer) {
        let vfuncs = klass.assumingMemoryBound(to: GstBaseSinkClass.self)
        vfuncs.pointee.start = { sink in (BaseSinkVirtualMethods.subclass(sink)?.start() ?? false).gboolean }
        vfuncs.pointee.stop = { sink in (BaseSinkVirtualMethods.subclass(sink)?.stop() ?? false).gboolean }
        vfuncs.pointee.set_caps = { sink, caps in
            guard let caps else { return 0 }
            return (BaseSinkVirtualMethods.subclass(sink)?.setCaps(caps) ?? false).gboolean
        }
        vfuncs.pointee.render = { sink, buffer in
            guard let buffer else { return GST_FLOW_ERROR }
            return BaseSinkVirtualMethods.subclass(sink)?.render(buffer) ?? GST_FLOW_ERROR
        }
        vfuncs.pointee.event = { sink, event in
            guard let event else { return 0 }
            let owned = OwnedEvent(adopting: event)
            guard let element = BaseSinkVirtualMethods.subclass(sink) else { return 0 }
            return element.event(owned).gboolean
        }
    }

    fileprivate static func subclass(_ sink: UnsafeMutablePointer<GstBaseSink>?) -> (any BaseSinkSubclass)? {
        ElementClass.element(of: UnsafeMutableRawPointer(sink), slotOffset: instanceSlotOffset) as? any BaseSinkSubclass
    }

    private static let instanceSlotOffset = ElementClass.instanceSlotOffset(deriving: gst_base_sink_get_type())
}
