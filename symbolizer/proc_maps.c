// SPDX-License-Identifier: Apache-2.0
#include "proc_maps.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static bool hex_field(char **p, char stop, uint64_t *value)
{
	char *end;

	if (!**p || **p == ' ')
		return false;
	*value = strtoull(*p, &end, 16);
	if (end == *p || *end != stop)
		return false;
	*p = end + 1;
	return true;
}

bool proc_map_parse_line(char *line, struct proc_map *map)
{
	static const char deleted[] = " (deleted)";
	uint64_t major, minor;
	char *p = line, *end;
	size_t len;

	*map = (struct proc_map){ .path = "" };
	if (!hex_field(&p, '-', &map->start) || !hex_field(&p, ' ', &map->end) || map->end <= map->start)
		return false;
	if (strlen(p) < 5 || p[4] != ' ')
		return false;
	map->executable = p[2] == 'x';
	p += 5;
	if (!hex_field(&p, ' ', &map->offset) || !hex_field(&p, ':', &major) || !hex_field(&p, ' ', &minor))
		return false;
	map->dev_major = (uint32_t)major;
	map->dev_minor = (uint32_t)minor;
	map->inode = strtoull(p, &end, 10);
	if (end == p)
		return false;
	p = end;
	while (*p == ' ')
		p++;
	len = strcspn(p, "\n");
	p[len] = 0;
	if (len > sizeof(deleted) - 1 && !strcmp(p + len - (sizeof(deleted) - 1), deleted)) {
		p[len - (sizeof(deleted) - 1)] = 0;
		map->deleted = true;
	}
	map->path = p;
	return true;
}
