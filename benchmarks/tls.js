'use strict'
// Syslog over TCP with TLS against plaintext, in one invocation: what TLS
// costs the master (decrypt, then the same octet-counting framing and
// dispatch). Each run: a LoadBalancer (tcp_server, framing octet-counting,
// --instances workers of benchmarks/count-worker.js, which count and store
// nothing, so that the database does not hide the transport) and a sender in
// another process that opens --connections connections (TLS 1.3 with a
// certificate made by the `openssl` CLI, or plain TCP), then writes
// --messages RFC 5424 lines (collectors/syslog/generator.js, octet-counted,
// as rsyslog's omfwd sends them) split evenly over them, each as fast as
// its socket drains.
//   messagesPerSecond = messages / (all processed by the workers − first byte)
//   receivedPerSecond = messages / (all read and framed by the master − first byte)
//   masterCpuUsPerMessage = the master's CPU over the first window / messages
//   handshakeMs = time for the sender to have every connection up
// Variants plain/tls × 1 and 100 connections alternate for --rounds rounds
// (the order reversed every other round); a table per run, the median of
// each variant, TLS as a ratio of plaintext, then one JSON line. A run is
// cut after --timeout seconds (reported, not counted).
// Usage: node benchmarks/tls.js [--messages 1000000] [--rounds 3]
//   [--instances 1] [--timeout 60]
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const net = require('node:net')
const tls = require('node:tls')
const { fork, execFileSync } = require('node:child_process')
const minimist = require('minimist')
const { LoadBalancer } = require('..')
const { generateSyslog } = require('../collectors/syslog/generator')

const args = minimist(process.argv.slice(2), { default: { messages: 1000000, rounds: 3, instances: 1, timeout: 60 } })
const HOST = '127.0.0.1'
const POLL_MS = 5
const CONNECTIONS = [1, 100]

if (process.argv[2] === '--sender') sender()
else main().catch((err) => { console.error(err); process.exit(1) })

// ---- the sender (a child process) ----

function sender () {
  process.once('message', async ({ port, secure, connections, messages, ca }) => {
    const corpus = Array.from({ length: 1000 }, (_, i) => {
      const line = generateSyslog({ host: `host${i % 50}`, app: 'bench', msgid: 'ID47', message: `message ${i} ${'x'.repeat(i % 120)}`, structuredData: i % 3 ? { 'meta@32473': { seq: String(i) } } : undefined })
      return `${Buffer.byteLength(line)} ${line}`
    })
    const started = Date.now()
    const sockets = await Promise.all(Array.from({ length: connections }, () => open(port, secure, ca)))
    const handshakeMs = Date.now() - started
    const firstByteAt = Date.now()
    process.send({ handshakeMs, firstByteAt })
    const share = Math.floor(messages / connections)
    await Promise.all(sockets.map((socket, i) => pump(socket, corpus, i === 0 ? messages - share * (connections - 1) : share)))
    process.send({ done: true })
  })
}

function open (port, secure, ca) {
  return new Promise((resolve, reject) => {
    const socket = secure
      ? tls.connect({ host: HOST, port, ca, servername: 'localhost' }, () => resolve(socket))
      : net.connect({ host: HOST, port }, () => resolve(socket))
    socket.once('error', reject)
  })
}

// Writes `count` frames in ~64 KiB chunks, waiting for 'drain' when the socket is full.
async function pump (socket, corpus, count) {
  let sent = 0
  let index = 0
  while (sent < count) {
    const parts = []
    let bytes = 0
    while (sent < count && bytes < 65536) {
      const frame = corpus[index++ % corpus.length]
      parts.push(frame)
      bytes += frame.length
      sent++
    }
    if (!socket.write(parts.join(''))) await new Promise((resolve) => socket.once('drain', resolve))
  }
  await new Promise((resolve) => socket.end(resolve))
}

// ---- the master ----

function makeCertificate () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-tls-'))
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem',
    '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { cwd: dir, stdio: 'ignore' })
  return { dir, cert: path.join(dir, 'cert.pem'), key: path.join(dir, 'key.pem') }
}

async function runOnce (variant, certificate) {
  const lb = new LoadBalancer({
    worker: path.join(__dirname, 'count-worker.js'),
    instances: args.instances,
    protocol: 'tcp_server',
    host: HOST,
    port: 0,
    framing: 'octet-counting',
    maxConnectionsPerSource: 1000,
    ...(variant.secure ? { tlsCert: certificate.cert, tlsKey: certificate.key } : {})
  })
  await lb.start()
  const child = fork(__filename, ['--sender'], { stdio: 'inherit' })
  try {
    return await measure(lb, child, variant, certificate)
  } finally {
    child.kill()
    await lb.stop()
  }
}

