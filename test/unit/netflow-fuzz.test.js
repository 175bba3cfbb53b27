'use strict'
// Seeded mutations of valid v5, v9 and IPFIX datagrams (flipped bytes, cut
// and spliced lengths, zeroed and maxed 16-bit fields) never throw: each is
// a refusal of a listed reason or a datagram whose records keep the shape's
// promises, and the template store keeps plain JSON values throughout.
const test = require('node:test')
const assert = require('node:assert/strict')
const { decodeNetflow, createMemoryTemplateStore, NETFLOW_REASONS } = require('../../collectors/netflow/netflow-decoder')
const DecodeError = require('../../exceptions/decode-error')
const { newFlow } = require('../../collectors/netflow/shapes')
const { prng } = require('../helpers/prng')
const { uint, ipv4, ipv6, varlen, v5Packet, v9Packet, ipfixMessage, set, templateSet } = require('../helpers/netflow-packets')

const COUNTERS = ['srcPort', 'dstPort', 'proto', 'packets', 'bytes', 'tcpFlags', 'tos', 'inputIf', 'outputIf', 'srcAs', 'dstAs']

function corpus () {
  const v5 = v5Packet({ sysUptime: 9000, secs: 1795600000, sequence: 7, records: Array.from({ length: 4 }, (_, i) => ({ srcPort: i, first: 1000 * i, last: 2000 * i, bytes: 100 * i })) })
  const v9 = v9Packet({
    sysUptime: 9000, secs: 1795600000, sequence: 3, sourceId: 1, sets: [
      templateSet(0, [{ id: 256, fields: [[8, 4], [12, 4], [1, 8], [2, 4], [22, 4], [21, 4], [27, 16]] }]),
      templateSet(1, [{ id: 257, scope: 1, fields: [[1, 4], [34, 4]] }], { padding: 2 }),
      set(256, Buffer.concat([ipv4('10.0.0.1'), ipv4('10.0.0.2'), uint(5000, 8), uint(4, 4), uint(1000, 4), uint(8000, 4), ipv6('2001:db8::1')])),
      set(257, Buffer.concat([uint(0, 4), uint(100, 4)]))
    ]
  })
  const ipfix = ipfixMessage({
    exportTime: 1795600000, sequence: 11, domain: 3, sets: [
      templateSet(2, [{ id: 300, fields: [[8, 4], [82, 65535], [100, 2, 9], [1, 4], [152, 8], [22, 4]] }, { id: 301, withdraw: true }]),
      templateSet(3, [{ id: 310, scope: 1, fields: [[144, 4], [160, 8], [82, 65535]] }]),
      set(310, Buffer.concat([uint(1, 4), uint(1795599000000, 8), varlen(Buffer.from('eth0'))])),
      set(300, Buffer.concat([ipv4('10.0.0.1'), varlen(Buffer.from('x'.repeat(300))), uint(1, 2), uint(77, 4), uint(1795599999000, 8), uint(500, 4)]), { padding: 3 })
    ]
  })
  return { v5, v9, ipfix }
}

function mutate (buf, rand) {
  const out = Buffer.from(buf)
  const int = (n) => Math.floor(rand() * n)
  switch (int(5)) {
    case 0: for (let i = 1 + int(8); i > 0; i--) out[int(out.length)] = int(256); return out
    case 1: return out.subarray(0, int(out.length))
    case 2: { const at = int(out.length - 1); out.writeUInt16BE([0, 1, 3, 4, 0xffff, int(0x10000)][int(6)], at); return out }
    case 3: { const at = int(out.length); return Buffer.concat([out.subarray(0, at), out.subarray(int(out.length)), out.subarray(at)]) }
    default: { const at = int(out.length); return Buffer.concat([out.subarray(0, at), Buffer.from(Array.from({ length: 1 + int(12) }, () => int(256))), out.subarray(at)]) }
  }
}

function checkDecoded (got, label) {
  if (got instanceof DecodeError) {
    assert.ok(NETFLOW_REASONS.includes(got.reason), `${label}: unlisted reason ${got.reason}`)
    return 'refused'
  }
  const shape = Object.keys(newFlow())
  for (const flow of got.records) {
    assert.deepEqual(Object.keys(flow), shape, label)
    for (const key of COUNTERS) assert.ok(Number.isSafeInteger(flow[key]) && flow[key] >= 0, `${label}: ${key} ${flow[key]}`)
    for (const key of ['first', 'last']) assert.ok(flow[key] === undefined || Number.isSafeInteger(flow[key]), `${label}: ${key} ${flow[key]}`)
    for (const key of ['srcAddr', 'dstAddr', 'nextHop']) assert.ok(flow[key] === undefined || typeof flow[key] === 'string', `${label}: ${key}`)
  }
  for (const key of ['templatesLearned', 'templatesWithdrawn', 'unknownTemplates', 'unknownFields']) assert.ok(Number.isSafeInteger(got[key]) && got[key] >= 0, `${label}: ${key}`)
  return 'decoded'
}

test('20,000 mutated datagrams: no throw, a listed reason or records that keep the shape\'s promises', () => {
  const rand = prng(3954)
  const seen = { refused: 0, decoded: 0 }
  const shared = createMemoryTemplateStore({ max: 64 })
  for (const [name, buf] of Object.entries(corpus())) {
    assert.ok(!(decodeNetflow(buf, { templates: createMemoryTemplateStore() }) instanceof DecodeError), `${name} itself decodes`)
    for (let i = 0; i < 6667; i++) {
      const input = mutate(buf, rand)
      const label = `${name} #${i} ${input.toString('hex')}`
      seen[checkDecoded(decodeNetflow(input, { templates: createMemoryTemplateStore() }), label)]++
      checkDecoded(decodeNetflow(input, { templates: shared }), `${label} (shared store)`)
    }
  }
  assert.ok(seen.refused > 1000 && seen.decoded > 1000, JSON.stringify(seen))
  for (const key of shared.keys('')) assert.deepEqual(JSON.parse(JSON.stringify(shared.get(key))), shared.get(key), `${key} is plain JSON`)
})
