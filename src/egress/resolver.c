/* resolver.c — getaddrinfo on worker threads (see resolver.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "egress/dial.h"
#include "util/thread.h"
#include "egress/name.h"
#include "egress/resolver.h"
#include "util/util.h"

struct req {
	struct req *next;
	uint64_t id;
	uint16_t port;
	char name[EGRESS_NAME_MAX + 1];
	struct egress_resolved ans;
};

/* shared by the owner and the workers; freed by whoever drops the last reference */
struct egress_resolver {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct req *todo, **todo_tail; /* FIFO */
	struct req *done, **done_tail;
	size_t queued;
	int efd;
	egress_resolve_fn fn;
	unsigned refs, threads, idle;
	bool stopping;
};

static void req_free_list(struct req *q)
{
	while (q) {
		struct req *n = q->next;
		free(q);
		q = n;
	}
}

/* under the lock; true when this was the last reference */
static bool unref_locked(struct egress_resolver *r)
{
	return --r->refs == 0;
}

static void destroy(struct egress_resolver *r)
{
	req_free_list(r->todo);
	req_free_list(r->done);
	close(r->efd);
	pthread_cond_destroy(&r->work);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static void *worker(void *arg)
{
	struct egress_resolver *r = arg;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->todo && !r->stopping) {
			r->idle++;
			pthread_cond_wait(&r->work, &r->lock);
			r->idle--;
		}
		if (r->stopping)
			break;
		struct req *q = r->todo;
		r->todo = q->next;
		if (!r->todo)
			r->todo_tail = &r->todo;
		pthread_mutex_unlock(&r->lock);
		q->ans.reason = "unreachable";
		q->ans.err = r->fn(q->name, q->port, &q->ans.addr, &q->ans.len, &q->ans.reason);
		pthread_mutex_lock(&r->lock);
		if (r->stopping) {
			free(q);
			break;
		}
		q->next = NULL;
		*r->done_tail = q;
		r->done_tail = &q->next;
		uint64_t one = 1;
		(void)!write(r->efd, &one, sizeof(one));
	}
	bool last = unref_locked(r);
	pthread_mutex_unlock(&r->lock);
	if (last)
		destroy(r);
	return NULL;
}

/* No map here: the engine answered --resolve names itself. Only the host's answer, vetted
 * (no loopback, private, link-local, ... address is ever returned). */
static int host_resolve(const char *canon_name, uint16_t port, struct sockaddr_storage *ret, socklen_t *ret_len,
			const char **ret_reason)
{
	bool explicit_ = false;
	return egress_resolve(NULL, canon_name, port, ret, ret_len, &explicit_, ret_reason);
}

int egress_resolver_new(struct egress_resolver **ret)
{
	return egress_resolver_new_with(host_resolve, ret);
}

int egress_resolver_new_with(egress_resolve_fn fn, struct egress_resolver **ret)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return -errno;
	struct egress_resolver *r = xcalloc(1, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->work, NULL);
	r->todo_tail = &r->todo;
	r->done_tail = &r->done;
	r->efd = efd;
	r->fn = fn;
	r->refs = 1;
	*ret = r;
	return 0;
}

void egress_resolver_free(struct egress_resolver *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_broadcast(&r->work);
	bool last = unref_locked(r);
	pthread_mutex_unlock(&r->lock);
	if (last)
		destroy(r);
}

int egress_resolver_fd(const struct egress_resolver *r) { return r->efd; }

/* under the lock: one more worker when every running one is busy */
static int grow_locked(struct egress_resolver *r)
{
	if (r->idle > 0 || r->threads >= EGRESS_RESOLVER_THREADS)
		return 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 512 * 1024);
	pthread_t t;
	int e = thread_start_quiet(&t, &attr, worker, r);
	pthread_attr_destroy(&attr);
	if (e < 0)
		return r->threads > 0 ? 0 : e; /* the running ones will get to it */
	r->threads++;
	r->refs++;
	return 0;
}

int egress_resolver_submit(struct egress_resolver *r, uint64_t id, const char *canon_name, uint16_t port)
{
	pthread_mutex_lock(&r->lock);
	int e = r->queued >= EGRESS_RESOLVER_QUEUE_MAX ? -EAGAIN : grow_locked(r);
	if (e == 0) {
		struct req *q = xcalloc(1, sizeof(*q));
		q->id = q->ans.id = id;
		q->port = port;
		snprintf(q->name, sizeof(q->name), "%s", canon_name);
		*r->todo_tail = q;
		r->todo_tail = &q->next;
		r->queued++;
		pthread_cond_signal(&r->work);
	}
	pthread_mutex_unlock(&r->lock);
	return e;
}

int egress_resolver_next(struct egress_resolver *r, struct egress_resolved *ret)
{
	uint64_t n;
	(void)!read(r->efd, &n, sizeof(n)); /* drained: every answer below is taken in turn */
	pthread_mutex_lock(&r->lock);
	struct req *q = r->done;
	if (q) {
		r->done = q->next;
		if (!r->done)
			r->done_tail = &r->done;
		r->queued--;
	}
	pthread_mutex_unlock(&r->lock);
	if (!q)
		return 0;
	*ret = q->ans;
	free(q);
	return 1;
}
