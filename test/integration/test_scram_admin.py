"""SCRAM credentials on the wire: DescribeUserScramCredentials (50) and AlterUserScramCredentials
(51) v0 frames built by hand from apache/kafka's message definitions (no Debian or npm client
speaks them), Kafka's rules and error codes, the salted password turned into stored and server
keys exactly as RFC 5802 says (checked against Python's hashlib on the broker's file), durability
across a kill -9, the bootstrap user from `sasl.scram.bootstrap.users` (created once, never
overwritten, its value hidden by DescribeConfigs), `strata user create|list|delete` end to end,
and on a 2-broker cluster (etcd) a credential created through one broker listed by the other.

By hand, from the source root after `ninja -C build`:
    STRATA_BROKER=build/broker/strata-broker STRATA_CLI=build/tools/cli/strata \\
        /usr/bin/python3 test/integration/test_scram_admin.py -v
"""
import base64
import hashlib
import hmac
import json
import os
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_harness  # noqa: E402
from itutil import (BrokerTestCase, RawConn, compact_array, compact_str, uvarint)  # noqa: E402

CLI = os.environ.get("STRATA_CLI") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "tools", "cli", "strata")
API_DESCRIBE, API_ALTER = 50, 51
SHA256, SHA512 = 1, 2
NONE, CLUSTER_AUTHORIZATION_FAILED, UNSUPPORTED_SASL_MECHANISM = 0, 31, 33
RESOURCE_NOT_FOUND, DUPLICATE_RESOURCE, UNACCEPTABLE_CREDENTIAL = 91, 92, 93
TAGS = uvarint(0)
BOOTSTRAP = "SCRAM-SHA-512=[name=admin,password=admin-secret]"


def compact_bytes(b):
    return uvarint(len(b) + 1) + b


def salted_password(mech, password, salt, iterations):
    return hashlib.pbkdf2_hmac("sha256" if mech == SHA256 else "sha512", password.encode(), salt,
                               iterations)


def upsertion(name, mech, password, iterations=4096, salt=None):
    salt = salt or os.urandom(16)
    return (name, mech, iterations, salt, salted_password(mech, password, salt, iterations))


def alter(conn, deletions=(), upsertions=()):
    """→ {user: (error, message)}, and the list of users in answer order."""
    body = compact_array([compact_str(n) + struct.pack(">b", m) + TAGS for n, m in deletions]) + \
        compact_array([compact_str(n) + struct.pack(">bi", m, i) + compact_bytes(s) +
                       compact_bytes(sp) + TAGS for n, m, i, s, sp in upsertions]) + TAGS
    r = conn.request(API_ALTER, 0, body, flexible=True)
    assert r.i32() == 0  # throttle

    def result():
        out = (r.compact_str(), r.i16(), r.compact_str())
        r.tagged()
        return out
    results = r.compact_array(result)
    return {u: (e, m) for u, e, m in results}, [u for u, _, _ in results]


def describe(conn, users=None):
    """→ (error, message, [(user, error, message, [(mechanism, iterations)])])."""
    body = compact_array(None if users is None else
                         [compact_str(u) + TAGS for u in users]) + TAGS
    r = conn.request(API_DESCRIBE, 0, body, flexible=True)
    assert r.i32() == 0
    err, msg = r.i16(), r.compact_str()

    def info():
        out = (r.i8(), r.i32())
        r.tagged()
        return out

    def result():
        out = (r.compact_str(), r.i16(), r.compact_str(), r.compact_array(info))
        r.tagged()
        return out
    return err, msg, r.compact_array(result)


