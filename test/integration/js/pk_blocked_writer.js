// KafkaJS 2.2.4 plain producer writing one record to a primary-key table whose key another
// producer's open transaction holds (test_pk_transactions.py). The broker refuses the batch with a
// retriable error until that transaction's marker; KafkaJS's default retry policy must carry the
// send through. Usage: node pk_blocked_writer.js <broker> <topic> <key> <value>
// Prints "SENT <ms>" once the send resolved (how long it took), or exits 1 with the error.
'use strict'
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

const [broker, topic, key, value] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'strata-it-pk-txn', brokers: [broker], logLevel: logLevel.NOTHING })

async function main() {
  const producer = kafka.producer()
  await producer.connect()
  console.log('CONNECTED')
  const start = Date.now()
  await producer.send({ topic, messages: [{ key, value, partition: 0 }] })
  console.log(`SENT ${Date.now() - start}`)
  await producer.disconnect()
}

main().catch(e => { console.error(e); process.exit(1) })
