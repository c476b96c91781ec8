// GObject properties and action signals through fixed signatures.
#include "SwiftVTShim.h"

void swiftvt_object_set_string(GObject *object, const char *property, const char *value) {
    g_object_set(object, property, value, NULL);
}

void swiftvt_object_set_caps(GObject *object, const char *property, GstCaps *caps) {
    g_object_set(object, property, caps, NULL);
}

GstFlowReturn swiftvt_object_emit_flow(GObject *object, const char *signal) {
    GstFlowReturn flow = GST_FLOW_ERROR;
    g_signal_emit_by_name(object, signal, &flow);
    return flow;
}

GstFlowReturn swiftvt_object_emit_flow_with(GObject *object, const char *signal, gpointer argument) {
    GstFlowReturn flow = GST_FLOW_ERROR;
    g_signal_emit_by_name(object, signal, argument, &flow);
    return flow;
}
