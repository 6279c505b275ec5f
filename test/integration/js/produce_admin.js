// KafkaJS 2.2.4 admin + producer driven by test_kafkajs.py.
// Usage: node produce_admin.js <broker host:port> <topic> <messages per codec>
// Prints one line "RESULT <json>" with what KafkaJS reported; exits non-zero on any error.
'use strict'
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec

const [broker, topic, perCodecArg] = process.argv.slice(2)
const perCodec = parseInt(perCodecArg, 10)
const PARTITIONS = 3
const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy }

// Must match expected_message() in test_kafkajs.py.
function message(codec, i) {
  return {
    key: `${codec}-${i}`,
    value: i % 40 === 39 ? null : `kafkajs ${codec} value ${i} `.repeat((i % 10) + 1),
    partition: i % PARTITIONS,
    headers: { idx: String(i), codec },
  }
}

async function main() {
  const kafka = new Kafka({ clientId: 'strata-it-kafkajs', brokers: [broker], logLevel: logLevel.ERROR,
    retry: { retries: 3 } })
  const admin = kafka.admin()
  await admin.connect()
  const result = {}
  result.created = await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }] })
  result.createdAgain = await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }] })
  result.listedBefore = (await admin.listTopics()).includes(topic)
  result.offsetsBefore = await admin.fetchTopicOffsets(topic)

  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: false })
  await producer.connect()
  result.sends = {}
  for (const [name, type] of Object.entries(CODECS)) {
    const messages = []
    for (let i = 0; i < perCodec; i++) messages.push(message(name, i))
    // one send per codec: each partition gets one batch with all its messages
    result.sends[name] = await producer.send({ topic, compression: type, acks: -1, messages })
  }
  await producer.disconnect()
  result.offsetsAfter = await admin.fetchTopicOffsets(topic)
  result.listedAfter = (await admin.listTopics()).includes(topic)
  await admin.disconnect()
  console.log('RESULT ' + JSON.stringify(result))
}

main().catch(e => {
  console.error('FAILED', e && e.stack ? e.stack : e, e && e.errors ? JSON.stringify(e.errors) : '')
  process.exit(1)
})
