/* test-kernel.c — bzImage payload extraction, decompression, PVH note detection, apt parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <elf.h>
#include <lz4.h>
#include <lzma.h>
#include <zstd.h>

#include "image/kernel.h"

#define BASE 1024 /* (setup_sects = 1) + 1 sectors */
#define POFF 16

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A bzImage whose payload is payload[0..len) followed by the appended size. */
static uint8_t *make_bzimage(const uint8_t *payload, size_t len, uint32_t out_size, size_t *ret_len)
{
	size_t total = BASE + POFF + len + 4;
	uint8_t *img = calloc(1, total);
	img[0x1f1] = 1;
	img[0x1fe] = 0x55;
	img[0x1ff] = 0xaa;
	memcpy(img + 0x202, "HdrS", 4);
	img[0x206] = 0x0f;
	img[0x207] = 0x02;
	put32(img + 0x248, POFF);
	put32(img + 0x24c, (uint32_t)len + 4);
	memcpy(img + BASE + POFF, payload, len);
	put32(img + BASE + POFF + len, out_size);
	*ret_len = total;
	return img;
}

static uint8_t *sample(size_t n)
{
	uint8_t *s = malloc(n);
	for (size_t i = 0; i < n; i++)
		s[i] = (uint8_t)((i * 7) ^ (i >> 9));
	return s;
}

static size_t lz4_legacy(const uint8_t *in, size_t n, uint8_t *out)
{
	put32(out, 0x184c2102u);
	int c = LZ4_compress_default((const char *)in, (char *)out + 8, (int)n, LZ4_compressBound((int)n));
	put32(out + 4, (uint32_t)c);
	return 8 + (size_t)c;
}

static void roundtrip(enum kernel_comp comp)
{
	const size_t n = 100000;
	uint8_t *s = sample(n), *c = malloc(2 * n + 1024);
	size_t clen = 0;
	if (comp == KERNEL_COMP_LZ4)
		clen = lz4_legacy(s, n, c);
	else if (comp == KERNEL_COMP_ZSTD)
		clen = ZSTD_compress(c, 2 * n + 1024, s, n, 3);
	else
		assert_int_equal(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, s, n, c, &clen, 2 * n + 1024), LZMA_OK);
	size_t ilen;
	uint8_t *img = make_bzimage(c, clen, (uint32_t)n, &ilen);
	struct kernel_payload p;
	assert_int_equal(kernel_bzimage_payload(img, ilen, &p), 0);
	assert_int_equal(p.comp, comp);
	assert_int_equal(p.out_size, n);
	assert_int_equal(p.len, clen);
	uint8_t *out;
	size_t olen;
	assert_int_equal(kernel_decompress(&p, &out, &olen), 0);
	assert_int_equal(olen, n);
	assert_memory_equal(out, s, n);
	free(out);
	/* a wrong appended size is refused, not trusted */
	p.out_size = (uint32_t)n - 1;
	assert_int_equal(kernel_decompress(&p, &out, &olen), -EBADMSG);
	free(img);
	free(c);
	free(s);
}

static void test_lz4(void **state) { roundtrip(KERNEL_COMP_LZ4); }
static void test_zstd(void **state) { roundtrip(KERNEL_COMP_ZSTD); }
static void test_xz(void **state) { roundtrip(KERNEL_COMP_XZ); }

static void test_lz4_corrupt(void **state)
{
	const size_t n = 50000;
	uint8_t *s = sample(n), *c = malloc(2 * n);
	size_t clen = lz4_legacy(s, n, c), ilen;
	put32(c + 4, (uint32_t)clen); /* block size larger than the data left */
	uint8_t *img = make_bzimage(c, clen, (uint32_t)n, &ilen);
	struct kernel_payload p;
	uint8_t *out;
	size_t olen;
	assert_int_equal(kernel_bzimage_payload(img, ilen, &p), 0);
	assert_int_equal(kernel_decompress(&p, &out, &olen), -EBADMSG);
	free(img);
	free(c);
	free(s);
}

