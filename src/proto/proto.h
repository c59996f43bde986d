/* proto.h — paddock's control protocol: one framed binary format used CLI↔supervisor and
 * supervisor↔paddock-init (socketpair or unix socket for ns/gvisor, virtio-serial for vm).
 *
 * Frame = 12-byte header + payload, all integers little-endian:
 *     u16 type | u16 flags | u32 stream | u32 len | len bytes of payload
 * len is capped at PROTO_MAX_PAYLOAD. The first frame each side sends is HELLO (magic +
 * version); a peer whose major version differs is refused. An unknown type, a payload of the
 * wrong shape or an oversized length is a protocol error: the connection is closed and the
 * event logged. Structured payloads (EXEC, ERROR, INFO) are TLV lists: u16 tag | u32 len |
 * bytes, with caps on counts. Everything here is pure (no I/O) except proto_conn_*. */
#pragma once

#include "util/util.h"

#define PROTO_MAGIC 0x4b434450u /* "PDCK" */
#define PROTO_VERSION_MAJOR 1
/* 1: an EOF(1|2) sent towards the box says the reader of that output went away (minor 0
 * peers end the box on it: a sender checks the peer's minor first)
 * 2: per-stream credit (WINDOW), used on a connection only when both ends announce it */
#define PROTO_VERSION_MINOR 2
#define PROTO_MINOR_OUTPUT_GONE 1
#define PROTO_MINOR_WINDOW 2
#define PROTO_HDR_SIZE 12u
#define PROTO_MAX_PAYLOAD (256u * 1024u)
#define PROTO_MAX_ARGS 4096u
#define PROTO_MAX_ENV 4096u
#define PROTO_MAX_STR 65536u

enum proto_type {
	PROTO_INVALID = 0,
	PROTO_HELLO,    /* u32 magic, u16 major, u16 minor */
	PROTO_EXEC,     /* TLV exec request; stream = new session id chosen by the requester */
	PROTO_STARTED,  /* u32 pid of the session's process (inside the box) */
	PROTO_STDIN,    /* raw bytes */
	PROTO_STDOUT,   /* raw bytes */
	PROTO_STDERR,   /* raw bytes */
	PROTO_EOF,      /* u8 fd: the sender closed this stream (0 = stdin, 1 = stdout, 2 = stderr);
			 * towards the box, 1 and 2 say the reader of that output went away */
	PROTO_RESIZE,   /* u16 rows, u16 cols */
	PROTO_SIGNAL,   /* u32 signal number, delivered to the session's process group */
	PROTO_EXIT,     /* i32 exit status (shell-style: code, or 128+N for signal N) */
	PROTO_STOP,     /* stream 0: stop the box (graceful), u32 timeout ms */
	PROTO_ERROR,    /* TLV: ERRNO (i32), MESSAGE (string); ends the stream it names */
	PROTO_INFO,     /* stream 0: request/answer box information (TLV, key=value strings) */
	PROTO_ACK,      /* generic success answer for stream-0 requests */
	PROTO_WINDOW,   /* u8 fd, u32 n: the receiver of that stream's data takes n more bytes of it
			 * (minor 2; see "Flow control" below; an older peer ends on it) */
	PROTO_TYPE_MAX,
};

enum proto_tag {
	PROTO_TAG_INVALID = 0,
	PROTO_TAG_ARG,     /* string, repeated, in order */
	PROTO_TAG_ENV,     /* "KEY=VALUE", repeated */
	PROTO_TAG_CWD,     /* string */
	PROTO_TAG_USER,    /* string: "agent" or "root" */
	PROTO_TAG_TTY,     /* u8 0/1 */
	PROTO_TAG_ROWS,    /* u16 */
	PROTO_TAG_COLS,    /* u16 */
	PROTO_TAG_ERRNO,   /* i32 */
	PROTO_TAG_MESSAGE, /* string */
	PROTO_TAG_KV,      /* "key=value" */
	PROTO_TAG_MAX,
};

struct proto_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t stream;
	uint32_t len;
};

struct proto_frame {
	struct proto_hdr hdr;
	const uint8_t *payload; /* points into the reader's buffer; valid until the next read */
};

/* An exec request, decoded. Strings point into the frame payload (no copies). */
/* Decoded EXEC: argv[0..argc] and envp[0..envc] are set (the last of each NULL); entries
 * past them are left as they were (proto_decode_exec does not clear 64 KiB it will not use) */
