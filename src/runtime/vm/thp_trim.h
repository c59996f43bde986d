/* thp_trim.h — giving back the zero-filled 4 KiB pages inside QEMU's transparent huge pages
 * (docs/vm-backend.md, "Huge pages").
 *
 * Where QEMU keeps THP (qemu_want_thp), every 2 MiB of guest RAM that the restore or the guest
 * writes at all is resident whole, zeros included: in an idle restored 512 MiB box ~21 MB are
 * such pages (the guest kernel's bss, virtio-console's 2,048 receive buffers, allocations that
 * the guest's init_on_alloc zeroed and nothing wrote since). Linux (6.12 and later) maps the
 * zero-filled pages of an anonymous huge page to the shared zero page when it splits it, and
 * MADV_COLD over part of a huge page splits it. The supervisor asks that of its QEMU with
 * process_madvise(2) a few seconds into each box and then now and then (vm_box_tick). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define THP_TRIM_HUGE (UINT64_C(2) << 20)

/* Pure: the start of the one mapping in a /proc/PID/maps text that is anonymous, private,
 * read-write and exactly `size` bytes long (QEMU's guest RAM for -m size). -ENOENT when there
 * is none, -EEXIST when there are several (then nothing is advised), -EINVAL for a line that
 * does not parse: the text is the kernel's, but it describes a process on the far side of the
 * box's boundary, whose file names are anyone's. */
int thp_maps_find(const char *text, size_t len, uint64_t size, uint64_t *ret_start);

/* Pure: for each 2 MiB region of [start, start + size) from region *next on, that region less
 * its first page, into iov (at most max); returns how many and advances *next. A range that
 * covers part of a huge page is what makes MADV_COLD split it (the whole of one would only be
 * deactivated). start is 2 MiB aligned (QEMU aligns guest RAM); a last part of less than 2 MiB
 * (an odd --memory) holds no huge page and gets no range. */
size_t thp_trim_ranges(uint64_t start, uint64_t size, size_t *next, struct iovec *iov, size_t max);

/* Whether this process can trim QEMU's huge pages: process_madvise lets it advise another
 * process (CAP_SYS_NICE of the host; proven on a child of ours), and this kernel gives back
 * the zero-filled pages of a huge page it splits (proven on a huge page of our own). Asked
 * once per process. */
bool thp_trim_possible(void);
/* Why not, in a few words (for doctor); NULL when possible. */
const char *thp_trim_why_not(void);

/* Advises QEMU's guest RAM (`size` bytes; pid, through pidfd) so that every huge page in it
 * splits. Returns the bytes advised or -errno. */
int64_t thp_trim(int pidfd, pid_t pid, uint64_t size);
