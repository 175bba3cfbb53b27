'use strict'

// The master's disk buffer (lib/master/journal.js) against real files: one
// fresh directory per test. What should come back is checked against what
// the test wrote (ids, bytes) and against the files on disk, not against the
// journal's own bookkeeping.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn, spawnSync } = require('node:child_process')
const { once } = require('node:events')
const { Journal } = require('../../lib/master/journal')
const { createBatch } = require('../../lib/master/batch')
const { KIND_UDP, KIND_TCP, entrySize, writeEntry } = require('../../lib/shared/batch-codec')
const BufferError = require('../../exceptions/buffer-error')
const { removeDir } = require('../helpers/temp-dir')
const { mountTmpfs, dfAvailable } = require('../helpers/tmpfs')

const JOURNAL_MODULE = require.resolve('../../lib/master/journal')
const BATCH_MODULE = require.resolve('../../lib/master/batch')
const CODEC_MODULE = require.resolve('../../lib/shared/batch-codec')
const BASE_ID = 1700000000 * 0x10000 // a batch id as lib/shared/batch-ids.js makes them
const KIB = 1024

// A batch in the master's batch format; its text never holds the record
// magic 'CCJ2' (nor 'CCJ'), so a damaged record cannot be mistaken for the next one.
// Also sent as source to child processes: it uses only the names they define.
function makeBatch (n, { kind = KIND_UDP, messages = 3, dataBytes = 40, origin = 'a1b2c3d4_1' } = {}) {
  const entries = []
  for (let i = 0; i < messages; i++) {
    entries.push({ data: Buffer.alloc(dataBytes, `batch ${n} message ${i} `), address: `10.0.${i % 256}.${n % 256}`, port: 1024 + i })
  }
  const bytes = Buffer.alloc(entries.reduce((sum, e) => sum + entrySize(e.data, e.address), 0))
  let offset = 0
  for (const e of entries) offset = writeEntry(bytes, offset, e.data, e.address, e.port, 1700000000000 + n * 7)
  return createBatch(kind, bytes, messages, BASE_ID + n, origin, 1700000000000 + n * 7)
}

// From the format documented in journal-record.js: a 12-byte head (magic,
// body length, CRC), 26 bytes of meta (kind 1, count 4, batch id 8,
// receivedAt 8, slot 2, pool size 2, origin length 1), the origin, the batch's bytes.
const META = 26
function recordSize (batch) {
  return 12 + META + batch.origin.length + batch.bytes.length
}

function tempDir (t) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-'))
  t.after(() => removeDir(root))
  return path.join(root, 'buffer')
}

function segmentFiles (dir) {
  return fs.readdirSync(dir).filter((name) => name.endsWith('.ccj')).sort()
}

function bytesOnDisk (dir) {
  return segmentFiles(dir).reduce((sum, name) => sum + fs.statSync(path.join(dir, name)).size, 0)
}

function openJournal (t, dir, options = {}) {
  const journal = new Journal({ dir, maxBytes: 64 * 1024 * KIB, sync: 'none', ...options })
  const opened = journal.open()
  t.after(() => { if (journal.active) journal.close() })
  return { journal, opened }
}

function appendAll (journal, batches) {
  for (const batch of batches) assert.equal(journal.append(batch), true, `append ${batch.id}`)
}

// What open() returned is exactly `expected` (the batches the test wrote), in
// that order, each read back byte for byte.
function assertReplayed (journal, replayed, expected) {
  assert.deepEqual(replayed.map((b) => b.id), expected.map((b) => b.id), 'the batches, oldest first')
  for (let i = 0; i < expected.length; i++) {
    const got = replayed[i]
    const want = expected[i]
    assert.equal(got.origin, want.origin)
    assert.equal(got.kind, want.kind)
    assert.equal(got.count, want.count)
    assert.equal(got.receivedAt, want.receivedAt)
    assert.equal(got.redelivered, true)
    assert.equal(got.bytes, null, 'bytes stay on disk until read')
    assert.ok(journal.read(got).equals(want.bytes), `bytes of ${want.id}`)
  }
}

function sum (batches, fn) {
  return batches.reduce((n, b) => n + fn(b), 0)
}

