'use strict'
// The rules of retention (workers/storage/retention.js) and growth
// (capacity.js): which index a collection's age field gets, how a changed
// retention changes it, and how settings name collections.

const test = require('node:test')
const assert = require('node:assert/strict')
const { retentionForProblem, retentionsOf, cutoffOf, ttlSeconds, planAgeIndex, hasTtlMonitor } = require('../../workers/storage/retention')
const { growthPerDay, trimSamples } = require('../../workers/storage/capacity')
const { resolveSettings } = require('../../lib/shared/settings')
const { MONGO_SETTINGS } = require('../../workers/mongo-settings')
const sinks = require('../../lib/collector/sinks')

const LOGS = { collection: 'logs', field: 'receivedAt', declared: true }
const STREAMS = { collection: 'streams', field: 'metadata.lastUpdated', partial: { active: false } }
const COUNTERS = { collection: 'counters', field: 'dayStart', perDay: true }
const DAY = 86400000

test('a collection with a retention and no index on its age field gets a TTL index where the server expires by TTL, a plain one otherwise', () => {
  assert.deepEqual(planAgeIndex([], LOGS, { retentionMs: 7 * DAY, ttl: true, wanted: true }),
    { action: 'create', key: { receivedAt: 1 }, options: { name: 'receivedAt_1', expireAfterSeconds: 604800 } })
  assert.deepEqual(planAgeIndex([], STREAMS, { retentionMs: 30000, ttl: true, wanted: true }),
    { action: 'create', key: { 'metadata.lastUpdated': 1 }, options: { name: 'metadata.lastUpdated_1_retention', partialFilterExpression: { active: false }, expireAfterSeconds: 30 } })
  assert.deepEqual(planAgeIndex([], COUNTERS, { retentionMs: 7 * DAY, ttl: true, wanted: true }).options.expireAfterSeconds, 8 * 86400, 'a day\'s document goes once the whole day is older')
  assert.deepEqual(planAgeIndex([], LOGS, { retentionMs: 7 * DAY, ttl: false, wanted: true }), { action: 'create', key: { receivedAt: 1 }, options: { name: 'receivedAt_1' } })
  assert.deepEqual(planAgeIndex([], STREAMS, { retentionMs: 0, ttl: true, wanted: false }), { action: 'keep', expiring: null }, 'nothing asked: no index')
})

test('a changed retention changes the existing index in place (collMod by its name), never a drop and rebuild; the same one is left alone', () => {
  const existing = [{ name: '_id_', key: { _id: 1 } }, { name: 'metadata.lastUpdated_1_retention', key: { 'metadata.lastUpdated': 1 }, partialFilterExpression: { active: false }, expireAfterSeconds: 604800 }]
  assert.deepEqual(planAgeIndex(existing, STREAMS, { retentionMs: 30 * DAY, ttl: true, wanted: true }),
    { action: 'collMod', from: 604800, command: { collMod: 'streams', index: { name: 'metadata.lastUpdated_1_retention', expireAfterSeconds: 2592000 } } })
  assert.deepEqual(planAgeIndex(existing, STREAMS, { retentionMs: 7 * DAY, ttl: true, wanted: true }), { action: 'keep', expiring: null })
  // The plain index earlier versions made (the syslog sink's receivedAt_1) is made TTL in place (MongoDB 5.1+).
  assert.deepEqual(planAgeIndex([{ name: 'receivedAt_1', key: { receivedAt: 1 } }], LOGS, { retentionMs: 3600000, ttl: true, wanted: true }),
    { action: 'collMod', from: null, command: { collMod: 'logs', index: { name: 'receivedAt_1', expireAfterSeconds: 3600 } } })
  // An index on the field without the partial filter is another index.
  assert.equal(planAgeIndex([{ name: 'metadata.lastUpdated_1', key: { 'metadata.lastUpdated': 1 }, expireAfterSeconds: 5 }], STREAMS, { retentionMs: 7 * DAY, ttl: true, wanted: true }).action, 'create')
})

test('retention off touches no index, and says when one still expires documents', () => {
  const ttlIndex = [{ name: 'receivedAt_1', key: { receivedAt: 1 }, expireAfterSeconds: 2592000 }]
  assert.deepEqual(planAgeIndex(ttlIndex, LOGS, { retentionMs: 0, ttl: true, wanted: true }), { action: 'keep', expiring: 2592000 })
  assert.deepEqual(planAgeIndex(ttlIndex, LOGS, { retentionMs: 60000, ttl: false, wanted: true }), { action: 'keep', expiring: null }, 'the sweeper deletes; the server never does')
})

test('the server expires by TTL when serverStatus shows its TTL monitor, or when told; mongo-java-server shows none', () => {
  assert.equal(hasTtlMonitor({ metrics: { ttl: { passes: 12, deletedDocuments: 0 } } }), true)
  assert.equal(hasTtlMonitor({ metrics: { cursor: {} } }), false)
  assert.equal(hasTtlMonitor(null), false)
  assert.equal(hasTtlMonitor(null, 'ttl'), true)
  assert.equal(hasTtlMonitor({ metrics: { ttl: {} } }, 'sweeper'), false)
})