struct proto_exec {
	const char *argv[PROTO_MAX_ARGS + 1];
	size_t argc;
	const char *envp[PROTO_MAX_ENV + 1];
	size_t envc;
	const char *cwd;  /* may be NULL */
	const char *user; /* may be NULL = box default */
	bool tty;
	uint16_t rows, cols;
};

const char *proto_type_name(uint16_t type);

/* Header codec. proto_decode_hdr validates type and length: -EBADMSG for an unknown type,
 * -EMSGSIZE for len > PROTO_MAX_PAYLOAD. */
void proto_encode_hdr(uint8_t out[PROTO_HDR_SIZE], const struct proto_hdr *h);
int proto_decode_hdr(const uint8_t in[PROTO_HDR_SIZE], struct proto_hdr *ret);

/* Parses one frame from buf. Returns 1 and fills *ret and *ret_used when a whole frame is there,
 * 0 when more bytes are needed, or a negative errno for a malformed frame. */
int proto_parse(const uint8_t *buf, size_t len, struct proto_frame *ret, size_t *ret_used);

/* Fixed-shape payload helpers. Decoders return -EBADMSG on a wrong length. */
void proto_put_u16(uint8_t *p, uint16_t v);
void proto_put_u32(uint8_t *p, uint32_t v);
uint16_t proto_get_u16(const uint8_t *p);
uint32_t proto_get_u32(const uint8_t *p);
int proto_decode_hello(const struct proto_frame *f, uint16_t *ret_major, uint16_t *ret_minor);
int proto_decode_u32(const struct proto_frame *f, uint32_t *ret);
int proto_decode_resize(const struct proto_frame *f, uint16_t *ret_rows, uint16_t *ret_cols);
/* Linux's signals are 1..64 (_NSIG 65) */
#define PROTO_MAX_SIGNAL 65u
/* A session's input frame as paddock-init accepts it: STDIN (any bytes), EOF (one byte,
 * 0..2), RESIZE (rows, cols), SIGNAL (1..64), WINDOW (for stdout or stderr; only on a
 * connection that uses windows, which the caller checks). 0 or -EBADMSG. The supervisor checks a
 * client's frames with it before it passes them on: paddock-init ends the box on a bad one. */
int proto_check_input(const struct proto_frame *f);

/* TLV builder: a growable buffer. */
struct proto_buf {
	uint8_t *data;
	size_t len, cap;
};
void proto_buf_free(struct proto_buf *b);
void proto_buf_put(struct proto_buf *b, const void *p, size_t n); /* appends n bytes */
void proto_tlv_put(struct proto_buf *b, uint16_t tag, const void *v, uint32_t len);
void proto_tlv_put_str(struct proto_buf *b, uint16_t tag, const char *s);
void proto_tlv_put_u16(struct proto_buf *b, uint16_t tag, uint16_t v);
void proto_tlv_put_u32(struct proto_buf *b, uint16_t tag, uint32_t v);

/* TLV iterator over a payload. Returns 1 with an item, 0 at the end, -EBADMSG if truncated. */
struct proto_tlv_iter {
	const uint8_t *p;
	size_t left;
};
int proto_tlv_next(struct proto_tlv_iter *it, uint16_t *ret_tag, const uint8_t **ret_val, uint32_t *ret_len);
/* A TLV string value must be non-empty-safe: NUL-terminated inside its length, no inner NUL. */
int proto_tlv_str(const uint8_t *val, uint32_t len, const char **ret);

/* Exec request codec. Decoding validates every field; strings must be NUL-terminated. */
void proto_encode_exec(struct proto_buf *b, char *const *argv, char *const *envp, const char *cwd,
		       const char *user, bool tty, uint16_t rows, uint16_t cols);
int proto_decode_exec(const struct proto_frame *f, struct proto_exec *ret);

/* Error payload codec. */
void proto_encode_error(struct proto_buf *b, int errnum, const char *msg);
int proto_decode_error(const struct proto_frame *f, int *ret_errno, const char **ret_msg);

/* Buffered, non-blocking connection. Reads append to `in`; proto_conn_next pops frames;
 * sends are queued to `out` and written by proto_conn_flush. */
struct proto_conn {
	int fd;
	uint8_t *in;
	size_t in_len, in_cap, in_off;
	uint8_t *out;
	size_t out_len, out_cap, out_off;
	bool eof;
};
void proto_conn_init(struct proto_conn *c, int fd);
void proto_conn_free(struct proto_conn *c); /* closes fd */
/* Reads what is available: >0 bytes read, 0 on EOF (c->eof set), -EAGAIN, or -errno. */
int proto_conn_read(struct proto_conn *c);
/* 1 with a frame (valid until the next proto_conn_read/next), 0 when none is complete, <0 on a
 * malformed stream. */
