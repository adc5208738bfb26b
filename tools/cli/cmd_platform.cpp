// SPDX-License-Identifier: GPL-2.0-or-later
//
// Commands about where a board sits and what the platform lets it do: `list` (every board,
// its PCI address, link, NUMA node, IOMMU group, driver) and `doctor` (what stops a board
// from reaching its link rate or working at all, each finding with its evidence and a fix).
// What Linux says is read by tools::Platform (common/platform.hpp); docs/bring-up.md explains
// each finding.
#include "config.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/report.hpp"
#include "cli.hpp"
#include "cli_util.hpp"
#include "common/device.hpp"
#include "common/platform.hpp"
#include "common/units.hpp"
#include "mprace-spec/engine_spec.h"

using tools::format_size;
using tools::LinkState;
using tools::PciFunction;
using tools::Platform;
using tools::strprintf;

namespace cli {

namespace {

bool is_kernel_device(const std::string &name)
{
	return name.find(':') == std::string::npos;
}

std::string node_path(const std::string &name)
{
	if (name.compare(0, 5, "/dev/") == 0)
		return name;
	if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0])))
		return "/dev/fpga" + name;
	return "/dev/" + name;
}

std::string ids(const PciFunction &f)
{
	return strprintf("%04x:%04x", f.vendor, f.device);
}

// The link between f and the port above it, as both ends report it.
struct Hop {
	PciFunction below, above; // above.bdf empty: f is on the root bus (no port above)
};

std::vector<Hop> hops(const Platform &p, const PciFunction &f)
{
	std::vector<Hop> out;
	std::vector<PciFunction> up = p.upstream(f.bdf);
	PciFunction cur = f;
	for (auto &u : up) {
		out.push_back({cur, u});
		cur = u;
	}
	return out;
}

double min_gts(double a, double b) { return a > 0 && b > 0 ? std::min(a, b) : std::max(a, b); }
unsigned min_w(unsigned a, unsigned b) { return a && b ? std::min(a, b) : std::max(a, b); }

// ------------------------------------------------------------------------------ list

// PCI functions with the engine's IDs (spec/dma-engine.toml [ids]) not bound to pcidriver.
std::vector<std::string> unbound_boards(const Platform &p)
{
	std::vector<std::string> out;
	for (const std::string &b : p.functions()) {
		PciFunction f;
		if (p.function(b, &f) && f.vendor == MP_ID_VENDOR && f.device == MP_ID_DEVICE && f.driver != "pcidriver")
			out.push_back(b);
	}
	return out;
}

std::string driver_of(const Platform &p, const std::string &bdf)
{
	PciFunction f;
	if (!p.function(bdf, &f) || f.driver.empty())
		return "no driver";
	return "driver " + f.driver;
}

void list_kernel_board(const Platform &p, const std::string &name)
{
	std::string bdf = p.bdf_of_node(name);
	PciFunction f;
	std::unique_ptr<mprace::Board> b;
	std::string open_error;
	try {
		b = std::make_unique<mprace::Board>(name, mprace::Board::NoCheck);
		if (bdf.empty())
			bdf = b->info().pci.name;
	} catch (const std::exception &e) {
		open_error = e.what();
	}
	if (!bdf.empty() && p.function(bdf, &f)) {
		std::printf("  pci: %s, %s, class %06x, driver %s\n", f.bdf.c_str(), ids(f).c_str(), f.class_code,
			    f.driver.empty() ? "none" : f.driver.c_str());
		std::vector<PciFunction> up = p.upstream(f.bdf);
		std::string port = up.empty() ? std::string("none (root bus)")
					      : up[0].bdf + " capable " + up[0].link_cap.text();
		std::printf("  link: %s trained; board capable %s; port %s\n", f.link.text().c_str(),
			    f.link_cap.text().c_str(), port.c_str());
		std::printf("  numa node: %d; iommu group: %s\n", f.numa_node,
			    f.iommu_group < 0 ? "none (no IOMMU)"
					      : strprintf("%d (%s)", f.iommu_group, f.iommu_type.empty() ? "?" : f.iommu_type.c_str()).c_str());
	} else {
		std::printf("  pci: unknown (no sysfs entry for %s)\n", name.c_str());
	}
	if (!b) {
		std::printf("  engine: not opened: %s\n", open_error.c_str());
		return;
	}
	const mprace::BoardInfo &i = b->info();
	std::printf("  payload: MPS %u B, MRRS %u B in effect\n", i.pci.max_payload, i.pci.max_read_request);
	if (!i.isOurEngine()) {
		std::printf("  engine: none (MAGIC reads 0x%08x): not a board with our engine\n", i.magic);
		return;
	}
	std::printf("  engine: %u.%u, datapath %u B, %u C2H + %u H2C, %u MHz\n", i.versionMajor, i.versionMinor,
		    i.caps.datapathBytes, i.caps.c2hChannels, i.caps.h2cChannels, i.clockMHz);
}

