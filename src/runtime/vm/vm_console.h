/* vm_console.h — showing what a guest printed, safely. The serial console is written by the
 * guest (hostile: terminal escape sequences, floods), so only a sanitised tail of it ever
 * reaches a user's terminal. (The bounded ring the supervisor will keep lives here later.) */
#pragma once

#include "util/util.h"

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
