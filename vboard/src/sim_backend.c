// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The RTL engine (hdl/rtl) under GHDL as a libpcidriver backend: device names "sim" and
 * "sim:OPTIONS" (docs/cosim.md). It embeds the host object (host.h) for everything on the
 * host's side of the link and includes nothing of the model (emu_*.c).
 *
 * Lifetime. pd_open (sim_open) parses the options, sets up the host object, starts the
 * simulator as a child process (hdl/cosim/launch.py, which becomes GHDL running
 * hdl/cosim/sim_board.py) connected by two socket pairs, waits for its first message (the
 * engine is out of reset) and starts the server thread. pd_close (sim_close) asks the
 * simulator to quit, shuts both sockets down, joins the server, reaps the child (SIGKILL
 * after 2 s) and tears the host object down; libpcidriver has freed every kmem/umem before.
 *
 * Sockets. requests: register reads/writes and config space; the application's threads ask,
 * the board answers in order, req_lock serialises them (a read holds it for one round trip
 * of the simulator). device: the engine's memory reads and writes and its MSI messages; the
 * server thread answers them from the memory this process handed out, through the host's
 * IOMMU model (reader lock 0), so that an address that was not handed out is a fault here
 * too. Socket pairs have no name in the file system (nothing stale is left behind), and the
 * simulator ends when they close: on pd_close, and when this process dies however it dies.
 * The wire format is hdl/cosim/wire.py's (sim_wire.h, checked by tests/vboard/sim-wire.sh).
 *
 * Threads and locks. The callers' threads take req_lock (never while holding another lock of
 * this file); the server thread takes the host's IOMMU reader lock and event lock (host.h),
 * never req_lock. `dead` is set by whichever side first sees a socket end; from then on
 * every request fails with ENODEV at once, register reads return all-ones, and IRQ waits,
 * which sleep in slices of 100 ms, return ENODEV.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "doorbell.h"
#include "host.h"
#include "options.h"
#include "backends.h"
#include "sim_wire.h"

extern char **environ;

#define SIM_CFG_SIZE 4096u           /* PCIe config space */
#define SIM_START_S 600              /* a first start builds the RTL: allow for a slow host */

struct sim_dev {
	struct vb_host host;          /* bus addresses, kmem/umem, MSI event counters */
	struct sim_config opt;
	uint64_t seed;
	pid_t pid;
	int req_fd, dev_fd, log_fd;
	pthread_mutex_t req_lock;
	pthread_t server;
	bool server_started, host_ready;
	atomic_bool dead;             /* the simulator is gone: reads return all-ones */
	uint32_t bar0_size, vectors;
	struct vb_doorbell doorbell;  /* BAR0 mapped by pd_map_bar (doorbell.h) */
	uint8_t dma_buf[SIM_MAX_DMA]; /* the server's */
};

/* ------------------------------------------------------------------ sockets */

