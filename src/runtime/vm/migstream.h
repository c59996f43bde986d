/* migstream.h — a template's saved guest without its zero pages.
 *
 * QEMU's migration stream names every page of the guest's RAM: a zero page as a 9-byte marker,
 * the others with their 4 KiB. The QEMU that loads it *reads* its own page before it writes a
 * marker's zeros (ram_handle_compressed: buffer_is_zero), and where the host has no shared
 * zero page that read allocates: restoring a 512 MiB guest that holds 66 MB made all 512 MiB
 * resident until the guest's free page reporting gave the free part back (a start's peak:
 * ~580 MB). The restoring QEMU allocates the guest's RAM fresh and anonymous, so it is zero
 * already, and a marker says nothing it does not know: mig_strip_zero() writes the stream
 * again without the zero markers of that one block (the restore then touches only the pages
 * that hold something: peak ~146 MB).
 *
 * What it understands is exactly what paddock's template builder gets from QEMU 7.2: the file
 * header, the configuration (machine name, no subsections), then the "ram" section (START,
 * PARTs, END) with the records ZERO, PAGE and MEM_SIZE (each of the first two optionally
 * CONTINUE: the same block as the record before), then the devices' sections, copied
 * untouched. Anything else — another iterative section, compressed or XBZRLE pages, postcopy
 * or ignore-shared block fields, a truncated record — is -EINVAL and the caller keeps the
 * stream as QEMU wrote it. A dropped marker may have named its block (a record without
 * CONTINUE); the next kept record that leans on it is given the name instead.
 *
 * Pure: bytes in, bytes out through a sink. The stream is QEMU's, written from a guest that
 * only ever ran paddock-init, but it is parsed as untrusted all the same (fuzz-migstream.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The RAM block of a microvm machine's guest memory (QEMU: microvm's default_ram_id). ROM
 * blocks (the firmware) keep their markers: only this block is known to be fresh. */
#define MIG_GUEST_RAM_BLOCK "microvm.ram"
#define MIG_PAGE_SIZE 4096u

struct mig_strip_stats {
	uint64_t zero_dropped; /* zero-page markers left out */
	uint64_t kept;         /* page records kept (with data, or a marker of another block) */
};

/* Receives the output in order; a negative return stops the rewrite and is returned. */
typedef int (*mig_sink_fn)(void *ctx, const uint8_t *buf, size_t len);

/* Writes the stream in[0..len) to sink without the zero-page markers of block. 0, -EINVAL
 * when the stream is not one this code knows (nothing useful was written: the caller
 * discards the output), or the sink's error. st may be NULL. */
int mig_strip_zero(const uint8_t *in, size_t len, const char *block, mig_sink_fn sink, void *ctx,
		   struct mig_strip_stats *st);
