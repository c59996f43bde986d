/* init.h — paddock-init's state, shared by its modules: init.c (startup, the event loop),
 * dispatch.c (frames from the supervisor), session.c (one exec session), reap.c (SIGCHLD)
 * and stop.c (ending the box). */
#pragma once

#include "guest/session.h"
#include "proto/proto.h"

#define INIT_MAX_SESSIONS 256
/* Bytes queued for the supervisor (or for one session's stdin) beyond which we stop reading
 * session output (or the control channel) until they drain. With windows (proto.h) a
 * session's stdin never holds that much, and the first is a safety net: the supervisor reads
 * the channel whatever its clients do. */
#define INIT_BACKLOG_MAX (1024u * 1024u)

/* The environment contract with the runtime; see init.c. */
struct init_contract {
	int ctl_fd;
	uid_t agent_uid;
	gid_t agent_gid;
	bool root_ok;
	/* image builds (PADDOCK_ROOT_CAPS=1, set only by the runtime for a build box): root
	 * sessions keep the box's bounding set instead of losing every capability */
	bool root_caps;
	char hostname[65];
};

struct init {
	struct init_contract env;
	struct proto_conn ctl;
	int sigfd;
	bool pid1;            /* false in the test harness: then we are a child subreaper */
	bool hello_seen;
	bool windowed;        /* the supervisor announced PROTO_MINOR_WINDOW: sessions use credit */
	bool setgroups_deny;
	struct session *sessions[INIT_MAX_SESSIONS];
	size_t n_sessions;
};

/* One line "paddock-init: ..." to our stderr: the box console, or /dev/null. */
void init_log(const char *fmt, ...) _printf_(1, 2);
uint64_t init_now_ms(void);
/* Kills every process of the box and exits with code (supervisor gone, protocol error). */
_noreturn_ void init_die(struct init *in, int code);

struct session *init_session_find(struct init *in, uint32_t id);
struct session *init_session_by_pid(struct init *in, pid_t pid);

/* dispatch.c: handles one frame from the supervisor; <0 is a protocol error. */
int dispatch_frame(struct init *in, const struct proto_frame *f);

/* reap.c: reaps every child that has exited; returns true when no child is left at all. */
bool reap_children(struct init *in);

/* stop.c */
void kill_all(bool pid1, int sig);
/* Graceful stop: SIGTERM to everything, up to timeout_ms to exit, then SIGKILL; every session
 * ends with its EXIT; then ACK on stream 0 when ack is set, and exit(0). */
_noreturn_ void stop_box(struct init *in, uint32_t timeout_ms, bool ack);
