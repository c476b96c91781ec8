import CGStreamer
import CSwiftVTShim

/// A GstVideoEncoder subclass in Swift (vtenc). Each requirement is one of the base class's
/// vfuncs; the defaults chain up to the parent class (``VideoEncoderParent``). `handleFrame` has
/// no default: GstVideoEncoder has no behaviour of its own for it.
protocol VideoEncoderSubclass: SwiftElement {
    /// The GObject this object implements.
    var encoder: UnsafeMutablePointer<GstVideoEncoder> { get }
    func close() -> Bool
    func start() -> Bool
    func stop() -> Bool
    /// New input caps; the state is the base class's (borrowed).
    func setFormat(_ input: UnsafeMutablePointer<GstVideoCodecState>) -> Bool
    func handleFrame(_ frame: consuming CodecFrame) -> GstFlowReturn
    /// EOS: everything held goes out.
    func finish() -> GstFlowReturn
    /// FLUSH_STOP (a seek): the base class has dropped its pending frames.
    func flush() -> Bool
    /// Upstream's allocation query (borrowed): what the encoder asks of upstream's buffers.
    func proposeAllocation(_ query: UnsafeMutablePointer<GstQuery>) -> Bool
}

extension VideoEncoderSubclass {
    var parent: VideoEncoderParent { VideoEncoderParent(encoder: encoder) }

    func close() -> Bool { parent.close() }
    func start() -> Bool { parent.start() }
    func stop() -> Bool { parent.stop() }
    func setFormat(_ input: UnsafeMutablePointer<GstVideoCodecState>) -> Bool { parent.setFormat(input) }
    func finish() -> GstFlowReturn { parent.finish() }
    func flush() -> Bool { parent.flush() }
    func proposeAllocation(_ query: UnsafeMutablePointer<GstQuery>) -> Bool { parent.proposeAllocation(query) }
}

/// GstVideoEncoder's own behaviour for each vfunc: the parent class's implementation where it
/// has one, else what the base class does for a subclass that leaves the vfunc unset.
struct VideoEncoderParent {
    let encoder: UnsafeMutablePointer<GstVideoEncoder>

    private var vfuncs: UnsafeMutablePointer<GstVideoEncoderClass>? {
        ParentClass.of(encoder, as: GstVideoEncoderClass.self)
    }

    func close() -> Bool { vfuncs?.pointee.close.map { $0(encoder) != 0 } ?? true }
    func start() -> Bool { vfuncs?.pointee.start.map { $0(encoder) != 0 } ?? true }
    func stop() -> Bool { vfuncs?.pointee.stop.map { $0(encoder) != 0 } ?? true }

    func setFormat(_ input: UnsafeMutablePointer<GstVideoCodecState>) -> Bool {
        vfuncs?.pointee.set_format.map { $0(encoder, input) != 0 } ?? true
    }

    func finish() -> GstFlowReturn { vfuncs?.pointee.finish.map { $0(encoder) } ?? GST_FLOW_OK }
    func flush() -> Bool { vfuncs?.pointee.flush.map { $0(encoder) != 0 } ?? true }

    func proposeAllocation(_ query: UnsafeMutablePointer<GstQuery>) -> Bool {
        vfuncs?.pointee.propose_allocation.map { $0(encoder, query) != 0 } ?? true
    }
}

/// GstVideoEncoderClass's vfuncs, each wired to the Swift object of the instance it is called on.
enum VideoEncoderVirtualMethods {
    static func wire(_ klass: UnsafeMutableRawPointer) {
        let vfuncs = klass.assumingMemoryBound(to: GstVideoEncoderClass.self)
        vfuncs.pointee.close = { encoder in (VideoEncoderVirtualMethods.subclass(encoder)?.close() ?? false).gboolean }
        vfuncs.pointee.start = { encoder in (VideoEncoderVirtualMethods.subclass(encoder)?.start() ?? false).gboolean }
        vfuncs.pointee.stop = { encoder in (VideoEncoderVirtualMethods.subclass(encoder)?.stop() ?? false).gboolean }
        vfuncs.pointee.set_format = { encoder, input in
            guard let input else { return 0 }
            return (VideoEncoderVirtualMethods.subclass(encoder)?.setFormat(input) ?? false).gboolean
        }
        vfuncs.pointee.handle_frame = { encoder, frame in
            guard let frame else { return GST_FLOW_ERROR }
            let owned = CodecFrame(adopting: frame)
            guard let element = VideoEncoderVirtualMethods.subclass(encoder) else { return GST_FLOW_ERROR }
            return element.handleFrame(owned)
        }
        vfuncs.pointee.finish = { encoder in VideoEncoderVirtualMethods.subclass(encoder)?.finish() ?? GST_FLOW_ERROR }
        vfuncs.pointee.flush = { encoder in (VideoEncoderVirtualMethods.subclass(encoder)?.flush() ?? false).gboolean }
        vfuncs.pointee.propose_allocation = { encoder, query in
            guard let query else { return 0 }
            return (VideoEncoderVirtualMethods.subclass(encoder)?.proposeAllocation(query) ?? false).gboolean
        }
    }

    fileprivate static func subclass(_ encoder: UnsafeMutablePointer<GstVideoEncoder>?) -> (any VideoEncoderSubclass)? {
        ElementClass.element(of: UnsafeMutableRawPointer(encoder), slotOffset: instanceSlotOffset)
            as? any VideoEncoderSubclass
    }

    private static let instanceSlotOffset = ElementClass.instanceSlotOffset(deriving: gst_video_encoder_get_type())
}
