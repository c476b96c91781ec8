import CGStreamer
import CSwiftVTShim
import SwiftVT
import Synchronization

/// An element's whole GStreamer interface in one declaration, next to its behaviour: metadata,
/// pad templates and properties (name, nick, blurb, type, range, default, flags, mutability while
/// playing, and where the value lives in the element's settings). The generic class's
/// `class_init` (``ElementClass``) builds it once per registered type, installs it with
/// ``install(in:)`` and keeps it, so adding a property is one entry in the element's Swift file:
/// the spec, `set_property` and `get_property` (by property id) all come from that entry.
///
/// The model is gst-plugins-rs's `imp.rs` (properties, pad templates and metadata declared where
/// the element is implemented).
struct ElementInterface<Element: AnyObject>: Sendable {
    var longName: String
    var classification: String
    var description: String
    var author = "SwiftVT developers"
    var padTemplates: [PadTemplate]
    /// In installation order; the GObject property id of each is its index + 1.
    var properties: [ElementProperty<Element>] = []
}

struct PadTemplate: Sendable {
    var name: String
    var direction: GstPadDirection
    var presence = GST_PAD_ALWAYS
    /// Caps in gst_caps_from_string form.
    var caps: String

    static func sink(_ caps: String) -> PadTemplate { PadTemplate(name: "sink", direction: GST_PAD_SINK, caps: caps) }
    static func source(_ caps: String) -> PadTemplate { PadTemplate(name: "src", direction: GST_PAD_SRC, caps: caps) }
}

/// A value of a property, as it crosses between GValue and the element's settings.
enum PropertyValue: Equatable, Sendable {
    case boolean(Bool)
    case int(Int32)
    case uint(UInt32)
    case uint64(UInt64)
    case double(Double)
    case string(String?)
    case enumeration(Int32)
}

/// An enumeration property type (a GEnum registered under ``typeName``): each case's number is
/// what GObject stores, its nick what gst-launch-1.0 writes.
protocol PropertyEnumeration: CaseIterable, Sendable, Equatable {
    /// The GType name, e.g. "SwiftVTProfile".
    static var typeName: String { get }
    var number: Int32 { get }
    var nick: String { get }
    var label: String { get }
}

extension PropertyEnumeration {
    init(number: Int32) {
        self = Self.allCases.first { $0.number == number } ?? Self.allCases[Self.allCases.startIndex]
    }

    /// The registered GEnum type (registered on first use; the values live as long as the type
    /// system, i.e. the process).
    static var gType: GType {
        EnumerationTypes.type(named: typeName, values: allCases.map { ($0.number, $0.label, $0.nick) })
    }
}

/// Registers GEnum types made from Swift declarations, once per process.
private enum EnumerationTypes {
    private static let lock = Mutex<Void>(())

    static func type(named name: String, values: [(Int32, String, String)]) -> GType {
        lock.withLock { _ in
            let existing = g_type_from_name(name)
            if existing != 0 { return existing }
            // g_enum_register_static keeps the array and its strings for the type's life (the
            // process): they are allocated once here and never freed.
            let table = UnsafeMutablePointer<GEnumValue>.allocate(capacity: values.count + 1)
            for (index, value) in values.enumerated() {
                table[index] = GEnumValue(value: value.0, value_name: g_strdup(value.1), value_nick: g_strdup(value.2))
            }
            table[values.count] = GEnumValue(value: 0, value_name: nil, value_nick: nil)
            return g_enum_register_static(g_strdup(name), table)
        }
    }
}

/// An element whose property values live in a `Settings` value behind a lock.
protocol PropertySettingsOwner: AnyObject, Sendable {
    associatedtype Settings: Sendable
    func withSettings<Result>(_ body: (inout Settings) -> Result) -> Result
}

/// One GObject property: its spec and where its value lives.
struct ElementProperty<Element: AnyObject>: Sendable {
    enum Kind: Sendable {
        case boolean(default: Bool)
        case int(ClosedRange<Int32>, default: Int32)
        case uint(ClosedRange<UInt32>, default: UInt32)
        case uint64(ClosedRange<UInt64>, default: UInt64)
        case double(ClosedRange<Double>, default: Double)
        case string(default: String?)
        /// An enumeration type and the default's number.
        case enumeration(@Sendable () -> GType, default: Int32)
    }

