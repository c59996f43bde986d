/* kernel_cache.c — fetch Debian's cloud kernel through apt into paddock's cache, convert it
 * for PVH boot and keep only the modules a guest needs (see kernel_cache.h). */
#include <fcntl.h>
#include <nettle/sha2.h>
#include <sys/stat.h>

#include "image/kernel.h"
#include "image/kernel_cache.h"
#include "image/kernel_modules.h"
#include "image/kernel_spawn.h"
#include "util/fdio.h"
#include "util/log.h"

#define BZIMAGE_MAX (64u * 1024u * 1024u)
#define MODULE_MAX (16u * 1024u * 1024u)
#define WALK_MAX_DEPTH 16
#define WALK_MAX_FILES 20000u

void kernel_cache_done(struct kernel_cache *k)
{
	if (!k)
		return;
	free(k->release);
	free(k->dir);
	free(k->boot_path);
	free(k->digest);
	strv_free(k->modules);
	*k = (struct kernel_cache){0};
}

static char *kernel_root(const char *home)
{
	return xasprintf("%s/cache/kernel", home);
}

/* A one-line file, newline stripped, checked to be a plausible name. */
static int read_name(int dirfd, const char *path, char **ret)
{
	_cleanup_free_ char *s = NULL;
	int r = read_file_at(dirfd, path, 256, &s, NULL);
	if (r < 0)
		return r;
	s[strcspn(s, "\n")] = '\0';
	if (!kernel_name_ok(s) && strspn(s, "0123456789abcdef") != 64)
		return -EBADMSG;
	*ret = TAKE_PTR(s);
	return 0;
}

static int read_order(int dirfd, char ***ret)
{
	_cleanup_free_ char *text = NULL;
	int r = read_file_at(dirfd, "modules/order", 64 * 1024, &text, NULL);
	if (r < 0)
		return r;
	_cleanup_strv_ char **v = xcalloc(1, sizeof(char *));
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		if (!kernel_name_ok(l) || strv_len(v) >= KMOD_MAX_MODULES)
			return -EBADMSG;
		v = strv_append(v, l);
	}
	*ret = TAKE_PTR(v);
	return 0;
}

static int load_release(const char *root, const char *release, struct kernel_cache *ret)
{
	_cleanup_free_ char *dir = xasprintf("%s/%s", root, release);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	_cleanup_free_ char *boot = NULL, *digest = NULL;
	_cleanup_strv_ char **mods = NULL;
	int r = read_name(dfd, "boot", &boot);
	if (r == 0)
		r = read_name(dfd, "digest", &digest);
	if (r == 0)
		r = read_order(dfd, &mods);
	if (r < 0)
		return r;
	if (!streq(boot, "vmlinux") && !streq(boot, "vmlinuz"))
		return -EBADMSG;
	char *boot_path = xasprintf("%s/%s", dir, boot);
	*ret = (struct kernel_cache){.release = xstrdup(release), .boot_path = boot_path,
				     .pvh = streq(boot, "vmlinux"), .digest = TAKE_PTR(digest),
				     .modules = TAKE_PTR(mods), .dir = TAKE_PTR(dir)};
	return 0;
}

int kernel_cache_load(const char *home, struct kernel_cache *ret, pd_err *err)
{
	_cleanup_free_ char *root = kernel_root(home);
	_cleanup_free_ char *cur = xasprintf("%s/current", root);
	_cleanup_free_ char *release = NULL;
	int r = read_name(AT_FDCWD, cur, &release);
	if (r == -ENOENT)
		return pd_error_msg(err, ENOENT, "no guest kernel in %s yet (fetched through apt on first use)", root);
	if (r < 0)
		return pd_error(err, r, "cannot read %s", cur);
	r = load_release(root, release, ret);
	if (r < 0)
		return pd_error(err, r, "guest kernel %s in %s is incomplete or damaged (remove it to refetch)", release, root);
	return 0;
}

/* ---- fetching ------------------------------------------------------------------------ */

static int apt_resolve(char **ret_pkg, char **ret_release, pd_err *err)
{
	char *argv[] = {"apt-cache", "depends", KERNEL_CACHE_METAPACKAGE, NULL};
	_cleanup_free_ char *out = NULL;
	int r = image_run(argv, NULL, &out, err);
	if (r < 0)
		return pd_err_prefix(err, "cannot resolve the guest kernel package (is %s in the host's apt sources?)",
				     KERNEL_CACHE_METAPACKAGE);
	r = kernel_apt_parse_depends(out, ret_pkg, ret_release);
	if (r < 0)
		return pd_error_msg(err, -r, "apt-cache names no versioned kernel for %s", KERNEL_CACHE_METAPACKAGE);
	return 0;
}

static int find_deb(const char *dir, char **ret, pd_err *err)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return pd_error(err, errno, "cannot open %s", dir);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n > 4 && streq(de->d_name + n - 4, ".deb")) {
			*ret = xasprintf("%s/%s", dir, de->d_name);
			return 0;
		}
	}
	return pd_error_msg(err, ENOENT, "apt-get download left no .deb in %s", dir);
}