void list_backend(const std::string &name)
{
	if (name == "sim:") {
		std::printf("  models: the engine's RTL under a simulator (docs/cosim.md); not opened here, since\n"
			    "  that starts the simulator: mprace -d sim: info\n");
		return;
	}
	try {
		mprace::Board b(name, mprace::Board::NoCheck);
		const mprace::BoardInfo &i = b.info();
		std::printf("  models: %s\n", i.pci.name);
		std::printf("  engine: %u.%u, datapath %u B, %u C2H + %u H2C, MPS %u B, MRRS %u B\n", i.versionMajor,
			    i.versionMinor, i.caps.datapathBytes, i.caps.c2hChannels, i.caps.h2cChannels,
			    i.pci.max_payload, i.pci.max_read_request);
	} catch (const std::exception &e) {
		std::printf("  not opened: %s\n", e.what());
	}
}

// ------------------------------------------------------------------------------ doctor

enum class Level { Ok, Note, Warning, Serious, Skipped };

const char *level_name(Level l)
{
	switch (l) {
	case Level::Ok: return "ok";
	case Level::Note: return "note";
	case Level::Warning: return "warning";
	case Level::Serious: return "serious";
	case Level::Skipped: return "skipped";
	}
	return "?";
}

struct Result {
	std::string check;
	Level level;
	std::string summary, evidence, fix;
};

class Doctor {
public:
	Doctor(const Platform &p, std::string device, std::uint64_t buffers)
		: p_(p), device_(std::move(device)), buffers_(buffers) {}
	std::vector<Result> run();

private:
	void add(const char *check, Level l, std::string summary, std::string evidence = {}, std::string fix = {})
	{
		out_.push_back({check, l, std::move(summary), std::move(evidence), std::move(fix)});
	}
	void board();
	void module(const std::string &api);
	void link();
	void payload();
	void numa();
	void iommu();
	void memlock();
	void hugepages();
	void gpu();

	const Platform &p_;
	std::string device_;
	std::uint64_t buffers_;
	std::unique_ptr<mprace::Board> board_;
	PciFunction fn_;
	bool has_fn_ = false;
	std::vector<Result> out_;
};

std::vector<Result> Doctor::run()
{
	board();
	link();
	payload();
	numa();
	iommu();
	memlock();
	hugepages();
	gpu();
	return out_;
}

