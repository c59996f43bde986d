/* blob.h — paddock-init, a static binary embedded in the host program (kvmtool style), so
 * one file carries everything. */
#pragma once

#include "util/error.h"

/* Returns a sealed (F_SEAL_WRITE|SHRINK|GROW|SEAL) O_CLOEXEC memfd holding paddock-init, for
 * execveat(fd, "", ..., AT_EMPTY_PATH). Sealing means nothing inside a box can rewrite the
 * init it runs (CVE-2019-5736 /proc/self/exe). */
int guest_init_memfd(pd_err *err);
/* The raw bytes (for building a vm initramfs). */
const unsigned char *guest_init_data(size_t *ret_len);