    /// When the value may change (GStreamer's GST_PARAM_MUTABLE_* flags).
    enum Mutability: Sendable {
        /// In NULL or READY: read when the next session starts.
        case ready
        /// At any time, also while playing.
        case playing
        /// Read-only: a value the element reports.
        case readOnly
    }

    var name: String
    var nick: String
    var blurb: String
    var kind: Kind
    var mutability: Mutability
    var read: @Sendable (Element) -> PropertyValue
    var write: (@Sendable (Element, PropertyValue) -> Void)?
    /// Called after `write` changed the value (outside any lock), e.g. to apply a new bit rate to
    /// a running session.
    var didChange: (@Sendable (Element) -> Void)?

    /// A read-only property computed from the element.
    static func reported(
        _ name: String, nick: String, blurb: String, _ kind: Kind, read: @escaping @Sendable (Element) -> PropertyValue
    ) -> ElementProperty {
        ElementProperty(name: name, nick: nick, blurb: blurb, kind: kind, mutability: .readOnly, read: read, write: nil)
    }

    /// The spec GObject installs.
    func makeSpec() -> UnsafeMutablePointer<GParamSpec>? {
        var flags = G_PARAM_READABLE.rawValue
        switch mutability {
        case .ready: flags |= G_PARAM_WRITABLE.rawValue | Int32(bitPattern: swiftvt_param_mutable_ready)
        case .playing: flags |= G_PARAM_WRITABLE.rawValue | Int32(bitPattern: swiftvt_param_mutable_playing)
        case .readOnly: break
        }
        let paramFlags = GParamFlags(rawValue: flags)
        // Not G_PARAM_STATIC_STRINGS: these strings are Swift's, so GObject copies them.
        switch kind {
        case .boolean(let value):
            return g_param_spec_boolean(name, nick, blurb, value ? 1 : 0, paramFlags)
        case .int(let range, let value):
            return g_param_spec_int(name, nick, blurb, range.lowerBound, range.upperBound, value, paramFlags)
        case .uint(let range, let value):
            return g_param_spec_uint(name, nick, blurb, range.lowerBound, range.upperBound, value, paramFlags)
        case .uint64(let range, let value):
            return g_param_spec_uint64(
                name, nick, blurb, guint64(range.lowerBound), guint64(range.upperBound), guint64(value), paramFlags)
        case .double(let range, let value):
            return g_param_spec_double(name, nick, blurb, range.lowerBound, range.upperBound, value, paramFlags)
        case .string(let value):
            return g_param_spec_string(name, nick, blurb, value, paramFlags)
        case .enumeration(let type, let value):
            return g_param_spec_enum(name, nick, blurb, type(), value, paramFlags)
        }
    }

    /// The GValue's content in this property's type.
    func value(of gvalue: UnsafePointer<GValue>) -> PropertyValue {
        switch kind {
        case .boolean: .boolean(g_value_get_boolean(gvalue) != 0)
        case .int: .int(g_value_get_int(gvalue))
        case .uint: .uint(g_value_get_uint(gvalue))
        case .uint64: .uint64(UInt64(g_value_get_uint64(gvalue)))
        case .double: .double(g_value_get_double(gvalue))
        case .string: .string(g_value_get_string(gvalue).map { String(cString: $0) })
        case .enumeration: .enumeration(g_value_get_enum(gvalue))
        }
    }

    static func store(_ value: PropertyValue, in gvalue: UnsafeMutablePointer<GValue>) {
        switch value {
        case .boolean(let value): g_value_set_boolean(gvalue, value ? 1 : 0)
        case .int(let value): g_value_set_int(gvalue, value)
        case .uint(let value): g_value_set_uint(gvalue, value)
        case .uint64(let value): g_value_set_uint64(gvalue, guint64(value))
        case .double(let value): g_value_set_double(gvalue, value)
        case .string(let value): g_value_set_string(gvalue, value)
        case .enumeration(let value): g_value_set_enum(gvalue, value)
        }
    }
}

// MARK: Properties whose value is a field of the settings

