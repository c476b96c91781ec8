import CGStreamer
import CSwiftVTShim

/// A GstVideoDecoder subclass in Swift (vtdec). Each requirement is one of the base class's
/// vfuncs; an element implements those it needs, and the defaults chain up to the parent class
/// (``VideoDecoderParent``), which is what GstVideoDecoder does when a subclass leaves the vfunc
/// unset. `handleFrame` has no default: GstVideoDecoder has no behaviour of its own for it.
protocol VideoDecoderSubclass: SwiftElement {
    /// The GObject this object implements.
    var decoder: UnsafeMutablePointer<GstVideoDecoder> { get }
    func close() -> Bool
    func start() -> Bool
    func stop() -> Bool
    /// New input caps; the state is the base class's (borrowed).
    func setFormat(_ input: UnsafeMutablePointer<GstVideoCodecState>) -> Bool
    func handleFrame(_ frame: consuming CodecFrame) -> GstFlowReturn
    /// EOS: everything held goes out.
    func finish() -> GstFlowReturn
    /// Before a caps change or a discontinuity: everything held goes out.
    func drain() -> GstFlowReturn
    /// FLUSH_STOP (a seek): everything held is dropped.
    func flush() -> Bool
    /// Downstream answered the allocation query (borrowed); the base class then configures its pool.
    func decideAllocation(_ query: UnsafeMutablePointer<GstQuery>) -> Bool
    func sinkEvent(_ event: consuming OwnedEvent) -> Bool
    /// The sink pad's caps query (GstVideoDecoder's `getcaps`); a new reference.
    func sinkCaps(filter: UnsafeMutablePointer<GstCaps>?) -> UnsafeMutablePointer<GstCaps>?
}

extension VideoDecoderSubclass {
    var parent: VideoDecoderParent { VideoDecoderParent(decoder: decoder) }

    func close() -> Bool { parent.close() }
    func start() -> Bool { parent.start() }
    func stop() -> Bool { parent.stop() }
    func setFormat(_ input: UnsafeMutablePointer<GstVideoCodecState>) -> Bool { parent.setFormat(input) }
    func finish() -> GstFlowReturn { parent.finish() }
    func drain() -> GstFlowReturn { parent.drain() }
    func flush() -> Bool { parent.flush() }
    func decideAllocation(_ query: UnsafeMutablePointer<GstQuery>) -> Bool { parent.decideAllocation(query) }
    func sinkEvent(_ event: consuming OwnedEvent) -> Bool { parent.sinkEvent(event) }
    func sinkCaps(filter: UnsafeMutablePointer<GstCaps>?) -> UnsafeMutablePointer<GstCaps>? {
        parent.sinkCaps(filter: filter)
    }
}

/// GstVideoDecoder's own behaviour for each vfunc: the parent class's implementation where it
/// has one, else what the base class does for a subclass that leaves the vfunc unset (as
/// gstreamer-rs's `parent_*` functions).
struct VideoDecoderParent {
    let decoder: UnsafeMutablePointer<GstVideoDecoder>

    private var vfuncs: UnsafeMutablePointer<GstVideoDecoderClass>? {
        ParentClass.of(decoder, as: GstVideoDecoderClass.self)
    }

    func close() -> Bool { vfuncs?.pointee.close.map { $0(decoder) != 0 } ?? true }
    func start() -> Bool { vfuncs?.pointee.start.map { $0(decoder) != 0 } ?? true }
    func stop() -> Bool { vfuncs?.pointee.stop.map { $0(decoder) != 0 } ?? true }

    func setFormat(_ input: UnsafeMutablePointer<GstVideoCodecState>) -> Bool {
        vfuncs?.pointee.set_format.map { $0(decoder, input) != 0 } ?? true
    }

    func finish() -> GstFlowReturn { vfuncs?.pointee.finish.map { $0(decoder) } ?? GST_FLOW_OK }
    func drain() -> GstFlowReturn { vfuncs?.pointee.drain.map { $0(decoder) } ?? GST_FLOW_OK }
    func flush() -> Bool { vfuncs?.pointee.flush.map { $0(decoder) != 0 } ?? true }

