/* SPDX-License-Identifier: BSD-2-Clause */
/* Group 3: data transfer against the rping protocol (not yet written). */
#include "conform.h"

const struct cf_case cf_group3[] = {{NULL, NULL, NULL, NULL, NULL}};
const size_t cf_group3_n = 0;
