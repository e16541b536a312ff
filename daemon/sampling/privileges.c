// SPDX-License-Identifier: Apache-2.0
#include "sampling/privileges.h"

#include <errno.h>
#include <stdio.h>
#include <sys/utsname.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

uint64_t privileges_kept_mask(void)
{
	return (1ULL << CAP_SYS_PTRACE) | (1ULL << CAP_DAC_READ_SEARCH) | (1ULL << CAP_CHECKPOINT_RESTORE) |
	       (1ULL << CAP_SYSLOG);
}

bool privileges_bpf_needs_cap(const char *release, int unprivileged_bpf_disabled)
{
	unsigned major, minor;

	if (unprivileged_bpf_disabled == 0)
		return false;
	if (sscanf(release, "%u.%u", &major, &minor) != 2)
		return true; /* unknown: keep it rather than lose the counters */
	return major < 5 || (major == 5 && minor < 19);
}

bool privileges_bpf_needs_cap_here(void)
{
	struct utsname u;
	int disabled = -1;
	FILE *f = fopen("/proc/sys/kernel/unprivileged_bpf_disabled", "re");

	if (f) {
		if (fscanf(f, "%d", &disabled) != 1)
			disabled = -1;
		fclose(f);
	}
	return uname(&u) ? true : privileges_bpf_needs_cap(u.release, disabled);
}

uint64_t privileges_after_setup_mask(bool keep_bpf, bool keep_attach)
{
	return privileges_kept_mask() | (keep_bpf || keep_attach ? 1ULL << CAP_BPF : 0) |
	       (keep_attach ? (1ULL << CAP_PERFMON) | (1ULL << CAP_SYS_ADMIN) : 0);
}

uint64_t privileges_load_mask(void)
{
	return (1ULL << CAP_BPF) | (1ULL << CAP_PERFMON);
}

int privileges_keep_only(uint64_t keep)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &header, data))
		return -errno;
	for (int i = 0; i < 2; i++) {
		uint32_t mask = (uint32_t)(keep >> (32 * i));

		data[i].effective &= mask;
		data[i].permitted &= mask;
		data[i].inheritable = 0;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	if (syscall(SYS_capset, &header, data))
		return -errno;
	return 0;
}

int privileges_drop_after_setup(bool keep_bpf, bool keep_attach)
{
	return privileges_keep_only(privileges_after_setup_mask(keep_bpf, keep_attach));
}
