/* test-kernel-modules.c — .modinfo parsing and the module load order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <elf.h>

#include "image/kernel_modules.h"

/* A relocatable ELF64 with sections: null, .modinfo, .shstrtab. */
static uint8_t *make_ko(const char *modinfo, size_t milen, size_t *ret_len)
{
	static const char shstr[] = "\0.modinfo\0.shstrtab";
	size_t len = 4096;
	uint8_t *ko = calloc(1, len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)ko;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_REL;
	eh->e_machine = EM_X86_64;
	eh->e_shoff = 2048;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	eh->e_shstrndx = 2;
	memcpy(ko + 256, modinfo, milen);
	memcpy(ko + 1024, shstr, sizeof(shstr));
	Elf64_Shdr *sh = (Elf64_Shdr *)(ko + 2048);
	sh[1] = (Elf64_Shdr){.sh_name = 1, .sh_type = SHT_PROGBITS, .sh_offset = 256, .sh_size = milen};
	sh[2] = (Elf64_Shdr){.sh_name = 10, .sh_type = SHT_STRTAB, .sh_offset = 1024, .sh_size = sizeof(shstr)};
	*ret_len = len;
	return ko;
}

#define MI(s) s, sizeof(s)

static void test_modinfo(void **state)
{
	size_t len;
	uint8_t *ko = make_ko(MI("license=GPL\0depends=virtio,virtio_ring\0name=virtio_blk\0vermagic=6.1"), &len);
	char *v;
	assert_int_equal(kmod_modinfo_get(ko, len, "depends", &v), 0);
	assert_string_equal(v, "virtio,virtio_ring");
	free(v);
	assert_int_equal(kmod_modinfo_get(ko, len, "name", &v), 0);
	assert_string_equal(v, "virtio_blk");
	free(v);
	assert_int_equal(kmod_modinfo_get(ko, len, "vermagic", &v), 0);
	assert_string_equal(v, "6.1");
	free(v);
	assert_int_equal(kmod_modinfo_get(ko, len, "dep", &v), -ENOENT);
	assert_int_equal(kmod_modinfo_get(ko, len, "alias", &v), -ENOENT);
	free(ko);
}

static void test_modinfo_malformed(void **state)
{
	size_t len;
	uint8_t *ko = make_ko(MI("depends="), &len);
	char *v;
	assert_int_equal(kmod_modinfo_get(ko, len, "depends", &v), 0);
	assert_string_equal(v, "");
	free(v);
	Elf64_Shdr *sh = (Elf64_Shdr *)(ko + 2048);
	sh[1].sh_size = 1u << 30; /* past the end of the file */
	assert_int_equal(kmod_modinfo_get(ko, len, "depends", &v), -EBADMSG);
	sh[1].sh_size = 9;
	sh[2].sh_name = 4000; /* strtab name out of range: the section is just not found */
	sh[1].sh_name = 4000;
	assert_int_equal(kmod_modinfo_get(ko, len, "depends", &v), -ENOENT);
	((Elf64_Ehdr *)ko)->e_shstrndx = 7;
	assert_int_equal(kmod_modinfo_get(ko, len, "depends", &v), -EBADMSG);
	((Elf64_Ehdr *)ko)->e_shoff = 4090;
	assert_int_equal(kmod_modinfo_get(ko, len, "depends", &v), -EBADMSG);
	assert_int_equal(kmod_modinfo_get(ko, 20, "depends", &v), -EBADMSG);
	free(ko);
}

static void test_name_from_path(void **state)
{
	char *n = kmod_name_from_path("kernel/drivers/char/hw_random/virtio-rng.ko");
	assert_string_equal(n, "virtio_rng");
	free(n);
	n = kmod_name_from_path("ext4.ko.xz");
	assert_string_equal(n, "ext4");
	free(n);
	assert_null(kmod_name_from_path("kernel/fs/ext4/"));
	assert_null(kmod_name_from_path("README"));
	assert_null(kmod_name_from_path(".ko"));
}

static void test_split_and_builtin(void **state)
{
	char **v;
	assert_int_equal(kmod_split_depends("virtio,,virtio_ring", &v), 0);
	assert_int_equal(strv_len(v), 2);
	assert_string_equal(v[1], "virtio_ring");
	strv_free(v);
	assert_int_equal(kmod_split_depends("", &v), 0);
	assert_int_equal(strv_len(v), 0);
	strv_free(v);
	assert_int_equal(kmod_split_depends("ok,../../etc", &v), -EBADMSG);
	v = kmod_parse_builtin("kernel/fs/ext4/ext4.ko\nkernel/crypto/crc32c_generic.ko\n\ngarbage\n");
	assert_int_equal(strv_len(v), 2);
	assert_string_equal(v[0], "ext4");
	strv_free(v);
}

