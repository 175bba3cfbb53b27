'use strict'

const dgram = require('node:dgram')
const net = require('node:net')
const { commandConfig, takePositionals, usageError } = require('./common')

const USAGE = 'collector simulate rtcp|syslog --target host:port [--streams N] [--rate R] [--duration 10s]'
const TICK_MS = 10
const SEQ_START = 65000 // the extended sequence numbers cross a 16-bit cycle early
const SEQ_STEP = 50 // ~1 s of 20 ms audio between reports

const Config = commandConfig(USAGE, {
  target: { type: 'string', required: true, description: 'host:port to send to', validate: (t) => (parseTarget(t) ? undefined : 'expected host:port') },
  streams: { type: 'integer', min: 1, max: 100000, default: 1, description: 'rtcp: calls (SSRC pairs); syslog: sending hosts' },
  rate: { type: 'number', min: 0.1, default: 100, description: 'packets per second, all streams together' },
  duration: { type: 'duration', min: 1000, default: '5s', description: 'how long to send (5s, 2m; a bare number is milliseconds, as in every flag)' },
  count: { type: 'integer', min: 1, description: 'packets to send (default: rate x duration)' },
  protocol: { type: 'string', choices: ['udp', 'tcp'], default: 'udp', description: 'syslog only: udp, or tcp (octet-counted frames)' },
  ssrcBase: { type: 'integer', min: 0, max: 0xfffffff0, description: 'rtcp: first SSRC (default random); stream i uses base+2i and base+2i+1' },
  json: { type: 'boolean', default: false, description: 'print the summary as JSON' },
  quiet: { type: 'boolean', default: false, description: 'no progress line' }
})

function parseTarget (text) {
  const match = /^\[?([^\]]*?)\]?:(\d{1,5})$/.exec(String(text))
  if (!match || Number(match[2]) > 65535 || Number(match[2]) === 0) return null
  return { host: match[1] || '127.0.0.1', port: Number(match[2]) }
}

/**
 * `collector simulate rtcp|syslog`: paced traffic, a progress line on
 * stderr, and a summary of exactly what was sent (per stream: packets and
 * the final highest sequence number) on stdout.
 */
async function run (argv) {
  if (argv[0] === '--help' || argv[0] === '-h') return Config.printHelp()
  const { values: [kind], rest } = takePositionals(argv, ['rtcp|syslog'], USAGE)
  if (!GENERATORS[kind]) throw usageError(`cannot simulate ${JSON.stringify(kind)}: choose rtcp or syslog\nusage: ${USAGE}`)
  const config = Config.parse(rest)
  if (config.help) return Config.printHelp()
  if (kind === 'rtcp' && config.protocol !== 'udp') throw usageError('--protocol: RTCP is sent over UDP only')
  const target = await resolved(parseTarget(config.target))
  const generator = GENERATORS[kind](config)
  const total = config.count || Math.max(1, Math.round(config.rate * config.duration / 1000))
  const transport = await openTransport(config.protocol, target)
  const result = await pace({ total, rate: config.rate, generator, transport, progress: !config.quiet })
  await transport.close()
  const summary = { kind, protocol: config.protocol, target: `${target.host}:${target.port}`, ...result, streams: config.streams, perStream: generator.summary() }
  process.stdout.write(config.json ? JSON.stringify(summary) + '\n' : formatSummary(summary))
  return summary.errors > 0 ? 1 : 0
}

// ----------------------------------------------------------- generators

const GENERATORS = { rtcp: rtcpGenerator, syslog: syslogGenerator }

// Each stream (call) is a pair of SSRCs that report on each other in turn:
// an RR from one side whose single report block names the other side.
function rtcpGenerator ({ streams, ssrcBase }) {
  const { encodeReport } = require('../../collectors/rtcp/encoder')
  const base = ssrcBase ?? randomSsrcBase(streams)
  const calls = Array.from({ length: streams }, (_, i) => ({
    stream: i,
    sides: [side(base + 2 * i), side(base + 2 * i + 1)],
    packets: 0
  }))
  let next = 0
  return {
    next () {
      const call = calls[next++ % streams]
      const [reporter, peer] = call.packets % 2 === 0 ? call.sides : [call.sides[1], call.sides[0]]
      reporter.highestSeq = reporter.highestSeq === null ? SEQ_START : reporter.highestSeq + SEQ_STEP
      reporter.packets++
      call.packets++
      const block = { ssrc: peer.ssrc, fractionLost: 0, cumulativeLost: 0, highestSeq: reporter.highestSeq, jitter: 40, lsr: 0, dlsr: 0 }
      return encodeReport({ ssrc: reporter.ssrc, reports: [block], cname: `sim-${reporter.ssrc}@collector-simulate` })
    },
    summary: () => calls.map(({ stream, sides: [from, to], packets }) => ({ stream, packets, from: { ...from }, to: { ...to } }))
  }
}

function side (ssrc) {
  return { ssrc, packets: 0, highestSeq: null }
}

function randomSsrcBase (streams) {
  return Math.floor(Math.random() * (0xfffffff0 - 2 * streams))
}

