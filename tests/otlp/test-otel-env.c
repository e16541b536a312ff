// SPDX-License-Identifier: Apache-2.0
/*
 * Exporter configuration: OTEL_* variables, their defaults, endpoint resolution, and the export
 * flags (config/export_flags.c) winning over the variables.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../options-line.h"
#include "config/options.h"
#include "export/otel_env.h"
#include "output/otlp_encode.h"
#include "parse_units.h"

/* A fake environment: NULL-terminated name/value pairs. */
static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
	for (const char *const *e = fake_env; e && *e; e += 2)
		if (!strcmp(e[0], name))
			return e[1];
	return NULL;
}

static FILE *devnull(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

static int apply(struct export_config *cfg, const char *const *env)
{
	fake_env = env;
	return otel_env_apply(cfg, fake_getenv, devnull());
}

static void test_defaults(void **state)
{
	struct export_config c = { 0 };

	(void)state;
	assert_int_equal(apply(&c, (const char *const[]){ NULL }), 0);
	assert_false(c.enabled);
	assert_int_equal(c.protocol, EXPORT_PROTOCOL_GRPC);
	assert_int_equal(c.compression, EXPORT_COMPRESSION_GZIP);
	assert_int_equal(c.timeout_ns, 10000000000ULL);
	assert_int_equal(c.interval_ns, 10000000000ULL);
	assert_int_equal(c.max_message_size, 16u << 20);
	assert_int_equal(c.queue_size, EXPORT_DEFAULT_QUEUE_SIZE);
	assert_int_equal(c.nheaders, 0);
	export_config_free(&c);
}

static void test_grpc_endpoints(void **state)
{
	struct export_config c = { 0 };

	(void)state;
	assert_int_equal(apply(&c, (const char *const[]){ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317", NULL }), 0);
	assert_true(c.enabled);
	assert_false(c.tls);
	assert_string_equal(c.target, "collector:4317");
	export_config_free(&c);

	c = (struct export_config){ 0 };
	assert_int_equal(apply(&c, (const char *const[]){ "OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector", NULL }), 0);
	assert_true(c.tls);
	assert_string_equal(c.target, "collector:4317");
	export_config_free(&c);

	/* No scheme: TLS unless insecure; the profiles variable wins over the generic one. */
	c = (struct export_config){ 0 };
	assert_int_equal(apply(&c, (const char *const[]){ "OTEL_EXPORTER_OTLP_ENDPOINT", "ignored:1",
				       "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "127.0.0.1:5555", NULL }), 0);
	assert_true(c.tls);
	assert_string_equal(c.target, "127.0.0.1:5555");
	export_config_free(&c);
	c = (struct export_config){ 0 };
	assert_int_equal(apply(&c, (const char *const[]){ "OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:5555",
				       "OTEL_EXPORTER_OTLP_INSECURE", "true", NULL }), 0);
	assert_false(c.tls);
	export_config_free(&c);
	c = (struct export_config){ 0 };
	assert_int_equal(apply(&c, (const char *const[]){ "OTEL_EXPORTER_OTLP_ENDPOINT", "[::1]:4317", NULL }), 0);
	assert_string_equal(c.target, "[::1]:4317");
	export_config_free(&c);
	c = (struct export_config){ 0 };
	assert_int_equal(apply(&c, (const char *const[]){ "OTEL_EXPORTER_OTLP_ENDPOINT", "[fe80::1]", NULL }), 0);
	assert_string_equal(c.target, "[fe80::1]:4317");
	export_config_free(&c);
	c = (struct export_config){ 0 };
	assert_int_equal(apply(&c, (const char *const[]){ "OTEL_EXPORTER_OTLP_ENDPOINT", "otel-1.example.com.:65535",
				       NULL }), 0);
	assert_string_equal(c.target, "otel-1.example.com.:65535");
	export_config_free(&c);
}

/* What otel_env_apply() writes on err for the environment env. */
static char *apply_message(const char *const *env, int expect)
{
	struct export_config c = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&text, &len);

	fake_env = env;
	assert_int_equal(otel_env_apply(&c, fake_getenv, err), expect);
	fclose(err);
	export_config_free(&c);
	return text;
}

/* Header values are secrets: a message names the entry (position, key), never the value; a URL's
 * user:password is hidden; control characters are escaped. */
static void test_messages_hide_secrets(void **state)
{
	static const struct {
		const char *var, *value, *message;
	} cases[] = {
		{ "OTEL_EXPORTER_OTLP_HEADERS", "a=1,authorization=Bearer%s3cret",
		  "otelprofd: OTEL_EXPORTER_OTLP_HEADERS: entry 2 ('authorization'): value is not percent-encoded "
		  "properly (expected key=value,key=value)\n" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "a=1,,Bearer s3cret",
		  "otelprofd: OTEL_EXPORTER_OTLP_PROFILES_HEADERS: entry 3: no '=' between key and value "
		  "(expected key=value,key=value)\n" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "=s3cret", "otelprofd: OTEL_EXPORTER_OTLP_HEADERS: entry 1: empty key" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k%zz=s3cret", "entry 1: the key is not percent-encoded properly" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k\x1b[2J=s3cret",
		  "OTEL_EXPORTER_OTLP_HEADERS: 'k\\x1b[2j' cannot be sent as a gRPC header" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k=s3cret%0D%0AX: 1", "OTEL_EXPORTER_OTLP_HEADERS: 'k' cannot be sent" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "https://admin:s3cret@c:4317",
		  "otelprofd: OTEL_EXPORTER_OTLP_ENDPOINT: 'https://***@c:4317' is not a collector address: "
		  "user:password@ is not supported" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "admin:s3c@ret@c:4317/x",
		  "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT: '***@c:4317/x'" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "c:1\r\nforged: s3cret",
		  "'c:1\\x0d\\x0aforged: s3cret' is not a collector address: control characters" },
		{ "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc\n", "'grpc\\x0a' is not supported" },
		/* Some services take an API key in the query. */
		{ "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "https://c:0/v1?key=s3cret",
		  "'https://c:0/v1?***' is not a collector address: the port is not a number from 1 to 65535" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = apply_message((const char *const[]){ cases[i].var, cases[i].value, NULL }, -EINVAL);

		print_message("%s", text);
		assert_non_null(strstr(text, cases[i].message));
		/* One line; the endpoint with a forged line is shown escaped, so its text may stay. */
		assert_ptr_equal(strchr(text, '\n'), text + strlen(text) - 1);
		if (!strstr(cases[i].value, "forged"))
			assert_null(strstr(text, "s3cret"));
		assert_null(strstr(text, "s3c@ret"));
		free(text);
	}
}

static void test_http_endpoints(void **state)
{
	static const struct {
		const char *var, *value, *url;
	} cases[] = {
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "http://c:4318/v1development/profiles" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/", "http://c:4318/v1development/profiles" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:443/base", "https://c:443/base/v1development/profiles" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http://c:9/custom/path", "http://c:9/custom/path" },
		/* No port: OTLP/HTTP's 4318, not the scheme's. */
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c", "http://c:4318/v1development/profiles" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "https://c/", "https://c:4318/v1development/profiles" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "https://c/base", "https://c:4318/base/v1development/profiles" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "c", "https://c:4318/v1development/profiles" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1]", "http://[::1]:4318/v1development/profiles" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1]:9", "http://[::1]:9/v1development/profiles" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "https://c/custom", "https://c:4318/custom" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct export_config c = { 0 };

		assert_int_equal(apply(&c, (const char *const[]){ cases[i].var, cases[i].value,
					       "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", NULL }), 0);
		assert_int_equal(c.protocol, EXPORT_PROTOCOL_HTTP);
		assert_string_equal(c.url, cases[i].url);
		export_config_free(&c);
	}
}

static void test_other_variables(void **state)
{
	struct export_config c = { 0 };

	(void)state;
	assert_int_equal(apply(&c, (const char *const[]){
		"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc, x-tenant = t1",
		"OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "x-only=profiles",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "none",
		"OTEL_EXPORTER_OTLP_TIMEOUT", "2500",
		"OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/c.pem",
		"OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem",
		"OTEL_RESOURCE_ATTRIBUTES", "service.name=a,deployment.environment=prod%2Ceu",
		"OTEL_SERVICE_NAME", "b", NULL }), 0);
	/* The profiles-specific headers replace the generic ones. */
	assert_int_equal(c.nheaders, 1);
	assert_string_equal(c.headers[0].key, "x-only");
	assert_int_equal(c.compression, EXPORT_COMPRESSION_NONE);
	assert_int_equal(c.timeout_ns, 2500000000ULL);
	assert_string_equal(c.ca_file, "/ca.pem");
	assert_string_equal(c.client_cert, "/c.pem");
	assert_string_equal(c.client_key, "/k.pem");
	assert_int_equal(c.nresource_attrs, 2);
	assert_string_equal(c.resource_attrs[0].key, "service.name");
	assert_string_equal(c.resource_attrs[0].value, "b"); /* OTEL_SERVICE_NAME wins */
	assert_string_equal(c.resource_attrs[1].value, "prod,eu");
	export_config_free(&c);

	c = (struct export_config){ 0 };
	assert_int_equal(apply(&c, (const char *const[]){
		"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc, X-Tenant = t1", NULL }), 0);
	assert_int_equal(c.nheaders, 2);
	assert_string_equal(c.headers[0].key, "authorization");
	assert_string_equal(c.headers[0].value, "Bearer abc");
	assert_string_equal(c.headers[1].key, "x-tenant");
	assert_string_equal(c.headers[1].value, "t1");
	export_config_free(&c);
}

static void test_bad_variables(void **state)
{
	static const char *const bad[][2] = {
		{ "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json" },
		{ "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd" },
		{ "OTEL_EXPORTER_OTLP_TIMEOUT", "10s" },
		{ "OTEL_EXPORTER_OTLP_TIMEOUT", "0" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "novalue" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k=%zz" },
		{ "OTEL_RESOURCE_ATTRIBUTES", "=x" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://c:1" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://" },
		{ "OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem" }, /* a key without its certificate */
		/* gRPC metadata that could never be sent: every request would fail, forever. */
		{ "OTEL_EXPORTER_OTLP_HEADERS", "x key=v" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k:ey=v" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k%0A=v" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k=a%0Ab" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k=a%7Fb" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k=caf%C3%A9" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "ok=1,grpc-timeout=1S" },
		/* Ports 1-65535, IPv6 in brackets, RFC 1123 host names, nothing that could forge a log line
		 * or a request line. */
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "::::" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "::1:4317" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1]x" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "c:0" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "c:65536" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "c:" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1]:99999" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "exa_mple:1" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "-bad:1" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "999.1.1.1:1" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:1/pa th" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:1/x\r\nHost: y" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "https://user:pw@c:1" },
		{ "OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca\n.pem" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct export_config c = { 0 };

		print_message("%s=%s\n", bad[i][0], bad[i][1]);
		assert_int_equal(apply(&c, (const char *const[]){ bad[i][0], bad[i][1], NULL }), -EINVAL);
		export_config_free(&c);
	}
}

/* Headers by protocol: what each may carry after %-decoding. */
static void test_headers(void **state)
{
	static const struct {
		const char *protocol, *headers;
		int result;
	} cases[] = {
		{ "grpc", "X-Api-Key=s3cret,a.b_c-1=x%20y%2Cz", 0 },
		{ "grpc", "trace-bin=%01%02%FF", 0 },   /* -bin keys carry bytes */
		{ "grpc", "k=caf%C3%A9", -EINVAL },
		{ "grpc", "k+1=v", -EINVAL },
		{ "http/protobuf", "k=caf%C3%A9", 0 },  /* HTTP: obs-text is allowed */
		{ "http/protobuf", "X-K+1=v", 0 },      /* token characters */
		{ "http/protobuf", "k=a%0D%0AInjected: 1", -EINVAL },
		{ "http/protobuf", "k(1)=v", -EINVAL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct export_config c = { 0 };

		print_message("%s: %s\n", cases[i].protocol, cases[i].headers);
		assert_int_equal(apply(&c, (const char *const[]){ "OTEL_EXPORTER_OTLP_PROTOCOL", cases[i].protocol,
					       "OTEL_EXPORTER_OTLP_HEADERS", cases[i].headers, NULL }), cases[i].result);
		export_config_free(&c);
	}
}

static enum options_result parse(struct options *o, const char *line)
{
	return parse_line(o, line, devnull());
}

static void test_flags_win(void **state)
{
	struct options o;

	(void)state;
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env-collector:4317", 1);
	setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "from=env", 1);
	setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "none", 1);

	/* The environment alone makes a daemon: no duration unless -d. */
	assert_int_equal(parse(&o, ""), OPTIONS_OK);
	assert_true(o.export.enabled);
	assert_int_equal(o.duration_ns, 0);
	assert_string_equal(o.export.url, "http://env-collector:4317/v1development/profiles");
	assert_string_equal(o.export.headers[0].key, "from");
	options_free(&o);

	assert_int_equal(parse(&o, "--endpoint 127.0.0.1:9999 --insecure --protocol grpc --headers a=1,b=2 "
				   "--compression gzip --timeout 3s --export-interval 2s --max-message-size 1MiB "
				   "--queue-size 4 --queue-bytes 8MiB -d 5s"), OPTIONS_OK);
	assert_true(o.export.enabled);
	assert_false(o.export.tls);
	assert_int_equal(o.export.protocol, EXPORT_PROTOCOL_GRPC);
	assert_string_equal(o.export.target, "127.0.0.1:9999");
	assert_int_equal(o.export.nheaders, 2);
	assert_int_equal(o.export.compression, EXPORT_COMPRESSION_GZIP);
	assert_int_equal(o.export.timeout_ns, 3000000000ULL);
	assert_int_equal(o.export.interval_ns, 2000000000ULL);
	assert_int_equal(o.export.max_message_size, 1u << 20);
	assert_int_equal(o.export.queue_size, 4);
	assert_int_equal(o.export.queue_bytes, 8u << 20);
	assert_int_equal(o.duration_ns, 5000000000ULL);
	options_free(&o);

	/* -o FILE is an ad hoc run: the environment's collector is ignored, a flag's is an error. */
	assert_int_equal(parse(&o, "-o x.otlp"), OPTIONS_OK);
	assert_false(o.export.enabled);
	assert_int_equal(o.format, OUTPUT_OTLP);
	assert_int_equal(o.duration_ns, 10000000000ULL);
	options_free(&o);
	assert_int_equal(parse(&o, "-o x.otlp --endpoint c:1"), OPTIONS_USAGE);

	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_PROTOCOL");
	unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
	unsetenv("OTEL_EXPORTER_OTLP_COMPRESSION");
}

static void test_bad_flags(void **state)
{
	static const char *const bad[] = {
		"--protocol http/json", "--compression br", "--timeout 0", "--timeout soon", "--export-interval 1ms",
		"--max-message-size 10", "--max-message-size 1TB", "--queue-size 0", "--queue-bytes x",
		"--endpoint ftp://x", "--endpoint c:1 --client-cert /c.pem", "--endpoint", "--headers k",
		"--endpoint c:1 --headers bad\\key=1", "--endpoint c:1 --headers k=%01",
		/* A queue that could not hold one request of the largest size. */
		"--queue-bytes 1MiB --max-message-size 2MiB", "--queue-bytes 8MiB",
	};
	struct options o;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("%s\n", bad[i]);
		assert_int_equal(parse(&o, bad[i]), OPTIONS_USAGE);
	}
}

static void test_parse_size(void **state)
{
	size_t n;

	(void)state;
	assert_int_equal(parse_size("4096", &n), 0);
	assert_int_equal(n, 4096);
	assert_int_equal(parse_size("16MiB", &n), 0);
	assert_int_equal(n, 16u << 20);
	assert_int_equal(parse_size("512K", &n), 0);
	assert_int_equal(n, 512u << 10);
	assert_int_equal(parse_size("", &n), -EINVAL);
	assert_int_equal(parse_size("-1", &n), -EINVAL);
	assert_int_equal(parse_size("1PB", &n), -EINVAL);
	assert_int_equal(parse_size("99999999999999999999G", &n), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_grpc_endpoints),
		cmocka_unit_test(test_http_endpoints),
		cmocka_unit_test(test_other_variables),
		cmocka_unit_test(test_bad_variables),
		cmocka_unit_test(test_flags_win),
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_messages_hide_secrets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
