// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest group bringup: the mprace tool's bring-up commands (docs/bring-up.md) on a real
 * kernel's sysfs. The board stand-in is QEMU's e1000e (a PCI Express endpoint that no driver
 * in the initramfs claims) behind a pcie-root-port set to 2.5 GT/s x1, bound to pcidriver;
 * an edu device is bound as a second board. run-qemu-tests.sh puts the tool at /mprace.
 *
 * QEMU's emulated endpoints all advertise a 2.5 GT/s x1 link, so the trained link equals the
 * board's capability here: doctor must call it fine. A link trained below both ends' capability
 * cannot be made in QEMU; tests/tools/tools-bringup.sh checks that finding on written sysfs
 * trees.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pdtest.h"

#define BOARD_VENDOR	0x8086	/* QEMU's e1000e */
#define BOARD_DEVICE	0x10d3
#define TOOL		"/mprace"
#define OUT		"/tmp/bringup.out"
#define ERR		"/tmp/bringup.err"

static const char *const bringup_checks[] = {
	"bringup: mprace list shows both boards, the PCIe one with its address, IDs, driver, trained link and the port's",
	"bringup: mprace doctor as root finds nothing wrong (status 0, no warning, no serious finding)",
	"bringup: doctor for a user with RLIMIT_MEMLOCK 64 KiB and --buffers 16M: memlock serious, the only finding, status 1",
	"bringup: doctor for a user who may not open the node: permissions serious, status 1",
	"bringup: mprace selftest refuses a device without our engine before running anything",
	NULL,
};

/* Runs the tool with argv (NULL-terminated, after TOOL) as uid (0: root as we are) with
 * stdout in OUT and stderr in ERR; its exit status, or -1. */
static int tool(uid_t uid, const char *const *argv)
{
	const char *args[16] = { TOOL };
	int status, n = 1;
	pid_t pid;

	while (*argv && n < 15)
		args[n++] = *argv++;
	args[n] = NULL;
	pid = fork();
	if (pid == 0) {
		int o = open(OUT, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(ERR, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		if (uid)
			drop_privileges(uid, uid);
		execv(TOOL, (char *const *)args);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char out[16384], err[4096];

static void slurp(void)
{
	int n = read_file(OUT, out, sizeof(out) - 1);

	out[n > 0 ? n : 0] = 0;
	n = read_file(ERR, err, sizeof(err) - 1);
	err[n > 0 ? n : 0] = 0;
}

static void show(void)
{
	char *line, *save = NULL;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		pdt_diag("out: %s", line);
	for (line = strtok_r(err, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		pdt_diag("err: %s", line);
}

/* Whether addr is bound to pcidriver now. */
static int bound_to_pcidriver(const char *addr)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", addr);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = 0;
	return !strcmp(strrchr(link, '/') ? strrchr(link, '/') + 1 : link, "pcidriver");
}

/* The PCI address of the bridge above addr (its parent in sysfs), or "". */
static void parent_of(const char *addr, char *up, size_t len)
{
	char path[PATH_MAX], real[PATH_MAX], *slash;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", addr);
	up[0] = 0;
	if (!realpath(path, real))
		return;
	slash = strrchr(real, '/');
	if (!slash)
		return;
	*slash = 0;
	slash = strrchr(real, '/');
	if (slash && strlen(slash + 1) == 12)
		snprintf(up, len, "%s", slash + 1);
}

static void bringup_run(void)
{
	char addr[64], edu[64], port[64], node[32], want[256];
	int minor, edu_minor = -1, edu_was_bound = 0, rc, ok;

	if (find_pci(BOARD_VENDOR, BOARD_DEVICE, addr, sizeof(addr)) || access(TOOL, X_OK)) {
		pdt_diag("no e1000e behind a root port, or no %s in the initramfs", TOOL);
		return; /* every check reports "no result" */
	}
	minor = bind_pci(addr);
	if (minor < 0) {
		pdt_diag("binding %s: %s", addr, errname(minor));
		return;
	}
	/* an edu as the second board: bound by the load group already (later groups expect
	 * it so), else bound here and unbound at the end */
	if (!find_pci(EDU_VENDOR, EDU_DEVICE, edu, sizeof(edu))) {
		edu_was_bound = bound_to_pcidriver(edu);
		edu_minor = bind_pci(edu);
	}
	snprintf(node, sizeof(node), "/dev/fpga%d", minor);
	parent_of(addr, port, sizeof(port));

	rc = tool(0, (const char *const[]){ "list", NULL });
	slurp();
	snprintf(want, sizeof(want), "  link: 2.5 GT/s x1 trained; board capable 2.5 GT/s x1; port %s capable 2.5 GT/s x1", port);
	ok = rc == 0 && strstr(out, want);
	snprintf(want, sizeof(want), "%s\n  pci: %s, 8086:10d3, class 020000, driver pcidriver\n", node, addr);
	ok = ok && strstr(out, want) && strstr(out, "  engine: none (MAGIC reads");
	if (edu_minor >= 0) {
		snprintf(want, sizeof(want), "/dev/fpga%d\n  pci: %s, 1234:11e8", edu_minor, edu);
		ok = ok && strstr(out, want);
	}
	CHECK(bringup_checks[0], ok && edu_minor >= 0 && port[0], "status %d, edu minor %d, port '%s'", rc, edu_minor, port);
	if (!ok)
		show();

	rc = tool(0, (const char *const[]){ "doctor", node, "--json", NULL });
	slurp();
	ok = rc == 0 && strstr(out, "\"warnings\": 0, \"serious\": 0") &&
	     strstr(out, "\"check\": \"link\", \"level\": \"ok\"") &&
	     strstr(out, "\"check\": \"memlock\", \"level\": \"ok\"") &&
	     strstr(out, "\"check\": \"module\", \"level\": \"ok\"");
	CHECK(bringup_checks[1], ok, "status %d", rc);
	if (!ok)
		show();

	/* the node as udev would leave it: group fpga (1000), 0660 */
	ok = !chown(node, 0, 1000) && !chmod(node, 0660);
	rc = tool(1000, (const char *const[]){ "doctor", node, "--buffers", "16M", "--json", NULL });
	slurp();
	ok = ok && rc == 1 && strstr(out, "\"warnings\": 0, \"serious\": 1") &&
	     strstr(out, "\"check\": \"memlock\", \"level\": \"serious\"") &&
	     strstr(out, "RLIMIT_MEMLOCK (64 KiB) is below the DMA buffers asked for");
	CHECK(bringup_checks[2], ok, "status %d", rc);
	if (!ok)
		show();

	ok = !chmod(node, 0600);
	rc = tool(1000, (const char *const[]){ "doctor", node, NULL });
	slurp();
	ok = ok && rc == 1 && strstr(out, "SERIOUS  permissions this user may not open") && strstr(out, "usermod -aG");
	CHECK(bringup_checks[3], ok, "status %d", rc);
	if (!ok)
		show();

	rc = tool(0, (const char *const[]){ "-d", node, "selftest", "--seed", "1", NULL });
	slurp();
	ok = rc == 1 && strstr(err, "not an mprace engine") && !strstr(out, "ok 1 ");
	CHECK(bringup_checks[4], ok, "status %d", rc);
	if (!ok)
		show();

	if (edu_minor >= 0 && !edu_was_bound)
		unbind_pci(edu);
	unbind_pci(addr);
}

const struct pdt_group grp_bringup = { "bringup", bringup_checks, bringup_run };
