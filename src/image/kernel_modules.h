/* kernel_modules.h — which kernel modules a vm guest needs and in what order to load them.
 *
 * Debian's kernel package ships no modules.dep (depmod runs at install time, and we never
 * install the kernel on the host), so dependencies are read from each module's own .modinfo
 * section ("depends=a,b"), and the load order is a depth-first walk from the wanted list,
 * skipping what the kernel has built in (modules.builtin). Pure: the module bytes are parsed
 * with hard caps (fuzz-kernel.c), file access goes through a callback. */
#pragma once

#include "util/error.h"

#define KMOD_MAX_SECTIONS 4096u
#define KMOD_MAX_MODINFO (256u * 1024u)
#define KMOD_MAX_DEPS 64u
#define KMOD_MAX_DEPTH 32u
#define KMOD_MAX_MODULES 256u

struct kmod_want {
	const char *name;
	bool optional; /* skipped when the kernel has neither built it in nor shipped it */
};

/* What a vm guest needs: virtio transport (mmio), its devices, and the filesystems. */
extern const struct kmod_want kmod_guest_wanted[];
extern const size_t kmod_guest_n_wanted;

/* The kernel's name for a module file: basename without ".ko[.xz|.zst|.gz]", '-' → '_'.
 * NULL when path does not name a module file or the name fails kernel_name_ok(). */
char *kmod_name_from_path(const char *path);

/* The value of key ("depends", "name", ...) in the .modinfo section of a module (ELF64 LE).
 * Returns 0 with a new string (empty if the key has an empty value), -ENOENT if absent,
 * -EBADMSG if the ELF is malformed. */
int kmod_modinfo_get(const uint8_t *ko, size_t len, const char *key, char **ret);

/* Splits a "depends=" value into names (each checked with kernel_name_ok; at most
 * KMOD_MAX_DEPS). */
int kmod_split_depends(const char *value, char ***ret);

/* The length of a module without its appended signature ("~Module signature appended~\n"
 * trailer, struct module_signature, signature bytes), or len when it has none or the trailer
 * does not add up. Why strip: verifying an RSA signature per module costs ~0.5 s of a TCG
 * boot, and buys nothing here: the guest kernel does not enforce signatures (root in the guest
 * may load any module into its own kernel anyway), and the modules reach the initramfs from
 * Debian's package through the host's apt, the same way as the kernel itself. */
size_t kmod_strip_signature(const uint8_t *ko, size_t len);

/* Parses modules.builtin ("kernel/fs/ext4/ext4.ko" per line) into module names. */
char **kmod_parse_builtin(const char *text);

/* Callback: the dependencies of module name (names), -ENOENT if there is no such module. */
typedef int (*kmod_deps_fn)(void *userdata, const char *name, char ***ret_deps);

/* The load order (dependencies first, each module once) for the wanted list. Builtin modules
 * are skipped, and so are their dependencies' walks. A cycle, a missing required module or
 * more than KMOD_MAX_MODULES is an error that names the module. */
int kmod_resolve(const struct kmod_want *wanted, size_t n_wanted, char *const *builtin, kmod_deps_fn deps,
		 void *userdata, char ***ret_order, pd_err *err);
