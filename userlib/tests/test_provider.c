// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host test of libstellar's registration and device matching.
 *
 * No Stellar device is needed: this program defines its own
 * verbs_register_driver_34, which the provider's constructor binds to
 * (executables come first in symbol lookup), then drives the registered
 * match_device callback against fake sysfs directories.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stellar-abi.h"
#include "stellar-verbs-abi.h"

static const struct verbs_device_ops *registered;
static int registrations;
static int failures;

void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	registered = ops;
	registrations++;
}

#define EXPECT(cond)                                                           \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: %s\n", __func__,          \
				__LINE__, #cond);                              \
			failures++;                                            \
		}                                                              \
	} while (0)

static char tmpdir[] = "/tmp/stellar-test-XXXXXX";

/* A fake /sys/class/infiniband/<name>; abi == NULL: no Stellar attribute. */
static void fake_dev(struct verbs_sysfs_dev *sd, const char *name,
		     const char *abi)
{
	char path[IBV_SYSFS_PATH_MAX + 64];
	FILE *f;

	memset(sd, 0, sizeof(*sd));
	snprintf(sd->ibdev_name, sizeof(sd->ibdev_name), "%s", name);
	snprintf(sd->ibdev_path, sizeof(sd->ibdev_path), "%s/%s", tmpdir, name);
	sd->abi_ver = 1;
	mkdir(sd->ibdev_path, 0755);

	snprintf(path, sizeof(path), "%s/%s", sd->ibdev_path,
		 STELLAR_SYSFS_ABI_ATTR);
	unlink(path);
	if (!abi)
		return;
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(2);
	}
	fputs(abi, f);
	fclose(f);
}

static bool matches(const char *name, const char *abi)
{
	struct verbs_sysfs_dev sd;

	fake_dev(&sd, name, abi);
	return registered->match_device(&sd);
}

static void constructor_registers_stellar_once(void)
{
	EXPECT(registrations == 1);
	EXPECT(registered && !strcmp(registered->name, "stellar"));
}

static void ops_table_is_complete(void)
{
	EXPECT(registered->match_table != NULL);
	/* Asked in the driver-id pass (rxe's id), then the sentinel. */
	EXPECT(registered->match_table[0].kind == VERBS_MATCH_DRIVER_ID);
	EXPECT(registered->match_table[0].u.driver_id == RDMA_DRIVER_RXE);
	EXPECT(registered->match_table[1].kind == VERBS_MATCH_SENTINEL);
	EXPECT(registered->match_device != NULL);
	EXPECT(registered->alloc_context != NULL);
	EXPECT(registered->alloc_device != NULL);
	EXPECT(registered->uninit_device != NULL);
	EXPECT(registered->import_context == NULL);
	EXPECT(registered->static_providers == NULL);
}

/* The rxe user ABI's version, and no other: the rings are its layout. */
static void abi_range_is_the_rxe_uverbs_abi(void)
{
	EXPECT(registered->match_min_abi_version == 2);
	EXPECT(registered->match_max_abi_version == 2);
}

static void match_device_accepts_current_abi(void)
{
	char cur[16];

	snprintf(cur, sizeof(cur), "%d\n", STELLAR_UVERBS_ABI_VERSION);
	EXPECT(matches("stellar0", cur));
	/* The name is the user's choice: any name with the attribute matches. */
	EXPECT(matches("fabric7", cur));
}

static void match_device_ignores_name_without_attribute(void)
{
	EXPECT(!matches("stellar0", NULL));
	EXPECT(!matches("rxe0", NULL));
}

static void match_device_rejects_other_abi_versions(void)
{
	char other[16];

	snprintf(other, sizeof(other), "%d\n", STELLAR_UVERBS_ABI_VERSION + 1);
	EXPECT(!matches("stellar0", other));
	EXPECT(!matches("stellar0", "0\n"));
	EXPECT(!matches("stellar0", "1\n"));	/* the syscall data path's */
	EXPECT(!matches("stellar0", "1x\n"));
	EXPECT(!matches("stellar0", "\n"));
}

static void match_device_preserves_errno(void)
{
	struct verbs_sysfs_dev sd;

	fake_dev(&sd, "rxe0", NULL);
	errno = 1234;
	EXPECT(!registered->match_device(&sd));
	EXPECT(errno == 1234);
}

static void alloc_device_returns_freeable_device(void)
{
	struct verbs_sysfs_dev sd;
	struct verbs_device *vdev;

	fake_dev(&sd, "stellar0", "1\n");
	vdev = registered->alloc_device(&sd);
	EXPECT(vdev != NULL);
	if (vdev)
		registered->uninit_device(vdev);
}

static void provider_exports_no_symbols(void *lib)
{
	EXPECT(dlsym(lib, "stellar_match_device") == NULL);
	EXPECT(dlsym(lib, "stellar_dev_ops") == NULL);
}

int main(void)
{
	char cmd[sizeof(tmpdir) + 16];
	void *lib;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}

	lib = dlopen(STELLAR_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}

	constructor_registers_stellar_once();
	if (!registered)
		return 1;
	ops_table_is_complete();
	abi_range_is_the_rxe_uverbs_abi();
	match_device_accepts_current_abi();
	match_device_ignores_name_without_attribute();
	match_device_rejects_other_abi_versions();
	match_device_preserves_errno();
	alloc_device_returns_freeable_device();
	provider_exports_no_symbols(lib);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);

	printf("test_provider: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
