import CGStreamer
import CSwiftVTShim
import MediaCore
import SwiftVT
import Synchronization

/// An element implemented in Swift: its interface, its debug category, how an instance is made,
/// and what it does around the state changes the generic class forwards (every element). The
/// vfuncs of its GStreamer base class come from the protocol of that base class
/// (``VideoDecoderSubclass``, ``VideoEncoderSubclass``, ``BaseParseSubclass``, ``BaseSinkSubclass``),
/// whose defaults chain up to the parent class.
///
/// The model is gst-plugins-rs's `ObjectSubclass` + `ElementImpl`: the element's Rust (here Swift)
/// type is the implementation, GObject's class and instance structs are made for it.
protocol SwiftElement: AnyObject, Sendable {
    /// Metadata, pad templates and properties, built once per registered type (at class_init).
    static func interface(for context: ElementClassContext) -> ElementInterface<Self>
    /// `GST_DEBUG=<name>:<level>`: made when the element is registered (at plugin load).
    static var debugCategory: DebugCategory { get }
    /// Whether the type implements GstPreset (vtenc: named sets of property values).
    static var implementsPreset: Bool { get }
    /// Made in the GObject instance's instance_init; `instance` is that GObject, which owns this
    /// object (it is released in finalize), so it stays valid for the object's whole life.
    init(instance: UnsafeMutableRawPointer, context: ElementClassContext)
    /// Before the base class makes `transition`: false fails it (the element posted its ERROR).
    /// hardware=require is checked here, before GstVideoDecoder/GstVideoEncoder open or start
    /// (a failed open/start vfunc would add the base class's generic "Failed to open"), so
    /// decodebin, which brings a candidate to READY and PAUSED before using it, moves on.
    func prepare(_ transition: GstStateChange) -> Bool
    /// The base class failed `transition` (it will not call stop for it).
    func transitionFailed(_ transition: GstStateChange)
}

extension SwiftElement {
    static var implementsPreset: Bool { false }
    func prepare(_ transition: GstStateChange) -> Bool { true }
    func transitionFailed(_ transition: GstStateChange) {}
}

/// What the class being made is: the same implementation serves several element names
/// (vtdec / vtdec_hw), which differ in the `hardware` default and what follows from it.
struct ElementClassContext: Sendable {
    /// The default of the `hardware` property (vtdec_hw and vtenc_h264_hw: require).
    var defaultHardware: HardwarePolicy
    /// vtdec_hw's sink caps for the VA device found at plugin load; nil without one.
    var hardwareSinkCaps: String?
    /// What an encoder writes (vtenc and vtenc_h264: H.264; vtenc_h265: HEVC): one
    /// implementation serves both codecs, as vtdec decodes both.
    var codecType: FourCharCode = .h264
}

// MARK: The GObject class of a Swift element

/// One registered GType as GObject keeps it: made in class_init from its table row, with the
/// element's interface built and installed once, and kept (as the type's qdata) for as long as
/// the type exists, the process: every instance is made, given its properties and told of its
/// state changes through it.
final class ElementClass: Sendable {
    let context: ElementClassContext
    /// Where an instance keeps its Swift object: right after the base class's instance struct.
    let instanceSlotOffset: Int
    private let makeElement: @Sendable (UnsafeMutableRawPointer) -> AnyObject
    private let setProperty: @Sendable (AnyObject, guint, UnsafePointer<GValue>) -> Void
    private let getProperty: @Sendable (AnyObject, guint, UnsafeMutablePointer<GValue>) -> Void
    private let prepare: @Sendable (AnyObject, GstStateChange) -> Bool
    private let transitionFailed: @Sendable (AnyObject, GstStateChange) -> Void

    /// Builds `Element`'s interface for `context` and installs it in `klass` (being initialised).
    private init<Element: SwiftElement>(
        _ element: Element.Type, installingIn klass: UnsafeMutableRawPointer, context: ElementClassContext,
        instanceSlotOffset: Int
    ) {
        let interface = Element.interface(for: context)
        interface.install(in: klass)
        self.context = context
        self.instanceSlotOffset = instanceSlotOffset
        makeElement = { instance in Element(instance: instance, context: context) }
        // Property ids are the interface's indices + 1 (ElementInterface.install).
        setProperty = { object, id, value in
            guard let element = object as? Element else { return }
            interface.setProperty(id, of: element, to: value)
        }
        getProperty = { object, id, value in
            guard let element = object as? Element else { return }
            interface.getProperty(id, of: element, into: value)
        }
        prepare = { object, transition in (object as? Element)?.prepare(transition) ?? false }
        transitionFailed = { object, transition in (object as? Element)?.transitionFailed(transition) }
    }

    // MARK: Registration

