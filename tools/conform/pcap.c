/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A capture per case (--pcap-dir): every send() we make and every recv()
 * that returns data is written as a TCP segment of a synthetic connection
 * (lib/diag/pcap_writer), so Wireshark shows each case's exchange with our
 * segmentation as sent. Timestamps are wall-clock; TCP sequence numbers are
 * synthetic.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "conform.h"
#include "diag/pcap_writer.h"

struct cf_pcap {
	FILE *fp;
	struct iw_pcapw w;
	struct iw_pcapw_flow f;
};

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cf_pcap_open(struct cf_conn *k)
{
	struct sockaddr_storage a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);
	char path[PATH_MAX];
	struct cf_pcap *p;

	if (!k->c->o->pcap_dir || !(p = calloc(1, sizeof(*p))))
		return;
	snprintf(path, sizeof(path), "%s/case-%s.pcap", k->c->o->pcap_dir, k->c->id);
	p->fp = fopen(path, "w");
	if (!p->fp || getsockname(k->fd, (struct sockaddr *)&a, &la) ||
	    getpeername(k->fd, (struct sockaddr *)&b, &lb) || iw_pcapw_open(&p->w, p->fp, 0, 0) ||
	    iw_pcapw_flow_init(&p->f, &p->w, (struct sockaddr *)&a, (struct sockaddr *)&b, 1000,
			       2000, IW_PCAPW_MAX_MSS) ||
	    iw_pcapw_handshake(&p->f, wall_ns())) {
		cf_log_add(&k->c->r->log, "no capture %s: %s", path, strerror(errno));
		if (p->fp)
			fclose(p->fp);
		free(p);
		return;
	}
	cf_log_add(&k->c->r->log, "capture: %s", path);
	k->pcap = p;
}

void cf_pcap_data(struct cf_conn *k, bool from_peer, const uint8_t *d, size_t n)
{
	struct iovec v = {(void *)d, n};

	if (k->pcap && n)
		iw_pcapw_data(&k->pcap->f, from_peer ? IW_PCAPW_B2A : IW_PCAPW_A2B, &v, 1, wall_ns());
}

void cf_pcap_end(struct cf_conn *k, bool from_peer, bool reset)
{
	enum iw_pcapw_dir d = from_peer ? IW_PCAPW_B2A : IW_PCAPW_A2B;

	if (!k->pcap)
		return;
	if (reset)
		iw_pcapw_rst(&k->pcap->f, d, wall_ns());
	else if (!k->pcap->f.ep[d].fin)
		iw_pcapw_fin(&k->pcap->f, d, wall_ns());
}

void cf_pcap_close(struct cf_conn *k)
{
	if (!k->pcap)
		return;
	cf_pcap_end(k, false, false);
	iw_pcapw_close(&k->pcap->w);
	fclose(k->pcap->fp);
	free(k->pcap);
	k->pcap = NULL;
}
