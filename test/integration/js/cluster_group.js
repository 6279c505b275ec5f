// KafkaJS 2.2.4 consumer for test_cluster_groups.py: consumes <topic> in group <group> with
// manual commits (every <every> messages of a partition, and once per partition at the end),
// until it has seen <total> distinct records. Prints "SEEN <partition> <offset>" per message and
// "COMMITTED <partition> <offset>" once a commit was acknowledged; "DONE" at the end.
// KafkaJS keeps a group's coordinator for the whole generation: once that broker is gone, its
// commits fail ("Broker N not found in the cached metadata") until the consumer restarts
// (restartOnFailure, after its retries) and rejoins through FindCoordinator — as it does against
// a Java broker. A commit that fails in eachMessage is thrown to get there quickly; the final
// commits are retried until they succeed.
// Usage: node cluster_group.js <brokers> <topic> <group> <total> <every>
'use strict'
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

const [brokers, topic, group, totalArg, everyArg] = process.argv.slice(2)
const total = Number(totalArg)
const every = Number(everyArg)
const kafka = new Kafka({ clientId: 'strata-it-cluster-group', brokers: brokers.split(','),
  logLevel: process.env.KAFKAJS_LOG ? logLevel[process.env.KAFKAJS_LOG] : logLevel.NOTHING, retry: { retries: 4, initialRetryTime: 100, maxRetryTime: 1000 } })

async function commitWithRetry(consumer, partition, next) {
  for (let attempt = 0; ; attempt++) {
    try {
      await consumer.commitOffsets([{ topic, partition, offset: String(next) }])
      console.log(`COMMITTED ${partition} ${next}`)
      return
    } catch (e) {
      if (attempt > 120) throw e
      await new Promise(r => setTimeout(r, 500))
    }
  }
}

async function main() {
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500,
    rebalanceTimeout: 15000, metadataMaxAge: 2000, maxWaitTimeInMs: 300 })
  consumer.on(consumer.events.CRASH, e => console.log(`CRASH restart=${e.payload.restart} ${e.payload.error.message}`))
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const seen = new Set()
  const counts = {}
  const last = {}
  let finished
  const done = new Promise(r => { finished = r })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      console.log(`SEEN ${partition} ${message.offset}`)
      seen.add(`${partition}:${message.offset}`)
      last[partition] = Number(message.offset) + 1
      counts[partition] = (counts[partition] || 0) + 1
      if (counts[partition] % every === 0) {
        await consumer.commitOffsets([{ topic, partition, offset: String(last[partition]) }])
        console.log(`COMMITTED ${partition} ${last[partition]}`)
      }
      if (seen.size >= total) finished()
    },
  })
  await done
  for (const p of Object.keys(last)) await commitWithRetry(consumer, Number(p), last[p])
  await consumer.disconnect()
  console.log('DONE')
}

main().catch(e => {
  console.error(e)
  process.exit(1)
})
