/* SPDX-License-Identifier: BSD-2-Clause */
#include "opts.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fault.h"
#include "rewrite.h"
#include "util.h"

static const char usage_text[] =
	"Usage: iwarp-replay [OPTIONS] CAPTURE\n"
	"Decode the iWARP traffic (MPA, DDP, RDMAP) in a pcap or pcapng capture, or replay\n"
	"one side of a recorded connection against a live peer.\n"
	"\n"
	"Decoding:\n"
	"  -j, --json                 JSON Lines output instead of text\n"
	"      --payload              with --json: each FPDU's payload octets, in hex\n"
	"  -c, --check                exit 1 if any protocol error was found\n"
	"  -q, --quiet                only problems, TERMINATEs and the summary\n"
	"      --no-summary           no summary at the end\n"
	"      --conn N               only connection N (numbered from 1 in capture order)\n"
	"      --crc on|off           CRC setting, overriding the MPA frames; also makes a\n"
	"                             capture without MPA frames (started mid-stream) decodable\n"
	"      --markers WHO          who sends markers: none, initiator, responder, both\n"
	"      --markers-from-initiator, --markers-from-responder   (the same, one side)\n"
	"      --stream-offset [initiator:|responder:]OFF\n"
	"                             stream offset (octets since the sender's MPA frame) of\n"
	"                             the first captured octet, for the marker positions\n"
	"      --responder-port PORT  without SYN or MPA Request, the side on PORT responds\n"
	"      --peer-siw[=initiator|responder|both]\n"
	"                             read TERMINATEs with siw's bit layout (default both;\n"
	"                             in a replay: the live peer's)\n"
	"      --fail-on-terminate    with --check, a TERMINATE is an error too\n"
	"\n"
	"Replay (the capture's first iWARP connection, or --conn N):\n"
	"      --replay initiator|responder   the side to play\n"
	"      --peer ADDR:PORT       initiator: the live responder to connect to\n"
	"      --listen [ADDR:]PORT   responder: where to wait for the live initiator\n"
	"      --map-stag OLD=NEW     rewrite STag OLD to NEW (repeatable)\n"
	"      --to-offset DELTA      add DELTA (may be negative) to the TOs of the peer's memory\n"
	"      --pace recorded|fast   keep the recorded gaps (default) or send at once\n"
	"      --no-wait              do not wait for the peer's answers where the recording did\n"
	"      --fault SPEC           crc:N, field:N:NAME=VALUE, truncate:N[:LEN], delay:N:MS,\n"
	"                             drop:N  (N: FPDU number in the replayed direction;\n"
	"                             NAMEs: iwarp-replay(1), or any unknown name lists them)\n"
	"      --split N              write the stream in pieces of at most N octets\n"
	"      --timeout MS           bound on every network wait (default 10000)\n"
	"      --linger MS            after the last FPDU, wait this long for answers (default 2000)\n"
	"      --mpa-rev 1|2, --ird N, --ord N, --rtr write,read,send|none, --private-data HEX\n"
	"                             override what our MPA frame offers (default: as recorded)\n"
	"\n"
	"  -h, --help                 this text;  -V, --version\n"
	"\n"
	"Exit status: 0 ok; 1 protocol errors found (--check); 2 usage error;\n"
	"3 capture unreadable, truncated, without TCP, or of an unknown link type;\n"
	"4 network error (peer unreachable, MPA exchange failed or rejected).\n"
	"See iwarp-replay(1).\n";

enum {
	O_NO_SUMMARY = 256, O_CONN, O_CRC, O_MARKERS, O_MARKERS_I, O_MARKERS_R, O_STREAM_OFF,
	O_RESP_PORT, O_SIW, O_FAIL_TERM, O_REPLAY, O_PEER, O_LISTEN, O_MAP, O_TO_OFF, O_PACE,
	O_NO_WAIT, O_FAULT, O_SPLIT, O_TIMEOUT, O_LINGER, O_REV, O_IRD, O_ORD, O_RTR, O_PD,
	O_PAYLOAD,
};

