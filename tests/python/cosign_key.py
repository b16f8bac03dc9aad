"""Writes an ECDSA P-256 key pair in the files `cosign generate-key-pair` writes, made with
libraries forge does not share code with (cryptography for the key, hashlib's scrypt for the
key derivation, PyNaCl, libsodium's secretbox, for the sealing):

    cosign_key.py PREFIX PASSWORD [LABEL [N]]

PREFIX.key: a PEM block LABEL (default `ENCRYPTED SIGSTORE PRIVATE KEY`; cosign 1 wrote
`ENCRYPTED COSIGN PRIVATE KEY`) whose bytes are the JSON cosign seals a key in, with the
scrypt cost N (default 65536, what cosign 2 writes; cosign 1 wrote 32768):
`{"kdf": {"name": "scrypt", "params": {"N": N, "r": 8, "p": 1}, "salt": B64},
"cipher": {"name": "nacl/secretbox", "nonce": B64}, "ciphertext": B64}`, the plaintext the
key's PKCS#8 DER, the secretbox key scrypt(PASSWORD, salt) of 32 bytes. PREFIX.pub: the SPKI
PEM public key.
"""

import base64
import hashlib
import json
import os
import sys
import textwrap

import nacl.secret
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def main(prefix, password, label="ENCRYPTED SIGSTORE PRIVATE KEY", cost="65536"):
    cost = int(cost)
    key = ec.generate_private_key(ec.SECP256R1())
    der = key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    salt, nonce = os.urandom(32), os.urandom(24)
    box_key = hashlib.scrypt(
        password.encode(), salt=salt, n=cost, r=8, p=1, dklen=32, maxmem=256 * 1024 * 1024
    )
    ciphertext = nacl.secret.SecretBox(box_key).encrypt(der, nonce).ciphertext
    b64 = lambda data: base64.b64encode(data).decode()
    sealed = json.dumps(
        {
            "kdf": {"name": "scrypt", "params": {"N": cost, "r": 8, "p": 1}, "salt": b64(salt)},
            "cipher": {"name": "nacl/secretbox", "nonce": b64(nonce)},
            "ciphertext": b64(ciphertext),
        }
    ).encode()
    body = "\n".join(textwrap.wrap(b64(sealed), 64))
    with open(prefix + ".key", "w", encoding="ascii") as file:
        file.write(f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n")
    with open(prefix + ".pub", "wb") as file:
        file.write(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4, 5):
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
