/* session.h — one exec session seen from PID 1: its stdio (a pty, or three pipes that keep
 * stdout and stderr apart), the fork, and the bytes shuttled between the session and the
 * control channel. Bytes are never interpreted. */
#pragma once

#include "guest/env.h"
#include "proto/proto.h"

#define SESSION_CHUNK (64u * 1024u) /* most bytes one STDOUT/STDERR frame carries */
/* After a session's process has exited, its output is drained until EOF, but grandchildren
 * that inherited the pipes (or the pty) may hold them open for ever: give up after this long
 * without data, then send EOF and EXIT. Later output of such processes is lost. */
#define SESSION_DRAIN_MS 100
/* With windows (proto.h): stdin bytes a session may have on their way to it, beyond what its
 * pipe holds. The supervisor gets more credit as the bytes go into the pipe. */
#define SESSION_STDIN_WINDOW (256u * 1024u)

struct session_req {
	char *const *argv;
	char *const *envp;  /* complete environment */
	const char *cwd;    /* or NULL */
	struct guest_user user;
	bool tty;
	uint16_t rows, cols;
	bool setgroups_deny;
	bool keep_caps;     /* a root session of a build box (init.h, root_caps) */
};

struct session {
	uint32_t id;         /* stream id chosen by the supervisor */
	pid_t pid;           /* the session leader; also its process group id */
	bool tty;
	int master;          /* pty master of a tty session (in_fd and out_fd[0] alias it), or -1 */
	int in_fd;           /* the session's stdin: pipe write end or pty master; -1 once closed */
	int out_fd[2];       /* stdout, stderr (pipe read ends; stdout is the master for a tty) */
	bool eof_sent[2];
	struct {
		uint8_t *data;
		size_t len, off;
	} in;                /* STDIN bytes the session has not taken yet */
	bool in_eof;         /* the peer sent EOF(0): close stdin once `in` is written */
	bool windowed;       /* the connection uses windows: the credits below count */
	uint32_t in_credit;  /* stdin bytes the supervisor may still send */
	uint32_t out_credit[2]; /* stdout, stderr bytes we may still send */
	bool exited;
	int status;          /* shell-style exit status, once exited */
	uint64_t deadline;   /* once exited: when to stop waiting for output (monotonic ms) */
};

/* How long PID 1 waits for a session's process to reach execve() (session.c spawn) before
 * it kills one it finds stopped, and before it kills it anyway. The path there is a few
 * syscalls; only a process that was stopped, or a filesystem that hangs, takes seconds. */
#define SESSION_EXEC_DEADLINE_MS 5000
#define SESSION_EXEC_MAX_MS 60000

/* Allocates the session's stdio and starts it (the child execs req->argv). On failure nothing
 * is left behind; -ETIMEDOUT: the child did not reach execve() in time and was killed. */
int session_spawn(const struct session_req *req, uint32_t id, struct session **ret);
void session_free(struct session *s);

/* Bytes for the session's stdin: written now as far as the pipe takes them, the rest kept. */
void session_stdin(struct session *s, const uint8_t *p, size_t n);
void session_stdin_eof(struct session *s);
void session_flush_stdin(struct session *s);
size_t session_stdin_pending(const struct session *s);

/* The peer's reader of stdout (i 0) or stderr (1) is gone: the pipe's read end closes. */
void session_output_gone(struct session *s, int i);
void session_resize(struct session *s, uint16_t rows, uint16_t cols);
void session_signal(struct session *s, int sig);

/* With windows: n more bytes of stdin from the supervisor (-EBADMSG past its credit), and
 * its credit topped up to SESSION_STDIN_WINDOW less what is still waiting for the pipe
 * (once a quarter of it or everything has gone in, so a slow reader costs few frames). */
int session_stdin_take(struct session *s, uint32_t n);
void session_stdin_grant(struct session *s, struct proto_conn *c);
/* With windows: the supervisor grants n more bytes of stdout (i 0) or stderr (1). */
int session_output_grant(struct session *s, int i, uint32_t n);
/* Output i is open but may not be sent now (no credit left): it is not read, and its drain
 * deadline waits. */
bool session_output_held(const struct session *s, int i);

/* Reads one chunk (with windows: at most the credit) from out_fd[i] and queues it as
 * STDOUT/STDERR; at EOF (EIO for a pty) closes the fd and queues EOF(i+1). Returns true if
 * bytes were read. */
bool session_pump(struct session *s, int i, struct proto_conn *c, uint64_t now);
/* The session leader was reaped. */
void session_exited(struct session *s, int status, uint64_t now);
/* Exited, and its output is finished or the drain deadline has passed. */
bool session_done(const struct session *s, uint64_t now);
/* Queues the last frames of the stream: EOF(1) and EOF(2) if not sent yet, then EXIT. */
void session_finish(struct session *s, struct proto_conn *c);
