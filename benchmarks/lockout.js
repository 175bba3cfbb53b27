'use strict'
// Can idle or hostile connections lock a good sender out of tcp_server?
// Two attacks on a LoadBalancer with the default limits (32 connections per
// address, 1,024 in all), then a good sender, and what it got stored:
//   silent-tls: --silent connections (default 40) from 127.0.0.1 open a TCP
//     connection to the TLS port and never send a byte; --wait seconds later
//     (default 13: past the 10 s handshake timeout and the 10 s reclaim
//     grace) a TLS sender from 127.0.0.1 sends --messages lines.
//   slowloris: --idle connections (default 2,000) from 63 addresses
//     (127.0.0.2-64) connect and send nothing; --wait seconds later a plain
//     sender from 127.0.0.1 sends --messages lines.
// The good sender connects up to --attempts times (a refused connection is
// what rsyslog retries), one second apart. Prints a table and one JSON line:
// per scenario, lines sent and processed, the sender's refusals, and the
// master's connection events by reason. Same script on two commits: the
// before and after of a change in the limits.
// Usage: node benchmarks/lockout.js [--messages 8000] [--silent 40]
//   [--idle 2000] [--wait 13] [--attempts 5] [--only silent-tls|slowloris]
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const net = require('node:net')
const tls = require('node:tls')
const { execFileSync } = require('node:child_process')
const minimist = require('minimist')
const { LoadBalancer } = require('..')

const args = minimist(process.argv.slice(2), { default: { messages: 8000, silent: 40, idle: 2000, wait: 13, attempts: 5 } })
const HOST = '127.0.0.1'
const WORKER = path.join(__dirname, 'count-worker.js')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function makeCertificate (dir) {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem',
    '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { cwd: dir, stdio: 'ignore' })
  return { cert: path.join(dir, 'cert.pem'), key: path.join(dir, 'key.pem') }
}

async function openIdle (port, count, addressOf) {
  const sockets = []
  for (let i = 0; i < count; i++) {
    const socket = net.connect({ host: HOST, port, localAddress: addressOf(i) })
    socket.on('error', () => {})
    sockets.push(socket)
    if (i % 100 === 99) await sleep(10)
  }
  await sleep(500)
  return sockets
}

/** One attempt: connect (TLS or plain), send every line, end; resolves with the error code, if any. */
function sendOnce (port, lines, certificate) {
  return new Promise((resolve) => {
    let error
    const options = { host: HOST, port, localAddress: HOST }
    const socket = certificate
      ? tls.connect({ ...options, ca: fs.readFileSync(certificate.cert), servername: 'localhost' })
      : net.connect(options)
    socket.once(certificate ? 'secureConnect' : 'connect', () => socket.end(lines))
    socket.on('error', (err) => { error = error || err.code || err.message })
    socket.once('close', () => resolve(error))
  })
}

async function goodSender (port, certificate) {
  let lines = ''
  for (let i = 0; i < args.messages; i++) lines += `good line ${i}\n`
  const refusals = []
  for (let attempt = 0; attempt < args.attempts; attempt++) {
    const error = await sendOnce(port, lines, certificate)
    if (!error) return { refusals, sent: true }
    refusals.push(error)
    await sleep(1000)
  }
  return { refusals, sent: false }
}

async function scenario (name, dir) {
  const certificate = name === 'silent-tls' ? makeCertificate(dir) : null
  const lb = new LoadBalancer({ protocol: 'tcp_server', host: HOST, port: 0, instances: 1, worker: WORKER, ...(certificate ? { tlsCert: certificate.cert, tlsKey: certificate.key } : {}) })
  await lb.start()
  const { port } = lb.address()
  const attackers = name === 'silent-tls'
    ? await openIdle(port, args.silent, () => HOST)
    : await openIdle(port, args.idle, (i) => `127.0.0.${2 + (i % 63)}`)
  await sleep(args.wait * 1000)
  const outcome = await goodSender(port, certificate)
  const deadline = Date.now() + 10000
  while (Date.now() < deadline && lb.summary().inFlight > 0) await sleep(50)
  await sleep(200)
  const s = lb.summary()
  for (const socket of attackers) socket.destroy()
  await lb.stop()
  return {
    scenario: name,
    sent: args.messages,
    processed: s.processed,
    senderRefusals: outcome.refusals.length,
    senderError: outcome.refusals[0] || null,
    events: s.events,
    eventReasons: s.eventReasons
  }
}

async function main () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lockout-'))
  const results = []
  try {
    for (const name of ['silent-tls', 'slowloris']) {
      if (args.only && args.only !== name) continue
      results.push(await scenario(name, dir))
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  console.log('scenario      sent  processed  refusals  evicted  rejected  tlsRejected')
  for (const r of results) {
    const sum = (reasons) => Object.entries(reasons || {}).map(([k, v]) => `${k}:${v}`).join(',') || '-'
    console.log(`${r.scenario.padEnd(12)} ${String(r.sent).padStart(5)} ${String(r.processed).padStart(10)} ${String(r.senderRefusals).padStart(9)}  ${sum(r.eventReasons.connectionsEvicted)}  ${sum(r.eventReasons.connectionsRejected)}  ${sum(r.eventReasons.tlsRejected)}`)
  }
  console.log(JSON.stringify({ benchmark: 'lockout', node: process.version, results }))
}

main().catch((err) => { console.error(err); process.exit(1) })
