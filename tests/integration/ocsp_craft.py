#!/usr/bin/python3
"""Craft an OCSP response `openssl ocsp` cannot make: one whose validity lies
in the past (an expired answer a broken or replaying responder might send),
or an older answer than the responder gives now (a replayed one).

  ocsp_craft.py ISSUER_PEM ISSUER_KEY LEAF_PEM THIS_OFFSET NEXT_OFFSET OUT_DER [STATUS]

Offsets are seconds relative to now (negative = in the past); NEXT_OFFSET
"none" leaves nextUpdate out.  STATUS is good (the default) or revoked
(revoked at thisUpdate, keyCompromise).  Signed by the issuer's key
(responder id by key hash)."""
import datetime
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509 import ocsp


def main():
    issuer = x509.load_pem_x509_certificate(open(sys.argv[1], "rb").read())
    key = serialization.load_pem_private_key(open(sys.argv[2], "rb").read(), None)
    leaf = x509.load_pem_x509_certificate(open(sys.argv[3], "rb").read())
    now = datetime.datetime.utcnow().replace(microsecond=0)
    this = now + datetime.timedelta(seconds=int(sys.argv[4]))
    nxt = None if sys.argv[5] == "none" else now + datetime.timedelta(seconds=int(sys.argv[5]))
    revoked = len(sys.argv) > 7 and sys.argv[7] == "revoked"
    b = ocsp.OCSPResponseBuilder().add_response(
        cert=leaf, issuer=issuer, algorithm=hashes.SHA1(),
        cert_status=ocsp.OCSPCertStatus.REVOKED if revoked else ocsp.OCSPCertStatus.GOOD,
        this_update=this, next_update=nxt, revocation_time=this if revoked else None,
        revocation_reason=x509.ReasonFlags.key_compromise if revoked else None)
    resp = b.responder_id(ocsp.OCSPResponderEncoding.HASH, issuer).sign(key, hashes.SHA256())
    open(sys.argv[6], "wb").write(resp.public_bytes(serialization.Encoding.DER))


if __name__ == "__main__":
    main()
