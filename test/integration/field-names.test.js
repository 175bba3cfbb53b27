'use strict'

// Stored field names are ours, values are the sender's. Real syslog over UDP
// into the real syslog collector (2 forked workers, the test MongoDB), and
// real RTCP SDES into the RTCP collector, with names chosen to hurt: `$`,
// `.`, `%`, `__proto__`, `constructor`, `prototype`, empty, over-long,
// non-ASCII and seeded random ones. Every stored document of every
// collection is walked: no key starts with `$` or holds a `.`, no object has
// a foreign prototype; every name and value comes back exactly, decoded with
// decodeURIComponent (docs/protocols.md's rule, not our own decoder); and the
// workers' prototypes are as they were (a probe in their stats).

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const path = require('node:path')
const syslog = require('../../collectors/syslog')
const rtcp = require('../../collectors/rtcp')
const { encodeRtcp } = require('../../collectors/rtcp/encoder')
const { decodeRtcp } = require('../../collectors/rtcp/decoder')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/wait-for')
const { prng } = require('../helpers/prng')

const FIXTURES = path.join(__dirname, '..', 'fixtures')
const HOSTILE = ['$where', '$set', '$', 'a.b', '.', '..', '.a', 'a.', '%', '%2E', '%24x', 'a%b', '%%', '$.%',
  '__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', 'valueOf', '__defineGetter__', '_id', '0', '9x']

// ---------------------------------------------------------------- syslog on the wire

// SD-NAME: 1-32 of PRINTUSASCII but '=', SP, ']', '"' (RFC 5424 §6.3).
const NAME_CHARS = [...Array(94)].map((_, i) => String.fromCharCode(0x21 + i)).filter((c) => !'=]"'.includes(c))
const VALUE_CHARS = [...NAME_CHARS, ' ', '"', '\\', ']', '=', 'é', 'ß', '✓', '日本', '😀', '\u00a0']

function sdText (elements) {
  if (elements.length === 0) return '-'
  return elements.map(({ id, params }) => `[${id}${params.map(([name, value]) => ` ${name}="${value.replace(/["\\\]]/g, '\\$&')}"`).join('')}]`).join('')
}

function syslogLine (tag, elements) {
  return `<13>1 2026-01-02T03:04:05.678Z fuzz.example app - ${tag} ${sdText(elements)} message ${tag}`
}

function randomName (rand) {
  const length = 1 + Math.floor(rand() * 32)
  let name = ''
  for (let i = 0; i < length; i++) name += rand() < 0.3 ? '$.%'[Math.floor(rand() * 3)] : NAME_CHARS[Math.floor(rand() * NAME_CHARS.length)]
  return name
}

function randomValue (rand) {
  let value = ''
  for (let n = Math.floor(rand() * 12); n > 0; n--) value += VALUE_CHARS[Math.floor(rand() * VALUE_CHARS.length)]
  return value
}

// 1-4 elements with distinct SD-IDs (a repeated one is refused by default),
// 0-5 params each, some names repeated.
function randomElements (rand) {
  const elements = []
  for (let n = 1 + Math.floor(rand() * 4); n > 0; n--) {
    const id = rand() < 0.2 ? HOSTILE[Math.floor(rand() * HOSTILE.length)] : randomName(rand)
    if (elements.some((e) => e.id === id)) continue
    const params = []
    for (let p = Math.floor(rand() * 6); p > 0; p--) {
      const name = params.length > 0 && rand() < 0.2 ? params[Math.floor(rand() * params.length)][0] : rand() < 0.2 ? HOSTILE[Math.floor(rand() * HOSTILE.length)] : randomName(rand)
      params.push([name, randomValue(rand)])
    }
    elements.push({ id, params })
  }
  return elements
}

// The cases the grammar allows: stored parsed, under encoded keys.
function acceptedCases () {
  const cases = [
    [{ id: '$where', params: [['x', '1']] }],
    [{ id: 'ex@1', params: [['a.b', '1'], ['$set', '2'], ['%41', '3'], ['a.b', '4']] }],
    [{ id: '__proto__', params: [['polluted', 'yes'], ['__proto__', 'p'], ['constructor', 'c']] }, { id: 'constructor', params: [['prototype', 'x']] }, { id: 'prototype', params: [['constructor', 'y']] }],
    HOSTILE.map((id) => ({ id, params: HOSTILE.map((name) => [name, `${id}=${name}`]) })),
    [{ id: '$.%'.repeat(10) + 'ab', params: [['.$%'.repeat(10) + 'cd', 'the longest names: 32 characters']] }]
  ]
  const rand = prng(20)
  for (let i = 0; i < 300; i++) cases.push(randomElements(rand))
  return cases
}

