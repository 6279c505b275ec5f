// KafkaJS 2.2.4 consumer-group driver for test_groups_js.py (issue 3).
// Usage:
//   node groups.js member <broker> <topic> <group>   prints "ASSIGNED p,p,..." on every join and
//                                                      "SEEN <partition> <offset>" per message;
//                                                      SIGTERM = clean disconnect (LeaveGroup)
//   node groups.js admin <broker> <group>            prints "RESULT <json>" with listGroups,
//                                                      describeGroups, then deleteGroups' outcome
'use strict'
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

const [mode, broker, ...rest] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'strata-it-groups', brokers: [broker], logLevel: logLevel.NOTHING })

async function member(topic, group) {
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 500,
    rebalanceTimeout: 10000, metadataMaxAge: 2000, maxWaitTimeInMs: 500 })
  consumer.on(consumer.events.GROUP_JOIN, e => {
    const parts = (e.payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b)
    console.log('ASSIGNED ' + parts.join(','))
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  process.on('SIGTERM', async () => {
    await consumer.disconnect()
    process.exit(0)
  })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      console.log(`SEEN ${partition} ${message.offset}`)
    },
  })
}

async function admin(group) {
  const a = kafka.admin()
  await a.connect()
  const result = {}
  result.listed = (await a.listGroups()).groups.filter(g => g.groupId === group)
  const described = (await a.describeGroups([group])).groups[0]
  result.described = {
    state: described.state, protocolType: described.protocolType, protocol: described.protocol,
    members: described.members.map(m => ({ clientId: m.clientId, clientHost: m.clientHost,
      assignmentBytes: m.memberAssignment.length })),
  }
  result.offsets = await a.fetchOffsets({ groupId: group, topics: rest.slice(1) })
  try {
    result.deleted = await a.deleteGroups([group])
  } catch (e) {
    result.deleteError = { name: e.name, groups: (e.groups || []).map(g => ({ groupId: g.groupId, errorCode: g.errorCode })) }
  }
  await a.disconnect()
  console.log('RESULT ' + JSON.stringify(result))
}

const run = mode === 'member' ? () => member(rest[0], rest[1]) : () => admin(rest[0])
run().catch(e => {
  console.error(e)
  process.exit(1)
})
