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


def server_pem(directory, name, subject="/CN=localhost", san="IP:127.0.0.1,DNS:localhost",
               ca="ca"):
    """A new server key + certificate signed by `<ca>.pem` / `<ca>.key` in `directory`, written
    as `<name>.pem` (key then certificate); returns its path."""
    with open(os.path.join(directory, name + ".cnf"), "w") as f:
        f.write("subjectAltName=%s\n" % san)
    _key(name + ".key", directory)
    _run("req", "-new", "-key", name + ".key", "-out", name + ".csr", "-subj", subject,
         cwd=directory)
    _run("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
         "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".cnf",
         cwd=directory)
    path = os.path.join(directory, name + ".pem")
    with open(path, "w") as out:
        for part in (name + ".key", name + ".crt"):
            with open(os.path.join(directory, part)) as f:
                out.write(f.read())
    return path


def make_ca(directory, name, subject):
    """A CA key and certificate `<name>.key` / `<name>.pem` in `directory`; returns the .pem."""
    _key(name + ".key", directory)
    _run("req", "-x509", "-new", "-key", name + ".key", "-out", name + ".pem", "-days", "2",
         "-subj", subject, cwd=directory)
    return os.path.join(directory, name + ".pem")


def make_pki(directory, clients=("alice",)):
    """Writes ca.pem, server.pem (key + certificate) and <client>.key/.crt into `directory`.
    Returns a dict of their paths."""
    os.makedirs(directory, exist_ok=True)
    make_ca(directory, "ca", "/CN=Strata Test CA")

    def sign(name, subject):
        _key(name + ".key", directory)
        _run("req", "-new", "-key", name + ".key", "-out", name + ".csr", "-subj", subject,
             cwd=directory)
        _run("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", name + ".crt", "-days", "2", cwd=directory)

    paths = {"ca": os.path.join(directory, "ca.pem"),
             "server": server_pem(directory, "server")}
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
