/* kernel_modules.c — .modinfo parsing and the module load order. Pure: see kernel_modules.h. */
#include <elf.h>

#include "image/kernel.h"
#include "image/kernel_modules.h"

const struct kmod_want kmod_guest_wanted[] = {
	{.name = "virtio_mmio"},        /* the transport of every -M microvm device (found via ACPI) */
	{.name = "virtio_console"},     /* the control channel: virtio-serial port "paddock.ctl" */
	{.name = "virtio_blk"},         /* the root disk */
	{.name = "virtio_net"},         /* the one network interface, fed by the supervisor's netstack */
	{.name = "virtio_balloon"},     /* memory given back to the host (free page reporting) */
	{.name = "virtio_rng"},         /* entropy from the host, so early getrandom() never blocks */
	{.name = "ext4"},               /* the root filesystem (built in on Debian) */
	{.name = "crc32c_generic", .optional = true}, /* ext4 metadata checksums, loaded by name at mount time */
	{.name = "overlay"},            /* layered views inside the guest (workspace modes) */
};
const size_t kmod_guest_n_wanted = ARRAY_SIZE(kmod_guest_wanted);

char *kmod_name_from_path(const char *path)
{
	static const char *const exts[] = {".ko", ".ko.xz", ".ko.zst", ".ko.gz"};
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base), stem = 0;
	for (size_t i = 0; i < ARRAY_SIZE(exts); i++) {
		size_t e = strlen(exts[i]);
		if (n > e && streq(base + n - e, exts[i]))
			stem = n - e;
	}
	if (stem == 0)
		return NULL;
	char *name = xstrndup(base, stem);
	for (char *p = name; *p; p++)
		if (*p == '-')
			*p = '_';
	if (!kernel_name_ok(name)) {
		free(name);
		return NULL;
	}
	return name;
}

static int shdr_at(const uint8_t *ko, size_t len, const Elf64_Ehdr *eh, size_t i, Elf64_Shdr *ret)
{
	memcpy(ret, ko + eh->e_shoff + i * sizeof(*ret), sizeof(*ret));
	if (ret->sh_type == SHT_NOBITS)
		ret->sh_size = 0;
	return ret->sh_offset > len || ret->sh_size > len - ret->sh_offset ? -EBADMSG : 0;
}

/* The [ret_data, ret_data+ret_len) bytes of the section called name, -ENOENT if none. */
static int elf_section(const uint8_t *ko, size_t len, const char *name, const uint8_t **ret_data, size_t *ret_len)
{
	if (len < sizeof(Elf64_Ehdr) || memcmp(ko, ELFMAG, SELFMAG) != 0 || ko[EI_CLASS] != ELFCLASS64 ||
	    ko[EI_DATA] != ELFDATA2LSB)
		return -EBADMSG;
	Elf64_Ehdr eh;
	memcpy(&eh, ko, sizeof(eh));
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum > KMOD_MAX_SECTIONS || eh.e_shstrndx >= eh.e_shnum ||
	    eh.e_shoff > len || (size_t)eh.e_shnum * sizeof(Elf64_Shdr) > len - eh.e_shoff)
		return -EBADMSG;
	Elf64_Shdr strs, sh;
	if (shdr_at(ko, len, &eh, eh.e_shstrndx, &strs) < 0)
		return -EBADMSG;
	size_t want = strlen(name) + 1;
	for (size_t i = 0; i < eh.e_shnum; i++) {
		if (shdr_at(ko, len, &eh, i, &sh) < 0)
			return -EBADMSG;
		if (sh.sh_name >= strs.sh_size || strs.sh_size - sh.sh_name < want ||
		    memcmp(ko + strs.sh_offset + sh.sh_name, name, want) != 0)
			continue;
		*ret_data = ko + sh.sh_offset;
		*ret_len = sh.sh_size;
		return 0;
	}
	return -ENOENT;
}

int kmod_modinfo_get(const uint8_t *ko, size_t len, const char *key, char **ret)
{
	const uint8_t *mi;
	size_t n;
	int r = elf_section(ko, len, ".modinfo", &mi, &n);
	if (r < 0)
		return r;
	if (n > KMOD_MAX_MODINFO)
		return -EBADMSG;
	size_t kl = strlen(key);
	for (size_t pos = 0; pos < n;) {
		const uint8_t *s = mi + pos;
		const uint8_t *end = memchr(s, '\0', n - pos);
		size_t sl = end ? (size_t)(end - s) : n - pos;
		if (sl > kl && memcmp(s, key, kl) == 0 && s[kl] == '=') {
			*ret = xstrndup((const char *)s + kl + 1, sl - kl - 1);
			return 0;
		}
		pos += sl + 1;
	}
	return -ENOENT;
}

