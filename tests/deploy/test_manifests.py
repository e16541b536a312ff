#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every Kubernetes manifest parses and has what the DaemonSet needs, and every otelprofd flag the
manifests use is one the daemon really has (a flag renamed in the code breaks this test)."""
import os
import re
import shutil
import subprocess
import sys

import yaml

root = os.environ["SOURCE_ROOT"]
kdir = os.path.join(root, "deploy", "kubernetes")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


docs = {}
for name in sorted(os.listdir(kdir)):
    if name.endswith(".yaml"):
        with open(os.path.join(kdir, name)) as f:
            docs[name] = [d for d in yaml.safe_load_all(f) if d]
        print(f"parsed {name}: {[d.get('kind') for d in docs[name]]}")
objects = {(d["kind"], d["metadata"]["name"]) for n, ds in docs.items() for d in ds if "metadata" in d}

kust = docs["kustomization.yaml"][0]
# Every file the kustomization reads must be in its folder: kustomize's load restrictor refuses
# any path that leaves it ("security; file ... is not in or below ...").
kust_paths = list(kust.get("resources", [])) + list(kust.get("components", []))
for key in ("configMapGenerator", "secretGenerator"):
    for gen in kust.get(key, []):
        kust_paths += [f.split("=", 1)[-1] for f in gen.get("files", [])] + list(gen.get("envs", []))
kust_paths += [p["path"] if isinstance(p, dict) else p for key in ("patches", "patchesStrategicMerge")
               for p in kust.get(key, []) if not isinstance(p, dict) or "path" in p]
for path in kust_paths:
    real = os.path.realpath(os.path.join(kdir, path))
    if os.path.isabs(path) or os.path.commonpath([real, os.path.realpath(kdir)]) != os.path.realpath(kdir):
        fail(f"the kustomization reads {path}, outside {kdir}")
    if not os.path.exists(real):
        fail(f"the kustomization reads missing {path}")
print(f"kustomization paths, all inside its folder: {kust_paths}")

# The collector configuration of the kustomization is the standalone example, copied.
example = open(os.path.join(root, "deploy", "collector", "config.yaml")).read()
if open(os.path.join(kdir, "collector-config.yaml")).read() != example:
    fail("deploy/kubernetes/collector-config.yaml differs from deploy/collector/config.yaml: copy it over")

# kubectl's own kustomize, where kubectl is installed.
kubectl = shutil.which("kubectl")
if kubectl:
    k = subprocess.run([kubectl, "kustomize", kdir], capture_output=True, text=True, timeout=60)
    if k.returncode != 0:
        fail(f"kubectl kustomize {kdir} failed: {k.stderr.strip()}")
    built = [d for d in yaml.safe_load_all(k.stdout) if d]
    kinds = sorted(d["kind"] for d in built)
    print(f"kubectl kustomize: {kinds}")
    for kind in ("DaemonSet", "ConfigMap", "ClusterRole", "ServiceAccount"):
        if kind not in kinds:
            fail(f"kubectl kustomize made no {kind}")
    if any(d["metadata"].get("namespace", "otelprofd") != "otelprofd" for d in built
           if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding")):
        fail("kubectl kustomize put an object outside the otelprofd namespace")
else:
    print("kubectl is not installed: kubectl kustomize not run")

ds = next(d for d in docs["daemonset.yaml"] if d["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
c = next(c for c in pod["containers"] if c["name"] == "otelprofd")
sc = c["securityContext"]
checks = {
    "hostPID": pod.get("hostPID") is True,
    "privileged false": sc.get("privileged") is False,
    "no privilege escalation": sc.get("allowPrivilegeEscalation") is False,
    "read-only root": sc.get("readOnlyRootFilesystem") is True,
    "drop ALL": sc["capabilities"]["drop"] == ["ALL"],
    "BPF and PERFMON added": {"BPF", "PERFMON"} <= set(sc["capabilities"]["add"]),
    "no SYS_ADMIN": "SYS_ADMIN" not in sc["capabilities"]["add"],
    "requests": {"cpu", "memory"} <= set(c["resources"]["requests"]),
    "limits": {"cpu", "memory"} <= set(c["resources"]["limits"]),
    "tolerates every taint": {"operator": "Exists"} in pod.get("tolerations", []),
    "service account": pod.get("serviceAccountName") == "otelprofd",
    "node name from the downward API": any(
        e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName" for e in c.get("env", [])),
}
# Only the mounts the daemon needs: host files are read through /proc/1/root (hostPID), so no
# hostPath at all; an emptyDir is there because something writes into it, and is bounded.
HOST_PATHS_ALLOWED = set()
host_paths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
mounted = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
env = {e["name"]: e.get("value") for e in c.get("env", [])}
checks.update({
    f"hostPaths within the allowlist {sorted(HOST_PATHS_ALLOWED)}": host_paths <= HOST_PATHS_ALLOWED,
    "every volume mounted, every mount a volume": set(mounted) == {v["name"] for v in pod["volumes"]},
    "every emptyDir bounded": all(v["emptyDir"].get("sizeLimit") for v in pod["volumes"] if "emptyDir" in v),
    "every emptyDir written to (DEBUGINFOD_CACHE_PATH)": all(
        (env.get("DEBUGINFOD_CACHE_PATH") or "").startswith(mounted[v["name"]] + "/")
        for v in pod["volumes"] if "emptyDir" in v),
})
for what, ok in checks.items():
    print(("ok  " if ok else "BAD ") + what)
    if not ok:
        fail(what)
if ("ServiceAccount", "otelprofd") not in objects or ("ClusterRoleBinding", "otelprofd") not in objects:
    fail("ServiceAccount or ClusterRoleBinding missing")
role = next(d for d in docs["rbac.yaml"] if d["kind"] == "ClusterRole")
if role["rules"] != [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]:
    fail(f"ClusterRole must grant exactly pods get/list/watch: {role['rules']}")

# The collector: profiles pipeline behind its feature gate.
col = yaml.safe_load(example)
if "profiles" not in col["service"]["pipelines"]:
    fail("the collector configuration has no profiles pipeline")
coldep = next(d for d in docs["collector.yaml"] if d["kind"] == "Deployment")
if "--feature-gates=+service.profilesSupport" not in coldep["spec"]["template"]["spec"]["containers"][0]["args"]:
    fail("the collector runs without --feature-gates=+service.profilesSupport")

# Flags used in the manifests exist in the daemon.
help_text = subprocess.run([os.environ["OTELPROFD"], "--help"], capture_output=True, text=True).stdout
known = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))
used = set()
for a in c.get("args", []) + c.get("command", []):
    used.update(re.findall(r"^(--[a-z][a-z0-9-]*)", a))
for flag in sorted(used):
    if flag not in known:
        fail(f"the DaemonSet passes {flag}, which otelprofd --help does not list")
print(f"flags used by the DaemonSet, all known to the daemon: {sorted(used)}")

# The configuration the DaemonSet reads comes from the ConfigMap, and the daemon accepts it.
config_arg = next((a for a in c.get("args", []) if a.startswith("--config=")), None)
if not config_arg:
    fail("the DaemonSet does not pass --config")
config_dir = os.path.dirname(config_arg.split("=", 1)[1])
mount = next((m for m in c["volumeMounts"] if m["mountPath"] == config_dir), None)
volume = mount and next((v for v in pod["volumes"] if v["name"] == mount["name"]), None)
if not volume or "configMap" not in volume:
    fail(f"{config_dir} is not mounted from a ConfigMap")
gen = next((g for g in kust["configMapGenerator"] if g["name"] == volume["configMap"]["name"]), None)
if not gen:
    fail(f"no configMapGenerator makes {volume['configMap']['name']}")
clean_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
for f in gen["files"]:
    path = os.path.join(kdir, f.split("=", 1)[-1])
    chk = subprocess.run([os.environ["OTELPROFD"], "--check-config", "--config", path], capture_output=True,
                         text=True, env=clean_env)
    print(chk.stdout + chk.stderr)
    if chk.returncode != 0:
        fail(f"otelprofd --check-config rejects {path}")
print("PASS")
