/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Command line of iwarp-replay. Every mistake is a usage error (exit 2)
 * with a message naming the option; nothing is guessed.
 */
#ifndef RP_OPTS_H
#define RP_OPTS_H

#include "rp.h"

/* 0 to go on, or the exit status (0 after --help/--version). */
int rp_opts_parse(struct rp_opts *o, int argc, char **argv, bool *done);
void rp_opts_free(struct rp_opts *o);

#endif
