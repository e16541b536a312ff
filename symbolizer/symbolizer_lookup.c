// SPDX-License-Identifier: Apache-2.0
/* User-space lookups: an address of a process instance -> frame, and unwinding its copied stack
 * with the CFI rules of its modules (remembered in a direct-mapped cache). */
#include "symbolizer_internal.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int symbolizer_user_instance(struct symbolizer *s, pid_t pid, uint64_t instance, uint64_t address,
			     struct sym_frame *frame)
{
	struct cached_module *module;
	struct sym_process *p;
	struct sym_map *map;
	uint64_t file_offset;
	int r;

	if (python_frame_address_is(address))
		return symbolizer__python_lookup(s, pid, instance, address, frame);
	memset(frame, 0, offsetof(struct sym_frame, lines));
	frame->kind = SYM_FRAME_NATIVE;
	frame->file_address = address;
	s->stats.lookups++;
	r = symbolizer__get_process(s, pid, instance, 0, instance == 0, &p);
	if (r)
		return r;
	map = symbolizer__find_map_refresh(s, p, address);
	if (!map) {
		if (symbolizer__symbolize_jit(s, p, address, frame))
			return 0;
		s->stats.no_mapping++;
		return -ENOENT;
	}

	file_offset = address - map->start + map->offset;
	frame->has_mapping = true;
	frame->mapping = (struct sym_mapping){
		.start = map->start, .limit = map->end, .file_offset = map->offset,
		.path = map->path, .dev = map->dev, .inode = map->inode,
	};
	frame->file_address = file_offset;
	module = symbolizer__module_for_map(s, pid, map);
	if (!module || !module->elf)
		return 0;
	module->last_used = ++s->tick;
	module->generation = s->generation;
	frame->mapping.build_id = elf_module_build_id(module->elf);
	frame->mapping.htlhash = symbolizer__module_htlhash(module, map);
	frame->mapping.go_build_id = elf_module_go_build_id(module->elf);
	if (!elf_module_offset_to_vaddr(module->elf, file_offset, &frame->file_address))
		return 0;
	{
		const struct elf_module_counters *c = elf_module_counters(module->elf);
		uint64_t truncated = c->inline_truncated, bound = c->die_bound_hit, libdw = c->lines_by_libdw;
		uint64_t built = c->index_builds_at_lookup, cus = c->cu_builds, cu_ns = c->cu_build_ns;
		uint64_t cu_cpu_ns = c->cu_build_cpu_ns;

		if (elf_module_symbolize(module->elf, frame->file_address, frame))
			s->stats.symbolized++;
		if (frame->kind == SYM_FRAME_GO)
			s->stats.go_frames++;
		s->stats.vdso_frames += map->vdso;
		s->stats.inline_truncated += c->inline_truncated - truncated;
		s->stats.die_bound_hit += c->die_bound_hit - bound;
		s->stats.lines_by_libdw += c->lines_by_libdw - libdw;
		s->stats.module_index_builds_at_lookup += c->index_builds_at_lookup - built;
		s->stats.cu_builds += c->cu_builds - cus;
		s->stats.cu_build_ns += c->cu_build_ns - cu_ns;
		s->stats.cu_build_cpu_ns += c->cu_build_cpu_ns - cu_cpu_ns;
		if (c->cu_build_ns_max > s->stats.cu_build_ns_max)
			s->stats.cu_build_ns_max = c->cu_build_ns_max;
		if (c->cu_build_cpu_ns_max > s->stats.cu_build_cpu_ns_max)
			s->stats.cu_build_cpu_ns_max = c->cu_build_cpu_ns_max;
	}
	symbolizer__module_measure(s, module);
	return 0;
}

int symbolizer_user(struct symbolizer *s, pid_t pid, uint64_t address, struct sym_frame *frame)
{
	return symbolizer_user_instance(s, pid, 0, address, frame);
}

/* ---- unwinding ---- */

struct unwind_ctx {
	struct symbolizer *s;
	struct sym_process *p;
};