test('unreleased batches come back at the next open, oldest first, with their ids, origins and bytes', (t) => {
  const dir = tempDir(t)
  const written = [
    makeBatch(1),
    makeBatch(2, { kind: KIND_TCP, messages: 1, dataBytes: 300 }),
    makeBatch(3, { origin: 'ffff0000_12', messages: 7 }),
    makeBatch(4, { kind: KIND_TCP, origin: 'ffff0000_12', messages: 2, dataBytes: 0 }),
    makeBatch(5, { messages: 50, dataBytes: 5 })
  ]
  const first = openJournal(t, dir)
  assert.deepEqual(first.opened, { batches: [], found: { segments: 0, records: 0, messages: 0, bytes: 0 }, damaged: { records: 0, bytes: 0 }, setAside: null, small: null })
  appendAll(first.journal, written)
  first.journal.close()
  assert.deepEqual(segmentFiles(dir), ['0000000001.ccj'])
  assert.equal(fs.existsSync(path.join(dir, 'lock')), false, 'close removes the lock file')

  const size = sum(written, recordSize)
  const messages = sum(written, (b) => b.count)
  assert.equal(bytesOnDisk(dir), size, 'the file holds exactly the records')
  for (let round = 0; round < 2; round++) { // a replayed batch not released survives another restart
    const { journal, opened } = openJournal(t, dir)
    assert.deepEqual(opened.found, { segments: 1, records: written.length, messages, bytes: size })
    assert.deepEqual(opened.damaged, { records: 0, bytes: 0 })
    assertReplayed(journal, opened.batches, written)
    assert.equal(Number.parseInt(fs.readFileSync(path.join(dir, 'lock'), 'utf8'), 10), process.pid)
    const stats = journal.stats()
    assert.deepEqual([stats.segments, stats.records, stats.messages, stats.bytes], [2, written.length, messages, size], 'the old segment and a new, empty, active one')
    journal.close()
    assert.deepEqual(segmentFiles(dir), ['0000000001.ccj'], 'the empty active segment is deleted at close')
  }
})

// Which segment each record lands in, from the documented rule: a new
// segment once the active one holds segmentBytes or more.
function expectedSegments (batches, segmentBytes) {
  const segments = [[]]
  let size = 0
  for (const batch of batches) {
    if (size >= segmentBytes) {
      segments.push([])
      size = 0
    }
    segments[segments.length - 1].push(batch)
    size += recordSize(batch)
  }
  return segments
}

test('a segment goes once all its records are released and it is no longer active; close keeps the others', (t) => {
  const dir = tempDir(t)
  const maxBytes = 2 * 1024 * KIB // segments of max(64 KiB, maxBytes / 16) = 128 KiB
  const { journal } = openJournal(t, dir, { maxBytes })
  assert.equal(journal.segmentBytes, 128 * KIB)
  const written = []
  for (let n = 1; n <= 50; n++) written.push(makeBatch(n, { messages: 10, dataBytes: 1000 - n }))
  appendAll(journal, written)
  const segments = expectedSegments(written, 128 * KIB)
  assert.equal(segments.length, 4)
  const files = segmentFiles(dir)
  assert.deepEqual(files.map((name) => fs.statSync(path.join(dir, name)).size), segments.map((s) => sum(s, recordSize)))

  const check = (unreleased, what) => {
    const stats = journal.stats()
    assert.equal(stats.bytes, bytesOnDisk(dir), `${what}: bytes = the segment files' sizes`)
    assert.equal(stats.records, unreleased.length, `${what}: records`)
    assert.equal(stats.messages, sum(unreleased, (b) => b.count), `${what}: messages`)
    assert.equal(stats.segments, segmentFiles(dir).length, `${what}: segments`)
  }
  check(written, 'all appended')
  const [oldest, second, third, active] = segments
  for (const batch of oldest.slice(0, -1)) journal.release(batch)
  assert.deepEqual(segmentFiles(dir), files, 'a segment with one record unreleased stays')
  journal.release(oldest[oldest.length - 1])
  journal.release(oldest[0]) // again: nothing happens
  assert.deepEqual(segmentFiles(dir), files.slice(1), 'its last record released: the oldest segment is deleted')
  check([...second, ...third, ...active], 'oldest released')
  for (const batch of active) journal.release(batch)
  assert.deepEqual(segmentFiles(dir), files.slice(1), 'the active segment stays while active, though all released')
  for (const batch of third) journal.release(batch)
  journal.release(second[1])
  const kept = second.filter((_, i) => i !== 1)
  check(kept, 'some of the second segment unreleased')
  assert.equal(journal.full, false)

  journal.close()
  assert.deepEqual(fs.readdirSync(dir), [files[1], `${files[1]}.live`], 'close deletes the released active segment and the lock; keeps the one with unreleased records, and the list of them')
  const again = openJournal(t, dir, { maxBytes })
  assertReplayed(again.journal, again.opened.batches, kept) // the records not released, not the one released in a kept segment
  assert.deepEqual(again.opened.found.messages, sum(kept, (b) => b.count))
  for (const batch of again.opened.batches) again.journal.release(batch)
  assert.equal(again.journal.stats().bytes, 0, 'the replayed segment is deleted once released (it is not the active one)')
  again.journal.close()
  assert.ok(fs.statSync(dir).isDirectory())
  assert.deepEqual(fs.readdirSync(dir), [], 'fully released: no segment files, lists or lock file')
})

