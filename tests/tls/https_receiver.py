#!/usr/bin/env python3
"""https_receiver: the TLS tests' webhook receiver (python3's http.server in
ssl, CERT_REQUIRED: a client without a certificate from the CA is refused
in the handshake).

    https_receiver.py CERT KEY CA PORT_FILE RECORDS

Listens on a kernel-chosen 127.0.0.1 port (written to PORT_FILE once
ready), answers every POST 200 and appends to RECORDS one line per request:
"<X-Event-Id> <client certificate CN>". Failed handshakes are one line each
on stderr. Stops on SIGTERM.
"""
import http.server
import os
import signal
import ssl
import sys
import threading

cert, key, ca, port_file, records_path = sys.argv[1:6]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.load_verify_locations(ca)
ctx.verify_mode = ssl.CERT_REQUIRED
records = open(records_path, "a", buffering=1)
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the driver's connections

    def setup(self):
        super().setup()
        self.connection.do_handshake()  # in this connection's thread

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        cn = dict(x[0] for x in self.connection.getpeercert()["subject"]).get("commonName", "?")
        with lock:
            records.write("%s %s\n" % (self.headers.get("X-Event-Id", "-"), cn))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, fmt, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def get_request(self):
        sock, addr = self.socket.accept()
        return ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request, client_address):
        print("handshake or request failed: %s" % sys.exc_info()[1], file=sys.stderr, flush=True)


server = Server(("127.0.0.1", 0), Handler)
signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % server.server_address[1])
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