void Doctor::board()
{
	if (device_.empty()) {
		bool loaded = p_.exists("/sys/module/pcidriver");
		std::string ev = loaded ? "pcidriver is loaded but drives no device" : "pcidriver is not loaded (/sys/module/pcidriver)";
		for (const std::string &b : unbound_boards(p_))
			ev += "; " + b + " has our board's IDs, " + driver_of(p_, b);
		add("board", Level::Serious, "no board: no /dev/fpgaN", ev,
		    loaded ? "bind the board to pcidriver (docs/bring-up.md, 'Install and bind')"
			   : "modprobe pcidriver (or insmod pcidriver.ko), then check lspci");
		return;
	}
	if (tools::is_bdf(device_)) {
		// A PCI function named by its address: the platform's view of it, without opening it
		// (not bound to pcidriver yet, or bound elsewhere).
		has_fn_ = p_.function(device_, &fn_);
		if (!has_fn_) {
			add("board", Level::Serious, "no PCI function " + device_, "no /sys/bus/pci/devices/" + device_,
			    "lspci -D lists the functions; a board missing there did not train a link (power, bitstream, slot)");
			return;
		}
		if (p_.exists("/sys/module/pcidriver"))
			module(std::string());
		if (fn_.driver != "pcidriver")
			add("board", Level::Note, device_ + " (" + ids(fn_) + ") is bound to " + (fn_.driver.empty() ? "no driver" : fn_.driver),
			    "driver " + (fn_.driver.empty() ? std::string("none") : fn_.driver),
			    "bind it to pcidriver to use it (docs/bring-up.md, 'Install and bind')");
		else
			add("board", Level::Ok, device_ + " (" + ids(fn_) + ") is bound to pcidriver");
		return;
	}
	if (is_kernel_device(device_)) {
		std::string node = node_path(device_);
		struct stat st;
		if (::stat(node.c_str(), &st) != 0) {
			bool loaded = p_.exists("/sys/module/pcidriver");
			add("board", Level::Serious, node + " does not exist",
			    loaded ? "pcidriver is loaded" : "pcidriver is not loaded (/sys/module/pcidriver)",
			    loaded ? "bind the board to pcidriver (docs/bring-up.md, 'Install and bind'); mprace list shows the devices"
				   : "modprobe pcidriver (or insmod pcidriver.ko)");
			return;
		}
		std::string bdf = p_.bdf_of_node(node);
		has_fn_ = !bdf.empty() && p_.function(bdf, &fn_);
		if (::access(node.c_str(), R_OK | W_OK) != 0) {
			struct group *g = ::getgrgid(st.st_gid);
			std::string gname = g ? g->gr_name : std::to_string(st.st_gid);
			struct passwd *pw = ::getpwuid(::getuid());
			add("permissions", Level::Serious, "this user may not open " + node,
			    strprintf("%s is mode %04o, group %s; you are %s (uid %u), not in it", node.c_str(),
				      st.st_mode & 07777, gname.c_str(), pw ? pw->pw_name : "?", ::getuid()),
			    "sudo usermod -aG " + gname + " $USER and log in again (udev rule 60-pcidriver.rules sets the group)");
			return;
		}
		add("permissions", Level::Ok, "this user may open " + node);
	}
	try {
		board_ = std::make_unique<mprace::Board>(device_, mprace::Board::NoCheck);
	} catch (const std::system_error &e) {
		bool abi = e.code().value() == EPROTO;
		add("board", Level::Serious, "cannot open " + device_, e.what(),
		    abi ? "install the module of this release (docs/pcidriver.md, DKMS)" : "see the message; docs/bring-up.md");
		return;
	} catch (const std::exception &e) {
		add("board", Level::Serious, "cannot open " + device_, e.what(), "see the message; docs/bring-up.md");
		return;
	}
	const mprace::BoardInfo &i = board_->info();
	if (!has_fn_ && is_kernel_device(device_))
		has_fn_ = p_.function(i.pci.name, &fn_);
	if (is_kernel_device(device_))
		module(strprintf("module API version %u (pd_open refuses another); ", i.pci.abi_version));
	if (!i.isOurEngine()) {
		add("engine", Level::Note, strprintf("%s is not a board with our engine (MAGIC 0x%08x): platform checks only", device_.c_str(), i.magic),
		    has_fn_ ? "PCI " + fn_.bdf + ", " + ids(fn_) : std::string(),
		    "load the engine's bitstream, or choose the board with --device");
	} else {
		add("engine", Level::Ok, strprintf("engine %u.%u, datapath %u B", i.versionMajor, i.versionMinor, i.caps.datapathBytes),
		    strprintf("MAGIC 0x%08x, this tool implements %u.%u", i.magic, MP_ENGINE_VERSION_MAJOR, MP_ENGINE_VERSION_MINOR));
	}
	if (!is_kernel_device(device_))
		add("board", Level::Note, strprintf("%s is a %s board (%s): the link, NUMA and IOMMU checks are about a real board",
						    device_.c_str(), i.emulated() ? "virtual" : "simulated", i.pci.name));
}