int proto_conn_next(struct proto_conn *c, struct proto_frame *ret);
void proto_conn_send(struct proto_conn *c, uint16_t type, uint16_t flags, uint32_t stream,
		     const void *payload, uint32_t len);
/* Writes queued bytes: 0 when all written, -EAGAIN when some remain, -errno on error. */
int proto_conn_flush(struct proto_conn *c);
static inline size_t proto_conn_pending(const struct proto_conn *c) { return c->out_len - c->out_off; }

/* Flow control (both ends of a connection announced PROTO_MINOR_WINDOW). Each of a session's
 * STDIN, STDOUT and STDERR has a credit: the bytes its sender may still send, 0 when the
 * session starts. The receiver adds to it with WINDOW frames as it delivers what it got to
 * where the bytes go (the session's stdin pipe, the user's terminal or file), so one stream
 * whose destination stops taking bytes stops only that stream's sender, never the connection.
 * Data beyond the credit, a grant that takes a credit past PROTO_WINDOW_MAX, or a WINDOW
 * for a direction the peer does not receive is a protocol error. The supervisor relays
 * grants: a client's for its output go to paddock-init, paddock-init's for stdin go to the
 * client. */
#define PROTO_WINDOW_MAX (16u << 20)
/* n bytes (1..PROTO_WINDOW_MAX) for stream fd (0..2). 0 or -EBADMSG. */
int proto_decode_window(const struct proto_frame *f, uint8_t *ret_fd, uint32_t *ret_n);
void proto_send_window(struct proto_conn *c, uint32_t stream, uint8_t fd, uint32_t n);
/* A grant of n to *credit: -EBADMSG (and no change) when the credit would pass
 * PROTO_WINDOW_MAX. Data of n bytes against *credit: -EBADMSG (no change) beyond it. */
int proto_credit_grant(uint32_t *credit, uint32_t n);
int proto_credit_take(uint32_t *credit, uint32_t n);

/* The requester's end of one session's flow (the CLI; the supervisor's own runs in a box):
 * the stdin it may send, and the output it was allowed and has delivered. */
struct proto_flow {
	bool on;                /* the connection uses windows; else every call here is a no-op */
	uint32_t in_credit;     /* stdin bytes the box takes now */
	uint32_t out_credit[2]; /* stdout, stderr bytes the box may still send */
	uint32_t owed[2];       /* delivered output not granted again yet */
};
/* Output of one session a requester lets be on its way (each of stdout and stderr): 1 MiB
 * keeps `exec … | wc` at the speed it had without windows (256 KiB lost ~15% of it here). */
#define PROTO_FLOW_WINDOW (1024u << 10)
/* Right after the EXEC: grants the session's stdout and stderr PROTO_FLOW_WINDOW each. */
void proto_flow_start(struct proto_flow *fl, struct proto_conn *c, uint32_t stream, bool on);
/* How many of want stdin bytes may go now (want when off), and their sending. */
size_t proto_flow_stdin_room(const struct proto_flow *fl, size_t want);
void proto_flow_stdin_sent(struct proto_flow *fl, size_t n);
/* A frame of the session: 1 for a WINDOW (its grant taken), 0 for any other (STDOUT and
 * STDERR taken against their credit), -EBADMSG for a WINDOW that is not for stdin, or output
 * beyond its credit. */
int proto_flow_recv(struct proto_flow *fl, const struct proto_frame *f);
/* n bytes of output i (0 stdout, 1 stderr) delivered, or dropped: they are granted again
 * (by the quarter window, so small writes do not each cost a frame). */
void proto_flow_delivered(struct proto_flow *fl, struct proto_conn *c, uint32_t stream, int i, uint32_t n);

/* Blocking helpers for simple request/answer exchanges. */
int proto_send(int fd, uint16_t type, uint16_t flags, uint32_t stream, const void *payload, uint32_t len);
/* The minor this process announces: PROTO_VERSION_MINOR, or a lower one named by
 * PADDOCK_TEST_PROTO_MINOR when PADDOCK_TESTING=1 (a test standing in for an older peer). */
uint16_t proto_minor(void);
int proto_send_hello(int fd);
/* After an EXEC on stream: grants its stdout and stderr n bytes each (paddock-init reads no
 * output, nor sees its end, without credit) — for a requester that takes everything it is
 * sent and needs no more than n. */
int proto_send_windows(int fd, uint32_t stream, uint32_t n);
/* Receives one frame into a caller-provided buffer of PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD. */
int proto_recv(int fd, uint8_t *buf, struct proto_frame *ret);
