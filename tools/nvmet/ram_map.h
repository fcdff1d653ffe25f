/* SPDX-License-Identifier: BSD-2-Clause */
/* Memory that stands in for a disk (ram_map.c). */
#ifndef NVMET_RAM_MAP_H
#define NVMET_RAM_MAP_H

#include <stddef.h>

/* len octets of zeroed anonymous memory, every page already faulted in,
 * on huge pages where the kernel gives them; NULL on failure. Free with
 * munmap. */
void *ram_map(size_t len);

/* Copy len octets into RAM-disk memory: streaming stores for a large
 * copy to a 16-octet aligned destination where the machine has them,
 * else memcpy. The data is visible to other threads on return. */
void ram_store(void *dst, const void *src, size_t len);

#endif
