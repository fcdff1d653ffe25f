/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libpcap front end: opens pcap and pcapng files alike (libpcap >= 1.1
 * reads both), with nanosecond timestamps where the file has them, and
 * turns each frame into a TCP segment or a counted skip.
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "link.h"
#include "util.h"

struct rp_capture {
	pcap_t *pc;
	int dlt;
	struct rp_capture_stats st;
	char err[PCAP_ERRBUF_SIZE + 64];
};

/* pc opened (NULL: ebuf says why): the capture, or NULL with err set. */
static struct rp_capture *wrap(pcap_t *pc, const char *name, const char *ebuf, char *err,
			       size_t errcap)
{
	struct rp_capture *c;
	int dlt;

	if (!pc) {
		snprintf(err, errcap, "%s: %s", name, ebuf[0] ? ebuf : "cannot open");
		return NULL;
	}
	dlt = pcap_datalink(pc);
	if (!rp_link_known(dlt)) {
		const char *dname = pcap_datalink_val_to_name(dlt);

		snprintf(err, errcap,
			 "%s: link type %d (%s) is not supported (Ethernet, Linux cooked SLL/SLL2, "
			 "raw IP and loopback are)",
			 name, dlt, dname ? dname : "unknown");
		pcap_close(pc);
		return NULL;
	}
	c = rp_xmalloc(sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->pc = pc;
	c->dlt = dlt;
	return c;
}

struct rp_capture *rp_capture_open(const char *path, char *err, size_t errcap)
{
	char ebuf[PCAP_ERRBUF_SIZE] = "";
	pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, ebuf);

	return wrap(pc, path, ebuf, err, errcap);
}

struct rp_capture *rp_capture_fopen(FILE *fp, const char *name, char *err, size_t errcap)
{
	char ebuf[PCAP_ERRBUF_SIZE] = "";
	pcap_t *pc = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, ebuf);

	/* libpcap owns fp once it took it; not when it refused it. */
	if (!pc)
		fclose(fp);
	return wrap(pc, name, ebuf, err, errcap);
}

/* One frame: 1 if it is a TCP segment (in *p), 0 if skipped. */
static int frame(struct rp_capture *c, const struct pcap_pkthdr *h, const uint8_t *data,
		 struct rp_pkt *p)
{
	size_t off;
	int ipver, rc;

	if (rp_link_ip(c->dlt, data, h->caplen, &off, &ipver)) {
		c->st.not_ip++;
		return 0;
	}
	memset(p, 0, sizeof(*p));
	/* The IP datagram is at least what the frame says it was on the wire. */
	rc = rp_ip_tcp(data + off, h->caplen - off, h->len > off ? h->len - off : 0, ipver, p);
	if (rc == 0)
		c->st.not_tcp++;
	else if (rc == -1)
		c->st.malformed++;
	else if (rc == -2)
		c->st.fragments++;
	if (rc != 1)
		return 0;
	c->st.tcp++;
	if (p->missing)
		c->st.snapped++;
	p->frame = c->st.frames;
	p->ts_ns = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
	return 1;
}

int rp_capture_next(struct rp_capture *c, struct rp_pkt *p)
{
	for (;;) {
		struct pcap_pkthdr *h;
		const u_char *data;
		int rc = pcap_next_ex(c->pc, &h, &data);

		if (rc == PCAP_ERROR_BREAK)
			return 0;
		if (rc != 1) {
			snprintf(c->err, sizeof(c->err), "after frame %llu: %s",
				 (unsigned long long)c->st.frames, pcap_geterr(c->pc));
			return -1;
		}
		c->st.frames++;
		if (frame(c, h, data, p))
			return 1;
	}
}

const char *rp_capture_error(const struct rp_capture *c)
{
	return c->err;
}

const struct rp_capture_stats *rp_capture_stats(const struct rp_capture *c)
{
	return &c->st;
}

void rp_capture_close(struct rp_capture *c)
{
	if (!c)
		return;
	pcap_close(c->pc);
	free(c);
}
