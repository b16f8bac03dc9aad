"""Judges forge's attachments with libraries forge does not share code with.

    attest_check.py sbom FILE           the CycloneDX 1.5 JSON schema (cyclonedx-python-lib's strict validator)
    attest_check.py dsse FILE PUB KEYID  the DSSE envelope's signature (securesystemslib), by the key PUB named KEYID

Prints `valid` and exits 0, or prints what is wrong and exits 1.
"""

import json
import sys


def sbom(path):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    with open(path, encoding="utf-8") as file:
        errors = JsonStrictValidator(SchemaVersion.V1_5).validate_str(file.read())
    if errors:
        print(f"invalid: {str(errors).splitlines()[0]}")
        return 1
    print("valid")
    return 0


def dsse(path, public, keyid):
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey

    with open(public, encoding="utf-8") as file:
        pem = file.read()
    key = SSlibKey(keyid, "ecdsa", "ecdsa-sha2-nistp256", {"public": pem})
    with open(path, encoding="utf-8") as file:
        envelope = Envelope.from_dict(json.load(file))
    try:
        accepted = envelope.verify([key], 1)
    except VerificationError as error:
        print(f"invalid: {error}")
        return 1
    print(f"valid {envelope.payload_type} {sorted(accepted)}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["sbom"] and len(sys.argv) == 3:
        sys.exit(sbom(sys.argv[2]))
    if sys.argv[1:2] == ["dsse"] and len(sys.argv) == 5:
        sys.exit(dsse(sys.argv[2], sys.argv[3], sys.argv[4]))
    print(__doc__)
    sys.exit(2)
