import CGStreamer

/// The plugin's Swift elements by the kind name the shim's registration gives each C type
/// (several element names may share one kind: vtdec and vtdec_hw are "vtdec"). Adding an
/// element: its Swift file (behaviour + ``SwiftElement/interface(for:)``), a case here, and its
/// vfunc trampolines and registration in the shim.
enum ElementTypes {
    static func named(_ kind: UnsafePointer<CChar>?) -> ElementType? {
        guard let kind else { return nil }
        switch String(cString: kind) {
        case "h264parse-to-avcc": return ElementType(H264ParseToAVCC.self)
        case "vtdec": return ElementType(VTDec.self)
        case "vtenc": return ElementType(VTEnc.self)
        case "vtmultipasssink": return ElementType(VTMultiPassSink.self)
        default: return nil
        }
    }
}