test('retentionFor: COLLECTION=DURATION or off over --retention; a name the collector does not write is refused by name', () => {
  assert.equal(retentionForProblem(['flows=7d', 'flow_minutes=90d', 'exporters=off']), undefined)
  assert.match(retentionForProblem(['flows']), /COLLECTION=DURATION/)
  assert.match(retentionForProblem(['flows=7 days']), /flows: expected a duration/)
  const targets = [{ collection: 'flows' }, { collection: 'flow_minutes' }, { collection: 'exporters' }]
  assert.deepEqual([...retentionsOf(targets, { retention: DAY, retentionFor: ['flows=12h', 'exporters=off'] })], [['flows', 43200000], ['flow_minutes', DAY], ['exporters', 0]])
  assert.throws(() => retentionsOf(targets, { retentionFor: ['flowz=1d'] }), /names flowz, which is not one of the collections retention reaches \(flows, flow_minutes, exporters\)/)
  assert.throws(() => resolveSettings(MONGO_SETTINGS, { retentionFor: ['x=soon'] }), /x: expected a duration/)
  assert.throws(() => resolveSettings(MONGO_SETTINGS, { retentionFor: ['syslog=1d', 'syslog=off'] }), /syslog is named twice: one retention a collection/, 'a typo does not shorten or end a retention silently (QA)')
  assert.equal(resolveSettings(MONGO_SETTINGS, {}).retention, 0, 'off by default')
})

test('per-day documents are old once their whole day is older than the retention', () => {
  const now = Date.UTC(2026, 10, 25, 10)
  assert.equal(cutoffOf(COUNTERS, DAY, now), now - 2 * DAY)
  assert.equal(cutoffOf(LOGS, DAY, now), now - DAY)
  assert.equal(ttlSeconds(LOGS, 1500), 2, 'whole seconds, rounded up')
})

test('a per-minute document is old once its whole minute is older than the retention (expireSpan): statsd\'s minutes, as its sink declares them; netflow\'s by their last arrival', () => {
  const { createSink } = require('../../workers/sink-stores')
  const now = Date.UTC(2026, 10, 25, 10, 0, 45)
  const minuteTargets = [require('../../collectors/statsd'), require('../../collectors/netflow')]
    .flatMap((collector) => collector.definition.sinks.filter((sink) => sink.expireBy === 'minute').map((sink) => createSink(sink).storageTargets()[0]))
  assert.deepEqual(minuteTargets.map((t) => t.collection), ['metrics'])
  // A flow's minute is the exporter's clock (a day behind without NTP): its minutes age by when they were last written.
  const netflowMinutes = require('../../collectors/netflow').definition.sinks.filter((sink) => /_minutes$/.test(sink.collection)).map((sink) => createSink(sink).storageTargets()[0])
  assert.deepEqual(netflowMinutes.map((t) => [t.collection, t.field, t.span]), [['flow_minutes', 'lastSeen', undefined], ['interface_minutes', 'lastSeen', undefined]])
  for (const target of minuteTargets) {
    // --retention 30s at 10:00:45: the minute 10:00 is still written to; 09:59 ended 45 s ago.
    assert.equal(cutoffOf(target, 30000, now), now - 90000, target.collection)
    assert.ok(cutoffOf(target, 30000, now) < Date.UTC(2026, 10, 25, 10, 0) && cutoffOf(target, 30000, now) > Date.UTC(2026, 10, 25, 9, 59))
    assert.equal(ttlSeconds(target, 30000), 90)
  }
})

test('growth per day: the net change over the last hour, once measurements span 10 minutes', () => {
  const t0 = 1e12
  assert.equal(growthPerDay([{ at: t0, documents: 0, usedBytes: 0 }, { at: t0 + 180000, documents: 10, usedBytes: 100 }]), null, 'three minutes: too brief to say a day')
  assert.deepEqual(growthPerDay([{ at: t0, documents: 0, usedBytes: 0 }, { at: t0 + 600000, documents: 600, usedBytes: 60000 }]), { documents: 86400, bytes: 8640000 })
  const samples = [{ at: t0 - 7200000, documents: 0, usedBytes: 0 }, { at: t0 - 3000000, documents: 100, usedBytes: 100 }, { at: t0, documents: 100, usedBytes: 100 }]
  assert.deepEqual(growthPerDay(samples), { documents: 0, bytes: 0 }, 'retention deleting as fast as data comes: no growth')
  assert.equal(trimSamples(samples).length, 2)
  // --retention 4m, 100 lines/s: filled to 24,000 in its first 4 minutes, then steady. An hour of samples read the fill-up as growth.
  const filling = [0, 2, 4, 6, 8, 10, 12, 14].map((m) => ({ at: t0 + m * 60000, documents: Math.min(m, 4) * 6000, usedBytes: Math.min(m, 4) * 1500000 }))
  assert.ok(growthPerDay(filling).documents > 1e6, 'over the hour: the fill-up, as before')
  assert.deepEqual(growthPerDay(filling, 240000), { documents: 0, bytes: 0 }, 'over 10 minutes once a retention under that is reached: steady')
})

test('expireBy is a field name of an updates or documents sink; counters and streams know theirs', () => {
  assert.equal(sinks.documents({ collection: 'x', expireBy: 'receivedAt', of: (r) => r }).expireBy, 'receivedAt')
  assert.throws(() => sinks.counters({ expireBy: 'at', of: (r) => r }), /a counters sink \(counters\) takes no expireBy: that is an updates sink's or a documents sink's/)
  assert.throws(() => sinks.updates({ collection: 'x', expireBy: 5, of: (r) => r }), /expireBy/)
})

test('--storage-interval is a flag (collector status and the docs name it): a duration, within its range', () => {
  const syslog = require('../../collectors/syslog')
  const config = new syslog.Config(['--storage-interval', '5m'], {}).getConfig()
  assert.equal(config.storageInterval, 300000)
  assert.throws(() => new syslog.Config(['--storage-interval', '2d'], {}).getConfig(), /--storage-interval/)
})
