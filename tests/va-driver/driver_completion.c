/* swiftvt_sw: asynchronous completion (a personality's SWIFTVT_VA_LATENCY_MS): the worker thread
 * that completes pictures after the latency, the job queue, and the waits of vaSyncSurface,
 * vaSyncBuffer, vaMapBuffer and vaGetImage. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver_internal.h"

/* Hardware decodes and encodes after vaEndPicture returns: the render target holds its new
 * picture, and the coded buffer its bitstream, only once the picture is complete. Here the work
 * is done in vaEndPicture, into a copy, and the worker thread publishes the copy after the
 * latency; vaSyncSurface and vaSyncBuffer wait for that. */

uint64_t fnv1a(const uint8_t *data, size_t size)
{
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ data[i]) * 1099511628211ull;
    return hash;
}

size_t surface_bytes(const struct sw_surface *surface)
{
    return (size_t)surface->pitch * surface->alloc_height * 3 / 2;
}

static void complete_job(struct sw_driver *drv, struct job *job)
{
    struct sw_surface *surface = job->surface;
    if (job->pixels)
        memcpy(surface->data, job->pixels, surface_bytes(surface));
    surface->sync_status = job->sync_status;
    surface->pending--;
    if (job->coded) {
        /* The hardware reads the source while it encodes: a client that changed it before the
         * picture completed gets a picture made of the changed samples. */
        if (fnv1a(surface->data, surface_bytes(surface)) != job->source_hash)
            drv_report(drv, 1, "swiftvt_sw VALIDATION: encode picture %ld: the source surface changed between vaEndPicture "
                               "and the picture's completion (the hardware reads it until then; wait with vaSyncSurface "
                               "before reusing it)", job->picture);
        struct sw_buffer *buffer = table_get(&drv->buffers, job->coded_id);
        if (buffer && buffer == job->coded_buffer) {
            const VACodedBufferSegment *done = (const VACodedBufferSegment *)job->coded;
            VACodedBufferSegment *segment = (VACodedBufferSegment *)buffer->data;
            memcpy(buffer->data + sizeof(VACodedBufferSegment), job->coded + sizeof(VACodedBufferSegment), done->size);
            *segment = *done;
            segment->buf = buffer->data + sizeof(VACodedBufferSegment);
            buffer->pending--;
        }
    }
    surface_release(surface);
    free(job->pixels);
    free(job->coded);
    free(job);
}

static int time_reached(const struct timespec *due)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > due->tv_sec || (now.tv_sec == due->tv_sec && now.tv_nsec >= due->tv_nsec);
}

void *completion_worker(void *opaque)
{
    struct sw_driver *drv = opaque;
    pthread_mutex_lock(&drv->lock);
    for (;;) {
        struct job *job = drv->jobs;
        if (!job) {
            if (drv->stopping)
                break;
            pthread_cond_wait(&drv->work_cond, &drv->lock);
            continue;
        }
        /* Jobs are queued in submission order with one latency, so the first is due first. */
        if (!drv->stopping && !time_reached(&job->due)) {
            pthread_cond_timedwait(&drv->work_cond, &drv->lock, &job->due);
            continue;
        }
        drv->jobs = job->next;
        if (!drv->jobs)
            drv->jobs_tail = NULL;
        complete_job(drv, job);
        pthread_cond_broadcast(&drv->done_cond);
    }
    pthread_mutex_unlock(&drv->lock);
    return NULL;
}

/* Queues a job (driver lock held); it holds a reference on its surface. */
void queue_job(struct sw_driver *drv, struct job *job)
{
    clock_gettime(CLOCK_MONOTONIC, &job->due);
    job->due.tv_nsec += drv->latency_ms * 1000000L;
    job->due.tv_sec += job->due.tv_nsec / 1000000000L;
    job->due.tv_nsec %= 1000000000L;
    job->surface->references++;
    job->surface->pending++;
    job->next = NULL;
    if (drv->jobs_tail)
        drv->jobs_tail->next = job;
    else
        drv->jobs = job;
    drv->jobs_tail = job;
    pthread_cond_signal(&drv->work_cond);
}

/* Waits (driver lock held) until the surface's pictures are complete; 0, or -1 when timeout_ns
 * (0: none) passed first. */
int wait_surface(struct sw_driver *drv, struct sw_surface *surface, uint64_t timeout_ns)
{
    if (!surface->pending)
        return 0;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(timeout_ns / 1000000000u);
    until.tv_nsec += (long)(timeout_ns % 1000000000u);
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    surface->references++; /* the client may destroy it meanwhile */
    while (surface->pending) {
        if (timeout_ns) {
            if (pthread_cond_timedwait(&drv->done_cond, &drv->lock, &until) == ETIMEDOUT && surface->pending) {
                surface_release(surface);
                return -1;
            }
        } else {
            pthread_cond_wait(&drv->done_cond, &drv->lock);
        }
    }
    surface_release(surface);
    return 0;
}

/* Waits (driver lock held) until the coded buffer's pictures are complete or it is destroyed. */
void wait_coded_buffer(struct sw_driver *drv, VABufferID id, struct sw_buffer *buffer)
{
    while (table_get(&drv->buffers, id) == buffer && buffer->pending)
        pthread_cond_wait(&drv->done_cond, &drv->lock);
}

void stop_worker(struct sw_driver *drv)
{
    if (!drv->worker_started)
        return;
    pthread_mutex_lock(&drv->lock);
    drv->stopping = 1;
    pthread_cond_signal(&drv->work_cond);
    pthread_mutex_unlock(&drv->lock);
    pthread_join(drv->worker, NULL);
    drv->worker_started = 0;
}