// The loaded module's release against the tools': a module left from an older install still
// speaks the API (else pd_open fails with EPROTO) but lacks what this release fixed.
void Doctor::module(const std::string &api)
{
	std::string ver = p_.read("/sys/module/pcidriver/version");
	std::string ev = api + "module release " + (ver.empty() ? std::string("not recorded") : ver) + ", tools release " + PACKAGE_VERSION;
	if (ver.empty())
		add("module", Level::Note, "the module's release is not recorded (built without pcidrv_version.h)", ev);
	else if (ver != PACKAGE_VERSION)
		add("module", Level::Warning, "the loaded module is release " + ver + ", the tools " + PACKAGE_VERSION, ev,
		    std::string("install the module of this release (sudo dkms install pcidriver/") + PACKAGE_VERSION + ") and reload it");
	else
		add("module", Level::Ok, "the loaded module is this release", ev);
}

void Doctor::link()
{
	if (!has_fn_) {
		add("link", Level::Skipped, "no PCI function to look at");
		return;
	}
	if (!fn_.link.known() || !fn_.link_cap.known()) {
		add("link", Level::Skipped, fn_.bdf + " reports no PCI Express link (conventional PCI, or a kernel without the link attributes)");
		return;
	}
	// Every link on the path: trained below what both of its ends can do is a fault; a path
	// whose narrowest link carries less than the board can is a slot that limits it.
	std::vector<Hop> path = hops(p_, fn_);
	LinkState bottleneck = fn_.link;
	std::string bottleneck_at = fn_.bdf;
	for (const Hop &h : path) {
		const LinkState &t = h.below.link;
		if (!t.known())
			continue;
		double cap_gts = min_gts(h.below.link_cap.gts, h.above.link_cap.gts);
		unsigned cap_w = min_w(h.below.link_cap.width, h.above.link_cap.width);
		if (t.gts < cap_gts || t.width < cap_w) {
			LinkState both{cap_gts, cap_w};
			add("link", Level::Serious,
			    strprintf("the link above %s trained at %s, below the %s both ends can do", h.below.bdf.c_str(),
				      t.text().c_str(), both.text().c_str()),
			    strprintf("%s capable %s, port %s capable %s, trained %s", h.below.bdf.c_str(),
				      h.below.link_cap.text().c_str(), h.above.bdf.c_str(), h.above.link_cap.text().c_str(),
				      t.text().c_str()),
			    "reseat the board or try another slot; a board stuck at 2.5 GT/s or few lanes often has a "
			    "reference-clock or signal-integrity problem (then check the FPGA's PCIe core settings)");
			return;
		}
		if (t.bytes_per_s() < bottleneck.bytes_per_s()) {
			bottleneck = t;
			bottleneck_at = h.below.bdf;
		}
	}
	if (bottleneck.bytes_per_s() < fn_.link_cap.bytes_per_s() * 0.999) {
		add("link", Level::Warning,
		    strprintf("the slot limits the board to %s (%.2f GB/s per direction); the board can do %s (%.2f GB/s)",
			      bottleneck.text().c_str(), bottleneck.bytes_per_s() / 1e9, fn_.link_cap.text().c_str(),
			      fn_.link_cap.bytes_per_s() / 1e9),
		    "narrowest link at " + bottleneck_at, "move the board to a slot wired for " + fn_.link_cap.text());
		return;
	}
	add("link", Level::Ok,
	    strprintf("%s trained, all the board can do (%.2f GB/s per direction before protocol overhead)",
		      fn_.link.text().c_str(), fn_.link.bytes_per_s() / 1e9),
	    path.empty() ? std::string("no port above (root bus)") : "port " + path[0].above.bdf + " capable " + path[0].above.link_cap.text());
}