    /// Registers (once per process) the GType `typeName` deriving from `base` for `element`:
    /// GObject's class struct is the base class's, its instance struct the base class's plus a
    /// pointer to the Swift object (no C struct per element). The type's class data is
    /// `registration`, kept for the process: types are never unregistered.
    static func registerType(
        named typeName: String, base: ElementBaseClass, defaultHardware: HardwarePolicy, codecType: FourCharCode = .h264
    ) -> GType {
        let existing = g_type_from_name(typeName)
        if existing != 0 { return existing }
        let parent = base.gType
        var layout = GTypeQuery()
        g_type_query(parent, &layout)
        guard let slotOffset = instanceSlotOffset(deriving: parent),
            let instanceSize = guint16(exactly: slotOffset + MemoryLayout<UnsafeMutableRawPointer>.stride),
            let classSize = guint16(exactly: layout.class_size)
        else { return 0 }
        let registration = Unmanaged.passRetained(
            TypeRegistration(
                base: base, defaultHardware: defaultHardware, codecType: codecType, instanceSlotOffset: slotOffset)
        ).toOpaque()
        var info = GTypeInfo()
        info.class_size = classSize
        info.class_init = { klass, registration in
            guard let klass, let registration else { return }
            ElementClass.initialize(
                klass, registration: Unmanaged<TypeRegistration>.fromOpaque(registration).takeUnretainedValue())
        }
        info.class_data = UnsafeRawPointer(registration)
        info.instance_size = instanceSize
        info.instance_init = { instance, klass in
            guard let instance, let klass,
                let elementClass = ElementClass.of(type: klass.assumingMemoryBound(to: GTypeClass.self).pointee.g_type)
            else { return }
            let object = UnsafeMutableRawPointer(instance)
            let element = elementClass.makeElement(object)
            (object + elementClass.instanceSlotOffset).storeBytes(
                of: Unmanaged.passRetained(element).toOpaque(), as: UnsafeMutableRawPointer?.self)
        }
        let type = g_type_register_static(parent, typeName, &info, GTypeFlags(rawValue: 0))
        if base.elementType.implementsPreset {
            // Kept for the process, as the type it describes (GstPreset's defaults need no vfuncs).
            let preset = UnsafeMutablePointer<GInterfaceInfo>.allocate(capacity: 1)
            preset.initialize(to: GInterfaceInfo())
            g_type_add_interface_static(type, gst_preset_get_type(), preset)
        }
        return type
    }

    /// class_init: the interface built and installed, GObject's and GstElement's vfuncs and the
    /// base class's wired to the Swift object, the class kept as the type's qdata.
    private static func initialize(_ klass: UnsafeMutableRawPointer, registration: TypeRegistration) {
        // set/get_property first: GObject installs a property only in a class that has them.
        wireObjectAndElement(klass)
        let context = ElementClassContext(
            defaultHardware: registration.defaultHardware, hardwareSinkCaps: HardwareSinkCaps.current,
            codecType: registration.codecType)
        let elementClass = ElementClass(
            registration.base.elementType, installingIn: klass, context: context,
            instanceSlotOffset: registration.instanceSlotOffset)
        let type = klass.assumingMemoryBound(to: GTypeClass.self).pointee.g_type
        g_type_set_qdata(type, qdataKey, Unmanaged.passRetained(elementClass).toOpaque())
        registration.base.wireVirtualMethods(klass)
    }

    /// What a row of the table gives class_init (its class data).
    private final class TypeRegistration: Sendable {
        let base: ElementBaseClass
        let defaultHardware: HardwarePolicy
        let codecType: FourCharCode
        let instanceSlotOffset: Int

        init(base: ElementBaseClass, defaultHardware: HardwarePolicy, codecType: FourCharCode, instanceSlotOffset: Int)
        {
            self.base = base
            self.defaultHardware = defaultHardware
            self.codecType = codecType
            self.instanceSlotOffset = instanceSlotOffset
        }
    }

    private static let qdataKey = g_quark_from_string("swiftvt-element-class")

    // MARK: Instances

    /// The class of a registered type (nil for any other type).
    static func of(type: GType) -> ElementClass? {
        g_type_get_qdata(type, qdataKey).map { Unmanaged<ElementClass>.fromOpaque($0).takeUnretainedValue() }
    }

    /// The class of `instance`'s type.
    static func of(instance: UnsafeMutableRawPointer) -> ElementClass? {
        guard let klass = instance.assumingMemoryBound(to: GTypeInstance.self).pointee.g_class else { return nil }
        return of(type: klass.pointee.g_type)
    }