/* Sends or receives exactly n bytes; -ENODEV when the other side is gone. */
static int move_all(int fd, void *p, size_t n, bool out)
{
	uint8_t *b = p;
	ssize_t r;

	while (n) {
		r = out ? send(fd, b, n, MSG_NOSIGNAL) : recv(fd, b, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -ENODEV;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static int send_all(int fd, const void *p, size_t n)
{
	return move_all(fd, (void *)p, n, true);
}

static int recv_all(int fd, void *p, size_t n)
{
	return move_all(fd, p, n, false);
}

/* One request, and its answer when `ans` is set; -ENODEV once the simulator is gone. */
static int request(struct sim_dev *s, uint8_t op, uint32_t len, uint64_t addr,
		   const void *data, size_t dlen, void *ans, size_t alen)
{
	struct sim_hdr h = { .op = op, .len = len, .addr = addr };
	int ret;

	if (atomic_load(&s->dead))
		return -ENODEV;
	pthread_mutex_lock(&s->req_lock);
	ret = send_all(s->req_fd, &h, sizeof(h));
	if (!ret && dlen)
		ret = send_all(s->req_fd, data, dlen);
	if (!ret && alen)
		ret = recv_all(s->req_fd, ans, alen);
	pthread_mutex_unlock(&s->req_lock);
	if (ret)
		atomic_store(&s->dead, true);
	return ret;
}

/* ------------------------------------------------------------------ the engine's requests */

static void *serve_device(void *arg)
{
	struct sim_dev *s = arg;
	struct sim_hdr h;
	int32_t status;

	while (!recv_all(s->dev_fd, &h, sizeof(h))) {
		if (h.op == SIM_DEV_MSI) {
			vb_host_msi(&s->host, h.len);
			continue;
		}
		if ((h.op != SIM_DEV_MEMRD && h.op != SIM_DEV_MEMWR) || h.len > SIM_MAX_DMA)
			break;   /* not our protocol: stop serving */
		if (h.op == SIM_DEV_MEMWR) {
			if (recv_all(s->dev_fd, s->dma_buf, h.len))
				break;
			/* a fault drops it */
			vb_host_dma(&s->host, 0, h.addr, s->dma_buf, h.len, VB_ACC_WRITE);
			continue;
		}
		status = vb_host_dma(&s->host, 0, h.addr, s->dma_buf, h.len, VB_ACC_READ) ? 0 : -1;
		if (send_all(s->dev_fd, &status, sizeof(status)) ||
		    (!status && send_all(s->dev_fd, s->dma_buf, h.len)))
			break;
	}
	atomic_store(&s->dead, true);
	return NULL;
}

/* ------------------------------------------------------------------ start and stop */

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

/* The last lines the simulator printed, for an error message. */
static void log_tail(int fd, char *out, size_t size)
{
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from = end > (off_t)size - 1 ? end - (off_t)size + 1 : 0;
	ssize_t n = pread(fd, out, size - 1, from);
	char *p;

	out[n > 0 ? n : 0] = '\0';
	while ((p = strchr(out, '\n')) && p[1])   /* from the start of the last line */
		memmove(out, p + 1, strlen(p + 1) + 1);
	if ((p = strchr(out, '\n')))
		*p = '\0';
}

static int spawn_sim(struct sim_dev *s, int req_child, int dev_child)
{
	/* a Python with cocotb and cocotbext-pcie: named by the variable, else python3 on PATH */
	const char *python = env_or("MPRACE_SIM_PYTHON", "python3");
	const char *dir = env_or("MPRACE_SIM_DIR", MPRACE_SIM_DIR);
	char launcher[4096], vars[12][300], tmpl[] = "/tmp/mprace-sim-XXXXXX";
	char *argv[] = { (char *)python, launcher, NULL };
	char **envp;
	size_t n = 0, i, k;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	int ret;

	snprintf(launcher, sizeof(launcher), "%s/launch.py", dir);
	if (access(launcher, R_OK)) {
		pd_backend_set_error("sim: no simulator environment: %s missing; set MPRACE_SIM_DIR "
				     "to an hdl/cosim folder (the source tree's, or the installed "
				     "share/mprace/hdl/cosim; docs/cosim.md)", launcher);
		return -ENODEV;
	}
	if (strchr(python, '/') && access(python, X_OK)) {
		pd_backend_set_error("sim: no simulator environment: %s is not an executable Python; "
				     "set MPRACE_SIM_PYTHON to a Python with cocotb and "
				     "cocotbext-pcie (./bootstrap.sh check builds build/tests/hdl/.venv; "
				     "docs/cosim.md)", python);
		return -ENODEV;
	}
	/* the simulator's output, for error messages; gone from the file system at once */
	s->log_fd = mkostemp(tmpl, O_CLOEXEC);
	if (s->log_fd < 0)
		return -errno;
	unlink(tmpl);

	snprintf(vars[0], sizeof(vars[0]), "MPRACE_SIM_FDS=3,4");
	snprintf(vars[1], sizeof(vars[1]), "MPRACE_SIM_MPS=%u", s->opt.mps);
	snprintf(vars[2], sizeof(vars[2]), "MPRACE_SIM_MRRS=%u", s->opt.mrrs);
	snprintf(vars[3], sizeof(vars[3]), "MPRACE_SIM_MSI=%u", s->opt.msi);
	snprintf(vars[4], sizeof(vars[4]), "MPRACE_SIM_SEED=%llu", (unsigned long long)s->seed);
	snprintf(vars[5], sizeof(vars[5]), "MPRACE_SIM_SPLIT=%d", s->opt.split);
	snprintf(vars[6], sizeof(vars[6]), "MPRACE_SIM_REORDER=%d", s->opt.reorder);
	snprintf(vars[7], sizeof(vars[7]), "MPRACE_SIM_POLL_NS=%u", s->opt.poll_ns);
	snprintf(vars[8], sizeof(vars[8]), "MPRACE_SIM_PAUSE=%u", s->opt.pause);
	snprintf(vars[9], sizeof(vars[9]), "MPRACE_SIM_WIDTH=%u", s->opt.width);
	snprintf(vars[10], sizeof(vars[10]), "MPRACE_SIM_BLOCK=%s",
		 s->opt.block == SIM_BLOCK_PTILE ? "ptile" :
		 s->opt.block == SIM_BLOCK_HTILE ? "htile" : "xilinx");
	while (environ[n])
		n++;
	envp = calloc(n + 13, sizeof(*envp));
	if (!envp)
		return -ENOMEM;
	/* ours first: getenv takes the first of duplicates, so the device name's options win
	 * over variables of the same names in this process's environment */
	for (i = 0; i < 11; i++)
		envp[i] = vars[i];
	if (s->opt.wave[0]) {
		snprintf(vars[11], sizeof(vars[11]), "MPRACE_SIM_WAVE=%s", s->opt.wave);
		envp[i++] = vars[11];
	}
	for (k = 0; k < n; k++)
		envp[i++] = environ[k];

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, req_child, 3);
	posix_spawn_file_actions_adddup2(&fa, dev_child, 4);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, s->log_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, s->log_fd, 2);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);   /* the terminal's Ctrl-C goes to the application */
	ret = posix_spawnp(&s->pid, python, &fa, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	if (ret) {
		s->pid = 0;
		pd_backend_set_error("sim: no simulator environment: cannot start %s: %s (set "
				     "MPRACE_SIM_PYTHON to a Python with cocotb; docs/cosim.md)",
				     python, strerror(ret));
		return ret == ENOENT || ret == EACCES ? -ENODEV : -ret;
	}
	return 0;
}

/* Waits for the board's first message: the simulator runs and the engine is out of reset. */
static int wait_hello(struct sim_dev *s)
{
	struct pollfd pfd = { .fd = s->req_fd, .events = POLLIN };
	struct sim_hdr h;
	char tail[200];
	int status, r, waited = 0;

	while ((r = poll(&pfd, 1, 200)) == 0 || (r < 0 && errno == EINTR)) {
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			s->pid = 0;
			break;
		}
		if (++waited > SIM_START_S * 5) {
			pd_backend_set_error("sim: the simulator did not start within %d s",
					     SIM_START_S);
			return -ETIMEDOUT;
		}
	}
	if (s->pid && !recv_all(s->req_fd, &h, sizeof(h)) && h.op == SIM_DEV_HELLO) {
		s->vectors = h.len;
		s->bar0_size = (uint32_t)h.addr;
		return 0;
	}
	log_tail(s->log_fd, tail, sizeof(tail));
	pd_backend_set_error("sim: the simulator ended before the board was up: %s", tail);
	return -ENODEV;
}

