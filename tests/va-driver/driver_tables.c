/* swiftvt_sw: the handle tables (struct table, driver_internal.h): one per object type, each with
 * its own ID range, so that an ID of the wrong type is refused. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"

uint32_t table_add(struct table *t, void *object)
{
    for (uint32_t i = 0; i < t->capacity; i++) {
        if (!t->slots[i]) {
            t->slots[i] = object;
            t->live++;
            return t->base + i;
        }
    }
    uint32_t capacity = t->capacity ? t->capacity * 2 : 64;
    void **slots = realloc(t->slots, capacity * sizeof(void *));
    if (!slots)
        return VA_INVALID_ID;
    memset(slots + t->capacity, 0, (capacity - t->capacity) * sizeof(void *));
    t->slots = slots;
    uint32_t index = t->capacity;
    t->capacity = capacity;
    t->slots[index] = object;
    t->live++;
    return t->base + index;
}

void *table_get(const struct table *t, uint32_t id)
{
    if (id < t->base || id - t->base >= t->capacity)
        return NULL;
    return t->slots[id - t->base];
}

void table_remove(struct table *t, uint32_t id)
{
    if (table_get(t, id)) {
        t->slots[id - t->base] = NULL;
        t->live--;
    }
}

/* Removes object `id` from `t` under the driver lock and returns it for the caller to free
 * (NULL when there is no such object): the first half of every vaDestroy* call. */
void *table_take(struct sw_driver *drv, struct table *t, uint32_t id)
{
    pthread_mutex_lock(&drv->lock);
    void *object = table_get(t, id);
    if (object)
        table_remove(t, id);
    pthread_mutex_unlock(&drv->lock);
    return object;
}
