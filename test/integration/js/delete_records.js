// KafkaJS 2.2.4 admin.deleteTopicRecords driven by test_admin_raw.py (issue 4, DeleteRecords).
// Usage: node delete_records.js <broker host:port> <topic>
// Creates <topic> (1 partition), produces 10 messages, deletes records before offset 4, then tries
// to delete beyond the high watermark. Prints one line "RESULT <json>"; exits non-zero on an
// unexpected error.
'use strict'
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

const [broker, topic] = process.argv.slice(2)

async function main() {
  const kafka = new Kafka({ clientId: 'strata-it-delete-records', brokers: [broker],
    logLevel: logLevel.NOTHING, retry: { retries: 2 } })
  const admin = kafka.admin()
  await admin.connect()
  const result = {}
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] })
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: false })
  await producer.connect()
  const messages = []
  for (let i = 0; i < 10; i++) messages.push({ key: `k${i}`, value: `v${i}`, partition: 0 })
  await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  result.before = await admin.fetchTopicOffsets(topic)
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] })
  result.afterDelete = await admin.fetchTopicOffsets(topic)
  try {
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '100' }] })
    result.beyondError = null
  } catch (e) {
    // The retrier wraps the broker's error (KafkaJSDeleteTopicRecordsError) as `cause`.
    const err = e.partitions ? e : (e.cause || e)
    const inner = (err.partitions || []).map(p => p.error && p.error.type)
    result.beyondError = { name: e.name, inner, message: e.message }
  }
  result.afterBeyond = await admin.fetchTopicOffsets(topic)
  await admin.disconnect()
  console.log('RESULT ' + JSON.stringify(result))
}

main().catch(e => {
  console.error('FAILED', e && e.stack ? e.stack : e)
  process.exit(1)
})