static void stop_sim(struct sim_dev *s)
{
	int i, status;

	if (s->req_fd >= 0) {
		struct sim_hdr h = { .op = SIM_REQ_QUIT };

		if (!atomic_load(&s->dead))
			send_all(s->req_fd, &h, sizeof(h));
		shutdown(s->req_fd, SHUT_RDWR);
	}
	if (s->dev_fd >= 0)
		shutdown(s->dev_fd, SHUT_RDWR);   /* the server sees the end */
	if (s->server_started)
		pthread_join(s->server, NULL);
	if (s->pid > 0) {
		for (i = 0; i < 200 && waitpid(s->pid, &status, WNOHANG) != s->pid; i++)
			usleep(10000);
		if (i == 200) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &status, 0);
		}
	}
	if (s->req_fd >= 0)
		close(s->req_fd);
	if (s->dev_fd >= 0)
		close(s->dev_fd);
	if (s->log_fd >= 0)
		close(s->log_fd);
}

static void free_dev(struct sim_dev *s)
{
	if (s->host_ready)
		vb_host_destroy(&s->host);
	pthread_mutex_destroy(&s->req_lock);
	pthread_mutex_destroy(&s->doorbell.lock);
	free(s);
}

static uint32_t sim_reg_read(void *ctx, uint64_t off);
static void sim_reg_write(void *ctx, uint64_t off, uint32_t v);

