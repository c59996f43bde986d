/* bench-poweroff-init.c — BENCHMARK ONLY: the init of the raw-QEMU anchor initramfs. It powers
 * the guest off the moment the kernel starts it, so "QEMU spawn → exit" with it is the floor
 * any vm box start is compared against. */
#include <sys/reboot.h>
#include <unistd.h>

int main(void)
{
	reboot(RB_POWER_OFF);
	return 1;
}