// After a crash a segment has no list, or the one an earlier stop wrote,
// which names records released since: every record it names comes back
// (stored twice is stored once, by key), never fewer than are left.
test('a kept segment without its list (a crash) gives back every record; with a list from an earlier stop, those it names', (t) => {
  const dir = tempDir(t)
  const written = [1, 2, 3, 4].map((n) => makeBatch(n))
  const first = openJournal(t, dir)
  appendAll(first.journal, written)
  first.journal.release(written[1])
  first.journal.close()
  const list = path.join(dir, '0000000001.ccj.live')
  const listed = fs.readFileSync(list)
  const second = openJournal(t, dir)
  assertReplayed(second.journal, second.opened.batches, [written[0], written[2], written[3]])
  second.journal.release(second.opened.batches[0])
  second.journal.close() // lists 3 and 4
  fs.writeFileSync(list, listed) // as if the second run had been killed: the first stop's list
  const third = openJournal(t, dir)
  assertReplayed(third.journal, third.opened.batches, [written[0], written[2], written[3]])
  third.journal.close()
  fs.rmSync(list)
  const fourth = openJournal(t, dir)
  assertReplayed(fourth.journal, fourth.opened.batches, written) // no list: all of the segment
  fourth.journal.close()
})

// After a crash the whole segment came back: every message of it counted
// again. While it runs, the list is written every second (the timer's
// work, listReleased, called here as it would be).
test('a crash after a running list: what was released before it stays released, what was released after it or appended past it comes back; an older version reads no list and replays all', (t) => {
  const { listReleased } = require('../../lib/master/journal-segment')
  const dir = tempDir(t)
  const written = [1, 2, 3, 4, 5, 6].map((n) => makeBatch(n))
  const first = openJournal(t, dir)
  appendAll(first.journal, written.slice(0, 4))
  first.journal.release(written[1])
  const errors = []
  listReleased(first.journal.segments.values(), (err) => errors.push(err))
  assert.deepEqual(errors, [])
  first.journal.release(written[2]) // after the list: comes back
  appendAll(first.journal, written.slice(4)) // past the list's through: comes back
  // What a SIGKILL leaves: the files as they are now, no stop's list.
  const crashed = tempDir(t)
  fs.mkdirSync(crashed, { recursive: true, mode: 0o700 })
  for (const name of fs.readdirSync(dir).filter((f) => /\.ccj(\.live)?$/.test(f))) fs.copyFileSync(path.join(dir, name), path.join(crashed, name))
  const list = JSON.parse(fs.readFileSync(path.join(crashed, '0000000001.ccj.live'), 'utf8'))
  assert.deepEqual(Object.keys(list).sort(), ['running', 'through'], 'not a stop\'s { offsets }: a version before running lists reads it as none')
  const second = openJournal(t, crashed)
  assertReplayed(second.journal, second.opened.batches, [written[0], written[2], written[3], written[4], written[5]])
  second.journal.close()
  first.journal.close()
})

test('a record cut short at the end of the last segment is skipped and counted, at any cut point', async (t) => {
  const written = []
  for (let n = 1; n <= 6; n++) written.push(makeBatch(n, { kind: n % 2 ? KIND_UDP : KIND_TCP, messages: n, dataBytes: 50 }))
  const last = written[written.length - 1]
  const lastStart = sum(written.slice(0, -1), recordSize)
  const lastSize = recordSize(last)
  const cuts = {
    'in the magic': 2,
    'in the length field': 6,
    'in the checksum': 11,
    'at the end of the head': 12,
    'in the meta': 12 + 9,
    'in the origin': 12 + META + 3,
    'at the start of the data': 12 + META + last.origin.length,
    'in the data': 12 + META + last.origin.length + 100,
    'one byte short': lastSize - 1
  }
  for (const [where, keep] of Object.entries(cuts)) {
    await t.test(where, (t) => {
      const dir = tempDir(t)
      const first = openJournal(t, dir)
      appendAll(first.journal, written)
      first.journal.close()
      const file = path.join(dir, '0000000001.ccj')
      fs.truncateSync(file, lastStart + keep)
      const { journal, opened } = openJournal(t, dir)
      assertReplayed(journal, opened.batches, written.slice(0, -1))
      assert.deepEqual(opened.damaged, { records: 1, bytes: keep })
      assert.deepEqual(opened.found, { segments: 1, records: written.length - 1, messages: sum(written.slice(0, -1), (b) => b.count), bytes: lastStart + keep })
      const more = makeBatch(7)
      assert.equal(journal.append(more), true, 'appending goes on, in a new segment')
      for (const batch of opened.batches) journal.release(batch)
      assert.equal(fs.existsSync(file), false, 'the damaged segment goes once its good records are released')
      journal.close()
      const after = openJournal(t, dir)
      assertReplayed(after.journal, after.opened.batches, [more])
      assert.deepEqual(after.opened.damaged, { records: 0, bytes: 0 })
    })
  }
})

