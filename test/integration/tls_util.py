"""Test certificates made with the openssl CLI: a CA, a server certificate for 127.0.0.1 (SAN
IP:127.0.0.1 and DNS:localhost, because librdkafka and Python verify the host name), and client
certificates whose subjects become mTLS principals. EC P-256 keys: quick to make."""
import os
import subprocess


def _run(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _key(name, cwd):
    _run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name,
         cwd=cwd)


def make_pki(directory, clients=("alice",)):
    """Writes ca.pem, server.pem (key + certificate) and <client>.key/.crt into `directory`.
    Returns a dict of their paths."""
    os.makedirs(directory, exist_ok=True)
    _key("ca.key", directory)
    _run("req", "-x509", "-new", "-key", "ca.key", "-out", "ca.pem", "-days", "2",
         "-subj", "/CN=Strata Test CA", cwd=directory)
    with open(os.path.join(directory, "san.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")

    def sign(name, subject, ext=None):
        _key(name + ".key", directory)
        _run("req", "-new", "-key", name + ".key", "-out", name + ".csr", "-subj", subject,
             cwd=directory)
        args = ["x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".crt", "-days", "2"]
        if ext:
            args += ["-extfile", ext]
        _run(*args, cwd=directory)

    sign("server", "/CN=localhost", "san.cnf")
    with open(os.path.join(directory, "server.pem"), "w") as out:
        for part in ("server.key", "server.crt"):
            with open(os.path.join(directory, part)) as f:
                out.write(f.read())
    paths = {"ca": os.path.join(directory, "ca.pem"),
             "server": os.path.join(directory, "server.pem")}
    for c in clients:
        sign(c, "/O=Strata/OU=eng/CN=" + c)
        paths[c + "_key"] = os.path.join(directory, c + ".key")
        paths[c + "_crt"] = os.path.join(directory, c + ".crt")
    # A client certificate from a CA the broker does not trust.
    other = os.path.join(directory, "other")
    os.makedirs(other, exist_ok=True)
    _key("ca.key", other)
    _run("req", "-x509", "-new", "-key", "ca.key", "-out", "ca.pem", "-days", "2",
         "-subj", "/CN=Untrusted CA", cwd=other)
    _key("mallory.key", other)
    _run("req", "-new", "-key", "mallory.key", "-out", "mallory.csr", "-subj", "/CN=mallory",
         cwd=other)
    _run("x509", "-req", "-in", "mallory.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "mallory.crt", "-days", "2", cwd=other)
    paths["mallory_key"] = os.path.join(other, "mallory.key")
    paths["mallory_crt"] = os.path.join(other, "mallory.crt")
    return paths
