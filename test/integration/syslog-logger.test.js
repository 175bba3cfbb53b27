'use strict'

// What the real util-linux `logger` sends over UDP and TCP, framing asserted
// byte for byte, parsed by the syslog parser.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const net = require('node:net')
const os = require('node:os')
const { execFile } = require('node:child_process')
const { parseSyslog } = require('../../collectors/syslog/parser')

function pick (record, keys) {
  return Object.fromEntries(keys.map((k) => [k, record[k]]))
}

const LOGGER_ARGS = ['--sd-id', 'foo@123', '--sd-param', 'a="b"', '-t', 'myapp', '-p', 'local3.warning']

function runLogger (port, args, input) {
  return new Promise((resolve, reject) => {
    const child = execFile('logger', ['-n', '127.0.0.1', '-P', String(port), ...args], { timeout: 10000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`logger ${args.join(' ')}: ${stderr || err.message}`))
      else resolve()
    })
    if (input !== undefined) child.stdin.end(input)
  })
}

async function udpCapture (t, args) {
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve))
  const datagram = new Promise((resolve) => socket.once('message', resolve))
  await runLogger(socket.address().port, ['-d', ...args])
  return datagram
}

// Everything logger writes on one TCP connection, once it closes.
async function tcpCapture (t, args, input) {
  const server = net.createServer()
  t.after(() => server.close())
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const bytes = new Promise((resolve) => server.once('connection', (socket) => {
    const chunks = []
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('end', () => resolve(Buffer.concat(chunks)))
  }))
  await runLogger(server.address().port, ['-T', ...args], input)
  return bytes
}

function assertRecent (timestamp) {
  assert.ok(timestamp instanceof Date)
  assert.ok(Math.abs(timestamp.getTime() - Date.now()) < 120000, `timestamp ${timestamp.toISOString()} is now`)
}

function assertLogger5424 (record, message) {
  assert.equal(record.format, '5424', record.error)
  assert.deepEqual(pick(record, ['facility', 'severity', 'facilityName', 'severityName', 'app', 'procid', 'msgid', 'message']),
    { facility: 19, severity: 4, facilityName: 'local3', severityName: 'warning', app: 'myapp', procid: null, msgid: null, message })
  assert.equal(record.host, os.hostname())
  assert.deepEqual(record.structuredData['foo@123'], { a: 'b' })
  assert.deepEqual(Object.keys(record.structuredData.timeQuality).slice(0, 2), ['tzKnown', 'isSynced'])
  assertRecent(record.timestamp)
}

function assertLogger3164 (record, message) {
  assert.equal(record.format, '3164', record.error)
  assert.deepEqual(pick(record, ['facility', 'severity', 'app', 'procid', 'structuredData', 'message']),
    { facility: 19, severity: 4, app: 'myapp', procid: null, structuredData: null, message })
  assert.equal(record.host, os.hostname().split('.')[0])
  assertRecent(record.timestamp)
}

test('logger --rfc5424 over UDP: one datagram, no framing, no trailing newline', async (t) => {
  const datagram = await udpCapture(t, ['--rfc5424', ...LOGGER_ARGS, 'hello'])
  const text = datagram.toString('utf8')
  assert.match(text, /^<156>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d \S+ myapp - - \[timeQuality tzKnown="[01]" isSynced="[01]"[^\]]*\]\[foo@123 a="b"\] hello$/)
  assertLogger5424(parseSyslog(datagram), 'hello')
})

test('logger --rfc3164 over UDP: "<PRI>Mmm dd hh:mm:ss HOST TAG: MSG", no trailing newline', async (t) => {
  const datagram = await udpCapture(t, ['--rfc3164', '-t', 'myapp', '-p', 'local3.warning', 'hello'])
  assert.match(datagram.toString('utf8'), /^<156>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ myapp: hello$/)
  assertLogger3164(parseSyslog(datagram), 'hello')
})

test('logger over UDP with --id, --msgid and an escaped SD value', async (t) => {
  const datagram = await udpCapture(t, ['--rfc5424', '--id=4242', '--msgid', 'MID7', '--sd-id', 'x@1', '--sd-param', 'k="a\\]b"', '-t', 'myapp', 'hi'])
  const record = parseSyslog(datagram)
  assert.deepEqual(pick(record, ['procid', 'msgid', 'message']), { procid: '4242', msgid: 'MID7', message: 'hi' })
  assert.deepEqual(record.structuredData['x@1'], { k: 'a]b' })
})

// Octet counting (RFC 6587 §3.4.1): "LEN SP MSG", LEN the byte length of
// MSG, frames back to back with no newline.
function splitOctetCounted (bytes) {
  const frames = []
  let offset = 0
  while (offset < bytes.length) {
    const space = bytes.indexOf(0x20, offset)
    const header = bytes.subarray(offset, space).toString('latin1')
    assert.match(header, /^[1-9]\d*$/, `octet count at byte ${offset}`)
    const end = space + 1 + Number(header)
    assert.ok(end <= bytes.length, 'frame complete')
    frames.push(bytes.subarray(space + 1, end))
    offset = end
  }
  return frames
}

test('logger -T --octet-count: "LEN SP MSG" frames back to back, no newline', async (t) => {
  const bytes = await tcpCapture(t, ['--octet-count', '--rfc5424', ...LOGGER_ARGS], 'first\nsecond\n')
  assert.notEqual(bytes.indexOf('>1 '), -1)
  assert.equal(bytes.includes(0x0a), false, 'no LF anywhere')
  const frames = splitOctetCounted(bytes)
  assert.equal(frames.length, 2)
  assert.equal(bytes.toString('latin1'), frames.map((f) => `${f.length} ${f.toString('latin1')}`).join(''))
  assertLogger5424(parseSyslog(frames[0]), 'first')
  assertLogger5424(parseSyslog(frames[1]), 'second')
})

test('logger -T --octet-count --rfc3164: same framing around BSD messages', async (t) => {
  const bytes = await tcpCapture(t, ['--octet-count', '--rfc3164', '-t', 'myapp', '-p', 'local3.warning', 'hello 3164'])
  const frames = splitOctetCounted(bytes)
  assert.equal(frames.length, 1)
  assert.equal(bytes.includes(0x0a), false)
  assertLogger3164(parseSyslog(frames[0]), 'hello 3164')
})

test('logger -T without --octet-count: each message ends in LF, no count prefix', async (t) => {
  const bytes = await tcpCapture(t, ['--rfc5424', ...LOGGER_ARGS], 'first\nsecond\n')
  const text = bytes.toString('utf8')
  assert.ok(text.endsWith('\n'))
  const lines = text.slice(0, -1).split('\n')
  assert.equal(lines.length, 2)
  for (const line of lines) assert.match(line, /^<156>1 /)
  assertLogger5424(parseSyslog(lines[0]), 'first')
  assertLogger5424(parseSyslog(lines[1] + '\n'), 'second')
})

test('logger -T --rfc3164 without --octet-count: LF-terminated BSD lines', async (t) => {
  const bytes = await tcpCapture(t, ['--rfc3164', '-t', 'myapp', '-p', 'local3.warning', 'hello 3164'])
  const text = bytes.toString('utf8')
  assert.match(text, /^<156>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ myapp: hello 3164\n$/)
  assertLogger3164(parseSyslog(bytes), 'hello 3164')
})
