// The one generic GObject class of every SwiftVT element. An element's interface (properties,
// pad templates, metadata) is declared in its Swift file (ElementInterface) and installed here by
// class_init through Swift; set_property/get_property/finalize dispatch to the Swift object. The
// element's own C file keeps only what C must do: the base class's vfunc trampolines.
#include "SwiftVTShim.h"
#include "elements.h"

static gchar *hardware_sink_caps = NULL;

void swiftvt_set_hardware_sink_caps(const gchar *caps) {
    if (caps != NULL && hardware_sink_caps == NULL) hardware_sink_caps = g_strdup(caps);
}

const gchar *swiftvt_hardware_sink_caps(void) { return hardware_sink_caps; }

static GQuark class_data_quark(void) {
    static GQuark quark = 0;
    if (quark == 0) quark = g_quark_from_static_string("swiftvt-element-class-data");
    return quark;
}

static const SwiftVTElementClassData *class_data_of(GType type) {
    return g_type_get_qdata(type, class_data_quark());
}

static void **swift_slot(gpointer instance, const SwiftVTElementClassData *data) {
    return (void **) ((guint8 *) instance + data->swift_offset);
}

static void set_property(GObject *object, guint id, const GValue *value, GParamSpec *spec) {
    (void) spec;  // GObject calls this only for the properties the class installed
    const SwiftVTElementClassData *data = class_data_of(G_OBJECT_TYPE(object));
    swiftvt_element_set_property(*swift_slot(object, data), data->kind, data->default_hardware, id, value);
}

static void get_property(GObject *object, guint id, GValue *value, GParamSpec *spec) {
    (void) spec;
    const SwiftVTElementClassData *data = class_data_of(G_OBJECT_TYPE(object));
    swiftvt_element_get_property(*swift_slot(object, data), data->kind, data->default_hardware, id, value);
}

static void finalize(GObject *object) {
    const SwiftVTElementClassData *data = class_data_of(G_OBJECT_TYPE(object));
    void **slot = swift_slot(object, data);
    swiftvt_element_destroy(*slot, data->kind);
    *slot = NULL;
    GObjectClass *parent = g_type_class_peek_parent(G_OBJECT_GET_CLASS(object));
    parent->finalize(object);
}

/// Every element's state changes: the Swift object prepares each transition before the base class
/// makes it (hardware=require, vtmultipasssink's run) and hears of one the base class failed.
static GstStateChangeReturn change_state(GstElement *element, GstStateChange transition) {
    const SwiftVTElementClassData *data = class_data_of(G_OBJECT_TYPE(element));
    void *swift = *swift_slot(element, data);
    if (!swiftvt_element_prepare(swift, data->kind, transition)) return GST_STATE_CHANGE_FAILURE;
    GstElementClass *parent = g_type_class_peek_parent(G_OBJECT_GET_CLASS(element));
    GstStateChangeReturn result = parent->change_state(element, transition);
    if (result == GST_STATE_CHANGE_FAILURE) swiftvt_element_transition_failed(swift, data->kind, transition);
    return result;
}

gboolean swiftvt_element_vfunc_step(gpointer instance, SwiftVTLifecycleStep step) {
    const SwiftVTElementClassData *data = class_data_of(G_OBJECT_TYPE(instance));
    return swiftvt_element_step(*swift_slot(instance, data), data->kind, step);
}

static void class_init(gpointer klass, gpointer class_data) {
    const SwiftVTElementClassData *data = class_data;
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    object_class->set_property = set_property;
    object_class->get_property = get_property;
    object_class->finalize = finalize;
    GST_ELEMENT_CLASS(klass)->change_state = change_state;
    swiftvt_element_install_interface(klass, data->kind, data->default_hardware);
    data->wire_vfuncs(klass);
}

static void instance_init(GTypeInstance *instance, gpointer klass) {
    const SwiftVTElementClassData *data = class_data_of(G_TYPE_FROM_CLASS(klass));
    *swift_slot(instance, data) = swiftvt_element_create(instance, data->kind, data->default_hardware);
}

GType swiftvt_register_element_type(GType parent, const char *type_name, guint16 class_size, guint16 instance_size,
                                    const SwiftVTElementClassData *data, gboolean implements_preset) {
    GType type = g_type_from_name(type_name);
    if (type != 0) return type;
    GTypeInfo info = {
        .class_size = class_size,
        .class_init = class_init,
        .class_data = data,
        .instance_size = instance_size,
        .instance_init = instance_init,
    };
    type = g_type_register_static(parent, type_name, &info, 0);
    g_type_set_qdata(type, class_data_quark(), (gpointer) data);
    if (implements_preset) {
        static const GInterfaceInfo preset_info = {NULL, NULL, NULL};
        g_type_add_interface_static(type, GST_TYPE_PRESET, &preset_info);
    }
    return type;
}