// Each stream is a host; its messages carry seq=<n>, counting from 1.
function syslogGenerator ({ streams }) {
  const { generateSyslog } = require('../../collectors/syslog/generator')
  const hosts = Array.from({ length: streams }, (_, i) => ({ stream: i, host: `sim-host-${i}`, packets: 0, highestSeq: 0 }))
  let next = 0
  return {
    next () {
      const h = hosts[next++ % streams]
      h.packets++
      h.highestSeq++
      const text = generateSyslog({ host: h.host, app: 'collector-simulate', procid: String(process.pid), msgid: 'SIM', severity: 'info', facility: 'local0', message: `stream=${h.stream} seq=${h.highestSeq}` })
      return Buffer.from(text)
    },
    summary: () => hosts.map((h) => ({ ...h }))
  }
}

// ------------------------------------------------------------ transports

// The target's address, looked up once: looked up per packet, a name that
// does not resolve sent nothing and counted every packet an error (a slow
// resolver: 98 of 500 packets in 20 s), and progress said all were sent.
// IPv4 first: `localhost` may resolve to ::1 first, where a collector on
// its default 127.0.0.1 hears nothing. TCP connects by the name (Node tries
// each address).
async function resolved (target) {
  if (net.isIP(target.host)) return target
  try {
    const addresses = await require('node:dns').promises.lookup(target.host, { all: true })
    const { address } = addresses.find((a) => a.family === 4) || addresses[0]
    return { ...target, address }
  } catch (err) {
    throw usageError(`--target: ${target.host} does not resolve (${err.code || err.message})`)
  }
}

function openTransport (protocol, target) {
  return protocol === 'tcp' ? openTcp(target) : openUdp(target)
}

// Loopback targets get a socket bound to 127.0.0.1, never a wildcard.
function openUdp ({ host: name, port, address }) {
  const host = address || name
  const socket = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4')
  const stats = { pending: 0, errors: 0, lastError: null }
  const waiters = []
  const settle = (err) => {
    stats.pending--
    if (err) [stats.errors, stats.lastError] = [stats.errors + 1, err.message]
    if (stats.pending === 0) waiters.splice(0).forEach((fn) => fn())
  }
  const ready = isLoopback(host) ? new Promise((resolve) => socket.bind({ address: net.isIPv6(host) ? '::1' : '127.0.0.1', port: 0 }, resolve)) : Promise.resolve()
  return ready.then(() => ({
    stats,
    send (buf) {
      stats.pending++
      socket.send(buf, port, host, settle)
    },
    idle: () => (stats.pending === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve))),
    close: () => new Promise((resolve) => socket.close(resolve))
  }))
}

// RFC 6587 octet counting: "<length> <message>".
function openTcp ({ host, port }) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port }, () => {
      socket.off('error', reject)
      resolve(tcpTransport(socket))
    })
    socket.once('error', reject)
  })
}

function tcpTransport (socket) {
  const stats = { pending: 0, errors: 0, lastError: null }
  socket.on('error', (err) => { stats.errors++; stats.lastError = err.message })
  return {
    stats,
    send (buf) {
      socket.write(Buffer.concat([Buffer.from(`${buf.length} `), buf]))
    },
    idle: () => (socket.writableNeedDrain ? new Promise((resolve) => socket.once('drain', resolve)) : Promise.resolve()),
    close: () => new Promise((resolve) => socket.end(resolve))
  }
}

function isLoopback (host) {
  return host === 'localhost' || host === '::1' || /^127\./.test(host)
}

// --------------------------------------------------------------- pacing

async function pace ({ total, rate, generator, transport, progress }) {
  const started = Date.now()
  let sent = 0
  let lastProgress = started
  while (sent < total) {
    const due = Math.min(total, Math.floor((Date.now() - started) * rate / 1000) + 1)
    for (; sent < due; sent++) transport.send(generator.next())
    await transport.idle()
    if (progress && Date.now() - lastProgress >= 1000) {
      lastProgress = Date.now()
      showProgress(sent, total, started)
    }
    if (sent < total) await sleep(TICK_MS)
  }
  await transport.idle()
  const seconds = (Date.now() - started) / 1000
  if (progress) showProgress(sent, total, started, true)
  return { packets: sent, errors: transport.stats.errors, lastError: transport.stats.lastError, seconds, rate: Math.round(sent / Math.max(seconds, 0.001)) }
}

function showProgress (sent, total, started, last) {
  const seconds = (Date.now() - started) / 1000
  const line = `sent ${sent}/${total} packets in ${seconds.toFixed(1)} s (${Math.round(sent / Math.max(seconds, 0.001))}/s)`
  process.stderr.write(process.stderr.isTTY ? `\r${line}${last ? '\n' : ''}` : `${line}\n`)
}

function sleep (ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

// --------------------------------------------------------------- output

function formatSummary (s) {
  const head = `sent ${s.packets} ${s.kind} packets over ${s.protocol} to ${s.target} in ${s.seconds.toFixed(1)} s (${s.rate}/s), ${s.streams} stream(s), ${s.errors} send error(s)${s.lastError ? ` (last: ${s.lastError})` : ''}\n`
  const lines = s.kind === 'rtcp'
    ? s.perStream.map((c) => `  stream ${c.stream}: ${c.packets} packets; ssrc ${c.from.ssrc} highest seq ${c.from.highestSeq} (${c.from.packets} reports), ssrc ${c.to.ssrc} highest seq ${c.to.highestSeq} (${c.to.packets} reports)`)
    : s.perStream.map((h) => `  stream ${h.stream}: host ${h.host}, ${h.packets} messages, highest seq ${h.highestSeq}`)
  return head + lines.join('\n') + '\n'
}

module.exports = { run, USAGE, Config }
