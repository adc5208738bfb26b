// SPDX-License-Identifier: GPL-2.0-or-later
//
// `mprace selftest`: the engine conformance suite (selftest/conformance.cpp) against any board,
// with a header that says what ran where, so that the report can be attached to a bug as it is.
#include "config.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sys/utsname.h>

#include "cli.hpp"
#include "cli_util.hpp"
#include "common/platform.hpp"
#include "common/units.hpp"
#include "mprace-spec/engine_spec.h"
#include "selftest/conformance.hpp"

using tools::strprintf;

namespace cli {

void cmd_selftest(Session &s, const Args &a)
{
	a.max_positionals(0);
	if (a.has("--short") && a.has("--long"))
		a.fail("--short and --long exclude each other");
	selftest::Options o;
	o.quick = !a.has("--long");
	o.seed = a.has("--seed") ? num32(a, a.get("--seed"), "seed")
				 : static_cast<std::uint32_t>(std::chrono::system_clock::now().time_since_epoch().count());
	std::FILE *report = nullptr;
	if (a.has("--report")) {
		report = std::fopen(a.get("--report").c_str(), "w");
		if (!report)
			throw Failed("cannot write the report " + a.get("--report") + ": " + std::strerror(errno));
	}
	struct Closer {
		std::FILE *f;
		~Closer() { if (f) std::fclose(f); }
	} closer{report};
	o.out = {stdout};
	if (report)
		o.out.push_back(report);
	auto say = [&](const std::string &line) {
		for (std::FILE *f : o.out)
			std::fprintf(f, "%s\n", line.c_str());
	};

	mprace::Board &b = s.board();
	const mprace::BoardInfo &i = b.info();
	if (!i.isOurEngine())
		throw Failed(strprintf("selftest: %s is not a board with our engine (MAGIC reads 0x%08x, VERSION %u.%u; "
				       "expected 0x%08x, %u.x): nothing was run. 'mprace doctor' checks the platform of any device.",
				       i.pci.name, i.magic, i.versionMajor, i.versionMinor, MP_ENGINE_MAGIC,
				       MP_ENGINE_VERSION_MAJOR));
	o.slow = a.has("--slow") || i.simulated();

	struct utsname u {};
	::uname(&u);
	std::time_t now = std::time(nullptr);
	char when[64];
	std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
	say(strprintf("# mprace selftest, %s %s, %s", PACKAGE_NAME, PACKAGE_VERSION, when));
	say(strprintf("# host: %s %s %s", u.sysname, u.release, u.machine));
	say(strprintf("# device: %s (%s), backend %s%s", s.device().empty() ? "(default)" : s.device().c_str(), i.pci.name,
		      i.backendName(), i.pci.abi_version ? strprintf(", module API %u", i.pci.abi_version).c_str() : ""));
	if (i.pci.backend == PD_BACKEND_KERNEL) {
		tools::Platform p;
		tools::PciFunction f;
		if (p.function(i.pci.name, &f))
			say(strprintf("# pci: %04x:%04x, link %s (capable %s), numa node %d, iommu %s", f.vendor, f.device,
				      f.link.text().c_str(), f.link_cap.text().c_str(), f.numa_node,
				      f.iommu_group < 0 ? "none" : f.iommu_type.c_str()));
	}
	say(strprintf("# engine: %u.%u, caps 0x%08x (datapath %u B, MPS %u B, MRRS %u B), %u MHz; in effect MPS %u B, MRRS %u B",
		      i.versionMajor, i.versionMinor, i.capsRaw, i.caps.datapathBytes, i.caps.maxPayload,
		      i.caps.maxReadRequest, i.clockMHz, i.pci.max_payload, i.pci.max_read_request));
	say(strprintf("# mode: %s%s, seed %u (repeat with --seed %u)", o.quick ? "short" : "long",
		      o.slow ? ", sized for a slow board" : "", o.seed, o.seed));

	const auto t0 = std::chrono::steady_clock::now();
	selftest::Outcome r = selftest::run(b, o);
	say(strprintf("1..%d", r.checks));
	say(strprintf("# %d checks, %d failed, %d skipped, in %.2f s", r.checks, r.failures, r.skipped, since(t0)));
	if (r.failures)
		throw Failed(strprintf("selftest: %d of %d checks failed (seed %u)", r.failures, r.checks, o.seed));
}

} // namespace cli