static int sim_open(const char *name, void **dev)
{
	size_t sz = (sizeof(struct sim_dev) + VB_CACHELINE - 1) & ~(size_t)(VB_CACHELINE - 1);
	struct sim_dev *s = aligned_alloc(VB_CACHELINE, sz);
	struct vb_options opts;
	int req[2], devp[2];
	int ret;

	if (!s)
		return -ENOMEM;
	memset(s, 0, sz);
	s->req_fd = s->dev_fd = s->log_fd = -1;
	pthread_mutex_init(&s->req_lock, NULL);
	vb_doorbell_init(&s->doorbell, sim_reg_read, sim_reg_write, s);
	ret = vb_parse_options(VB_SIM, name, &opts);
	if (!ret && opts.host.iova_base < SIM_HOST_BASE) {
		pd_backend_set_error("sim: bad option 'iova=0x%llx': the root complex keeps the space "
				     "below 4 GiB for its own windows (see docs/cosim.md)",
				     (unsigned long long)opts.host.iova_base);
		ret = -EINVAL;
	}
	if (!ret)
		ret = vb_host_init(&s->host, &opts.host, opts.sim.msi);
	if (ret) {
		free_dev(s);
		return ret;
	}
	s->host_ready = true;
	s->opt = opts.sim;
	s->seed = opts.host.seed;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, req)) {
		ret = -errno;
		goto err;
	}
	s->req_fd = req[0];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, devp)) {
		ret = -errno;
		close(req[1]);
		goto err;
	}
	s->dev_fd = devp[0];
	ret = spawn_sim(s, req[1], devp[1]);
	close(req[1]);   /* the child's ends: the simulator holds the only copies now */
	close(devp[1]);
	if (ret)
		goto err;
	ret = wait_hello(s);
	if (ret)
		goto err;
	ret = -pthread_create(&s->server, NULL, serve_device, s);
	if (ret)
		goto err;
	s->server_started = true;
	*dev = s;
	return 0;
err:
	stop_sim(s);
	free_dev(s);
	return ret;
}

static void sim_close(void *dev)
{
	struct sim_dev *s = dev;

	vb_doorbell_unmap(&s->doorbell);   /* its thread writes registers */
	stop_sim(s);
	free_dev(s);
}

/* ------------------------------------------------------------------ the ops */

static int sim_cfg_read(void *dev, uint32_t off, void *buf, size_t len)
{
	struct sim_dev *s = dev;
	uint8_t ans[4 + SIM_CFG_SIZE];
	int ret = request(s, SIM_REQ_CFGRD, (uint32_t)len, off, NULL, 0, ans, 4 + len);

	if (ret)
		return ret;
	memcpy(buf, ans + 4, len);
	return 0;
}

static int sim_cfg_write(void *dev, uint32_t off, const void *buf, size_t len)
{
	int32_t status;

	return request(dev, SIM_REQ_CFGWR, (uint32_t)len, off, buf, len, &status,
		       sizeof(status));
}

static int sim_info(void *dev, struct pd_info *info)
{
	struct sim_dev *s = dev;
	uint8_t c[0x40];
	uint16_t devctl = 0;
	uint8_t cap;
	int ret, guard;

	ret = sim_cfg_read(s, 0, c, sizeof(c));
	if (ret)
		return ret;
	info->vendor = (uint16_t)(c[0] | c[1] << 8);
	info->device = (uint16_t)(c[2] | c[3] << 8);
	info->revision = c[8];
	info->class_code = (uint32_t)(c[9] | c[10] << 8 | c[11] << 16);
	info->subsystem_vendor = (uint16_t)(c[0x2c] | c[0x2d] << 8);
	info->subsystem_device = (uint16_t)(c[0x2e] | c[0x2f] << 8);
	info->backend = PD_BACKEND_SIM;
	info->bar[0].bus_addr = 0;
	info->bar[0].size = s->bar0_size;
	info->bar[0].flags = PD_BAR_PRESENT;
	info->irq_mode = PD_IRQ_MSI;
	info->irq_count = s->vectors;
	info->dma_mask_bits = 64;
	/* Device Control of the PCI Express capability: what the host configured */
	for (cap = c[0x34], guard = 0; cap && guard < 48; guard++) {
		uint8_t hdr[2];

		if (sim_cfg_read(s, cap, hdr, 2))
			break;
		if (hdr[0] == 0x10) {
			sim_cfg_read(s, cap + 8u, &devctl, 2);
			break;
		}
		cap = hdr[1];
	}
	info->max_payload = 128u << ((devctl >> 5) & 7);
	info->max_read_request = 128u << ((devctl >> 12) & 7);
	snprintf(info->name, sizeof(info->name), "simulated RTL (GHDL), %s %s",
		 s->opt.block == SIM_BLOCK_PTILE ? "Intel P-tile" :
		 s->opt.block == SIM_BLOCK_HTILE ? "Intel H-tile" :
		 s->opt.width == 512 ? "UltraScale+" : "UltraScale",
		 s->opt.width == 512 ? "Gen3 x16, 512-bit" : "Gen3 x8, 256-bit");
	return 0;
}

