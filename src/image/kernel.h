/* kernel.h — the guest kernel image, as data: find the compressed kernel inside a bzImage,
 * decompress it into the uncompressed ELF vmlinux, and check that the ELF carries the PVH
 * entry note so QEMU can boot it directly (no real-mode setup, no in-guest decompression:
 * ~2.3 s vs ~5.5 s to init under TCG). Also parses the one line of apt-cache output that
 * names the kernel package. Everything here is pure (buffers in, results out): the bytes come
 * from a Debian package fetched through the host's apt, but they are still parsed with hard
 * caps and a fuzz target (fuzz-kernel.c). */
#pragma once

#include "util/error.h"

/* A vmlinux is at most this big (Debian's 6.1 cloud kernel: 53 MB). */
#define KERNEL_MAX_VMLINUX (256u * 1024u * 1024u)
/* Program headers / notes we are willing to walk in an ELF. */
#define KERNEL_MAX_PHDRS 64u
#define KERNEL_MAX_NOTES 256u

enum kernel_comp {
	KERNEL_COMP_INVALID = 0,
	KERNEL_COMP_LZ4,  /* lz4 legacy frame (Debian 12: CONFIG_KERNEL_LZ4) */
	KERNEL_COMP_XZ,
	KERNEL_COMP_ZSTD,
	KERNEL_COMP_MAX,
};

const char *kernel_comp_name(enum kernel_comp c);

/* The compressed payload of a bzImage (boot protocol >= 2.08: payload_offset/length in the
 * setup header). Points into img. The kernel's build appends the uncompressed size as a
 * little-endian u32 to every payload; it is returned separately and not part of *ret_len.
 * -EBADMSG if img is not a bzImage we understand, -EPROTONOSUPPORT for an unknown
 * compression (gzip, bzip2, lzma, lzo). */
struct kernel_payload {
	const uint8_t *data;
	size_t len;
	enum kernel_comp comp;
	uint32_t out_size; /* the appended uncompressed size */
};
int kernel_bzimage_payload(const uint8_t *img, size_t len, struct kernel_payload *ret);

/* Decompresses a payload into a new buffer of exactly p->out_size bytes (at most
 * KERNEL_MAX_VMLINUX). -EBADMSG on corrupt data or a size mismatch. */
int kernel_decompress(const struct kernel_payload *p, uint8_t **ret_buf, size_t *ret_len);

/* 1 if elf is an x86-64 ELF whose PT_NOTE segments carry XEN_ELFNOTE_PHYS32_ENTRY (the PVH
 * entry point QEMU's -kernel uses), 0 if it is such an ELF without it, -EBADMSG if it is not
 * a well-formed ELF64 (bounds of every header and note are checked). */
int kernel_elf_has_pvh(const uint8_t *elf, size_t len);

/* Drops the zeros a vmlinux stores at the end of its loadable segments from what a loader
 * reads: Debian's 6.1 keeps its .bss, .brk and .init.scratch in the file (9.5 of 45 MB
 * loaded). Each PT_LOAD's p_filesz goes down past its trailing zeros, p_memsz stays: every ELF
 * loader (QEMU's -kernel too) fills the difference with zeros. QEMU maps the file and reads
 * what p_filesz says, so a booted guest's QEMU keeps 8.5 MB less of it resident. Only the
 * program headers change, in place: the file keeps its length and section headers (one cut
 * after its last segment, without them, hung the guest at boot under QEMU 7.2; not looked
 * into). -EBADMSG, with nothing changed, for an ELF kernel_elf_has_pvh would refuse, a segment
 * outside the buffer, a PT_LOAD with less memory than file, or a note over the program
 * headers. */
int kernel_elf_trim(uint8_t *elf, size_t len);

/* Parses `apt-cache depends linux-image-cloud-amd64` output: the first
 * "Depends: linux-image-<release>" line gives the versioned package and its release
 * ("6.1.0-57-cloud-amd64"). Names are checked against a strict charset (they end up in argv
 * and paths). -ENOENT when there is no such line. */
int kernel_apt_parse_depends(const char *out, char **ret_pkg, char **ret_release);

/* Whether s is a plausible kernel release / module name for use in paths: [A-Za-z0-9._+-],
 * 1..64 chars, not "." or "..". */
bool kernel_name_ok(const char *s);