    func decideAllocation(_ query: UnsafeMutablePointer<GstQuery>) -> Bool {
        vfuncs?.pointee.decide_allocation.map { $0(decoder, query) != 0 } ?? true
    }

    func sinkEvent(_ event: consuming OwnedEvent) -> Bool {
        guard let sinkEvent = vfuncs?.pointee.sink_event else { return false }
        return sinkEvent(decoder, event.take()) != 0
    }

    /// Without a getcaps of its own, GstVideoDecoder proxies downstream's caps.
    func sinkCaps(filter: UnsafeMutablePointer<GstCaps>?) -> UnsafeMutablePointer<GstCaps>? {
        guard let getcaps = vfuncs?.pointee.getcaps else {
            return gst_video_decoder_proxy_getcaps(decoder, nil, filter)
        }
        return getcaps(decoder, filter)
    }
}

/// GstVideoDecoderClass's vfuncs, each wired to the Swift object of the instance it is called on.
enum VideoDecoderVirtualMethods {
    static func wire(_ klass: UnsafeMutableRawPointer) {
        let vfuncs = klass.assumingMemoryBound(to: GstVideoDecoderClass.self)
        vfuncs.pointee.close = { decoder in (VideoDecoderVirtualMethods.subclass(decoder)?.close() ?? false).gboolean }
        vfuncs.pointee.start = { decoder in (VideoDecoderVirtualMethods.subclass(decoder)?.start() ?? false).gboolean }
        vfuncs.pointee.stop = { decoder in (VideoDecoderVirtualMethods.subclass(decoder)?.stop() ?? false).gboolean }
        vfuncs.pointee.set_format = { decoder, input in
            guard let input else { return 0 }
            return (VideoDecoderVirtualMethods.subclass(decoder)?.setFormat(input) ?? false).gboolean
        }
        vfuncs.pointee.handle_frame = { decoder, frame in
            guard let frame else { return GST_FLOW_ERROR }
            let owned = CodecFrame(adopting: frame)
            guard let element = VideoDecoderVirtualMethods.subclass(decoder) else { return GST_FLOW_ERROR }
            return element.handleFrame(owned)
        }
        vfuncs.pointee.finish = { decoder in VideoDecoderVirtualMethods.subclass(decoder)?.finish() ?? GST_FLOW_ERROR }
        vfuncs.pointee.drain = { decoder in VideoDecoderVirtualMethods.subclass(decoder)?.drain() ?? GST_FLOW_ERROR }
        vfuncs.pointee.flush = { decoder in (VideoDecoderVirtualMethods.subclass(decoder)?.flush() ?? false).gboolean }
        vfuncs.pointee.decide_allocation = { decoder, query in
            guard let query else { return 0 }
            return (VideoDecoderVirtualMethods.subclass(decoder)?.decideAllocation(query) ?? false).gboolean
        }
        vfuncs.pointee.sink_event = { decoder, event in
            guard let event else { return 0 }
            let owned = OwnedEvent(adopting: event)
            guard let element = VideoDecoderVirtualMethods.subclass(decoder) else { return 0 }
            return element.sinkEvent(owned).gboolean
        }
        vfuncs.pointee.getcaps = { decoder, filter in
            VideoDecoderVirtualMethods.subclass(decoder)?.sinkCaps(filter: filter)
        }
    }

    fileprivate static func subclass(_ decoder: UnsafeMutablePointer<GstVideoDecoder>?) -> (any VideoDecoderSubclass)? {
        ElementClass.element(of: UnsafeMutableRawPointer(decoder), slotOffset: instanceSlotOffset)
            as? any VideoDecoderSubclass
    }

    private static let instanceSlotOffset = ElementClass.instanceSlotOffset(deriving: gst_video_decoder_get_type())
}
