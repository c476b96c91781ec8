import CGStreamer
import CSwiftVTShim
import MediaCore
import SwiftVT

/// The plugin's elements, one row per element name. Adding an element is its folder
/// (`Sources/SwiftVTElements/<Name>/`: a type implementing its base class's protocol, with its
/// interface), one row here, and its interface snapshot (`docs/gst-inspect/<name>.txt`).
///
/// Several names may share one implementation: vtdec and vtdec_hw are one Swift type registered
/// as two GTypes that differ in the `hardware` default (as gst-plugins-bad registers per-device
/// elements); vtenc and vtenc_h264 are one GType under two names, and vtenc_h265 is the same
/// Swift type registered as a third GType that writes HEVC (the row's codec).
enum PluginElements {
    static let table: [ElementRegistration] =
        [
            ElementRegistration(
                "h264parse-to-avcc", type: "SwiftVTH264ParseToAVCC", .baseParse(H264ParseToAVCC.self),
                rank: .fixed(GST_RANK_NONE)),
            ElementRegistration(
                "h265parse-to-hvcc", type: "SwiftVTH265ParseToHVCC", .baseParse(H265ParseToHVCC.self),
                rank: .fixed(GST_RANK_NONE)),
            // Secondary rank: available to decodebin/playbin, without taking over systems that have a
            // primary decoder (avdec_h264 is primary) by surprise.
            ElementRegistration(
                "vtdec", type: "SwiftVTDec", .videoDecoder(VTDec.self), rank: .fixed(GST_RANK_SECONDARY)),
            ElementRegistration(
                "vtdec_hw", type: "SwiftVTDecHardware", .videoDecoder(VTDec.self),
                rank: .aboveSoftwareWhereTheDeviceDecodes,
                hardware: .require),
            // Secondary rank: encodebin and friends pick x264enc (primary) unless asked otherwise.
            ElementRegistration(
                "vtenc", type: "SwiftVTEnc", .videoEncoder(VTEnc.self), rank: .fixed(GST_RANK_SECONDARY)),
            ElementRegistration(
                "vtenc_h264", type: "SwiftVTEnc", .videoEncoder(VTEnc.self), rank: .fixed(GST_RANK_SECONDARY)),
            ElementRegistration(
                "vtenc_h264_hw", type: "SwiftVTEncHardware", .videoEncoder(VTEnc.self),
                rank: .aboveSoftwareWhereTheDeviceEncodes,
                hardware: .require),
            // Secondary rank, below x265enc (primary), as vtenc below x264enc. applemedia's name.
            ElementRegistration(
                "vtenc_h265", type: "SwiftVTEncH265", .videoEncoder(VTEnc.self), rank: .fixed(GST_RANK_SECONDARY),
                codec: .hevc),
            ElementRegistration(
                "vtmultipasssink", type: "SwiftVTMultiPassSink", .baseSink(VTMultiPassSink.self),
                rank: .fixed(GST_RANK_NONE))
        ] + testBuildOnly

    #if SWIFTVT_TEST_BUILD_ELEMENTS
        /// Elements registered by test builds only (debug builds, `swift test`), never by the plugin
        /// users install; their snapshots are in docs/gst-inspect/test-build/.
        private static let testBuildOnly: [ElementRegistration] = [
            ElementRegistration(
                "swiftvt-frame-counter", type: "SwiftVTFrameCounter", .baseSink(FrameCounter.self),
                rank: .fixed(GST_RANK_NONE))
        ]
    #else
        private static let testBuildOnly: [ElementRegistration] = []
    #endif

    /// Registers every row with `plugin`; false at the first that fails.
    static func register(in plugin: OpaquePointer, device: HardwareOfferAtLoad) -> Bool {
        HardwareSinkCaps.remember(device.decoderSinkCaps)
        for row in table {
            // Made now, at plugin load, so GST_DEBUG and --gst-debug-help know it before any
            // element exists.
            _ = row.baseClass.elementType.debugCategory
            let type = ElementClass.registerType(
                named: row.typeName, base: row.baseClass, defaultHardware: row.defaultHardware,
                codecType: row.codecType)
            guard type != 0, gst_element_register(plugin, row.factoryName, row.rank.value(for: device), type) != 0
            else {
                return false
            }
        }
        return true
    }
}

/// One element name of the plugin.
struct ElementRegistration: Sendable {
    /// What users write in a pipeline: `vtdec`.
    var factoryName: String
    /// The GType's name (`SwiftVTDec`); a name registered by an earlier row is reused.
    var typeName: String
    /// The GStreamer base class and the Swift type implementing it.
    var baseClass: ElementBaseClass
    var rank: RankRule
    /// The default of the `hardware` property of elements that have one.
    var defaultHardware: HardwarePolicy
    /// What an encoder row writes (``ElementClassContext/codecType``); H.264 for the others.
    var codecType: FourCharCode

