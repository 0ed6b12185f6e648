"""A certificate authority made at test time with the ``openssl`` command line: a CA, a server certificate
for 127.0.0.1 signed by it, and a client certificate (key and certificate in one PEM, as pip's
``client-cert`` takes it)."""

from __future__ import annotations

import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class MadeCA:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_pem: Path  # client key + certificate

    def server_context(self, *, require_client_cert: bool = False) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.server_cert, self.server_key)
        if require_client_cert:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.ca_cert)
        return context


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(folder: Path) -> MadeCA:
    folder.mkdir(parents=True, exist_ok=True)
    subj = "/CN=abiprobe test CA"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", subj, "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)  # fmt: skip
    (folder / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
    )
    (folder / "client.ext").write_text("extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n")
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=folder)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
                 cwd=folder)  # fmt: skip
    client = folder / "client-bundle.pem"
    client.write_text((folder / "client.key").read_text() + (folder / "client.pem").read_text())
    return MadeCA(folder / "ca.pem", folder / "server.pem", folder / "server.key", client)