void Doctor::payload()
{
	if (!has_fn_) {
		add("payload", Level::Skipped, "no PCI function to look at");
		return;
	}
	// In effect: what the module read from Device Control, else config space as far as it
	// is readable here.
	unsigned mps = board_ ? board_->info().pci.max_payload : fn_.mps();
	unsigned mrrs = board_ ? board_->info().pci.max_read_request : fn_.mrrs();
	// The largest payload every device on the path supports (Device Capabilities): what the
	// kernel could have set with pci=pcie_bus_perf.
	unsigned best = fn_.mps_supported();
	std::string unread;
	if (!best)
		unread = fn_.bdf;
	for (const PciFunction &u : p_.upstream(fn_.bdf)) {
		unsigned s = u.mps_supported();
		if (!s)
			unread += (unread.empty() ? "" : ", ") + u.bdf;
		else
			best = best ? std::min(best, s) : s;
	}
	std::string ev = strprintf("MPS %u B, MRRS %u B in effect (Device Control)", mps, mrrs);
	if (!mps)
		unread = fn_.bdf;
	if (!unread.empty()) {
		add("payload", Level::Skipped, ev + "; what the path supports is unknown",
		    "config space of " + unread + " beyond 64 bytes is readable only with CAP_SYS_ADMIN", "run doctor as root to check it");
		return;
	}
	ev += strprintf("; every device on the path supports %u B", best);
	if (mps && mps < best) {
		add("payload", Level::Warning, strprintf("MPS %u B in effect although the whole path supports %u B: more, smaller TLPs", mps, best),
		    ev, "boot with pci=pcie_bus_perf (or raise MPS in the firmware setup)");
		return;
	}
	// Reads cut finer than writes have no reason (pci=pcie_bus_perf sets MRRS = MPS); a small
	// MRRS that equals MPS is what the path allows, worth knowing but not a fault.
	if (mrrs && mrrs < mps) {
		add("payload", Level::Warning, strprintf("MRRS %u B, below MPS %u B: H2C needs a read request per %u B", mrrs, mps, mrrs),
		    ev, "boot with pci=pcie_bus_perf (MRRS follows MPS), or setpci -s " + fn_.bdf + " CAP_EXP+8.w=0x2000:0x7000 for 512 B");
		return;
	}
	if (mrrs && mrrs < 512) {
		add("payload", Level::Note, strprintf("MPS %u B, MRRS %u B: H2C needs a read request per %u B", mps, mrrs, mrrs), ev,
		    "setpci -s " + fn_.bdf + " CAP_EXP+8.w=0x2000:0x7000 raises MRRS to 512 B if the board's reads are the bottleneck");
		return;
	}
	add("payload", Level::Ok, strprintf("MPS %u B, MRRS %u B", mps, mrrs), ev);
}

