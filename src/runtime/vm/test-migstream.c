/* test-migstream.c — a template's migration stream without the guest RAM's zero markers:
 * streams built here record by record in QEMU 7.2's format; the output is compared byte for
 * byte with the stream that should come out. (A real QEMU's stream is rewritten and loaded by
 * tests/integration/vm.sh's template tests.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/vm/migstream.h"

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void put8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put32(struct buf *b, uint32_t v)
{
	uint8_t p[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	put(b, p, 4);
}

static void put64(struct buf *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b, (uint32_t)v);
}

static void put_name(struct buf *b, const char *s)
{
	put8(b, (uint8_t)strlen(s));
	put(b, s, strlen(s));
}

#define RAM "microvm.ram"
#define BIOS "pc.bios"
#define RAM_SIZE (1u << 20)
#define BIOS_SIZE (64u << 10)

static void header(struct buf *b)
{
	put32(b, 0x5145564d);
	put32(b, 3);
	put8(b, 0x07);
	put32(b, 7);
	put(b, "microvm", 7);
}

static void section(struct buf *b, uint8_t type)
{
	put8(b, type);
	put32(b, 2);
	if (type == 0x01) {
		put_name(b, "ram");
		put32(b, 0);
		put32(b, 4);
	}
}

static void eos_footer(struct buf *b)
{
	put64(b, 0x10);
	put8(b, 0x7e);
	put32(b, 2);
}

static void mem_size(struct buf *b)
{
	put64(b, (uint64_t)(RAM_SIZE + BIOS_SIZE) | 0x04);
	put_name(b, RAM);
	put64(b, RAM_SIZE);
	put_name(b, BIOS);
	put64(b, BIOS_SIZE);
}

/* a record: block NULL for CONTINUE; data NULL for a zero marker with that fill */
static void rec(struct buf *b, uint64_t addr, const char *block, const uint8_t *data, uint8_t fill)
{
	put64(b, addr | (data ? 0x08u : 0x02u) | (block ? 0 : 0x20u));
	if (block)
		put_name(b, block);
	if (data)
		put(b, data, MIG_PAGE_SIZE);
	else
		put8(b, fill);
}

static void devices(struct buf *b)
{
	static const uint8_t dev[] = {0x04, 0, 0, 0, 3, 6, 's', 'e', 'r', 'i', 'a', 'l', 0, 0, 0, 0, 0, 0, 0, 1,
				      0x7e, 0x02, 0x7e, 0, 0, 0, 3, 0x00, '{', '}'};
	put(b, dev, sizeof(dev));
}

/* the file up to the RAM's first EOS: header, START, MEM_SIZE */
static void ram_setup(struct buf *b)
{
	header(b);
	section(b, 0x01);
	mem_size(b);
	eos_footer(b);
}

/* the end of a RAM part, then the devices' state */
static void ram_end(struct buf *b)
{
	eos_footer(b);
	devices(b);
}

static int sink(void *ctx, const uint8_t *p, size_t n)
{
	put(ctx, p, n);
	return 0;
}

static int strip(const struct buf *in, struct buf *out, struct mig_strip_stats *st)
{
	out->len = 0;
	return mig_strip_zero(in->p, in->len, MIG_GUEST_RAM_BLOCK, sink, out, st);
}

/* in comes out as want, with that many markers dropped and records kept */
static void assert_strips_to(const struct buf *in, const struct buf *want, uint64_t dropped, uint64_t kept)
{
	struct buf out = {0};
	struct mig_strip_stats st;
	assert_int_equal(strip(in, &out, &st), 0);
	assert_int_equal(st.zero_dropped, dropped);
	assert_int_equal(st.kept, kept);
	assert_int_equal(out.len, want->len);
	assert_memory_equal(out.p, want->p, want->len);
	free(out.p);
}

static void test_zero_markers_of_the_guest_ram_go(void **state)
{
	(void)state;
	uint8_t page[MIG_PAGE_SIZE], page2[MIG_PAGE_SIZE];
	memset(page, 0xab, sizeof(page));
	memset(page2, 0xcd, sizeof(page2));
	struct buf in = {0}, want = {0};

	ram_setup(&in);
	section(&in, 0x02);
	rec(&in, 0, RAM, NULL, 0);           /* dropped: it named the block */
	rec(&in, 4096, NULL, NULL, 0);       /* dropped */
	rec(&in, 8192, NULL, page, 0);       /* kept: leant on a dropped record, names it now */
	rec(&in, 0, BIOS, NULL, 0);          /* kept: the firmware's block */
	rec(&in, 12288, RAM, NULL, 0);       /* dropped */
	rec(&in, 16384, NULL, page2, 0);     /* kept: the output's last block is the bios's */
	rec(&in, 20480, NULL, NULL, 0x11);   /* kept: not zero; the block is named just before */
	eos_footer(&in);
	section(&in, 0x03);
	rec(&in, RAM_SIZE - 4096, NULL, NULL, 0); /* dropped */
	ram_end(&in);

	ram_setup(&want);
	section(&want, 0x02);
	rec(&want, 8192, RAM, page, 0);
	rec(&want, 0, BIOS, NULL, 0);
	rec(&want, 16384, RAM, page2, 0);
	rec(&want, 20480, NULL, NULL, 0x11);
	eos_footer(&want);
	section(&want, 0x03);
	ram_end(&want);

	assert_strips_to(&in, &want, 4, 4);
	free(in.p), free(want.p);
}

