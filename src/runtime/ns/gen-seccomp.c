/* gen-seccomp.c — compiles the box's seccomp table (ns_seccomp.c) with libseccomp at build
 * time and prints it as C (ns_seccomp_prog.c): one program per combination of the NS_SC_*
 * flags, which paddock loads as is, so it needs neither libseccomp nor ~0.5 ms of compiling at
 * every start. The table is x86-64 only (every other architecture is killed), like the
 * programs. test-seccomp checks each is the same as a fresh compile. */
#include <stdio.h>

#include "runtime/ns/ns_seccomp.h"

static int print_program(unsigned flags)
{
	struct sock_fprog prog;
	pd_err err = {0};
	if (ns_seccomp_build(flags, &prog, &err) < 0) {
		fprintf(stderr, "gen-seccomp: %s\n", err.msg);
		return 1;
	}
	printf("/* flags 0x%x: %u instructions */\nstatic const struct sock_filter prog%u[] = {\n", flags, prog.len, flags);
	for (unsigned i = 0; i < prog.len; i++)
		printf("\t{0x%04x, %u, %u, 0x%08x},\n", prog.filter[i].code, prog.filter[i].jt, prog.filter[i].jf,
		       prog.filter[i].k);
	printf("};\n\n");
	ns_seccomp_free(&prog);
	return 0;
}

int main(void)
{
	printf("/* ns_seccomp_prog.c — generated at build time by gen-seccomp.c from the table in\n"
	       " * ns_seccomp.c. */\n#include \"runtime/ns/ns_seccomp.h\"\n\n");
	for (unsigned f = 0; f < NS_SC_N_PROGRAMS; f++)
		if (print_program(f) != 0)
			return 1;
	printf("static const struct sock_fprog progs[] = {\n");
	for (unsigned f = 0; f < NS_SC_N_PROGRAMS; f++)
		printf("\t{.len = ARRAY_SIZE(prog%u), .filter = (struct sock_filter *)prog%u},\n", f, f);
	printf("};\n\nvoid ns_seccomp_program(unsigned flags, struct sock_fprog *ret)\n{\n"
	       "\t/* the kernel copies the program; it never writes through this pointer */\n"
	       "\t*ret = progs[flags %% ARRAY_SIZE(progs)];\n}\n");
	return ferror(stdout) ? 1 : 0;
}
