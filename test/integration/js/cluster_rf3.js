// KafkaJS 2.2.4 against a three-broker cluster, driven by test_cluster_faults.py.
// Usage: node cluster_rf3.js <bootstrap host:port,...> <topic> <messages>
// Creates <topic> with 3 partitions and replication factor 3, sends <messages> records with
// acks=-1 (value "kjs-<i>" to partition i % 3), and prints one line "RESULT <json>" with the
// topic's metadata and the send results; exits non-zero on any error.
'use strict'
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

const [brokers, topic, countArg] = process.argv.slice(2)
const count = parseInt(countArg, 10)

async function main() {
  const kafka = new Kafka({ clientId: 'strata-it-kafkajs-cluster', brokers: brokers.split(','),
    logLevel: logLevel.ERROR, retry: { retries: 8 } })
  const admin = kafka.admin()
  await admin.connect()
  const result = {}
  result.created = await admin.createTopics({ waitForLeaders: true,
    topics: [{ topic, numPartitions: 3, replicationFactor: 3 }] })
  const md = await admin.fetchTopicMetadata({ topics: [topic] })
  result.partitions = md.topics[0].partitions.map(p => ({ partition: p.partitionId, leader: p.leader,
    replicas: p.replicas, isr: p.isr }))
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: true,
    maxInFlightRequests: 1 })
  await producer.connect()
  const messages = []
  for (let i = 0; i < count; i++) messages.push({ value: `kjs-${i}`, partition: i % 3 })
  result.sends = await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  result.offsets = await admin.fetchTopicOffsets(topic)
  await admin.disconnect()
  console.log('RESULT ' + JSON.stringify(result))
}

main().catch(e => {
  console.error('FAILED', e && e.stack ? e.stack : e, e && e.errors ? JSON.stringify(e.errors) : '')
  process.exit(1)
})