    /// Where an instance of a type registered here deriving from `parent` keeps its Swift
    /// object: right after the parent's instance struct, pointer-aligned (nil for a type GObject
    /// does not know).
    static func instanceSlotOffset(deriving parent: GType) -> Int? {
        var layout = GTypeQuery()
        g_type_query(parent, &layout)
        guard layout.type != 0 else { return nil }
        let pointerSize = MemoryLayout<UnsafeMutableRawPointer>.stride
        return (Int(layout.instance_size) + pointerSize - 1) / pointerSize * pointerSize
    }

    /// The Swift object of an instance of a type registered here deriving from a base class
    /// whose slot offset is `slotOffset` (``instanceSlotOffset(deriving:)``), borrowed: the
    /// vfuncs of a base class, called per buffer, know the offset without looking up the type's
    /// class (GObject's type lock and a table lookup per call).
    static func element(of instance: UnsafeMutableRawPointer?, slotOffset: Int?) -> AnyObject? {
        guard let instance, let slotOffset,
            let object = (instance + slotOffset).load(as: UnsafeMutableRawPointer?.self)
        else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(object).takeUnretainedValue()
    }

    /// The Swift object of a GObject instance of a registered type, borrowed (nil before
    /// instance_init or after finalize).
    static func element(of instance: UnsafeMutableRawPointer?) -> AnyObject? {
        guard let instance else { return nil }
        return element(of: instance, slotOffset: of(instance: instance)?.instanceSlotOffset)
    }

    /// The GObject and GstElement vfuncs of every element: properties by id, finalize, and the
    /// state changes the Swift object prepares.
    private static func wireObjectAndElement(_ klass: UnsafeMutableRawPointer) {
        let objectClass = klass.assumingMemoryBound(to: GObjectClass.self)
        // GObject calls set/get_property only with the ids the class installed.
        objectClass.pointee.set_property = { object, id, value, _ in
            guard let object, let value, let elementClass = ElementClass.of(instance: UnsafeMutableRawPointer(object)),
                let element = ElementClass.element(of: UnsafeMutableRawPointer(object))
            else { return }
            elementClass.setProperty(element, id, value)
        }
        objectClass.pointee.get_property = { object, id, value, _ in
            guard let object, let value, let elementClass = ElementClass.of(instance: UnsafeMutableRawPointer(object)),
                let element = ElementClass.element(of: UnsafeMutableRawPointer(object))
            else { return }
            elementClass.getProperty(element, id, value)
        }
        objectClass.pointee.finalize = { object in
            guard let object else { return }
            if let elementClass = ElementClass.of(instance: UnsafeMutableRawPointer(object)) {
                let slot = UnsafeMutableRawPointer(object) + elementClass.instanceSlotOffset
                if let element = slot.load(as: UnsafeMutableRawPointer?.self) {
                    slot.storeBytes(of: nil, as: UnsafeMutableRawPointer?.self)
                    Unmanaged<AnyObject>.fromOpaque(element).release()
                }
            }
            ParentClass.of(object, as: GObjectClass.self)?.pointee.finalize?(object)
        }
        let elementClass = klass.assumingMemoryBound(to: GstElementClass.self)
        elementClass.pointee.change_state = { element, transition in
            guard let element, let klass = ElementClass.of(instance: UnsafeMutableRawPointer(element)),
                let object = ElementClass.element(of: UnsafeMutableRawPointer(element))
            else { return GST_STATE_CHANGE_FAILURE }
            guard klass.prepare(object, transition) else { return GST_STATE_CHANGE_FAILURE }
            let result =
                ParentClass.of(element, as: GstElementClass.self)?.pointee.change_state?(element, transition)
                ?? GST_STATE_CHANGE_SUCCESS
            if result == GST_STATE_CHANGE_FAILURE { klass.transitionFailed(object, transition) }
            return result
        }
    }
}

/// The class a registered type derives from (GstVideoDecoderClass for vtdec's): what its vfuncs
/// chain up to.
enum ParentClass {
    static func of<Instance, Class>(_ instance: UnsafeMutablePointer<Instance>, as type: Class.Type)
        -> UnsafeMutablePointer<Class>?
    {
        guard let klass = UnsafeMutableRawPointer(instance).assumingMemoryBound(to: GTypeInstance.self).pointee.g_class,
            let parent = g_type_class_peek_parent(klass)
        else { return nil }
        return parent.assumingMemoryBound(to: Class.self)
    }
}

/// vtdec_hw's sink caps for the VA device found at plugin load, kept for the process's life:
/// class_init may run whenever the class is first used. The first caps found stay.
enum HardwareSinkCaps {
    private static let caps = Mutex<String?>(nil)

    static var current: String? { caps.withLock { $0 } }

    static func remember(_ value: String?) {
        guard let value else { return }
        caps.withLock { caps in if caps == nil { caps = value } }
    }
}

extension Bool {
    /// As GLib's gboolean (TRUE is 1).
    var gboolean: gboolean { self ? 1 : 0 }
}
