import CGStreamer
import CSwiftVTShim
import Testing

/// The elements' interfaces as GObject sees them after the Swift declarations are installed by the
/// shim's generic class: every property reads back its default on a fresh element, takes a value
/// and reads it back, and the shared encoder properties are the same spec on vtenc and
/// vtmultipasssink.
@Suite("element interfaces", .serialized)
struct ElementInterfaceTests {
    init() {
        gst_init(nil, nil)
        _ = swiftvt_register_static()
    }

    static let elements = ["h264parse-to-avcc", "vtdec", "vtdec_hw", "vtenc", "vtenc_h264_hw", "vtmultipasssink"]

    /// The element's own properties (not those of its base classes), by name.
    static func ownProperties(of element: UnsafeMutablePointer<GstElement>) -> [String: UnsafeMutablePointer<
        GParamSpec
    >] {
        let objectClass = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GTypeInstance.self).pointee.g_class
            .map { UnsafeMutableRawPointer($0).assumingMemoryBound(to: GObjectClass.self) }
        var count: guint = 0
        guard let objectClass, let specs = g_object_class_list_properties(objectClass, &count) else { return [:] }
        defer { g_free(specs) }
        let type = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GTypeInstance.self).pointee.g_class.pointee
            .g_type
        var result: [String: UnsafeMutablePointer<GParamSpec>] = [:]
        for index in 0..<Int(count) {
            guard let spec = specs[index], spec.pointee.owner_type == type else { continue }
            result[String(cString: spec.pointee.name)] = spec
        }
        return result
    }

    static func make(_ factory: String) throws -> UnsafeMutablePointer<GstElement> {
        let element = try #require(gst_element_factory_make(factory, nil), "\(factory) is not registered")
        _ = gst_object_ref_sink(element)
        return element
    }

    @Test("a fresh element reads back every property's declared default")
    func defaults() throws {
        for factory in Self.elements {
            let element = try Self.make(factory)
            defer { gst_object_unref(element) }
            for (name, spec) in Self.ownProperties(of: element) {
                var value = GValue()
                g_value_init(&value, spec.pointee.value_type)
                defer { g_value_unset(&value) }
                g_object_get_property(
                    UnsafeMutableRawPointer(element).assumingMemoryBound(to: GObject.self), name, &value)
                let isDefault = g_param_value_defaults(spec, &value) != 0
                #expect(isDefault, "\(factory).\(name) does not read back its default")
            }
        }
    }

    @Test("every writable property takes a value other than its default and reads it back")
    func roundTrip() throws {
        let values: [String: String] = [
            "bitrate": "1234", "rate-control": "cbr", "data-rate-limits": "250000,1;400000,2", "quality": "0.25",
            "realtime": "true", "allow-frame-reordering": "false", "max-keyframe-interval": "48",
            "max-keyframe-interval-duration": "2000000000", "entropy-mode": "cavlc", "hardware": "disable",
            "max-threads": "3", "location": "/tmp/out.mp4", "max-passes": "2", "temp-location": "/tmp",
            "keep-temporary-files": "true", "profile": "main", "verify-picture-hash": "true",
            "min-allowed-frame-qp": "20", "max-allowed-frame-qp": "40", "codec": "h265", "frame-stats": "true",
            "b-frames": "2", "reference-buffer-count": "3", "spatial-adaptive-qp": "disable", "lookahead": "10",
            "slices": "4", "qp-i": "18", "qp-p": "22", "qp-b": "24", "max-bitrate": "1500", "vbv-buffer-size": "750",
            "prioritize-speed": "true", "aud": "false", "intra-refresh": "true", "hardware-device": "cuda:1"
        ]
        var checked = 0
        for factory in Self.elements {
            let element = try Self.make(factory)
            defer { gst_object_unref(element) }
            let object = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GObject.self)
            for (name, spec) in Self.ownProperties(of: element)
            where spec.pointee.flags.rawValue & G_PARAM_WRITABLE.rawValue != 0 {
                let text = try #require(values[name], "\(factory).\(name) has no test value")
                gst_util_set_object_arg(object, name, text)
                var value = GValue()
                g_value_init(&value, spec.pointee.value_type)
                defer { g_value_unset(&value) }
                g_object_get_property(object, name, &value)
                var expected = GValue()
                g_value_init(&expected, spec.pointee.value_type)
                defer { g_value_unset(&expected) }
                let parsed = gst_value_deserialize(&expected, text) != 0
                #expect(parsed, "\(factory).\(name): \(text)")
                let same = g_param_values_cmp(spec, &value, &expected) == 0
                #expect(same, "\(factory).\(name): set \(text), read something else")
                let isDefault = g_param_value_defaults(spec, &value) != 0
                #expect(!isDefault, "\(factory).\(name): still the default after setting \(text)")
                checked += 1
            }
        }
        #expect(checked >= 30)
    }

    @Test(
        "the encoder properties vtenc and vtmultipasssink share are one declaration: same type, range, default and text"
    )
    func sharedEncoderProperties() throws {
        let encoder = try Self.make("vtenc")
        let sink = try Self.make("vtmultipasssink")
        defer {
            gst_object_unref(encoder)
            gst_object_unref(sink)
        }
        let encoderSpecs = Self.ownProperties(of: encoder)
        let sinkSpecs = Self.ownProperties(of: sink)
        for name in [
            "hardware", "entropy-mode", "allow-frame-reordering", "max-threads", "active-backend",
            "min-allowed-frame-qp",
            "max-allowed-frame-qp", "b-frames", "reference-buffer-count", "spatial-adaptive-qp", "lookahead", "slices",
            "prioritize-speed"
        ] {
            let a = try #require(encoderSpecs[name])
            let b = try #require(sinkSpecs[name])
            #expect(a.pointee.value_type == b.pointee.value_type, "\(name)")
            #expect(String(cString: g_param_spec_get_blurb(a)) == String(cString: g_param_spec_get_blurb(b)), "\(name)")
            #expect(a.pointee.flags == b.pointee.flags, "\(name)")
            let sameDefault =
                g_param_values_cmp(a, g_param_spec_get_default_value(a), g_param_spec_get_default_value(b)) == 0
            #expect(sameDefault, "\(name)")
        }
    }

    @Test("vtdec_hw and vtenc_h264_hw default to hardware=require, vtdec and vtenc to auto")
    func hardwareDefaults() throws {
        for (factory, expected) in [
            ("vtdec", 0), ("vtdec_hw", 1), ("vtenc", 0), ("vtenc_h264_hw", 1), ("vtmultipasssink", 0)
        ] {
            let element = try Self.make(factory)
            defer { gst_object_unref(element) }
            let spec = try #require(Self.ownProperties(of: element)["hardware"])
            let value = try #require(g_param_spec_get_default_value(spec))
            #expect(g_value_get_enum(value) == Int32(expected), "\(factory)")
        }
    }
}
