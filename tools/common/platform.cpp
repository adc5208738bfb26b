// SPDX-License-Identifier: GPL-2.0-or-later
//
// sysfs and procfs, read for `mprace list` and `mprace doctor` (platform.hpp). Every read
// tolerates a missing file: kernels differ in what they show, and a process without
// CAP_SYS_ADMIN sees only the first 64 bytes of config space.
#include "common/platform.hpp"
#include "common/units.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <limits.h>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace tools {

namespace {

// PCI Express capability (PCIe Base Specification 7.5.3) and ACS (7.7.8).
constexpr unsigned kCapList = 0x34, kCapIdExp = 0x10, kExtCapAcs = 0x000d;
constexpr unsigned kExpDevCap = 0x04, kExpDevCtl = 0x08;

unsigned rd16(const std::vector<std::uint8_t> &c, unsigned off)
{
	return off + 2 <= c.size() ? c[off] | (c[off + 1] << 8) : 0;
}

std::uint32_t rd32(const std::vector<std::uint8_t> &c, unsigned off)
{
	return off + 4 <= c.size() ? rd16(c, off) | (std::uint32_t(rd16(c, off + 2)) << 16) : 0;
}

// Offset of the PCI Express capability, 0 if config space does not show one.
unsigned exp_cap(const std::vector<std::uint8_t> &c)
{
	if (c.size() < 64 || !(rd16(c, 0x06) & 0x10)) // Status: capability list
		return 0;
	unsigned off = c[kCapList] & 0xfc;
	for (int hops = 0; off >= 0x40 && off + 2 <= c.size() && hops < 48; ++hops) {
		if (c[off] == kCapIdExp)
			return off;
		off = c[off + 1] & 0xfc;
	}
	return 0;
}

std::string trim(std::string s)
{
	while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
		s.pop_back();
	return s;
}

std::string base_name(const std::string &p)
{
	auto k = p.find_last_of('/');
	return k == std::string::npos ? p : p.substr(k + 1);
}

std::string dir_name(const std::string &p)
{
	auto k = p.find_last_of('/');
	return k == std::string::npos || k == 0 ? std::string("/") : p.substr(0, k);
}

} // namespace

double LinkState::bytes_per_s() const
{
	double enc = gts <= 5.0 ? 8.0 / 10.0 : 128.0 / 130.0;
	return gts * 1e9 * enc * width / 8.0;
}

std::string LinkState::text() const
{
	if (!known())
		return "unknown";
	char b[48];
	std::snprintf(b, sizeof(b), "%.1f GT/s x%u", gts, width);
	return b;
}

unsigned PciFunction::mps_supported() const
{
	unsigned e = exp_cap(config);
	return e && e + kExpDevCap + 4 <= config.size() ? 128u << (rd32(config, e + kExpDevCap) & 7) : 0;
}

unsigned PciFunction::mps() const
{
	unsigned e = exp_cap(config);
	return e && e + kExpDevCtl + 2 <= config.size() ? 128u << ((rd16(config, e + kExpDevCtl) >> 5) & 7) : 0;
}

unsigned PciFunction::mrrs() const
{
	unsigned e = exp_cap(config);
	return e && e + kExpDevCtl + 2 <= config.size() ? 128u << ((rd16(config, e + kExpDevCtl) >> 12) & 7) : 0;
}

int PciFunction::acs_control() const
{
	if (config.size() < 0x104)
		return -1;
	unsigned off = 0x100;
	for (int hops = 0; off >= 0x100 && off + 8 <= config.size() && hops < 96; ++hops) {
		std::uint32_t h = rd32(config, off);
		if (h == 0 || h == 0xffffffffu)
			return -1;
		if ((h & 0xffff) == kExtCapAcs)
			return static_cast<int>(rd16(config, off + 6));
		off = (h >> 20) & 0xffc;
	}
	return -1;
}

bool is_bdf(const std::string &s)
{
	// dddd:bb:dd.f in hex
	if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.')
		return false;
	for (std::size_t i = 0; i < s.size(); ++i)
		if (i != 4 && i != 7 && i != 10 && !std::isxdigit(static_cast<unsigned char>(s[i])))
			return false;
	return true;
}

double parse_link_speed(const std::string &s)
{
	char *end;
	double v = std::strtod(s.c_str(), &end);
	if (end == s.c_str() || v <= 0 || v > 1000)
		return 0;
	return v;
}

Platform::Platform(std::string root) : root_(std::move(root))
{
	if (root_.empty()) {
		const char *env = std::getenv("MPRACE_SYSROOT");
		root_ = env && *env ? env : "/";
	}
	while (root_.size() > 1 && root_.back() == '/')
		root_.pop_back();
	if (root_ == "/")
		root_.clear();
}

std::string Platform::read(const std::string &path) const
{
	std::ifstream f(root_ + path);
	std::string line;
	if (!f || !std::getline(f, line))
		return std::string();
	return trim(line);
}

