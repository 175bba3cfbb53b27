'use strict'
// The leader's StorageKeeper against the embedded server: the TTL indexes
// it makes and changes (read back with listIndexes), what the embedded
// server does with them, the storage budget taking the oldest days first,
// and the capacity figures in `collector status` and /metrics.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { MongoClient } = require('mongodb')
const syslog = require('../../collectors/syslog')
const { StorageKeeper } = require('../../workers/storage/storage-keeper')
const { counterTarget } = require('../../workers/storage/counter-store')
const { captureLogger } = require('../helpers/capture-logger')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/wait-for')
const { storageOf } = require('../../lib/shared/worker-stats')
const { render, storageLines } = require('../../app/commands/status')
const { buildSnapshot, computeRates } = require('../../app/stats-file')

const DAY = 86400000
const LOGS = { collection: 'logs', field: 'receivedAt', declared: true }
const STREAMS = { collection: 'streams', field: 'metadata.lastUpdated', partial: { active: false } }
let client
test.after(() => client && client.close())

async function freshDb () {
  const { uri } = await getTestMongo()
  if (!client) client = await new MongoClient(uri).connect()
  const db = client.db(uniqueDbName('keeper'))
  // Every command the keeper sends, to see the collMods the embedded server refuses.
  db.commands = []
  const command = db.command.bind(db)
  db.command = (cmd, options) => { db.commands.push(cmd); return command(cmd, options) }
  return db
}

function keeper (db, targets, settings, logger = captureLogger().logger) {
  const host = { logger, logAtMost: (key, level, fields, msg) => logger[level](fields, msg), isLeader: () => true }
  return new StorageKeeper(db, targets, { storageInterval: 60000, retentionBy: 'auto', ...settings }, host)
}

const indexesOf = async (db, name) => Object.fromEntries((await db.collection(name).listIndexes().toArray()).map((i) => [i.name, i]))

