/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks of user input shared by the flags, the configuration file, the OTEL_* variables and the
 * metrics server: ports, host:port addresses, and showing input in a message safely (control
 * characters escaped so a value cannot forge log lines, credentials in URLs hidden).
 */
#ifndef OTELPROFD_PARSE_H
#define OTELPROFD_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* s with its leading and trailing white space cut, in place (the end is written with a NUL). */
char *parse_trim(char *s);

/* A TCP port, 1-65535 in decimal. 0 or -EINVAL. */
int parse_port(const char *text, size_t len, unsigned *port);

/*
 * "host:port" or "[ipv6]:port" in the first len bytes of text (a port is optional unless
 * port_required; *port is 0 without one). The host is an IPv4 address, a bracketed IPv6 address
 * or a host name of RFC 1123 characters; host receives it without brackets. 0, or -EINVAL with a
 * static reason in *why.
 */
int parse_host_port(const char *text, size_t len, bool port_required, char *host, size_t hostlen, unsigned *port,
		    const char **why);

/* Any byte below 0x20, or DEL. */
bool parse_has_control(const char *text);

/* text as it may be shown on one log line: control characters as \xNN, cut with "..." to fit in
 * size bytes. Returns buf. */
const char *parse_escape(const char *text, char *buf, size_t size);

/* parse_escape() of a URL or host:port with its userinfo ("user:password@") shown as "***@" and
 * its query (where some services take an API key) as "?***". */
const char *parse_redact_url(const char *url, char *buf, size_t size);

#endif
