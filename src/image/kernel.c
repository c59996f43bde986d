/* kernel.c — bzImage payload extraction, decompression to vmlinux, PVH note check, and the
 * apt-cache line that names the kernel package. Pure: see kernel.h. */
#include <elf.h>
#include <lz4.h>
#include <lzma.h>
#include <zstd.h>

#include "image/kernel.h"

#define BZ_SETUP_SECTS 0x1f1
#define BZ_BOOT_FLAG 0x1fe
#define BZ_HDRS 0x202
#define BZ_VERSION 0x206
#define BZ_PAYLOAD_OFFSET 0x248
#define BZ_PAYLOAD_LENGTH 0x24c
#define BZ_HDR_END 0x250
#define LZ4_LEGACY_MAGIC 0x184c2102u
#define LZ4_LEGACY_BLOCK (8u * 1024u * 1024u)
#define XEN_ELFNOTE_PHYS32_ENTRY 18

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

const char *kernel_comp_name(enum kernel_comp c)
{
	static const char *const names[KERNEL_COMP_MAX] = {
		[KERNEL_COMP_LZ4] = "lz4", [KERNEL_COMP_XZ] = "xz", [KERNEL_COMP_ZSTD] = "zstd"};
	return c > KERNEL_COMP_INVALID && c < KERNEL_COMP_MAX ? names[c] : "unknown";
}

static enum kernel_comp comp_detect(const uint8_t *p, size_t len)
{
	static const uint8_t xz[6] = {0xfd, '7', 'z', 'X', 'Z', 0};
	if (len >= 4 && get32(p) == LZ4_LEGACY_MAGIC)
		return KERNEL_COMP_LZ4;
	if (len >= 6 && memcmp(p, xz, 6) == 0)
		return KERNEL_COMP_XZ;
	if (len >= 4 && get32(p) == ZSTD_MAGICNUMBER)
		return KERNEL_COMP_ZSTD;
	return KERNEL_COMP_INVALID;
}

int kernel_bzimage_payload(const uint8_t *img, size_t len, struct kernel_payload *ret)
{
	if (len < BZ_HDR_END || get16(img + BZ_BOOT_FLAG) != 0xaa55 || memcmp(img + BZ_HDRS, "HdrS", 4) != 0 ||
	    get16(img + BZ_VERSION) < 0x208)
		return -EBADMSG;
	size_t sects = img[BZ_SETUP_SECTS] ? img[BZ_SETUP_SECTS] : 4;
	size_t base = (sects + 1) * 512;
	size_t off = get32(img + BZ_PAYLOAD_OFFSET), plen = get32(img + BZ_PAYLOAD_LENGTH);
	/* all in size_t from u32 values: no overflow on 64-bit */
	if (base > len || off > len - base || plen > len - base - off || plen < 8)
		return -EBADMSG;
	const uint8_t *p = img + base + off;
	enum kernel_comp comp = comp_detect(p, plen);
	if (comp == KERNEL_COMP_INVALID)
		return -EPROTONOSUPPORT;
	uint32_t out = get32(p + plen - 4);
	if (out == 0 || out > KERNEL_MAX_VMLINUX)
		return -EBADMSG;
	*ret = (struct kernel_payload){.data = p, .len = plen - 4, .comp = comp, .out_size = out};
	return 0;
}

/* lz4 legacy: magic, then blocks of (u32 compressed size, data), each expanding to at most
 * 8 MB; a repeated magic starts another concatenated stream. */
static int lz4_legacy(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *ret_len)
{
	size_t pos = 4, got = 0;
	while (len - pos >= 4) {
		uint32_t bs = get32(in + pos);
		pos += 4;
		if (bs == LZ4_LEGACY_MAGIC)
			continue;
		if (bs > len - pos || bs > (uint32_t)LZ4_compressBound(LZ4_LEGACY_BLOCK))
			return -EBADMSG;
		size_t room = cap - got < LZ4_LEGACY_BLOCK ? cap - got : LZ4_LEGACY_BLOCK;
		int n = LZ4_decompress_safe((const char *)in + pos, (char *)out + got, (int)bs, (int)room);
		if (n < 0)
			return -EBADMSG;
		got += (size_t)n;
		pos += bs;
	}
	*ret_len = got;
	return pos == len ? 0 : -EBADMSG;
}

static int xz_buf(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *ret_len)
{
	uint64_t memlimit = 256u << 20;
	size_t in_pos = 0, out_pos = 0;
	lzma_ret r = lzma_stream_buffer_decode(&memlimit, 0, NULL, in, &in_pos, len, out, &out_pos, cap);
	if (r != LZMA_OK)
		return -EBADMSG;
	*ret_len = out_pos;
	return 0;
}

static int zstd_buf(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *ret_len)
{
	size_t n = ZSTD_decompress(out, cap, in, len);
	if (ZSTD_isError(n))
		return -EBADMSG;
	*ret_len = n;
	return 0;
}

