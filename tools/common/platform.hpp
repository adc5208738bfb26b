// SPDX-License-Identifier: GPL-2.0-or-later
//
// What Linux says about a PCI function and the path above it: IDs, driver, NUMA node, IOMMU
// group, each link's trained and capable speed and width, and the parts of config space that
// matter for throughput (payload and read-request sizes, ACS). Read from sysfs and procfs
// under a root directory: "/" on a live system, a copied or hand-made tree in the tests
// ($MPRACE_SYSROOT). Used by `mprace list` and `mprace doctor`.
#ifndef TOOLS_COMMON_PLATFORM_HPP
#define TOOLS_COMMON_PLATFORM_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace tools {

// One side's view of a PCIe link: speed in GT/s (0 = unknown or not PCIe) and lanes.
struct LinkState {
	double gts = 0;
	unsigned width = 0;
	bool known() const { return gts > 0 && width > 0; }
	// Usable bytes per second in each direction after line encoding (8b/10b up to 5 GT/s,
	// 128b/130b from 8 GT/s): what Linux's pcie_bandwidth_available() compares.
	double bytes_per_s() const;
	std::string text() const; // "8.0 GT/s x8", or "unknown"
};

struct PciFunction {
	std::string bdf;          // 0000:01:00.0
	std::string sysfs;        // its directory, root included
	unsigned vendor = 0, device = 0, class_code = 0;
	std::string driver;       // bound driver, "" if none
	int numa_node = -1;       // -1: the platform does not say
	int iommu_group = -1;     // -1: no IOMMU translates for it
	std::string iommu_type;   // the group's default domain: DMA, DMA-FQ, identity, blocked
	LinkState link, link_cap; // current_link_* and max_link_* (its upstream link; for a
				  // downstream or root port, the link below it)
	// Config space as far as this process may read it (64 bytes without CAP_SYS_ADMIN).
	std::vector<std::uint8_t> config;

	bool is_bridge() const { return (class_code >> 8) == 0x0604; }
	bool is_nvidia_gpu() const { return vendor == 0x10de && (class_code >> 16) == 0x03; }
	// PCI Express capability fields; 0 when config space does not reach them.
	unsigned mps_supported() const;  // bytes, Device Capabilities
	unsigned mps() const;            // bytes, Device Control
	unsigned mrrs() const;           // bytes, Device Control
	// ACS (extended capability 0x000d): -1 unreadable or absent, else the control register.
	int acs_control() const;
	bool config_complete() const { return config.size() >= 256; }
};

class Platform {
public:
	// root: "" means $MPRACE_SYSROOT, else "/".
	explicit Platform(std::string root = std::string());
	const std::string &root() const { return root_; }

	// The file's first line without trailing whitespace; "" when it cannot be read.
	std::string read(const std::string &path) const;
	std::string read_all(const std::string &path) const;
	bool exists(const std::string &path) const;

	// Every PCI function, in bus order.
	std::vector<std::string> functions() const;
	// A function's details; false when sysfs has no such function.
	bool function(const std::string &bdf, PciFunction *out) const;
	// The bridges above a function, nearest first, ending at the root port (not the host
	// bridge, which sysfs does not show as a function).
	std::vector<PciFunction> upstream(const std::string &bdf) const;
	// The PCI address of a pcidriver device node (/dev/fpga0, fpga0), "" if unknown.
	std::string bdf_of_node(const std::string &node) const;

	// CPUs of a NUMA node (empty when the node is unknown).
	std::vector<unsigned> node_cpus(int node) const;
	int numa_nodes() const; // nodes the platform has (1 without NUMA)
	// "on" values of a kernel parameter on the command line, e.g. "iommu.strict".
	std::string cmdline_value(const std::string &key) const;
	std::vector<std::string> iommu_units() const; // /sys/class/iommu entries

private:
	std::string root_;
};

// "0000:01:00.0"-shaped?
bool is_bdf(const std::string &s);
// Parses "8.0 GT/s PCIe" (sysfs) into GT/s; 0 for "Unknown" or nonsense.
double parse_link_speed(const std::string &s);

} // namespace tools

#endif