/* Downloads pkg into tmp and unpacks it into tmp/x: nothing is installed on the host. */
static int download_extract(const char *tmp, const char *pkg, pd_err *err)
{
	char *dl[] = {"apt-get", "download", (char *)pkg, NULL};
	int r = image_run(dl, tmp, NULL, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *deb = NULL, *x = xasprintf("%s/x", tmp);
	r = find_deb(tmp, &deb, err);
	if (r < 0)
		return r;
	char *ex[] = {"dpkg-deb", "-x", deb, x, NULL};
	return image_run(ex, NULL, NULL, err);
}

static char *sha256_hex(const uint8_t *data, size_t len)
{
	uint8_t md[SHA256_DIGEST_SIZE];
	struct sha256_ctx c;
	sha256_init(&c);
	sha256_update(&c, len, data);
	sha256_digest(&c, sizeof(md), md);
	char *hex = xmalloc(2 * sizeof(md) + 1);
	hex_encode(md, sizeof(md), hex);
	return hex;
}

static int write_str(const char *dir, const char *name, const char *s)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
	return write_file_atomic_at(AT_FDCWD, p, s, strlen(s), 0644);
}

/* vmlinuz is kept as is (bzImage fallback); vmlinux is written when it has the PVH note. */
static int convert_boot(const char *x, const char *release, const char *stage, pd_err *err)
{
	_cleanup_free_ char *src = xasprintf("%s/boot/vmlinuz-%s", x, release), *bz = NULL, *dst = NULL;
	size_t bzlen;
	int r = read_file_at(AT_FDCWD, src, BZIMAGE_MAX, &bz, &bzlen);
	if (r < 0)
		return pd_error(err, r, "cannot read %s", src);
	dst = xasprintf("%s/vmlinuz", stage);
	r = write_file_atomic_at(AT_FDCWD, dst, bz, bzlen, 0644);
	if (r < 0)
		return pd_error(err, r, "cannot write %s", dst);
	struct kernel_payload pl;
	_cleanup_free_ uint8_t *elf = NULL;
	size_t elflen = 0;
	r = kernel_bzimage_payload((const uint8_t *)bz, bzlen, &pl);
	if (r == 0)
		r = kernel_decompress(&pl, &elf, &elflen);
	bool pvh = r == 0 && kernel_elf_has_pvh(elf, elflen) == 1;
	/* what a booted guest's QEMU keeps mapped and resident: without the stored zeros */
	if (pvh && kernel_elf_trim(elf, elflen) < 0)
		pvh = false;
	pd_debug("kernel %s: payload %s, PVH %s", release, r == 0 ? kernel_comp_name(pl.comp) : strerror(-r),
		 pvh ? "yes" : "no");
	const uint8_t *boot = pvh ? elf : (const uint8_t *)bz;
	if (pvh) {
		free(dst);
		dst = xasprintf("%s/vmlinux", stage);
		r = write_file_atomic_at(AT_FDCWD, dst, elf, elflen, 0644);
		if (r < 0)
			return pd_error(err, r, "cannot write %s", dst);
	}
	_cleanup_free_ char *digest = sha256_hex(boot, pvh ? elflen : bzlen);
	r = write_str(stage, "boot", pvh ? "vmlinux\n" : "vmlinuz\n");
	if (r == 0)
		r = write_str(stage, "digest", digest);
	return r < 0 ? pd_error(err, r, "cannot write into %s", stage) : 0;
}

/* name → path of every module file under the package's lib/modules/<release>/kernel. */
struct mod_index {
	char **names;
	char **paths;
	size_t n;
};

static void mod_index_free(struct mod_index *ix)
{
	strv_free(ix->names);
	strv_free(ix->paths);
}

static int walk(struct mod_index *ix, const char *dir, int depth)
{
	if (depth > WALK_MAX_DEPTH)
		return -ELOOP;
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, de->d_name);
		_cleanup_free_ char *name = NULL;
		if (de->d_type == DT_DIR)
			r = walk(ix, p, depth + 1);
		else if (de->d_type == DT_REG && (name = kmod_name_from_path(p))) {
			if (++ix->n > WALK_MAX_FILES)
				return -E2BIG;
			ix->names = strv_append(ix->names, name);
			ix->paths = strv_append(ix->paths, p);
		}
	}
	return r;
}

static const char *mod_index_path(const struct mod_index *ix, const char *name)
{
	for (size_t i = 0; i < ix->n; i++)
		if (streq(ix->names[i], name))
			return ix->paths[i];
	return NULL;
}

static int read_module(const char *path, char **ret, size_t *ret_len)
{
	size_t n = strlen(path);
	if (n < 3 || !streq(path + n - 3, ".ko"))
		return -EPROTONOSUPPORT; /* .ko.xz/.ko.zst: not needed for Debian 12, not done yet */
	return read_file_at(AT_FDCWD, path, MODULE_MAX, ret, ret_len);
}