/// A Swift type a property value is stored as in an element's settings.
protocol PropertyStorable: Sendable {
    init?(propertyValue: PropertyValue)
    var propertyValue: PropertyValue { get }
}

extension Bool: PropertyStorable {
    init?(propertyValue: PropertyValue) { if case .boolean(let v) = propertyValue { self = v } else { return nil } }
    var propertyValue: PropertyValue { .boolean(self) }
}

extension Int32: PropertyStorable {
    init?(propertyValue: PropertyValue) { if case .int(let v) = propertyValue { self = v } else { return nil } }
    var propertyValue: PropertyValue { .int(self) }
}

extension UInt32: PropertyStorable {
    init?(propertyValue: PropertyValue) { if case .uint(let v) = propertyValue { self = v } else { return nil } }
    var propertyValue: PropertyValue { .uint(self) }
}

extension UInt64: PropertyStorable {
    init?(propertyValue: PropertyValue) { if case .uint64(let v) = propertyValue { self = v } else { return nil } }
    var propertyValue: PropertyValue { .uint64(self) }
}

extension Double: PropertyStorable {
    init?(propertyValue: PropertyValue) { if case .double(let v) = propertyValue { self = v } else { return nil } }
    var propertyValue: PropertyValue { .double(self) }
}

/// A string that may be unset (NULL).
extension Optional: PropertyStorable where Wrapped == String {
    init?(propertyValue: PropertyValue) { if case .string(let v) = propertyValue { self = v } else { return nil } }
    var propertyValue: PropertyValue { .string(self) }
}

/// A string whose unset value reads as "" (NULL is stored as "").
extension String: PropertyStorable {
    init?(propertyValue: PropertyValue) {
        if case .string(let v) = propertyValue { self = v ?? "" } else { return nil }
    }
    var propertyValue: PropertyValue { .string(self) }
}

extension ElementProperty where Element: PropertySettingsOwner {
    typealias Field<Value> = WritableKeyPath<Element.Settings, Value> & Sendable

    /// A property whose value is the settings field at `path`.
    static func setting<Value: PropertyStorable>(
        _ name: String, nick: String, blurb: String, _ kind: Kind, _ mutability: Mutability, at path: Field<Value>,
        didChange: (@Sendable (Element) -> Void)?
    ) -> ElementProperty {
        ElementProperty(
            name: name, nick: nick, blurb: blurb, kind: kind, mutability: mutability,
            read: { element in element.withSettings { $0[keyPath: path].propertyValue } },
            write: { element, value in
                guard let decoded = Value(propertyValue: value) else { return }
                element.withSettings { $0[keyPath: path] = decoded }
            },
            didChange: didChange)
    }

    static func boolean(
        _ name: String, nick: String, blurb: String, default value: Bool, _ mutability: Mutability = .ready,
        at path: Field<Bool>, didChange: (@Sendable (Element) -> Void)? = nil
    ) -> ElementProperty {
        setting(name, nick: nick, blurb: blurb, .boolean(default: value), mutability, at: path, didChange: didChange)
    }

    static func int(
        _ name: String, nick: String, blurb: String, _ range: ClosedRange<Int32>, default value: Int32,
        _ mutability: Mutability = .ready, at path: Field<Int32>, didChange: (@Sendable (Element) -> Void)? = nil
    ) -> ElementProperty {
        setting(name, nick: nick, blurb: blurb, .int(range, default: value), mutability, at: path, didChange: didChange)
    }

    static func uint(
        _ name: String, nick: String, blurb: String, _ range: ClosedRange<UInt32>, default value: UInt32,
        _ mutability: Mutability = .ready, at path: Field<UInt32>, didChange: (@Sendable (Element) -> Void)? = nil
    ) -> ElementProperty {
        setting(
            name, nick: nick, blurb: blurb, .uint(range, default: value), mutability, at: path, didChange: didChange)
    }

    static func uint64(
        _ name: String, nick: String, blurb: String, _ range: ClosedRange<UInt64>, default value: UInt64,
        _ mutability: Mutability = .ready, at path: Field<UInt64>, didChange: (@Sendable (Element) -> Void)? = nil
    ) -> ElementProperty {
        setting(
            name, nick: nick, blurb: blurb, .uint64(range, default: value), mutability, at: path, didChange: didChange)
    }

