/* SPDX-License-Identifier: BSD-2-Clause */
#include "suites.h"
Suite *suite_crc32c(void) { return suite_create("crc32c"); }