test('the next run writes past every segment a killed run left, even one it had just begun and left empty: no name is used twice', (t) => {
  const dir = tempDir(t)
  const killed = new Journal({ dir, maxBytes: 64 * 1024 * KIB, sync: 'none' })
  killed.open()
  const written = [makeBatch(1), makeBatch(2)]
  appendAll(killed, written)
  // SIGKILLed after starting its next segment: no close, the lock left behind.
  fs.writeFileSync(path.join(dir, '0000000002.ccj'), '')
  const { journal, opened } = openJournal(t, dir)
  assertReplayed(journal, opened.batches, written)
  assert.deepEqual(segmentFiles(dir), ['0000000001.ccj', '0000000003.ccj'], 'the empty one goes, and its name is not taken again')
  const more = makeBatch(3)
  assert.equal(journal.append(more), true)
  assert.equal(path.basename(more.at.segment.file), '0000000003.ccj')
})

// Writes `written` into a fresh journal, changes one byte of the file, and
// checks that the record holding it, and only it, is lost.
function assertOneRecordLost (t, written, lost, offsetInRecord, change) {
  const dir = tempDir(t)
  const first = openJournal(t, dir)
  appendAll(first.journal, written)
  first.journal.close()
  const file = path.join(dir, '0000000001.ccj')
  const buf = fs.readFileSync(file)
  const at = sum(written.slice(0, lost), recordSize) + offsetInRecord
  buf[at] = change(buf[at])
  fs.writeFileSync(file, buf)
  const { journal, opened } = openJournal(t, dir)
  const survivors = written.filter((_, i) => i !== lost)
  assertReplayed(journal, opened.batches, survivors)
  assert.deepEqual(opened.damaged, { records: 1, bytes: recordSize(written[lost]) })
  assert.equal(opened.found.records, survivors.length)
}

test('a damaged record in the middle is skipped; the records before and after it come back intact', async (t) => {
  const written = []
  for (let n = 1; n <= 7; n++) written.push(makeBatch(n, { messages: 2 + n, dataBytes: 30 + n }))
  const dataAt = 12 + META + written[3].origin.length
  const flip = (byte) => byte ^ 0x40
  await t.test('a flipped byte in the data', (t) => assertOneRecordLost(t, written, 3, dataAt + 17, flip))
  await t.test('a flipped byte in the meta (message count)', (t) => assertOneRecordLost(t, written, 3, 12 + 4, flip))
  await t.test('a flipped byte in the checksum', (t) => assertOneRecordLost(t, written, 3, 9, flip))
  await t.test('the length made huge (past the end of the file)', (t) => assertOneRecordLost(t, written, 3, 4, flip))
  await t.test('the length one more (the body takes the next magic)', (t) => assertOneRecordLost(t, written, 3, 7, (b) => b + 1))
  await t.test('the length one less', (t) => assertOneRecordLost(t, written, 3, 7, (b) => b - 1))
  await t.test('the length 64 KiB more (past the end of the file)', (t) => assertOneRecordLost(t, written, 3, 6, (b) => b + 1))
  await t.test('the first record', (t) => assertOneRecordLost(t, written, 0, dataAt, flip))
  await t.test('the magic', (t) => assertOneRecordLost(t, written, 5, 1, flip))
})

test('the directory of another live process is refused; a lock left by a dead one is taken over', async (t) => {
  const dir = tempDir(t)
  const lock = path.join(dir, 'lock')
  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' })
  t.after(() => holder.kill('SIGKILL'))
  await once(holder, 'spawn')
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(lock, `${holder.pid}\n`)
  const refused = new Journal({ dir, maxBytes: 1024 * KIB })
  assert.throws(() => refused.open(), (err) => {
    assert.ok(err instanceof BufferError)
    assert.equal(err.code, 'ERR_BUFFER')
    assert.equal(err.dir, dir)
    assert.match(err.message, new RegExp(`^disk buffer ${dir}: in use by process ${holder.pid}\\b.*--buffer-dir`))
    assert.ok(!err.message.includes('\n'), 'one line')
    return true
  })
  assert.equal(fs.readFileSync(lock, 'utf8'), `${holder.pid}\n`, 'the holder keeps its lock')
  assert.deepEqual(segmentFiles(dir), [], 'nothing written')

  // The same pid with another start time: a process that reused the pid of
  // one gone (after a reboot), not the holder (PM2 resurrecting a collector
  // at boot was refused its own buffer).
  fs.writeFileSync(lock, `${holder.pid} 1\n`)
  const reused = openJournal(t, dir)
  assert.equal(Number.parseInt(fs.readFileSync(lock, 'utf8'), 10), process.pid, 'a lock naming a reused pid is taken over')
  reused.journal.close()
  fs.writeFileSync(lock, `${holder.pid}\n`)

  holder.kill('SIGKILL')
  await once(holder, 'exit')
  const { journal, opened } = openJournal(t, dir)
  assert.deepEqual(opened.batches, [])
  assert.match(fs.readFileSync(lock, 'utf8'), new RegExp(`^${process.pid} \\d+\n$`), 'a dead holder\'s lock is taken over, naming this process and its start time')
  assert.equal(journal.append(makeBatch(1)), true)
})

