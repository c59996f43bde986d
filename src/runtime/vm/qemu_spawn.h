/* qemu_spawn.h — start QEMU with exactly the fds it needs, an empty environment, and a death
 * signal tied to its parent (if the supervisor dies, the VM dies: fail closed). */
#pragma once

#include "util/error.h"

/* parent fd `src` (O_CLOEXEC) appears as `dst` in QEMU; dst values are 3, 4, ... in order. */
struct qemu_fd {
	int src;
	int dst;
};

/* The absolute path of a program name searched in PATH (or name itself if it has a '/'). */
int qemu_find_binary(const char *name, char **ret, pd_err *err);

/* Spawns argv (argv[0] an absolute path) with stdin on /dev/null, stdout and stderr on
 * out_fd (or /dev/null if -1), fds mapped as given and every other fd closed, in a session of
 * its own with an empty signal mask. Returns the pid and a pidfd (-1 if the kernel has none).
 * The death signal fires when the calling *thread* exits: call it from a thread that lives as
 * long as the box (the supervisor's main thread). */
/* Whether QEMU keeps transparent huge pages for guest RAM: only where a first touch of a page
 * costs QEMU_THP_FAULT_NS or more (a hypervisor that handles every guest page fault itself:
 * there 512 faults per 2 MiB make restores slow) and where the zero-filled pages of the huge
 * pages can be given back once the box is up (thp_trim.h; else an idle box would hold ~20 MB
 * of zeros). Elsewhere 4 KiB pages hold less memory and restore faster. PADDOCK_VM_THP=0|1
 * overrides. */
#define QEMU_THP_FAULT_NS 2000
bool qemu_want_thp(void);
/* doctor's line on that choice and why (measured here, or PADDOCK_VM_THP) */
char *qemu_thp_doctor(void);
int qemu_spawn(char *const argv[], const struct qemu_fd *fds, size_t n_fds, int out_fd, pid_t *ret_pid,
	       int *ret_pidfd, pd_err *err);

/* SIGKILL to pid (through the pidfd when there is one, so a recycled pid is never hit). */
void qemu_kill(pid_t pid, int pidfd);
/* CLOCK_MONOTONIC in milliseconds. */
uint64_t qemu_now_ms(void);
/* Waits up to timeout_ms for pid to exit; returns 1 with the wait status, 0 on timeout. */
int qemu_wait(pid_t pid, int pidfd, int timeout_ms, int *ret_status);
