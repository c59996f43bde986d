/* net.h — a box's network in the supervisor: the link (a TAP fd), the frame filter, libslirp,
 * the DNS answerer and the egress engine, driven by one thread with its own event loop.
 *
 * The thread owns every piece (nothing is shared with the supervisor's control loop except
 * the start/stop calls), so the control protocol and the data path cannot stall each other.
 * The policy is the spec's (preset + --allow/--deny) plus the global file
 * ($XDG_CONFIG_HOME/paddock/policy) plus the box's own file (BOX_DIR/policy); the thread
 * stats both files once a second and swaps in the new policy when one changed (a file that
 * does not parse keeps the old policy and says so in supervisor.log). */
#pragma once

#include <stdint.h>
#include <netinet/in.h>
#include <sys/types.h>

#include "egress/policy.h"
#include "supervisor/store.h"

struct sup_net;

/* The box's end of the wire: what carries its Ethernet frames to this stack. The ns backend
 * hands over a TAP fd; another backend (a QEMU datagram socket) brings its own three calls and
 * feeds the same filter, stack and engine. The fd is non-blocking. */
struct sup_net_link {
	const char *what;
	/* one frame into buf: its length, -EAGAIN when none waits, another -errno when the
	 * link is gone (the box's network is then over) */
	ssize_t (*recv)(int fd, uint8_t *buf, size_t cap);
	/* one frame to the box; -errno when it cannot take it now (the frame is dropped, TCP
	 * retransmits) */
	int (*send)(int fd, const uint8_t *frame, size_t len);
	/* the last close */
	void (*close)(int fd);
};
extern const struct sup_net_link sup_net_link_tap;

/* Builds the network of a started box around link_fd (taken over, also on failure). On error
 * the box must not run: err names the "network" layer. */
int sup_net_start_link(const struct box_spec *spec, const char *box_dir, const struct sup_net_link *link,
		       int link_fd, struct sup_net **ret, pd_err *err);
/* Loads the network's libraries (libslirp, http-parser) ahead of sup_net_start, for a caller
 * with time to spare (box_config.while_waiting); sup_net_start reports a missing one. */
void sup_net_preload(void);
/* sup_net_start_link with a TAP fd (the ns backend) and, when proxy_fd >= 0, the explicit
 * proxy's listening socket in the box's own namespace (both taken over, also on failure). */
int sup_net_start(const struct box_spec *spec, const char *box_dir, int tap_fd, int proxy_fd,
		  struct sup_net **ret, pd_err *err);
/* Stops the thread and frees everything (connections are cut). NULL is fine. */
void sup_net_stop(struct sup_net *n);
/* sup_net_stop, but the link fd is returned for the caller to close (-1: none) and the
 * sockets' directory beneath the box's is left for the caller's removal of the box dir. */
int sup_net_stop_keep_link(struct sup_net *n);

/* Appends what every session of a networked box gets: HTTP_PROXY, HTTPS_PROXY, http_proxy,
 * https_proxy (the explicit proxy) and NO_PROXY/no_proxy=localhost,127.0.0.1. */
char **sup_net_proxy_env(char **env);

/* The global policy file the box's supervisor follows (BOX_DIR/policy.global), or NULL when
 * none is recorded; malloc'd. */
char *sup_net_box_global_record(const char *box_dir);
/* $XDG_CONFIG_HOME/paddock/policy (or ~/.config/paddock/policy); malloc'd. */
char *sup_net_global_policy_path(void);
/* The policy a box runs with now (spec + global file + box file). */
int sup_net_load_policy(const struct box_spec *spec, const char *box_dir, struct egress_policy **ret,
			pd_err *err);

/* Parses a -p value ([HOSTADDR:]HOSTPORT:BOXPORT, IPv4, ports 1-65535). Pure: the CLI checks
 * it before anything is created, the network layer uses it when it publishes. */
int sup_net_parse_publish(const char *spec, struct in_addr *ret_host, uint16_t *ret_hp, uint16_t *ret_bp,
			  pd_err *err);
