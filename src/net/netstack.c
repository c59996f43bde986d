/* netstack.c — libslirp glue. */
#include <arpa/inet.h>
#include <slirp/libslirp.h>
#include <string.h>
#include <time.h>

#include "net/netstack.h"
#include "net/vnet.h"
#include "util/util.h"

#define NETSTACK_TIMERS_MAX 16

struct ns_timer {
	bool used, armed;
	SlirpTimerId id;
	void *cb_opaque;
	int64_t expire_ms;
};

struct netstack {
	Slirp *slirp;
	netstack_output_fn out;
	void (*fd_hook)(void *opaque, int fd);
	void *opaque;
	struct ns_timer timers[NETSTACK_TIMERS_MAX];
	/* during fill/dispatch */
	struct pollfd *pfd;
	size_t base, n, cap;
};

static ssize_t cb_send(const void *buf, size_t len, void *opaque)
{
	struct netstack *ns = opaque;
	ns->out(ns->opaque, buf, len);
	return (ssize_t)len;
}

static void cb_guest_error(const char *msg, void *opaque)
{
	(void)msg, (void)opaque;
}

static int64_t cb_clock(void *opaque)
{
	(void)opaque;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *cb_timer_new_opaque(SlirpTimerId id, void *cb_opaque, void *opaque)
{
	struct netstack *ns = opaque;
	for (size_t i = 0; i < NETSTACK_TIMERS_MAX; i++)
		if (!ns->timers[i].used) {
			ns->timers[i] = (struct ns_timer){.used = true, .id = id, .cb_opaque = cb_opaque};
			return &ns->timers[i];
		}
	return NULL;
}

static void *cb_timer_new(SlirpTimerCb cb, void *cb_opaque, void *opaque)
{
	(void)cb, (void)cb_opaque, (void)opaque;
	return NULL; /* never called: timer_new_opaque is provided (config version 4) */
}

static void cb_timer_free(void *timer, void *opaque)
{
	(void)opaque;
	if (timer)
		memset(timer, 0, sizeof(struct ns_timer));
}

static void cb_timer_mod(void *timer, int64_t expire_ms, void *opaque)
{
	(void)opaque;
	struct ns_timer *t = timer;
	if (t) {
		t->armed = true;
		t->expire_ms = expire_ms;
	}
}

static void cb_register_fd(int fd, void *opaque)
{
	struct netstack *ns = opaque;
	if (ns->fd_hook)
		ns->fd_hook(ns->opaque, fd);
}

static void cb_unregister_fd(int fd, void *opaque) { (void)fd, (void)opaque; }
static void cb_notify(void *opaque) { (void)opaque; }

static const SlirpCb callbacks = {
	.send_packet = cb_send,
	.guest_error = cb_guest_error,
	.clock_get_ns = cb_clock,
	.timer_new = cb_timer_new,
	.timer_free = cb_timer_free,
	.timer_mod = cb_timer_mod,
	.register_poll_fd = cb_register_fd,
	.unregister_poll_fd = cb_unregister_fd,
	.notify = cb_notify,
	.timer_new_opaque = cb_timer_new_opaque,
};

int netstack_new(netstack_output_fn out, void *opaque, struct netstack **ret, pd_err *err)
{
	struct netstack *ns = xcalloc(1, sizeof(*ns));
	ns->out = out;
	ns->opaque = opaque;
	SlirpConfig cfg = {
		.version = 4,
		/* no connection of its own: only the forwards we register reach anything */
		.restricted = 1,
		.in_enabled = true,
		.vnetwork = {htonl(VNET_NETWORK)},
		.vnetmask = {htonl(VNET_NETMASK)},
		.vhost = {htonl(VNET_GATEWAY)},
		.in6_enabled = false,
		.vdhcp_start = {htonl(VNET_BOX)},
		.vnameserver = {htonl(VNET_SLIRP_NAMESERVER)},
		.if_mtu = VNET_MTU,
		.if_mru = VNET_MTU,
		.disable_host_loopback = true,
		.enable_emu = false,
		.disable_dns = true,
		.disable_dhcp = true,
	};
	ns->slirp = slirp_new(&cfg, &callbacks, ns);
	if (!ns->slirp) {
		free(ns);
		return pd_error_msg(err, EIO, "network layer: cannot create the box's network stack (libslirp)");
	}
	*ret = ns;
	return 0;
}

void netstack_set_fd_hook(struct netstack *ns, void (*fn)(void *opaque, int fd)) { ns->fd_hook = fn; }

void netstack_free(struct netstack *ns)
{
	if (!ns)
		return;
	slirp_cleanup(ns->slirp);
	free(ns);
}

void netstack_input(struct netstack *ns, const uint8_t *frame, size_t len)
{
	slirp_input(ns->slirp, frame, (int)len);
}

int netstack_add_unix(struct netstack *ns, const char *path, struct in_addr addr, uint16_t port)
{
	return slirp_add_unix(ns->slirp, path, &addr, port) < 0 ? -EADDRINUSE : 0;
}

int netstack_add_hostfwd(struct netstack *ns, struct in_addr haddr, uint16_t hport, uint16_t bport)
{
	struct in_addr box = {htonl(VNET_BOX)};
	return slirp_add_hostfwd(ns->slirp, 0, haddr, hport, box, bport) < 0 ? -EADDRINUSE : 0;
}

static int cb_add_poll(int fd, int events, void *opaque)
{
	struct netstack *ns = opaque;
	if (ns->n >= ns->cap)
		return -1;
	short ev = 0;
	if (events & SLIRP_POLL_IN)
		ev |= POLLIN;
	if (events & SLIRP_POLL_OUT)
		ev |= POLLOUT;
	if (events & SLIRP_POLL_PRI)
		ev |= POLLPRI;
	ns->pfd[ns->n] = (struct pollfd){.fd = fd, .events = ev};
	return (int)(ns->n++ - ns->base);
}

void netstack_fill(struct netstack *ns, struct pollfd *pfd, size_t *n, size_t cap, int *timeout_ms)
{
	uint32_t t = (uint32_t)(*timeout_ms < 0 ? 1000 : *timeout_ms);
	ns->pfd = pfd;
	ns->base = ns->n = *n;
	ns->cap = cap;
	slirp_pollfds_fill(ns->slirp, &t, cb_add_poll, ns);
	int64_t now = mono_ms();
	for (size_t i = 0; i < NETSTACK_TIMERS_MAX; i++)
		if (ns->timers[i].used && ns->timers[i].armed) {
			int64_t d = ns->timers[i].expire_ms - now;
			if (d < (int64_t)t)
				t = d < 0 ? 0 : (uint32_t)d;
		}
	*timeout_ms = (int)t;
	*n = ns->n;
}

static int cb_get_revents(int idx, void *opaque)
{
	struct netstack *ns = opaque;
	if (idx < 0 || ns->base + (size_t)idx >= ns->n)
		return 0;
	short r = ns->pfd[ns->base + (size_t)idx].revents;
	int ev = 0;
	if (r & POLLIN)
		ev |= SLIRP_POLL_IN;
	if (r & POLLOUT)
		ev |= SLIRP_POLL_OUT;
	if (r & POLLPRI)
		ev |= SLIRP_POLL_PRI;
	if (r & POLLERR)
		ev |= SLIRP_POLL_ERR;
	if (r & POLLHUP)
		ev |= SLIRP_POLL_HUP;
	return ev;
}

void netstack_dispatch(struct netstack *ns, struct pollfd *pfd, size_t base, bool poll_error)
{
	ns->pfd = pfd;
	ns->base = base;
	slirp_pollfds_poll(ns->slirp, poll_error ? 1 : 0, cb_get_revents, ns);
	int64_t now = mono_ms();
	for (size_t i = 0; i < NETSTACK_TIMERS_MAX; i++) {
		struct ns_timer *t = &ns->timers[i];
		if (t->used && t->armed && t->expire_ms <= now) {
			t->armed = false;
			slirp_handle_timer(ns->slirp, t->id, t->cb_opaque);
		}
	}
}

void netstack_mac_for(uint32_t a, uint8_t ret[6])
{
	/* libslirp answers as 52:55:IP:IP:IP:IP of the address it speaks for */
	ret[0] = 0x52;
	ret[1] = 0x55;
	ret[2] = (uint8_t)(a >> 24);
	ret[3] = (uint8_t)(a >> 16);
	ret[4] = (uint8_t)(a >> 8);
	ret[5] = (uint8_t)a;
}
