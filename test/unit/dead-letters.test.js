'use strict'

// Dead letters (lib/master/dead-letters.js) and the disk buffer's record of
// its destination (lib/master/journal.js) against real files: what is kept
// reads back whole, is queued and taken as the CLI and the master do it,
// and a buffer is set aside rather than replayed into another destination.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Journal } = require('../../lib/master/journal')
const { writeRecordFile, readRecordFile } = require('../../lib/master/journal-record')
const { DeadLetters, listDeadLetters, queueForReplay } = require('../../lib/master/dead-letters')
const { createBatch } = require('../../lib/master/batch')
const { KIND_UDP, entrySize, writeEntry } = require('../../lib/shared/batch-codec')
const { messageKey, originRunIdBytes } = require('../../lib/shared/batch-ids')
const { removeDir } = require('../helpers/temp-dir')

const BASE_ID = 1700000000 * 0x10000

function makeBatch (n, texts = ['one', 'two', 'three'], origin = 'a1b2c3d4_7') {
  const bytes = Buffer.alloc(texts.reduce((sum, text) => sum + entrySize(Buffer.from(text), '10.0.0.1'), 0))
  let offset = 0
  for (const text of texts) offset = writeEntry(bytes, offset, Buffer.from(text), '10.0.0.1', 5000)
  return createBatch(KIND_UDP, bytes, texts.length, BASE_ID + n, origin, 1700000000000 + n)
}

function tempDir (t) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dead-letters-'))
  t.after(() => removeDir(root))
  return root
}

test('a record file reads back the batch written, marked redelivered, under the origin given', (t) => {
  const file = path.join(tempDir(t), 'one.ccj')
  const batch = makeBatch(1)
  writeRecordFile(file, batch, batch.bytes, 'a1b2c3d4_dl9')
  assert.equal(fs.statSync(file).mode & 0o777, 0o600)
  const { batches, damaged } = readRecordFile(file)
  assert.deepEqual(damaged, { records: 0, bytes: 0 })
  assert.equal(batches.length, 1)
  const [back] = batches
  assert.deepEqual([back.kind, back.count, back.id, back.origin, back.receivedAt, back.redelivered], [batch.kind, 3, batch.id, 'a1b2c3d4_dl9', batch.receivedAt, true])
  assert.ok(back.bytes.equals(batch.bytes))
  assert.throws(() => writeRecordFile(file, batch, batch.bytes), { code: 'EEXIST' }, 'never over an existing file')
})

test('kept, listed, queued, taken: a poison batch under an origin of its own with the same message keys, another keeping its origin; one written for another destination stays queued', (t) => {
  const dir = path.join(tempDir(t), 'dead')
  const letters = new DeadLetters({ dir })
  letters.open('db1:27017/events')
  assert.deepEqual(letters.stats(), { dir, files: 0, messages: 0, replayed: 0 })
  const poisonBatch = makeBatch(1)
  const lostBatch = makeBatch(2, ['x', 'y'])
  const poison = letters.keep(poisonBatch, poisonBatch.bytes, 'poison', '3 workers in a row ended')
  const lost = letters.keep(lostBatch, lostBatch.bytes, 'workerLost', 'no worker left')
  assert.equal(poison.origin, `a1b2c3d4_dl${poisonBatch.id}`)
  assert.equal(lost.origin, 'a1b2c3d4_7')
  assert.deepEqual(letters.stats(), { dir, files: 2, messages: 5, replayed: 0 })
  const listed = listDeadLetters(dir)
  assert.deepEqual(listed.map((e) => [e.reason, e.messages, e.queued, e.target]), [['poison', 3, false, 'db1:27017/events'], ['workerLost', 2, false, 'db1:27017/events']])
  assert.ok(listed.every((e) => fs.existsSync(e.file) && e.file.startsWith(dir)))

  assert.throws(() => queueForReplay(dir, ['nope']), { code: 'ENOENT' })
  assert.deepEqual(queueForReplay(dir, [poison.name]).map((e) => e.name), [poison.name])
  assert.deepEqual(listDeadLetters(dir).map((e) => [e.name, e.queued]), [[lost.name, false], [poison.name, true]])

  const { taken, elsewhere, unreadable } = letters.takeQueued()
  assert.deepEqual([elsewhere, unreadable], [[], []])
  assert.equal(taken.length, 1)
  const [back] = taken[0].batches
  assert.equal(back.origin, poison.origin)
  const key = (batch, i) => messageKey(batch.id, originRunIdBytes(batch.origin), i).toString('hex')
  assert.deepEqual([0, 1, 2].map((i) => key(back, i)), [0, 1, 2].map((i) => key(poisonBatch, i)), 'its messages keep their keys')
  letters.remove(taken[0].entry)
  assert.deepEqual(letters.stats(), { dir, files: 1, messages: 2, replayed: 3 })
  assert.deepEqual(listDeadLetters(dir).map((e) => e.name), [lost.name])

  queueForReplay(dir)
  const elsewhereRun = new DeadLetters({ dir })
  elsewhereRun.open('db2:27017/events')
  const other = elsewhereRun.takeQueued()
  assert.deepEqual([other.taken.length, other.elsewhere.map((e) => e.name)], [0, [lost.name]])
})