// Names the grammar refuses: the message is stored raw (its text a value),
// counted as bad-structured-data; nothing of it becomes a key.
const REFUSED = [
  ['an empty SD-ID', [{ id: '', params: [['a', '1']] }]],
  ['an empty PARAM-NAME', [{ id: 'x@1', params: [['', '1']] }]],
  ['a 33-character SD-ID', [{ id: 'a'.repeat(33), params: [] }]],
  ['a 255-byte SD-ID', [{ id: '$'.repeat(255), params: [['a', '1']] }]],
  ['a 255-byte PARAM-NAME', [{ id: 'x@1', params: [['.'.repeat(255), '1']] }]],
  ['a non-ASCII SD-ID', [{ id: 'café', params: [['a', '1']] }]],
  ['a non-ASCII PARAM-NAME', [{ id: 'x@1', params: [['ñame', '1']] }]],
  ['an emoji PARAM-NAME', [{ id: 'x@1', params: [['😀', '1']] }]]
]

// ---------------------------------------------------------------- what is stored

// Every key of every plain object in `value`, with the ones a sender must
// not be able to shape ($-prefixed, dotted) and objects whose prototype is
// not Object.prototype (BSON values and Dates are leaves).
function walk (value, at, found) {
  if (Array.isArray(value)) {
    value.forEach((v, i) => walk(v, `${at}[${i}]`, found))
  } else if (value !== null && typeof value === 'object' && !(value instanceof Date) && value._bsontype === undefined && !Buffer.isBuffer(value)) {
    if (Object.getPrototypeOf(value) !== Object.prototype) found.prototypes.push(at)
    for (const key of Object.keys(value)) {
      found.keys.add(key)
      if (key.startsWith('$') || key.includes('.')) found.bad.push(`${at}/${key}`)
      walk(value[key], `${at}/${key}`, found)
    }
  }
  return found
}

async function walkDatabase (db) {
  const found = { keys: new Set(), bad: [], prototypes: [], documents: 0 }
  for (const { name } of await db.listCollections().toArray()) {
    for (const doc of await db.collection(name).find().toArray()) {
      found.documents++
      walk(doc, `${name}:${doc._id}`, found)
    }
  }
  return found
}

// The stored map, decoded with decodeURIComponent: [id, [[name, [values]]]] in key order.
function decodedMap (structuredData) {
  return Object.entries(structuredData).map(([id, params]) =>
    [decodeURIComponent(id), Object.entries(params).map(([name, value]) => [decodeURIComponent(name), [].concat(value)])])
}

// What was sent, as the map holds it: each name's values in order, names in first-appearance order.
function grouped (elements) {
  return elements.map(({ id, params }) => {
    const byName = new Map()
    for (const [name, value] of params) byName.set(name, [...(byName.get(name) || []), value])
    return [id, [...byName]]
  })
}

const sortedDeep = (entries) => entries.map(([id, params]) => [id, [...params].sort((a, b) => a[0] < b[0] ? -1 : 1)]).sort((a, b) => a[0] < b[0] ? -1 : 1)

function assertRoundTrip (doc, elements, tag) {
  assert.ok(doc, `${tag}: stored parsed`)
  assert.equal(doc.format, '5424', `${doc.msgid}: ${doc.error}`)
  if (elements.length === 0) return assert.equal(doc.structuredData, null)
  const map = decodedMap(doc.structuredData)
  assert.deepEqual(sortedDeep(map), sortedDeep(grouped(elements)), `${doc.msgid}: the map decodes to what was sent`)
  if (doc.sdElements) {
    assert.deepEqual(doc.sdElements, elements, `${doc.msgid}: the ordered list is what was sent`)
  } else {
    assert.deepEqual(map, grouped(elements), `${doc.msgid}: without a list, the map holds the order too`)
  }
}

