#!/usr/bin/env node
'use strict'

// The main job (`npm start`): the RTCP collector with 2 workers on an
// embedded (or configured) MongoDB, fed by a built-in traffic source of
// simulated calls, with a one-line live status until Ctrl-C; then it drains,
// checks what was stored against what was sent, and prints a summary.
const dgram = require('node:dgram')
const minimist = require('minimist')
const pino = require('pino')
const { MongoClient } = require('mongodb')
const RtcpCollector = require('../collectors/rtcp/rtcp-collector')
const { resolveMongo } = require('../lib/mongo/resolve-mongo')
const RtcpSimulator = require('../collectors/rtcp/simulator')

const DATABASE = 'collector_demo'
const args = minimist(process.argv.slice(2), {
  default: { streams: 200, rate: 400, port: 5005, instances: 2, duration: 0, 'log-level': 'info' }
})

async function main () {
  const logger = pino({ level: args['log-level'] }, pino.destination(2))
  const { uri, server } = await resolveMongo({ logger })
  const client = await new MongoClient(uri).connect()
  await client.db(DATABASE).dropDatabase()
  const collector = await startCollector(logger, process.env.MONGODB_URI ? undefined : uri)
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
  await client.close()
  if (server) await server.stop()
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
    if (err.code !== 'EADDRINUSE') throw err
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
    const now = { processed: stats.processed, dbWrites: sumCustom(stats, 'dbWrites'), at: Date.now() }
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

function untilStopped () {
  return new Promise((resolve) => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
    if (args.duration > 0) setTimeout(resolve, args.duration * 1000).unref()
  })
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
    `uptime ${(s.uptime / 1000).toFixed(1)} s, worker respawns ${s.restarts.workers}`
  ]
  process.stdout.write(lines.join('\n') + '\n')
  process.exitCode = docs.length === args.streams && exact === expected.length && s.dropped.total === 0 ? 0 : 1
}

main().catch((err) => {
  process.stderr.write(`demo failed: ${err.message}\n`)
  process.exit(1)
})
