#!/usr/bin/python3
"""A one-time code (RFC 6238: HMAC-SHA1, 6 digits, 30 s), as an
authenticator app computes it, for the two-factor tests.

usage: totp_code.py SECRET STATEFILE [OFFSET]

SECRET is base32 (spaces allowed).  The box takes a code of the step
before, the current one or the next, and each step once: STATEFILE keeps
the last step handed out.  The code printed is for the current step, or
the next one when the current one was used (waiting, at most 30 s, when
both were): either stays in the box's window for at least 30 s, so a busy
machine's delay before the box checks it cannot make it too old (the step
before would be, once the clock reaches the next step).  OFFSET (default 0)
shifts the step: -5 gives a code the box must refuse as too old."""
import base64
import hmac
import os
import struct
import sys
import time

secret, state = sys.argv[1].replace(" ", ""), sys.argv[2]
offset = int(sys.argv[3]) if len(sys.argv) > 3 else 0
key = base64.b32decode(secret + "=" * (-len(secret) % 8))
last = int(open(state).read()) if os.path.exists(state) else -1
while True:
    now = int(time.time() // 30)
    step = max(last + 1, now)
    if step <= now + 1:
        break
    time.sleep(1)
step += offset
if offset == 0:
    with open(state, "w") as f:
        f.write(str(step))
mac = hmac.new(key, struct.pack(">Q", step), "sha1").digest()
o = mac[-1] & 15
print("%06d" % ((struct.unpack(">I", mac[o:o + 4])[0] & 0x7FFFFFFF) % 1000000))
