'use strict'

// TLS on the TCP inputs against real peers: rsyslogd's gtls and ossl
// stream drivers as senders, `openssl s_client` and util-linux `logger`
// (plaintext) for the refusals, Node's tls for the rest; certificates made
// by the `openssl` CLI at test time. Stored documents are read back from
// the test database; refusals from the counters (events.tlsRejected by
// reason) and the log (one line per reason per interval).

const test = require('node:test')
const { after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const tls = require('node:tls')
const dgram = require('node:dgram')
const { spawn, execFile } = require('node:child_process')
const { promisify } = require('node:util')
const { MongoClient } = require('mongodb')
const syslog = require('../../collectors/syslog')
const { LoadBalancer, InvalidOptionError } = require('../..')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { makeTlsFixtures, makeCert } = require('../helpers/tls-certs')
const { startRsyslog, rsyslogAvailable } = require('../helpers/rsyslog')
const { runCli } = require('../helpers/cli')
const { captureLogger } = require('../helpers/capture-logger')
const { startLb, settled, waitFor, COUNTING, HOST } = require('../helpers/lb')
const { runCollector, countLines, withDatabase } = require('../fixtures/foreground-run')

const run = promisify(execFile)
const certs = makeTlsFixtures()
after(() => certs.cleanup())
const read = (file) => fs.readFileSync(file)

const SERVER_FLAGS = ['--protocol', 'tcp_server', '--tls-cert', certs.server.cert, '--tls-key', certs.server.key]
const MUTUAL_FLAGS = [...SERVER_FLAGS, '--tls-ca', certs.ca.cert]
const needsRsyslog = (driver) => !rsyslogAvailable(driver) && !process.env.CI && `rsyslogd with lmnsd_${driver} is not installed`

/** The syslog collector on TLS (`flags`), its database, a recording logger. */
async function startSyslog (t, flags) {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('tls')
  const { logger, records } = captureLogger()
  const config = new syslog.Config(['--port', '0', '-i', '2', '--database', database, '--flush-interval', '50ms', '--buffer-dir', tempBufferDir(t), ...flags]).getConfig()
  const collector = new syslog.Collector({ ...config, logger, workerOptions: { mongoUri: uri } })
  t.after(() => collector.stop())
  await collector.start()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const messages = async (prefix) => (await client.db(database).collection('syslog').find({ message: { $regex: `^${prefix}` } }).toArray())
  return { collector, messages, records, port: collector.address().port }
}

const line = (text) => `<14>1 2026-11-23T10:00:00Z tls-test app - - - ${text}`

/**
 * One TLS client: connects, sends `lines` newline-framed, ends. Resolves
 * with `{ error }` (the client-side error code, if any) once closed.
 */
function tlsAttempt (port, { lines = [], ...options } = {}) {
  return new Promise((resolve) => {
    let error
    const socket = tls.connect({ host: HOST, port, ca: read(certs.ca.cert), servername: 'localhost', ...options })
    socket.once('secureConnect', () => socket.end(lines.map((l) => `${l}\n`).join('')))
    socket.on('error', (err) => { error = error || err.code })
    socket.once('close', () => resolve({ error }))
  })
}

const withCert = (entity) => ({ cert: read(entity.cert), key: read(entity.key) })

/** `openssl s_client` sending `text`; resolves when it exits (refused or done). */
function sClient (port, args, text) {
  return new Promise((resolve) => {
    const child = spawn('openssl', ['s_client', '-connect', `${HOST}:${port}`, '-quiet', '-no_ign_eof', ...args], { stdio: ['pipe', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d) => { stderr += d })
    child.stdin.end(`${text}\n`)
    child.on('close', (code) => resolve({ code, stderr }))
  })
}

const rejected = (collector) => collector.summary().eventReasons.tlsRejected || {}
const sumOf = (reasons) => Object.values(reasons).reduce((a, b) => a + b, 0)

/** Sends `count` datagrams `<prefix> i` to rsyslog's input, paced by what the collector received. */
async function sendThroughRsyslog (rsyslog, collector, prefix, count) {
  const socket = dgram.createSocket('udp4')
  try {
    for (let i = 0; i < count; i++) {
      await new Promise((resolve, reject) => socket.send(line(`${prefix} ${i}`), rsyslog.udpPort, HOST, (err) => err ? reject(err) : resolve()))
      if (i % 50 === 49) await waitFor(() => collector.summary().received >= i + 1, { what: `${i + 1} messages through rsyslog` })
    }
  } finally {
    socket.close()
  }
}

test('rsyslog (gtls, x509/name, client certificate) over mutual TLS: every message stored exactly once', { skip: needsRsyslog('gtls'), timeout: 120000 }, async (t) => {
  const N = 300
  const { collector, messages, port } = await startSyslog(t, [...MUTUAL_FLAGS, '--tls-allowed-names', '*.example.com'])
  const rsyslog = await startRsyslog(t, port, { driver: 'gtls', authMode: 'x509/name', permittedPeers: 'localhost', ca: certs.ca.cert, cert: certs.client.cert, key: certs.client.key })
  await sendThroughRsyslog(rsyslog, collector, 'via-rsyslog', N)
  await waitFor(() => collector.summary().received >= N, { what: `${N} messages received`, timeout: 30000 })
  await collector.stop()
  const docs = await messages('via-rsyslog ')
  assert.equal(docs.length, N, rsyslog.output())
  assert.deepEqual(new Set(docs.map((d) => d.message)), new Set(Array.from({ length: N }, (_, i) => `via-rsyslog ${i}`)))
  assert.deepEqual([docs[0].format, docs[0].app], ['5424', 'app'])
  const s = collector.summary()
  assert.equal(s.received, N)
  assert.equal(s.dropped.total, 0)
  assert.equal(s.events.tlsRejected, undefined, JSON.stringify(s.eventReasons))
  assert.ok(s.events.connections >= 1)
})

test('rsyslog (ossl) without a client certificate against --tls-ca: refused, counted, nothing stored; a client with one then is', { skip: needsRsyslog('ossl'), timeout: 120000 }, async (t) => {
  const { collector, messages, records, port } = await startSyslog(t, MUTUAL_FLAGS)
  const rsyslog = await startRsyslog(t, port, { driver: 'ossl', authMode: 'x509/name', permittedPeers: 'localhost', ca: certs.ca.cert })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  for (let i = 0; i < 5; i++) socket.send(line(`no-cert ${i}`), rsyslog.udpPort, HOST)
  await waitFor(() => rejected(collector).noClientCertificate >= 1, { what: 'rsyslog refused', timeout: 30000 })
  assert.deepEqual(Object.keys(rejected(collector)), ['noClientCertificate'])
  assert.equal(collector.summary().received, 0)
  assert.equal(collector.summary().events.connections, undefined, 'no refused handshake counts as a connection')
  const lines = records.filter((r) => r.fields.reason === 'noClientCertificate')
  assert.equal(lines.length, 1, 'one log line per reason per interval, however many refusals')
  assert.deepEqual([lines[0].level, lines[0].fields.remote], ['warn', '127.0.0.1'])
  assert.equal((await tlsAttempt(port, { ...withCert(certs.client), lines: [line('with-cert 0'), line('with-cert 1')] })).error, undefined)
  await waitFor(() => collector.summary().received === 2, { what: 'the client with a certificate' })
  await collector.stop()
  assert.deepEqual((await messages('with-cert ')).map((d) => d.message).sort(), ['with-cert 0', 'with-cert 1'])
  assert.deepEqual(await messages('no-cert '), [])
})

test('a client certificate name a sender chose is logged escaped: its bidi override and C1 control reach no log file raw (QA)', { timeout: 60000 }, async (t) => {
  const { collector, records, port } = await startSyslog(t, [...MUTUAL_FLAGS, '--tls-allowed-names', 'client.example.com'])
  const bidi = makeCert(certs.dir, certs.ca, 'bidi-client', { cn: 'ab\u202ecd\u009bx.example.com', usage: 'client' })
  await tlsAttempt(port, { ...withCert(bidi), lines: [line('bidi 0')] })
  await waitFor(() => rejected(collector).nameNotAllowed === 1, { what: 'the name refused' })
  await collector.stop()
  const logged = records.find((r) => r.fields.reason === 'nameNotAllowed')
  assert.equal(logged.fields.names, 'ab\\u202ecd\\x9bx.example.com', 'the name as escape text')
  // eslint-disable-next-line no-control-regex
  for (const text of [logged.fields.names, logged.msg]) assert.doesNotMatch(text, /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/)
  assert.equal(collector.summary().received, 0)
})

test('refused and counted by reason: plaintext (logger -T), expired and foreign client certificates and TLS 1.0 (openssl s_client), TLS 1.1, no certificate, a name not allowed; a good client after them is stored', { timeout: 120000 }, async (t) => {
  const { collector, messages, records, port } = await startSyslog(t, [...MUTUAL_FLAGS, '--tls-allowed-names', 'client.example.com,*.example.org'])
  await run('logger', ['-T', '-n', HOST, '-P', String(port), '--rfc5424', 'plaintext 0'])
  await run('logger', ['-T', '-n', HOST, '-P', String(port), '--octet-count', '--rfc5424', 'plaintext 1'])
  const ca = ['-CAfile', certs.ca.cert]
  await sClient(port, [...ca, '-cert', certs.expiredClient.cert, '-key', certs.expiredClient.key], line('expired 0'))
  await sClient(port, [...ca, '-cert', certs.strangerClient.cert, '-key', certs.strangerClient.key], line('stranger 0'))
  const tls10 = await sClient(port, [...ca, '-tls1', '-cipher', 'DEFAULT@SECLEVEL=0', '-cert', certs.client.cert, '-key', certs.client.key], line('tls10 0'))
  assert.match(tls10.stderr, /protocol version/, 'the TLS 1.0 client was told why')
  const tls11 = await tlsAttempt(port, { ...withCert(certs.client), minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0', lines: [line('tls11 0')] })
  assert.equal(tls11.error, 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION')
  await tlsAttempt(port, { lines: [line('no-cert 0')] })
  await tlsAttempt(port, { ...withCert(certs.otherClient), lines: [line('intruder 0')] })
  const expected = { plaintext: 2, certificateExpired: 1, unknownCa: 1, protocolVersion: 2, noClientCertificate: 1, nameNotAllowed: 1 }
  await waitFor(() => sumOf(rejected(collector)) >= 8, { what: '8 refusals counted' })
  assert.deepEqual(rejected(collector), expected)
  assert.equal(collector.summary().events.tlsRejected, 8)
  assert.equal(collector.summary().received, 0)
  // One warn line per reason, naming the peer, however many refusals.
  const lines = records.filter((r) => r.level === 'warn' && r.fields.reason)
  assert.deepEqual(lines.map((r) => r.fields.reason).sort(), Object.keys(expected).sort())
  assert.ok(lines.every((r) => r.fields.remote === '127.0.0.1' && r.msg.includes(r.fields.reason)))
  assert.equal(lines.find((r) => r.fields.reason === 'nameNotAllowed').fields.names, 'intruder.example.net')
  // After all that the collector still takes a legitimate client.
  const good = await tlsAttempt(port, { ...withCert(certs.client), lines: [0, 1, 2].map((i) => line(`good ${i}`)) })
  assert.equal(good.error, undefined)
  await waitFor(() => collector.summary().received === 3, { what: 'the good client' })
  await collector.stop()
  assert.deepEqual((await messages('')).map((d) => d.message).sort(), ['good 0', 'good 1', 'good 2'])
  assert.equal(collector.summary().events.connections, 1)
})

test('TLS without --tls-ca takes any client (no certificate asked for) and refuses plaintext', async (t) => {
  const lb = await startLb(t, { protocol: 'tcp_server', tlsCert: certs.server.cert, tlsKey: certs.server.key })
  const port = lb.address().port
  assert.equal((await tlsAttempt(port, { lines: ['a', 'b'] })).error, undefined)
  await run('logger', ['-T', '-n', HOST, '-P', String(port), 'plain'])
  await waitFor(() => lb.summary().events.tlsRejected === 1, { what: 'the plaintext client refused' })
  const s = await settled(lb)
  assert.equal(s.processed, 2)
  assert.deepEqual(s.eventReasons.tlsRejected, { plaintext: 1 })
  // collector status says it too (QA: "dropped by reason: none", and nothing of the refusal).
  const { render } = require('../../app/commands/status')
  const { buildSnapshot, computeRates } = require('../../app/stats-file')
  const stats = await lb.stats()
  const text = render(buildSnapshot({ name: 'tls', collector: 'syslog', pid: process.pid, interval: 1000 }, stats, computeRates(stats)))
  assert.match(text, /^events: connections 1, tlsRejected 1 \(plaintext 1\)$/m)
})

/** A Node TLS server requiring client certificates from `ca`, sending `lines` to each client. */
async function lineServer (t, lines) {
  const seen = []
  const sockets = new Set()
  const server = tls.createServer({ ...withCert(certs.server), ca: read(certs.ca.cert), requestCert: true, rejectUnauthorized: true }, (socket) => {
    seen.push(socket.getPeerCertificate().subject.CN)
    sockets.add(socket)
    socket.on('error', () => {})
    socket.write(lines.map((l) => `${l}\n`).join(''))
  })
  server.on('tlsClientError', () => {})
  await new Promise((resolve) => server.listen(0, HOST, resolve))
  t.after(() => new Promise((resolve) => {
    server.close(resolve)
    for (const socket of sockets) socket.destroy()
  }))
  return { port: server.address().port, seen }
}

test('tcp_client over TLS: verifies the server against --tls-ca, presents its certificate, frames arrive', async (t) => {
  const lines = Array.from({ length: 50 }, (_, i) => `frame ${i}`)
  const { port, seen } = await lineServer(t, lines)
  const lb = await startLb(t, { protocol: 'tcp_client', port, instances: 1, tlsCa: certs.ca.cert, tlsCert: certs.client.cert, tlsKey: certs.client.key })
  await waitFor(() => lb.summary().processed === 50, { what: '50 frames processed' })
  assert.deepEqual(seen, ['client.example.com'])
  assert.equal(lb.summary().events.tlsRejected, undefined)
})

test('tcp_client against a server whose certificate does not verify: refused, counted, retried with backoff, logged once', async (t) => {
  const { port, seen } = await lineServer(t, ['never'])
  const { logger, records } = captureLogger()
  const lb = new LoadBalancer({ worker: COUNTING, instances: 1, protocol: 'tcp_client', host: HOST, port, retryDelay: 20, tlsCa: certs.otherCa.cert, tlsCert: certs.client.cert, tlsKey: certs.client.key, logger })
  t.after(() => lb.stop())
  const starting = lb.start().catch((err) => err)
  await waitFor(() => (lb.summary().eventReasons.tlsRejected || {}).unknownCa >= 3, { what: '3 refused handshakes' })
  assert.ok(lb.summary().restarts.listener >= 3, 'retried')
  assert.equal(lb.summary().received, 0)
  assert.deepEqual(seen, [], 'the server never saw a completed handshake it accepted')
  const tlsLines = records.filter((r) => r.fields.reason === 'unknownCa')
  assert.equal(tlsLines.length, 1, 'one line per reason per interval')
  assert.equal(tlsLines[0].fields.remote, `${HOST}:${port}`)
  await lb.stop()
  await starting
})

function copyPair (entity, dir) {
  fs.copyFileSync(entity.cert, path.join(dir, 'cert.pem'))
  fs.copyFileSync(entity.key, path.join(dir, 'key.pem'))
}

test('restart() re-reads renewed certificate files: new clients get the new one, a connection open across it loses nothing, a bad renewal keeps the old', { timeout: 60000 }, async (t) => {
  const live = fs.mkdtempSync(path.join(certs.dir, 'live-'))
  copyPair(certs.server, live)
  const lb = await startLb(t, { protocol: 'tcp_server', tlsCert: path.join(live, 'cert.pem'), tlsKey: path.join(live, 'key.pem') })
  const port = lb.address().port
  const open = tls.connect({ host: HOST, port, ca: read(certs.ca.cert), servername: 'localhost' })
  t.after(() => open.destroy())
  await new Promise((resolve, reject) => { open.once('secureConnect', resolve); open.once('error', reject) })
  open.write(Array.from({ length: 100 }, (_, i) => `before ${i}\n`).join(''))
  await waitFor(() => lb.summary().processed === 100, { what: '100 frames before the restart' })

  copyPair(certs.newServer, live)
  await lb.restart()
  const onlyNew = { ca: read(certs.otherCa.cert) }
  assert.equal((await tlsAttempt(port, { ...onlyNew, lines: ['renewed 0', 'renewed 1'] })).error, undefined, 'a client trusting only the new CA connects')
  assert.equal((await tlsAttempt(port, { lines: ['stale'] })).error, 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'one trusting only the old CA does not')
  open.end(Array.from({ length: 100 }, (_, i) => `after ${i}\n`).join(''))
  assert.equal(open.getPeerCertificate().issuer.CN, 'Collector Test CA', 'the open connection kept its certificate')

  fs.writeFileSync(path.join(live, 'cert.pem'), 'not a certificate\n')
  await lb.restart()
  assert.equal(lb.summary().events.listenerReloadFailed, 1)
  assert.equal((await tlsAttempt(port, { ...onlyNew, lines: ['kept 0'] })).error, undefined, 'the last good certificate stays in use')

  const s = await settled(lb)
  assert.equal(s.processed, 203)
  assert.equal(s.dropped.total, 0)
  assert.equal(s.restarts.rolling, 4, 'two rolling restarts of two workers')
})

test('SIGUSR2 (what `collector restart NAME` sends through PM2) makes a running collector take renewed certificate files', { timeout: 120000 }, async (t) => {
  const live = fs.mkdtempSync(path.join(certs.dir, 'live-'))
  copyPair(certs.server, live)
  const { uri } = await getTestMongo()
  const database = uniqueDbName('tlsrestart')
  const collector = await runCollector(t, 'syslog', {
    flags: ['-i', '1', '--flush-interval', '50ms', '--protocol', 'tcp_server', '--tls-cert', path.join(live, 'cert.pem'), '--tls-key', path.join(live, 'key.pem')],
    env: { MONGODB_URI: withDatabase(uri, database) }
  })
  assert.equal((await tlsAttempt(collector.port, { lines: [line('first 0')] })).error, undefined)
  copyPair(certs.newServer, live)
  const before = (await collector.stats()).restarts.rolling
  process.kill(collector.pid, 'SIGUSR2')
  await waitFor(async () => (await collector.stats()).restarts.rolling > before, { what: 'the rolling restart' })
  const renewed = await tlsAttempt(collector.port, { ca: read(certs.otherCa.cert), lines: [0, 1, 2].map((i) => line(`rotated ${i}`)) })
  assert.equal(renewed.error, undefined)
  await waitFor(async () => (await countLines(uri, database, 'rotated')) === 3, { what: '3 lines after the rotation stored' })
  assert.equal(await countLines(uri, database, 'first'), 1)
})

test('bad TLS flags: exit 2 with a line naming the flag', async () => {
  const env = { ...process.env, COLLECTOR_LOG_LEVEL: 'silent' }
  const cases = [
    [['--protocol', 'tcp_server', '--tls-cert', certs.server.cert], /--tls-key: is required with --tls-cert/],
    [['--protocol', 'tcp_server', '--tls-key', certs.server.key], /--tls-cert: is required with --tls-key/],
    [['--protocol', 'udp', '--tls-ca', certs.ca.cert], /--tls-ca: applies to tcp_server and tcp_client only, but --protocol is udp/],
    [['--protocol', 'tcp_server', '--tls-cert', certs.server.key, '--tls-key', certs.server.key], /--tls-cert: \S+server\.key is not a PEM certificate/],
    [['--protocol', 'tcp_server', '--tls-cert', certs.server.cert, '--tls-key', path.join(certs.dir, 'missing.key')], /--tls-key: cannot read \S+missing\.key \(ENOENT\)/],
    [['--protocol', 'tcp_server', '--tls-cert', certs.server.cert, '--tls-key', certs.client.key], /--tls-key: does not go with the certificate in --tls-cert/],
    [[...SERVER_FLAGS, '--tls-allowed-names', 'a.example.com'], /--tls-allowed-names: needs --tls-ca/],
    [[...MUTUAL_FLAGS, '--tls-allowed-names', 'a.*.example.com'], /--tls-allowed-names: must be host names/]
  ]
  for (const [flags, pattern] of cases) {
    const { code, stderr } = await runCli(env, 'run', 'syslog', ...flags)
    assert.equal(code, 2, stderr)
    assert.match(stderr, pattern)
    assert.equal(stderr.trim().split('\n').length, 1, stderr) // one line: one problem
    assert.doesNotMatch(stderr, /\n\s+at /, 'no stack')
  }
})

test('bad TLS options from code: InvalidOptionError naming the option', () => {
  const base = { worker: COUNTING, protocol: 'tcp_server' }
  const cases = [
    [{ tlsCert: certs.server.cert }, 'tlsKey'],
    [{ protocol: 'udp', tlsCert: certs.server.cert, tlsKey: certs.server.key }, 'tlsCert'],
    [{ tlsCert: certs.client.key, tlsKey: certs.client.key }, 'tlsCert'],
    [{ tlsCert: certs.server.cert, tlsKey: certs.server.key, tlsAllowedNames: ['x.example.com'] }, 'tlsAllowedNames'],
    [{ protocol: 'tcp_client', port: 9, tlsAllowedNames: ['x.example.com'], tlsCa: certs.ca.cert }, 'tlsAllowedNames'],
    [{ tls: true }, 'tlsCert']
  ]
  for (const [options, option] of cases) {
    assert.throws(() => new LoadBalancer({ ...base, ...options }), (err) => err instanceof InvalidOptionError && err.code === 'ERR_INVALID_OPTION' && err.option === option, JSON.stringify(options))
  }
  const lb = new LoadBalancer({ ...base, tlsCert: certs.server.cert, tlsKey: certs.server.key, tlsCa: certs.ca.cert, tlsAllowedNames: 'a.example.com, *.example.net' })
  assert.deepEqual(lb.options.tlsAllowedNames, ['a.example.com', '*.example.net'])
})
