/* SPDX-License-Identifier: BSD-2-Clause */
#include "iwarp/wire.h"