static void test_bzimage_rejects(void **state)
{
	uint8_t gz[16] = {0x1f, 0x8b, 8};
	size_t ilen;
	uint8_t *img = make_bzimage(gz, sizeof(gz), 100, &ilen);
	struct kernel_payload p;
	assert_int_equal(kernel_bzimage_payload(img, ilen, &p), -EPROTONOSUPPORT);
	/* payload past the end */
	put32(img + 0x24c, (uint32_t)ilen);
	assert_int_equal(kernel_bzimage_payload(img, ilen, &p), -EBADMSG);
	/* not a bzImage */
	img[0x202] = 'X';
	assert_int_equal(kernel_bzimage_payload(img, ilen, &p), -EBADMSG);
	assert_int_equal(kernel_bzimage_payload(img, 100, &p), -EBADMSG);
	free(img);
	/* absurd appended size */
	uint8_t lz[8] = {0x02, 0x21, 0x4c, 0x18};
	img = make_bzimage(lz, sizeof(lz), 0xffffffffu, &ilen);
	assert_int_equal(kernel_bzimage_payload(img, ilen, &p), -EBADMSG);
	free(img);
}

/* ---- PVH note ---- */

static size_t note(uint8_t *p, const char *name, uint32_t type, uint32_t descsz)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1;
	put32(p, namesz);
	put32(p + 4, descsz);
	put32(p + 8, type);
	memcpy(p + 12, name, namesz);
	size_t pos = 12 + ((namesz + 3) & ~3u);
	memset(p + pos, 0xab, descsz);
	return pos + ((descsz + 3) & ~3u);
}

static uint8_t *make_elf(bool pvh, size_t *ret_len)
{
	uint8_t *e = calloc(1, 4096);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)e;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_machine = EM_X86_64;
	eh->e_phoff = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 2;
	Elf64_Phdr *ph = (Elf64_Phdr *)(e + sizeof(*eh));
	ph[0] = (Elf64_Phdr){.p_type = PT_LOAD, .p_offset = 0, .p_filesz = 64};
	size_t pos = 1024;
	pos += note(e + pos, "GNU", 3, 20);
	pos += note(e + pos, "Xen", 6, 6);
	if (pvh)
		pos += note(e + pos, "Xen", 18, 8);
	ph[1] = (Elf64_Phdr){.p_type = PT_NOTE, .p_offset = 1024, .p_filesz = pos - 1024};
	*ret_len = 4096;
	return e;
}

static void test_pvh(void **state)
{
	size_t len;
	uint8_t *e = make_elf(true, &len);
	assert_int_equal(kernel_elf_has_pvh(e, len), 1);
	free(e);
	e = make_elf(false, &len);
	assert_int_equal(kernel_elf_has_pvh(e, len), 0);
	free(e);
}

static void test_pvh_malformed(void **state)
{
	size_t len;
	uint8_t *e = make_elf(true, &len);
	Elf64_Phdr *ph = (Elf64_Phdr *)(e + sizeof(Elf64_Ehdr));
	ph[1].p_filesz = 8000; /* note segment past the end */
	assert_int_equal(kernel_elf_has_pvh(e, len), -EBADMSG);
	ph[1].p_filesz = 40;
	put32(e + 1024, 0x7fffffff); /* name size past the segment */
	assert_int_equal(kernel_elf_has_pvh(e, len), -EBADMSG);
	((Elf64_Ehdr *)e)->e_phnum = 1000;
	assert_int_equal(kernel_elf_has_pvh(e, len), -EBADMSG);
	e[EI_CLASS] = ELFCLASS32;
	assert_int_equal(kernel_elf_has_pvh(e, len), -EBADMSG);
	assert_int_equal(kernel_elf_has_pvh(e, 10), -EBADMSG);
	free(e);
}

/* The zeros at the end of a loadable segment are no longer read (p_filesz shrinks, p_memsz
 * stays: the loader zero-fills); nothing else of the file changes. */