static const struct option long_opts[] = {
	{"json", no_argument, NULL, 'j'},
	{"check", no_argument, NULL, 'c'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{"no-summary", no_argument, NULL, O_NO_SUMMARY},
	{"payload", no_argument, NULL, O_PAYLOAD},
	{"conn", required_argument, NULL, O_CONN},
	{"crc", required_argument, NULL, O_CRC},
	{"markers", required_argument, NULL, O_MARKERS},
	{"markers-from-initiator", no_argument, NULL, O_MARKERS_I},
	{"markers-from-responder", no_argument, NULL, O_MARKERS_R},
	{"stream-offset", required_argument, NULL, O_STREAM_OFF},
	{"responder-port", required_argument, NULL, O_RESP_PORT},
	{"peer-siw", optional_argument, NULL, O_SIW},
	{"fail-on-terminate", no_argument, NULL, O_FAIL_TERM},
	{"replay", required_argument, NULL, O_REPLAY},
	{"peer", required_argument, NULL, O_PEER},
	{"listen", required_argument, NULL, O_LISTEN},
	{"map-stag", required_argument, NULL, O_MAP},
	{"to-offset", required_argument, NULL, O_TO_OFF},
	{"pace", required_argument, NULL, O_PACE},
	{"no-wait", no_argument, NULL, O_NO_WAIT},
	{"fault", required_argument, NULL, O_FAULT},
	{"split", required_argument, NULL, O_SPLIT},
	{"timeout", required_argument, NULL, O_TIMEOUT},
	{"linger", required_argument, NULL, O_LINGER},
	{"mpa-rev", required_argument, NULL, O_REV},
	{"ird", required_argument, NULL, O_IRD},
	{"ord", required_argument, NULL, O_ORD},
	{"rtr", required_argument, NULL, O_RTR},
	{"private-data", required_argument, NULL, O_PD},
	{NULL, 0, NULL, 0},
};

static int __attribute__((format(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "iwarp-replay: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'iwarp-replay --help'.\n");
	return RP_EXIT_USAGE;
}

static int role_of(const char *s, enum rp_role *r)
{
	if (!strcmp(s, "initiator"))
		*r = RP_INITIATOR;
	else if (!strcmp(s, "responder"))
		*r = RP_RESPONDER;
	else
		return -1;
	return 0;
}

static int markers(struct rp_opts *o, const char *who)
{
	static const char *const names[] = {"none", "initiator", "responder", "both"};

	for (int i = 0; i < 4; i++) {
		if (strcmp(who, names[i]))
			continue;
		o->markers[RP_INITIATOR] = (i & 1) ? RP_ON : RP_OFF;
		o->markers[RP_RESPONDER] = (i & 2) ? RP_ON : RP_OFF;
		return 0;
	}
	return bad("--markers: want none, initiator, responder or both, not '%s'", who);
}

static int stream_offset(struct rp_opts *o, const char *arg)
{
	const char *colon = strchr(arg, ':');
	enum rp_role r = RP_INITIATOR;
	uint64_t v;
	bool both = colon == NULL;

	if (colon) {
		char who[16];
		size_t n = (size_t)(colon - arg);

		if (n >= sizeof(who))
			return bad("--stream-offset: want [initiator:|responder:]OFF");
		memcpy(who, arg, n);
		who[n] = '\0';
		if (role_of(who, &r))
			return bad("--stream-offset: '%s' is neither initiator nor responder", who);
		arg = colon + 1;
	}
	if (!rp_parse_u64(arg, UINT32_MAX, &v))
		return bad("--stream-offset: '%s' is not a 32-bit number", arg);
	for (int i = 0; i < 2; i++) {
		if (both || i == (int)r) {
			o->stream_off_set[i] = true;
			o->stream_off[i] = (uint32_t)v;
		}
	}
	return 0;
}

static int siw(struct rp_opts *o, const char *arg)
{
	enum rp_role r;

	if (!arg || !strcmp(arg, "both")) {
		o->siw[0] = o->siw[1] = true;
		return 0;
	}
	if (role_of(arg, &r))
		return bad("--peer-siw: want initiator, responder or both, not '%s'", arg);
	o->siw[r] = true;
	return 0;
}

static int map_stag(struct rp_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char from[32];
	uint64_t a, b;

	if (o->nmaps == RP_MAX_MAPS)
		return bad("--map-stag: at most %d mappings", RP_MAX_MAPS);
	if (!eq || (size_t)(eq - arg) >= sizeof(from))
		return bad("--map-stag: want OLD=NEW, not '%s'", arg);
	memcpy(from, arg, (size_t)(eq - arg));
	from[eq - arg] = '\0';
	if (!rp_parse_u64(from, UINT32_MAX, &a) || !rp_parse_u64(eq + 1, UINT32_MAX, &b))
		return bad("--map-stag: '%s': STags are 32-bit numbers", arg);
	o->maps[o->nmaps++] = (struct rp_stag_map){(uint32_t)a, (uint32_t)b};
	return 0;
}

static int rtr(struct rp_opts *o, const char *arg)
{
	char buf[64];
	int bits = 0;

	if (!strcmp(arg, "none")) {
		o->rtr = 0;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		if (!strcmp(tok, "write"))
			bits |= IW_RTR_WRITE;
		else if (!strcmp(tok, "read"))
			bits |= IW_RTR_READ;
		else if (!strcmp(tok, "send"))
			bits |= IW_RTR_SEND;
		else
			return bad("--rtr: '%s' is not write, read, send or none", tok);
	}
	o->rtr = bits;
	return 0;
}

static int number(const char *opt, const char *arg, uint64_t max, uint64_t *v)
{
	if (!rp_parse_u64(arg, max, v))
		return bad("%s: '%s' is not a number from 0 to %llu", opt, arg, (unsigned long long)max);
	return 0;
}

static int fault(struct rp_opts *o, const char *arg)
{
	const char *why;

	if (o->nfaults == RP_MAX_FAULTS)
		return bad("--fault: at most %d faults", RP_MAX_FAULTS);
	why = rp_fault_parse(arg, &o->faults[o->nfaults]);
	if (why) {
		if (strstr(why, "field name")) {
			fprintf(stderr, "iwarp-replay: fields: ");
			rp_field_list(stderr);
		}
		return bad("--fault %s: %s", arg, why);
	}
	o->nfaults++;
	return 0;
}

static int private_data(struct rp_opts *o, const char *arg)
{
	free(o->pd);
	o->pd = rp_xmalloc(IW_MPA_PD_MAX);
	o->pd_len = rp_parse_hex(arg, o->pd, IW_MPA_PD_MAX);
	if (o->pd_len < 0)
		return bad("--private-data: want up to %d octets in hex", IW_MPA_PD_MAX);
	return 0;
}

/* Options with a value that is a plain number. */
static int numeric(struct rp_opts *o, int c, const char *arg)
{
	uint64_t v = 0;
	int rc;

	switch (c) {
	case O_CONN:
		rc = number("--conn", arg, UINT32_MAX, &v);
		if (!rc && v == 0)
			rc = bad("--conn: connections are numbered from 1");
		o->conn = (unsigned)v;
		return rc;
	case O_RESP_PORT:
		rc = number("--responder-port", arg, 65535, &v);
		o->responder_port = (int)v;
		return rc;
	case O_SPLIT:
		rc = number("--split", arg, UINT32_MAX, &v);
		if (!rc && v == 0)
			rc = bad("--split: at least 1 octet per write");
		o->split = (uint32_t)v;
		return rc;
	case O_TIMEOUT:
		rc = number("--timeout", arg, 3600000, &v);
		if (!rc && v == 0)
			rc = bad("--timeout: at least 1 ms");
		o->timeout_ms = (uint32_t)v;
		return rc;
	case O_LINGER:
		rc = number("--linger", arg, 3600000, &v);
		o->linger_ms = (uint32_t)v;
		return rc;
	case O_REV:
		rc = number("--mpa-rev", arg, 2, &v);
		if (!rc && v == 0)
			rc = bad("--mpa-rev: 1 or 2");
		o->mpa_rev = (int)v;
		return rc;
	case O_IRD:
	case O_ORD:
		rc = number(c == O_IRD ? "--ird" : "--ord", arg, IW_MPA_IRD_ORD_MAX, &v);
		*(c == O_IRD ? &o->ird : &o->ord) = (int)v;
		return rc;
	default:
		return bad("internal: option %d", c);
	}
}

static int onoff(int *out, const char *opt, const char *arg)
{
	if (!strcmp(arg, "on"))
		*out = RP_ON;
	else if (!strcmp(arg, "off"))
		*out = RP_OFF;
	else
		return bad("%s: want on or off, not '%s'", opt, arg);
	return 0;
}

static int set_flag(bool *flag)
{
	*flag = true;
	return 0;
}

static int replay_role(struct rp_opts *o, const char *arg)
{
	o->replay = true;
	if (role_of(arg, &o->role))
		return bad("--replay: initiator or responder, not '%s'", arg);
	return 0;
}

static int pace(struct rp_opts *o, const char *arg)
{
	if (strcmp(arg, "recorded") && strcmp(arg, "fast"))
		return bad("--pace: recorded or fast, not '%s'", arg);
	o->pace_fast = !strcmp(arg, "fast");
	return 0;
}

static int to_offset(struct rp_opts *o, const char *arg)
{
	o->to_off_set = true;
	if (!rp_parse_delta(arg, &o->to_off))
		return bad("--to-offset: '%s' is not a number", arg);
	return 0;
}

static int one(struct rp_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'j':
		return set_flag(&o->json);
	case 'c':
		return set_flag(&o->check);
	case 'q':
		return set_flag(&o->quiet);
	case O_PAYLOAD:
		return set_flag(&o->payload);
	case O_NO_SUMMARY:
		o->summary = false;
		return 0;
	case O_CRC:
		return onoff(&o->crc, "--crc", arg);
	case O_MARKERS:
		return markers(o, arg);
	case O_MARKERS_I:
	case O_MARKERS_R:
		o->markers[c == O_MARKERS_I ? RP_INITIATOR : RP_RESPONDER] = RP_ON;
		return 0;
	case O_STREAM_OFF:
		return stream_offset(o, arg);
	case O_SIW:
		return siw(o, arg);
	case O_FAIL_TERM:
		return set_flag(&o->fail_on_term);
	case O_REPLAY:
		return replay_role(o, arg);
	case O_PEER:
		o->peer = arg;
		return 0;
	case O_LISTEN:
		o->listen = arg;
		return 0;
	case O_MAP:
		return map_stag(o, arg);
	case O_TO_OFF:
		return to_offset(o, arg);
	case O_PACE:
		return pace(o, arg);
	case O_NO_WAIT:
		return set_flag(&o->no_wait);
	case O_FAULT:
		return fault(o, arg);
	case O_RTR:
		return rtr(o, arg);
	case O_PD:
		return private_data(o, arg);
	default:
		return numeric(o, c, arg);
	}
}

/* Options that only make sense together. */
static int consistent(const struct rp_opts *o)
{
	bool live_opts = o->peer || o->listen || o->nmaps || o->to_off_set || o->nfaults ||
			 o->split || o->mpa_rev || o->ird >= 0 || o->ord >= 0 || o->rtr >= 0 ||
			 o->pd_len >= 0 || o->no_wait;

	if (o->payload && !o->json)
		return bad("--payload needs --json");
	if (!o->replay && live_opts)
		return bad("--peer, --listen, --map-stag, --to-offset, --fault, --split and the MPA "
			   "overrides need --replay");
	if (o->replay && o->role == RP_INITIATOR && (!o->peer || o->listen))
		return bad("--replay initiator needs --peer ADDR:PORT (and no --listen)");
	if (o->replay && o->role == RP_RESPONDER && (!o->listen || o->peer))
		return bad("--replay responder needs --listen [ADDR:]PORT (and no --peer)");
	return 0;
}

static void defaults(struct rp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->summary = true;
	o->crc = RP_UNSET;
	o->markers[0] = o->markers[1] = RP_UNSET;
	o->responder_port = -1;
	o->timeout_ms = 10000;
	o->linger_ms = 2000;
	o->ird = o->ord = o->rtr = -1;
	o->pd_len = -1;
}

int rp_opts_parse(struct rp_opts *o, int argc, char **argv, bool *done)
{
	int c, rc;

	defaults(o);
	*done = false;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jcqhV", long_opts, NULL)) != -1) {
		if (c == 'h' || c == 'V') {
			fputs(c == 'h' ? usage_text : "iwarp-replay (" PACKAGE_STRING ")\n", stdout);
			*done = true;
			return RP_EXIT_OK;
		}
		if (c == '?')
			return bad("unknown option '%s'", argv[optind - 1]);
		if (c == ':')
			return bad("option '%s' needs a value", argv[optind - 1]);
		rc = one(o, c, optarg);
		if (rc)
			return rc;
	}
	if (optind != argc - 1)
		return bad(optind >= argc ? "no capture file given" : "one capture file, please");
	o->path = argv[optind];
	return consistent(o);
}

void rp_opts_free(struct rp_opts *o)
{
	free(o->pd);
	o->pd = NULL;
}
