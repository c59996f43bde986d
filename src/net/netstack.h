/* netstack.h — one box's userspace TCP/IP stack (libslirp) and the glue that drives it from a
 * poll loop: timers, libslirp's sockets, the frames it sends to the box.
 *
 * The stack is configured so that it can reach nothing by itself: restricted=1 (no outbound
 * connection of its own; only registered forwards), its DNS and DHCP disabled, host loopback
 * disabled, IPv6 off. The only ways out are the forwards the supervisor registers with
 * netstack_add_unix() — each ends at a unix socket the supervisor itself listens on — and the
 * published ports (host -> box). See src/net/vnet.h for the addressing. */
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>

#include "util/error.h"

struct netstack;

/* Frames libslirp wants sent to the box. */
typedef void (*netstack_output_fn)(void *opaque, const uint8_t *frame, size_t len);

int netstack_new(netstack_output_fn out, void *opaque, struct netstack **ret, pd_err *err);
/* fn(opaque, fd) for every socket libslirp opens and will ask to poll (its register_poll_fd). */
void netstack_set_fd_hook(struct netstack *ns, void (*fn)(void *opaque, int fd));
void netstack_free(struct netstack *ns);

/* A frame from the box (ARP, or TCP the caller already decided to let in). */
void netstack_input(struct netstack *ns, const uint8_t *frame, size_t len);

/* Registers "box connects to addr:port -> libslirp connects to unix socket path". */
int netstack_add_unix(struct netstack *ns, const char *path, struct in_addr addr, uint16_t port);
/* -p: host haddr:hport -> box:bport. */
int netstack_add_hostfwd(struct netstack *ns, struct in_addr haddr, uint16_t hport, uint16_t bport);

/* Poll integration: appends libslirp's fds to pfd[*n..cap) and lowers *timeout_ms to the next
 * timer; after poll(), netstack_dispatch with the same base index. */
void netstack_fill(struct netstack *ns, struct pollfd *pfd, size_t *n, size_t cap, int *timeout_ms);
void netstack_dispatch(struct netstack *ns, struct pollfd *pfd, size_t base, bool poll_error);
/* The MAC address libslirp uses for its virtual host addr (52:55 + the IPv4 address). */
void netstack_mac_for(uint32_t addr_host_order, uint8_t ret[6]);
