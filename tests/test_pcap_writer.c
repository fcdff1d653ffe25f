/* SPDX-License-Identifier: BSD-2-Clause */
#include "suites.h"
Suite *suite_pcap_writer(void) { return suite_create("pcap_writer"); }
