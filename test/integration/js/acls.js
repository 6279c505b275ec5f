// KafkaJS 2.2.4 ACL administration driven by test_acls.py: createAcls (two literal ACLs and a
// prefixed one), describeAcls (the literal resource, then a MATCH filter), deleteAcls, again.
// Usage: node acls.js <broker host:port> <topic> <principal>
// Prints one line "RESULT <json>" with what KafkaJS reported; exits non-zero on any error.
'use strict'
const { Kafka, logLevel, AclResourceTypes, AclOperationTypes, AclPermissionTypes,
  ResourcePatternTypes } = require('kafkajs')

const [broker, topic, principal] = process.argv.slice(2)

async function main() {
  const kafka = new Kafka({ clientId: 'strata-it-kafkajs-acls', brokers: [broker],
    logLevel: logLevel.ERROR, retry: { retries: 2 } })
  const admin = kafka.admin()
  await admin.connect()
  const result = {}
  const acl = (operation, permissionType) => ({
    resourceType: AclResourceTypes.TOPIC, resourceName: topic,
    resourcePatternType: ResourcePatternTypes.LITERAL, principal, host: '*', operation,
    permissionType })
  const prefixed = { ...acl(AclOperationTypes.DESCRIBE, AclPermissionTypes.ALLOW),
    resourceName: topic.slice(0, 6), resourcePatternType: ResourcePatternTypes.PREFIXED }
  await admin.createAcls({ acl: [acl(AclOperationTypes.READ, AclPermissionTypes.ALLOW),
    acl(AclOperationTypes.WRITE, AclPermissionTypes.DENY), prefixed] })
  const filter = {
    resourceType: AclResourceTypes.TOPIC, resourceName: topic,
    resourcePatternType: ResourcePatternTypes.LITERAL, principal, host: '*',
    operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY }
  const described = await admin.describeAcls(filter)
  result.described = described.resources.map(r => ({ resourceType: r.resourceType,
    resourceName: r.resourceName, patternType: r.resourcePatternType,
    acls: r.acls.map(a => [a.principal, a.host, a.operation, a.permissionType]).sort() }))
  const matched = await admin.describeAcls({ ...filter,
    resourcePatternType: ResourcePatternTypes.MATCH })
  result.matchedCount = matched.resources.reduce((n, r) => n + r.acls.length, 0)
  const deleted = await admin.deleteAcls({ filters: [filter, { ...filter,
    resourceName: prefixed.resourceName, resourcePatternType: ResourcePatternTypes.PREFIXED }] })
  result.deleted = deleted.filterResponses.map(f => ({ errorCode: f.errorCode,
    matching: f.matchingAcls.length }))
  const after = await admin.describeAcls(filter)
  result.after = after.resources.length
  await admin.disconnect()
  console.log('RESULT ' + JSON.stringify(result))
}

main().catch(e => { console.error(e); process.exit(1) })