void Doctor::numa()
{
	if (!has_fn_) {
		add("numa", Level::Skipped, "no PCI function to look at");
		return;
	}
	int nodes = p_.numa_nodes();
	if (nodes <= 1 || fn_.numa_node < 0) {
		add("numa", Level::Ok, nodes <= 1 ? "one NUMA node" : "the platform gives the board no NUMA node",
		    strprintf("%d node(s); the board's numa_node %d", nodes, fn_.numa_node));
		return;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	if (::sched_getaffinity(0, sizeof(set), &set) != 0) {
		add("numa", Level::Skipped, std::string("sched_getaffinity: ") + std::strerror(errno));
		return;
	}
	std::vector<unsigned> near = p_.node_cpus(fn_.numa_node);
	unsigned allowed = 0, allowed_near = 0;
	for (unsigned c = 0; c < CPU_SETSIZE; ++c)
		if (CPU_ISSET(c, &set)) {
			++allowed;
			if (std::find(near.begin(), near.end(), c) != near.end())
				++allowed_near;
		}
	std::string ev = strprintf("the board is on node %d; this process may use %u CPU(s), %u of them on that node",
				   fn_.numa_node, allowed, allowed_near);
	std::string fix = strprintf("run under numactl --cpunodebind=%d --membind=%d", fn_.numa_node, fn_.numa_node);
	if (allowed_near == 0)
		add("numa", Level::Warning, "this process runs only on CPUs of another node: every buffer crosses the socket link", ev, fix);
	else if (allowed_near < allowed)
		add("numa", Level::Note, "this process may run on other nodes too: pin it near the board", ev, fix);
	else
		add("numa", Level::Ok, strprintf("this process runs on the board's node %d", fn_.numa_node), ev);
}

void Doctor::iommu()
{
	std::vector<std::string> units = p_.iommu_units();
	std::string cmd;
	for (const char *k : {"iommu", "iommu.strict", "iommu.passthrough", "intel_iommu", "amd_iommu"}) {
		std::string v = p_.cmdline_value(k);
		if (!v.empty())
			cmd += std::string(cmd.empty() ? "" : " ") + k + "=" + v;
	}
	std::string ev = strprintf("%zu IOMMU unit(s)%s", units.size(), cmd.empty() ? "" : (", kernel command line " + cmd).c_str());
	if (!has_fn_) {
		add("iommu", units.empty() ? Level::Ok : Level::Note,
		    units.empty() ? "no IOMMU" : "the platform has an IOMMU (no PCI board to look at)", ev);
		return;
	}
	if (fn_.iommu_group < 0) {
		add("iommu", Level::Note, "no IOMMU translates for the board: its bus addresses are physical addresses and it can reach all memory", ev,
		    "for isolation, enable the IOMMU (intel_iommu=on or amd_iommu=on) with lazy invalidation (iommu.strict=0)");
		return;
	}
	ev += strprintf("; group %d, default domain %s", fn_.iommu_group, fn_.iommu_type.empty() ? "unknown" : fn_.iommu_type.c_str());
	const std::string &t = fn_.iommu_type;
	if (t == "DMA")
		add("iommu", Level::Warning, "the IOMMU invalidates strictly: every unmap waits for an IOTLB flush, so pinning and freeing user buffers cost more",
		    ev, "boot with iommu.strict=0 (lazy invalidation), or iommu=pt where isolation is not needed");
	else if (t == "blocked")
		add("iommu", Level::Serious, "the IOMMU blocks the board's DMA", ev, "bind the board's group to a DMA domain: unbind other drivers of group " + std::to_string(fn_.iommu_group));
	else if (t == "identity")
		add("iommu", Level::Ok, "IOMMU in passthrough: no translation cost, no isolation", ev);
	else
		add("iommu", Level::Ok, "IOMMU translates with lazy invalidation" + std::string(t.empty() ? " (domain type not shown)" : ""), ev);
}

// This process's own capability, not the (possibly copied) platform's.
bool has_cap_ipc_lock()
{
	std::ifstream in("/proc/self/status");
	std::string line;
	while (std::getline(in, line))
		if (line.compare(0, 7, "CapEff:") == 0)
			return (std::strtoull(line.c_str() + 7, nullptr, 16) >> 14) & 1; // CAP_IPC_LOCK
	return false;
}

void Doctor::memlock()
{
	struct rlimit r;
	::getrlimit(RLIMIT_MEMLOCK, &r);
	std::string lim = r.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : format_size(r.rlim_cur);
	std::string ev = "RLIMIT_MEMLOCK " + lim + "; DMA buffers asked for (--buffers) " + format_size(buffers_);
	if (has_cap_ipc_lock()) {
		add("memlock", Level::Ok, "CAP_IPC_LOCK: the module does not limit this process's DMA buffers", ev);
		return;
	}
	if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < buffers_) {
		add("memlock", Level::Serious,
		    "RLIMIT_MEMLOCK (" + lim + ") is below the DMA buffers asked for: allocations beyond it fail with ENOMEM", ev,
		    "ulimit -l unlimited (the hard limit allowing), or '@fpga - memlock unlimited' in /etc/security/limits.conf "
		    "(LimitMEMLOCK=infinity for a service)");
		return;
	}
	add("memlock", Level::Ok, "RLIMIT_MEMLOCK " + lim + " holds the DMA buffers asked for", ev);
}

