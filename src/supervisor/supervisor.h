/* supervisor.h — one supervisor per running sandbox: owns the box (through a runtime), its
 * control socket, the exec sessions relayed between CLI clients and paddock-init, and the
 * box's state on disk. Detached for persistent sandboxes; `run --rm` drives a box in-process
 * through box_boot()/box_shutdown() without a socket. */
#pragma once

#include <signal.h>

#include "proto/proto.h"
#include "supervisor/store.h"

#define SUP_BOOT_TIMEOUT_MS 120000
#define SUP_STOP_TIMEOUT_MS 5000
/* how much longer than its stop timeout a box may take to end before the supervisor kills it */
#define SUP_STOP_GRACE_MS 3000

const struct runtime_ops *runtime_by_name(const char *name, pd_err *err);

/* A started box with the HELLO exchange done. */
struct box {
	const struct runtime_ops *rt;
	struct box_handle h;
	struct box_config cfg;
	bool restored; /* vm: from a template (see box_boot) */
	int exit_status; /* PID 1's (vm: QEMU's) wait status once box_shutdown reaped it, else -1 */
};

struct sup_net;
/* Starts the box described by spec, its network (when the runtime gave it an interface:
 * *ret_net, else NULL; stop it with sup_net_stop) and completes the protocol handshake with
 * its init. On failure nothing is left running. */
int box_boot(const struct box_spec *spec, const char *box_dir, struct box *ret, struct sup_net **ret_net, pd_err *err);
/* What the start of b has to tell its user (the accelerator a probe boot just chose, a
 * writable bind it could not idmap), as lines
 * "paddock: note: …\n", or NULL. box_boot prints them on its stderr; a detached supervisor,
 * whose stderr is the box's log, also hands them to supervisor_spawn's caller. log_of: the
 * box's name when the details PADDOCK_DEBUG=1 adds go to its log, else NULL. */
char *box_boot_notes(const struct box *b, const char *log_of);
/* SIGKILLs the whole box and returns at once (the kernel tears it down meanwhile); finish
 * with box_shutdown. */
void box_kill(struct box *b);
/* Stops the box: graceful STOP with a timeout when graceful, then kill, reap and clean up. */
void box_shutdown(struct box *b, bool graceful, uint32_t timeout_ms);
/* The end of a killed box (box_kill) left to one detached process, for a caller about to exit
 * (run --rm): it waits for PID 1 to finish exiting — freeing the box's memory, 170 ms for one
 * holding a 326 MB workspace — runs the backend's cleanup, closes link (or -1) and removes dir
 * (or NULL). False, with nothing done, when the backend cannot be cleaned up from another
 * process (then box_shutdown). Call only while single-threaded. */
bool box_shutdown_later(struct box *b, int link, const char *dir);

/* Merges the box's defaults (spec env, user, workdir) into a client's exec request and
 * re-encodes it. Pure. */
void sup_merge_exec(const struct box_spec *spec, const struct proto_exec *req, struct proto_buf *out);

/* Forks a detached supervisor for the box at box_dir and waits until it reports ready (the
 * box is up and its control socket listening) or failed (err holds the supervisor's message).
 * The notes of a start that succeeded (box_boot_notes) are printed on this process's stderr,
 * as box_boot prints them for a box run in-process. */
int supervisor_spawn(const char *box_dir, pd_err *err);

/* Connects to a running box's control socket and completes the handshake. */
int sup_connect(const char *box_dir, pd_err *err);

/* The protocol minor version that this process and the last peer it greeted both speak (the
 * lower of the two they announced): with paddock-init for a supervisor (and for `run --rm`,
 * its own supervisor), with the supervisor for a CLI. A frame that needs a newer minor is sent
 * only to a peer that speaks it, and windows are used only when both do (proto.h). */
extern uint16_t sup_peer_minor;

/* Set (to the signal's number) by a process that boots a box in its own signal handler
 * (`run --rm`): box_boot gives up waiting for the guest's greeting within 100 ms. */
extern volatile sig_atomic_t box_boot_cancel;
