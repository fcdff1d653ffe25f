/* SPDX-License-Identifier: BSD-2-Clause */
#include "suites.h"
Suite *suite_wire_err(void) { return suite_create("wire_err"); }
