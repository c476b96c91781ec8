// GstBuffer over memory a Swift object owns.
#include "SwiftVTShim.h"

GstBuffer *swiftvt_buffer_wrap_video(void *data, gsize size, GstVideoFormat format, guint width, guint height,
                                     guint n_planes, const gsize *offsets, const gint *strides,
                                     void *owner, GDestroyNotify release) {
    GstBuffer *buffer = gst_buffer_new_wrapped_full(GST_MEMORY_FLAG_READONLY, data, size, 0, size, owner, release);
    gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, format, width, height, n_planes,
                                   (gsize *) offsets, (gint *) strides);
    return buffer;
}
