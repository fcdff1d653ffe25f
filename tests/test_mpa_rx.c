/* SPDX-License-Identifier: BSD-2-Clause */
#include "suites.h"
Suite *suite_mpa_rx(void) { return suite_create("mpa_rx"); }
