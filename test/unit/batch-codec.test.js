'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { KIND_UDP, KIND_TCP, entrySize, writeEntry, forEachMessage } = require('../../lib/shared/batch-codec')

function pack (entries) {
  const buf = Buffer.alloc(entries.reduce((n, [data, address]) => n + entrySize(data, address), 0))
  let offset = 0
  for (const [data, address, port] of entries) offset = writeEntry(buf, offset, data, address, port)
  assert.equal(offset, buf.length, 'entrySize matches what writeEntry wrote')
  return buf
}

function unpack (buf, kind) {
  const out = []
  forEachMessage(buf, kind, (message) => out.push(message))
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
