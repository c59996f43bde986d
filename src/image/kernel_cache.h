/* kernel_cache.h — the guest kernel in paddock's cache: fetched from Debian's kernel package
 * through the host's own apt (`apt-get download` + `dpkg-deb -x` into a private temp dir:
 * never installed, never touching the host's /boot), reduced to what a vm guest boots:
 *
 *     $PADDOCK_HOME/cache/kernel/current            the release in use ("6.1.0-57-cloud-amd64")
 *     $PADDOCK_HOME/cache/kernel/<release>/vmlinuz  the package's bzImage (fallback boot)
 *                                         /vmlinux  the uncompressed ELF, when it has PVH
 *                                         /boot     "vmlinux" or "vmlinuz": what to boot
 *                                         /digest   sha256 of the boot image (cache keys)
 *                                         /modules/<name>.ko, /modules/order (load order)
 *
 *                                         /initramfs-<key>.cpio  (initramfs.h, added later)
 *
 * A release directory appears atomically (built under .fetch-*, then renamed); its kernel and
 * modules never change afterwards, and initramfs files are only ever added (atomically), so
 * readers need no lock. Once cached, nothing needs the network.
 * TODO: prune initramfs files of old paddock builds (by age: one may be in use). */
#pragma once

#include "util/error.h"

struct kernel_cache {
	char *release;
	char *dir;        /* $PADDOCK_HOME/cache/kernel/<release> */
	char *boot_path;  /* dir/vmlinux or dir/vmlinuz */
	bool pvh;         /* boot_path is the PVH ELF */
	char *digest;     /* sha256 hex of the boot image */
	char **modules;   /* load order; the files are dir/modules/<name>.ko */
};

/* The cached kernel named by `current`; -ENOENT (with a hint) when nothing is cached yet. */
int kernel_cache_load(const char *home, struct kernel_cache *ret, pd_err *err);
/* Resolves the current Debian cloud kernel through apt, fetches and converts it unless that
 * release is cached already, points `current` at it and loads it. Needs apt's network. */
int kernel_cache_fetch(const char *home, struct kernel_cache *ret, pd_err *err);
/* load, or fetch when nothing is cached. */
int kernel_cache_ensure(const char *home, struct kernel_cache *ret, pd_err *err);
void kernel_cache_done(struct kernel_cache *k);

/* The metapackage followed (Debian's cloud flavour: virtio drivers, no hardware bloat). */
#define KERNEL_CACHE_METAPACKAGE "linux-image-cloud-amd64"
