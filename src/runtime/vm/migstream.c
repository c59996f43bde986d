/* migstream.c — see migstream.h. Names and values from QEMU 7.2's migration/savevm.h and
 * migration/ram.c (the stream's format is kept across QEMU versions: it is what a migration
 * between two versions reads). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/vm/migstream.h"

#define VM_FILE_MAGIC 0x5145564du /* "QEVM" */
#define VM_FILE_VERSION 3u

#define VM_EOF 0x00
#define VM_SECTION_START 0x01
#define VM_SECTION_PART 0x02
#define VM_SECTION_END 0x03
#define VM_SECTION_FULL 0x04
#define VM_SUBSECTION 0x05
#define VM_CONFIGURATION 0x07
#define VM_SECTION_FOOTER 0x7e

/* a RAM record's flags: the low bits of its page address */
#define RAM_ZERO 0x02u
#define RAM_MEM_SIZE 0x04u
#define RAM_PAGE 0x08u
#define RAM_EOS 0x10u
#define RAM_CONTINUE 0x20u

#define CONFIG_NAME_MAX 256u

struct reader {
	const uint8_t *in;
	size_t len, pos;
};

static bool take(struct reader *r, size_t n, const uint8_t **ret)
{
	if (r->len - r->pos < n)
		return false;
	if (ret)
		*ret = r->in + r->pos;
	r->pos += n;
	return true;
}

static bool get8(struct reader *r, uint8_t *v)
{
	const uint8_t *p;
	if (!take(r, 1, &p))
		return false;
	*v = p[0];
	return true;
}

static bool get32(struct reader *r, uint32_t *v)
{
	const uint8_t *p;
	if (!take(r, 4, &p))
		return false;
	*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return true;
}

