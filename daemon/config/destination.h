/* SPDX-License-Identifier: Apache-2.0 */
/* Where the profiles go, said at start when a long-running daemon would keep them to itself. */
#ifndef OTELPROFD_CONFIG_DESTINATION_H
#define OTELPROFD_CONFIG_DESTINATION_H

#include <stdbool.h>

#include "config/options.h"

/* True for a run until stopped (duration 0) with no collector endpoint and no --output: its only
 * profile is the table printed when it stops. */
bool options_profiles_go_nowhere(const struct options *opts);
/* Logs a warning when options_profiles_go_nowhere(). */
void options_warn_no_destination(const struct options *opts);

#endif
