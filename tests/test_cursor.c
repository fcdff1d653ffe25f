/* SPDX-License-Identifier: BSD-2-Clause */
#include "suites.h"
Suite *suite_cursor(void) { return suite_create("cursor"); }
