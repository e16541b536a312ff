// SPDX-License-Identifier: Apache-2.0
#include "output/html_page.h"

#include <errno.h>

/* scripts/embed-text.py's output (html_assets.c). */
extern const char html_flame_css[], html_flame_js[];

int html_page_write(const struct flame *f, FILE *out)
{
	int r;

	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
	      "<title>otelprofd flame graph</title>\n<style>\n", out);
	fputs(html_flame_css, out);
	fputs("</style></head>\n<body>\n<script type=\"application/json\" id=\"otelprofd-data\">", out);
	r = flame_write_json(f, out);
	if (r)
		return r;
	fputs("</script>\n<script>\n", out);
	fputs(html_flame_js, out);
	fputs("</script>\n</body></html>\n", out);
	if (fflush(out))
		return -errno;
	return ferror(out) ? -EIO : 0;
}
