/* swiftvt_sw: logging (SWIFTVT_VA_LOG), the report file (SWIFTVT_VA_REPORT: VALIDATION / REFUSED /
 * SELFCHECK lines), and the hooks through which encode.c reports the same way. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "driver_internal.h"

void drv_log(const struct sw_driver *drv, const char *fmt, ...)
{
    if (!drv->log)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "swiftvt_sw: %s\n", line);
}

/* A line for stderr and for the report file: one write() per line, in append mode, so that lines
 * from several displays or processes do not interleave. */
void drv_report(const struct sw_driver *drv, int to_stderr, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    line[n] = 0;
    if (to_stderr)
        fputs(line, stderr);
    if (drv->report_path) {
        int fd = open(drv->report_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            ssize_t ignored = write(fd, line, (size_t)n);
            (void)ignored;
            close(fd);
        }
    }
}

void drv_complain(void *opaque, const char *field, const char *client, const char *driver)
{
    drv_report(opaque, 1, "swiftvt_sw VALIDATION: %s: client %s, driver %s", field, client, driver);
}

/* How encode.c reports: the same report file, log and parameter log. */
static void encode_report(void *opaque, int to_stderr, const char *line)
{
    drv_report(opaque, to_stderr, "%s", line);
}

static void encode_log(void *opaque, const char *line)
{
    drv_log(opaque, "%s", line);
}

struct enc_hooks encode_hooks(struct sw_driver *drv)
{
    return (struct enc_hooks){ .report = encode_report, .log = encode_log, .opaque = drv, .paramlog = drv->paramlog };
}
