/* applybranch.h — the box's commits as a branch of the host repository (apply --branch). */
#pragma once

#include "util/error.h"

int apply_branch(const char *box_dir, const char *project, const char *branch, bool uncommitted, pd_err *err);
