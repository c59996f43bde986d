/* vmboot.h — stage 1 of paddock-init inside a vm guest: from the initramfs to the box's root
 * filesystem, ending with the control channel open. paddock-init's main calls vmboot() when
 * it is PID 1 and finds no PADDOCK_CTL_FD in its environment (only a vm guest starts it that
 * way); afterwards init runs exactly as in the ns backend.
 *
 * The constants below are the contract with the host side (src/image/initramfs.c writes the
 * initramfs, src/runtime/vm/qemu_argv.c writes the kernel command line and the port name). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Modules in the initramfs: VMBOOT_MODULES_DIR/<name>.ko, loaded in the order given (one name
 * a line) by VMBOOT_ORDER_FILE. */
#define VMBOOT_MODULES_DIR "/lib/modules"
#define VMBOOT_ORDER_FILE "/lib/modules/paddock.order"
#define VMBOOT_NEWROOT "/newroot"
/* The mount point of the workspace copy (created for the agent when the image lacks it). */
#define VMBOOT_WORKSPACE "/workspace"
/* The virtio-serial port that carries the control protocol. */
#define VMBOOT_CTL_PORT "paddock.ctl"
/* Printed on the console by a probe boot just before powering off. */
#define VMBOOT_PROBE_MARKER "paddock-vm-probe-ok"

/* Kernel command-line keys (all optional):
 *   paddock.probe=1        power off at once after printing VMBOOT_PROBE_MARKER (accelerator
 *                          probe: proves the kernel reaches user space)
 *   paddock.root=vda       the root disk's /dev name (default vda)
 *   paddock.host=NAME      the box's hostname
 *   paddock.agent=UID:GID  the agent user (default 1000:1000)
 *   paddock.debug=1        one console line per stage-1 step, with the time since boot
 *   paddock.pids=N         at most N tasks in the box (a pids cgroup around PID 1 and all
 *                          it starts); absent: no limit
 *   paddock.resv=N         N blocks of the root filesystem are kept from the box (ext4's
 *                          reserved clusters: not even root in the guest can use them), so
 *                          that what it can write is its --disk (the image's free blocks)
 *   paddock.net=1          the box has a network: wait for eth0 (the one virtio-net device)
 *                          and give it the box's fixed address (src/net/vnet.h)
 *   paddock.template=1     a template boot (src/runtime/vm/vm_template.h): at the end of stage 1
 *                          send VMBOOT_PARKED on the control port and wait for the resume frame
 *                          (the host snapshots the guest meanwhile; every box restored from
 *                          the snapshot continues here with its own name, clock and entropy) */
struct vmboot_cmdline {
	bool probe;
	bool debug;
	bool net;
	bool template_boot;
	unsigned pids;
	uint64_t resv_blocks;
	char root[32];
	char hostname[65];
	unsigned agent_uid, agent_gid;
};

/* Parses /proc/cmdline text (pure; unknown keys and malformed values are ignored, each value is
 * bounded and checked). */
void vmboot_parse_cmdline(const char *text, struct vmboot_cmdline *ret);

/* A template guest's "I am parked" (a PROTO_INFO frame with this one KV item). */
#define VMBOOT_PARKED "parked=1"
/* Bytes of host entropy a resume frame carries (mixed into the guest's pool, then the CRNG is
 * reseeded: boxes restored from one snapshot do not share their random numbers). */
#define VMBOOT_SEED_BYTES 64

/* The resume frame (PROTO_INFO, stream 0; KV items "host=NAME", "time=NS since the epoch",
 * "seed=HEX", each exactly once), decoded. */
struct vmboot_resume {
	char hostname[65];
	int64_t time_ns;
	uint8_t seed[VMBOOT_SEED_BYTES];
};

/* Parses a resume frame's payload (pure): -EBADMSG unless all three items are there, once
 * each, and valid (hostname as paddock.host=, time > 0, seed exactly 2*VMBOOT_SEED_BYTES hex
 * digits), and nothing else. */
int vmboot_parse_resume(const uint8_t *payload, size_t len, struct vmboot_resume *ret);

/* Finds the port called VMBOOT_CTL_PORT among /sys/class/virtio-ports entries: given the
 * entries' names (vport0p1...) and their "name" file contents, returns the index or -1.
 * Pure; the names come from the kernel. */
int vmboot_pick_port(const char *const *names, const char *const *contents, size_t n);

/* Stage 1 (see the top of this file). On success the root filesystem is the box's disk, the
 * control port is open as an fd >= 3, and the environment holds the contract paddock-init
 * reads (PADDOCK_CTL_FD, PADDOCK_AGENT_UID/GID, PADDOCK_ROOT_OK=1, PADDOCK_HOSTNAME); an
 * exit() of PID 1 from then on syncs, unmounts and powers the guest off instead of panicking.
 * A probe boot (paddock.probe=1) powers off inside this call. On failure returns -errno after
 * one "paddock-init: vmboot: ..." line on the console; the caller then exits, which powers
 * off (the host sees QEMU exit without a HELLO). */
int vmboot(void);
