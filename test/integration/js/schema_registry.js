// KafkaJS 2.2.4 with @kafkajs/confluent-schema-registry 3.3.0 against Strata's embedded registry:
// registers an Avro, JSON or Protobuf schema (twice: one id), produces records encoded with it
// (Confluent framing), consumes and decodes them, and tries an incompatible version (BACKWARD: a
// new required field; for JSON in a closed content model; for Protobuf a field's scalar kind
// changed). Prints one JSON line: {"id", "again", "decoded", "refused", "message"}.
// Usage: node schema_registry.js BOOTSTRAP REGISTRY_URL TOPIC [AVRO|JSON|PROTOBUF]
const { Kafka, logLevel } = require('kafkajs');
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry');

const [, , bootstrap, registryUrl, topic, format = 'AVRO'] = process.argv;
const subject = `${topic}-value`;
const type = { JSON: SchemaType.JSON, PROTOBUF: SchemaType.PROTOBUF }[format] || SchemaType.AVRO;
const PROTO = (scoreType) => `syntax = "proto3";
package strata.js;
message Risk {
  string account = 1;
  ${scoreType} score = 2;
}
`;
const schema = format === 'PROTOBUF' ? PROTO('double') : format === 'JSON' ? {
  type: 'object',
  properties: { account: { type: 'string' }, score: { type: 'number' } },
  required: ['account', 'score'],
  additionalProperties: false,
} : {
  type: 'record', name: 'Risk', namespace: 'strata.js',
  fields: [{ name: 'account', type: 'string' }, { name: 'score', type: 'double' }],
};
const incompatible = format === 'PROTOBUF' ? PROTO('string') : format === 'JSON' ? {
  ...schema,
  properties: { ...schema.properties, limit: { type: 'integer' } },
  required: [...schema.required, 'limit'],
} : { ...schema, fields: [...schema.fields, { name: 'limit', type: 'int' }] };
const text = (s) => (typeof s === 'string' ? s : JSON.stringify(s));

(async () => {
  const registry = new SchemaRegistry({ host: registryUrl });
  const { id } = await registry.register(
    { type, schema: text(schema) }, { subject });
  const again = (await registry.register(
    { type, schema: text(schema) }, { subject })).id;
  const kafka = new Kafka({ clientId: 'strata-sr', brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let i = 0; i < 20; i++) {
    const account = `acct-${i % 5}`;
    messages.push({ key: account, value: await registry.encode(id, { account, score: i / 4 }) });
  }
  await producer.send({ topic, messages });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: `sr-${topic}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const decoded = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed only ${decoded.length}`)), 60000);
    consumer.run({
      eachMessage: async ({ message }) => {
        decoded.push(JSON.parse(JSON.stringify(await registry.decode(message.value))));
        if (decoded.length === messages.length) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();

  let refused = false;
  let message = '';
  try {
    await registry.register({ type, schema: text(incompatible) }, { subject });
  } catch (e) {
    refused = true;
    message = e.message;
  }
  console.log(JSON.stringify({ id, again, decoded, refused, message }));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
