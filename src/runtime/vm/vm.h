/* vm.h — the vm backend: one QEMU microVM per box, its own kernel, no host filesystem.
 *
 * runtime_vm.start: guest kernel (cached, fetched through apt on first use) + initramfs with
 * paddock-init + the accelerator decision (accel.h) + a qcow2 overlay of the base image in
 * the box's state dir + QEMU spawned with a socketpair as the virtio-serial control port and
 * another as QMP. The handle's ctl_fd speaks the ordinary control protocol with paddock-init
 * inside the guest; pid/pidfd are QEMU's.
 *
 * Files in cfg->state_dir: disk.qcow2 (the box's writable disk, kept across restarts and after
 * a crash for diff/apply), console.log and console.log.1 (the serial console) and qemu.log
 * (QEMU's own stdout and stderr), both copied in by threads of the supervisor and capped
 * whatever the guest does (vm_console.h). */
#pragma once

#include "runtime/runtime.h"
#include "runtime/vm/accel.h"

extern const struct runtime_ops runtime_vm;

/* The home whose cache/ holds the guest kernel, initramfs, base image and verdicts:
 * $PADDOCK_VM_CACHE_HOME when set (boxes of many PADDOCK_HOMEs share one cache: the test
 * suites, CI), else the environment's PADDOCK_HOME, else the grandparent of cfg->state_dir
 * ($PADDOCK_HOME/boxes/NAME). */
char *vm_home(const struct box_config *cfg);
/* The same for a CLI that knows its home: $PADDOCK_VM_CACHE_HOME when set, else home. */
char *vm_cache_home(const char *home);

/* The host's own base root filesystem (raw ext4): $PADDOCK_VM_IMAGE, else
 * $PADDOCK_HOME/cache/vm-rootfs/rootfs.img (scripts/vm-build-rootfs.sh). Without one, a box
 * that names no image gets paddock's vm-base image instead (cli/vmbase.c). */
char *vm_base_image(const char *home);
/* Whether $PADDOCK_VM_IMAGE names the base disk (an absolute path): then it is the user's
 * choice, an error when missing, never replaced by the vm-base image. */
bool vm_base_image_named(void);
/* A box's disk for --disk want (0: the default, 2 GiB) over the raw ext4 base: the overlay's
 * size (the base's plus want plus ext4's share of the growth, in whole MiB: stage 1 grows the
 * filesystem to fill it) and the blocks the box must not use (the base's free blocks: stage 1
 * reserves them, so what the box can write is about want). -errno when base cannot be read as ext4:
 * the disk is then the image's, unlimited within it. */
int vm_disk_plan(const char *base, uint64_t want, uint64_t *ret_size, uint64_t *ret_resv_blocks);
/* The largest --disk of a vm box (the CLI refuses more; vm_disk_plan says -EFBIG) */
#define VM_MAX_DISK (UINT64_C(16) << 40)

/* Accelerator mode for new boxes. TODO: a box_config field (--accel); until then
 * $PADDOCK_VM_ACCEL (auto|kvm|tcg), default auto. */
enum vm_accel_mode vm_accel_mode_from_env(void);

/* `paddock doctor`'s vm section: one line each for QEMU, the guest kernel, the base image and
 * the accelerator (the cached verdict; nothing is fetched or booted). Lines start with "ok",
 * "missing" or "info". */
char **vm_doctor(const char *home);

/* For a started box: the accelerator and the one line saying why. */
enum vm_accel vm_box_accel(const struct box_handle *h);
const char *vm_box_accel_reason(const struct box_handle *h);
/* The box was restored from a template (vm_template.h), not booted. */
bool vm_box_restored(const struct box_handle *h);
/* The box's guest greeted: start the template builder its start planned, if any (a box
 * whose configuration never comes up starts none). */
void vm_box_booted(struct box_handle *h);
/* Called from the supervisor's loop (at least once a second): the box's periodic work, the
 * split of QEMU's huge pages where they are kept (thp_trim.h). */
void vm_box_tick(struct box_handle *h, int64_t now_ms);
/* Its restore failed: the template is removed so that no later box tries it. */
void vm_box_reject_template(const struct box_handle *h);
/* Whether that verdict came from a probe boot of this start (say it once, then only in
 * `doctor` and the debug log). */
bool vm_box_accel_fresh(const struct box_handle *h);