test('full turns on when the buffer holds maxBytes and off when releases delete enough segments', (t) => {
  const dir = tempDir(t)
  const maxBytes = 512 * KIB // segments of 64 KiB
  const { journal } = openJournal(t, dir, { maxBytes })
  const written = []
  for (let n = 1; !journal.full; n++) {
    assert.ok(bytesOnDisk(dir) < maxBytes, 'not full while the files hold less than maxBytes')
    const batch = makeBatch(n, { messages: 20, dataBytes: 500 })
    appendAll(journal, [batch])
    written.push(batch)
  }
  assert.ok(bytesOnDisk(dir) >= maxBytes, 'full once the files hold maxBytes')
  assert.ok(bytesOnDisk(dir) < maxBytes + recordSize(written[0]), 'and not before')
  for (const batch of written) {
    journal.release(batch)
    assert.equal(journal.full, bytesOnDisk(dir) >= maxBytes, `after releasing ${batch.id - BASE_ID}`)
    if (!journal.full) break
  }
  assert.equal(journal.full, false)
  assert.ok(segmentFiles(dir).length < Math.ceil(maxBytes / (64 * KIB)))
})

test('a buffer full within its active segment is no longer full once all of it is released', (t) => {
  const dir = tempDir(t)
  const maxBytes = 64 * KIB // one segment is the whole bound
  const { journal } = openJournal(t, dir, { maxBytes })
  const written = []
  for (let n = 1; !journal.full; n++) {
    const batch = makeBatch(n, { messages: 10, dataBytes: 500 })
    assert.equal(journal.append(batch), true)
    written.push(batch)
  }
  assert.equal(segmentFiles(dir).length, 1)
  for (const batch of written) journal.release(batch)
  assert.equal(journal.full, false, 'empty: not full')
  assert.deepEqual([journal.stats().bytes, bytesOnDisk(dir)], [0, 0], 'the released segment is gone, a new empty one active')
  assert.equal(journal.append(makeBatch(999)), true)
  assert.equal(journal.stats().records, 1)
})

test('a buffer directory that cannot be created: ERR_BUFFER, one line naming it and why', (t) => {
  const dir = tempDir(t)
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'file'), 'x')
  const inside = path.join(dir, 'file', 'buffer')
  assert.throws(() => new Journal({ dir: inside, maxBytes: 1024 * KIB }).open(), (err) => {
    assert.ok(err instanceof BufferError)
    assert.equal(err.code, 'ERR_BUFFER')
    assert.equal(err.message, `disk buffer ${inside}: cannot create the directory (ENOTDIR)`)
    return true
  })
})

test('sync: batch syncs once per append, none never, interval when written', (t) => {
  const batches = [makeBatch(1), makeBatch(2), makeBatch(3)]
  const perAppend = openJournal(t, tempDir(t), { sync: 'batch' }).journal
  const never = openJournal(t, tempDir(t), { sync: 'none' }).journal
  const interval = openJournal(t, tempDir(t), { sync: 'interval' }).journal
  for (let i = 0; i < batches.length; i++) {
    appendAll(perAppend, [batches[i]])
    appendAll(never, [batches[i]])
    assert.equal(perAppend.stats().syncs, i + 1)
    assert.equal(never.stats().syncs, 0)
  }
  never.close()
  assert.equal(never.stats().syncs, 0, 'none: not even at close')
  assert.equal(perAppend.stats().writeErrors, 0)
  interval.syncNow() // what its timer calls
  assert.equal(interval.stats().syncs, 0, 'interval: nothing written, nothing to sync')
  appendAll(interval, batches)
  interval.syncNow()
  interval.syncNow()
  assert.equal(interval.stats().syncs, 1, 'interval: once for what was written since the last sync')
})

