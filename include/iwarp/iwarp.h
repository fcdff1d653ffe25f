/* SPDX-License-Identifier: BSD-2-Clause */
/* libiwarp umbrella header. */
#ifndef IWARP_IWARP_H
#define IWARP_IWARP_H
#include <iwarp/wire.h>
#include <iwarp/verbs.h>
#include <iwarp/cm.h>
#endif