async function measure (lb, child, variant, certificate) {
  const messages = args.messages
  const started = new Promise((resolve) => child.once('message', resolve))
  child.send({ port: lb.address().port, secure: variant.secure, connections: variant.connections, messages, ca: variant.secure ? fs.readFileSync(certificate.cert, 'utf8') : undefined })
  const { handshakeMs, firstByteAt } = await started
  const cpuBefore = process.cpuUsage()
  const deadline = Date.now() + args.timeout * 1000
  let receivedAt = 0
  while (Date.now() < deadline) {
    const s = lb.summary()
    if (!receivedAt && s.received >= messages) receivedAt = Date.now()
    if (s.processed >= messages) break
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
  const doneAt = Date.now()
  const cpu = process.cpuUsage(cpuBefore)
  const s = lb.summary()
  const seconds = (doneAt - firstByteAt) / 1000
  return {
    variant: variant.name,
    received: s.received,
    complete: s.processed === messages,
    seconds: Number(seconds.toFixed(3)),
    messagesPerSecond: Math.round(s.processed / seconds),
    receivedPerSecond: receivedAt ? Math.round(messages / ((receivedAt - firstByteAt) / 1000)) : null,
    masterCpuUsPerMessage: Number(((cpu.user + cpu.system) / Math.max(1, s.received)).toFixed(2)),
    handshakeMs,
    connections: s.events.connections || 0,
    tlsRejected: s.events.tlsRejected || 0
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

function printRun (r) {
  console.log(`${r.variant.padEnd(10)} ${String(r.messagesPerSecond).padStart(9)} msg/s (master read ${String(r.receivedPerSecond).padStart(8)}/s)  ${String(r.masterCpuUsPerMessage).padStart(6)} µs/msg master CPU  handshakes ${String(r.handshakeMs).padStart(5)} ms  ${r.complete ? '' : `INCOMPLETE (${r.received} received)`}`)
}

async function main () {
  const certificate = makeCertificate()
  const variants = CONNECTIONS.flatMap((connections) => [false, true].map((secure) => ({ name: `${secure ? 'tls' : 'plain'}/${connections}`, secure, connections })))
  const results = []
  console.log(`syslog over TCP, ${args.messages} messages per run, ${args.instances} worker(s), ${os.cpus().length} cores`)
  try {
    for (let round = 0; round < args.rounds; round++) {
      const order = round % 2 ? [...variants].reverse() : variants
      for (const variant of order) {
        const result = await runOnce(variant, certificate)
        printRun(result)
        results.push(result)
      }
    }
  } finally {
    fs.rmSync(certificate.dir, { recursive: true, force: true })
  }
  const summary = {}
  for (const variant of variants) {
    const runs = results.filter((r) => r.variant === variant.name && r.complete)
    summary[variant.name] = runs.length === 0
      ? null
      : { messagesPerSecond: median(runs.map((r) => r.messagesPerSecond)), masterCpuUsPerMessage: median(runs.map((r) => r.masterCpuUsPerMessage)), handshakeMs: median(runs.map((r) => r.handshakeMs)) }
  }
  console.log('\nmedian      msg/s    µs/msg master  handshakes ms  TLS/plain rate, CPU')
  for (const variant of variants) {
    const m = summary[variant.name]
    const plain = summary[`plain/${variant.connections}`]
    const ratio = m && plain && variant.secure ? `${(m.messagesPerSecond / plain.messagesPerSecond).toFixed(2)}, ${(m.masterCpuUsPerMessage / plain.masterCpuUsPerMessage).toFixed(2)}` : ''
    console.log(`${variant.name.padEnd(10)} ${m ? String(m.messagesPerSecond).padStart(9) : '      n/a'} ${m ? String(m.masterCpuUsPerMessage).padStart(10) : ''} ${m ? String(m.handshakeMs).padStart(14) : ''}  ${ratio}`)
  }
  const ratio = (c, field) => summary[`tls/${c}`] && summary[`plain/${c}`] ? Number((summary[`tls/${c}`][field] / summary[`plain/${c}`][field]).toFixed(3)) : null
  const ratios = Object.fromEntries(CONNECTIONS.flatMap((c) => [[`tlsOverPlain/${c}`, ratio(c, 'messagesPerSecond')], [`cpuTlsOverPlain/${c}`, ratio(c, 'masterCpuUsPerMessage')]]))
  console.log(JSON.stringify({ benchmark: 'tls', messages: args.messages, instances: args.instances, rounds: args.rounds, median: summary, ...ratios, runs: results }))
}
