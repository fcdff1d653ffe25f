/* SPDX-License-Identifier: BSD-2-Clause */
/* Group 4: errors the wire can cause (not yet written). */
#include "conform.h"

const struct cf_case cf_group4[] = {{NULL, NULL, NULL, NULL, NULL}};
const size_t cf_group4_n = 0;