class ScramAdminTest(BrokerTestCase):
    overrides = {"sasl.scram.bootstrap.users": BOOTSTRAP}

    def conn(self):
        c = RawConn(self.broker.port)
        self.addCleanup(c.close)
        return c

    def cli(self, *args, expect=0):
        p = subprocess.run([CLI, "-b", self.broker.bootstrap, "-o", "json"] + list(args),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, expect, "%s\n%s\n%s" % (args, p.stdout, p.stderr))
        return json.loads(p.stdout) if p.stdout.strip() else None

    def stored(self):
        """{(user, mechanism name): {salt, stored_key, server_key, iterations}} from the file."""
        out = {}
        with open(os.path.join(self.broker.data_dir, "logs", "scram-credentials")) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                user, mech, cred = line.rstrip("\n").split("\t")
                fields = dict(kv.split("=", 1) for kv in cred.split(","))
                out[(user, mech)] = fields
        return out

    def test_bootstrap_user_and_its_hidden_config(self):
        err, _, results = describe(self.conn(), ["admin"])
        self.assertEqual(err, NONE)
        self.assertEqual(results, [("admin", NONE, None, [(SHA512, 4096)])])
        from confluent_kafka.admin import AdminClient, ConfigResource
        a = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        res = ConfigResource("broker", "1")
        cfg = a.describe_configs([res])[res].result(30)
        entry = cfg["sasl.scram.bootstrap.users"]
        self.assertTrue(entry.is_sensitive)
        self.assertIsNone(entry.value)
        self.assertFalse(any("admin-secret" in line for line in self.broker.log_lines))

    def test_alter_and_describe_follow_kafkas_rules(self):
        c = self.conn()
        self.assertEqual(alter(c, upsertions=[upsertion("twice", SHA256, "t")])[0],
                         {"twice": (NONE, None)})
        # A user named twice (a valid deletion, then an upsertion) gets DUPLICATE_RESOURCE and
        # neither applies; a user whose first change failed keeps that error (ghost).
        res, order = alter(c, deletions=[("ghost", SHA256), ("", SHA256), ("twice", SHA256)],
                           upsertions=[upsertion("twice", SHA512, "x"),
                                       upsertion("few", SHA256, "x", 4095),
                                       upsertion("many", SHA512, "x", 16385),
                                       upsertion("mech", 3, "x"),
                                       upsertion("alice", SHA256, "alice-pw", 8192),
                                       upsertion("alice2", SHA512, "pw2", 16384),
                                       upsertion("ghost", SHA512, "g")])
        self.assertEqual({u: e for u, (e, _) in res.items()}, {
            "ghost": RESOURCE_NOT_FOUND, "": UNACCEPTABLE_CREDENTIAL, "twice": DUPLICATE_RESOURCE,
            "few": UNACCEPTABLE_CREDENTIAL, "many": UNACCEPTABLE_CREDENTIAL,
            "mech": UNSUPPORTED_SASL_MECHANISM, "alice": NONE, "alice2": NONE})
        self.assertEqual(res["alice"][1], None)
        self.assertEqual(res["few"][1], "Too few iterations")
        self.assertEqual(order[:2], ["alice", "alice2"], "successes first")

        err, _, results = describe(c, ["alice", "nobody", "alice2", "alice2"])
        self.assertEqual(err, NONE)
        by_user = {u: (e, infos) for u, e, _, infos in results}
        self.assertEqual(by_user["alice"], (NONE, [(SHA256, 8192)]))
        self.assertEqual(by_user["nobody"][0], RESOURCE_NOT_FOUND)
        self.assertEqual(by_user["alice2"][0], DUPLICATE_RESOURCE)
        err, _, everyone = describe(c, None)
        self.assertEqual(err, NONE)
        self.assertTrue({"admin", "alice", "alice2"} <= {u for u, _, _, _ in everyone})
        self.assertNotIn("ghost", {u for u, _, _, _ in everyone})
        self.assertEqual(describe(c, ["twice"])[2], [("twice", NONE, None, [(SHA256, 4096)])])
        self.assertEqual(describe(c, [])[2], everyone, "empty = every user, as null")

        # A deletion, then the user is gone; deleting again is RESOURCE_NOT_FOUND.
        res, _ = alter(c, deletions=[("alice2", SHA512)])
        self.assertEqual(res, {"alice2": (NONE, None)})
        self.assertEqual(describe(c, ["alice2"])[2][0][1], RESOURCE_NOT_FOUND)
        self.assertEqual(alter(c, deletions=[("alice2", SHA512)])[0]["alice2"][0],
                         RESOURCE_NOT_FOUND)
        self.assertBrokerAlive()

    def test_broker_keeps_the_keys_rfc5802_derives_and_they_survive_kill(self):
        c = self.conn()
        salt = b"fixed-salt-for-test"
        up = upsertion("carol/ops", SHA256, "carol-pw", 4096, salt)
        self.assertEqual(alter(c, upsertions=[up])[0], {"carol/ops": (NONE, None)})
        sp = up[4]
        client_key = hmac.new(sp, b"Client Key", hashlib.sha256).digest()
        want = {"salt": base64.b64encode(salt).decode(),
                "stored_key": base64.b64encode(hashlib.sha256(client_key).digest()).decode(),
                "server_key": base64.b64encode(
                    hmac.new(sp, b"Server Key", hashlib.sha256).digest()).decode(),
                "iterations": "4096"}
        self.assertEqual(self.stored()[("carol%2Fops", "SCRAM-SHA-256")], want)
        with open(os.path.join(self.broker.data_dir, "logs", "scram-credentials"), "rb") as f:
            raw = f.read()
        self.assertNotIn(b"carol-pw", raw)
        self.assertNotIn(base64.b64encode(sp), raw, "never the salted password")
        # The admin's password changed by an operator survives restarts: bootstrap creates once.
        self.assertEqual(alter(c, upsertions=[upsertion("admin", SHA512, "new", 8192)])[0],
                         {"admin": (NONE, None)})
        self.broker.kill()
        self.broker.start()
        c = self.conn()
        err, _, results = describe(c, ["carol/ops", "admin"])
        self.assertEqual(results, [("carol/ops", NONE, None, [(SHA256, 4096)]),
                                   ("admin", NONE, None, [(SHA512, 8192)])])
        self.assertEqual(self.stored()[("carol%2Fops", "SCRAM-SHA-256")], want)

    def test_truncated_frames_do_not_hurt_the_broker(self):
        for api, body in [(API_ALTER, compact_array([compact_str("x")])),  # no mechanism
                          (API_ALTER, uvarint(1) + uvarint(5)),  # upsertions array cut short
                          (API_DESCRIBE, uvarint(3) + compact_str("a"))]:
            c = RawConn(self.broker.port)
            try:
                with self.assertRaises((ConnectionError, OSError)):
                    c.request(api, 0, body, flexible=True)
            finally:
                c.close()
        self.assertEqual(describe(self.conn(), ["admin"])[0], NONE)
        self.assertBrokerAlive()

    def test_strata_user_cli(self):
        pwfile = os.path.join(self.broker.data_dir, "pw.txt")
        with open(pwfile, "w") as f:
            f.write("dana-secret\n")
        out = self.cli("user", "create", "dana", "--password-file", pwfile, "--iterations", "5000")
        self.assertEqual(out, {"user": "dana", "mechanism": "SCRAM-SHA-512", "iterations": 5000,
                               "status": "created"})
        self.cli("user", "create", "dana", "--mechanism", "SCRAM-SHA-256", "--password", "p2")
        listed = self.cli("user", "list", "dana")
        self.assertEqual(listed, {"users": [{"user": "dana", "credentials": [
            {"mechanism": "SCRAM-SHA-256", "iterations": 8192},
            {"mechanism": "SCRAM-SHA-512", "iterations": 5000}]}]})
        # The CLI ran PBKDF2: what the broker derived matches the password with the file's salt.
        cred = self.stored()[("dana", "SCRAM-SHA-512")]
        sp = salted_password(SHA512, "dana-secret", base64.b64decode(cred["salt"]), 5000)
        ck = hmac.new(sp, b"Client Key", hashlib.sha512).digest()
        self.assertEqual(base64.b64decode(cred["stored_key"]), hashlib.sha512(ck).digest())
        self.assertIn("admin", [u["user"] for u in self.cli("user", "list")["users"]])
        # Errors are Kafka's, exit code 1; usage errors 2.
        err = self.cli("user", "list", "nobody", expect=1)
        self.assertEqual(err["error"]["name"], "RESOURCE_NOT_FOUND")
        err = self.cli("user", "delete", "nobody", expect=1)
        self.assertEqual(err["error"]["name"], "RESOURCE_NOT_FOUND")
        self.cli("user", "create", "x", "--password", "p", "--iterations", "100", expect=2)
        self.cli("user", "create", "x", expect=2)
        out = self.cli("user", "delete", "dana", "--all-mechanisms")
        self.assertEqual(sorted(out["deleted"]), ["SCRAM-SHA-256", "SCRAM-SHA-512"])
        self.assertEqual(self.cli("user", "list", "dana", expect=1)["error"]["name"],
                         "RESOURCE_NOT_FOUND")