/* fake module table: name → comma-separated deps */
static const char *const table[][2] = {
	{"virtio_ring", ""},
	{"virtio", "virtio_ring"},
	{"virtio_mmio", "virtio,virtio_ring"},
	{"virtio_net", "virtio_ring,virtio,net_failover"},
	{"net_failover", "failover"},
	{"failover", ""},
	{"loop_a", "loop_b"},
	{"loop_b", "loop_a"},
	{"needs_missing", "nowhere"},
};

static int fake_deps(void *userdata, const char *name, char ***ret)
{
	for (size_t i = 0; i < ARRAY_SIZE(table); i++)
		if (streq(table[i][0], name))
			return kmod_split_depends(table[i][1], ret);
	return -ENOENT;
}

static void test_resolve_order(void **state)
{
	const struct kmod_want want[] = {{.name = "virtio_mmio"}, {.name = "virtio_net"}, {.name = "ext4"},
					 {.name = "crc32c_generic", .optional = true}};
	char *builtin[] = {"ext4", NULL};
	char **order;
	pd_err err = {0};
	assert_int_equal(kmod_resolve(want, ARRAY_SIZE(want), builtin, fake_deps, NULL, &order, &err), 0);
	const char *expect[] = {"virtio_ring", "virtio", "virtio_mmio", "failover", "net_failover", "virtio_net"};
	assert_int_equal(strv_len(order), ARRAY_SIZE(expect));
	for (size_t i = 0; i < ARRAY_SIZE(expect); i++)
		assert_string_equal(order[i], expect[i]);
	strv_free(order);
}

static void test_resolve_errors(void **state)
{
	char **order = NULL;
	pd_err err = {0};
	const struct kmod_want cyc[] = {{.name = "loop_a"}};
	assert_int_equal(kmod_resolve(cyc, 1, NULL, fake_deps, NULL, &order, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "loop_"));
	const struct kmod_want miss[] = {{.name = "needs_missing"}};
	assert_int_equal(kmod_resolve(miss, 1, NULL, fake_deps, NULL, &order, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nowhere"));
	const struct kmod_want req[] = {{.name = "absent"}};
	assert_int_equal(kmod_resolve(req, 1, NULL, fake_deps, NULL, &order, &err), -ENOENT);
	assert_null(order);
}

static void test_strip_signature(void **state)
{
	static const char magic[] = "~Module signature appended~\n";
	uint8_t m[256] = "ELFBODY";
	size_t body = 7, siglen = 5, len = body + siglen + 12 + 28;
	memset(m + body, 'S', siglen);
	memset(m + body + siglen, 0, 12);
	m[body + siglen + 11] = (uint8_t)siglen; /* be32 sig_len is the last field */
	memcpy(m + body + siglen + 12, magic, 28);
	assert_int_equal(kmod_strip_signature(m, len), body);
	/* no trailer, or a signature longer than the file: unchanged */
	assert_int_equal(kmod_strip_signature(m, body), body);
	m[body + siglen + 11] = 200;
	assert_int_equal(kmod_strip_signature(m, len), len);
	assert_int_equal(kmod_strip_signature(m, 10), 10);
}

static void test_guest_list(void **state)
{
	/* the list the guest needs: the transport first, the root filesystem present */
	assert_string_equal(kmod_guest_wanted[0].name, "virtio_mmio");
	bool ext4 = false, console = false;
	for (size_t i = 0; i < kmod_guest_n_wanted; i++) {
		ext4 |= streq(kmod_guest_wanted[i].name, "ext4") && !kmod_guest_wanted[i].optional;
		console |= streq(kmod_guest_wanted[i].name, "virtio_console");
	}
	assert_true(ext4 && console);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modinfo),
		cmocka_unit_test(test_modinfo_malformed),
		cmocka_unit_test(test_name_from_path),
		cmocka_unit_test(test_split_and_builtin),
		cmocka_unit_test(test_resolve_order),
		cmocka_unit_test(test_resolve_errors),
		cmocka_unit_test(test_strip_signature),
		cmocka_unit_test(test_guest_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