static int index_deps(void *userdata, const char *name, char ***ret_deps)
{
	const char *path = mod_index_path(userdata, name);
	if (!path)
		return -ENOENT;
	_cleanup_free_ char *ko = NULL, *dep = NULL;
	size_t len;
	int r = read_module(path, &ko, &len);
	if (r < 0)
		return r;
	r = kmod_modinfo_get((const uint8_t *)ko, len, "depends", &dep);
	if (r == -ENOENT)
		dep = xstrdup("");
	else if (r < 0)
		return r;
	return kmod_split_depends(dep, ret_deps);
}

static int copy_module(const struct mod_index *ix, const char *name, const char *moddir)
{
	_cleanup_free_ char *ko = NULL, *dst = xasprintf("%s/%s.ko", moddir, name);
	size_t len;
	int r = read_module(mod_index_path(ix, name), &ko, &len);
	return r < 0 ? r : write_file_atomic_at(AT_FDCWD, dst, ko, len, 0644);
}

static int resolve_modules(const char *mroot, struct mod_index *ix, char ***ret_order, pd_err *err)
{
	_cleanup_free_ char *kdir = xasprintf("%s/kernel", mroot), *bpath = xasprintf("%s/modules.builtin", mroot);
	_cleanup_free_ char *btext = NULL;
	int r = read_file_at(AT_FDCWD, bpath, 4u << 20, &btext, NULL);
	if (r < 0)
		return pd_error(err, r, "cannot read %s", bpath);
	_cleanup_strv_ char **builtin = kmod_parse_builtin(btext);
	ix->names = xcalloc(1, sizeof(char *));
	ix->paths = xcalloc(1, sizeof(char *));
	r = walk(ix, kdir, 0);
	if (r < 0)
		return pd_error(err, r, "cannot index the modules in %s", kdir);
	return kmod_resolve(kmod_guest_wanted, kmod_guest_n_wanted, builtin, index_deps, ix, ret_order, err);
}

static int stage_modules(const char *x, const char *release, const char *stage, pd_err *err)
{
	_cleanup_free_ char *mroot = xasprintf("%s/lib/modules/%s", x, release);
	_cleanup_free_ char *moddir = xasprintf("%s/modules", stage);
	_cleanup_(mod_index_free) struct mod_index ix = {0};
	_cleanup_strv_ char **order = NULL;
	int r = resolve_modules(mroot, &ix, &order, err);
	if (r < 0)
		return r;
	if (mkdir(moddir, 0755) < 0)
		return pd_error(err, errno, "cannot create %s", moddir);
	size_t need = 1;
	for (size_t i = 0; order[i]; i++) {
		r = copy_module(&ix, order[i], moddir);
		if (r < 0)
			return pd_error(err, r, "cannot copy kernel module %s", order[i]);
		need += strlen(order[i]) + 1;
	}
	_cleanup_free_ char *text = xcalloc(1, need);
	for (size_t i = 0; order[i]; i++)
		strcat(strcat(text, order[i]), "\n");
	r = write_str(moddir, "order", text);
	return r < 0 ? pd_error(err, r, "cannot write %s/order", moddir) : 0;
}

/* Builds the release directory under tmp/out and renames it into place. */
static int fetch_release(const char *root, const char *tmp, const char *pkg, const char *release, pd_err *err)
{
	_cleanup_free_ char *x = xasprintf("%s/x", tmp), *stage = xasprintf("%s/out", tmp);
	_cleanup_free_ char *final = xasprintf("%s/%s", root, release);
	int r = download_extract(tmp, pkg, err);
	if (r < 0)
		return r;
	if (mkdir(stage, 0755) < 0)
		return pd_error(err, errno, "cannot create %s", stage);
	r = convert_boot(x, release, stage, err);
	if (r == 0)
		r = stage_modules(x, release, stage, err);
	if (r < 0)
		return r;
	if (rename(stage, final) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		return pd_error(err, errno, "cannot move the kernel into %s", final);
	return 0;
}

int kernel_cache_fetch(const char *home, struct kernel_cache *ret, pd_err *err)
{
	_cleanup_free_ char *root = kernel_root(home), *pkg = NULL, *release = NULL;
	int r = apt_resolve(&pkg, &release, err);
	if (r < 0)
		return r;
	r = mkdir_p(root, 0755);
	if (r < 0)
		return pd_error(err, r, "cannot create %s", root);
	_cleanup_free_ char *have = xasprintf("%s/%s", root, release);
	if (access(have, F_OK) < 0) {
		_cleanup_free_ char *tmp = xasprintf("%s/.fetch-XXXXXX", root);
		if (!mkdtemp(tmp))
			return pd_error(err, errno, "cannot create a temporary directory in %s", root);
		r = fetch_release(root, tmp, pkg, release, err);
		(void)rm_rf(tmp);
		if (r < 0)
			return pd_err_prefix(err, "cannot fetch guest kernel %s", pkg);
	}
	r = write_str(root, "current", release);
	if (r < 0)
		return pd_error(err, r, "cannot write %s/current", root);
	return kernel_cache_load(home, ret, err);
}

int kernel_cache_ensure(const char *home, struct kernel_cache *ret, pd_err *err)
{
	int r = kernel_cache_load(home, ret, NULL);
	return r == 0 ? 0 : kernel_cache_fetch(home, ret, err);
}
