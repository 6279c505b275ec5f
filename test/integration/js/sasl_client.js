// KafkaJS 2.2.4 over SASL and/or TLS, driven by test_security.py.
// Usage: node sasl_client.js <broker> <topic> <count> <json options>
//   options: { mechanism, username, password, ca (PEM path; TLS when set), key, cert,
//              holdMs (keep producing this long, one message per 50 ms, to cross re-auth) }
// Produces `count` messages (acks=-1), reads them back with a group consumer and prints
// "RESULT <json>"; exits non-zero on any error (with the error's type on stderr).
'use strict'
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const [broker, topic, countArg, optsArg] = process.argv.slice(2)
const count = parseInt(countArg, 10)
const opts = JSON.parse(optsArg)

async function main() {
  const conf = { clientId: 'strata-it-sasl', brokers: [broker], logLevel: logLevel.NOTHING,
    retry: { retries: 2 }, connectionTimeout: 5000, authenticationTimeout: 5000 }
  if (opts.ca) {
    conf.ssl = { ca: [fs.readFileSync(opts.ca, 'utf-8')] }
    if (opts.key) {
      conf.ssl.key = fs.readFileSync(opts.key, 'utf-8')
      conf.ssl.cert = fs.readFileSync(opts.cert, 'utf-8')
    }
  }
  if (opts.mechanism) {
    conf.sasl = { mechanism: opts.mechanism.toLowerCase(), username: opts.username, password: opts.password }
  }
  const kafka = new Kafka(conf)
  const producer = kafka.producer({ allowAutoTopicCreation: true, idempotent: false })
  await producer.connect()
  let sent = 0
  for (let i = 0; i < count; i++) {
    await producer.send({ topic, acks: -1, messages: [{ key: `k${i}`, value: `v${i}` }] })
    sent++
  }
  const holdUntil = Date.now() + (opts.holdMs || 0)
  while (Date.now() < holdUntil) {
    await producer.send({ topic, acks: -1, messages: [{ key: `k${sent}`, value: `v${sent}` }] })
    sent++
    await new Promise(r => setTimeout(r, 50))
  }
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: `g-${topic}` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const values = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${values.length} of ${sent}`)), 30000)
    consumer.run({ eachMessage: async ({ message }) => {
      values.push(message.value.toString())
      if (values.length >= sent) { clearTimeout(timer); resolve() }
    } }).catch(reject)
  })
  await consumer.disconnect()
  console.log('RESULT ' + JSON.stringify({ sent, values }))
}

main().catch(e => {
  console.error('FAILED', e && e.name, e && e.type, e && e.message)
  process.exit(1)
})
