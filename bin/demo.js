#!/usr/bin/env node
'use strict'

// The main job (`npm start`): the RTCP collector with 2 workers on an
// embedded (or configured) MongoDB, fed by a built-in traffic source of
// simulated calls, with a one-line live status until Ctrl-C; then it drains,
// checks what was stored against what was sent, and prints a summary.
//
// The demo is private: it starts its own embedded server (in memory, on a
// free port) unless MONGODB_URI names one, writes to a database of its own
// (collector_demo_<pid>_<time>), and removes only what it created: that
// database on a server it was given, the server it started.
const { workerStats } = require('../lib/shared/worker-stats')
const dgram = require('node:dgram')
const { commandConfig } = require('../app/commands/common')
const pino = require('pino')
const { MongoClient } = require('mongodb')
const RtcpCollector = require('../collectors/rtcp').Collector
const { startEmbeddedServer, serverName } = require('../lib/mongo/embedded-server')
const { redactUri } = require('../lib/mongo/redact-uri')
const { prettyStream } = require('../app/pretty-log')
const { relayNpmShellSignals } = require('../app/npm-shell-signals')
const RtcpSimulator = require('../collectors/rtcp/simulator')
const { callAnalytics } = require('../collectors/rtcp/quality-analytics')

const DATABASE = `collector_demo_${process.pid}_${Date.now()}`
const Config = commandConfig('collector demo [--streams 200] [--rate 400] [--duration 30s] [--port 5005] [-i 2]', {
  streams: { type: 'integer', min: 1, max: 100000, default: 200, description: 'simulated calls (SSRC pairs)' },
  rate: { type: 'number', min: 1, default: 400, description: 'RTCP reports per second, all calls together' },
  duration: { type: 'duration', default: 0, validate: (ms) => (ms > 0 && ms < 1000 ? 'must be 0 (until Ctrl-C) or at least 1s (a bare number is milliseconds)' : undefined), description: 'how long to send (30s, 2m); 0: until Ctrl-C' },
  port: { alias: 'p', type: 'port', default: 5005, description: 'UDP port of the collector (taken: any free one)' },
  instances: { alias: 'i', type: 'integer', min: 1, max: 64, default: 2, description: 'workers' },
  logLevel: { type: 'string', choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace'], default: 'warn', description: 'log level (warnings only by default: the status line stays one line)' }
})
let args

async function main () {
  args = Config.parse(process.argv.slice(2))
  if (args.help) return Config.printHelp()
  // Readable on a terminal, JSON otherwise; warnings only, so that the
  // status line stays one line.
  const logger = pino({ level: args.logLevel }, process.stderr.isTTY ? prettyStream(process.stderr) : pino.destination(2))
  const { uri, server } = await demoDatabase(logger)
  const client = await new MongoClient(uri).connect()
  const collector = await startCollector(logger, uri)
  const port = collector.address().port
  process.stdout.write(`RTCP collector on udp://127.0.0.1:${port} with ${args.instances} workers, database ${DATABASE}; ` +
    `sending ${args.streams} simulated calls at ${args.rate} reports/s. Ctrl-C to stop.\n`)
  const traffic = startTraffic(port)
  const status = startStatus(collector, client)
  await untilStopped()
  traffic.stop()
  status.stop()
  process.stdout.write('\ndraining…\n')
  await collector.stop()
  await printSummary(collector, client, traffic)
  if (!server) await client.db(DATABASE).dropDatabase() // ours, on a server we were given
  await client.close()
  if (server) await server.stop()
}

// MONGODB_URI when set (the user chose that server); else a server of our own.
async function demoDatabase (logger) {
  if (process.env.MONGODB_URI) {
    process.stdout.write(`using MONGODB_URI (${redactUri(process.env.MONGODB_URI)}), database ${DATABASE} (removed at the end)\n`)
    return { uri: process.env.MONGODB_URI, server: null }
  }
  // Which server it found, a fetch's progress and why each option before
  // it was passed over are said at info, whatever the level of the rest.
  const server = await startEmbeddedServer({ port: 0, logger: logger.child({}, { level: 'info' }), skipped: ['MONGODB_URI (not set)'] })
  process.stdout.write(`started a private embedded database at ${server.uri} with ${serverName(server)}, in memory, stopped at the end\n`)
  return { uri: server.uri, server }
}

// Port 5005 if free, else any port: the demo should run next to a real collector.
// The demo owns the database (it reads it after the collector stopped).
async function startCollector (logger, mongoUri) {
  const options = { host: '127.0.0.1', instances: args.instances, retry: false, logger, workerOptions: { mongoUri, database: DATABASE, streamTimeout: 60000 } }
  try {
    const collector = new RtcpCollector({ ...options, port: args.port })
    await collector.start()
    return collector
  } catch (err) {
    if (err.code !== 'ERR_LISTEN' || err.cause.code !== 'EADDRINUSE') throw err
    const collector = new RtcpCollector({ ...options, port: 0 })
    await collector.start()
    return collector
  }
}

function startTraffic (port) {
  const simulator = new RtcpSimulator({ streams: args.streams })
  const socket = dgram.createSocket('udp4')
  const perTick = Math.max(1, Math.round(args.rate / 10))
  const timer = setInterval(() => {
    for (let i = 0; i < perTick; i++) socket.send(simulator.next(), port, '127.0.0.1')
  }, 100)
  return {
    simulator,
    stop: () => {
      clearInterval(timer)
      socket.close()
    }
  }
}

function startStatus (collector, client) {
  let last = { processed: 0, dbWrites: 0, at: Date.now() }
  const timer = setInterval(async () => {
    const stats = await collector.stats()
    const now = { processed: stats.processed, dbWrites: stats.workers.reduce((sum, w) => sum + (workerStats(w.custom).dbWrites || 0), 0), at: Date.now() }
    const seconds = (now.at - last.at) / 1000
    const open = await client.db(DATABASE).collection('streams').countDocuments({ active: true }).catch(() => '?')
    const drops = stats.dropped.total + sumCustom(stats, 'dropped')
    process.stdout.write(`\r${rate(now.processed - last.processed, seconds)} packets/s | ${open} streams open | ` +
      `${rate(now.dbWrites - last.dbWrites, seconds)} DB writes/s | ${drops} dropped   `)
    last = now
  }, 1000)
  return { stop: () => clearInterval(timer) }
}

function rate (delta, seconds) {
  return Math.round(delta / seconds).toLocaleString('en')
}

function sumCustom (stats, field) {
  return stats.workers.reduce((sum, w) => sum + ((w.custom && w.custom[field]) || 0), 0)
}

// Run as `npm start`, a signal sent to npm alone is passed on by the shell
// npm puts between (app/npm-shell-signals.js): raised here, once ours are set.
function untilStopped () {
  let relay
  return new Promise((resolve) => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
    relay = relayNpmShellSignals()
    if (args.duration > 0) setTimeout(resolve, args.duration).unref()
  }).finally(() => relay.stop()) // a second signal, then, acts as it would without npm
}

