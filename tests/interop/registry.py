"""A small npm registry on loopback, for the install tests: it takes `npm publish`
(PUT /NAME with the tarball attached) and serves packuments (GET /NAME) and
tarballs (GET /NAME/-/FILE.tgz) the way the npm client expects.

Verdaccio, the usual choice, cannot be installed from this project's registry (its
dependencies ask for a dist-tag that is not there), so the protocol subset npm uses
is implemented here, with the standard library only.

Usage: python3 registry.py STORAGE_DIR   (prints the port on the first line)
"""

import base64
import json
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STORAGE = sys.argv[1]
os.makedirs(STORAGE, exist_ok=True)


def packument_path(name):
    return os.path.join(STORAGE, urllib.parse.quote(name, safe="") + ".json")


class Registry(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = urllib.parse.unquote(self.path.split("?")[0]).lstrip("/")
        if "/-/" in path:
            name, file = path.split("/-/", 1)
            tarball = os.path.join(STORAGE, os.path.basename(file))
            if os.path.exists(tarball):
                with open(tarball, "rb") as handle:
                    return self.reply(200, handle.read(), "application/octet-stream")
            return self.reply(404, {"error": "not found"})
        if os.path.exists(packument_path(path)):
            with open(packument_path(path)) as handle:
                return self.reply(200, json.load(handle))
        return self.reply(404, {"error": "not found"})

    def do_PUT(self):
        name = urllib.parse.unquote(self.path.split("?")[0]).lstrip("/")
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        stored = {"name": name, "versions": {}, "dist-tags": {}}
        if os.path.exists(packument_path(name)):
            with open(packument_path(name)) as handle:
                stored = json.load(handle)
        host = self.headers.get("Host")
        for file, attachment in body.get("_attachments", {}).items():
            with open(os.path.join(STORAGE, os.path.basename(file)), "wb") as handle:
                handle.write(base64.b64decode(attachment["data"]))
        for version, manifest in body.get("versions", {}).items():
            if version in stored["versions"]:
                return self.reply(409, {"error": "version exists"})
            tarball = os.path.basename(manifest["dist"]["tarball"])
            manifest["dist"]["tarball"] = f"http://{host}/{name}/-/{tarball}"
            stored["versions"][version] = manifest
        stored["dist-tags"].update(body.get("dist-tags", {}))
        with open(packument_path(name), "w") as handle:
            json.dump(stored, handle)
        return self.reply(201, {"ok": True})


server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
print(server.server_address[1], flush=True)
server.serve_forever()
