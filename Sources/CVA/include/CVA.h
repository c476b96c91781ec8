// libva 2.x (VA-API) for SwiftVT's VA plumbing, with its DRM and X11 display entry points, plus
// stand-ins for what Swift cannot import. Every helper is prefixed `cva_`.
#ifndef CVA_H
#define CVA_H

#include <va/va.h>
#include <va/va_drm.h>
#include <va/va_str.h>
#include <va/va_x11.h>

/// Loads libva (see loader.c); NULL on success, else what went wrong. Must succeed before any
/// other va* function is called.
const char *cva_load(void);
/// Loads libva-drm (vaGetDisplayDRM); NULL on success, else what went wrong.
const char *cva_load_drm(void);
/// Loads libva-x11 and libX11 (vaGetDisplay, XOpenDisplay, XCloseDisplay); NULL on success.
const char *cva_load_x11(void);

/// VA_STATUS_SUCCESS and the other statuses are macros of type int; these keep Swift's types right.
static inline VAStatus cva_status_success(void) { return VA_STATUS_SUCCESS; }
static inline VASurfaceID cva_invalid_surface(void) { return VA_INVALID_SURFACE; }
static inline VAGenericID cva_invalid_id(void) { return VA_INVALID_ID; }

/// A VADisplay opened on an X11 connection (`Display *` is an opaque struct Swift imports as OpaquePointer).
static inline VADisplay cva_get_display_x11(void *x11_display) { return vaGetDisplay((Display *)x11_display); }
void *cva_x_open_display(const char *name);
void cva_x_close_display(void *x11_display);

#endif
