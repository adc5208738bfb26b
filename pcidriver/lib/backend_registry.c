// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The backend registry: which implementation serves a device-name prefix ("emu:", "sim:").
 * Backends registered by the application come first; shared builds also load a plugin
 * PREFIX.so on first use (pcidriver/backend.h says where they are looked for). Static builds
 * never call dlopen: a static application gets exactly the backends it links and registers.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef PIC
#include <dlfcn.h>
#endif

#include "frontend.h"

#define MAX_BACKENDS 16

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
/* What was registered, and the copy the front end uses: the backend's `size` bytes of it,
 * the ops it was built without (added later at the end) NULL. */
static const struct pd_backend_ops *registered[MAX_BACKENDS];
static struct pd_backend_ops registered_copy[MAX_BACKENDS];
static unsigned int registered_count;

/* Every backend has the ops up to irq_clear; the ones after it are optional. */
#define OPS_MIN_SIZE (offsetof(struct pd_backend_ops, irq_clear) + \
		      sizeof(((struct pd_backend_ops *)0)->irq_clear))

static _Thread_local char open_error[256];

void pd_backend_set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(open_error, sizeof(open_error), fmt, ap);
	va_end(ap);
}

void pd_clear_open_error(void)
{
	open_error[0] = '\0';
}

const char *pd_open_error(void)
{
	return open_error;
}

