"""Judges forge's attachments with libraries forge does not share code with, and with the
rules of their specifications written here apart from forge.

    attest_check.py sbom FILE            the CycloneDX 1.5 JSON schema (cyclonedx-python-lib's
                                         strict validator), then every package URL (packageurl-python)
                                         and URL (RFC 3986) in it, and its serial number (a UUID)
    attest_check.py dsse FILE PUB KEYID  the DSSE envelope's signature (securesystemslib), by the key PUB named KEYID
    attest_check.py provenance FILE      the in-toto Statement v1 (in-toto-attestation, strict) of
                                         SLSA provenance v1 (its protobuf, strict) the DSSE envelope
                                         FILE carries, and the MUSTs and SHOULDs of both specifications

Prints `valid` and exits 0, or prints what is wrong and exits 1. A SHOULD that is not met is a
line `should: ...`, printed after `valid`.
"""

import base64
import json
import re
import sys


def is_uri(text):
    from rfc3986_validator import validate_rfc3986

    return bool(validate_rfc3986(text, rule="URI"))


def walk(value, found):
    """Calls found(key, value) for every member of every object in value."""
    if isinstance(value, dict):
        for key, inner in value.items():
            found(key, inner)
            walk(inner, found)
    elif isinstance(value, list):
        for inner in value:
            walk(inner, found)


def sbom(path):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    from packageurl import PackageURL

    with open(path, encoding="utf-8") as file:
        text = file.read()
    errors = JsonStrictValidator(SchemaVersion.V1_5).validate_str(text)
    if errors:
        print(f"invalid: {str(errors).splitlines()[0]}")
        return 1
    document = json.loads(text)
    problems = []

    def found(key, value):
        if key == "purl":
            try:
                canonical = PackageURL.from_string(value).to_string()
            except ValueError as error:
                problems.append(f"purl {value!r}: {error}")
            else:
                if canonical != value:
                    problems.append(f"purl {value!r} is not in canonical form ({canonical!r})")
        if key == "url" and not is_uri(value):
            problems.append(f"url {value!r} is not an RFC 3986 URI")

    walk(document, found)
    serial = document.get("serialNumber", "")
    if not re.fullmatch(r"urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", serial):
        problems.append(f"serialNumber {serial!r} is not an RFC 4122 UUID URN")
    for component in document.get("components", []):
        if component.get("type") == "container" and "purl" not in component:
            problems.append(f"container {component.get('name')!r} has no purl")
    if problems:
        print("invalid: " + "; ".join(problems))
        return 1
    print("valid")
    return 0


# The lengths of the hex digests the in-toto digest set names (the others are not used here).
DIGEST_LENGTHS = {"sha256": 64, "sha512": 128, "sha1": 40, "gitCommit": (40, 64), "gitBlob": (40, 64)}


def descriptor_problems(where, descriptor, musts, shoulds):
    from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
    from in_toto_attestation.v1.resource_descriptor_pb2 import ResourceDescriptor as Proto
    from google.protobuf import json_format

    try:
        ResourceDescriptor.copy_from_pb(json_format.ParseDict(descriptor, Proto())).validate()
    except (ValueError, json_format.ParseError) as error:
        musts.append(f"{where}: {error}")
        return
    for field in ("uri", "downloadLocation"):
        if field in descriptor and not is_uri(descriptor[field]):
            musts.append(f"{where}: {field} {descriptor[field]!r} is not an RFC 3986 URI")
    digest = descriptor.get("digest", {})
    for algorithm, value in digest.items():
        lengths = DIGEST_LENGTHS.get(algorithm)
        if lengths is None:
            shoulds.append(f"{where}: digest algorithm {algorithm!r} is not one the digest set names")
            continue
        lengths = lengths if isinstance(lengths, tuple) else (lengths,)
        if not re.fullmatch(r"[0-9a-f]+", value) or len(value) not in lengths:
            musts.append(f"{where}: {algorithm} {value!r} is not lowercase hex of its length")
    if not digest:
        shoulds.append(f"{where}: no digest")
    for key in descriptor.get("annotations", {}):
        if "." not in key and "/" not in key:
            shoulds.append(f"{where}: annotation {key!r} is not namespaced")


def provenance(path):
    from google.protobuf import json_format
    from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
    from in_toto_attestation.v1.statement import Statement
    from in_toto_attestation.v1.statement_pb2 import Statement as StatementProto
    from rfc3339_validator import validate_rfc3339

    with open(path, encoding="utf-8") as file:
        envelope = json.load(file)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    musts, shoulds = [], []
    try:
        Statement.copy_from_pb(json_format.ParseDict(statement, StatementProto())).validate()
        json_format.ParseDict(statement["predicate"], provenance_pb2.Provenance())
    except (ValueError, KeyError, json_format.ParseError) as error:
        print(f"invalid: {error}")
        return 1
    if statement["predicateType"] != "https://slsa.dev/provenance/v1":
        musts.append(f"predicateType {statement['predicateType']!r}")
    for index, subject in enumerate(statement["subject"]):
        descriptor_problems(f"subject[{index}]", subject, musts, shoulds)
    predicate = statement["predicate"]
    definition = predicate.get("buildDefinition", {})
    run = predicate.get("runDetails", {})
    if not is_uri(definition.get("buildType", "")):
        musts.append(f"buildType {definition.get('buildType')!r} is not a URI")
    if not isinstance(definition.get("externalParameters"), dict):
        musts.append("externalParameters is not an object")
    builder = run.get("builder", {}).get("id", "")
    if not is_uri(builder):
        musts.append(f"builder.id {builder!r} is not a URI")
    for index, dependency in enumerate(definition.get("resolvedDependencies", [])):
        name = dependency.get("name") or dependency.get("uri") or index
        descriptor_problems(f"resolvedDependencies[{name}]", dependency, musts, shoulds)
    for index, product in enumerate(run.get("byproducts", [])):
        descriptor_problems(f"byproducts[{index}]", product, musts, shoulds)
    for field in ("startedOn", "finishedOn"):
        stamp = run.get("metadata", {}).get(field)
        if stamp is not None and not validate_rfc3339(stamp):
            musts.append(f"metadata.{field} {stamp!r} is not RFC 3339")
    if musts:
        print("invalid: " + "; ".join(musts))
        return 1
    print("valid")
    for should in shoulds:
        print(f"should: {should}")
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
    if sys.argv[1:2] == ["provenance"] and len(sys.argv) == 3:
        sys.exit(provenance(sys.argv[2]))
    if sys.argv[1:2] == ["dsse"] and len(sys.argv) == 5:
        sys.exit(dsse(sys.argv[2], sys.argv[3], sys.argv[4]))
    print(__doc__)
    sys.exit(2)
