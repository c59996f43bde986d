/* vm_probe.h — proving KVM with a real boot, and choosing the accelerator (accel.h) with the
 * verdict cached. */
#pragma once

#include "runtime/vm/accel.h"

/* What every boot of this host needs. */
struct vm_boot_files {
	const char *home;          /* $PADDOCK_HOME */
	const char *qemu;          /* absolute path of qemu-system-x86_64 */
	const char *kernel;        /* boot image */
	const char *initrd;        /* the cached initramfs (its init knows paddock.probe=1) */
	const char *kernel_digest;
	uint64_t tsc_khz;          /* for TCG guests, 0 = unknown */
};

#define VM_PROBE_TIMEOUT_MS 15000
#define VM_PROBE_OUTPUT_MAX (64u * 1024u)

/* Boots the kernel with paddock.probe=1 under accel and classifies the outcome. Returns 0 with
 * the verdict (*ret_ok, reason) or -errno when the probe could not even be started. */
int vm_probe_run(const struct vm_boot_files *b, enum vm_accel accel, int timeout_ms, bool *ret_ok, char *reason,
		 size_t reason_len, pd_err *err);

/* The whole decision: device checks, cached verdict, probe boot when needed (cached after).
 * On success ret->accel is KVM or TCG and ret->reason is the one line to show; a refusal
 * (--accel kvm on a host where it does not work) is an error carrying that line. */
int vm_accel_choose(enum vm_accel_mode mode, const struct vm_boot_files *b, struct vm_accel_choice *ret,
		    pd_err *err);

/* The cached verdict for these files, for `paddock doctor`: 0 and the line, or -ENOENT. */
int vm_accel_cached(const struct vm_boot_files *b, bool *ret_ok, char *reason, size_t reason_len);
