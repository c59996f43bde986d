/* proto.c — frame and TLV codecs (pure) and a buffered non-blocking connection. */
#include <poll.h>

#include "proto/proto.h"
#include "util/fdio.h"

static const char *const type_names[PROTO_TYPE_MAX] = {
	[PROTO_INVALID] = "invalid", [PROTO_HELLO] = "hello",   [PROTO_EXEC] = "exec",
	[PROTO_STARTED] = "started", [PROTO_STDIN] = "stdin",   [PROTO_STDOUT] = "stdout",
	[PROTO_STDERR] = "stderr",   [PROTO_EOF] = "eof",       [PROTO_RESIZE] = "resize",
	[PROTO_SIGNAL] = "signal",   [PROTO_EXIT] = "exit",     [PROTO_STOP] = "stop",
	[PROTO_ERROR] = "error",     [PROTO_INFO] = "info",     [PROTO_ACK] = "ack",
	[PROTO_WINDOW] = "window",
};

const char *proto_type_name(uint16_t type)
{
	return type < PROTO_TYPE_MAX ? type_names[type] : "unknown";
}

void proto_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
void proto_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
uint16_t proto_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
uint32_t proto_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

void proto_encode_hdr(uint8_t out[PROTO_HDR_SIZE], const struct proto_hdr *h)
{
	proto_put_u16(out, h->type);
	proto_put_u16(out + 2, h->flags);
	proto_put_u32(out + 4, h->stream);
	proto_put_u32(out + 8, h->len);
}