async function send (port, datagrams) {
  const socket = dgram.createSocket('udp4')
  for (const d of datagrams) await new Promise((resolve, reject) => socket.send(d, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  socket.close()
}

async function assertWorkersUnchanged (collector) {
  const { workers } = await collector.stats()
  assert.ok(workers.length > 0)
  for (const worker of workers) {
    assert.deepEqual([worker.custom.prototypesChanged, worker.custom.inherited], [[], []], 'the worker process\'s prototypes are as they were')
  }
  return workers
}

// ---------------------------------------------------------------- tests

test('syslog SD-IDs and PARAM-NAMEs with $ . % __proto__ constructor and seeded random names: stored under encoded keys, every name and value back exactly, nothing else changed', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, syslog, ['--workername', path.join(FIXTURES, 'prototype-probe-worker.js')])
  const cases = acceptedCases()
  const lines = cases.map((elements, i) => syslogLine(`A${i}`, elements))
  const refused = REFUSED.map(([, elements], i) => syslogLine(`R${i}`, elements))
  // refused ones first: the collector must go on storing what follows exactly
  await send(port, [...refused, ...lines])
  const total = lines.length + refused.length
  await waitFor(() => collector.summary().processed === total, { what: `${total} processed`, timeout: 30000 })
  const workers = await assertWorkersUnchanged(collector)
  const malformed = workers.reduce((sum, w) => sum + (w.custom.malformed['bad-structured-data'] || 0), 0)
  assert.equal(malformed, refused.length, 'each refused name counted as bad-structured-data')
  await collector.stop()
  assert.equal(({}).polluted, undefined)

  const docs = await db.collection('syslog').find().toArray()
  assert.equal(docs.length, total)
  const byTag = new Map(docs.filter((d) => d.format !== 'raw').map((d) => [d.msgid, d]))
  cases.forEach((elements, i) => assertRoundTrip(byTag.get(`A${i}`), elements, `A${i}`))
  REFUSED.forEach(([what], i) => {
    const doc = docs.find((d) => d.message === refused[i])
    assert.ok(doc, `${what}: stored raw with its text as sent`)
    assert.deepEqual([doc.format, doc.error, doc.structuredData, doc.sdElements], ['raw', 'bad-structured-data', undefined, undefined], what)
  })

  const found = await walkDatabase(db)
  assert.ok(found.documents > total, 'the counters are walked too')
  assert.deepEqual(found.bad, [], 'no stored key starts with $ or holds a .')
  assert.deepEqual(found.prototypes, [], 'no stored object came back with another prototype')

  // docs/protocols.md's queries: dot paths to encoded keys, on the server.
  const tags = async (filter) => (await db.collection('syslog').find(filter).toArray()).map((d) => d.msgid).sort()
  assert.deepEqual(await tags({ 'structuredData.%24where.x': '1' }), ['A0'])
  assert.deepEqual(await tags({ 'structuredData.ex@1.a%2Eb': '4' }), ['A1'])
  assert.deepEqual(await tags({ 'structuredData.ex@1.%24set': '2' }), ['A1'])
  assert.deepEqual(await tags({ 'structuredData.__proto__.polluted': 'yes' }), ['A2'])
  assert.deepEqual(await tags({ 'structuredData.constructor.prototype': 'x' }), ['A2'])
})

// RFC 3550 §6.5.8: PRIV = prefix length, prefix, value, in one item of at
// most 255 octets: the longest prefix is 254 octets with an empty value.
const PRIV_PREFIXES = [...HOSTILE, '', 'x'.repeat(254), '$'.repeat(200), 'ñ✓😀', 'a.b.c']
const CNAMES = ['$where', 'a.b', '__proto__', 'constructor', 'prototype', '%2E', 'user@host.example', 'ñ✓😀', '$'.repeat(255)]

function sdesDatagram (k, rand) {
  const reporter = 1000 + k
  const reported = 2000 + k
  const priv = () => Array.from({ length: 1 + Math.floor(rand() * 3) }, () => {
    const prefix = PRIV_PREFIXES[Math.floor(rand() * PRIV_PREFIXES.length)]
    return { prefix, value: prefix.length >= 200 ? '' : randomValue(rand) }
  })
  const chunks = [{ ssrc: reporter, items: { cname: CNAMES[k % CNAMES.length], priv: priv() } },
    { ssrc: reported, items: { cname: CNAMES[(k + 1) % CNAMES.length], priv: priv() } }]
  const packets = [{ type: 'RR', ssrc: reporter, reports: [{ ssrc: reported, fractionLost: 0, cumulativeLost: 0, highestSeq: 100 + k, jitter: 1, lsr: 0, dlsr: 0 }] },
    { type: 'SDES', chunks }]
  return { reporter, reported, chunks, data: encodeRtcp(packets) }
}

test('RTCP SDES PRIV prefixes and CNAMEs that look like field names: stored only as values, no key of theirs, worker unchanged', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--workername', path.join(FIXTURES, 'prototype-probe-rtcp-worker.js')])
  const rand = prng(21)
  const sent = Array.from({ length: 60 }, (_, k) => sdesDatagram(k, rand))
  for (const { chunks, data } of sent) {
    // the decoder's view keeps every PRIV prefix and value as sent
    const [, sdes] = decodeRtcp(data).packets
    assert.deepEqual(sdes.chunks.map((c) => [c.items.cname, c.items.priv]), chunks.map((c) => [c.items.cname, c.items.priv]))
  }
  await send(port, sent.map((s) => s.data))
  await waitFor(() => collector.summary().processed === sent.length, { what: `${sent.length} processed`, timeout: 30000 })
  await assertWorkersUnchanged(collector)
  assert.equal(collector.summary().dropped.total, 0)
  await collector.stop()

  const streams = await db.collection('streams').find().toArray()
  for (const { reporter, reported, chunks } of sent) {
    const doc = streams.find((d) => d.from.ID === String(reporter) && d.to.ID === String(reported))
    assert.ok(doc, `the stream ${reporter} → ${reported}`)
    assert.equal(doc.from.cname, chunks[0].items.cname, 'the CNAME is a value, exactly as sent')
  }
  const found = await walkDatabase(db)
  assert.deepEqual(found.bad, [], 'no stored key starts with $ or holds a .')
  assert.deepEqual(found.prototypes, [])
  const senderText = new Set(sent.flatMap((s) => s.chunks.flatMap((c) => [c.items.cname, ...c.items.priv.flatMap((p) => [p.prefix, p.value])])))
  senderText.delete('_id') // a prefix sent, and our key too
  assert.deepEqual([...found.keys].filter((key) => senderText.has(key)), [], 'no key is sender text')
})
