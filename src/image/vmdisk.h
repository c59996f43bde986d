/* vmdisk.h — an image's tree as a vm base disk: a raw ext4 file under the store's vmdisk/,
 * keyed like the tree by the image's config digest, made once and never written again (every
 * vm box gets a qcow2 overlay over it, as over the default base image).
 *
 * mkfs.ext4 -d copies owners as it reads them. Root's trees are owned by the box range
 * (layer.h: shifted), an ordinary user's by that user, so mkfs runs in a user namespace of its
 * own that maps them back: root's range to 0..65535, or the user to 0. In that namespace it
 * holds capabilities only over files owned by the mapped ids (the tree's): it can read every
 * file of the tree whatever its mode and nothing of the host's it could not read before. */
#pragma once

#include "image/store.h"

/* bytes of the disk for a tree holding `unpacked` bytes: twice that plus 1 GiB for what boxes
 * write (the overlay can only grow inside the disk), at least 2 GiB, in whole MiB (pure) */
uint64_t img_vmdisk_size(uint64_t unpacked);
/* The disk of record r (made now unless stored); ret_path: its absolute path. Needs the
 * store's shared lock (gc keeps disks of records and of boxes' uses, like trees). */
bool img_vmdisk_exists(struct img_store *s, const struct img_record *r);
int img_vmdisk(struct img_store *s, const struct img_record *r, char **ret_path, pd_err *err);
