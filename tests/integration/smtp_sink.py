#!/usr/bin/python3
"""A real SMTP server on loopback for the notify plugin's mail tests
(aiosmtpd, Debian's python3-aiosmtpd): it takes each mail and writes it to
DIR/N.json as {"mail_from", "rcpt_tos", "tls", "user", "data"}.

  smtp_sink.py PORT DIR [--tls CERT KEY] [--implicit] [--auth USER PASSWORD]
                       [--refuse ADDRESS]... [--greylist ADDRESS]... [--hold FILE]

--tls offers STARTTLS with CERT/KEY (and then requires it before MAIL);
with --implicit the port speaks TLS from the first byte (smtps) instead.
--auth requires a login (PLAIN or LOGIN), over TLS only.  Without --tls,
no STARTTLS is offered.  --refuse answers RCPT TO:<ADDRESS> with 550, as
a server does for an unknown user.  --greylist answers the first RCPT
TO:<ADDRESS> with 450 (greylisting: "try again later") and takes the next
ones.  While FILE (--hold) exists, MAIL FROM is held unanswered (a slow
server), FILE.held written meanwhile: a client that hangs up then has sent
no mail.  Runs until killed."""
import asyncio
import json
import os
import ssl
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Sink:
    def __init__(self, out, refuse, greylist, hold):
        self.out = out
        self.refuse = refuse
        self.greylist = set(greylist)
        self.hold = hold
        self.n = 0
        self.lock = threading.Lock()

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        if self.hold and os.path.exists(self.hold):
            with open(self.hold + ".held", "w") as f:
                f.write("1")
            for _ in range(1200):  # at most 120 s
                if not os.path.exists(self.hold):
                    break
                await asyncio.sleep(0.1)
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.refuse:
            return "550 5.1.1 <%s>: no such user here" % address
        if address in self.greylist:
            self.greylist.discard(address)
            return "450 4.2.0 <%s>: greylisted, try again later" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.n += 1
            n = self.n
        rec = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            # STARTTLS sets session.ssl; implicit TLS shows on the transport.
            "tls": session.ssl is not None or
                   server.transport.get_extra_info("ssl_object") is not None,
            "user": session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None,
            "data": envelope.original_content.decode("utf-8", "replace"),
        }
        tmp = os.path.join(self.out, f".{n}.json")
        with open(tmp, "w") as f:
            json.dump(rec, f)
        os.rename(tmp, os.path.join(self.out, f"{n}.json"))
        return "250 OK: queued as %d" % n


def main():
    args = sys.argv[1:]
    port, out = int(args[0]), args[1]
    kw = {}
    implicit = "--implicit" in args
    if "--tls" in args:
        i = args.index("--tls")
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(args[i + 1], args[i + 2])
        if implicit:
            kw["ssl_context"] = ctx
        else:
            kw["tls_context"] = ctx
            kw["require_starttls"] = True
    if "--auth" in args:
        i = args.index("--auth")
        user, password = args[i + 1].encode(), args[i + 2].encode()

        def check(server, session, envelope, mechanism, auth_data):
            ok = isinstance(auth_data, LoginPassword) and \
                auth_data.login == user and auth_data.password == password
            # handled=False: aiosmtpd answers 535 itself.
            return AuthResult(success=ok, handled=False, auth_data=auth_data)

        kw["authenticator"] = check
        kw["auth_required"] = True
        # Over STARTTLS, AUTH only once TLS is up; with --implicit the whole
        # connection is TLS (aiosmtpd would not offer AUTH if asked to wait).
        kw["auth_require_tls"] = not implicit
    else:
        kw["auth_require_tls"] = False
    refuse = [args[i + 1] for i, a in enumerate(args) if a == "--refuse"]
    greylist = [args[i + 1] for i, a in enumerate(args) if a == "--greylist"]
    hold = args[args.index("--hold") + 1] if "--hold" in args else None
    c = Controller(Sink(out, refuse, greylist, hold), hostname="127.0.0.1", port=port, **kw)
    c.start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