/* a stream with no zero marker of the guest's RAM comes out as it went in */
static void test_nothing_to_drop_is_the_same_stream(void **state)
{
	(void)state;
	uint8_t page[MIG_PAGE_SIZE];
	memset(page, 1, sizeof(page));
	struct buf in = {0};
	ram_setup(&in);
	section(&in, 0x03);
	rec(&in, 0, RAM, page, 0);
	rec(&in, 4096, NULL, NULL, 7);
	rec(&in, 0, BIOS, NULL, 0);
	ram_end(&in);
	assert_strips_to(&in, &in, 0, 3);
	free(in.p);
}

/* A valid stream with one thing changed: each must be refused, not half-understood. */
static void test_what_it_does_not_know_is_refused(void **state)
{
	(void)state;
	struct buf good = {0}, out = {0};
	ram_setup(&good);
	section(&good, 0x03);
	rec(&good, 0, RAM, NULL, 0);
	ram_end(&good);
	assert_int_equal(strip(&good, &out, NULL), 0);

	/* every prefix that ends before the devices' state is a truncated stream (that state
	 * itself is QEMU's to read: it goes through as it is) */
	for (size_t n = 0; n <= good.len - 30; n++) {
		struct buf cut = {.p = good.p, .len = n};
		assert_int_equal(strip(&cut, &out, NULL), -EINVAL);
	}

	const size_t start = 8 + 1 + 4 + 7;                   /* after the configuration */
	const size_t mem = start + 1 + 4 + 4 + 4 + 4;         /* the MEM_SIZE record */
	const size_t end = mem + 8 + 12 + 8 + 8 + 8 + 8 + 5;  /* the END's header */
	const size_t page = end + 5;                          /* the END's record */
	struct {
		size_t at;
		uint8_t v;
	} const bad[] = {
		{0, 'X'},             /* magic */
		{7, 2},               /* file version 2 */
		{start + 6, 'b'},     /* a section other than "ram" ("rbm") */
		{mem + 7, 0x05},      /* MEM_SIZE with a flag bit more */
		{mem + 3, 0x7f},      /* MEM_SIZE's total is not the sum of its blocks */
		{end, 0x04},          /* a device section before the RAM's END */
		{end + 4, 3},         /* END of another section id */
		{page + 7, 0x42},     /* an XBZRLE page (0x40) */
		{page + 6, 0x01},     /* a compressed page (0x100) */
		{page + 7, 0x22},     /* CONTINUE with no block before it */
		{page + 5, 0x10},     /* a page past the block's end (1 MiB) */
		{page + 8, 0},        /* a block name of length 0 */
		{good.len - 30, 0x7e}, /* no device section or end after the RAM */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct buf b = {0};
		put(&b, good.p, good.len);
		b.p[bad[i].at] = bad[i].v;
		assert_int_equal(strip(&b, &out, NULL), -EINVAL);
		free(b.p);
	}

	/* a configuration subsection (a capability or uuid to validate) */
	struct buf sub = {0};
	put(&sub, good.p, start);
	put8(&sub, 0x05);
	put(&sub, good.p + start, good.len - start);
	assert_int_equal(strip(&sub, &out, NULL), -EINVAL);
	free(sub.p);
	free(good.p), free(out.p);
}

static int failing_sink(void *ctx, const uint8_t *p, size_t n)
{
	(void)ctx, (void)p, (void)n;
	return -ENOSPC;
}

static void test_the_sinks_error_is_returned(void **state)
{
	(void)state;
	struct buf in = {0};
	ram_setup(&in);
	section(&in, 0x03);
	rec(&in, 0, RAM, NULL, 0);
	ram_end(&in);
	assert_int_equal(mig_strip_zero(in.p, in.len, MIG_GUEST_RAM_BLOCK, failing_sink, NULL, NULL), -ENOSPC);
	free(in.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero_markers_of_the_guest_ram_go),
		cmocka_unit_test(test_nothing_to_drop_is_the_same_stream),
		cmocka_unit_test(test_what_it_does_not_know_is_refused),
		cmocka_unit_test(test_the_sinks_error_is_returned),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
