import CGStreamer
import CSwiftVTShim

/// A GstBaseParse subclass in Swift (h264parse-to-avcc). Each requirement is one of the base
/// class's vfuncs; the defaults chain up to the parent class (``BaseParseParent``). `handleFrame`
/// has no default: GstBaseParse has no behaviour of its own for it.
protocol BaseParseSubclass: SwiftElement {
    /// The GObject this object implements.
    var parse: UnsafeMutablePointer<GstBaseParse> { get }
    func start() -> Bool
    func stop() -> Bool
    func setSinkCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool
    /// The data the base class has gathered (`frame`, borrowed): finish a frame of it, or say how
    /// many bytes to skip (`skipSize`), or ask for more by returning without either.
    func handleFrame(_ frame: UnsafeMutablePointer<GstBaseParseFrame>, skipSize: UnsafeMutablePointer<Int32>)
        -> GstFlowReturn
    func sinkEvent(_ event: consuming OwnedEvent) -> Bool
}

extension BaseParseSubclass {
    var parent: BaseParseParent { BaseParseParent(parse: parse) }

    func start() -> Bool { parent.start() }
    func stop() -> Bool { parent.stop() }
    func setSinkCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool { parent.setSinkCaps(caps) }
    func sinkEvent(_ event: consuming OwnedEvent) -> Bool { parent.sinkEvent(event) }
}

/// GstBaseParse's own behaviour for each vfunc: the parent class's implementation where it has
/// one, else what the base class does for a subclass that leaves the vfunc unset.
struct BaseParseParent {
    let parse: UnsafeMutablePointer<GstBaseParse>

    private var vfuncs: UnsafeMutablePointer<GstBaseParseClass>? { ParentClass.of(parse, as: GstBaseParseClass.self) }

    func start() -> Bool { vfuncs?.pointee.start.map { $0(parse) != 0 } ?? true }
    func stop() -> Bool { vfuncs?.pointee.stop.map { $0(parse) != 0 } ?? true }
    func setSinkCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool {
        vfuncs?.pointee.set_sink_caps.map { $0(parse, caps) != 0 } ?? true
    }

    func sinkEvent(_ event: consuming OwnedEvent) -> Bool {
        guard let sinkEvent = vfuncs?.pointee.sink_event else { return false }
        return sinkEvent(parse, event.take()) != 0
    }
}

/// GstBaseParseClass's vfuncs, each wired to the Swift object of the instance it is called on.
enum BaseParseVirtualMethods {
    static func wire(_ klass: UnsafeMutableRawPointer) {
        let vfuncs = klass.assumingMemoryBound(to: GstBaseParseClass.self)
        vfuncs.pointee.start = { parse in (BaseParseVirtualMethods.subclass(parse)?.start() ?? false).gboolean }
        vfuncs.pointee.stop = { parse in (BaseParseVirtualMethods.subclass(parse)?.stop() ?? false).gboolean }
        vfuncs.pointee.set_sink_caps = { parse, caps in
            guard let caps else { return 0 }
            return (BaseParseVirtualMethods.subclass(parse)?.setSinkCaps(caps) ?? false).gboolean
        }
        vfuncs.pointee.handle_frame = { parse, frame, skipSize in
            guard let frame, let skipSize else { return GST_FLOW_ERROR }
            return BaseParseVirtualMethods.subclass(parse)?.handleFrame(frame, skipSize: skipSize) ?? GST_FLOW_ERROR
        }
        vfuncs.pointee.sink_event = { parse, event in
            guard let event else { return 0 }
            let owned = OwnedEvent(adopting: event)
            guard let element = BaseParseVirtualMethods.subclass(parse) else { return 0 }
            return element.sinkEvent(owned).gboolean
        }
    }

    fileprivate static func subclass(_ parse: UnsafeMutablePointer<GstBaseParse>?) -> (any BaseParseSubclass)? {
        ElementClass.element(of: UnsafeMutableRawPointer(parse), slotOffset: instanceSlotOffset)
            as? any BaseParseSubclass
    }

    private static let instanceSlotOffset = ElementClass.instanceSlotOffset(deriving: gst_base_parse_get_type())
}