class ScramClusterTest(cluster_harness.ClusterTestCase):
    def test_credential_created_through_one_broker_is_seen_by_another(self):
        etcd = self.track(cluster_harness.Etcd().start())
        cluster = self.track(cluster_harness.Cluster(2, etcd.endpoint, {
            "sasl.scram.bootstrap.users": BOOTSTRAP}))
        cluster.start().wait_ready()

        def cli(node, *args, expect=0):
            p = subprocess.run([CLI, "-b", cluster.address(node), "-o", "json"] + list(args),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, expect, "%s\n%s\n%s" % (args, p.stdout, p.stderr))
            return json.loads(p.stdout)

        def users(node):
            return {u["user"]: u["credentials"] for u in cli(node, "user", "list")["users"]}

        # Both brokers applied the bootstrap user; one created it, the other found it.
        self.assertEqual(users(1), {"admin": [{"mechanism": "SCRAM-SHA-512",
                                               "iterations": 4096}]})
        created = sum(1 for n in (1, 2) for line in cluster.broker(n).log_lines
                      if "created bootstrap SCRAM user admin" in line)
        self.assertEqual(created, 1)
        cli(1, "user", "create", "erin", "--password", "erin-pw", "--iterations", "4096")
        deadline = time.time() + 10
        while "erin" not in users(2):
            self.assertLess(time.time(), deadline, "broker 2 never saw erin")
            time.sleep(0.1)
        with RawConn(cluster.ports[2]) as c:
            self.assertEqual(describe(c, ["erin"])[2], [("erin", NONE, None, [(SHA512, 4096)])])
        cli(2, "user", "delete", "erin")
        while "erin" in users(1):
            self.assertLess(time.time(), deadline, "broker 1 still lists erin")
            time.sleep(0.1)
        # In etcd under the cluster's prefix, in Kafka's text form; never the password.
        kvs = etcd.get_prefix(cluster.prefix + "/scram/")
        self.assertEqual(sorted(kvs), [cluster.prefix + "/scram/SCRAM-SHA-512/admin"])
        self.assertNotIn("admin-secret", "".join(kvs.values()))
        self.assertTrue(list(kvs.values())[0].startswith("salt="))


if __name__ == "__main__":
    unittest.main()
