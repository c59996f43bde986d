/* wsscan.c — the ws-scan record codec (see wsscan.h). Pure. */
#include "proto/proto.h"
#include "proto/wsscan.h"

static void put_u64(uint8_t *p, uint64_t v)
{
	proto_put_u32(p, (uint32_t)v);
	proto_put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get_u64(const uint8_t *p)
{
	return (uint64_t)proto_get_u32(p) | ((uint64_t)proto_get_u32(p + 4) << 32);
}

static bool kind_ok(uint8_t k)
{
	return k == WSSCAN_FILE || k == WSSCAN_DIR || k == WSSCAN_LINK || k == WSSCAN_OTHER ||
	       k == WSSCAN_NOTE || k == WSSCAN_END;
}

/* the shape rules shared by both directions */
static bool rec_ok(uint8_t kind, size_t path_len, size_t target_len, uint32_t mode, uint32_t mns, uint32_t cns)
{
	if (!kind_ok(kind) || mode > 07777 || mns > 999999999u || cns > 999999999u)
		return false;
	if (kind == WSSCAN_END)
		return path_len == 0 && target_len == 0;
	if (path_len == 0 || path_len > WSSCAN_MAX_PATH || target_len > WSSCAN_MAX_PATH)
		return false;
	return kind == WSSCAN_LINK ? target_len > 0 : target_len == 0;
}

size_t wsscan_encode(uint8_t *out, size_t cap, const struct wsscan_rec *r)
{
	size_t n = WSSCAN_HDR + r->path_len + r->target_len;
	if (n > cap || !rec_ok(r->kind, r->path_len, r->target_len, r->mode, r->mtime_ns, r->ctime_ns))
		return 0;
	memset(out, 0, WSSCAN_HDR);
	out[0] = r->kind;
	proto_put_u16(out + 2, (uint16_t)r->path_len);
	proto_put_u16(out + 4, (uint16_t)r->target_len);
	proto_put_u32(out + 8, r->mode);
	put_u64(out + 12, r->size);
	put_u64(out + 20, r->ino);
	put_u64(out + 28, (uint64_t)r->mtime_s);
	proto_put_u32(out + 36, r->mtime_ns);
	put_u64(out + 40, (uint64_t)r->ctime_s);
	proto_put_u32(out + 48, r->ctime_ns);
	/* the tree's root is a record with an empty path (and maybe a NULL pointer) */
	if (r->path_len)
		memcpy(out + WSSCAN_HDR, r->path, r->path_len);
	if (r->target_len)
		memcpy(out + WSSCAN_HDR + r->path_len, r->target, r->target_len);
	return n;
}

int wsscan_decode(const uint8_t *buf, size_t len, struct wsscan_rec *ret, size_t *ret_used)
{
	if (len < WSSCAN_HDR)
		return 0;
	struct wsscan_rec r = {
		.kind = buf[0],
		.path_len = proto_get_u16(buf + 2),
		.target_len = proto_get_u16(buf + 4),
		.mode = proto_get_u32(buf + 8),
		.size = get_u64(buf + 12),
		.ino = get_u64(buf + 20),
		.mtime_s = (int64_t)get_u64(buf + 28),
		.mtime_ns = proto_get_u32(buf + 36),
		.ctime_s = (int64_t)get_u64(buf + 40),
		.ctime_ns = proto_get_u32(buf + 48),
	};
	if (buf[1] != 0 || proto_get_u16(buf + 6) != 0 ||
	    !rec_ok(r.kind, r.path_len, r.target_len, r.mode, r.mtime_ns, r.ctime_ns))
		return -EBADMSG;
	size_t n = WSSCAN_HDR + r.path_len + r.target_len;
	if (len < n)
		return 0;
	r.path = (const char *)buf + WSSCAN_HDR;
	r.target = r.target_len ? r.path + r.path_len : NULL;
	if (memchr(r.path, 0, r.path_len) || (r.target && memchr(r.target, 0, r.target_len)))
		return -EBADMSG;
	*ret = r;
	*ret_used = n;
	return 1;
}