int proto_decode_hdr(const uint8_t in[PROTO_HDR_SIZE], struct proto_hdr *ret)
{
	struct proto_hdr h = {
		.type = proto_get_u16(in),
		.flags = proto_get_u16(in + 2),
		.stream = proto_get_u32(in + 4),
		.len = proto_get_u32(in + 8),
	};
	if (h.type == PROTO_INVALID || h.type >= PROTO_TYPE_MAX)
		return -EBADMSG;
	if (h.flags != 0)
		return -EBADMSG; /* no flags are defined yet; refuse rather than ignore */
	if (h.len > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	*ret = h;
	return 0;
}

int proto_parse(const uint8_t *buf, size_t len, struct proto_frame *ret, size_t *ret_used)
{
	struct proto_hdr h;
	if (len < PROTO_HDR_SIZE)
		return 0;
	int r = proto_decode_hdr(buf, &h);
	if (r < 0)
		return r;
	if (len - PROTO_HDR_SIZE < h.len)
		return 0;
	ret->hdr = h;
	ret->payload = buf + PROTO_HDR_SIZE;
	*ret_used = PROTO_HDR_SIZE + h.len;
	return 1;
}

int proto_decode_hello(const struct proto_frame *f, uint16_t *ret_major, uint16_t *ret_minor)
{
	if (f->hdr.type != PROTO_HELLO || f->hdr.len != 8 || proto_get_u32(f->payload) != PROTO_MAGIC)
		return -EBADMSG;
	*ret_major = proto_get_u16(f->payload + 4);
	*ret_minor = proto_get_u16(f->payload + 6);
	return 0;
}

int proto_decode_u32(const struct proto_frame *f, uint32_t *ret)
{
	if (f->hdr.len != 4)
		return -EBADMSG;
	*ret = proto_get_u32(f->payload);
	return 0;
}

int proto_decode_resize(const struct proto_frame *f, uint16_t *ret_rows, uint16_t *ret_cols)
{
	if (f->hdr.type != PROTO_RESIZE || f->hdr.len != 4)
		return -EBADMSG;
	*ret_rows = proto_get_u16(f->payload);
	*ret_cols = proto_get_u16(f->payload + 2);
	return 0;
}

int proto_check_input(const struct proto_frame *f)
{
	uint16_t rows, cols;
	uint32_t sig, n;
	uint8_t fd;
	switch (f->hdr.type) {
	case PROTO_STDIN:
		return 0;
	case PROTO_EOF:
		return f->hdr.len == 1 && f->payload[0] <= 2 ? 0 : -EBADMSG;
	case PROTO_RESIZE:
		return proto_decode_resize(f, &rows, &cols);
	case PROTO_SIGNAL:
		return proto_decode_u32(f, &sig) == 0 && sig > 0 && sig < PROTO_MAX_SIGNAL ? 0 : -EBADMSG;
	case PROTO_WINDOW:
		return proto_decode_window(f, &fd, &n) == 0 && fd != 0 ? 0 : -EBADMSG;
	default:
		return -EBADMSG;
	}
}

void proto_buf_free(struct proto_buf *b)
{
	free(b->data);
	*b = (struct proto_buf){0};
}

static void buf_reserve(struct proto_buf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void proto_buf_put(struct proto_buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

void proto_tlv_put(struct proto_buf *b, uint16_t tag, const void *v, uint32_t len)
{
	buf_reserve(b, 6 + (size_t)len);
	proto_put_u16(b->data + b->len, tag);
	proto_put_u32(b->data + b->len + 2, len);
	if (len)
		memcpy(b->data + b->len + 6, v, len);
	b->len += 6 + (size_t)len;
}

void proto_tlv_put_str(struct proto_buf *b, uint16_t tag, const char *s)
{
	proto_tlv_put(b, tag, s, (uint32_t)strlen(s) + 1);
}

void proto_tlv_put_u16(struct proto_buf *b, uint16_t tag, uint16_t v)
{
	uint8_t x[2];
	proto_put_u16(x, v);
	proto_tlv_put(b, tag, x, 2);
}

void proto_tlv_put_u32(struct proto_buf *b, uint16_t tag, uint32_t v)
{
	uint8_t x[4];
	proto_put_u32(x, v);
	proto_tlv_put(b, tag, x, 4);
}

int proto_tlv_next(struct proto_tlv_iter *it, uint16_t *ret_tag, const uint8_t **ret_val, uint32_t *ret_len)
{
	if (it->left == 0)
		return 0;
	if (it->left < 6)
		return -EBADMSG;
	uint16_t tag = proto_get_u16(it->p);
	uint32_t len = proto_get_u32(it->p + 2);
	if (tag == PROTO_TAG_INVALID || tag >= PROTO_TAG_MAX || len > it->left - 6)
		return -EBADMSG;
	*ret_tag = tag;
	*ret_val = it->p + 6;
	*ret_len = len;
	it->p += 6 + (size_t)len;
	it->left -= 6 + (size_t)len;
	return 1;
}

int proto_tlv_str(const uint8_t *val, uint32_t len, const char **ret)
{
	if (len == 0 || len > PROTO_MAX_STR || val[len - 1] != '\0' || memchr(val, '\0', len - 1))
		return -EBADMSG;
	*ret = (const char *)val;
	return 0;
}

void proto_encode_exec(struct proto_buf *b, char *const *argv, char *const *envp, const char *cwd,
		       const char *user, bool tty, uint16_t rows, uint16_t cols)
{
	for (size_t i = 0; argv && argv[i]; i++)
		proto_tlv_put_str(b, PROTO_TAG_ARG, argv[i]);
	for (size_t i = 0; envp && envp[i]; i++)
		proto_tlv_put_str(b, PROTO_TAG_ENV, envp[i]);
	if (cwd)
		proto_tlv_put_str(b, PROTO_TAG_CWD, cwd);
	if (user)
		proto_tlv_put_str(b, PROTO_TAG_USER, user);
	uint8_t t = tty ? 1 : 0;
	proto_tlv_put(b, PROTO_TAG_TTY, &t, 1);
	if (tty) {
		proto_tlv_put_u16(b, PROTO_TAG_ROWS, rows);
		proto_tlv_put_u16(b, PROTO_TAG_COLS, cols);
	}
}

static int exec_field(struct proto_exec *e, uint16_t tag, const uint8_t *v, uint32_t len)
{
	const char *s;
	switch (tag) {
	case PROTO_TAG_ARG:
		if (e->argc >= PROTO_MAX_ARGS || proto_tlv_str(v, len, &s) < 0)
			return -EBADMSG;
		e->argv[e->argc++] = s;
		return 0;
	case PROTO_TAG_ENV:
		if (e->envc >= PROTO_MAX_ENV || proto_tlv_str(v, len, &s) < 0 || !strchr(s, '=') || s[0] == '=')
			return -EBADMSG;
		e->envp[e->envc++] = s;
		return 0;
	case PROTO_TAG_CWD:
		if (e->cwd || proto_tlv_str(v, len, &s) < 0 || s[0] != '/')
			return -EBADMSG;
		e->cwd = s;
		return 0;
	case PROTO_TAG_USER:
		if (e->user || proto_tlv_str(v, len, &s) < 0 || (!streq(s, "agent") && !streq(s, "root")))
			return -EBADMSG;
		e->user = s;
		return 0;
	case PROTO_TAG_TTY:
		if (len != 1 || v[0] > 1)
			return -EBADMSG;
		e->tty = v[0];
		return 0;
	case PROTO_TAG_ROWS:
	case PROTO_TAG_COLS:
		if (len != 2)
			return -EBADMSG;
		*(tag == PROTO_TAG_ROWS ? &e->rows : &e->cols) = proto_get_u16(v);
		return 0;
	default:
		return -EBADMSG;
	}
}

int proto_decode_exec(const struct proto_frame *f, struct proto_exec *ret)
{
	if (f->hdr.type != PROTO_EXEC)
		return -EBADMSG;
	/* the scalars only: the argv/envp arrays (64 KiB of pointers) are filled up to argc and
	 * envc and terminated below; zeroing them all cost PID 1 sixteen fresh pages per exec */
	ret->argc = ret->envc = 0;
	ret->cwd = ret->user = NULL;
	ret->tty = false;
	ret->rows = ret->cols = 0;
	struct proto_tlv_iter it = {f->payload, f->hdr.len};
	uint16_t tag;
	const uint8_t *v;
	uint32_t len;
	int r;
	while ((r = proto_tlv_next(&it, &tag, &v, &len)) > 0)
		if (exec_field(ret, tag, v, len) < 0)
			return -EBADMSG;
	if (r < 0 || ret->argc == 0 || ret->argv[0][0] == '\0')
		return -EBADMSG;
	ret->argv[ret->argc] = NULL;
	ret->envp[ret->envc] = NULL;
	return 0;
}

void proto_encode_error(struct proto_buf *b, int errnum, const char *msg)
{
	proto_tlv_put_u32(b, PROTO_TAG_ERRNO, (uint32_t)(errnum < 0 ? -errnum : errnum));
	proto_tlv_put_str(b, PROTO_TAG_MESSAGE, msg ? msg : "");
}

int proto_decode_error(const struct proto_frame *f, int *ret_errno, const char **ret_msg)
{
	struct proto_tlv_iter it = {f->payload, f->hdr.len};
	uint16_t tag;
	const uint8_t *v;
	uint32_t len;
	int r, e = -1;
	const char *msg = NULL;
	if (f->hdr.type != PROTO_ERROR)
		return -EBADMSG;
	while ((r = proto_tlv_next(&it, &tag, &v, &len)) > 0) {
		if (tag == PROTO_TAG_ERRNO && len == 4 && e < 0)
			e = (int)(proto_get_u32(v) & 0xffff);
		else if (tag == PROTO_TAG_MESSAGE && !msg && proto_tlv_str(v, len, &msg) == 0)
			;
		else
			return -EBADMSG;
	}
	if (r < 0 || e < 0 || !msg)
		return -EBADMSG;
	*ret_errno = e;
	*ret_msg = msg;
	return 0;
}

void proto_conn_init(struct proto_conn *c, int fd)
{
	*c = (struct proto_conn){.fd = fd};
}

void proto_conn_free(struct proto_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	free(c->out);
	*c = (struct proto_conn){.fd = -1};
}

int proto_conn_read(struct proto_conn *c)
{
	/* compact consumed bytes first so the buffer never grows past one maximal frame */
	if (c->in_off > 0) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	size_t want = PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD;
	if (c->in_cap < want) {
		c->in = xrealloc(c->in, want);
		c->in_cap = want;
	}
	if (c->in_len == c->in_cap)
		return -ENOBUFS;
	ssize_t n;
	do
		n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		c->eof = true;
	c->in_len += (size_t)n;
	return (int)n;
}

int proto_conn_next(struct proto_conn *c, struct proto_frame *ret)
{
	size_t used;
	int r = proto_parse(c->in + c->in_off, c->in_len - c->in_off, ret, &used);
	if (r > 0)
		c->in_off += used;
	return r;
}

void proto_conn_send(struct proto_conn *c, uint16_t type, uint16_t flags, uint32_t stream,
		     const void *payload, uint32_t len)
{
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	size_t need = c->out_len + PROTO_HDR_SIZE + len;
	if (need > c->out_cap) {
		if (c->out_off > 0) {
			memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
			c->out_len -= c->out_off;
			c->out_off = 0;
			need = c->out_len + PROTO_HDR_SIZE + len;
		}
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < need)
			cap *= 2;
		c->out = xrealloc(c->out, cap);
		c->out_cap = cap;
	}
	struct proto_hdr h = {.type = type, .flags = flags, .stream = stream, .len = len};
	proto_encode_hdr(c->out + c->out_len, &h);
	if (len)
		memcpy(c->out + c->out_len + PROTO_HDR_SIZE, payload, len);
	c->out_len += PROTO_HDR_SIZE + len;
}

int proto_conn_flush(struct proto_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	return 0;
}

int proto_decode_window(const struct proto_frame *f, uint8_t *ret_fd, uint32_t *ret_n)
{
	if (f->hdr.type != PROTO_WINDOW || f->hdr.len != 5 || f->payload[0] > 2)
		return -EBADMSG;
	uint32_t n = proto_get_u32(f->payload + 1);
	if (n == 0 || n > PROTO_WINDOW_MAX)
		return -EBADMSG;
	*ret_fd = f->payload[0];
	*ret_n = n;
	return 0;
}

void proto_send_window(struct proto_conn *c, uint32_t stream, uint8_t fd, uint32_t n)
{
	uint8_t p[5] = {fd};
	proto_put_u32(p + 1, n);
	proto_conn_send(c, PROTO_WINDOW, 0, stream, p, sizeof(p));
}

int proto_credit_grant(uint32_t *credit, uint32_t n)
{
	if (n > PROTO_WINDOW_MAX - *credit) /* *credit <= PROTO_WINDOW_MAX always */
		return -EBADMSG;
	*credit += n;
	return 0;
}

int proto_credit_take(uint32_t *credit, uint32_t n)
{
	if (n > *credit)
		return -EBADMSG;
	*credit -= n;
	return 0;
}

void proto_flow_start(struct proto_flow *fl, struct proto_conn *c, uint32_t stream, bool on)
{
	*fl = (struct proto_flow){.on = on};
	for (int i = 0; on && i < 2; i++) {
		fl->out_credit[i] = PROTO_FLOW_WINDOW;
		proto_send_window(c, stream, (uint8_t)(i + 1), PROTO_FLOW_WINDOW);
	}
}

size_t proto_flow_stdin_room(const struct proto_flow *fl, size_t want)
{
	return !fl->on || want < fl->in_credit ? want : fl->in_credit;
}

void proto_flow_stdin_sent(struct proto_flow *fl, size_t n)
{
	if (fl->on)
		fl->in_credit -= (uint32_t)n; /* n <= proto_flow_stdin_room() */
}

int proto_flow_recv(struct proto_flow *fl, const struct proto_frame *f)
{
	uint8_t fd;
	uint32_t n;
	if (!fl->on)
		return f->hdr.type == PROTO_WINDOW ? -EBADMSG : 0;
	if (f->hdr.type == PROTO_WINDOW)
		return proto_decode_window(f, &fd, &n) < 0 || fd != 0 || proto_credit_grant(&fl->in_credit, n) < 0
			       ? -EBADMSG : 1;
	if (f->hdr.type == PROTO_STDOUT || f->hdr.type == PROTO_STDERR)
		return proto_credit_take(&fl->out_credit[f->hdr.type == PROTO_STDERR], f->hdr.len);
	return 0;
}

void proto_flow_delivered(struct proto_flow *fl, struct proto_conn *c, uint32_t stream, int i, uint32_t n)
{
	if (!fl->on)
		return;
	fl->owed[i] += n; /* <= PROTO_FLOW_WINDOW: only what the box was allowed */
	if (fl->owed[i] < PROTO_FLOW_WINDOW / 4)
		return;
	fl->out_credit[i] += fl->owed[i];
	proto_send_window(c, stream, (uint8_t)(i + 1), fl->owed[i]);
	fl->owed[i] = 0;
}

int proto_send(int fd, uint16_t type, uint16_t flags, uint32_t stream, const void *payload, uint32_t len)
{
	if (len > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	uint8_t hdr[PROTO_HDR_SIZE];
	struct proto_hdr h = {.type = type, .flags = flags, .stream = stream, .len = len};
	proto_encode_hdr(hdr, &h);
	int r = fd_write_all(fd, hdr, sizeof(hdr));
	if (r == 0 && len)
		r = fd_write_all(fd, payload, len);
	return r;
}

uint16_t proto_minor(void)
{
	const char *t = getenv("PADDOCK_TESTING"), *m = getenv("PADDOCK_TEST_PROTO_MINOR");
	if (t && streq(t, "1") && m && m[0] >= '0' && m[0] < '0' + PROTO_VERSION_MINOR && !m[1])
		return (uint16_t)(m[0] - '0');
	return PROTO_VERSION_MINOR;
}

int proto_send_hello(int fd)
{
	uint8_t p[8];
	proto_put_u32(p, PROTO_MAGIC);
	proto_put_u16(p + 4, PROTO_VERSION_MAJOR);
	proto_put_u16(p + 6, proto_minor());
	return proto_send(fd, PROTO_HELLO, 0, 0, p, sizeof(p));
}

int proto_send_windows(int fd, uint32_t stream, uint32_t n)
{
	uint8_t p[5];
	proto_put_u32(p + 1, n);
	int r = 0;
	for (p[0] = 1; r == 0 && p[0] <= 2; p[0]++)
		r = proto_send(fd, PROTO_WINDOW, 0, stream, p, sizeof(p));
	return r;
}

int proto_recv(int fd, uint8_t *buf, struct proto_frame *ret)
{
	int r = fd_read_exact(fd, buf, PROTO_HDR_SIZE);
	if (r < 0)
		return r;
	r = proto_decode_hdr(buf, &ret->hdr);
	if (r < 0)
		return r;
	r = fd_read_exact(fd, buf + PROTO_HDR_SIZE, ret->hdr.len);
	if (r < 0)
		return r;
	ret->payload = buf + PROTO_HDR_SIZE;
	return 0;
}
