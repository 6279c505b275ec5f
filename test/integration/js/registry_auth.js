// @kafkajs/confluent-schema-registry with basic auth over HTTPS (the CA from NODE_EXTRA_CA_CERTS):
// registers an Avro schema under SUBJECT as USER, then encodes and decodes one value with its id.
// Prints one JSON line: {"id", "decoded"} or {"status", "message"} when the registry refuses.
// Usage: node registry_auth.js REGISTRY_URL USER PASSWORD SUBJECT
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry');

const [, , url, username, password, subject] = process.argv;
const schema = {
  type: 'record', name: 'Score', namespace: 'strata.auth',
  fields: [{ name: 'account', type: 'string' }, { name: 'score', type: 'double' }],
};

(async () => {
  const registry = new SchemaRegistry({ host: url, auth: { username, password } });
  try {
    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject });
    const decoded = await registry.decode(await registry.encode(id, { account: 'a', score: 1.5 }));
    console.log(JSON.stringify({ id, decoded }));
  } catch (e) {
    console.log(JSON.stringify({ status: e.status || null, message: String(e.message) }));
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
