'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { KIND_UDP, KIND_TCP, KIND_UDP_UNTIMED, KIND_TCP_UNTIMED, entrySize, writeEntry, entryEnd, entryDataStart, entryReceivedAt, forEachMessage } = require('../../lib/shared/batch-codec')
const { writeRecordFile, readRecordFile } = require('../../lib/master/journal-record')
const { createBatch } = require('../../lib/master/batch')

function pack (entries) {
  const buf = Buffer.alloc(entries.reduce((n, [data, address]) => n + entrySize(data, address), 0))
  let offset = 0
  for (const [data, address, port] of entries) offset = writeEntry(buf, offset, data, address, port)
  assert.equal(offset, buf.length, 'entrySize matches what writeEntry wrote')
  return buf
}

function unpack (buf, kind, batchReceivedAt) {
  const out = []
  forEachMessage(buf, kind, (message) => out.push(message), batchReceivedAt)
  return out
}

test('a batch round-trips data, address and port, including lengths past 16 bits and the extreme ports', () => {
  const big = Buffer.alloc(70000, 7)
  const entries = [
    [Buffer.from('first'), '127.0.0.1', 65535],
    [big, '127.0.0.1', 0],
    [Buffer.alloc(0), '10.0.0.2', 1],
    [Buffer.from('v6'), '::ffff:127.0.0.1', 5005]
  ]
  const messages = unpack(pack(entries), KIND_UDP)
  assert.equal(messages.length, entries.length)
  messages.forEach((message, i) => {
    const [data, address, port] = entries[i]
    assert.deepEqual(message.data, data)
    assert.deepEqual(message.rinfo, { address, port, family: address.includes(':') ? 'IPv6' : 'IPv4', size: data.length })
  })
})

test('the address cache of the reader never hands one sender\'s address to another of the same length', () => {
  // Same length, differing in one byte, interleaved: a cache that compared
  // lengths only would give the wrong address here.
  const addresses = ['10.0.0.1', '10.0.0.2', '10.0.0.2', '10.0.0.1', '10.0.1.1', '10.0.1.1']
  const entries = addresses.map((address, i) => [Buffer.from([i]), address, 1000 + i])
  const messages = unpack(pack(entries), KIND_TCP)
  assert.deepEqual(messages.map((m) => m.remote), addresses.map((address, i) => ({ address, port: 1000 + i })))
  assert.deepEqual(messages.map((m) => m.data[0]), [0, 1, 2, 3, 4, 5])
})

test('a batch that crossed IPC as a Uint8Array view is read in place', () => {
  const buf = pack([[Buffer.from('abc'), '127.0.0.1', 9], [Buffer.from('de'), '127.0.0.1', 10]])
  const backing = new Uint8Array(buf.length + 8)
  backing.set(buf, 5)
  const messages = unpack(new Uint8Array(backing.buffer, 5, buf.length), KIND_UDP)
  assert.deepEqual(messages.map((m) => m.data.toString()), ['abc', 'de'])
  assert.deepEqual(messages.map((m) => m.rinfo.port), [9, 10])
})

test('every message keeps its own arrival time, to the sub-millisecond, and the entry walkers skip it', () => {
  const times = [1764400000123.25, 1764400000123.999, 1764400000200.5]
  const entries = times.map((t, i) => [Buffer.from(`m${i}`), '192.0.2.1', 4000 + i, t])
  const buf = Buffer.alloc(entries.reduce((n, [data, address]) => n + entrySize(data, address), 0))
  let offset = 0
  for (const [data, address, port, t] of entries) offset = writeEntry(buf, offset, data, address, port, t)
  assert.equal(offset, buf.length)
  for (const kind of [KIND_UDP, KIND_TCP]) {
    const messages = unpack(buf, kind)
    assert.deepEqual(messages.map((m) => m.receivedAt), times)
    assert.deepEqual(messages.map((m) => m.data.toString()), ['m0', 'm1', 'm2'])
  }
  const starts = []
  for (let at = 0; at < buf.length; at = entryEnd(buf, at)) starts.push(at)
  assert.deepEqual(starts.map((at) => entryReceivedAt(buf, at)), times)
  assert.deepEqual(starts.map((at) => buf.subarray(entryDataStart(buf, at), entryEnd(buf, at)).toString()), ['m0', 'm1', 'm2'])
})

// The layout before arrival times were carried (kinds 0 and 1), written
// here byte by byte as that version did: u32 length | u16 port | u8
// address length | address | data.
function packUntimed (entries) {
  return Buffer.concat(entries.map(([data, address, port]) => {
    const head = Buffer.alloc(7)
    head.writeUInt32BE(data.length, 0)
    head.writeUInt16BE(port, 4)
    head[6] = address.length
    return Buffer.concat([head, Buffer.from(address, 'latin1'), data])
  }))
}

test('a batch of an untimed kind (kept on disk by an older version) still reads, each message at its batch\'s time', () => {
  const entries = [[Buffer.from('old one'), '10.1.2.3', 5005], [Buffer.alloc(300, 1), '::1', 7], [Buffer.from('x'), '10.1.2.3', 65535]]
  const bytes = packUntimed(entries)
  const udp = unpack(bytes, KIND_UDP_UNTIMED, 1700000000000)
  assert.deepEqual(udp.map((m) => [m.data, m.rinfo.address, m.rinfo.port, m.rinfo.family, m.receivedAt]),
    entries.map(([data, address, port]) => [data, address, port, address.includes(':') ? 'IPv6' : 'IPv4', 1700000000000]))
  const tcp = unpack(bytes, KIND_TCP_UNTIMED, 1700000000000)
  assert.deepEqual(tcp.map((m) => [m.data, m.remote, m.receivedAt]), entries.map(([data, address, port]) => [data, { address, port }, 1700000000000]))
})

test('a disk buffer record of an untimed kind, as an older version wrote it, replays with its messages intact', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codec-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const entries = [[Buffer.from('before the upgrade'), '127.0.0.1', 40000], [Buffer.from('second'), '127.0.0.2', 40001]]
  const bytes = packUntimed(entries)
  const file = path.join(dir, 'old.ccj')
  writeRecordFile(file, createBatch(KIND_UDP_UNTIMED, bytes, 2, 1700000000 * 0x10000 + 1, 'a1b2c3d4_1', 1700000000500), bytes)
  const { batches, damaged } = readRecordFile(file)
  assert.deepEqual(damaged, { records: 0, bytes: 0 })
  assert.equal(batches.length, 1)
  const [batch] = batches
  assert.equal(batch.kind, KIND_UDP_UNTIMED)
  const messages = unpack(batch.bytes, batch.kind, batch.receivedAt)
  assert.deepEqual(messages.map((m) => [m.data.toString(), m.rinfo.address, m.rinfo.port, m.receivedAt]),
    [['before the upgrade', '127.0.0.1', 40000, 1700000000500], ['second', '127.0.0.2', 40001, 1700000000500]])
})
