/* gen-seccomp.c — compiles the box's seccomp table (ns_seccomp.c) with libseccomp at build
 * time and prints it as C (ns_seccomp_prog.c): paddock loads that program as is, so it needs
 * neither libseccomp nor ~0.5 ms of compiling at every start. The table is x86-64 only (every
 * other architecture is killed), like the program. test-seccomp checks both are the same. */
#include <stdio.h>

#include "runtime/ns/ns_seccomp.h"

int main(void)
{
	struct sock_fprog prog;
	pd_err err = {0};
	if (ns_seccomp_build(&prog, &err) < 0) {
		fprintf(stderr, "gen-seccomp: %s\n", err.msg);
		return 1;
	}
	printf("/* ns_seccomp_prog.c — generated at build time by gen-seccomp.c from the table in\n"
	       " * ns_seccomp.c; %u instructions. */\n#include \"runtime/ns/ns_seccomp.h\"\n\n"
	       "static const struct sock_filter prog[] = {\n", prog.len);
	for (unsigned i = 0; i < prog.len; i++)
		printf("\t{0x%04x, %u, %u, 0x%08x},\n", prog.filter[i].code, prog.filter[i].jt, prog.filter[i].jf,
		       prog.filter[i].k);
	printf("};\n\nvoid ns_seccomp_program(struct sock_fprog *ret)\n{\n"
	       "\t/* the kernel copies the program; it never writes through this pointer */\n"
	       "\t*ret = (struct sock_fprog){.len = ARRAY_SIZE(prog), .filter = (struct sock_filter *)prog};\n}\n");
	ns_seccomp_free(&prog);
	return ferror(stdout) ? 1 : 0;
}