static bool valid_prefix(const char *p, size_t len)
{
	size_t i;

	if (len == 0 || len > PD_BACKEND_PREFIX_MAX || p[0] < 'a' || p[0] > 'z')
		return false;
	for (i = 1; i < len; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9')))
			return false;
	return true;
}

size_t pd_backend_prefix_len(const char *name)
{
	size_t len = strcspn(name, ":");

	return valid_prefix(name, len) ? len : 0;
}

static bool complete(const struct pd_backend_ops *o)
{
	return o->open && o->close && o->info && o->map_bar && o->unmap_bar && o->regs_get &&
	       o->cfg_read && o->cfg_write && o->kmem_alloc && o->kmem_free && o->umem_map &&
	       o->umem_unmap && o->umem_sync && o->irq_wait && o->irq_clear;
}

/* registry_lock held */
static const struct pd_backend_ops *lookup(const char *prefix, size_t len)
{
	unsigned int i;

	for (i = 0; i < registered_count; i++)
		if (strlen(registered_copy[i].prefix) == len &&
		    memcmp(registered_copy[i].prefix, prefix, len) == 0)
			return &registered_copy[i];
	return NULL;
}

int pd_backend_register(const struct pd_backend_ops *ops)
{
	const struct pd_backend_ops *old;
	int ret = 0;

	if (!ops || !ops->prefix)
		return -EINVAL;
	if (ops->abi != PD_BACKEND_ABI)
		return -EPROTO;
	if (ops->size < OPS_MIN_SIZE || !valid_prefix(ops->prefix, strlen(ops->prefix)) ||
	    !complete(ops))
		return -EINVAL;
	pthread_mutex_lock(&registry_lock);
	old = lookup(ops->prefix, strlen(ops->prefix));
	if (old) {
		ret = registered[old - registered_copy] == ops ? 0 : -EEXIST;
	} else if (registered_count == MAX_BACKENDS) {
		ret = -ENOSPC;
	} else {
		memset(&registered_copy[registered_count], 0, sizeof(registered_copy[0]));
		memcpy(&registered_copy[registered_count], ops,
		       ops->size < sizeof(*ops) ? ops->size : sizeof(*ops));
		registered[registered_count++] = ops;
	}
	pthread_mutex_unlock(&registry_lock);
	return ret;
}

#ifdef PIC
/* The plugin directories, in search order, as one colon-separated list; -ENAMETOOLONG (error
 * set) when PCIDRIVER_BACKEND_PATH does not fit: refused, never cut short. */
static int plugin_path(char *buf, size_t len)
{
	const char *env = secure_getenv("PCIDRIVER_BACKEND_PATH");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s:%s", env, PD_BACKEND_DIR);
	else
		n = snprintf(buf, len, "%s", PD_BACKEND_DIR);
	if (n < 0 || (size_t)n >= len) {
		pd_backend_set_error("PCIDRIVER_BACKEND_PATH is longer than %zu bytes",
				     len - strlen(PD_BACKEND_DIR) - 2);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Loads dir/PREFIX.so for the first directory that has it; NULL (error set) when none does. */
static const struct pd_backend_ops *load_plugin(const char *prefix, size_t len)
{
	const struct pd_backend_ops *ops;
	char dirs[4096], file[4200], *dir, *save = NULL;
	pd_backend_plugin_fn *entry;
	void *h;
	int ret;

	if (plugin_path(dirs, sizeof(dirs)))
		return NULL;
	for (dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(file, sizeof(file), "%s/%.*s.so", dir, (int)len, prefix);
		if (access(file, R_OK) != 0)
			continue;
		h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			pd_backend_set_error("cannot load the '%.*s:' backend: %s", (int)len, prefix,
					     dlerror());
			return NULL;
		}
		*(void **)&entry = dlsym(h, PD_BACKEND_PLUGIN_SYMBOL);
		ops = entry ? entry() : NULL;
		if (!ops || !ops->prefix || strlen(ops->prefix) != len ||
		    memcmp(ops->prefix, prefix, len) != 0) {
			pd_backend_set_error("%s is not a libpcidriver backend for '%.*s:'", file,
					     (int)len, prefix);
			dlclose(h);
			return NULL;
		}
		ret = pd_backend_register(ops);
		if (ret == -EEXIST) {   /* registered by another thread meanwhile */
			dlclose(h);
			pthread_mutex_lock(&registry_lock);
			ops = lookup(prefix, len);
			pthread_mutex_unlock(&registry_lock);
		} else if (ret) {
			pd_backend_set_error("%s: %s", file, ret == -EPROTO ?
					     "built for another libpcidriver backend ABI" :
					     "incomplete or invalid backend");
			dlclose(h);
			return NULL;
		}
		return ops;
	}
	return NULL;
}
#endif

const struct pd_backend_ops *pd_backend_find(const char *prefix, size_t len)
{
	const struct pd_backend_ops *ops;
	char dirs[4096];

	pthread_mutex_lock(&registry_lock);
	ops = lookup(prefix, len);
	pthread_mutex_unlock(&registry_lock);
	if (ops)
		return ops;
#ifdef PIC
	ops = load_plugin(prefix, len);
	if (ops || open_error[0])
		return ops;
	plugin_path(dirs, sizeof(dirs));
	pd_backend_set_error("no backend serves '%.*s:': none registered, no %.*s.so in %s "
			     "(PCIDRIVER_BACKEND_PATH names more directories to search)",
			     (int)len, prefix, (int)len, prefix, dirs);
#else
	(void)dirs;
	pd_backend_set_error("no backend serves '%.*s:': this static build has only the "
			     "backends the application registered (pcidriver/backend.h)",
			     (int)len, prefix);
#endif
	return NULL;
}

void pd_backend_each(void (*fn)(const char *prefix, void *arg), void *arg)
{
	const struct pd_backend_ops *ops[MAX_BACKENDS];
	unsigned int n, i;

	pthread_mutex_lock(&registry_lock);
	n = registered_count;
	memcpy(ops, registered, n * sizeof(ops[0]));
	pthread_mutex_unlock(&registry_lock);
	for (i = 0; i < n; i++)
		fn(ops[i]->prefix, arg);
#ifdef PIC
	{
		char dirs[4096], name[PD_BACKEND_PREFIX_MAX + 1], *dir, *save = NULL;
		struct dirent *e;
		size_t len;
		DIR *d;

		plugin_path(dirs, sizeof(dirs));
		for (dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
			d = opendir(dir);
			if (!d)
				continue;
			while ((e = readdir(d))) {
				len = strlen(e->d_name);
				if (len < 4 || strcmp(e->d_name + len - 3, ".so") != 0 ||
				    !valid_prefix(e->d_name, len - 3))
					continue;
				snprintf(name, sizeof(name), "%.*s", (int)(len - 3), e->d_name);
				pthread_mutex_lock(&registry_lock);
				if (lookup(name, len - 3))
					name[0] = '\0';
				pthread_mutex_unlock(&registry_lock);
				if (name[0])
					fn(name, arg);
			}
			closedir(d);
		}
	}
#endif
}
