/* test-ext4sb.c — the ext4 superblock fields a vm box's disk size is computed from; checked
 * against a filesystem mkfs.ext4 made when it is installed (the build's dependencies: e2fsprogs). */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/vm/ext4sb.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static void sb_make(uint8_t *sb, uint32_t log, uint64_t blocks, uint64_t free_blocks, bool bit64)
{
	memset(sb, 0, EXT4SB_SIZE);
	sb[0x38] = 0x53, sb[0x39] = 0xef;
	put32(sb + 0x18, log);
	put32(sb + 0x04, (uint32_t)blocks);
	put32(sb + 0x0c, (uint32_t)free_blocks);
	if (bit64) {
		put32(sb + 0x60, 0x80);
		put32(sb + 0x150, (uint32_t)(blocks >> 32));
		put32(sb + 0x158, (uint32_t)(free_blocks >> 32));
	}
}

static void test_fields(void **state)
{
	(void)state;
	uint8_t sb[EXT4SB_SIZE];
	struct ext4sb e;
	sb_make(sb, 2, 524288, 400000, false);
	assert_int_equal(ext4sb_parse(sb, sizeof(sb), &e), 0);
	assert_int_equal(e.block_size, 4096);
	assert_int_equal(e.blocks, 524288);
	assert_int_equal(e.free_blocks, 400000);
	/* 64bit: the high halves count */
	sb_make(sb, 2, (UINT64_C(3) << 32) + 5, (UINT64_C(2) << 32) + 7, true);
	assert_int_equal(ext4sb_parse(sb, sizeof(sb), &e), 0);
	assert_true(e.blocks == (UINT64_C(3) << 32) + 5 && e.free_blocks == (UINT64_C(2) << 32) + 7);
	/* without the feature bit the high halves are other fields: ignored */
	sb_make(sb, 0, 1000, 10, false);
	put32(sb + 0x150, 9);
	assert_int_equal(ext4sb_parse(sb, sizeof(sb), &e), 0);
	assert_true(e.block_size == 1024 && e.blocks == 1000 && e.free_blocks == 10);
}

static void test_rejects(void **state)
{
	(void)state;
	uint8_t sb[EXT4SB_SIZE];
	struct ext4sb e;
	sb_make(sb, 2, 100, 10, false);
	assert_int_equal(ext4sb_parse(sb, sizeof(sb) - 1, &e), -EINVAL); /* short */
	sb[0x38] = 0;
	assert_int_equal(ext4sb_parse(sb, sizeof(sb), &e), -EINVAL); /* no magic */
	sb_make(sb, 7, 100, 10, false);
	assert_int_equal(ext4sb_parse(sb, sizeof(sb), &e), -EINVAL); /* 128 KiB blocks */
	sb_make(sb, 2, 100, 101, false);
	assert_int_equal(ext4sb_parse(sb, sizeof(sb), &e), -EINVAL); /* more free than blocks */
	sb_make(sb, 2, 0, 0, false);
	assert_int_equal(ext4sb_parse(sb, sizeof(sb), &e), -EINVAL);
	sb_make(sb, 2, UINT64_C(1) << 50, 0, true);
	assert_int_equal(ext4sb_parse(sb, sizeof(sb), &e), -EINVAL); /* past ext4's 2^48 */
	assert_int_equal(ext4sb_read("/nonexistent/image", &e), -ENOENT);
}

/* A real filesystem: what mkfs.ext4 -d made, as dumpe2fs reads it */
static void test_real_image(void **state)
{
	(void)state;
	char dir[] = "/tmp/test-ext4sb.XXXXXX", cmd[1024], img[64];
	assert_non_null(mkdtemp(dir));
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/t && head -c 3000000 /dev/zero > %s/t/f && PATH=$PATH:/sbin:/usr/sbin "
		 "mkfs.ext4 -q -F -m 0 -d %s/t %s 64M && PATH=$PATH:/sbin:/usr/sbin dumpe2fs -h %s 2>/dev/null | "
		 "awk -F: '/^Block count/{b=$2} /^Free blocks/{f=$2} /^Block size/{s=$2} END{print b+0, f+0, s+0}' > %s/want",
		 dir, dir, dir, img, img, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/want", dir);
	FILE *f = fopen(cmd, "r");
	assert_non_null(f);
	unsigned long long b, fr, s;
	assert_int_equal(fscanf(f, "%llu %llu %llu", &b, &fr, &s), 3);
	fclose(f);
	struct ext4sb e;
	assert_int_equal(ext4sb_read(img, &e), 0);
	assert_true(e.blocks == b && e.free_blocks == fr && e.block_size == s);
	/* the 3 MB file is not free */
	assert_true(e.free_blocks * e.block_size < (UINT64_C(64) << 20) - 3000000);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_real_image),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
