/* ext4sb.h — the two numbers of an ext4 superblock a vm box's disk needs: how much of the
 * image is free (and in which block size). Pure: the caller reads the 1,024 bytes at offset
 * 1,024 of the raw image. The image is paddock's own (mkfs.ext4 of the default rootfs or of an
 * image's tree), but the parser treats the bytes as untrusted anyway (fuzz-ext4sb.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define EXT4SB_OFFSET 1024
#define EXT4SB_SIZE 1024

struct ext4sb {
	uint32_t block_size;  /* 1024 .. 65536 */
	uint64_t blocks;      /* s_blocks_count */
	uint64_t free_blocks; /* s_free_blocks_count (as mkfs or the last unmount left it) */
};

/* -EINVAL when sb (len bytes) is not an ext4 superblock with sane sizes. */
int ext4sb_parse(const uint8_t *sb, size_t len, struct ext4sb *ret);
/* The same, read from the raw image at path (-errno). */
int ext4sb_read(const char *path, struct ext4sb *ret);
