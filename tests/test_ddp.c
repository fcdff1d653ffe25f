/* SPDX-License-Identifier: BSD-2-Clause */
#include "suites.h"
Suite *suite_ddp(void) { return suite_create("ddp"); }