// Runs `body` in a child process (limits set by prlimit) with `journal`
// opened on `dir` and `makeBatch` defined; prints what body returns as JSON.
function runChild (limits, dir, body) {
  const source = `
    const { Journal } = require(${JSON.stringify(JOURNAL_MODULE)})
    const { createBatch } = require(${JSON.stringify(BATCH_MODULE)})
    const { KIND_UDP, entrySize, writeEntry } = require(${JSON.stringify(CODEC_MODULE)})
    const BASE_ID = ${BASE_ID}
    ${makeBatch.toString()}
    const journal = new Journal({ dir: ${JSON.stringify(dir)}, maxBytes: 1024 * 1024, sync: 'none' })
    journal.open()
    const result = (${body.toString()})(journal)
    journal.close()
    process.stdout.write(JSON.stringify(result))`
  const child = spawnSync('prlimit', [...limits, process.execPath, '-e', source], { encoding: 'utf8' })
  assert.equal(child.status, 0, child.stderr)
  return JSON.parse(child.stdout)
}

const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0

// Not fs.closeSync(journal.active.fd): that leaves the journal a stale fd
// number which the process may give to the next file it opens (and close()
// would then close that file), and the write then fails before writing
// anything. A file size limit (RLIMIT_FSIZE, which Node answers with EFBIG,
// not SIGXFSZ) makes the kernel write part of a record, as a full disk does.
test('a write cut short by the file size limit returns false, counts, and leaves no partial record', { skip: !hasPrlimit && 'no prlimit' }, (t) => {
  const dir = tempDir(t)
  const good = [makeBatch(1), makeBatch(2)]
  const big = makeBatch(3, { messages: 10, dataBytes: 400 })
  const small = makeBatch(4, { messages: 1, dataBytes: 10 })
  const limit = sum(good, recordSize) + recordSize(big) - 100
  assert.ok(limit > sum(good, recordSize) + recordSize(small))
  const result = runChild([`--fsize=${limit}`], dir, (journal) => {
    const appended = [makeBatch(1), makeBatch(2)].map((b) => journal.append(b))
    appended.push(journal.append(makeBatch(3, { messages: 10, dataBytes: 400 })))
    const error = { code: journal.lastWriteError.code, message: journal.lastWriteError.message }
    const size = journal.active.size
    appended.push(journal.append(makeBatch(4, { messages: 1, dataBytes: 10 })))
    return { appended, error, size, stats: journal.stats() }
  })
  assert.deepEqual(result.appended, [true, true, false, true])
  assert.equal(result.error.code, 'EFBIG', 'the kernel\'s own error for the write cut short, not a made-up one')
  assert.equal(result.size, sum(good, recordSize), 'the failed record takes no room')
  assert.equal(result.stats.writeErrors, 1)
  assert.equal(result.stats.records, 3)
  assert.equal(result.stats.messages, sum([...good, small], (b) => b.count))

  assert.equal(bytesOnDisk(dir), sum([...good, small], recordSize), 'the file holds the good records only')
  const { journal, opened } = openJournal(t, dir)
  assertReplayed(journal, opened.batches, [...good, small])
  assert.deepEqual(opened.damaged, { records: 0, bytes: 0 })
})

test('a new segment that cannot be opened (out of file descriptors): append returns false, and goes on when it can', { skip: !hasPrlimit && 'no prlimit' }, (t) => {
  const dir = tempDir(t)
  const result = runChild(['--nofile=128'], dir, (journal) => {
    const fs = require('node:fs')
    const appended = []
    let n = 1
    while (journal.active.size < journal.segmentBytes) appended.push(journal.append(makeBatch(n++, { messages: 10, dataBytes: 500 })))
    const held = []
    try {
      for (;;) held.push(fs.openSync('/dev/null', 'r'))
    } catch {}
    const failed = journal.append(makeBatch(n++, { messages: 10, dataBytes: 500 }))
    const error = journal.lastWriteError && journal.lastWriteError.code
    for (const fd of held) fs.closeSync(fd)
    appended.push(journal.append(makeBatch(n++, { messages: 10, dataBytes: 500 })))
    return { appended, failed, error, held: held.length, stats: journal.stats() }
  })
  assert.ok(result.held > 0)
  assert.equal(result.failed, false)
  assert.equal(result.error, 'EMFILE')
  assert.ok(result.appended.every(Boolean))
  assert.equal(result.stats.writeErrors, 1)
  assert.equal(result.stats.segments, 2)
  const { journal, opened } = openJournal(t, dir)
  assert.deepEqual(opened.damaged, { records: 0, bytes: 0 })
  assert.equal(opened.batches.length, result.appended.length)
  assert.equal(journal.stats().records, result.appended.length)
})

