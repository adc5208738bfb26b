// SPDX-License-Identifier: GPL-2.0
/*
 * pdtest runner: `pdtest [--module PATH] GROUP...` runs the groups in order, each in a child
 * process, and prints one TAP-style line per declared check ("ok - name" / "not ok - name"),
 * failing the checks a group did not reach. `pdtest --list GROUP...` prints the names only.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pdtest.h"

#define GROUP_TIMEOUT_S 90

const char *pdt_module_path = "/pcidriver.ko";

/* groups, in the files that implement them */
extern const struct pdt_group grp_load, grp_info, grp_bar, grp_config, grp_kmem, grp_umem,
	grp_irq, grp_twodev, grp_ownership, grp_lifetime, grp_unpriv, grp_badinput,
	grp_unbind, grp_reload, grp_intx, grp_unload, grp_compat32, grp_memlock, grp_stall,
	grp_reach, grp_nvme, grp_wc, grp_dmabuf, grp_churn, grp_bringup;

static const struct pdt_group *const groups[] = {
	&grp_load, &grp_info, &grp_bar, &grp_config, &grp_kmem, &grp_umem, &grp_dmabuf, &grp_irq,
	&grp_twodev, &grp_ownership, &grp_lifetime, &grp_unpriv, &grp_memlock, &grp_badinput,
	&grp_compat32, &grp_reach, &grp_churn, &grp_nvme, &grp_wc, &grp_bringup, &grp_unbind, &grp_stall,
	&grp_reload, &grp_intx, &grp_unload, NULL,
};

static const struct pdt_group *find_group(const char *name)
{
	const struct pdt_group *const *g;

	for (g = groups; *g; g++)
		if (!strcmp((*g)->name, name))
			return *g;
	return NULL;
}

/* ---- child side ---- */

void pdt_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

void pdt_check(const char *name, int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s - %s\n", cond ? "ok" : "not ok", name);
	if (!cond && fmt && *fmt) {
		fputs("# ", stdout);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		fputc('\n', stdout);
	}
	fflush(stdout);
}

/* ---- parent side ---- */

/* Runs g in a child whose stdout is a pipe; prints each declared check once. */
static int run_group(const struct pdt_group *g)
{
	size_t n = 0, i;
	char line[1024];
	int failed = 0, status = 0, fds[2];
	char *done;
	FILE *in;
	pid_t pid;

	while (g->checks[n])
		n++;
	done = calloc(n ? n : 1, 1);
	if (!done || pipe(fds))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[1]);
		setvbuf(stdout, NULL, _IOLBF, 0);
		alarm(GROUP_TIMEOUT_S);
		g->run();
		fflush(stdout);
		_exit(0);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	while (fgets(line, sizeof(line), in)) {
		char *name = NULL, *directive;
		int ok = 0;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "ok - ", 5)) {
			name = line + 5;
			ok = 1;
		} else if (!strncmp(line, "not ok - ", 9)) {
			name = line + 9;
		}
		if (!name) {
			printf("%s%s\n", line[0] == '#' ? "" : "# ", line);
			continue;
		}
		/* "ok - name # SKIP why": the directive is not part of the name */
		directive = strstr(name, " # ");
		if (directive)
			*directive++ = '\0';
		for (i = 0; i < n; i++)
			if (!strcmp(g->checks[i], name))
				break;
		if (i == n || done[i]) {
			printf("# %s: check \"%s\" %s\n", g->name, name,
			       i == n ? "is not declared" : "reported twice");
			failed = 1;
			continue;
		}
		done[i] = 1;
		failed |= !ok;
		printf("%s - %s%s%s\n", ok ? "ok" : "not ok", name, directive ? " " : "",
		       directive ? directive : "");
		fflush(stdout);
	}
	fclose(in);
	waitpid(pid, &status, 0);
	for (i = 0; i < n; i++) {
		if (done[i])
			continue;
		printf("not ok - %s\n# not reached: group %s %s %d\n", g->checks[i], g->name,
		       WIFSIGNALED(status) ? "killed by signal" : "exited with",
		       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		failed = 1;
	}
	fflush(stdout);
	free(done);
	return failed;
}

int main(int argc, char **argv)
{
	int list = 0, failed = 0, i;

	signal(SIGPIPE, SIG_IGN);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--list")) {
			list = 1;
		} else if (!strcmp(argv[i], "--module") && i + 1 < argc) {
			pdt_module_path = argv[++i];
		} else {
			fprintf(stderr, "usage: pdtest [--list] [--module PATH] GROUP...\n");
			return 2;
		}
	}
	for (; i < argc; i++) {
		const struct pdt_group *g = find_group(argv[i]);
		const char *const *c;

		if (!g) {
			fprintf(stderr, "pdtest: unknown group %s\n", argv[i]);
			return 2;
		}
		if (list) {
			for (c = g->checks; *c; c++)
				printf("%s\n", *c);
			continue;
		}
		printf("# group %s\n", g->name);
		failed |= run_group(g) != 0;
	}
	return failed;
}
