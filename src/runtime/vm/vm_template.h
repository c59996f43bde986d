/* vm_template.h — warm starts: a fresh vm box restored from a snapshot of a guest that has
 * already booted, instead of booting its own kernel.
 *
 * A cold boot spends its time in the guest (kernel init, stage 1's modules and disk mount:
 * ~2.5 s under TCG here). A template is one guest booted with a box's exact QEMU
 * configuration plus paddock.template=1, which parks at the end of stage 1 (vmboot.h: after
 * the modules, the root mount, the network and the pids cgroup, before anything of a box),
 * saved by QEMU's own migration into a file, together with a copy of its disk overlay at that
 * moment. A fresh box gets a copy of that overlay as its disk and QEMU loads the saved state
 * (-incoming fd:N); the guest wakes up in its park, takes its hostname, the wall clock and
 * fresh entropy from the resume frame the supervisor sends, and greets as after a boot.
 *
 * Key: sha256 of the QEMU argv (without the box's name, with the disk as a placeholder) and
 * the identity (device, inode, size, mtime) of the QEMU binary, kernel, initramfs and base
 * disk, plus the host CPU's flags: anything that changes the guest or the machine gives
 * another template. Files: <dir>/<key>.qcow2 and <key>.state, owner-only and read-only, in
 * the vm cache (PADDOCK_VM_CACHE_HOME's, else the box's own home when that is not writable).
 * No template yet: the box boots cold and a detached builder (`paddock __vm-template-build`,
 * niced) makes one for the next box. A restore that fails is rejected (the state removed)
 * and the box boots cold. PADDOCK_VM_TEMPLATE=0 turns all of this off. Restarts of a stopped
 * box always boot cold: its disk is its own by then.
 *
 * What boxes restored from one template share, and why that is acceptable: the guest kernel's
 * boot-time randomisation (KASLR offset, slab freelist order, stack canary of PID 1) — each box
 * is its own kernel, and learning these about one's own kernel is all a box can do with them;
 * the CRNG is not shared (reseeded from the host on resume). See docs/vm-templates.md. */
#pragma once

#include "proto/proto.h"
#include "runtime/vm/qemu_argv.h"
#include "util/error.h"

/* 2: the state is saved without the guest RAM's zero markers (migstream.h); a template of 1
 * would still load, but each of its restores would touch all the guest's RAM */
#define VM_TEMPLATE_VERSION "paddock-vm-template-2"
/* Templates kept per directory (the most recently used; one is ~the guest's touched memory,
 * 70 MB for a 512 MiB guest at rest) */
#define VM_TEMPLATE_KEEP 8

struct vm_template {
	char *key;   /* 32 hex digits */
	char *disk;  /* <dir>/<key>.qcow2 */
	char *state; /* <dir>/<key>.state */
};

/* Pure: the key for an argv (built without the box's name and with the disk placeholder) and
 * an identity text (vm_template_identity). 32 hex digits. */
char *vm_template_key(char *const *argv, const char *identity);
/* The identity of the files a template depends on (one line each: path, dev, ino, size,
 * mtime; a missing file is a line too) and the host CPU's flags. */
char *vm_template_identity(const char *const *paths, size_t n);

void vm_template_init(struct vm_template *t, const char *dir, const char *key);
void vm_template_done(struct vm_template *t);
/* Templates are made and used only in a program that can build them: paddock's main names
 * its own executable here (the builder is `EXE __vm-template-build`). Other programs linking
 * the vm backend (its tests, vm-bench) always boot. */
void vm_template_enable(const char *exe);
/* False unless enabled, and when PADDOCK_VM_TEMPLATE=0. */
bool vm_template_enabled(void);
/* The directory for templates: $PADDOCK_VM_TEMPLATE_DIR if set (absolute) and writable, else
 * <shared>/cache/vm-templates if it can be made and written, else <own>/cache/vm-templates. */
char *vm_template_dir(const char *shared_home, const char *own_home);
bool vm_template_ready(const struct vm_template *t);
/* `paddock doctor`'s line about templates under home (or PADDOCK_VM_TEMPLATE_DIR). */
char *vm_template_doctor(const char *home);

/* A box's disk from the template (a copy of its overlay, made at path through path.tmp) and
 * the template's state opened for reading (*ret_fd, O_CLOEXEC). */
int vm_template_take(const struct vm_template *t, const char *path, int *ret_fd, pd_err *err);
/* A restore from this template failed: its state is removed so no later box tries it. */
void vm_template_reject(const struct vm_template *t);

/* Pure: the resume frame's payload (KV items host=, time=, seed=; see vmboot.h). */
void vm_template_resume_payload(struct proto_buf *b, const char *host, int64_t now_ns, const uint8_t *seed,
				size_t seed_len);
/* Sends the resume frame on a restored box's control channel: the hostname, the current wall
 * clock and VMBOOT_SEED_BYTES from getrandom(). */
int vm_template_resume(int ctl_fd, const char *host, pd_err *err);

/* Starts `paddock __vm-template-build` for t, detached and niced, unless a template or a
 * builder for it exists already. argv is QEMU's for the template guest (template_boot, no
 * name, disk = t->disk + ".tmp", fds: ctl 3, qmp 4, console 5, network 6 when net). */
void vm_template_build_async(const struct vm_template *t, char *const *qemu_argv, const char *base, uint64_t size,
			     bool net);
/* The box's disk: a qcow2 overlay at path over the raw base, of the base's size (size 0) or of
 * size bytes (larger: stage 1 grows the filesystem to fill it). */
int vm_overlay_create(const char *base, const char *path, uint64_t size, pd_err *err);
/* Removes all but the `keep` most recently used templates of dir (a restore touches its
 * state's mtime; a builder prunes after making one). */
void vm_template_prune(const char *dir, size_t keep);
/* The builder's main: argv = {"__vm-template-build", STATE, DISK, BASE, SIZE, "net"|"nonet", "--",
 * QEMU ARGV...}. Exit 0 when the template is there (made now or by another builder). */
int vm_template_build_main(int argc, char **argv);
