#!/usr/bin/env python3
"""notify_listen.py ADDRESS OUT: plays the service manager's side of the
notification protocol. Binds a unix datagram socket at ADDRESS (a path, or
@name for the abstract namespace) and appends each datagram to OUT as one
line (its newlines turned into spaces), until killed."""
import os
import socket
import sys

address, out = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind("\0" + address[1:] if address.startswith("@") else address)
with open(out + ".tmp", "w"):
    pass
os.rename(out + ".tmp", out)  # OUT exists once the socket listens
with open(out, "a", buffering=1) as f:
    while True:
        data = sock.recv(4096).decode("utf-8", "replace")
        f.write(data.replace("\n", " ") + "\n")
