/* session.h — the client end of one exec session: relays the terminal or stdin/stdout/stderr
 * to a peer that speaks the control protocol (a supervisor, or paddock-init directly for
 * `run --rm`), forwards window size changes and signals, and returns the command's status. */
#pragma once

#include "proto/proto.h"
#include "util/error.h"

struct session_req {
	char **argv;
	char **env;        /* KEY=VALUE */
	const char *cwd;   /* NULL = box default */
	const char *user;  /* NULL = box default */
	int tty;           /* 1 = allocate a tty, 0 = pipes, -1 = tty iff stdin is a terminal */
	/* redirect: use these fds instead of the terminal (never a tty); in_fd -1 = no stdin */
	bool redirect;
	int in_fd, out_fd, err_fd;
	/* the command is paddock's own (tar for diff, apply, cp): its stderr names the box's
	 * files, so it is escaped for the terminal (ws_escape) like every other box name */
	bool escape_err;
	/* a lock (STORE_SNAPSHOT_LOCK, shared) closed once the box says the session's process
	 * exists (PROTO_STARTED), or when the session ends; NULL: none */
	int *start_lock;
};

/* Runs the session on fd (handshake done). Returns 0 with *ret_status (the command's exit
 * status, 128+N for signal N), or -errno with err filled (then the caller exits 125). */
int session_run(int fd, uint32_t stream, const struct session_req *req, int *ret_status, pd_err *err);
/* Catches INT, TERM, HUP, QUIT and USR1/2 from now on: a process that boots a box before its
 * session (run --rm) is not killed half-way (its box and cgroups left behind); the signals
 * wait and reach the session's command once it runs, which then ends the run cleanly. */
int session_catch_signals(void);

/* Runs argv as the agent in the running box at box_dir through its supervisor, with in_fd
 * (-1: none) as stdin, out_fd as stdout and our stderr as its stderr. Returns the command's
 * status, or -errno with err filled. */
int session_run_in(const char *box_dir, char **argv, int in_fd, int out_fd, pd_err *err);
/* The same over an open connection that speaks the control protocol: a supervisor's socket,
 * or the box's own control fd in the process that booted it (run --rm). */
int session_run_on(int conn, char **argv, int in_fd, int out_fd, pd_err *err);
