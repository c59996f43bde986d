/* poller.h — the network thread's wait for readiness: poll(2)'s contract on an array of
 * struct pollfd, kept in an epoll set from one round to the next.
 *
 * Why: a box's network thread waits on three fds per connection (libslirp's socket, the
 * engine's box and upstream sockets). poll(2) sets up and tears down a wait on every one of
 * them every round, and every connection costs a few rounds, so opening n connections cost
 * O(n²) in the kernel (1,000 connections from one box: 17 s on a loaded machine, most of it
 * in poll). Here a round costs one epoll_ctl per fd whose interest changed and one
 * epoll_wait that returns only ready fds.
 *
 * The cache is keyed by fd number, so a number reused for a new file must be announced with
 * poller_fresh() before it is next polled (the kernel drops a closed file from the set, but
 * the cache would still say "registered"). Every registration carries its own id in the
 * event's data, so an event from a stale registration (a closed file kept open by a forked
 * child) is recognised and ignored. An fd left out of a round is removed from the set. */
#pragma once

#include <poll.h>
#include <stddef.h>

struct poller;

int poller_new(struct poller **ret);
void poller_free(struct poller *p);

/* fd is a new file in this thread (created, accepted, received): forget what was cached for
 * its number. */
void poller_fresh(struct poller *p, int fd);

/* poll(2) on pfd[0..n): negative fds are skipped; an fd that cannot be watched (EBADF, EPERM
 * for a regular file) gets POLLNVAL. Returns how many entries have revents, 0 on timeout,
 * -errno. */
int poller_poll(struct poller *p, struct pollfd *pfd, size_t n, int timeout_ms);