    init(
        _ factoryName: String, type typeName: String, _ baseClass: ElementBaseClass, rank: RankRule,
        hardware: HardwarePolicy = .auto, codec: FourCharCode = .h264
    ) {
        self.factoryName = factoryName
        self.typeName = typeName
        self.baseClass = baseClass
        self.rank = rank
        defaultHardware = hardware
        codecType = codec
    }
}

/// How an element's rank is chosen at plugin load.
enum RankRule: Sendable {
    case fixed(GstRank)
    /// vtdec_hw outranks vtdec (secondary + 1) only where a VA device decodes H.264; elsewhere it
    /// stays usable by name (and fails at its state change with a clear error) but is never
    /// autoplugged, since it could not decode anything.
    case aboveSoftwareWhereTheDeviceDecodes
    /// vtenc_h264_hw is offered to autopluggers only where a VA device encodes H.264 (as vtdec_hw).
    case aboveSoftwareWhereTheDeviceEncodes

    func value(for device: HardwareOfferAtLoad) -> guint {
        let aboveSoftware = GST_RANK_SECONDARY.rawValue + 1
        switch self {
        case .fixed(let rank): return rank.rawValue
        case .aboveSoftwareWhereTheDeviceDecodes:
            return device.decoderSinkCaps != nil ? aboveSoftware : GST_RANK_NONE.rawValue
        case .aboveSoftwareWhereTheDeviceEncodes: return device.encodes ? aboveSoftware : GST_RANK_NONE.rawValue
        }
    }
}

// MARK: Plugin load

/// The plugin's own log ("swiftvt": loading, the VA-API probe).
enum PluginLog {
    static let category = DebugCategory(named: "swiftvt", description: "SwiftVT plugin (loading, VA-API probe)")
}

/// plugin_init (Sources/CSwiftVTShim/plugin.c): registers the elements, nothing else.
@_cdecl("swiftvt_plugin_init")
func pluginInit(_ plugin: OpaquePointer?) -> gboolean {
    guard let plugin else { return 0 }
    let log = PluginLog.category
    // What the elements offer depends on the VA device: the registry cache must be refreshed
    // (and this function run again) when render nodes come or go or the libva driver selection
    // or X11 display changes, as GStreamer's va plugin declares for the same reason.
    gst_plugin_add_dependency_simple(
        plugin, "LIBVA_DRIVER_NAME,LIBVA_DRIVERS_PATH,DISPLAY", "/dev/dri", "renderD",
        GST_PLUGIN_DEPENDENCY_FLAG_FILE_NAME_IS_PREFIX)
    // The same for CUDA devices: the NVIDIA device nodes, the devices CUDA may see, and where
    // libcuda.so.1 is found (a driver installed into a library path).
    gst_plugin_add_dependency_simple(
        plugin, "CUDA_VISIBLE_DEVICES,LD_LIBRARY_PATH", "/dev", "nvidia", GST_PLUGIN_DEPENDENCY_FLAG_FILE_NAME_IS_PREFIX
    )
    // The device is probed when the registry describes this plugin anew (a registry scan, normally
    // in gst-plugin-scanner, or a static registration). When the registry already lists the
    // features, this load only creates elements: gst_element_register then attaches the type to
    // the existing feature and keeps its rank and pad templates from the scan, so probing again
    // would cost libva's and the driver's start-up in every process for nothing, and would touch
    // VA-API in a process whose elements all have hardware=disable.
    let device: HardwareOfferAtLoad
    if registryDescribes(plugin) {
        log.info(
            UnsafeMutableRawPointer(plugin),
            "the registry already describes the elements: no hardware probe at this load"
        )
        device = HardwareOfferAtLoad(decoderSinkCaps: nil, encodes: false)
    } else {
        device = HardwareOfferAtLoad.probe()
    }
    return PluginElements.register(in: plugin, device: device).gboolean
}

/// Whether the registry holds this plugin's features from an earlier scan (vtdec_hw stands for
/// all: they are registered together).
private func registryDescribes(_ plugin: OpaquePointer) -> Bool {
    guard let feature = gst_registry_lookup_feature(gst_registry_get(), "vtdec_hw") else { return false }
    defer { gst_object_unref(UnsafeMutableRawPointer(feature)) }
    guard let owner = gst_plugin_feature_get_plugin(feature) else { return false }
    defer { gst_object_unref(UnsafeMutableRawPointer(owner)) }
    return owner == plugin
}