int kmod_split_depends(const char *value, char ***ret)
{
	_cleanup_strv_ char **v = xcalloc(1, sizeof(char *));
	size_t n = 0;
	for (const char *p = value; *p;) {
		size_t l = strcspn(p, ",");
		if (l > 0) {
			_cleanup_free_ char *name = xstrndup(p, l);
			if (!kernel_name_ok(name) || ++n > KMOD_MAX_DEPS)
				return -EBADMSG;
			v = strv_append(v, name);
		}
		p += l + (p[l] == ',');
	}
	*ret = TAKE_PTR(v);
	return 0;
}

size_t kmod_strip_signature(const uint8_t *ko, size_t len)
{
	static const char magic[] = "~Module signature appended~\n";
	const size_t ml = sizeof(magic) - 1, sigstruct = 12; /* algo hash id_type signer_len key_id_len pad[3] be32 sig_len */
	if (len < ml + sigstruct || memcmp(ko + len - ml, magic, ml) != 0)
		return len;
	const uint8_t *p = ko + len - ml - 4;
	size_t siglen = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
	if (siglen > len - ml - sigstruct)
		return len;
	return len - ml - sigstruct - siglen;
}

char **kmod_parse_builtin(const char *text)
{
	char **v = xcalloc(1, sizeof(char *));
	for (const char *l = text; *l;) {
		size_t n = strcspn(l, "\n");
		_cleanup_free_ char *line = xstrndup(l, n);
		_cleanup_free_ char *name = kmod_name_from_path(line);
		if (name)
			v = strv_append(v, name);
		l += n + (l[n] == '\n');
	}
	return v;
}

/* ---- load order ---------------------------------------------------------------------- */

struct resolver {
	char *const *builtin;
	kmod_deps_fn deps;
	void *userdata;
	char **order;
	char **visiting; /* the current DFS path, for cycle detection */
	pd_err *err;
};


static int visit(struct resolver *rs, const char *name, bool optional, unsigned depth)
{
	if (strv_contains(rs->builtin, name) || strv_contains(rs->order, name))
		return 0;
	if (depth > KMOD_MAX_DEPTH || strv_contains(rs->visiting, name))
		return pd_error_msg(rs->err, ELOOP, "kernel module %s: dependency cycle or chain too deep", name);
	_cleanup_strv_ char **deps = NULL;
	int r = rs->deps(rs->userdata, name, &deps);
	if (r == -ENOENT && optional)
		return 0;
	if (r < 0)
		return pd_error(rs->err, r, "kernel module %s", name);
	rs->visiting = strv_append(rs->visiting, name);
	for (size_t i = 0; deps[i] && r >= 0; i++)
		r = visit(rs, deps[i], false, depth + 1);
	free(rs->visiting[strv_len(rs->visiting) - 1]);
	rs->visiting[strv_len(rs->visiting) - 1] = NULL;
	if (r < 0)
		return r;
	if (strv_len(rs->order) >= KMOD_MAX_MODULES)
		return pd_error_msg(rs->err, E2BIG, "more than %u kernel modules needed", KMOD_MAX_MODULES);
	rs->order = strv_append(rs->order, name);
	return 0;
}

int kmod_resolve(const struct kmod_want *wanted, size_t n_wanted, char *const *builtin, kmod_deps_fn deps,
		 void *userdata, char ***ret_order, pd_err *err)
{
	struct resolver rs = {.builtin = builtin, .deps = deps, .userdata = userdata, .err = err,
			      .order = xcalloc(1, sizeof(char *)), .visiting = xcalloc(1, sizeof(char *))};
	int r = 0;
	for (size_t i = 0; i < n_wanted && r >= 0; i++)
		r = visit(&rs, wanted[i].name, wanted[i].optional, 0);
	strv_free(rs.visiting);
	if (r < 0) {
		strv_free(rs.order);
		return r;
	}
	*ret_order = rs.order;
	return 0;
}
