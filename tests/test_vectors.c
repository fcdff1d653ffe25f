/* SPDX-License-Identifier: BSD-2-Clause */
#include "suites.h"
Suite *suite_vectors(void) { return suite_create("vectors"); }