function journalWith (dir, destination) {
  const journal = new Journal({ dir, maxBytes: 1024 * 1024, destination })
  return { journal, opened: journal.open() }
}

test('a buffer records its destination; opened for another, what it holds is moved beside it, named after the one it was written for, and opens there', (t) => {
  const root = tempDir(t)
  const dir = path.join(root, 'buffer')
  const first = journalWith(dir, 'db1:27017/events')
  assert.equal(first.opened.setAside, null)
  first.journal.append(makeBatch(1))
  first.journal.close()
  fs.mkdirSync(path.join(dir, 'dead-letter'))
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dir, 'destination.json'), 'utf8')), { destination: 'db1:27017/events' })

  const same = journalWith(dir, 'db1:27017/events')
  assert.deepEqual([same.opened.setAside, same.opened.batches.length], [null, 1], 'the same destination replays')
  same.journal.close()
  const unsaid = journalWith(dir, null)
  assert.deepEqual([unsaid.opened.setAside, unsaid.opened.batches.length], [null, 1], 'a balancer that does not say is not checked')
  unsaid.journal.close()

  const other = journalWith(dir, 'db2:27017/events')
  const aside = other.opened.setAside
  assert.equal(aside.destination, 'db1:27017/events')
  assert.match(path.basename(aside.dir), /^buffer\.for-db1_27017_events-\d{8}T\d{6}Z$/)
  assert.equal(other.opened.batches.length, 0)
  assert.deepEqual(fs.readdirSync(aside.dir).sort(), ['0000000001.ccj', '0000000001.ccj.live', 'dead-letter', 'destination.json'], 'the segment and the list of its records left go together')
  other.journal.close()
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dir, 'destination.json'), 'utf8')), { destination: 'db2:27017/events' })

  const there = journalWith(aside.dir, 'db1:27017/events')
  assert.deepEqual([there.opened.setAside, there.opened.batches.length], [null, 1])
  there.journal.close()
})

test('a MongoDB collector\'s destination: the hosts and database it writes to, never a password', () => {
  const poison = require('../fixtures/poison-definition')
  const destination = (argv, mongoUri) => new poison.Collector({ ...new poison.Config(argv).getConfig(), workerOptions: { mongoUri } }).destination()
  const uri = 'mongodb://collector:s3cret@h1:27017,h2:27018/other?authSource=admin&tlsCertificateKeyFilePassword=pw'
  assert.equal(destination(['--database', 'events'], uri), 'h1:27017,h2:27018/events')
  assert.equal(destination([], uri), 'h1:27017,h2:27018/other', 'the database the URI names')
  assert.equal(destination([], 'mongodb+srv://u:p@cluster0.example.net/metrics'), 'srv:cluster0.example.net/metrics')
  assert.ok(!/s3cret|pw|collector:/.test(destination([], uri)))
})
