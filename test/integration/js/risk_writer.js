// KafkaJS 2.2.4 with @kafkajs/confluent-schema-registry 3.3.0 as a typed table's second writer:
// registers its own Avro schema (record `Risk`, subject TOPIC-Risk, as TopicRecordNameStrategy
// names it) and produces risk scores for the accounts in Confluent's framing.
// Reads "account<TAB>score-or-null" lines from stdin; prints {"id": writer schema id}.
// Usage: node risk_writer.js BOOTSTRAP REGISTRY_URL TOPIC
const { Kafka, logLevel } = require('kafkajs');
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry');

const [, , bootstrap, registryUrl, topic] = process.argv;
const schema = {
  type: 'record', name: 'Risk', namespace: 'strata.seed',
  fields: [{ name: 'risk_score', type: ['null', 'double'], default: null }],
};

(async () => {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const registry = new SchemaRegistry({ host: registryUrl });
  const { id } = await registry.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject: `${topic}-Risk` });
  const kafka = new Kafka({ clientId: 'risk-writer', brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = [];
  for (const line of input.split('\n')) {
    if (!line) continue;
    const [account, score] = line.split('\t');
    const risk = score === 'null' ? null : Number(score);
    messages.push({ key: account, value: await registry.encode(id, { risk_score: risk }) });
  }
  for (let i = 0; i < messages.length; i += 500) {
    await producer.send({ topic, messages: messages.slice(i, i + 500) });
  }
  await producer.disconnect();
  console.log(JSON.stringify({ id }));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
