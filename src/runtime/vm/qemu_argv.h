/* qemu_argv.h — the QEMU command line for one vm box, built by a pure function from a
 * struct so that every flag is unit-tested and nothing reaches QEMU by accident.
 *
 * The machine is `-M microvm`: no PCI, no firmware tables beyond ACPI, no legacy devices
 * except the ISA serial console; every device is virtio-mmio. `-nodefaults -no-user-config`
 * means only what is listed here exists: no default NIC, no monitor, no floppy/cdrom, no
 * 9p/virtiofs share, no vsock. QEMU's own seccomp sandbox (-sandbox) is on. */
#pragma once

#include "util/error.h"

enum vm_accel {
	VM_ACCEL_INVALID = 0,
	VM_ACCEL_KVM,
	VM_ACCEL_TCG,
	VM_ACCEL_MAX,
};

const char *vm_accel_name(enum vm_accel a);

/* fds are numbers as QEMU will see them (the spawner puts them there); -1 = unused. A path
 * alternative is used when the fd is -1 and the path non-NULL. */
struct qemu_config {
	const char *binary;       /* "qemu-system-x86_64" or a path */
	const char *name;         /* box name: -name and the guest hostname ([A-Za-z0-9._-], <= 63) */
	enum vm_accel accel;
	uint64_t memory_mib;      /* >= 64 */
	unsigned cpus;            /* 1..64 */
	uint32_t pids;            /* tasks in the guest's box cgroup (paddock.pids=), 0 = no limit */
	uint64_t disk_resv_blocks; /* root filesystem blocks kept from the box (paddock.resv=), 0 = none */
	const char *kernel;       /* PVH vmlinux or bzImage */
	const char *initrd;
	uint64_t tsc_khz;         /* TCG: host TSC rate for tsc_early_khz= (0: let the guest calibrate) */
	bool probe;               /* paddock.probe=1: the guest powers off once in user space */
	bool verbose;             /* kernel messages on the console, stage-1 timings (paddock.debug=1) */
	const char *root_disk;    /* qcow2 overlay, NULL = no disk (probe boots) */
	int ctl_fd;               /* connected stream socket for the control port */
	int qmp_fd;               /* connected stream socket for QMP */
	const char *qmp_path;     /* or a unix socket QEMU listens on */
	int console_fd;           /* stream socket or pipe end for the serial console */
	const char *console_path; /* or a file */
	int net_fd;               /* connected SOCK_DGRAM socket for -netdev dgram (one frame a datagram) */
	bool balloon;             /* virtio-balloon with free page reporting */
	bool rng;                 /* virtio-rng fed from the host's /dev/urandom */
	bool sandbox;             /* -sandbox on,... (QEMU's seccomp filter) */
	bool guest_aslr;          /* false: norandmaps (the guest's user space at fixed addresses) */
	/* Templates (vm_template.h): the guest parks at the end of stage 1 (paddock.template=1)
	 * and takes its hostname from the resume frame, so name reaches -name only. */
	bool template_boot;
	int incoming_fd;          /* -incoming fd:N: the guest is restored from this saved state */
};

/* Fills in the defaults for a box (memory 1024 MiB, 1 cpu, balloon, rng, sandbox, guest
 * ASLR, all fds -1, no template). */
void qemu_config_init(struct qemu_config *c);

/* The guest kernel command line for c (pure). */
char *qemu_kernel_cmdline(const struct qemu_config *c);

/* TCG's translation buffer for a guest of memory_mib, in MiB (-accel tcg,tb-size=): a quarter
 * of the guest's RAM, at least 128 and at most 512. */
uint64_t qemu_tcg_tb_mib(uint64_t memory_mib);

/* The -M value for an accelerator: the fastest set of legacy devices that still boots. */
const char *qemu_machine(enum vm_accel a);

/* A value for a QEMU option list, with ',' doubled (QEMU's escape) */
char *qemu_opt_escape(const char *s);

/* Builds the argv (NULL-terminated, argv[0] = c->binary). -EINVAL with a message for a
 * config that makes no sense (no kernel, bad name, out-of-range sizes, no control channel). */
int qemu_argv_build(const struct qemu_config *c, char ***ret_argv, pd_err *err);
