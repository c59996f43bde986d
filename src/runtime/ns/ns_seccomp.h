/* ns_seccomp.h — the box's seccomp filter as data: one rule per line, each with its reason
 * (Firecracker style), compiled with libseccomp in the supervisor and loaded by the box's
 * first process right before it executes paddock-init.
 *
 * Default allow, deny-list (Docker's approach): the boundary of an ns box is the set of
 * namespaces plus Landlock plus an empty capability set; the filter takes away the kernel
 * interfaces that are not namespaced or have a record of privilege escalations. Every
 * architecture other than x86-64 (i386 int 0x80, x32) kills the process. */
#pragma once

#include <linux/filter.h>

#include "util/error.h"

enum ns_sc_action {
	NS_SC_EPERM,     /* fail with EPERM */
	NS_SC_ENOSYS,    /* fail with ENOSYS so the C library falls back (clone3 -> clone) */
	NS_SC_EAFNOSUPPORT, /* socket(): fail as a kernel built without the family does */
	NS_SC_KILL,      /* kill the process */
};

/* Matches when (arg[index] & mask) == value (SCMP_CMP_MASKED_EQ). A mask of 0xffffffff looks
 * only at the low 32 bits, which is what the kernel uses for int/unsigned arguments, so high
 * bits set by a raw syscall cannot slip past. */
struct ns_sc_arg {
	unsigned index;
	uint64_t mask, value;
};

enum ns_sc_match {
	NS_SC_ALWAYS,          /* every call */
	NS_SC_ARGS,            /* all of args[0..n_args) match */
	NS_SC_PERSONALITY,     /* personality() outside the allowed set (expanded by code) */
};

/* What a box has that some rules are for (ns_sc_rule.when, the flags of a program). */
#define NS_SC_WRITABLE_BIND 1u   /* a host directory or file bound writable (-v, --workspace rw) */
#define NS_SC_N_PROGRAMS 2u      /* one program per combination of the flags above */

struct ns_sc_rule {
	const char *syscall;
	int nr;                /* x86-64 number, for a syscall newer than libseccomp's table; 0: by name */
	enum ns_sc_action action;
	enum ns_sc_match match;
	unsigned n_args;
	struct ns_sc_arg args[2];
	const char *reason;
	unsigned when;         /* NS_SC_* flags the box must have for the rule to apply; 0: every box */
};

/* Pure: the rule table. */
const struct ns_sc_rule *ns_seccomp_rules(size_t *ret_n);

/* personality(): PER_LINUX (0), PER_LINUX32 (0x8), UNAME26 (0x20000), their union, and the
 * 0xffffffff query are allowed (Docker's list); anything else fails with EPERM. libseccomp
 * cannot say "not one of", so this is expanded into masked comparisons: */
#define NS_PERSONALITY_ALLOWED_BITS 0x20008u
#define NS_PERSONALITY_MAX_RULES 40
/* Pure: the (mask, value) pairs on arg 0 that together deny exactly the forbidden values. */
size_t ns_seccomp_personality_rules(struct ns_sc_arg ret[NS_PERSONALITY_MAX_RULES]);
/* Pure: would the expanded rules deny personality(arg)? (for tests) */
bool ns_seccomp_personality_denied(uint64_t arg);

/* The program a box with these NS_SC_* flags loads: the table compiled at build time
 * (gen-seccomp.c, one program per combination of flags), so the supervisor needs no
 * libseccomp. Static; nothing to free. */
void ns_seccomp_program(unsigned flags, struct sock_fprog *ret);

/* Compiles the rules that apply to a box with these flags into a BPF program with libseccomp
 * (malloc'd filter; ns_seccomp_free). Used by gen-seccomp.c and the tests, not at run time. */
int ns_seccomp_build(unsigned flags, struct sock_fprog *ret, pd_err *err);
void ns_seccomp_free(struct sock_fprog *prog);