int kernel_decompress(const struct kernel_payload *p, uint8_t **ret_buf, size_t *ret_len)
{
	if (p->out_size == 0 || p->out_size > KERNEL_MAX_VMLINUX)
		return -EBADMSG;
	_cleanup_free_ uint8_t *out = xmalloc(p->out_size);
	size_t n = 0;
	int r;
	switch (p->comp) {
	case KERNEL_COMP_LZ4: r = lz4_legacy(p->data, p->len, out, p->out_size, &n); break;
	case KERNEL_COMP_XZ: r = xz_buf(p->data, p->len, out, p->out_size, &n); break;
	case KERNEL_COMP_ZSTD: r = zstd_buf(p->data, p->len, out, p->out_size, &n); break;
	default: return -EPROTONOSUPPORT;
	}
	if (r < 0)
		return r;
	if (n != p->out_size)
		return -EBADMSG;
	*ret_buf = TAKE_PTR(out);
	*ret_len = n;
	return 0;
}

static size_t align4(size_t n) { return (n + 3) & ~(size_t)3; }

/* Walks the notes of one PT_NOTE segment [p, p+len); 1 when the PVH entry note is there. */
static int notes_have_pvh(const uint8_t *p, size_t len, unsigned *budget)
{
	size_t pos = 0;
	while (len - pos >= 12) {
		if ((*budget)-- == 0)
			return -EBADMSG;
		size_t namesz = get32(p + pos), descsz = get32(p + pos + 4);
		uint32_t type = get32(p + pos + 8);
		pos += 12;
		if (namesz > len - pos || align4(namesz) > len - pos)
			return -EBADMSG;
		const uint8_t *name = p + pos;
		pos += align4(namesz);
		if (descsz > len - pos)
			return -EBADMSG;
		pos += descsz;
		size_t pad = align4(descsz) - descsz;
		pos += pad < len - pos ? pad : len - pos;
		if (type == XEN_ELFNOTE_PHYS32_ENTRY && namesz == 4 && memcmp(name, "Xen", 4) == 0 && descsz >= 4)
			return 1;
	}
	return 0;
}

static int elf_check_header(const uint8_t *elf, size_t len, const Elf64_Ehdr **ret)
{
	if (len < sizeof(Elf64_Ehdr) || memcmp(elf, ELFMAG, SELFMAG) != 0)
		return -EBADMSG;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_machine != EM_X86_64 || eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum > KERNEL_MAX_PHDRS)
		return -EBADMSG;
	if (eh->e_phoff > len || (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
		return -EBADMSG;
	*ret = eh;
	return 0;
}

int kernel_elf_has_pvh(const uint8_t *elf, size_t len)
{
	const Elf64_Ehdr *eh;
	int r = elf_check_header(elf, len, &eh);
	if (r < 0)
		return r;
	unsigned budget = KERNEL_MAX_NOTES;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, elf + eh->e_phoff + i * sizeof(ph), sizeof(ph)); /* e_phoff may be unaligned */
		if (ph.p_type != PT_NOTE)
			continue;
		if (ph.p_offset > len || ph.p_filesz > len - ph.p_offset)
			return -EBADMSG;
		r = notes_have_pvh(elf + ph.p_offset, ph.p_filesz, &budget);
		if (r != 0)
			return r;
	}
	return 0;
}

int kernel_elf_trim(uint8_t *elf, size_t len)
{
	const Elf64_Ehdr *eh;
	int r = elf_check_header(elf, len, &eh);
	if (r < 0)
		return r;
	const size_t headers = (size_t)eh->e_phoff + (size_t)eh->e_phnum * sizeof(Elf64_Phdr);
	for (size_t i = 0; i < eh->e_phnum; i++) {
		uint8_t *at = elf + eh->e_phoff + i * sizeof(Elf64_Phdr);
		Elf64_Phdr ph;
		memcpy(&ph, at, sizeof(ph));
		if (ph.p_offset > len || ph.p_filesz > len - ph.p_offset)
			return -EBADMSG;
		/* the program headers are what changes: a note over them would change with them */
		if (ph.p_type == PT_NOTE && ph.p_filesz > 0 && ph.p_offset < headers)
			return -EBADMSG;
		if (ph.p_type == PT_LOAD && ph.p_memsz < ph.p_filesz)
			return -EBADMSG;
	}
	for (size_t i = 0; i < eh->e_phnum; i++) {
		uint8_t *at = elf + eh->e_phoff + i * sizeof(Elf64_Phdr);
		Elf64_Phdr ph;
		memcpy(&ph, at, sizeof(ph));
		if (ph.p_type != PT_LOAD)
			continue;
		while (ph.p_filesz > 0 && elf[ph.p_offset + ph.p_filesz - 1] == 0)
			ph.p_filesz--;
		memcpy(at, &ph, sizeof(ph));
	}
	return 0;
}

bool kernel_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64 || streq(s, ".") || streq(s, ".."))
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-") == n;
}

int kernel_apt_parse_depends(const char *out, char **ret_pkg, char **ret_release)
{
	static const char key[] = "Depends: linux-image-";
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		l += strspn(l, " \t|");
		if (!startswith(l, key))
			continue;
		const char *name = l + strlen("Depends: ");
		size_t n = strcspn(name, " \t\r\n<>");
		_cleanup_free_ char *pkg = xstrndup(name, n);
		const char *rel = pkg + strlen("linux-image-");
		/* the metapackage may also depend on non-versioned helpers; a release starts with a digit */
		if (*rel < '0' || *rel > '9' || !kernel_name_ok(pkg))
			continue;
		*ret_release = xstrdup(rel);
		*ret_pkg = TAKE_PTR(pkg);
		return 0;
	}
	return -ENOENT;
}