std::string Platform::read_all(const std::string &path) const
{
	std::ifstream f(root_ + path, std::ios::binary);
	return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

bool Platform::exists(const std::string &path) const
{
	struct stat st;
	return ::stat((root_ + path).c_str(), &st) == 0;
}

std::vector<std::string> Platform::functions() const
{
	std::vector<std::string> out;
	if (DIR *d = ::opendir((root_ + "/sys/bus/pci/devices").c_str())) {
		while (struct dirent *e = ::readdir(d))
			if (is_bdf(e->d_name))
				out.push_back(e->d_name);
		::closedir(d);
	}
	std::sort(out.begin(), out.end());
	return out;
}

bool Platform::function(const std::string &bdf, PciFunction *out) const
{
	if (!is_bdf(bdf))
		return false;
	const std::string dev = "/sys/bus/pci/devices/" + bdf;
	char real[PATH_MAX];
	if (!::realpath((root_ + dev).c_str(), real))
		return false;
	PciFunction f;
	f.bdf = bdf;
	f.sysfs = real;
	f.vendor = static_cast<unsigned>(std::strtoul(read(dev + "/vendor").c_str(), nullptr, 16));
	f.device = static_cast<unsigned>(std::strtoul(read(dev + "/device").c_str(), nullptr, 16));
	f.class_code = static_cast<unsigned>(std::strtoul(read(dev + "/class").c_str(), nullptr, 16));
	char link[PATH_MAX];
	ssize_t n = ::readlink((root_ + dev + "/driver").c_str(), link, sizeof(link) - 1);
	if (n > 0)
		f.driver = base_name(std::string(link, static_cast<std::size_t>(n)));
	std::string node = read(dev + "/numa_node");
	if (!node.empty())
		f.numa_node = std::atoi(node.c_str());
	n = ::readlink((root_ + dev + "/iommu_group").c_str(), link, sizeof(link) - 1);
	if (n > 0) {
		std::string g = base_name(std::string(link, static_cast<std::size_t>(n)));
		f.iommu_group = std::atoi(g.c_str());
		f.iommu_type = read("/sys/kernel/iommu_groups/" + g + "/type");
	}
	f.link.gts = parse_link_speed(read(dev + "/current_link_speed"));
	f.link.width = static_cast<unsigned>(std::atoi(read(dev + "/current_link_width").c_str()));
	f.link_cap.gts = parse_link_speed(read(dev + "/max_link_speed"));
	f.link_cap.width = static_cast<unsigned>(std::atoi(read(dev + "/max_link_width").c_str()));
	std::string cfg = read_all(dev + "/config");
	f.config.assign(cfg.begin(), cfg.end());
	*out = std::move(f);
	return true;
}

std::vector<PciFunction> Platform::upstream(const std::string &bdf) const
{
	std::vector<PciFunction> out;
	PciFunction f;
	if (!function(bdf, &f))
		return out;
	// sysfs nests each function under the bridge above it: .../0000:00:01.0/0000:01:00.0
	for (std::string dir = dir_name(f.sysfs); is_bdf(base_name(dir)); dir = dir_name(dir)) {
		PciFunction up;
		if (!function(base_name(dir), &up))
			break;
		out.push_back(std::move(up));
	}
	return out;
}

std::string Platform::bdf_of_node(const std::string &node) const
{
	std::string name = base_name(node);
	if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0])))
		name = "fpga" + name;
	char real[PATH_MAX];
	if (!::realpath((root_ + "/sys/class/pcidriver/" + name + "/device").c_str(), real))
		return std::string();
	std::string b = base_name(real);
	return is_bdf(b) ? b : std::string();
}

std::vector<unsigned> Platform::node_cpus(int node) const
{
	std::vector<unsigned> out;
	if (node < 0)
		return out;
	try {
		for (int c : parse_cpu_list(read("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist")))
			out.push_back(static_cast<unsigned>(c));
	} catch (const std::exception &) {
		out.clear(); // no such node, or a list this parser does not know: unknown
	}
	return out;
}

int Platform::numa_nodes() const
{
	try {
		return static_cast<int>(parse_cpu_list(read("/sys/devices/system/node/online")).size());
	} catch (const std::exception &) {
		return 1; // no NUMA in this kernel
	}
}

std::string Platform::cmdline_value(const std::string &key) const
{
	std::stringstream in(read("/proc/cmdline"));
	std::string word, value;
	while (in >> word)
		if (word.compare(0, key.size() + 1, key + "=") == 0)
			value = word.substr(key.size() + 1); // the last one counts, as for the kernel
	return value;
}

std::vector<std::string> Platform::iommu_units() const
{
	std::vector<std::string> out;
	if (DIR *d = ::opendir((root_ + "/sys/class/iommu").c_str())) {
		while (struct dirent *e = ::readdir(d))
			if (e->d_name[0] != '.')
				out.push_back(e->d_name);
		::closedir(d);
	}
	std::sort(out.begin(), out.end());
	return out;
}

} // namespace tools