static size_t rule_slot_of(uint64_t serial, uint64_t vaddr)
{
	uint64_t h = (vaddr ^ (serial * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return (size_t)(h >> 32) & (RULE_CACHE_SLOTS - 1);
}

/* The rule of a module's vaddr when the cache misses: where Go's traceback ends first (even with
 * CFI: a stripped and a full build of one program show the same stacks), then the module's CFI,
 * then, for Go text without CFI, the SP delta of Go's function table. Its source in *source. */
static void compile_rule(struct symbolizer *s, struct cached_module *module, uint64_t vaddr, struct cfi_rule *rule,
			 uint8_t *source)
{
	struct cfi_rule go;
	enum go_unwind_kind kind = elf_module_go_rule(module->elf, vaddr, &go);
	uint64_t built = elf_module_counters(module->elf)->index_builds_at_lookup;

	*source = RULE_CFI;
	if (kind == GO_UNWIND_TOP || kind == GO_UNWIND_SWITCH) {
		*rule = go;
		*source = kind == GO_UNWIND_TOP ? RULE_GO_TOP : RULE_GO_SWITCH;
		return;
	}
	if (elf_module_cfi_rule(module->elf, vaddr, rule)) {
		s->stats.cfi_rule_errors++;
		rule->found = false; /* remembered as "no rule": the walker tries frame pointers */
	}
	s->stats.module_index_builds_at_lookup += elf_module_counters(module->elf)->index_builds_at_lookup - built;
	if (!rule->found && kind == GO_UNWIND_STEP) {
		*rule = go;
		rule->go_sp_delta = true;
		*source = RULE_GO_SP;
	}
}

static void count_rule(struct symbolizer *s, uint8_t source)
{
	switch (source) {
	case RULE_GO_TOP: s->stats.go_top_frames++; break;
	case RULE_GO_SWITCH: s->stats.go_stack_switches++; break;
	default: break;
	}
}

/* A slot's rule into the whole struct the walker reads. */
static const struct cfi_rule *unpack_rule(struct cfi_rule *rule, const struct rule_slot *slot)
{
	rule->found = slot->found;
	rule->signal_frame = slot->signal_frame;
	rule->go_sp_delta = slot->source == RULE_GO_SP; /* the slot's source says it */
	rule->cfa = slot->cfa;
	rule->ra = slot->ra;
	rule->bp = slot->bp;
	rule->sp = slot->sp;
	rule->nops = slot->nops;
	memcpy(rule->ops, slot->ops, slot->nops * sizeof(rule->ops[0]));
	return rule;
}

/* Keep a rule just compiled: in its slot when it fits there, else in the long rules' slot. */
static void keep_rule(struct symbolizer *s, size_t at, uint64_t serial, uint64_t vaddr, const struct cfi_rule *rule,
		      uint8_t source)
{
	if (rule->nops <= RULE_SLOT_OPS) {
		struct rule_slot *slot = &s->rules[at];

		*slot = (struct rule_slot){
			.serial = serial, .vaddr = vaddr, .cfa = rule->cfa, .ra = rule->ra, .bp = rule->bp,
			.sp = rule->sp, .found = rule->found, .signal_frame = rule->signal_frame,
			.source = source, .nops = rule->nops,
		};
		memcpy(slot->ops, rule->ops, rule->nops * sizeof(rule->ops[0]));
	} else {
		s->long_rules[at % RULE_LONG_SLOTS] = (struct rule_long_slot){
			.serial = serial, .vaddr = vaddr, .rule = *rule, .source = source,
		};
	}
}

/* unwind_rule_fn: the rule of a runtime pc through the process's mapping and the module's CFI;
 * valid until the next call. */
static const struct cfi_rule *find_rule(void *ctx, uint64_t pc)
{
	struct unwind_ctx *u = ctx;
	struct symbolizer *s = u->s;
	struct cached_module *module;
	const struct rule_slot *slot;
	const struct rule_long_slot *long_slot;
	struct sym_map *map = symbolizer__find_map_refresh(s, u->p, pc);
	uint64_t vaddr;
	uint8_t source;
	size_t at;

	if (!map)
		return NULL; /* anonymous code (a JIT) or an unmapped library: frame pointers */
	module = symbolizer__module_for_map(s, u->p->pid, map);
	if (!module || !module->elf ||
	    !elf_module_offset_to_vaddr(module->elf, pc - map->start + map->offset, &vaddr))
		return NULL;
	module->last_used = ++s->tick;
	module->generation = s->generation;
	at = rule_slot_of(module->serial, vaddr);
	slot = &s->rules[at];
	if (slot->serial == module->serial && slot->vaddr == vaddr) {
		s->stats.cfi_rule_cache_hits++;
		count_rule(s, slot->source);
		return unpack_rule(&s->rule, slot);
	}
	long_slot = &s->long_rules[at % RULE_LONG_SLOTS];
	if (long_slot->serial == module->serial && long_slot->vaddr == vaddr) {
		s->stats.cfi_rule_cache_hits++;
		count_rule(s, long_slot->source);
		return &long_slot->rule;
	}
	s->stats.cfi_rule_cache_misses++;
	compile_rule(s, module, vaddr, &s->rule, &source);
	count_rule(s, source);
	keep_rule(s, at, module->serial, vaddr, &s->rule, source);
	symbolizer__module_measure(s, module);
	return &s->rule;
}

size_t symbolizer_unwind_instance(struct symbolizer *s, pid_t pid, uint64_t instance,
				  const struct sym_unwind_input *in, uint64_t *ips, size_t max,
				  struct unwind_result *result)
{
	struct unwind_ctx u = { .s = s };
	struct unwind_window w = {
		.sp = in->sp, .data = in->stack, .size = in->stack_size, .complete = in->stack_complete,
	};
	struct unwind_regs regs = { .ip = in->ip, .sp = in->sp, .bp = in->bp };
	size_t n;

	memset(result, 0, sizeof(*result));
	s->stats.unwinds++;
	if ((!s->rules && !(s->rules = calloc(RULE_CACHE_SLOTS, sizeof(*s->rules)))) ||
	    (!s->long_rules && !(s->long_rules = calloc(RULE_LONG_SLOTS, sizeof(*s->long_rules))))) {
		result->end = UNWIND_END_NO_RULE;
		s->stats.unwind_ends[result->end]++;
		return 0;
	}
	if (symbolizer__get_process(s, pid, instance, 0, instance == 0, &u.p)) {
		result->end = UNWIND_END_NO_RULE;
		s->stats.unwind_ends[result->end]++;
		return 0;
	}
	n = unwind_stack(&regs, &w, find_rule, &u, ips, max, result);
	s->stats.unwind_frames_cfi += result->cfi_frames;
	s->stats.go_sp_frames += result->go_sp_frames;
	s->stats.unwind_frames_fp += result->fp_frames;
	s->stats.unwind_ends[result->end]++;
	return n;
}

size_t symbolizer_unwind(struct symbolizer *s, pid_t pid, const struct sym_unwind_input *in, uint64_t *ips,
			 size_t max, struct unwind_result *result)
{
	return symbolizer_unwind_instance(s, pid, 0, in, ips, max, result);
}
