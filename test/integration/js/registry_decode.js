// @kafkajs/confluent-schema-registry 3.3.0 as a plain consumer's deserializer: reads one
// Confluent-framed value per line (hex) from stdin, decodes each with the schema its id names
// (fetched from the registry, as a consumer does), prints one JSON line per value.
// Usage: node registry_decode.js REGISTRY_URL
const { SchemaRegistry } = require('@kafkajs/confluent-schema-registry');

const [, , registryUrl] = process.argv;

(async () => {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const registry = new SchemaRegistry({ host: registryUrl });
  for (const line of input.split('\n')) {
    if (!line) continue;
    console.log(JSON.stringify(await registry.decode(Buffer.from(line, 'hex'))));
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
