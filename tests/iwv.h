/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reader for the iwv/1 vector files (rfc-vectors/README.md). A record is
 * kept as its blob (the concatenated hex lines), its record keys and its
 * other lines verbatim; each line and each setting has a "used" mark so the
 * runner can fail a record that carries a key no check looked at.
 */
#ifndef IW_TEST_IWV_H
#define IW_TEST_IWV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IWV_MAX_LINES 96
#define IWV_MAX_SETTINGS 16
#define IWV_MAX_BLOB 8192

struct iwv_line {
	int lineno;
	char key[16];
	char rest[512];
	bool used;
};

struct iwv_setting {
	char key[32];
	char val[64];
	bool used;
};

struct iwv_rec {
	char file[128];
	char id[96];
	char kind[32];
	char origin[32];
	uint8_t blob[IWV_MAX_BLOB];
	size_t blob_len;
	struct iwv_line lines[IWV_MAX_LINES];
	int num_lines;
	struct iwv_setting settings[IWV_MAX_SETTINGS];
	int num_settings;
};

/* Parse one file. Returns the number of records stored in *out (malloc'd
 * array, caller frees), or -1 with a message in err. */
int iwv_load(const char *path, struct iwv_rec **out, char *err, size_t err_len);

/* A setting's value (marking it used), or NULL. */
const char *iwv_setting(struct iwv_rec *r, const char *key);
/* Integer setting with a default. */
long iwv_setting_long(struct iwv_rec *r, const char *key, long dflt);
/* "on"/"off" setting with a default. */
bool iwv_setting_on(struct iwv_rec *r, const char *key, bool dflt);

/* Parse a hex octet string ("aa bb cc" or "aabbcc"); returns the count or -1. */
int iwv_hex(const char *s, uint8_t *out, size_t cap);

#endif
