'use strict'

// parseSyslog against an implementation nobody here wrote: influxdata/go-syslog's
// strict RFC 5424 machine (best effort off), built from test/oracles/go-syslog.
// Every message it accepts we read as 5424 with the same fields; every one it
// refuses we do not read as 5424. Where the RFC and go-syslog part, the case is
// listed in EXCEPTIONS with its section; nothing else is tolerated.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')
const { parseSyslog } = require('../../collectors/syslog/parser')
const { decodeSdName } = require('../../collectors/syslog/sd-names')
const { corpora } = require('../../benchmarks/syslog-decoder-bench')
const { removeDir } = require('../helpers/temp-dir')

const ORACLE_DIR = path.join(__dirname, '..', 'oracles', 'go-syslog')

function hasGo () {
  return spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0
}

function buildOracle (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'go-syslog-oracle-'))
  t.after(() => removeDir(dir))
  const binary = path.join(dir, 'oracle')
  execFileSync('go', ['build', '-o', binary, '.'], { cwd: ORACLE_DIR, stdio: ['ignore', 'ignore', 'inherit'], timeout: 120000 })
  return binary
}

function runOracle (binary, messages) {
  const input = messages.map((m) => m.toString('base64')).join('\n') + '\n'
  const out = execFileSync(binary, { input, maxBuffer: 256 * 1024 * 1024, timeout: 60000 })
  const lines = out.toString('utf8').trim().split('\n').map((line) => JSON.parse(line))
  assert.equal(lines.length, messages.length)
  return lines
}

// The named defect cases of test/unit/syslog-parser.test.js, as bytes.
const DEFECTS = [
  '<13>1 - host\nname app - - - x', '<13>1 - ho\tst app - - - x', '<13>1 - hôst app - - - x',
  '<13>1 - h ap\tp - - - x', '<13>1 - h a 12\x013 - - x', '<13>1 - h a - I\tD - x', '<13>1 - h a - ÏD - x',
  `<13>1 - ${'h'.repeat(256)} a - - - x`, `<13>1 - h ${'a'.repeat(49)} - - - x`, `<13>1 - h a ${'p'.repeat(129)} - - x`,
  `<13>1 - h a - ${'m'.repeat(33)} - x`, `<13>1 - ${'h'.repeat(255)} ${'a'.repeat(48)} ${'p'.repeat(128)} ${'m'.repeat(32)} - x`,
  '<013>1 - h a - - - x', '<00>1 - h a - - - x', '<0>1 - h a - - - x', '<191>1 - h a - - - x', '<192>1 - h a - - - x',
  '<13>1 0099-06-01T00:00:00Z h a - - - m', '<13>1 0000-02-29T12:00:00Z h a - - - m', '<13>1 0100-02-29T12:00:00Z h a - - - m',
  '<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It\'s time',
  '<13>1x - h a - - - m', '<13>1000 - h a - - - m', '<13>2 - h a - - - m', '<13>999 - h a - - - m',
  '<13>1 - h a - - [x@1 p="a]b"] m', '<13>1 - h a - - [x@1 a="1"][y@1 b="2"][x@1 a="3"] m',
  '<13>1 - h a - - [b@1 x="1" y="2" x="3"][a@1][c@1 e="\\]\\\\\\q"] m',
  '<13>1 2026-01-01t00:00:00Z h a - - - m', '<13>1 2026-01-01T00:00:00+0100 h a - - - m',
  '<13>1 2026-02-30T00:00:00Z h a - - - m', '<13>1 2026-01-01T00:00:60Z h a - - - m',
  '<13>1 2003-08-24T05:14:15.0000003-07:00 h a - - - m', '<14>1 - - - - - -', '<13>1 - h a - - -',
  '<13>Dec 27 07:16:40 su[987]: F', '<13>Dec 04 07:16:40 h su: F', '<13>Dec  4 07:16:40 h su: F'
].map((s) => Buffer.from(s))
  .concat([
    Buffer.concat([Buffer.from('<13>1 - h a - - - \xef\xbb\xbf', 'latin1'), Buffer.from([0x68, 0xff, 0xc3, 0x28])]),
    Buffer.concat([Buffer.from('<13>1 - h a - - - '), Buffer.from([0x41, 0xfe])]),
    Buffer.concat([Buffer.from('<13>1 - h a - - [x@1 k="'), Buffer.from([0x61, 0x80]), Buffer.from('"] m')])
  ])

const INTERESTING = [0x20, 0x5b, 0x5d, 0x22, 0x5c, 0x3d, 0x2d, 0x30, 0x31, 0x54, 0x5a, 0x3a, 0x09, 0x80, 0xff, 0x61, 0x3e, 0x2b]

// Seeded byte mutations of valid messages. None ends in CR, LF or NUL: the
// parser strips those as transport framing (RFC 6587 §3.4.2), which go-syslog
// leaves to its framing packages.
function mutate (valid, count) {
  let s = 20240601
  const rand = (n) => { s = (s * 1103515245 + 12345) & 0x7fffffff; return s % n }
  const out = []
  while (out.length < count) {
    let bytes = Buffer.from(valid[rand(valid.length)])
    for (let k = 0; k <= rand(2); k++) {
      const at = rand(bytes.length)
      const op = rand(3)
      if (op === 0) bytes[at] = INTERESTING[rand(INTERESTING.length)]
      else if (op === 1) bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)])
      else bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at, at + 1 + rand(4)), bytes.subarray(at)])
    }
    const last = bytes[bytes.length - 1]
    if (bytes.length > 0 && last !== 0x0a && last !== 0x0d && last !== 0) out.push(bytes)
  }
  return out
}