test('TTL path: the indexes read back from listIndexes; a changed retention is a collMod of the same index (refused by the embedded server: that collection is swept instead); off leaves them and says so', async () => {
  const db = await freshDb()
  await db.collection('logs').createIndex({ receivedAt: 1 }) // as the syslog sink made it before retention
  await db.collection('streams').insertOne({ active: false, metadata: { lastUpdated: new Date(Date.now() - 30 * DAY) } })
  const targets = [LOGS, STREAMS, counterTarget('counters')]
  const first = captureLogger()
  await keeper(db, targets, { retention: 7 * DAY, retentionBy: 'ttl' }, first.logger).setUp()
  const streams = (await indexesOf(db, 'streams'))['metadata.lastUpdated_1_retention']
  assert.deepEqual([streams.key, streams.expireAfterSeconds, streams.partialFilterExpression], [{ 'metadata.lastUpdated': 1 }, 604800, { active: false }])
  assert.equal((await indexesOf(db, 'counters')).dayStart_1.expireAfterSeconds, 8 * 86400, 'per-day documents: a day more')
  // The plain index is made TTL in place; mongo-java-server has no collMod.
  assert.deepEqual(db.commands.filter((c) => c.collMod), [{ collMod: 'logs', index: { name: 'receivedAt_1', expireAfterSeconds: 604800 } }])
  assert.equal((await indexesOf(db, 'logs')).receivedAt_1.expireAfterSeconds, undefined)
  const line = first.records.find((r) => /^retention: /.test(r.msg)).msg
  assert.match(line, /by TTL indexes/)
  assert.match(line, /logs swept by the leader: its TTL index could not be changed \(no such command: 'collMod'\)/)

  db.commands.length = 0
  const second = keeper(db, targets, { retention: 30 * DAY, retentionBy: 'ttl' })
  await second.setUp()
  assert.deepEqual(db.commands.filter((c) => c.collMod).map((c) => [c.collMod, c.index]), [
    ['logs', { name: 'receivedAt_1', expireAfterSeconds: 2592000 }],
    ['streams', { name: 'metadata.lastUpdated_1_retention', expireAfterSeconds: 2592000 }],
    ['counters', { name: 'dayStart_1', expireAfterSeconds: 2592000 + 86400 }]
  ])
  assert.equal(Object.keys(await indexesOf(db, 'streams')).length, 2, 'no second index: changed in place or not at all, never rebuilt')
  await second.measure()
  assert.deepEqual(Object.values(second.stats().collections).map((c) => c.expiry), ['sweeper', 'sweeper', 'sweeper'])

  // The embedded server accepts TTL indexes and never expires: no TTL monitor in serverStatus.
  const status = await db.admin().command({ serverStatus: 1 })
  assert.equal(status.metrics && status.metrics.ttl, undefined)
  assert.equal(await db.collection('streams').countDocuments(), 1, 'a stream 30 days past its TTL is still there')

  const off = captureLogger()
  await keeper(db, targets, {}, off.logger).setUp()
  const warn = off.records.find((r) => r.level === 'warn')
  assert.match(warn.msg, /^retention off: nothing in logs, streams, counters expires \(set --retention DURATION/)
  assert.match(warn.msg, /but the server's TTL index on streams\.metadata\.lastUpdated still deletes after 7d/)
})

test('--max-storage: the oldest day of every collection goes first, until the estimate of what it freed covers the excess; today\'s never', async () => {
  const db = await freshDb()
  const today = Math.floor(Date.now() / DAY) * DAY
  for (let d = 4; d >= 0; d--) {
    const day = today - d * DAY
    await db.collection('logs').insertMany(Array.from({ length: 100 }, (_, i) => ({ receivedAt: new Date(day + i * 1000), text: 'x'.repeat(1000) })))
    await db.collection('counters').insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: `${new Date(day).toISOString().slice(0, 10)}/m${i}`, dayStart: new Date(day), pad: 'y'.repeat(1000) })))
  }
  const targets = [LOGS, counterTarget('counters')]
  const probe = keeper(db, targets, {})
  await probe.setUp()
  await probe.measure()
  const used = probe.stats().usedBytes
  assert.ok(probe.stats().estimated, 'the embedded server reports no storage size: estimated, and said')
  const { logger, records } = captureLogger()
  const budget = keeper(db, targets, { maxStorage: Math.round(used * 0.55) }, logger)
  await budget.setUp()
  await budget.measure()
  const daysLeft = async (name, field) => [...new Set((await db.collection(name).find().toArray()).map((doc) => Math.floor(doc[field] / DAY) * DAY))].sort()
  assert.deepEqual(await daysLeft('logs', 'receivedAt'), [today - DAY, today], 'three oldest days gone: 60 % freed for a 45 % excess')
  assert.deepEqual(await daysLeft('counters', 'dayStart'), [today - DAY, today])
  const deleted = budget.stats().collections
  assert.deepEqual([deleted.logs.deleted, deleted.counters.deleted], [{ retention: 0, budget: 300 }, { retention: 0, budget: 30 }])
  const days = records.filter((r) => /^storage over budget/.test(r.msg)).map((r) => r.fields.day)
  assert.deepEqual(days, [4, 3, 2].map((d) => new Date(today - d * DAY).toISOString().slice(0, 10)), 'oldest first, one line a day')
  const inUse = records.filter((r) => /^storage over budget/.test(r.msg)).map((r) => r.fields.usedBytes)
  assert.ok(inUse[1] < inUse[0] && inUse[2] < inUse[1], `each day's line says what was in use before it went, not the first figure again (${inUse})`)
  const tight = captureLogger()
  const none = keeper(db, targets, { maxStorage: 1 }, tight.logger)
  await none.setUp()
  await none.measure()
  assert.deepEqual(await daysLeft('logs', 'receivedAt'), [today], 'today\'s is never deleted')
  assert.ok(tight.records.some((r) => r.level === 'error' && /today's data alone is over it/.test(r.msg)))
  // The error says what is left after the day it deleted first, not what was there before it (QA); whole bytes.
  const [yesterday, overToday] = ['warn', 'error'].map((level) => tight.records.find((r) => r.level === level && /^storage over budget/.test(r.msg)).fields.usedBytes)
  assert.ok(overToday < yesterday && Number.isInteger(overToday) && Number.isInteger(yesterday) && inUse.every(Number.isInteger), `${yesterday} then ${overToday}`)
  assert.equal(none.stats().overToday, true, 'status says nothing is deleted')
  await none.measure()
  await none.measure()
  assert.equal(tight.records.filter((r) => /today's data alone is over it/.test(r.msg)).length, 1, 'said once while it lasts, not at each measure')
  assert.equal(budget.stats().overToday, false)
})

test('documents of an earlier version get their age field once, so that they expire too: counters from their day, a documents sink\'s from its _id', async () => {
  const db = await freshDb()
  const { ObjectId } = require('mongodb')
  const id = ObjectId.createFromTime(Math.floor(Date.UTC(2026, 0, 2, 3, 4, 5) / 1000))
  await db.collection('counters').insertOne({ _id: '20260102/old.metric', metric: 'old.metric', day: '20260102', daily: 3 })
  await db.collection('flows').insertMany([{ _id: { m: id, r: 0 } }, { _id: { m: id, r: 1 }, receivedAt: new Date(0) }])
  const { createSink } = require('../../workers/sink-stores')
  const flows = createSink(require('../../lib/collector/sinks').documents({ collection: 'flows', expireBy: 'receivedAt', of: (r) => r })).storageTargets()
  await keeper(db, [counterTarget('counters'), ...flows], { retention: 400 * DAY }).setUp()
  assert.deepEqual((await db.collection('counters').findOne()).dayStart, new Date(Date.UTC(2026, 0, 2)))
  assert.deepEqual((await db.collection('flows').find().sort({ '_id.r': 1 }).toArray()).map((f) => f.receivedAt), [new Date(Date.UTC(2026, 0, 2, 3, 4, 5)), new Date(0)], 'from the _id\'s second; one that had it keeps it')
})

test('a --retention-for naming a collection the collector does not write is refused at start, naming those it writes', async (t) => {
  await assert.rejects(startTestCollector(t, syslog, ['--retention-for', 'flows=7d']), /retentionFor.*names flows, which is not one of the collections retention reaches \(syslog, counters\)/s)
})

test('capacity: collector status and /metrics give per collection documents, bytes, oldest and newest, retention and deletions, and the budget', async (t) => {
  const { collector, port } = await startTestCollector(t, syslog, ['--max-storage', '1g', '--retention-for', 'counters=30d', '--metrics-port', '0', '--storage-interval', '300ms'])
  const socket = dgram.createSocket('udp4')
  for (let i = 0; i < 200; i++) socket.send(`<14>1 ${new Date().toISOString()} cap-host app - - - line ${i}`, port, '127.0.0.1')
  await waitFor(() => collector.summary().processed === 200, { what: '200 stored' })
  socket.close()
  const stats = await waitFor(async () => {
    const s = await collector.stats()
    const storage = storageOf(s)
    return storage && storage.collections.syslog.documents === 200 && s
  }, { what: 'the leader to measure 200 documents', timeout: 20000, interval: 100 })
  const storage = storageOf(stats)
  const logs = storage.collections.syslog
  assert.ok(logs.dataBytes > 200 * 100 && logs.indexBytes > 0, 'bytes of data and indexes')
  assert.ok(logs.newest >= logs.oldest && Date.now() - logs.oldest < 60000)
  assert.deepEqual([logs.retentionMs, storage.collections.counters.retentionMs, storage.maxStorage], [0, 30 * DAY, 1024 ** 3])
  const text = render(buildSnapshot({ name: 'cap', collector: 'syslog', pid: process.pid, interval: 1000 }, stats, computeRates(stats)))
  assert.match(text, /storage: [\d.]+ KiB of 1\.0 GiB \(--max-storage\), /)
  assert.ok(text.includes(`measured ${new Date(storage.measuredAt).toISOString().slice(0, 19).replace('T', ' ')} UTC`), 'when the figures were measured')
  assert.match(text, /COLLECTION +DOCUMENTS +DATA +INDEXES +OLDEST +NEWEST +GROWTH\/DAY +RETENTION +DELETED RETENTION\/BUDGET/)
  assert.match(text, /syslog +200 +[\d.]+ KiB +[\d.]+ (KiB|B) +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +- +off +0\/0/)
  assert.match(text, /counters .* 30d by dayStart +0\/0/)
  assert.match(text, /sizes estimated: the server reports no storage or index sizes/)
  const address = collector.metricsAddress()
  const body = await (await fetch(`http://${address.address}:${address.port}/metrics`)).text()
  // Every series also carries the collector's own label.
  assert.match(body, /collector_storage_documents\{collection="syslog",collector="syslog"\} 200/)
  assert.match(body, /collector_storage_deleted_total\{collection="syslog",reason="budget",collector="syslog"\} 0/)
  assert.match(body, /collector_storage_retention_seconds\{collection="counters",collector="syslog"\} 2592000/)
  assert.match(body, /collector_storage_max_bytes\{collector="syslog"\} 1073741824/)
  assert.match(body, /collector_storage_index_bytes\{collection="syslog",collector="syslog"\} \d+/)
  assert.match(body, /collector_storage_oldest_timestamp_seconds\{collection="syslog",collector="syslog"\} \d/)
  // No growth measured yet: no days left; syslog has no streams: nothing held back. Each read 0 before (QA: an alert on days_left < 3 fired).
  assert.equal(storage.daysLeft ?? null, null)
  assert.doesNotMatch(body, /^collector_storage_days_left[{ ]/m, 'no series without growth')
  assert.doesNotMatch(body, /^collector_streams_held_back_seconds[{ ]/m, 'no series without streams')
  assert.match(body, /^# HELP collector_storage_days_left /m, 'the metric still described')
})

// What a QA pass found running statsd with a short retention and a budget:
// the minute being written was deleted from its 30th second (a retention
// under a minute lost data); the figures were measured every other
// interval; a start on old data showed it for a whole interval; a budget
// pass reported measuredAt null; and status said OVER BUDGET an hour or
// more before the budget was reached.
test('per-minute documents age from their minute\'s end; measured every interval as the ticks start, again after a first sweep that deleted; days left under a day is hours, not OVER BUDGET', async () => {
  const db = await freshDb()
  let clock = Date.UTC(2026, 10, 25, 10, 0, 45)
  const minute = (ms) => new Date(Math.floor(ms / 60000) * 60000)
  const metrics = db.collection('metrics')
  await metrics.insertMany([{ _id: 'old', minute: minute(clock - 120000) }, { _id: 'last', minute: minute(clock - 60000) }, { _id: 'now', minute: minute(clock) }])
  const logger = captureLogger().logger
  const host = { logger, logAtMost: () => {}, isLeader: () => true, now: () => { clock += 3; return clock } } // every read of the clock a few ms on: a tick takes time
  const target = require('../../workers/sink-stores').createSink(require('../../collectors/statsd').definition.sinks[0]).storageTargets()[0]
  const k = new StorageKeeper(db, [target], { retention: 30000, storageInterval: 60000, maxStorage: 1024 ** 3, retentionBy: 'sweeper' }, host)
  const started = clock
  const unmeasured = new StorageKeeper(db, [target], { retention: 0, storageInterval: 60000, retentionBy: 'sweeper' }, host)
  await unmeasured.setUp()
  assert.equal(unmeasured.stats(), null, 'set up, not measured yet: no figures (status showed 0 B in use)')
  await k.tick()
  assert.deepEqual((await metrics.find().sort({ minute: 1 }).toArray()).map((d) => d._id), ['now'], 'the minutes that ended over 30 s ago, not the one being written')
  const first = k.stats()
  assert.equal(first.collections.metrics.documents, 1, 'measured again after the first sweep deleted, not showing the deleted documents for an interval')
  assert.ok(first.measuredAt >= started, 'a time, not null')
  for (let tick = 1; tick <= 3; tick++) {
    clock = started + tick * 60000 // the timer's next tick
    const at = clock
    await k.tick()
    assert.ok(k.stats().measuredAt > at, `measured at tick ${tick}, every interval`)
  }
  const { daysLeftText } = require('../../app/commands/status')
  assert.equal(daysLeftText({ daysLeft: 0.05, overToday: false }), '1.2 hours left at the current growth')
  assert.equal(daysLeftText({ daysLeft: 3.26, overToday: false }), '3.3 days left at the current growth')
  assert.match(daysLeftText({ daysLeft: 0, overToday: false }), /^OVER BUDGET/)
})

// The budget deleted "the oldest day" whole, whatever a target's span: just
// after midnight a scope of kept state in use (its seenAt moved at 23:58,
// within its span) went with yesterday's flows, and an exporter's
// templates with it.
test('--max-storage just after midnight: yesterday goes, a document of a span still being written to (kept state in use) stays', async () => {
  const { KeptState } = require('../../workers/kept-state')
  const db = await freshDb()
  const today = Math.floor(Date.now() / DAY) * DAY
  const now = today + 3 * 60000 // 00:03 UTC
  const kept = new KeptState({ collection: 'netflow_kept', scope: () => 'x', maxEntries: 100, maxPerScope: 10 })
  const flows = []
  for (let i = 0; i < 400; i++) flows.push({ receivedAt: new Date(today - DAY + i * 60000), pad: 'x'.repeat(500) })
  for (let i = 0; i < 3; i++) flows.push({ receivedAt: new Date(today + i * 60000), pad: 'x'.repeat(500) })
  await db.collection('flows').insertMany(flows)
  await db.collection('netflow_kept').insertMany([
    { _id: 'in use\u0000template 256', scope: 'in use', name: 'template 256', seenAt: new Date(today - 2 * 60000) }, // 23:58, last moved 5 minutes ago
    { _id: 'gone\u0000template 256', scope: 'gone', name: 'template 256', seenAt: new Date(today - 3 * 3600000) } // 21:00
  ])
  const budget = keeper(db, [{ collection: 'flows', field: 'receivedAt', declared: true }, ...kept.storageTargets()], { maxStorage: 20000, retentionBy: 'sweeper' })
  await budget.setUp()
  await budget.measure(now)
  assert.equal(await db.collection('flows').countDocuments({ receivedAt: { $lt: new Date(today) } }), 0, 'yesterday\'s flows deleted')
  assert.deepEqual((await db.collection('netflow_kept').find().toArray()).map((doc) => doc.scope), ['in use'], 'the quiet scope of yesterday goes, the one in use stays')
})

// The oldest day was read over every document, the deletes only over those
// past their span: with only today's flows and kept state of 23:58 still in
// use, the same day came back each pass, thousands of warnings a second.
test('--max-storage just after midnight with only today\'s data and kept state still in use: one pass, said once, nothing in use deleted', async () => {
  const { KeptState } = require('../../workers/kept-state')
  const db = await freshDb()
  const today = Math.floor(Date.now() / DAY) * DAY
  const now = today + 5 * 60000 // 00:05 UTC
  const kept = new KeptState({ collection: 'netflow_kept', scope: () => 'x', maxEntries: 100, maxPerScope: 10 })
  await db.collection('flows').insertMany(Array.from({ length: 200 }, (_, i) => ({ receivedAt: new Date(today + i * 1000), pad: 'x'.repeat(500) })))
  await db.collection('netflow_kept').insertOne({ _id: 'in use\u0000template 256', scope: 'in use', name: 'template 256', seenAt: new Date(today - 2 * 60000) })
  const { logger, records } = captureLogger()
  const budget = keeper(db, [{ collection: 'flows', field: 'receivedAt', declared: true }, ...kept.storageTargets()], { maxStorage: 1024, retentionBy: 'sweeper' }, logger)
  await budget.setUp()
  let timer
  const passed = await Promise.race([budget.measure(now).then(() => true), new Promise((resolve) => { timer = setTimeout(resolve, 10000, false) })])
  clearTimeout(timer)
  budget.stopped = true
  assert.ok(passed, 'the pass ends')
  const warnings = records.filter((record) => /storage over budget/.test(record.msg))
  assert.ok(warnings.length <= 2, `said at most twice, not in a loop: ${warnings.length}`)
  assert.equal(await db.collection('netflow_kept').countDocuments(), 1, 'the kept state in use stays')
  assert.equal(await db.collection('flows').countDocuments(), 200, 'today\'s flows stay')
})

// A misspelt expireBy (`recievedAt`) turned retention off with one info line to show for it.
test('documents none of which carries a date in the field retention ages them by: said, they never expire', async () => {
  const db = await freshDb()
  await db.collection('points').insertMany([{ receivedAt: new Date(Date.now() - 3 * DAY) }, { receivedAt: new Date() }])
  const { logger, records } = captureLogger()
  const misspelt = keeper(db, [{ collection: 'points', field: 'recievedAt', declared: true }], { retention: DAY, retentionBy: 'sweeper' }, logger)
  await misspelt.setUp()
  await misspelt.measure()
  const warning = records.find((r) => r.level === 'warn' && /none with a date in recievedAt/.test(r.msg))
  assert.ok(warning, records.map((r) => r.msg).join('\n'))
  assert.match(warning.msg, /^points: 2 documents and none with a date in recievedAt: none expires by retention/)
  const right = captureLogger()
  const spelt = keeper(db, [{ collection: 'points', field: 'receivedAt', declared: true }], { retentionBy: 'sweeper' }, right.logger)
  await spelt.setUp()
  await spelt.measure()
  assert.ok(!right.records.some((r) => /none with a date/.test(r.msg)), 'not said of documents that carry it')
})

// After an upgrade, flow_minutes of the version before lastSeen had none:
// in no day, neither retention nor the budget took them, and the budget
// deleted every flow older than today instead, then said today's data alone
// was over it. They take lastSeen from their minute at the leader's start;
// kept state without seenAt is taken as seen then, so it expires too.
test('documents of an updates sink from before its expireBy field: a minute\'s from its minute, kept state as seen at the start; the budget then takes the month-old minutes first', async () => {
  const { UpdatesSink } = require('../../workers/sink-stores')
  const { KeptState } = require('../../workers/kept-state')
  const db = await freshDb()
  const today = Math.floor(Date.now() / DAY) * DAY
  const minutes = new UpdatesSink({ kind: 'updates', collection: 'flow_minutes', expireBy: 'lastSeen', expireFrom: 'minute', of: () => null })
  const kept = new KeptState({ collection: 'netflow_kept', scope: () => 'x', maxEntries: 100, maxPerScope: 10 })
  const old = []
  for (let i = 0; i < 300; i++) old.push({ _id: `m${i}`, minute: new Date(today - 30 * DAY + i * 60000), bytes: i, pad: 'x'.repeat(300) })
  await db.collection('flow_minutes').insertMany(old)
  await db.collection('flow_minutes').insertOne({ _id: 'written since', minute: new Date(today - 30 * DAY), lastSeen: new Date(today + 60000), pad: 'x'.repeat(300) })
  await db.collection('flows').insertMany(Array.from({ length: 300 }, (_, i) => ({ receivedAt: new Date(today - DAY + i * 60000), pad: 'x'.repeat(300) })))
  await db.collection('netflow_kept').insertOne({ _id: '10.0.0.1\u0000template 256', scope: '10.0.0.1', name: 'template 256', value: { value: [1] } })
  const { logger, records } = captureLogger()
  const started = Date.now()
  const budget = keeper(db, [{ collection: 'flows', field: 'receivedAt', declared: true }, ...minutes.storageTargets(), ...kept.storageTargets()], { maxStorage: 200000, retentionBy: 'sweeper' }, logger)
  await budget.setUp()
  const legacy = await db.collection('netflow_kept').findOne()
  assert.ok(legacy.seenAt instanceof Date && legacy.seenAt.getTime() >= started, 'kept state of an earlier version: seen at the start')
  assert.equal((await db.collection('flow_minutes').findOne({ _id: 'written since' })).lastSeen.getTime(), today + 60000, 'a lastSeen a writer set is never lowered')
  await budget.measure()
  assert.equal(await db.collection('flow_minutes').countDocuments({ _id: /^m/ }), 0, 'the month-old minutes went first')
  assert.equal(await db.collection('flows').countDocuments(), 300, 'yesterday\'s flows stay: deleting the old minutes was enough')
  assert.ok(!records.some((r) => /today's data alone/.test(r.msg)), 'not said to be today\'s data')
})

// The embedded server keeps no index to sort by: a find sorted on the age
// field read and sorted the whole collection under its lock, every write
// waiting (12 s at 400,000 documents, two a minute per collector: a trial's
// three collectors on one collection stalled for minutes). There the keeper
// reads the first and last documents in natural order, and deletes what
// expired in one delete rather than a slice of time each.
test('on a server with no index to sort by, measuring and sweeping sort nothing by the age field and delete in one command: the same figures, the same documents deleted', async (t) => {
  const { uri } = await getTestMongo()
  const watched = await new MongoClient(uri, { monitorCommands: true }).connect()
  t.after(() => watched.close())
  const commands = []
  watched.on('commandStarted', (event) => commands.push(event.command))
  const db = watched.db(uniqueDbName('keeper'))
  const now = Date.now()
  const docs = Array.from({ length: 1000 }, (_, i) => ({ receivedAt: new Date(now - (1000 - i) * 60000), text: 'x'.repeat(100) })) // one a minute, in arrival order
  await db.collection('logs').insertMany(docs)
  const k = keeper(db, [LOGS], { retention: 500.5 * 60000, retentionBy: 'sweeper' }) // half a minute from the nearest document
  await k.setUp()
  await k.measure()
  const measured = k.stats().collections.logs
  assert.deepEqual([measured.documents, measured.oldest, measured.newest], [1000, docs[0].receivedAt.getTime(), docs[999].receivedAt.getTime()])
  await k.sweep()
  assert.equal(await db.collection('logs').countDocuments(), 500, 'what is older than the retention deleted')
  // The count is as measured, the deletions as they happen: status says how many went since the count (QA: 1000 beside 500 deleted read as 1000 left).
  const swept = k.stats().collections.logs
  assert.deepEqual([swept.documents, swept.deleted.retention, swept.deletedSinceMeasured], [1000, 500, 500])
  assert.match(storageLines(k.stats()).join('\n'), /logs +1000 \(500 deleted since\) /)
  assert.equal(await db.collection('logs').countDocuments({ receivedAt: { $lt: new Date(now - 500.5 * 60000) } }), 0)
  const sortKeys = (sort) => sort instanceof Map ? [...sort.keys()] : Object.keys(sort) // the driver sends a Map
  const sorted = commands.filter((c) => c.find === 'logs' && c.sort && sortKeys(c.sort).some((key) => key !== '$natural'))
  assert.deepEqual(sorted, [], 'no find sorted by a field')
  assert.equal(commands.filter((c) => c.delete === 'logs').length, 1, 'one delete')
  // The server fills the places the delete freed first: natural order is not arrival order (review).
  const fresh = Array.from({ length: 100 }, (_, i) => ({ receivedAt: new Date(now + i), text: 'y' }))
  await db.collection('logs').insertMany(fresh)
  await k.measure()
  const again = k.stats().collections.logs
  assert.deepEqual([again.documents, again.deletedSinceMeasured, again.oldest, again.newest], [600, 0, docs[500].receivedAt.getTime(), fresh[99].receivedAt.getTime()], 'the true extremes, read whole')
  // Past 20,000 documents they are not read at all (each measure would read the collection): said as unknown, no warning of undated documents.
  const { logger, records } = captureLogger()
  const big = keeper(db, [LOGS], { retentionBy: 'sweeper' }, logger)
  await db.collection('logs').insertMany(Array.from({ length: 20000 }, (_, i) => ({ receivedAt: new Date(now + 1000 + i) })))
  await big.setUp()
  await big.measure()
  const large = big.stats().collections.logs
  assert.deepEqual([large.documents, large.oldest, large.newest], [20600, null, null])
  assert.deepEqual(records.filter((r) => /none with a date/.test(r.msg)), [])
  assert.deepEqual(commands.filter((c) => c.find === 'logs' && c.sort && sortKeys(c.sort).some((key) => key !== '$natural')), [], 'still no find sorted by a field')
})
