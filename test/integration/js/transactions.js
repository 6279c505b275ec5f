// KafkaJS 2.2.4 transactional producer and read_committed consumer for test_transactions.py.
// Usage: node transactions.js <broker> <topic> <transactionalId> <group>
// Three transactions over the topic's 3 partitions: the first commits, the second aborts, the third
// commits together with the offsets of <group> (sendOffsets). Then a KafkaJS consumer (group
// <group>-reader, read_committed by default) reads the topic from the beginning until it saw the
// committed records. Prints "RESULT <json>": what was sent per transaction, what the consumer saw,
// and <group>'s committed offsets read back with admin.fetchOffsets.
'use strict'
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

const [broker, topic, transactionalId, group] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'strata-it-txn', brokers: [broker], logLevel: logLevel.NOTHING })

async function runTxn(producer, name, commit, offsets) {
  const txn = await producer.transaction()
  const sent = []
  for (let p = 0; p < 3; p++) {
    const messages = []
    for (let i = 0; i < 4; i++) messages.push({ value: `${name}-${i}@${p}`, partition: p })
    await txn.send({ topic, messages })
    sent.push(...messages.map(m => m.value))
  }
  if (offsets) {
    await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: offsets }] })
  }
  if (commit) await txn.commit()
  else await txn.abort()
  return sent
}

async function main() {
  const result = {}
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  result.committed1 = await runTxn(producer, 'one', true)
  result.aborted = await runTxn(producer, 'two', false)
  result.committed2 = await runTxn(producer, 'three', true,
    [{ partition: 0, offset: '5' }, { partition: 2, offset: '7' }])
  await producer.disconnect()

  const want = result.committed1.length + result.committed2.length
  const consumer = kafka.consumer({ groupId: `${group}-reader`, maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  result.seen = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`saw ${result.seen.length} of ${want}`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        result.seen.push(message.value.toString())
        if (result.seen.length >= want) {
          clearTimeout(timer)
          // Anything past the committed records (an aborted one) would show up within a poll.
          setTimeout(resolve, 1000)
        }
      },
    }).catch(reject)
  })
  await consumer.disconnect()

  const admin = kafka.admin()
  await admin.connect()
  result.offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  await admin.disconnect()
  console.log('RESULT ' + JSON.stringify(result))
}

main().catch(e => {
  console.error(e)
  process.exit(1)
})
