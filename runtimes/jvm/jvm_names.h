/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names of JIT code as HotSpot writes them in its perf map ("long Hot.mix(long)",
 * "void java.util.HashMap.resize()"): the method is kept as Class.method ("Hot.mix",
 * "java.util.HashMap.resize"), as Java's own tools show it. Its other blobs keep their names
 * ("Interpreter", "StubRoutines (1)", "I2C/C2I adapters"): they name the interpreter and the stubs.
 */
#ifndef OTELPROFD_JVM_NAMES_H
#define OTELPROFD_JVM_NAMES_H

/* Rewrite name in place when it has the form "TYPE QUALIFIED.NAME(ARGS)"; leave it otherwise. */
void jvm_names_method(char *name);

#endif