void Doctor::hugepages()
{
	std::string thp = p_.read("/sys/kernel/mm/transparent_hugepage/enabled");
	std::string total;
	std::istringstream in(p_.read_all("/proc/meminfo"));
	std::string line;
	while (std::getline(in, line))
		if (line.compare(0, 16, "HugePages_Total:") == 0)
			total = line.substr(16);
	total.erase(0, total.find_first_not_of(' '));
	std::string ev = "transparent hugepages: " + (thp.empty() ? std::string("not built in") : thp) +
			 "; HugePages_Total " + (total.empty() ? std::string("?") : total);
	if (thp.find("[never]") != std::string::npos && (total.empty() || total == "0"))
		add("hugepages", Level::Note, "no huge pages: user buffers are pinned in 4 KiB pages, one scatter-gather entry each", ev,
		    "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled, or reserve pages (vm.nr_hugepages)");
	else
		add("hugepages", Level::Ok, "huge pages are available for user buffers", ev);
}

void Doctor::gpu()
{
	std::vector<PciFunction> gpus;
	for (const std::string &b : p_.functions()) {
		PciFunction f;
		if (p_.function(b, &f) && f.is_nvidia_gpu())
			gpus.push_back(std::move(f));
	}
	if (gpus.empty()) {
		add("gpu", Level::Skipped, "no NVIDIA GPU");
		return;
	}
	std::string ver = p_.read("/proc/driver/nvidia/version");
	bool open_module = p_.read_all("/proc/driver/nvidia/version").find("Open Kernel Module") != std::string::npos;
	if (ver.empty())
		add("gpu-driver", Level::Warning, strprintf("%zu NVIDIA GPU(s) but no NVIDIA driver loaded", gpus.size()),
		    "/proc/driver/nvidia/version is missing", "install and load the NVIDIA driver (the GPU stages need it)");
	else
		add("gpu-driver", open_module ? Level::Ok : Level::Note,
		    open_module ? "the NVIDIA open kernel module exports GPU memory as dma-bufs (pd_dmabuf_import)"
				: "the proprietary NVIDIA module exports no dma-bufs: the GPU stages use the indirect path through host memory",
		    ver, open_module ? std::string() : "install the open kernel modules (nvidia-open) for dma-buf import");
	std::vector<std::string> board_path;
	if (has_fn_)
		for (const PciFunction &u : p_.upstream(fn_.bdf))
			board_path.push_back(u.bdf);
	for (const PciFunction &g : gpus) {
		std::string head = strprintf("GPU %s (%s, node %d)", g.bdf.c_str(), ids(g).c_str(), g.numa_node);
		if (!has_fn_) {
			add("gpu", Level::Note, head + ": no PCI board to relate it to",
			    "GPU link " + g.link.text() + ", capable " + g.link_cap.text());
			continue;
		}
		// The nearest bridge above both: a switch keeps peer-to-peer traffic off the root complex.
		std::vector<PciFunction> gup = p_.upstream(g.bdf);
		const PciFunction *common = nullptr;
		std::size_t gi = 0;
		for (; gi < gup.size() && !common; ++gi)
			if (std::find(board_path.begin(), board_path.end(), gup[gi].bdf) != board_path.end())
				common = &gup[gi];
		std::string where;
		std::string acs;
		if (!common) {
			where = "board and GPU meet only at the root complex: peer-to-peer crosses it (often slow or refused)";
		} else {
			bool root_port = gi == gup.size();
			where = strprintf("board and GPU sit under one %s (%s)", root_port ? "root port" : "switch", common->bdf.c_str());
			// every bridge from the GPU up to the common one (ACS control bit 2: P2P request redirect)
			for (std::size_t k = 0; k < gi; ++k) {
				int c = gup[k].acs_control();
				if (c < 0 && !gup[k].config_complete())
					acs += " " + gup[k].bdf + ": ACS unknown (needs root);";
				else if (c > 0 && (c & 0x4))
					acs += " " + gup[k].bdf + ": ACS redirects peer-to-peer requests upstream;";
			}
		}
		std::string ev = "GPU link " + g.link.text() + " (capable " + g.link_cap.text() + "); ACS:" +
				 (acs.empty() ? std::string(" nothing redirects on the way") : acs);
		if (g.numa_node >= 0 && fn_.numa_node >= 0 && g.numa_node != fn_.numa_node)
			add("gpu", Level::Warning, head + ": on another NUMA node than the board: the indirect stage crosses the socket link twice", ev,
			    "use a GPU on the board's node (nvidia-smi topo -m), or move the board");
		else
			add("gpu", Level::Ok, head + ": " + where, ev);
	}
}