// Where go-syslog and RFC 5424 part; each needs both sides to say so.
const EXCEPTIONS = [
  {
    name: 'VERSION 2-999: go-syslog accepts any, we keep them raw (RFC 5424 §6.2.2, §9.1: only VERSION 1 is defined; its fields cannot be assumed)',
    applies: (oracle, ours) => oracle.valid && oracle.version !== 1 && ours.error === 'unsupported-version'
  },
  {
    name: 'MSG not valid UTF-8: go-syslog refuses, we keep the bytes in messageRaw (RFC 5424 §6.4: MSG-ANY is *OCTET; a BOM-prefixed MSG that is not valid UTF-8 "MUST NOT be interpreted as" UTF-8, so it is kept as bytes, not refused)',
    applies: (oracle, ours) => !oracle.valid && oracle.error.startsWith('expecting a free-form optional message in UTF-8') &&
      ours.format === '5424' && ours.invalidUtf8 === true && Buffer.isBuffer(ours.messageRaw)
  },
  {
    name: 'a backslash before anything but " \\ ]: go-syslog refuses, we keep the backslash (RFC 5424 §6.3.3: "the backslash MUST be treated as a regular backslash and the following character as well")',
    applies: (oracle, ours) => !oracle.valid && /escaped|structured data parameter/.test(oracle.error) &&
      ours.format === '5424' && elementsOf(ours).some((e) => e.params.some(([, v]) => /\\[^"\\\]]|\\$/.test(v)))
  },
  {
    name: 'PARAM-VALUE not valid UTF-8: go-syslog refuses, we keep the bytes beside the value (RFC 5424 §6.3.3 asks for UTF-8 here; we store rather than drop, as for MSG in §6.4, flagged invalidUtf8)',
    applies: (oracle, ours) => !oracle.valid && /escaped within param value|structured data parameter/.test(oracle.error) &&
      ours.format === '5424' && ours.invalidUtf8 === true && ours.sdElements.some((e) => e.params.some((p) => p.length === 3))
  }
]

// The SD elements in order: the record's list when it kept one (the map could
// not say it all), else the map's entries, which then hold everything (keys
// decoded back to the names as sent).
function elementsOf (record) {
  if (record.sdElements) return record.sdElements
  return Object.entries(record.structuredData || {}).map(([id, params]) =>
    ({ id: decodeSdName(id), params: Object.entries(params).flatMap(([name, value]) => [].concat(value).map((v) => [decodeSdName(name), v])) }))
}

function nanosOf (record) {
  // no text kept: the Date holds it all (UTC, at most milliseconds)
  if (record.timestampText === undefined) return (record.timestamp.getTime() % 1000 + 1000) % 1000 * 1e6
  const dot = record.timestampText.indexOf('.')
  if (dot === -1) return 0
  let end = dot + 1
  while (/[0-9]/.test(record.timestampText[end] || '')) end++
  return Number(record.timestampText.slice(dot + 1, end).padEnd(9, '0'))
}

// go-syslog's view of our record: SD a map, later params winning; no BOM.
function asOracle (record) {
  let sd = null
  if (record.structuredData) {
    sd = {}
    for (const element of elementsOf(record)) {
      sd[element.id] = {}
      for (const [name, value] of element.params) sd[element.id][name] = value
    }
  }
  const ms = record.timestamp ? record.timestamp.getTime() : null
  return {
    valid: true,
    priority: record.facility * 8 + record.severity,
    version: 1,
    seconds: ms === null ? undefined : Math.floor(ms / 1000),
    nanos: ms === null ? undefined : nanosOf(record),
    hostname: record.host,
    appname: record.app,
    procid: record.procid,
    msgid: record.msgid,
    sd,
    message: record.message === '' ? null : record.message
  }
}

function comparable (oracle) {
  return { ...oracle, seconds: oracle.seconds, nanos: oracle.seconds === undefined ? undefined : (oracle.nanos || 0) }
}

test('parseSyslog agrees with go-syslog strict RFC 5424 on valid, defect and mutated messages', { timeout: 180000 }, (t) => {
  if (!hasGo()) return t.skip('go is not installed: the go-syslog oracle cannot be built')
  const binary = buildOracle(t)
  const generated = corpora()
  const valid = [...generated['5424 + SD, escapes, BOM, UTF-8'], ...generated['5424 no SD']]
  const messages = [...valid, ...DEFECTS, ...mutate(valid, 4000), ...generated['malformed mix']]
  const verdicts = runOracle(binary, messages)
  const excepted = new Map(EXCEPTIONS.map((e) => [e.name, 0]))
  const failures = []
  let accepted = 0
  for (let i = 0; i < messages.length; i++) {
    const oracle = verdicts[i]
    const ours = parseSyslog(messages[i])
    const exception = EXCEPTIONS.find((e) => e.applies(oracle, ours))
    if (exception) {
      excepted.set(exception.name, excepted.get(exception.name) + 1)
      continue
    }
    if (oracle.valid) {
      accepted++
      if (ours.format !== '5424') failures.push({ i, why: `go-syslog accepts, we say ${ours.error || ours.format}` })
      else {
        try {
          assert.deepEqual(asOracle(ours), comparable(oracle))
        } catch (err) {
          failures.push({ i, why: err.message.slice(0, 400) })
        }
      }
    } else if (ours.format === '5424') failures.push({ i, why: `go-syslog refuses (${oracle.error}), we accept` })
  }
  const shown = failures.slice(0, 5).map((f) => `${JSON.stringify(messages[f.i].toString('latin1'))}: ${f.why}`)
  assert.deepEqual(shown, [], `${failures.length} disagreements of ${messages.length}`)
  assert.ok(accepted >= valid.length, `go-syslog accepted ${accepted}`)
  t.diagnostic(`${messages.length} messages, ${accepted} accepted by both; exceptions: ${JSON.stringify(Object.fromEntries(excepted))}`)
})
