/* vmbase.c — the root of a vm box that names no image: the host's base disk when it has one
 * (scripts/vm-build-rootfs.sh, $PADDOCK_VM_IMAGE), else paddock's own vm-base image, built
 * once through the image store like a profile's (a Debian minbase from the host's apt
 * sources plus the tools agents and their tests expect), and used as any --image is: its
 * tree becomes a read-only ext4 disk (image/vmdisk.h) under every such box's qcow2 overlay.
 * So `paddock run --backend vm` works for an ordinary user on a fresh host, with no root
 * step; the image is as fresh as the day it was built (`paddock image update vm-base`). */
#include "cli/cli.h"
#include "image/store.h"
#include "profile/profile.h"
#include "runtime/vm/vm.h"

/* The packages scripts/vm-build-rootfs.sh installs, so both roots offer the same tools */
static const char *const install[] = {
	"apt-get update",
	"apt-get install -y --no-install-recommends ca-certificates curl git python3 procps",
	"apt-get clean && rm -rf /var/lib/apt/lists/*",
};

struct profile *cli_vm_base_profile(void)
{
	struct profile *p = xcalloc(1, sizeof(*p));
	p->name = xstrdup(PROFILE_VM_BASE);
	p->display_name = xstrdup("paddock's vm base");
	p->base_image = xstrdup("debian:bookworm-slim");
	for (size_t i = 0; i < ARRAY_SIZE(install); i++)
		p->install_commands = strv_append(p->install_commands, install[i]);
	p->launch_command = strv_append(NULL, "bash");
	p->launch_command = strv_append(p->launch_command, "-l");
	p->sources = strv_append(NULL, "built-in (src/cli/vmbase.c)");
	return p;
}

int cli_vm_default_root(struct box_opts *o, const char *home, char ***ret_cmd, pd_err *err)
{
	if (!streq(o->spec.backend, "vm") || o->image || vm_base_image_named())
		return 0;
	_cleanup_free_ char *cache = vm_cache_home(home);
	_cleanup_free_ char *base = vm_base_image(cache);
	if (access(base, F_OK) == 0)
		return 0;
	_cleanup_profile_ struct profile *p = cli_vm_base_profile();
	_cleanup_img_record_ struct img_record *img = NULL;
	int r = cli_profile_image(p, false, o->spec.net.resolve, &img, err);
	if (r < 0)
		return pd_err_prefix(err, "the vm base image (none at %s)", base);
	return cli_image_for_box(img->name, &o->spec, ret_cmd, err);
}
