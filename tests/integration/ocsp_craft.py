#!/usr/bin/python3
"""Craft an OCSP response `openssl ocsp` cannot make: one whose validity lies
in the past (an expired answer a broken or replaying responder might send).

  ocsp_craft.py ISSUER_PEM ISSUER_KEY LEAF_PEM THIS_OFFSET NEXT_OFFSET OUT_DER

Offsets are seconds relative to now (negative = in the past).  Status good,
signed by the issuer's key (responder id by key hash)."""
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
    nxt = now + datetime.timedelta(seconds=int(sys.argv[5]))
    b = ocsp.OCSPResponseBuilder().add_response(
        cert=leaf, issuer=issuer, algorithm=hashes.SHA1(), cert_status=ocsp.OCSPCertStatus.GOOD,
        this_update=this, next_update=nxt, revocation_time=None, revocation_reason=None)
    resp = b.responder_id(ocsp.OCSPResponderEncoding.HASH, issuer).sign(key, hashes.SHA256())
    open(sys.argv[6], "wb").write(resp.public_bytes(serialization.Encoding.DER))


if __name__ == "__main__":
    main()
