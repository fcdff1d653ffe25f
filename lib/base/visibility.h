/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef IW_VISIBILITY_H
#define IW_VISIBILITY_H
/* The core is compiled with -fvisibility=hidden; IW_EXPORT marks the calls
 * that belong to the public ABI. The version script is a second fence. */
#define IW_EXPORT __attribute__((visibility("default")))
#endif
