/* test-vm-init.c — TEST ONLY: paddock-init with the vm stage 1 in front, built from the guest
 * module's sources with their main renamed (-Dmain=paddock_init_main), until paddock-init's
 * own main calls vmboot() (then this file and the vm-test-init target go away). The wiring
 * shown here is exactly what init.c's main needs. */
#include <stdlib.h>
#include <unistd.h>

#include "guest/vmboot.h"

#undef main
int paddock_init_main(void);

int main(void)
{
	if (getpid() == 1 && !getenv("PADDOCK_CTL_FD") && vmboot() < 0)
		return 1; /* exit() powers the guest off (vmboot registered that) */
	return paddock_init_main();
}
