# SPDX-License-Identifier: Apache-2.0
"""A fake Kubernetes API server for otelprofd's tests: HTTPS on 127.0.0.1 only, with a CA and a server
certificate made by openssl, a service account directory (token, ca.crt, namespace) as a pod sees it,
and a script of answers: each GET /api/v1/pods takes the next step, which says whether it expects a
list or a watch, which query parameters it checks, and what it answers (a PodList, an HTTP error, or a
chunked stream of watch events that ends, or stays open until the server closes).

Every request must carry "Authorization: Bearer <token>"; one that does not gets a 401 and is
recorded in errors, like a request that does not match its step.
"""
import http.server
import json
import os
import ssl
import subprocess
import threading
import time
from urllib.parse import parse_qs, urlparse

NODE = "node-a"
TOKEN = "s3cr3t-token-for-tests"


def make_pki(directory, token=TOKEN):
    """CA, server certificate for 127.0.0.1, and a service account directory under directory.
    Returns (secrets_dir, cert, key)."""
    os.makedirs(directory, exist_ok=True)

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=fake-kubernetes-ca")
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=kube-apiserver")
    with open(os.path.join(directory, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
    secrets = os.path.join(directory, "serviceaccount")
    os.makedirs(secrets, exist_ok=True)
    with open(os.path.join(directory, "ca.pem")) as src, open(os.path.join(secrets, "ca.crt"), "w") as dst:
        dst.write(src.read())
    with open(os.path.join(secrets, "token"), "w") as f:
        f.write(token + "\n")
    with open(os.path.join(secrets, "namespace"), "w") as f:
        f.write("otelprofd")
    return secrets, os.path.join(directory, "server.pem"), os.path.join(directory, "server.key")


def pod(uid, name, namespace, rv, containers=(), init_containers=()):
    """A Pod object; containers are (name, "runtime://id" or None for one not started yet)."""
    def statuses(items):
        out = []
        for cname, cid in items:
            st = {"name": cname, "ready": cid is not None, "restartCount": 0,
                  "image": "registry.example/" + cname + ":1"}
            if cid:
                st["containerID"] = cid
                st["state"] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
            else:
                st["state"] = {"waiting": {"reason": "ContainerCreating"}}
            out.append(st)
        return out

    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": str(rv),
                     "labels": {"app": name.split("-")[0]},
                     "managedFields": [{"manager": "kubelet", "operation": "Update",
                                        "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}}}}}}]},
        "spec": {"nodeName": NODE, "containers": [{"name": c[0], "image": "x"} for c in containers]},
        "status": {"phase": "Running", "podIP": "10.0.0.7",
                   "initContainerStatuses": statuses(init_containers), "containerStatuses": statuses(containers)},
    }


def pod_list(rv, pods):
    return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": str(rv)}, "items": list(pods)}


def event(type_, obj):
    return {"type": type_, "object": obj}


def bookmark(rv):
    return event("BOOKMARK", {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": str(rv)}})


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _send(self, code, body):
        data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        api = self.server.api
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        auth = self.headers.get("Authorization")
        kind = "watch" if query.get("watch") in ("1", "true") else "list"
        with api.lock:
            api.requests.append({"path": url.path, "query": query, "kind": kind})
            if auth != "Bearer " + api.token:
                api.errors.append(f"request without the right bearer token: {auth!r}")
                step = {"status": 401, "body": status(401, "Unauthorized", "Unauthorized")}
            elif url.path != "/api/v1/pods":
                api.errors.append(f"unexpected path {url.path}")
                step = {"status": 404, "body": status(404, "NotFound", "not found")}
            elif not api.steps:
                step = {"kind": kind, "hold": True, "events": []} if kind == "watch" else \
                    {"status": 500, "body": status(500, "InternalError", "no more steps")}
                if kind == "list":
                    api.errors.append("a list request after the last step")
            else:
                step = api.steps.pop(0)
                if step["kind"] != kind:
                    api.errors.append(f"step {api.done}: expected a {step['kind']}, got a {kind} ({self.path})")
                for key, want in step.get("check", {}).items():
                    if query.get(key) != want:
                        api.errors.append(f"step {api.done}: {key}={query.get(key)!r}, expected {want!r} ({self.path})")
                api.done += 1
            api.cond.notify_all()
        try:
            code = step.get("status", 200)
            if "raw" in step:
                self._send(code, step["raw"])
            elif kind == "list" or code != 200:
                self._send(code, step.get("body", ""))
            else:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for ev in step.get("events", []):
                    self._chunk(ev if isinstance(ev, str) else json.dumps(ev) + "\n")
                if step.get("hold"):
                    api.release.wait()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass


class FakeAPI:
    """Serve steps (see the module's comment) over HTTPS on 127.0.0.1 with the certificate at cert/key."""

    def __init__(self, cert, key, steps, token=TOKEN):
        self.steps = list(steps)
        self.token = token
        self.requests, self.errors = [], []
        self.done = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.release = threading.Event()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.api = self
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.httpd.handle_error = lambda request, address: None  # failed handshakes are part of the tests
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self):
        return self.httpd.server_address[1]

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def wait_done(self, n, timeout=10):
        """Wait until n steps were taken; False on timeout."""
        end = time.monotonic() + timeout
        with self.cond:
            while self.done < n:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
