// SPDX-License-Identifier: GPL-2.0-or-later
#include "fit.hpp"

#include <algorithm>
#include <cmath>

namespace dmabench {

Fit fit_latency_bandwidth(const std::vector<Sample> &samples)
{
	Fit f;
	f.points = samples.size();
	double smax = 0;
	for (const auto &s : samples)
		smax = std::max(smax, s.bytes);
	if (samples.size() < 2 || smax <= 0)
		return f;
	// Sizes scaled to [0, 1] keep the normal equations well conditioned for 4 B .. 1 GiB.
	double S = 0, Sx = 0, Sy = 0, Sxx = 0, Sxy = 0;
	for (const auto &s : samples) {
		if (!(s.seconds > 0) || !std::isfinite(s.seconds))
			return f;
		double w = 1.0 / (s.seconds * s.seconds);
		double x = s.bytes / smax;
		S += w;
		Sx += w * x;
		Sy += w * s.seconds;
		Sxx += w * x * x;
		Sxy += w * x * s.seconds;
	}
	double det = S * Sxx - Sx * Sx;
	if (!(det > 0) || det < 1e-12 * S * Sxx) // all sizes equal
		return f;
	double slope = (S * Sxy - Sx * Sy) / det; // seconds per (smax bytes)
	double icept = (Sy - slope * Sx) / S;
	if (icept < 0) {
		// A negative latency has no meaning (a per-transfer cost that shrinks with size does
		// not fit the model): the best fit with latency >= 0 has latency 0, the line through
		// the origin; its RMS error shows how poorly the model fits.
		icept = 0;
		slope = Sxy / Sxx;
	}
	if (!(slope > 0))
		return f;
	f.latency_s = icept;
	f.bandwidth_Bps = smax / slope;
	double e2 = 0;
	for (const auto &s : samples) {
		double r = (s.seconds - f.predict_seconds(s.bytes)) / s.seconds;
		e2 += r * r;
	}
	f.rms_rel_error = std::sqrt(e2 / static_cast<double>(samples.size()));
	f.valid = true;
	return f;
}

} // namespace dmabench
