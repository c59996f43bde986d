/* applybranch.h — the box's commits as a branch of the host repository (apply --branch). */
#pragma once

#include "util/error.h"

int apply_branch(const char *box_dir, const char *project, const char *branch, bool uncommitted, pd_err *err);
/* The host's core.hooksPath as a project-relative directory when it points into project
 * (relative values are: git runs hooks from the work tree's top), for ws_exec_set_hook_dirs;
 * NULL when unset, outside, or git is not there. */
char **cli_git_hook_dirs(const char *project);
