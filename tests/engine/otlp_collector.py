"""A stand-in OpenTelemetry collector for the tracing test: accepts OTLP/HTTP
JSON on POST /v1/traces, appends each request body (one line) to OUT, and
writes the port it listens on to PORTFILE. Anything else gets 400."""
import http.server
import json
import sys

out, portfile = sys.argv[1], sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        ok = self.path == "/v1/traces" and self.headers.get("Content-Type", "").startswith(
            "application/json")
        if ok:
            json.loads(body)  # a body that does not parse is the relay's bug: fail loudly
            with open(out, "ab") as f:
                f.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(200 if ok else 400)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(portfile + ".tmp", "w") as f:
    f.write(str(server.server_port))
import os  # noqa: E402
os.rename(portfile + ".tmp", portfile)
server.serve_forever()
