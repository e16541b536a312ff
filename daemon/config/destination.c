// SPDX-License-Identifier: Apache-2.0
#include "config/destination.h"

#include "log.h"

bool options_profiles_go_nowhere(const struct options *opts)
{
	return !opts->duration_ns && !opts->export.enabled && !opts->output;
}

void options_warn_no_destination(const struct options *opts)
{
	if (options_profiles_go_nowhere(opts))
		log_warn("No collector endpoint and no --output: profiles go nowhere but the log (a table of the "
			 "hottest functions when stopped). Set endpoint in the configuration file (or "
			 "OTEL_EXPORTER_OTLP_ENDPOINT), or output");
}
