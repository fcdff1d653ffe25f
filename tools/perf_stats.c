/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Time and statistics: latency samples and their percentiles, and the
 * (time, messages) trace a bandwidth loop keeps for its peak.
 *
 * The peak is the best rate over a window of at least 20 ms or a twentieth
 * of the run, whichever is longer. perftest divides one message by the
 * shortest post-to-completion time instead, which on a software stack says
 * more about the clock than about the link.
 */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "perf.h"

double perf_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int perf_samples_add(struct perf_samples *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		double *nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv)
			return -1;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return 0;
}

void perf_samples_free(struct perf_samples *s)
{
	free(s->v);
	*s = (struct perf_samples){0};
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The sample below which a fraction p of them lies (nearest rank). */
static double rank(const double *v, size_t n, double p)
{
	size_t k = (size_t)ceil(p * (double)n);
	return v[k ? k - 1 : 0];
}

void perf_lat_summary(struct perf_samples *s, struct perf_result *r)
{
	r->lat = true;
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(double), cmp_double);
	double sum = 0;
	for (size_t i = 0; i < s->n; i++)
		sum += s->v[i];
	r->t_min = s->v[0];
	r->t_max = s->v[s->n - 1];
	r->t_typ = s->v[s->n / 2];
	r->t_avg = sum / (double)s->n;
	r->t_p99 = rank(s->v, s->n, 0.99);
	r->t_p999 = rank(s->v, s->n, 0.999);
}

void perf_trace_add(struct perf_trace *tr, double t, uint64_t msgs)
{
	/* One point per millisecond is plenty for a 20 ms window. */
	if (tr->n && t - tr->t[tr->n - 1] < 1e-3)
		return;
	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? tr->cap * 2 : 1024;
		double *nt = realloc(tr->t, cap * sizeof(*nt));
		uint64_t *nm = nt ? realloc(tr->m, cap * sizeof(*nm)) : NULL;
		if (!nt || !nm) {
			/* Out of memory: the peak is then over fewer points. */
			if (nt)
				tr->t = nt;
			return;
		}
		tr->t = nt;
		tr->m = nm;
		tr->cap = cap;
	}
	tr->t[tr->n] = t;
	tr->m[tr->n++] = msgs;
}

double perf_trace_peak(const struct perf_trace *tr, uint64_t bytes_per_msg)
{
	if (tr->n < 2)
		return 0;
	double span = tr->t[tr->n - 1] - tr->t[0];
	double win = fmax(0.02, span / 20);
	double best = 0;
	size_t j = 0;
	for (size_t i = 0; i < tr->n; i++) {
		while (j < tr->n && tr->t[j] - tr->t[i] < win)
			j++;
		if (j == tr->n)
			break;
		double rate = (double)(tr->m[j] - tr->m[i]) / (tr->t[j] - tr->t[i]);
		if (rate > best)
			best = rate;
	}
	if (best == 0) /* a run shorter than the window */
		best = (double)(tr->m[tr->n - 1] - tr->m[0]) / fmax(span, 1e-9);
	return best * (double)bytes_per_msg;
}

void perf_trace_free(struct perf_trace *tr)
{
	free(tr->t);
	free(tr->m);
	*tr = (struct perf_trace){0};
}
