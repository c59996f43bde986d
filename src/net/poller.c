/* poller.c — poll(2) semantics over a persistent epoll set (see poller.h). */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "net/poller.h"
#include "util/util.h"

/* poll and epoll share their bit values on Linux; the translation relies on it */
_Static_assert(POLLIN == EPOLLIN && POLLPRI == EPOLLPRI && POLLOUT == EPOLLOUT && POLLERR == EPOLLERR &&
		       POLLHUP == EPOLLHUP && POLLRDHUP == EPOLLRDHUP,
	       "poll and epoll event bits differ");

struct ent {
	uint32_t reg_id;   /* id of the live registration (0: none) */
	uint32_t events;   /* what it is registered for */
	uint32_t round;    /* the last round that wanted this fd */
	uint32_t revents;  /* this round's answer */
};

struct poller {
	int epfd;
	struct ent *ent;     /* by fd number */
	size_t n_ent;
	size_t max_fd;       /* highest fd ever registered + 1 */
	uint32_t round, next_id;
	struct epoll_event *ev;
	size_t n_ev;
};

int poller_new(struct poller **ret)
{
	int fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct poller *p = xcalloc(1, sizeof(*p));
	p->epfd = fd;
	*ret = p;
	return 0;
}

void poller_free(struct poller *p)
{
	if (!p)
		return;
	close(p->epfd);
	free(p->ent);
	free(p->ev);
	free(p);
}

static struct ent *ent_of(struct poller *p, int fd)
{
	if ((size_t)fd >= p->n_ent) {
		size_t n = p->n_ent ? p->n_ent : 256;
		while (n <= (size_t)fd)
			n *= 2;
		p->ent = xrealloc(p->ent, n * sizeof(*p->ent));
		memset(p->ent + p->n_ent, 0, (n - p->n_ent) * sizeof(*p->ent));
		p->n_ent = n;
	}
	return &p->ent[fd];
}

void poller_fresh(struct poller *p, int fd)
{
	if (fd >= 0 && (size_t)fd < p->n_ent)
		p->ent[fd].reg_id = 0;
}

static void drop(struct poller *p, int fd, struct ent *e)
{
	/* ENOENT/EBADF: the file was closed and left the set by itself */
	epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL);
	e->reg_id = 0;
}

/* Brings fd's registration to `events`. Returns 0, or the revents poll would give an fd that
 * epoll cannot watch. */
static uint32_t want(struct poller *p, int fd, uint32_t events)
{
	struct ent *e = ent_of(p, fd);
	if (e->round == p->round) /* twice in one round: watch the union */
		events |= e->events;
	e->round = p->round;
	e->revents = 0;
	if (e->reg_id && e->events == events)
		return 0;
	if (++p->next_id == 0)
		p->next_id = 1;
	struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)p->next_id << 32 | (uint32_t)fd};
	int r = -1;
	if (e->reg_id)
		r = epoll_ctl(p->epfd, EPOLL_CTL_MOD, fd, &ev);
	if (r < 0) /* new, or the cached registration went with a closed file */
		r = epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev);
	if (r < 0 && errno == EEXIST) /* a registration the cache did not know of */
		r = epoll_ctl(p->epfd, EPOLL_CTL_MOD, fd, &ev);
	if (r < 0) {
		e->reg_id = 0;
		/* poll says a regular file is always ready, and POLLNVAL for a bad fd */
		return errno == EPERM ? events & (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM) : POLLNVAL;
	}
	e->reg_id = p->next_id;
	e->events = events;
	if ((size_t)fd + 1 > p->max_fd)
		p->max_fd = (size_t)fd + 1;
	return 0;
}

int poller_poll(struct poller *p, struct pollfd *pfd, size_t n, int timeout_ms)
{
	p->round++;
	size_t watched = 0;
	bool ready_now = false;
	for (size_t i = 0; i < n; i++) {
		if (pfd[i].fd < 0)
			continue;
		uint32_t now = want(p, pfd[i].fd, (uint16_t)pfd[i].events);
		p->ent[pfd[i].fd].revents = now;
		ready_now |= now != 0;
		watched++;
	}
	/* what this round did not ask for leaves the set (a level-triggered HUP would spin) */
	for (size_t fd = 0; fd < p->max_fd; fd++)
		if (p->ent[fd].reg_id && p->ent[fd].round != p->round)
			drop(p, (int)fd, &p->ent[fd]);
	/* room for every watched fd and a few stale registrations; when even that fills up, the
	 * stale ones may have crowded out live ones: ask again, without waiting */
	if (watched + 8 > p->n_ev) {
		p->n_ev = watched + 8;
		p->ev = xrealloc(p->ev, p->n_ev * sizeof(*p->ev));
	}
	int k, timeout = ready_now ? 0 : timeout_ms;
	for (int again = 0; again < 4; again++, timeout = 0) {
		if ((k = epoll_wait(p->epfd, p->ev, (int)p->n_ev, timeout)) < 0)
			return -errno;
		for (int i = 0; i < k; i++) {
			int fd = (int)(uint32_t)p->ev[i].data.u64;
			uint32_t id = (uint32_t)(p->ev[i].data.u64 >> 32);
			if ((size_t)fd < p->n_ent && p->ent[fd].reg_id == id && p->ent[fd].round == p->round)
				p->ent[fd].revents |= p->ev[i].events;
		}
		if ((size_t)k < p->n_ev)
			break;
		p->n_ev *= 2;
		p->ev = xrealloc(p->ev, p->n_ev * sizeof(*p->ev));
	}
	int ready = 0;
	for (size_t i = 0; i < n; i++) {
		if (pfd[i].fd < 0) {
			pfd[i].revents = 0;
			continue;
		}
		uint32_t r = p->ent[pfd[i].fd].revents;
		pfd[i].revents = (short)(r & ((uint16_t)pfd[i].events | POLLERR | POLLHUP | POLLNVAL));
		ready += pfd[i].revents != 0;
	}
	return ready;
}