    static func double(
        _ name: String, nick: String, blurb: String, _ range: ClosedRange<Double>, default value: Double,
        _ mutability: Mutability = .ready, at path: Field<Double>, didChange: (@Sendable (Element) -> Void)? = nil
    ) -> ElementProperty {
        setting(
            name, nick: nick, blurb: blurb, .double(range, default: value), mutability, at: path, didChange: didChange)
    }

    static func string<Value: PropertyStorable>(
        _ name: String, nick: String, blurb: String, default value: String?, _ mutability: Mutability = .ready,
        at path: Field<Value>, didChange: (@Sendable (Element) -> Void)? = nil
    ) -> ElementProperty {
        setting(name, nick: nick, blurb: blurb, .string(default: value), mutability, at: path, didChange: didChange)
    }

    static func enumeration<Value: PropertyEnumeration>(
        _ name: String, nick: String, blurb: String, default value: Value, _ mutability: Mutability = .ready,
        at path: Field<Value>, didChange: (@Sendable (Element) -> Void)? = nil
    ) -> ElementProperty {
        ElementProperty(
            name: name, nick: nick, blurb: blurb, kind: .enumeration({ Value.gType }, default: value.number),
            mutability: mutability,
            read: { element in element.withSettings { .enumeration($0[keyPath: path].number) } },
            write: { element, value in
                guard case .enumeration(let number) = value else { return }
                element.withSettings { $0[keyPath: path] = Value(number: number) }
            },
            didChange: didChange)
    }
}

extension ElementProperty where Element: PropertySettingsOwner {
    /// A ``HardwarePolicy`` property, registered as `Wording`'s GEnum: a decoder's and an
    /// encoder's `hardware` name different software backends.
    static func hardwarePolicy<Wording: HardwarePolicyWording>(
        _ name: String, nick: String, blurb: String, wording: Wording.Type, default value: HardwarePolicy,
        at path: Field<HardwarePolicy>
    ) -> ElementProperty {
        typealias Setting = HardwarePolicySetting<Wording>
        return ElementProperty(
            name: name, nick: nick, blurb: blurb, kind: .enumeration({ Setting.gType }, default: value.number),
            mutability: .ready,
            read: { element in element.withSettings { .enumeration($0[keyPath: path].number) } },
            write: { element, value in
                guard case .enumeration(let number) = value else { return }
                element.withSettings { $0[keyPath: path] = HardwarePolicy(number: number) }
            },
            didChange: nil)
    }
}

// MARK: Installing and dispatching

extension ElementInterface {
    /// Installs the properties, pad templates and metadata in the class being initialised.
    func install(in klass: UnsafeMutableRawPointer) {
        let objectClass = klass.assumingMemoryBound(to: GObjectClass.self)
        let elementClass = klass.assumingMemoryBound(to: GstElementClass.self)
        for (index, property) in properties.enumerated() {
            g_object_class_install_property(objectClass, guint(index + 1), property.makeSpec())
            if case .enumeration(let type, _) = property.kind {
                gst_type_mark_as_plugin_api(type(), GstPluginAPIFlags(rawValue: 0))
            }
        }
        for template in padTemplates {
            guard let caps = gst_caps_from_string(template.caps) else { continue }
            gst_element_class_add_pad_template(
                elementClass, gst_pad_template_new(template.name, template.direction, template.presence, caps))
            gst_caps_unref(caps)
        }
        gst_element_class_set_metadata(elementClass, longName, classification, description, author)
    }

    func setProperty(_ id: guint, of element: Element, to gvalue: UnsafePointer<GValue>) {
        guard id >= 1, let property = properties[safe: Int(id) - 1], let write = property.write else { return }
        let value = property.value(of: gvalue)
        let before = property.didChange == nil ? nil : property.read(element)
        write(element, value)
        if let didChange = property.didChange, before != property.read(element) { didChange(element) }
    }

    func getProperty(_ id: guint, of element: Element, into gvalue: UnsafeMutablePointer<GValue>) {
        guard id >= 1, let property = properties[safe: Int(id) - 1] else { return }
        ElementProperty<Element>.store(property.read(element), in: gvalue)
    }
}
