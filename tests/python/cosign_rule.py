"""Judges what a registry holds under cosign's tags for one image, by the rule cosign verifies
with a key, written from its documented behaviour and the specifications (simple signing,
DSSE, in-toto Statement v1), sharing no code with forge:

    cosign_rule.py REGISTRY REPOSITORY REFERENCE PUB

REGISTRY is `host:port` (plain HTTP, loopback), REPOSITORY the path in it, REFERENCE a tag or
digest, PUB a PEM public key (ECDSA P-256). Prints one JSON object and exits 0:

    {"manifest": "sha256:...", "signature": bool, "attestation": bool}

`signature` holds when at least one simple-signing layer of `sha256-HEX.sig` is signed by PUB
(ECDSA over SHA-256 of the payload) and its payload names this manifest digest (cosign checks
the digest its payload claims, not the repository or the type it names).
`attestation` holds when at least one layer of `sha256-HEX.att` is a DSSE envelope with a
signature by PUB over its pre-authentication encoding, whose payload is an in-toto Statement
v1 of SLSA provenance v1 with this manifest among its subjects. Every other layer is ignored,
whatever it holds and wherever it comes in the list.
"""

import base64
import hashlib
import json
import sys
import urllib.error
import urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

MANIFEST_TYPES = ", ".join(
    [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ]
)
SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
STATEMENT = "https://in-toto.io/Statement/v1"
SLSA_PROVENANCE = "https://slsa.dev/provenance/v1"


def get(registry, path, accept=None):
    request = urllib.request.Request(f"http://{registry}{path}")
    if accept:
        request.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def verifies(public, message, signature):
    try:
        public.verify(signature, message, ec.ECDSA(hashes.SHA256()))
        return True
    except (InvalidSignature, ValueError):
        return False


def layers(registry, repository, tag):
    body = get(registry, f"/v2/{repository}/manifests/{tag}", MANIFEST_TYPES)
    if body is None:
        return []
    return json.loads(body).get("layers", [])


def blob(registry, repository, digest):
    return get(registry, f"/v2/{repository}/blobs/{digest}")


def signature_holds(registry, repository, digest, public):
    tag = digest.replace(":", "-") + ".sig"
    for layer in layers(registry, repository, tag):
        if layer.get("mediaType") != SIMPLE_SIGNING:
            continue
        payload = blob(registry, repository, layer["digest"])
        try:
            signature = base64.b64decode(layer.get("annotations", {}).get(SIGNATURE_ANNOTATION, ""))
            critical = json.loads(payload)["critical"]
        except (ValueError, KeyError, TypeError):
            continue
        if not verifies(public, payload, signature):
            continue
        if critical.get("image", {}).get("docker-manifest-digest") == digest:
            return True
    return False


def pre_authentication(payload_type, payload):
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def attestation_holds(registry, repository, digest, public):
    tag = digest.replace(":", "-") + ".att"
    hex_digest = digest.split(":", 1)[1]
    for layer in layers(registry, repository, tag):
        try:
            envelope = json.loads(blob(registry, repository, layer["digest"]))
            payload = base64.b64decode(envelope["payload"])
            signed = pre_authentication(envelope["payloadType"], payload)
            signatures = [base64.b64decode(entry["sig"]) for entry in envelope["signatures"]]
            statement = json.loads(payload)
        except (ValueError, KeyError, TypeError):
            continue
        if not any(verifies(public, signed, signature) for signature in signatures):
            continue
        if statement.get("_type") != STATEMENT or statement.get("predicateType") != SLSA_PROVENANCE:
            continue
        subjects = statement.get("subject") or []
        if any(subject.get("digest", {}).get("sha256") == hex_digest for subject in subjects):
            return True
    return False


def main(registry, repository, reference, public_path):
    with open(public_path, "rb") as file:
        public = serialization.load_pem_public_key(file.read())
    body = get(registry, f"/v2/{repository}/manifests/{reference}", MANIFEST_TYPES)
    if body is None:
        print(json.dumps({"manifest": None, "signature": False, "attestation": False}))
        return 0
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    print(
        json.dumps(
            {
                "manifest": digest,
                "signature": signature_holds(registry, repository, digest, public),
                "attestation": attestation_holds(registry, repository, digest, public),
            }
        )
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
