"""The Python client against servers that authenticate: TLS (trusted and
untrusted certificates, right and wrong server names), mutual TLS (with and
without a client certificate the server trusts), and bearer tokens (token=).
Certificates are made with the openssl CLI; retries are off so a refusal
shows up at once as Unavailable."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import myops_client
from myops_testing import SERVER, quick_server

NAME = "localhost"  # The only name in the server's certificate (the target is 127.0.0.1).


def _identity(directory: pathlib.Path, stem: str) -> tuple[str, str]:
    """A self-signed certificate for NAME and its key, as PEM text."""
    cert, key = directory / f"{stem}.pem", directory / f"{stem}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME}",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True)
    return cert.read_text(), key.read_text()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """PEM identities: the server's, a client's, and a stranger's (trusted by no one)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is needed to make test certificates")
    directory = tmp_path_factory.mktemp("pki")
    ids = {stem: _identity(directory, stem) for stem in ("server", "client", "stranger")}
    for stem, (cert, key) in ids.items():
        (directory / f"{stem}.pem").write_text(cert)
        (directory / f"{stem}.key").write_text(key)
    ids["dir"] = directory
    return ids


@pytest.fixture(scope="module")
def tls_server(pki):
    s = quick_server("--tls-cert", str(pki["dir"] / "server.pem"),
               "--tls-key", str(pki["dir"] / "server.key"))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def mtls_server(pki):
    s = quick_server("--tls-cert", str(pki["dir"] / "server.pem"),
               "--tls-key", str(pki["dir"] / "server.key"),
               "--tls-client-ca", str(pki["dir"] / "client.pem"))
    yield s
    s.stop()


def _client(address: str, root: str, name: str = NAME, **kwargs) -> myops_client.Client:
    return myops_client.Client(
        address, timeout=20, retries=0, root_certificates=root,
        channel_args={"grpc.ssl_target_name_override": name}, **kwargs)


def _works(client: myops_client.Client) -> None:
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(client.scale_shift(x, 2.0, 1.0), 2 * x + 1)


def test_tls_trusted_certificate_and_name(tls_server, pki):
    with _client(tls_server.address, pki["server"][0]) as client:
        _works(client)


def test_tls_untrusted_certificate_is_refused(tls_server, pki):
    with _client(tls_server.address, pki["stranger"][0]) as client:
        with pytest.raises(myops_client.Unavailable):
            client.health()


def test_tls_wrong_server_name_is_refused(tls_server, pki):
    with _client(tls_server.address, pki["server"][0], name="other.example") as client:
        with pytest.raises(myops_client.Unavailable):
            client.health()


def test_mtls_with_a_trusted_client_certificate(mtls_server, pki):
    cert, key = pki["client"]
    with _client(mtls_server.address, pki["server"][0], certificate_chain=cert,
                 private_key=key) as client:
        _works(client)


def test_mtls_refuses_clients_without_a_trusted_certificate(mtls_server, pki):
    with _client(mtls_server.address, pki["server"][0]) as client:
        with pytest.raises(myops_client.Unavailable):
            client.health()
    cert, key = pki["stranger"]
    with _client(mtls_server.address, pki["server"][0], certificate_chain=cert,
                 private_key=key) as client:
        with pytest.raises(myops_client.Unavailable):
            client.health()


def test_mtls_client_still_checks_the_server(mtls_server, pki):
    cert, key = pki["client"]
    for root, name in ((pki["stranger"][0], NAME), (pki["server"][0], "other.example")):
        with _client(mtls_server.address, root, name=name, certificate_chain=cert,
                     private_key=key) as client:
            with pytest.raises(myops_client.Unavailable):
                client.health()


# ---- bearer tokens -----------------------------------------------------------

TOKEN = "py-tok.9c1e"


@pytest.fixture(scope="module")
def token_server(tmp_path_factory):
    path = tmp_path_factory.mktemp("auth") / "token"
    path.write_text(TOKEN + "\n")
    s = quick_server("--auth-token-file", str(path))
    yield s
    s.stop()


def test_token_is_sent_on_every_call(token_server):
    with myops_client.Client(token_server.address, timeout=20, token=TOKEN) as client:
        _works(client)
        assert client.server_info()["myops_version"]
        assert client.health() is True


@pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x"])
def test_missing_or_wrong_token_is_unauthenticated(token_server, token):
    with myops_client.Client(token_server.address, timeout=20, token=token) as client:
        for call in (lambda: client.scale_shift(np.ones(2, np.float32), 2.0, 1.0),
                     client.server_info):
            with pytest.raises(myops_client.Unauthenticated) as error:
                call()
            assert error.value.code_name == "UNAUTHENTICATED"
            assert "authorization: Bearer <token>" in error.value.details
            if token is not None:
                assert token not in error.value.details
        assert client.health() is True  # Probes need no token.


def test_token_must_be_visible_ascii():
    for bad in ("two words", "line\n", "caf\u00e9", ""):
        if bad == "":
            myops_client.Client("localhost:1", token=bad).close()  # Empty: no token.
            continue
        with pytest.raises(ValueError, match=r"^token must be visible ASCII "
                                             r"\(characters 0x21 to 0x7e\); byte \d+ of "
                                             r"its UTF-8 is 0x") as error:
            myops_client.Client("localhost:1", token=bad)
        assert bad not in str(error.value)


@pytest.mark.skipif(bool(os.environ.get("MYOPS_TEST_LAUNCHER")),
                    reason="runs the server binary itself, which cannot run where the "
                           "launcher starts servers (client_helpers.HostProcess)")
def test_server_refuses_to_start_with_an_empty_token_file(tmp_path):
    path = tmp_path / "empty"
    path.write_text("\n")
    done = subprocess.run([str(SERVER), "--address", "127.0.0.1:0", "--devices", "cpu",
                           "--auth-token-file", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert f'--auth-token-file: "{path}" holds no token' in done.stderr
