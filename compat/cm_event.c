/* SPDX-License-Identifier: BSD-2-Clause */
/* Event channels and the dispatcher that fills them. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cm.h"

CV_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	int err = cm_global_init();
	struct cm_chan *ch = err ? NULL : calloc(1, sizeof(*ch));

	if (!ch) {
		errno = err ? err : ENOMEM;
		return NULL;
	}
	ch->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		err = errno;
		free(ch);
		errno = err;
		return NULL;
	}
	ch->tail = &ch->head;
	return &ch->ch;
}

static void chan_free(struct cm_chan *ch)
{
	close(ch->ch.fd);
	free(ch);
}

/*
 * A thread still waiting in rdma_get_cm_event keeps the channel: on rdma-core
 * it stays blocked in the kernel until the process ends. Closing the eventfd
 * under it would instead fail its next read with EBADF (rping's cm thread,
 * woken for an event that rdma_destroy_id then purged, reads again after
 * main has destroyed the channel, and exits with "Bad file descriptor").
 * So the fd stays open and the last reader out frees the channel.
 */
CV_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (!channel)
		return;
	struct cm_chan *ch = cm_chan_of(channel);
	pthread_mutex_lock(&cm_g.lock);
	bool busy = ch->readers > 0;
	ch->dead = busy;
	pthread_mutex_unlock(&cm_g.lock);
	if (!busy)
		chan_free(ch); /* rdma-core's rule: ids and events are gone by now */
}

/* Under cm_g.lock. */
void cm_enqueue(struct cm_chan *ch, struct cm_event *e)
{
	uint64_t one = 1;

	e->next = NULL;
	*ch->tail = e;
	ch->tail = &e->next;
	if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
		abort(); /* an eventfd write fails only on overflow of 2^64 - 2 */
}

static struct cm_event *cm_pop(struct cm_chan *ch)
{
	struct cm_event *e = ch->head;

	if (e) {
		ch->head = e->next;
		if (!ch->head)
			ch->tail = &ch->head;
	}
	return e;
}

static void cm_event_free(struct cm_event *e)
{
	if (e->iw)
		iw_cm_ack_event(e->iw);
	free(e);
}

/* An event is purged: its eventfd count must not deliver anything. If the
 * fd holds a count, a reader skips one (debt) instead of this thread
 * reading it: a reader blocked in read(2) could take that count between
 * our poll and our read, and our read would then block for ever holding
 * cm_g.lock, which that reader waits for (rping's client hung so in
 * rdma_destroy_id). No count left: a reader already took this event's and
 * finds the queue empty. Under cm_g.lock. */
static void cm_uncount(struct cm_chan *ch)
{
	struct pollfd p = {.fd = ch->ch.fd, .events = POLLIN};

	if (poll(&p, 1, 0) == 1)
		ch->debt++;
}

/* Drop what id has queued (it is being destroyed or moved): its own events,
 * and the CONNECT_REQUESTs of a listener, whose new ids go with them.
 * Under cm_g.lock. */
void cm_purge(struct cm_chan *ch, struct cm_id *id)
{
	struct cm_event **p = &ch->head;

	while (*p) {
		struct cm_event *e = *p;
		if (e->owner != id && !(e->ev.listen_id == &id->id &&
					e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST)) {
			p = &e->next;
			continue;
		}
		*p = e->next;
		cm_uncount(ch);
		struct cm_id *child = e->owner != id ? e->owner : NULL;
		cm_event_free(e);
		if (child) {
			cm_purge(ch, child);
			cm_unregister(child);
			iw_cm_destroy_id(child->iw);
			free(child);
		}
	}
	cm_fix_tail(ch);
}

void cm_fix_tail(struct cm_chan *ch)
{
	ch->tail = &ch->head;
	for (struct cm_event *e = ch->head; e; e = e->next)
		ch->tail = &e->next;
}

/* Under cm_g.lock: the event for a woken reader, if one is left. */
static struct cm_event *take_event(struct cm_chan *ch)
{
	struct cm_event *e = cm_pop(ch);

	if (e) {
		e->owner->held++;
		e->owner->id.event = &e->ev;
	}
	return e;
}

/* A reader leaves (cm_g.lock held on entry, released here); the last one
 * out of a destroyed channel frees it. */
static void reader_leave(struct cm_chan *ch)
{
	bool last_of_dead = --ch->readers == 0 && ch->dead;

	pthread_mutex_unlock(&cm_g.lock);
	if (last_of_dead)
		chan_free(ch);
}

CV_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	uint64_t v;
	struct cm_event *e = NULL;

	if (!channel || !event)
		return cm_ret(EINVAL);
	struct cm_chan *ch = cm_chan_of(channel);
	pthread_mutex_lock(&cm_g.lock);
	ch->readers++;
	pthread_mutex_unlock(&cm_g.lock);
	while (!e) {
		int rc = (int)read(ch->ch.fd, &v, sizeof(v));
		int err = errno;
		pthread_mutex_lock(&cm_g.lock);
		if (rc >= 0 && ch->debt) { /* the count of a purged event */
			ch->debt--;
			pthread_mutex_unlock(&cm_g.lock);
			continue;
		}
		e = rc < 0 ? NULL : take_event(ch);
		if (rc < 0) { /* EAGAIN on a nonblocking fd, EINTR */
			reader_leave(ch);
			errno = err;
			return -1;
		}
		if (!e)
			pthread_mutex_unlock(&cm_g.lock);
	}
	reader_leave(ch);
	*event = &e->ev;
	return 0;
}

CV_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return cm_ret(EINVAL);
	struct cm_event *e = cv_container_of(event, struct cm_event, ev);
	pthread_mutex_lock(&cm_g.lock);
	e->owner->held--;
	if (e->owner->id.event == event)
		e->owner->id.event = NULL;
	pthread_cond_broadcast(&cm_g.acked);
	pthread_mutex_unlock(&cm_g.lock);
	cm_event_free(e);
	return 0;
}

CV_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};
	if ((unsigned int)event < sizeof(names) / sizeof(names[0]) && names[event])
		return names[event];
	return "UNKNOWN EVENT";
}

/* An event made here, queued on id's channel. */
int cm_post_local(struct cm_id *id, enum rdma_cm_event_type type, int status)
{
	struct cm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return ENOMEM;
	e->ev = (struct rdma_cm_event){.id = &id->id, .event = type, .status = status};
	e->owner = id;
	pthread_mutex_lock(&cm_g.lock);
	cm_enqueue(id->chan, e);
	pthread_mutex_unlock(&cm_g.lock);
	return 0;
}
