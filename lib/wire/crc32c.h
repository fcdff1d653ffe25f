/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef IW_CRC32C_H
#define IW_CRC32C_H

#include <stdint.h>
#include "wire/cursor.h"

/* Store a CRC32c value in an MPA CRC field: least-significant octet first,
 * as iSCSI does (RFC 3720 B.4; siw; Wireshark). Never htonl(). */
static inline void iw_crc32c_put_wire(uint8_t out[4], uint32_t crc) { iw_put_le32(out, crc); }
static inline uint32_t iw_crc32c_get_wire(const uint8_t in[4]) { return iw_get_le32(in); }

#endif
