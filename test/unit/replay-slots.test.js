'use strict'

// A batch replayed by a later run (disk buffer, dead letters) goes to the
// worker of the slot it was formed for: the slot is kept in its record
// (lib/master/journal-record.js), and Backlog#deliver routes by it when the
// pool has as many slots as when it was written, else by its origin.
// Records of the earlier layout (magic 'CCJ1', no slot) are still read.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')
const { writeRecordFile, readRecordFile } = require('../../lib/master/journal-record')
const { createBatch } = require('../../lib/master/batch')
const Backlog = require('../../lib/master/backlog')
const { KIND_UDP, entrySize, writeEntry } = require('../../lib/shared/batch-codec')
const { removeDir } = require('../helpers/temp-dir')

const BASE_ID = 1700000000 * 0x10000

function batchOf (n, origin, formedFor = null) {
  const data = Buffer.from(`message ${n}`)
  const bytes = Buffer.alloc(entrySize(data, '10.0.0.1'))
  writeEntry(bytes, 0, data, '10.0.0.1', 5000, 1700000000000 + n)
  return createBatch(KIND_UDP, bytes, 1, BASE_ID + n, origin, 1700000000000 + n, formedFor)
}

function tempFile (t, name) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'replay-slots-'))
  t.after(() => removeDir(root))
  return path.join(root, name)
}

// A record as the earlier layout wrote it, built here from its description:
// 'CCJ1' | body length | CRC-32 of the body | kind u8 | count u32 | batch id
// f64 | receivedAt f64 | origin length u8 | origin | bytes.
function recordV1 (batch) {
  const meta = Buffer.alloc(22 + batch.origin.length)
  meta[0] = batch.kind
  meta.writeUInt32BE(batch.count, 1)
  meta.writeDoubleBE(batch.id, 5)
  meta.writeDoubleBE(batch.receivedAt, 13)
  meta[21] = batch.origin.length
  meta.write(batch.origin, 22, 'latin1')
  const body = Buffer.concat([meta, batch.bytes])
  const head = Buffer.alloc(12)
  head.write('CCJ1', 0, 'latin1')
  head.writeUInt32BE(body.length, 4)
  head.writeUInt32BE(zlib.crc32(body), 8)
  return Buffer.concat([head, body])
}

test('a record keeps the slot its batch was formed for, and the pool size; one of the earlier layout reads back without them', (t) => {
  const file = tempFile(t, 'mixed.ccj')
  const slotted = batchOf(1, 'a1b2c3d4_2', { slot: 1, of: 2 })
  writeRecordFile(file, slotted, slotted.bytes)
  const old = batchOf(2, 'a1b2c3d4_1')
  fs.appendFileSync(file, recordV1(old))
  const { batches, damaged } = readRecordFile(file)
  assert.deepEqual(damaged, { records: 0, bytes: 0 })
  assert.deepEqual(batches.map((b) => [b.id, b.origin, b.count, b.formedFor]), [[slotted.id, 'a1b2c3d4_2', 1, { slot: 1, of: 2 }], [old.id, 'a1b2c3d4_1', 1, null]])
  assert.ok(batches[1].bytes.equals(old.bytes), 'the earlier layout\'s bytes whole')
})

test('a damaged record of either layout is skipped: the next one of the other layout is found again', (t) => {
  const file = tempFile(t, 'damaged.ccj')
  const a = batchOf(1, 'a1b2c3d4_1', { slot: 0, of: 2 })
  writeRecordFile(file, a, a.bytes)
  const bytes = fs.readFileSync(file)
  bytes[bytes.length - 1] ^= 0xff // its data: the checksum fails
  const b = batchOf(2, 'a1b2c3d4_2')
  fs.writeFileSync(file, Buffer.concat([bytes, recordV1(b)]))
  const { batches, damaged } = readRecordFile(file)
  assert.deepEqual(damaged, { records: 1, bytes: bytes.length })
  assert.deepEqual(batches.map((x) => x.id), [b.id])
})

function replayInto (instances, batches) {
  const got = new Map()
  const workers = Array.from({ length: instances }, (_, slot) => ({ slot, redeliver: (batch) => got.set(batch.id, slot) }))
  const replayed = []
  const backlog = new Backlog({ options: { instances }, counters: { replayed: (n) => replayed.push(n) }, logger: null })
  const unplaced = backlog.deliver(batches, workers)
  return { got, unplaced, replayed }
}

test('replayed batches go to the worker of the slot they were formed for, whatever order their origins come in; by origin when the pool size differs or the slot is not known', () => {
  const batches = [
    batchOf(1, 'r_4', { slot: 1, of: 2 }), // slot 1's worker's origin first: it once went to the first worker
    batchOf(2, 'r_3', { slot: 0, of: 2 }),
    batchOf(3, 'r_4', { slot: 1, of: 2 }),
    batchOf(4, 'q_1'),
    batchOf(5, 'q_2'),
    batchOf(6, 'q_1')
  ]
  const same = replayInto(2, batches)
  assert.deepEqual([...same.got], [[batches[0].id, 1], [batches[1].id, 0], [batches[2].id, 1], [batches[3].id, 0], [batches[4].id, 1], [batches[5].id, 0]])
  assert.equal(same.unplaced, 3, 'the three of the earlier layout, by origin')
  assert.deepEqual(same.replayed, [1, 1, 1, 1, 1, 1])
  const grown = replayInto(3, batches.slice(0, 3))
  assert.deepEqual([...grown.got.values()], [0, 1, 0], 'formed for 2 slots, replayed into 3: by origin, each origin to one worker')
  assert.equal(grown.unplaced, 3)
})
