/* accel.h — which accelerator runs the guest, and why (one line for the user and `doctor`).
 *
 * KVM is the first choice, but "usable" is proven, not assumed: /dev/kvm can open and create
 * a VM on hosts where real guests still die (nested KVM here: QEMU aborts setting MSR 0x10a
 * with -cpu host, or stops with "KVM internal error ... emulation failure"). So after the
 * device checks, the real kernel is booted once under KVM with paddock.probe=1 (the guest's
 * stage 1 prints a marker and powers off), and the verdict is cached in
 * $PADDOCK_HOME/cache/kvm-verdict keyed by (kernel digest, QEMU binary, host kernel release).
 * TCG is the fallback: slower, but the same isolation (the guest still has its own kernel). */
#pragma once

#include "runtime/vm/qemu_argv.h"

enum vm_accel_mode {
	VM_ACCEL_MODE_INVALID = 0,
	VM_ACCEL_MODE_AUTO,
	VM_ACCEL_MODE_KVM,
	VM_ACCEL_MODE_TCG,
	VM_ACCEL_MODE_MAX,
};

int vm_accel_mode_parse(const char *s, enum vm_accel_mode *ret);

/* What is known about this host's KVM. */
struct vm_kvm_facts {
	int open_errno;      /* open("/dev/kvm"): 0 or errno */
	int api_version;     /* KVM_GET_API_VERSION result (12), or -errno */
	int create_vm_errno; /* KVM_CREATE_VM: 0 or errno */
	bool probed;         /* a probe-boot verdict is known (cached or fresh) */
	bool probe_ok;
	bool probe_cached;
	char probe_reason[160]; /* why the probe failed (or what it proved) */
};

struct vm_accel_choice {
	enum vm_accel accel; /* VM_ACCEL_INVALID: refuse to start (reason says why) */
	bool need_probe;     /* run the probe boot, fill the facts, decide again */
	bool fresh;          /* decided by a probe boot just now (not from the cache or /dev/kvm alone) */
	char reason[320];    /* "kvm: ..." / "tcg: ..." one line */
};

/* Pure: maps the mode and the facts to the choice. */
void vm_accel_decide(enum vm_accel_mode mode, const struct vm_kvm_facts *f, struct vm_accel_choice *ret);

/* What a probe boot left behind. */
struct vm_probe_outcome {
	bool exited;        /* QEMU exited (else: killed at the deadline, or on a fatal message) */
	int status;         /* wait status when exited */
	bool timed_out;
	const char *console; /* serial output (NUL-terminated, capped) */
	const char *qemu_out; /* QEMU's stdout+stderr (NUL-terminated, capped) */
};

/* Pure: true when the probe proves KVM works (marker seen, clean exit); otherwise reason
 * says what went wrong in a few words. */
bool vm_probe_classify(const struct vm_probe_outcome *o, char *reason, size_t reason_len);

/* True when the QEMU output shows a fatal KVM failure (stop waiting at once). */
bool vm_probe_fatal_output(const char *qemu_out);

/* Cache file: "key <key>\nverdict ok|broken\nreason <text>\n". Pure. */
char *vm_accel_cache_key(const char *kernel_digest, const char *qemu_id, const char *host_release);
char *vm_accel_cache_format(const char *key, bool ok, const char *reason);
/* 0 with the verdict when text is a verdict for key; -ENOENT for another key, -EBADMSG for
 * garbage. */
int vm_accel_cache_parse(const char *text, const char *key, bool *ret_ok, char *reason, size_t reason_len);

/* Fills the device facts (open, GET_API_VERSION, CREATE_VM). */
void vm_kvm_check(struct vm_kvm_facts *f);

/* The host's TSC rate in kHz when the TSC is constant (so TCG guests can skip calibration
 * against the PIT, which hangs under load), else 0. Measured once per boot of the host and
 * cached in $PADDOCK_HOME/cache/tsc-khz. */
uint64_t vm_host_tsc_khz(const char *home);
/* Pure helper: whether /proc/cpuinfo's flags say constant_tsc and nonstop_tsc. */
bool vm_cpuinfo_constant_tsc(const char *cpuinfo);
