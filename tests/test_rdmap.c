/* SPDX-License-Identifier: BSD-2-Clause */
#include "suites.h"
Suite *suite_rdmap(void) { return suite_create("rdmap"); }
