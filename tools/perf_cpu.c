/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where the CPU time of a run goes: the user + system time of each thread
 * of this process (/proc/self/task/<tid>/stat), sampled before and after
 * the measured loop. On a machine whose cores the two ends share, a
 * message rate alone cannot say whether the library, the application
 * threads or the peer is the limit; the split per thread can (the
 * `cpu` object of --json).
 */
#define _GNU_SOURCE /* gettid */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

/* utime + stime (fields 14 and 15) in seconds and the thread's name;
 * -1 if the thread has gone. The name sits in parentheses and may hold
 * spaces, so the fields are counted from the last ')'. */
static int task_time(int tid, char *name, size_t len, double *secs)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	unsigned long ut, st;
	if (!open || !close || sscanf(close + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lu %lu",
				      &ut, &st) != 2)
		return -1;
	snprintf(name, len, "%.*s", (int)(close - open - 1), open + 1);
	for (char *c = name; *c; c++) /* it goes into JSON as it is */
		if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
			*c = '_';
	*secs = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

void perf_cpu_sample(struct perf_cpu *c)
{
	memset(c, 0, sizeof(*c));
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d && (e = readdir(d)) && c->n < PERF_CPU_THREADS) {
		struct perf_cpu_thread *t = &c->t[c->n];
		t->tid = atoi(e->d_name);
		if (t->tid > 0 && !task_time(t->tid, t->name, sizeof(t->name), &t->secs))
			c->n++;
	}
	if (d)
		closedir(d);
}

static const struct perf_cpu_thread *find(const struct perf_cpu *c, int tid)
{
	for (int i = 0; i < c->n; i++)
		if (c->t[i].tid == tid)
			return &c->t[i];
	return NULL;
}

/* after - before, per thread (a thread born in between counts from 0). */
void perf_cpu_delta(const struct perf_cpu *before, const struct perf_cpu *after,
		    struct perf_cpu *out)
{
	*out = *after;
	out->total = 0;
	for (int i = 0; i < out->n; i++) {
		const struct perf_cpu_thread *b = find(before, out->t[i].tid);
		if (b)
			out->t[i].secs -= b->secs;
		out->total += out->t[i].secs;
	}
}

/* The calling thread's CPU so far: an application thread of --threads
 * takes it just before it ends, as /proc forgets it after. */
void perf_cpu_self(struct perf_cpu_thread *t)
{
	memset(t, 0, sizeof(*t));
	t->tid = gettid();
	if (task_time(t->tid, t->name, sizeof(t->name), &t->secs))
		t->secs = 0;
}

/* A thread born and gone inside the run: all its time is the run's. */
void perf_cpu_put(struct perf_cpu *c, const struct perf_cpu_thread *t)
{
	if (find(c, t->tid) || c->n >= PERF_CPU_THREADS)
		return;
	c->t[c->n++] = *t;
	c->total += t->secs;
}
