/* ext4sb.c — see ext4sb.h. Offsets from the kernel's struct ext4_super_block. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "runtime/vm/ext4sb.h"
#include "util/util.h"

#define SB_BLOCKS_LO 0x04
#define SB_FREE_LO 0x0c
#define SB_LOG_BLOCK 0x18
#define SB_MAGIC 0x38
#define SB_INCOMPAT 0x60
#define SB_BLOCKS_HI 0x150
#define SB_FREE_HI 0x158
#define INCOMPAT_64BIT 0x80u
#define EXT4_MAGIC 0xef53u

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int ext4sb_parse(const uint8_t *sb, size_t len, struct ext4sb *ret)
{
	if (len < EXT4SB_SIZE || ((uint32_t)sb[SB_MAGIC] | (uint32_t)sb[SB_MAGIC + 1] << 8) != EXT4_MAGIC)
		return -EINVAL;
	uint32_t log = le32(sb + SB_LOG_BLOCK);
	if (log > 6) /* 1 KiB << 6 = 64 KiB, ext4's largest */
		return -EINVAL;
	uint64_t blocks = le32(sb + SB_BLOCKS_LO), free_blocks = le32(sb + SB_FREE_LO);
	if (le32(sb + SB_INCOMPAT) & INCOMPAT_64BIT) {
		blocks |= (uint64_t)le32(sb + SB_BLOCKS_HI) << 32;
		free_blocks |= (uint64_t)le32(sb + SB_FREE_HI) << 32;
	}
	/* 2^48 blocks is ext4's own limit; more free than there is means a torn superblock */
	if (blocks == 0 || blocks >> 48 || free_blocks > blocks)
		return -EINVAL;
	*ret = (struct ext4sb){.block_size = UINT32_C(1024) << log, .blocks = blocks, .free_blocks = free_blocks};
	return 0;
}

int ext4sb_read(const char *path, struct ext4sb *ret)
{
	uint8_t sb[EXT4SB_SIZE];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pread(fd, sb, sizeof(sb), EXT4SB_OFFSET);
	if (n < 0)
		return -errno;
	return ext4sb_parse(sb, (size_t)n, ret);
}
