/* vm_console.h — showing what a guest printed, safely. The serial console is written by the
 * guest (hostile: terminal escape sequences, floods), so only a sanitised tail of it ever
 * reaches a user's terminal, and what is kept of it on the host is bounded: QEMU writes the
 * console into a socket, a thread of the supervisor copies it into state_dir/console.log and
 * rotates that file into console.log.1 at half the cap, so the two never hold more than
 * VM_CONSOLE_CAP bytes whatever the guest prints (the guest's UART simply stalls while the
 * copy catches up). QEMU's own stdout and stderr go the same way, through a pipe into
 * state_dir/qemu.log, which keeps its beginning and its newest bytes and never passes
 * VM_QEMU_LOG_CAP (a guest can make QEMU complain at length). */
#pragma once

#include <pthread.h>

#include "util/error.h"
#include "util/util.h"

#define VM_CONSOLE_CAP (1024u * 1024u)
#define VM_CONSOLE_FILE "console.log"
#define VM_CONSOLE_OLD "console.log.1"

/* The capped pair of files in one directory. */
struct vm_console_log {
	int dir_fd;      /* borrowed */
	int fd;          /* console.log, -1 before the first write or after an error */
	size_t cap;      /* both files together */
	size_t cur;      /* bytes in console.log */
};

/* Appends buf; rotates when console.log would pass cap/2 (the older half is dropped). Write
 * errors drop the data (the console is diagnostics, never worth failing a box over). */
void vm_console_log_write(struct vm_console_log *l, const char *buf, size_t n);
void vm_console_log_close(struct vm_console_log *l);

/* QEMU's stdout and stderr. One file (vm_box_diagnose reads its end): its first head bytes
 * (how QEMU started, its first complaint) are kept; after them, once the file reaches cap,
 * a marker line and the newest (cap - head)/2 bytes or so replace what was there. */
#define VM_QEMU_LOG_FILE "qemu.log"
#define VM_QEMU_LOG_CAP (1024u * 1024u)
#define VM_QEMU_LOG_HEAD (VM_QEMU_LOG_CAP / 4)
#define VM_QEMU_LOG_MARK "\n[paddock: qemu.log is capped: what QEMU printed here was dropped]\n"

struct vm_qemu_log {
	int fd;      /* owned; -1 after an error */
	size_t cap;  /* the file's largest size */
	size_t head; /* bytes at the start never dropped (cap >= 2 * (head + the marker)) */
	size_t size; /* bytes in the file */
	bool cut;    /* the marker follows the head */
};

/* Appends buf; write errors drop the data (diagnostics, never worth failing a box over). */
void vm_qemu_log_write(struct vm_qemu_log *l, const char *buf, size_t n);

/* Starts a thread that reads rd (taken over) until EOF into state_dir/qemu.log (truncated
 * first), capped as above. Join it with vm_console_join once QEMU has exited. */
int vm_qemu_log_start(int rd, const char *state_dir, pthread_t *ret, pd_err *err);

/* Starts the copying thread: reads sock (taken over) until EOF and writes into state_dir's
 * capped files (truncated first). Join it with vm_console_join once QEMU has exited. */
int vm_console_start(int sock, const char *state_dir, pthread_t *ret, pd_err *err);
void vm_console_join(pthread_t t);

/* Both files' contents, oldest first, sanitised (vm_console_tail without a line limit);
 * "" when there is none. */
char *vm_console_read(const char *state_dir);

/* The last max_lines lines of text[0..len) (at most max_bytes), every byte outside printable
 * ASCII and '\n' replaced by '?', "\r\n" folded to '\n'. Pure. */
char *vm_console_tail(const char *text, size_t len, unsigned max_lines, size_t max_bytes);

/* The lines that explain a failed boot: those from paddock-init ("paddock-init:") and the
 * kernel's "Kernel panic" line, the last max_lines of them, sanitised like vm_console_tail;
 * the plain tail when there are none. Pure. */
char *vm_console_explain(const char *text, size_t len, unsigned max_lines, size_t max_bytes);

/* Why a box's QEMU went away, for the error the supervisor prints: the last lines of
 * state_dir/qemu.log and console.log, sanitised. Never NULL. */
char *vm_box_diagnose(const char *state_dir);
