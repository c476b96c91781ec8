// GstPad: what the peer of a pad accepts, prefers and can do, asked through caps and queries
// whose answers are GValue lists and variadic parsers.
#ifndef SWIFTVT_PAD_H
#define SWIFTVT_PAD_H

#include <gst/gst.h>

G_BEGIN_DECLS

/// The value of a string field that the peer of `pad` prefers (the first of a list), or `fallback`
/// when the peer accepts anything or does not say. Interned: valid for the process lifetime.
const char *swiftvt_pad_peer_preferred_string(GstPad *pad, const char *field, const char *fallback);
/// The values the peer of `pad` allows for a string field of its `media_type` structures
/// (NULL-terminated, free with g_strfreev), or NULL when the peer does not restrict the field
/// (ANY caps, not linked, or a structure without the field). A value that is not a string is
/// given as "(type)value".
gchar **swiftvt_pad_peer_restricted_strings(GstPad *pad, const char *media_type, const char *field);
/// Whether the peer of `pad` accepts `caps` (TRUE when not linked).
gboolean swiftvt_pad_peer_accepts_caps(GstPad *pad, GstCaps *caps);
/// The peer's caps as text, for messages (g_free it).
gchar *swiftvt_pad_peer_caps_string(GstPad *pad);
/// The GstVideoFormat names downstream accepts on `pad`, most preferred first, as a
/// NULL-terminated array to free with g_strfreev; NULL when downstream accepts any format.
gchar **swiftvt_pad_peer_video_formats(GstPad *pad);
/// Whether upstream of `pad` can seek in time (the SEEKING query).
gboolean swiftvt_pad_peer_seekable(GstPad *pad);
/// Upstream's duration in nanoseconds, -1 when unknown.
gint64 swiftvt_pad_peer_duration(GstPad *pad);

G_END_DECLS

#endif