static uint32_t sim_reg_read(void *ctx, uint64_t off)
{
	uint32_t v;

	if (request(ctx, SIM_REQ_RD32, 0, off, NULL, 0, &v, sizeof(v)))
		return 0xFFFFFFFFu;   /* what a CPU reads from a device that is gone */
	return v;
}

static void sim_reg_write(void *ctx, uint64_t off, uint32_t v)
{
	request(ctx, SIM_REQ_WR32, v, off, NULL, 0, NULL, 0);   /* posted */
}

/* pd_regs' write: the register file, and the doorbell page follows what it must */
static void sim_reg_write_noted(void *ctx, uint64_t off, uint32_t v)
{
	struct sim_dev *s = ctx;

	sim_reg_write(s, off, v);
	vb_doorbell_note(&s->doorbell, off, v);
}

static int sim_regs_get(void *dev, unsigned int bar, struct pd_regs *regs)
{
	struct sim_dev *s = dev;

	if (bar != MP_ENGINE_BAR)
		return -EINVAL;
	regs->mmio = NULL;
	regs->size = s->bar0_size;
	regs->ctx = s;
	regs->read32 = sim_reg_read;
	regs->write32 = sim_reg_write_noted;
	return 0;
}

static int sim_map_bar(void *dev, unsigned int bar, unsigned int flags, void **addr,
		       size_t *size)
{
	struct sim_dev *s = dev;

	if (bar != MP_ENGINE_BAR)
		return -EINVAL;
	/* the doorbell page (doorbell.h); not prefetchable */
	return flags ? -EINVAL : vb_doorbell_map(&s->doorbell, addr, size);
}

static int sim_unmap_bar(void *dev, unsigned int bar, void *addr, size_t size)
{
	struct sim_dev *s = dev;

	if (bar != MP_ENGINE_BAR)
		return -EINVAL;
	vb_doorbell_unmap(&s->doorbell);
	return 0;
}

static int sim_kmem_alloc(void *dev, struct pd_backend_kmem *km)
{
	return vb_kmem_alloc(&((struct sim_dev *)dev)->host, km);
}

static int sim_kmem_free(void *dev, struct pd_backend_kmem *km)
{
	return vb_kmem_free(&((struct sim_dev *)dev)->host, km);
}

static int sim_umem_map(void *dev, struct pd_backend_umem *um)
{
	return vb_umem_map(&((struct sim_dev *)dev)->host, um);
}

static int sim_umem_unmap(void *dev, struct pd_backend_umem *um)
{
	return vb_umem_unmap(&((struct sim_dev *)dev)->host, um);
}

static int sim_dmabuf_import(void *dev, int fd, struct pd_backend_umem *um)
{
	return vb_dmabuf_import(&((struct sim_dev *)dev)->host, fd, um);
}

static int sim_umem_sync(void *dev, struct pd_backend_umem *um, enum pd_sync_dir dir)
{
	return 0;   /* the device reaches this process's memory itself */
}

static int sim_irq_wait(void *dev, unsigned int source, uint32_t timeout_ms)
{
	struct sim_dev *s = dev;
	uint32_t left = timeout_ms, slice;
	int ret;

	/* in slices, so that a simulator that dies wakes a waiter with ENODEV */
	for (;;) {
		if (atomic_load(&s->dead))
			return -ENODEV;
		slice = timeout_ms == PD_WAIT_FOREVER || left > 100 ? 100 : left;
		ret = vb_irq_wait(&s->host, source, slice);
		if (ret != -ETIMEDOUT || (timeout_ms != PD_WAIT_FOREVER && !(left -= slice)))
			return ret;
	}
}

static int sim_irq_clear(void *dev, unsigned int source)
{
	return vb_irq_clear(&((struct sim_dev *)dev)->host, source);
}

const struct pd_backend_ops sim_backend_ops = {
	.abi = PD_BACKEND_ABI,
	.size = sizeof(struct pd_backend_ops),
	.prefix = "sim",
	.open = sim_open,
	.close = sim_close,
	.info = sim_info,
	.map_bar = sim_map_bar,
	.unmap_bar = sim_unmap_bar,
	.regs_get = sim_regs_get,
	.cfg_read = sim_cfg_read,
	.cfg_write = sim_cfg_write,
	.kmem_alloc = sim_kmem_alloc,
	.kmem_free = sim_kmem_free,
	.umem_map = sim_umem_map,
	.umem_unmap = sim_umem_unmap,
	.umem_sync = sim_umem_sync,
	.irq_wait = sim_irq_wait,
	.irq_clear = sim_irq_clear,
	.dmabuf_import = sim_dmabuf_import,
};