static bool get64(struct reader *r, uint64_t *v)
{
	uint32_t hi, lo;
	if (!get32(r, &hi) || !get32(r, &lo))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

/* a block or section name: one length byte, then that many bytes (QEMU's idstr: never empty) */
struct name {
	const uint8_t *p;
	uint8_t len;
};

static bool get_name(struct reader *r, struct name *n)
{
	return get8(r, &n->len) && n->len > 0 && take(r, n->len, &n->p);
}

static bool name_is(struct name n, const char *s)
{
	return n.p && strlen(s) == n.len && memcmp(n.p, s, n.len) == 0;
}

static bool name_eq(struct name a, struct name b)
{
	return a.p && b.p && a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
}

/* The output: spans of the input written as they are, with a record left out or its header
 * replaced here and there. in[span..] is what is not written yet. */
struct writer {
	mig_sink_fn sink;
	void *ctx;
	const uint8_t *in;
	size_t span;
};

static int flush_to(struct writer *w, size_t end)
{
	int r = end > w->span ? w->sink(w->ctx, w->in + w->span, end - w->span) : 0;
	w->span = end;
	return r;
}

struct ram {
	const char *block;   /* whose zero markers go */
	uint64_t block_size; /* its size, from MEM_SIZE (0: not seen yet) */
	struct name src;     /* the block of the last record in the input */
	struct name dst;     /* the block of the last record in the output (what the loader holds) */
};

/* MEM_SIZE: the RAM blocks and their sizes, adding up to the record's total. */
static int mem_sizes(struct reader *r, struct ram *ram, uint64_t total)
{
	while (total) {
		struct name n;
		uint64_t size;
		if (!get_name(r, &n) || !get64(r, &size) || size == 0 || size > total)
			return -EINVAL;
		if (name_is(n, ram->block))
			ram->block_size = size;
		total -= size;
	}
	return 0;
}

/* The records of one part of the "ram" section, up to and including its EOS. */
static int ram_records(struct reader *r, struct writer *w, struct ram *ram, struct mig_strip_stats *st)
{
	for (;;) {
		size_t at = r->pos;
		uint64_t head;
		if (!get64(r, &head))
			return -EINVAL;
		unsigned flags = (unsigned)(head & (MIG_PAGE_SIZE - 1));
		uint64_t addr = head & ~(uint64_t)(MIG_PAGE_SIZE - 1);
		if (flags == RAM_EOS)
			return 0;
		if (flags == RAM_MEM_SIZE) {
			if (mem_sizes(r, ram, addr) < 0)
				return -EINVAL;
			continue;
		}
		unsigned kind = flags & ~RAM_CONTINUE;
		if (kind != RAM_ZERO && kind != RAM_PAGE)
			return -EINVAL;
		if (!(flags & RAM_CONTINUE)) {
			if (!get_name(r, &ram->src))
				return -EINVAL;
		} else if (!ram->src.p) {
			return -EINVAL;
		}
		size_t body = r->pos;
		bool ours = name_is(ram->src, ram->block);
		/* a page past the block's end is the loader's error to report, not ours to hide */
		if (ours && addr >= ram->block_size)
			return -EINVAL;
		if (kind == RAM_ZERO) {
			uint8_t fill;
			if (!get8(r, &fill))
				return -EINVAL;
			if (fill == 0 && ours) {
				int e = flush_to(w, at);
				if (e < 0)
					return e;
				w->span = r->pos;
				st->zero_dropped++;
				continue;
			}
		} else if (!take(r, MIG_PAGE_SIZE, NULL)) {
			return -EINVAL;
		}
		st->kept++;
		if ((flags & RAM_CONTINUE) && !name_eq(ram->dst, ram->src)) {
			/* it leant on a record that was left out: it names its block itself */
			uint8_t h[8 + 1 + 255];
			uint64_t nh = addr | kind;
			for (int i = 0; i < 8; i++)
				h[i] = (uint8_t)(nh >> (56 - 8 * i));
			h[8] = ram->src.len;
			memcpy(h + 9, ram->src.p, ram->src.len);
			int e = flush_to(w, at);
			if (e == 0)
				e = w->sink(w->ctx, h, 9u + ram->src.len);
			if (e < 0)
				return e;
			w->span = body;
		}
		ram->dst = ram->src;
	}
}

int mig_strip_zero(const uint8_t *in, size_t len, const char *block, mig_sink_fn sink, void *ctx,
		   struct mig_strip_stats *st)
{
	struct mig_strip_stats unused;
	st = st ? st : &unused;
	*st = (struct mig_strip_stats){0};
	struct reader r = {.in = in, .len = len};
	struct writer w = {.sink = sink, .ctx = ctx, .in = in};
	struct ram ram = {.block = block};
	uint32_t magic, version, n;
	if (!get32(&r, &magic) || magic != VM_FILE_MAGIC || !get32(&r, &version) || version != VM_FILE_VERSION)
		return -EINVAL;
	if (r.pos < len && in[r.pos] == VM_CONFIGURATION) {
		/* the machine's name; a subsection after it (capabilities to validate, a uuid)
		 * comes from settings paddock does not use */
		r.pos++;
		if (!get32(&r, &n) || n > CONFIG_NAME_MAX || !take(&r, n, NULL) || (r.pos < len && in[r.pos] == VM_SUBSECTION))
			return -EINVAL;
	}
	uint32_t ram_sid = 0;
	bool started = false;
	for (;;) {
		uint8_t type;
		uint32_t sid;
		if (!get8(&r, &type))
			return -EINVAL;
		if (type == VM_SECTION_START) {
			struct name id;
			uint32_t instance, ver;
			if (started || !get32(&r, &sid) || !get_name(&r, &id) || !name_is(id, "ram") ||
			    !get32(&r, &instance) || !get32(&r, &ver))
				return -EINVAL;
			ram_sid = sid;
			started = true;
		} else if (type == VM_SECTION_PART || type == VM_SECTION_END) {
			if (!started || !get32(&r, &sid) || sid != ram_sid)
				return -EINVAL;
		} else {
			/* only the RAM's END lets the rest through untouched (below); before it, a
			 * section of another kind is one this code cannot find the end of */
			return -EINVAL;
		}
		int e = ram_records(&r, &w, &ram, st);
		if (e < 0)
			return e;
		if (r.pos < len && in[r.pos] == VM_SECTION_FOOTER) {
			uint32_t fsid;
			r.pos++;
			if (!get32(&r, &fsid) || fsid != sid)
				return -EINVAL;
		}
		if (type == VM_SECTION_END)
			break;
	}
	/* the devices' state and the end of the file, as they are */
	if (r.pos >= len || (in[r.pos] != VM_SECTION_FULL && in[r.pos] != VM_EOF))
		return -EINVAL;
	return flush_to(&w, len);
}