// Compare the database with what the simulator sent: one stream per call,
// each side's highest sequence number and report count exact.
async function printSummary (collector, client, traffic) {
  const s = collector.summary()
  const docs = await client.db(DATABASE).collection('streams').find({ openKey: { $exists: true } }).toArray()
  const bySide = new Map()
  for (const d of docs) for (const side of [d.from, d.to]) if (side.packets) bySide.set(side.ID, side)
  const expected = traffic.simulator.expected()
  const exact = expected.filter((e) => {
    const side = bySide.get(e.fromID)
    return side && side.highestPacketNum === e.highestPacketNum && side.packets === e.reports
  }).length
  const lines = [
    `sent ${traffic.simulator.sent} reports; received ${s.received}, processed ${s.processed}, failed ${s.failed}, dropped ${s.dropped.total}`,
    `streams stored: ${docs.length} (expected ${args.streams}); reporting sides exact: ${exact}/${expected.length}`,
    mosDistribution(docs),
    `uptime ${(s.uptime / 1000).toFixed(1)} s, worker respawns ${s.restarts.workers}`
  ]
  process.stdout.write(lines.join('\n') + '\n')
  process.exitCode = docs.length === args.streams && exact === expected.length && s.dropped.total === 0 ? 0 : 1
}

// The calls by the band of their verdict (the call-level MOS of the worse
// end, as `collector calls` ranks them), and the lowest and median verdict.
function mosDistribution (docs) {
  const bands = { good: 0, fair: 0, poor: 0, unknown: 0 }
  const mos = []
  for (const doc of docs) {
    const { mos: verdict, band } = callAnalytics(doc)
    bands[band]++
    if (verdict !== null) mos.push(verdict)
  }
  mos.sort((a, b) => a - b)
  const mid = mos.length >> 1
  const median = mos.length === 0 ? null : mos.length % 2 ? mos[mid] : (mos[mid - 1] + mos[mid]) / 2
  const figures = mos.length ? `; MOS min ${mos[0].toFixed(2)}, median ${median.toFixed(2)}` : ''
  return `calls by MOS: good ${bands.good} (≥ 4.0), fair ${bands.fair} (3.6–4.0), poor ${bands.poor} (< 3.6), unknown ${bands.unknown}${figures}`
}

main().catch((err) => {
  if (err.code === 'ERR_INVALID_CONFIG') {
    process.stderr.write(`collector demo: ${err.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`demo failed: ${err.message}\n`)
  process.exit(1)
})
