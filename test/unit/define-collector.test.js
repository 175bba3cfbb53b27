'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const { defineCollector, sinks } = require('../..')
const { splitLines } = require('../../lib/master/split')
const { normalizeOptions } = require('../../lib/master/options')

const decode = (message) => ({ text: message.data.toString() })
const store = sinks.documents({ collection: 'lines', of: (record) => record })

test('defineCollector: a collector module of the shape app/ loads, its worker file the one that defined it', () => {
  const module = defineCollector({ name: 'lines', listen: { port: 9999 }, key: (data) => data[0], decode, sinks: [store] })
  assert.equal(module.Collector.name, 'LinesCollector')
  assert.equal(module.Config.name, 'LinesConfig')
  assert.equal(module.Collector.settings.defaults.worker, __filename)
  assert.equal(module.Collector.settings.defaults.distribution, 'hash', 'a key means flow affinity')
  const config = new module.Config(['--port', '0']).getConfig()
  assert.equal(config.name, 'lines')
  assert.equal(config.workername, __filename)
})

test('defineCollector: a definition that cannot work is refused in one line that says what is missing', () => {
  const cases = [
    [{ decode, sinks: [store] }, /needs a name/],
    [{ name: 'x', sinks: [store] }, /needs decode\(message, settings\)/],
    [{ name: 'x', decode, sinks: [] }, /at least one sink/],
    [{ name: 'x', decode, sinks: [{ kind: 'files' }] }, /a sink is one of sinks\.updates, sinks\.counters, sinks\.documents, sinks\.streams \(got "files"\)/],
    [{ name: 'x', decode, sinks: [store, store] }, /two sinks write to one collection/],
    [{ name: 'x', decode, sinks: [store], listen: { prot: 'udp' } }, /listen takes protocol, .* not prot/],
    [{ name: 'x', decode, sinks: [store], key: 'name' }, /key must be a function/],
    [{ name: 'x', decode, sinks: [store], key: () => 1, affinity: () => ({ key: () => 1 }) }, /takes key or affinity, not both/],
    [{ name: 'x', decode, sinks: [store], state: {} }, /state must be a function/],
    [{ name: 'x', decode, sinks: [store], cardinality: 'name' }, /cardinality must be a function/],
    [{ name: 'x', decode, sinks: [store], maxRecords: 0 }, /maxRecords must be a positive integer \(got 0\)/],
    [{ name: 'x', decode, sinks: [store], maxRecords: 2.5 }, /maxRecords must be a positive integer/],
    [{ name: 'x', decode, sinks: [store], maxRecord: 10 }, /^option "definition": collector x takes no maxRecord; did you mean maxRecords\?$/],
    [{ name: 'x', decode, sink: [store] }, /takes no sink; did you mean sinks\?/],
    // A new user's, from a QA pass: each was accepted, or refused as a flag's default naming neither the file nor listen.
    [{ name: 'x', decode, sinks: [store], listen: { port: '47110' } }, /listen\.port must be an integer from 0 to 65535 \(got "47110"\)/],
    [{ name: 'x', decode, sinks: [store], listen: { port: 99999 } }, /listen\.port must be an integer from 0 to 65535 \(got 99999\)/],
    [{ name: 'x', decode, sinks: [store], listen: { protocol: 'tcp' } }, /listen\.protocol is one of udp, tcp_server, tcp_client/],
    [{ name: 'x', decode, sinks: [store], listen: { framing: 'newlines' } }, /listen\.framing is one of newline, /],
    [{ name: 'x', decode, sinks: [store], keep: { scop: () => 'a' } }, /keep takes no scop; did you mean scope\?/],
    [{ name: 'x', decode, sinks: [store], settings: { port: { type: 'integer', default: 1 } } }, /settings\.port is one of the framework's options \(--port\): give the setting another name \(a default for it goes in listen\.port\)/],
    [{ name: 'x', decode, sinks: [store], settings: { instances: { type: 'integer', default: 3 } } }, /settings\.instances is one of the framework's options \(--instances\)/],
    // A new user's (QA): a default that is not a value of its setting read as a flag given wrong ("got" the default).
    [{ name: 'x', decode, sinks: [store], settings: { maxTemp: { type: 'number', default: 'hot' } } }, /^option "settings\.maxTemp": its default "hot" is not a value of it: it must be a number from -Infinity to Infinity$/],
    [{ name: 'x', decode, sinks: [store], settings: { lim: { type: 'integer', default: -1, validate: (v) => v < 0 ? 'must be 0 or more' : undefined } } }, /^option "settings\.lim": its default -1 is not a value of it: it must be 0 or more$/],
    [{ name: 'x', decode, sinks: [store], settings: { host: { type: 'string', env: 'MY HOST' } } }, /^option "settings\.host": env must be the name of an environment variable \(letters, digits, _\), got "MY HOST"$/],
    [{ name: 'x', decode, sinks: [store], settings: { host: { type: 'text' } } }, /^option "settings\.host": type must be one of /]
  ]
  // Those about the master's options are checked when the master's classes are built (a worker never loads them).
  for (const [definition, message] of cases) {
    assert.throws(() => defineCollector(definition).Config, (err) => err.code === 'ERR_INVALID_OPTION' && message.test(err.message) && !err.message.includes('\n'))
  }
  assert.throws(() => sinks.updates({ collection: 'm' }), /needs of\(record, message\)/)
  assert.throws(() => sinks.documents({ of: decode }), { message: 'option "sinks": a documents sink needs the name of its collection' }, 'no "got" naming the kind')
  assert.throws(() => sinks.documents({ colection: 'x', of: decode }), /a documents sink takes no colection; did you mean collection\?/)
  assert.throws(() => sinks.updates({ collection: 'x', of: decode, indexs: [] }), /an? updates sink \(x\) takes no indexs; did you mean indexes\?/)
  assert.throws(() => sinks.documents({ collection: 'x', of: decode, expireby: 'at' }), /takes no expireby; did you mean expireBy\?/)
  // One of another kind's options, not a typo: said so, and the list is this kind's (QA: a documents sink took otherwise and streamTimeout without a word).
  assert.throws(() => sinks.documents({ collection: 'x', of: decode, otherwise: 'm' }), /option "sinks": a documents sink \(x\) takes no otherwise: that is a counters sink's \(it takes collection, of, fromSettings, maxBatch, writeEvery, indexes, expireBy, expireSpan\)$/)
  assert.throws(() => sinks.documents({ collection: 'x', of: decode, streamTimeout: 5000 }), /takes no streamTimeout: that is a streams sink's/)
  assert.throws(() => sinks.updates({ collection: 'x', of: decode, preallocateRate: 5 }), /takes no preallocateRate: that is a counters sink's or a streams sink's/)
  assert.throws(() => sinks.streams({ indexes: [] }), /a streams sink \(streams\) takes no indexes: that is an updates sink's or a counters sink's or a documents sink's/)
  assert.equal(sinks.counters({ of: decode, maxNewKeysPerMinute: 10, otherwise: 'o' }).otherwise, 'o')
  assert.throws(() => sinks.documents({ collection: 'x', of: decode, indexes: { dev: 1 } }), /a documents sink \(x\) takes indexes as an array of \{ key, \.\.\.options \} \(got \{"dev":1\}\)/)
  assert.throws(() => sinks.updates({ of: decode }), { message: 'option "sinks": an updates sink needs the name of its collection' })
  // A worker setting declared again, with another default, is the documented way: taken.
  assert.equal(defineCollector({ name: 'y', decode, sinks: [store], settings: { flushInterval: { type: 'duration', default: 50 } } }).Config.parse([]).flushInterval, 50)
})

test('defineCollector: a setting is read from the environment variable its declaration names (env), else from COLLECTOR_<FLAG>', (t) => {
  const module = defineCollector({ name: 'y', decode, sinks: [store], settings: { maxTemp: { type: 'number', default: 200, env: 'TRIAL_MAX_TEMP' }, minTemp: { type: 'number', default: 0 } } })
  t.after(() => { delete process.env.TRIAL_MAX_TEMP; delete process.env.COLLECTOR_MIN_TEMP; delete process.env.COLLECTOR_MAX_TEMP })
  process.env.TRIAL_MAX_TEMP = '5'
  process.env.COLLECTOR_MAX_TEMP = '7' // not the one declared: not read
  process.env.COLLECTOR_MIN_TEMP = '-3'
  const config = module.Config.parse([])
  assert.equal(config.maxTemp, 5)
  assert.equal(config.minTemp, -3)
  process.env.TRIAL_MAX_TEMP = 'abc'
  assert.throws(() => module.Config.parse([]), /--max-temp: expected a number, got "abc" \(from environment variable TRIAL_MAX_TEMP\)/)
})

test('split lines: each line that is not blank a message of its own, CR LF, empty and blank lines taken', () => {
  const rinfo = { address: '127.0.0.1', port: 5 }
  const parts = splitLines({ data: Buffer.from('a:1|c\r\n\nb:2|g\nc:3|ms'), rinfo, receivedAt: 1764400000123.5 })
  assert.deepEqual(parts.map((p) => p.data.toString()), ['a:1|c', 'b:2|g', 'c:3|ms'])
  assert.ok(parts.every((p) => p.rinfo === rinfo && p.receivedAt === 1764400000123.5), 'each line has the sender and arrival of the whole')
  assert.deepEqual(splitLines({ data: Buffer.from('\n\r\n'), rinfo }), [])
  // Blank lines (spaces, tabs, CRs) are no messages (QA: each became one, a decode error); a line is kept as it is.
  assert.deepEqual(splitLines({ data: Buffer.from('  \n\t\r\n\r\r\na:1|c \n \tb:2|g\r'), rinfo }).map((p) => p.data.toString()), ['a:1|c ', ' \tb:2|g'])
  assert.throws(() => normalizeOptions({ split: 'words' }), /split.*must be one of none, lines/)
  assert.throws(() => normalizeOptions({ split: 'lines', receive: 'reuseport' }), /receive.*cannot be combined with split lines/)
})

test('defineCollector: the key reads a message\'s bytes, and on the native path the batch entry\'s, with no message built', () => {
  const { entryPlan } = require('../../lib/master/dispatcher')
  const { writeEntry, entrySize } = require('../../lib/shared/batch-codec')
  const module = defineCollector({ name: 'keyed', key: (data) => data.toString().split(' ')[0], decode, sinks: [store] })
  const lb = new module.Collector({ port: 0 })
  const data = Buffer.from('call-7 hello')
  const entry = Buffer.alloc(entrySize(data, '10.0.0.1'))
  writeEntry(entry, 0, data, '10.0.0.1', 5060)
  assert.equal(lb.key({ data, rinfo: { address: '10.0.0.1', port: 5060 } }), 'call-7')
  assert.equal(lb.entryKey(entry, 0), 'call-7')
  assert.equal(entryPlan(lb, lb._declared()).describe, 'per entry: hash of entryKey()')
})

test('defineCollector: maxRecords defaults to 1000; cardinality brings the new-key settings, shared by the collector\'s workers', () => {
  const plain = defineCollector({ name: 'plain', decode, sinks: [store] })
  assert.equal(plain.definition.maxRecords, 1000)
  assert.equal(plain.Collector.settings.worker.maxNewKeysPerMinute, undefined, 'no keys, no cap and no flag')
  const keyed = defineCollector({ name: 'keyed', decode, maxRecords: 31, cardinality: (record) => record.text, sinks: [store] })
  assert.equal(keyed.definition.maxRecords, 31)
  const config = new keyed.Config(['--port', '0', '-i', '3', '--max-new-keys-per-minute', '600', '--max-known-keys', '5000']).getConfig()
  const lb = new keyed.Collector(config)
  assert.deepEqual([lb.options.workerOptions.maxNewKeysPerMinute, lb.options.workerOptions.maxKnownKeys, lb.options.workerOptions.newKeyShares], [600, 5000, 3])
  assert.throws(() => new keyed.Config(['--max-new-keys-per-minute', '-1']).getConfig(), /max-new-keys-per-minute/)
  const worker = new keyed.Worker({ ...lb.options.workerOptions })
  assert.equal(worker.newKeys.share, 200, 'an even share per worker')
  assert.equal(new keyed.Worker({ maxNewKeysPerMinute: 0 }).newKeys, null, '0: no cap')
})