static void test_trim(void **state)
{
	size_t len;
	uint8_t *e = make_elf(true, &len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)e;
	Elf64_Phdr *ph = (Elf64_Phdr *)(e + sizeof(*eh));
	/* a data segment at 2048: 100 bytes of data, then 900 zeros stored, 3000 more in memory */
	eh->e_phnum = 3;
	memmove(&ph[2], &ph[1], sizeof(ph[1]));
	ph[1] = (Elf64_Phdr){.p_type = PT_LOAD, .p_offset = 2048, .p_filesz = 1000, .p_memsz = 4000};
	memset(e + 2048, 0x5a, 100);
	ph[0].p_memsz = ph[0].p_filesz;
	eh->e_shoff = 3500;
	eh->e_shnum = 5;
	eh->e_shstrndx = 0x404; /* the header (segment 0) ends in a non-zero byte: it keeps its size */
	uint8_t *before = malloc(len);
	memcpy(before, e, len);
	assert_int_equal(kernel_elf_trim(e, len), 0);
	assert_int_equal(ph[1].p_filesz, 100);
	assert_int_equal(ph[1].p_memsz, 4000);
	assert_int_equal(eh->e_shoff, 3500); /* the section headers stay */
	assert_int_equal(kernel_elf_has_pvh(e, len), 1);
	size_t phf = sizeof(*eh) + sizeof(Elf64_Phdr) + offsetof(Elf64_Phdr, p_filesz);
	for (size_t i = 0; i < len; i++) /* only that p_filesz changed */
		if (i < phf || i >= phf + sizeof(Elf64_Xword))
			assert_int_equal(e[i], before[i]);
	/* a segment of zeros only reads nothing */
	memset(e + 2048, 0, 100);
	assert_int_equal(kernel_elf_trim(e, len), 0);
	assert_int_equal(ph[1].p_filesz, 0);
	/* malformed: memory smaller than the file, a segment past the end, a note over the
	 * program headers; each leaves the buffer as it was */
	ph[1].p_filesz = 10;
	ph[1].p_memsz = 5;
	memcpy(before, e, len);
	assert_int_equal(kernel_elf_trim(e, len), -EBADMSG);
	ph[1].p_memsz = 4000;
	ph[1].p_offset = len - 4;
	assert_int_equal(kernel_elf_trim(e, len), -EBADMSG);
	assert_int_equal(kernel_elf_trim(e, 10), -EBADMSG);
	ph[1].p_offset = 2048;
	memset(e + 2048, 0x5a, 10);
	ph[2].p_offset = 100;
	memcpy(before, e, len);
	assert_int_equal(kernel_elf_trim(e, len), -EBADMSG);
	assert_memory_equal(e, before, len);
	free(before);
	free(e);
}

static void test_apt_depends(void **state)
{
	char *pkg = NULL, *rel = NULL;
	const char *out = "linux-image-cloud-amd64\n  Depends: linux-image-6.1.0-57-cloud-amd64\n";
	assert_int_equal(kernel_apt_parse_depends(out, &pkg, &rel), 0);
	assert_string_equal(pkg, "linux-image-6.1.0-57-cloud-amd64");
	assert_string_equal(rel, "6.1.0-57-cloud-amd64");
	free(pkg);
	free(rel);
	/* helpers before the versioned image, alternatives marked with '|' */
	out = "linux-image-cloud-amd64\n  Depends: linux-image-helper\n |Depends: linux-image-6.12.9+bpo-cloud-amd64\n";
	assert_int_equal(kernel_apt_parse_depends(out, &pkg, &rel), 0);
	assert_string_equal(rel, "6.12.9+bpo-cloud-amd64");
	free(pkg);
	free(rel);
	assert_int_equal(kernel_apt_parse_depends("nothing here\n", &pkg, &rel), -ENOENT);
	assert_int_equal(kernel_apt_parse_depends("  Depends: linux-image-6.1/../../x\n", &pkg, &rel), -ENOENT);
	assert_int_equal(kernel_apt_parse_depends("", &pkg, &rel), -ENOENT);
}

static void test_name_ok(void **state)
{
	assert_true(kernel_name_ok("6.1.0-57-cloud-amd64"));
	assert_true(kernel_name_ok("virtio_blk"));
	assert_false(kernel_name_ok(".."));
	assert_false(kernel_name_ok("a/b"));
	assert_false(kernel_name_ok(""));
	assert_false(kernel_name_ok("a b"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lz4),
		cmocka_unit_test(test_zstd),
		cmocka_unit_test(test_xz),
		cmocka_unit_test(test_lz4_corrupt),
		cmocka_unit_test(test_bzimage_rejects),
		cmocka_unit_test(test_pvh),
		cmocka_unit_test(test_pvh_malformed),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_apt_depends),
		cmocka_unit_test(test_name_ok),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