// Takes the room of a full disk but `leave` bytes: another program's file.
function fillBut (root, leave) {
  const filler = path.join(root, 'filler')
  const size = dfAvailable(root) - leave
  fs.writeFileSync(filler, Buffer.alloc(size))
  return filler
}

test('on a file system smaller than the bound, open says so and sizes segments so that several fit', (t) => {
  const { dir, root, reason } = mountTmpfs(t, '2m')
  if (!dir) return t.skip(reason)
  const { journal, opened } = openJournal(t, dir, { maxBytes: 1024 * 1024 * KIB })
  const room = dfAvailable(root) // after open: its directory and lock take a block
  assert.ok(opened.small, 'open says the file system is smaller than the bound')
  assert.equal(opened.small.room, room)
  assert.equal(journal.segmentBytes, opened.small.segmentBytes)
  assert.ok(journal.segmentBytes * 8 <= room, `segments of ${journal.segmentBytes} bytes: 8 fit in ${room}`)

  const big = mountTmpfs(t, '8m')
  const roomy = openJournal(t, big.dir, { maxBytes: 1024 * KIB })
  assert.equal(roomy.opened.small, null, 'a bound the file system has room for changes nothing')
  assert.equal(roomy.journal.segmentBytes, 64 * KIB)
})

test('a full disk while the active segment holds only stored batches: a new segment takes over, the old one goes, and writes go on', (t) => {
  const { dir, root, reason } = mountTmpfs(t, '2m')
  if (!dir) return t.skip(reason)
  const { journal } = openJournal(t, dir, { maxBytes: 1024 * 1024 * KIB })
  fillBut(root, 120 * KIB) // the disk filled by someone else since the start: the segment outgrows it
  assert.ok(journal.segmentBytes > 120 * KIB)
  let stored = 0
  for (let n = 1; stored < 1024 * KIB; n++) {
    const batch = makeBatch(n, { messages: 10, dataBytes: 500 })
    assert.equal(journal.append(batch), true, `append ${n} (${stored} bytes stored before it)`)
    journal.release(batch) // stored: acknowledged at once
    stored += recordSize(batch)
  }
  assert.equal(journal.stats().writeErrors, 0)
  assert.ok(bytesOnDisk(dir) < 120 * KIB)
})

test('a full disk with batches waiting: ENOSPC, not a made-up error; once they are released their segment goes at once, and writes go on', (t) => {
  const { dir, root, reason } = mountTmpfs(t, '2m')
  if (!dir) return t.skip(reason)
  const { journal } = openJournal(t, dir, { maxBytes: 1024 * 1024 * KIB })
  fillBut(root, 100 * KIB)
  const waiting = []
  for (let n = 1; n < 1000; n++) {
    const batch = makeBatch(n, { messages: 10, dataBytes: 700 })
    if (!journal.append(batch)) break
    waiting.push(batch)
  }
  assert.ok(waiting.length > 0 && waiting.length < 999)
  assert.equal(journal.lastWriteError.code, 'ENOSPC', `a full disk: ${journal.lastWriteError.message}`)
  assert.equal(journal.stats().writeErrors, 1)
  assert.equal(bytesOnDisk(dir), sum(waiting, recordSize), 'no partial record left')
  const freeWhileFull = dfAvailable(root)
  for (const batch of waiting) journal.release(batch)
  assert.equal(bytesOnDisk(dir), 0, 'the stored segment is deleted at the last release, not at the next write')
  assert.ok(dfAvailable(root) >= freeWhileFull + sum(waiting, recordSize) - 4 * KIB, 'its room is free again')
  assert.equal(journal.append(makeBatch(2000, { messages: 10, dataBytes: 700 })), true)
  assert.equal(journal.stats().records, 1)
})

