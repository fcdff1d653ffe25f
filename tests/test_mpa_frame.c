/* SPDX-License-Identifier: BSD-2-Clause */
#include "suites.h"
Suite *suite_mpa_frame(void) { return suite_create("mpa_frame"); }