void print_text(const std::string &device, const std::vector<Result> &rs)
{
	std::printf("mprace doctor: %s\n", device.empty() ? "(no board)" : device.c_str());
	for (const Result &r : rs) {
		const char *tag = r.level == Level::Serious ? "SERIOUS" : r.level == Level::Warning ? "WARNING" : level_name(r.level);
		std::printf("%-8s %-11s %s\n", tag, r.check.c_str(), r.summary.c_str());
		bool finding = r.level == Level::Serious || r.level == Level::Warning || r.level == Level::Note;
		if (!r.evidence.empty())
			std::printf("%20s evidence: %s\n", "", r.evidence.c_str());
		if (finding && !r.fix.empty())
			std::printf("%20s fix: %s\n", "", r.fix.c_str());
	}
}

void print_json(const std::string &device, const std::vector<Result> &rs, int warnings, int serious)
{
	using dmabench::json_escape;
	std::printf("{\"device\": \"%s\", \"warnings\": %d, \"serious\": %d, \"checks\": [", json_escape(device).c_str(),
		    warnings, serious);
	for (std::size_t k = 0; k < rs.size(); ++k)
		std::printf("%s\n  {\"check\": \"%s\", \"level\": \"%s\", \"summary\": \"%s\", \"evidence\": \"%s\", \"fix\": \"%s\"}",
			    k ? "," : "", json_escape(rs[k].check).c_str(), level_name(rs[k].level),
			    json_escape(rs[k].summary).c_str(), json_escape(rs[k].evidence).c_str(),
			    json_escape(rs[k].fix).c_str());
	std::printf("\n]}\n");
}

} // namespace

void cmd_list(Session &s, const Args &a)
{
	a.max_positionals(0);
	Platform p;
	for (const auto &n : mprace::Board::list()) {
		std::printf("%s\n", n.c_str());
		if (s.quiet())
			continue;
		if (is_kernel_device(n))
			list_kernel_board(p, n);
		else
			list_backend(n);
	}
	if (s.quiet())
		return;
	// Boards with our IDs that pcidriver does not drive: the first question of a first day.
	for (const std::string &b : unbound_boards(p))
		std::printf("# %s has our board's IDs (%04x:%04x) but is not bound to pcidriver (%s): "
			    "docs/bring-up.md, 'Install and bind'\n",
			    b.c_str(), MP_ID_VENDOR, MP_ID_DEVICE, driver_of(p, b).c_str());
}

void cmd_doctor(Session &s, const Args &a)
{
	a.max_positionals(1);
	std::uint64_t buffers = a.has("--buffers") ? size_arg(a, a.get("--buffers")) : 64u << 20;
	std::string device = !a.pos().empty() ? a.pos()[0] : s.device();
	if (device.empty())
		device = tools::pick_device("", "mprace doctor", false);
	const char *env = std::getenv("PCIDRIVER_DEVICE");
	if (device == "emu:" && s.device().empty() && a.pos().empty() && !(env && *env))
		device.clear(); // no board: doctor says so rather than look at the fall-back
	Platform p;
	Doctor d(p, device, buffers);
	std::vector<Result> rs = d.run();
	int warnings = 0, serious = 0;
	for (const Result &r : rs) {
		warnings += r.level == Level::Warning;
		serious += r.level == Level::Serious;
	}
	if (a.has("--json"))
		print_json(device, rs, warnings, serious);
	else {
		print_text(device, rs);
		std::printf("%d serious finding(s), %d warning(s)\n", serious, warnings);
	}
	std::fflush(stdout);
	if (serious)
		throw Failed(strprintf("doctor: %d serious finding(s)", serious));
}

} // namespace cli