test('a directory deleted while open: made again with its lock, the records not released written into it, read and released where they are now', (t) => {
  const dir = tempDir(t)
  const { journal } = openJournal(t, dir, { maxBytes: 64 * KIB * 16 })
  const written = []
  for (let n = 1; n <= 40; n++) written.push(makeBatch(n, { messages: 4, dataBytes: 400 })) // ~66 KiB: two segments
  appendAll(journal, written)
  const before = segmentFiles(dir)
  assert.ok(before.length >= 2, `several segments (${before})`)
  const stored = written.filter((b, i) => i % 3 === 0)
  for (const batch of stored) journal.release(batch)
  const waiting = written.filter((b, i) => i % 3 !== 0)
  assert.equal(journal.restoreLost(), null, 'nothing lost: nothing done')

  fs.rmSync(dir, { recursive: true, force: true })
  const nameless = makeBatch(41)
  assert.equal(journal.append(nameless), true, 'the open segment still takes writes, with no name')
  written.push(nameless)
  waiting.push(nameless)
  const moved = journal.restoreLost()
  assert.deepEqual(moved, { segments: before.length, records: waiting.length, messages: sum(waiting, (b) => b.count), left: 0 }, 'every record not released, the nameless write included')
  assert.equal(Number.parseInt(fs.readFileSync(path.join(dir, 'lock'), 'utf8'), 10), process.pid, 'the lock taken again')
  const after = segmentFiles(dir)
  assert.ok(after.every((name) => !before.includes(name)), `new names only (${before} then ${after})`)
  assert.equal(bytesOnDisk(dir), sum(waiting, recordSize), 'the records not released, each once, and nothing else')
  for (const batch of waiting) {
    assert.ok(journal.read(batch).equals(batch.bytes), `read ${batch.id} where it is now`)
    const [file, offset, length] = journal.where(batch)
    assert.ok(fs.readFileSync(file).subarray(offset, offset + length).equals(batch.bytes), `a worker reads ${batch.id} at the path it is told`)
  }
  assert.equal(journal.restoreLost(), null, 'once made again, nothing more to do')

  // Released where they are now; what is not released comes back at the next open, once.
  const later = waiting.slice(0, 10)
  for (const batch of later) journal.release(batch)
  journal.close()
  const { journal: reopened, opened } = openJournal(t, dir)
  assert.deepEqual(opened.batches.map((b) => b.id), waiting.slice(10).map((b) => b.id), 'in the order they were written')
  for (const batch of opened.batches) {
    const want = written.find((b) => b.id === batch.id)
    assert.ok(reopened.read(batch).equals(want.bytes), `bytes of ${batch.id}`)
  }
})

test('a lock file deleted while open is taken again; a directory another live process took is refused, one line', async (t) => {
  const dir = tempDir(t)
  const { journal } = openJournal(t, dir)
  const first = makeBatch(1)
  appendAll(journal, [first])
  fs.rmSync(path.join(dir, 'lock'))
  assert.deepEqual(journal.restoreLost(), { segments: 0, records: 0, messages: 0, left: 0 })
  assert.equal(Number.parseInt(fs.readFileSync(path.join(dir, 'lock'), 'utf8'), 10), process.pid)

  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' })
  t.after(() => holder.kill('SIGKILL'))
  await once(holder, 'spawn')
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'lock'), `${holder.pid}\n`)
  assert.throws(() => journal.restoreLost(), (err) => {
    assert.equal(err.code, 'ERR_BUFFER')
    assert.match(err.message, new RegExp(`in use by process ${holder.pid}\\b`))
    assert.ok(!err.message.includes('\n'))
    return true
  })
  assert.equal(fs.readFileSync(path.join(dir, 'lock'), 'utf8'), `${holder.pid}\n`, 'the other process keeps it')
  assert.ok(journal.read(first).equals(first.bytes), 'what it holds is still read from the open files')

  // The other process's files have the names ours had: none of them is read,
  // written, listed or deleted by ours from now on.
  const theirs = path.join(dir, '0000000001.ccj')
  fs.writeFileSync(theirs, 'their segment')
  assert.equal(journal.readableByWorkers, false, 'batches go to workers with their bytes, not as a path there')
  assert.equal(journal.keeps(first), false, 'not kept for a next start: given up as a dead letter at stop')
  assert.equal(journal.append(makeBatch(2)), true, 'the open segment, with no name, still takes writes')
  assert.throws(() => journal.startSegment(99), /held by another process/)
  const second = makeBatch(3)
  journal.append(second)
  journal.release(first)
  journal.close()
  assert.deepEqual(fs.readdirSync(dir).sort(), ['0000000001.ccj', 'lock'], 'no list, segment or lock of ours there')
  assert.equal(fs.readFileSync(theirs, 'utf8'), 'their segment')
  assert.equal(fs.readFileSync(path.join(dir, 'lock'), 'utf8'), `${holder.pid}\n`, 'their lock stays at our close')
  assert.deepEqual(journal.nameless, { records: 2, messages: 6 }, 'what was left in segments with no name, said as not kept')
})

test('a list of records not released whose segment is gone (a run whose directory was deleted) is removed at open, not read for a later segment of that name', (t) => {
  const dir = tempDir(t)
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, '0000000001.ccj.live'), JSON.stringify({ offsets: [12345] }))
  const { journal } = openJournal(t, dir)
  assert.equal(fs.existsSync(path.join(dir, '0000000001.ccj.live')), false)
  const written = [makeBatch(1), makeBatch(2), makeBatch(3)]
  appendAll(journal, written)
  // A crash (not closed: no list of its own), and the next open.
  const { journal: reopened, opened } = openJournal(t, dir)
  assertReplayed(reopened, opened.batches, written)
})
