'use strict'
// Delivery under faults, checked message by message in the database: the
// ready collectors (2 workers, defaults otherwise) on the embedded
// MongoDB-compatible server, fed by a sender in another process, each
// scenario beside a run without faults in the same invocation:
//   syslog          numbered RFC 5424 lines over UDP, no fault
//   syslog-kill     the same, a worker SIGKILLed every --kill-every ms
//   syslog-stall    the same, the database SIGSTOPped for --stall ms from a
//                   third of the run (UDP past maxInFlight is dropped and
//                   counted as queueFull; nothing may vanish uncounted)
//   rtcp            RTCP reports of --calls calls, no fault
//   rtcp-kill       the same, a worker SIGKILLed every --kill-every ms
// Printed per scenario: sent, received, stored (distinct), duplicated,
// unaccounted (sent − stored − dropped: must be 0), dropped by reason,
// workers killed, and throughput (stored per second from the first send to
// the last acknowledgement). A table, then one JSON line.
// Usage: node benchmarks/chaos.js [--seconds 60] [--rate 10000]
//   [--kill-every 2000] [--stall 10000] [--calls 1000] [--only syslog,rtcp-kill,...]
// MONGODB_URI uses that server instead (the stall scenario is then skipped).
const path = require('node:path')
const dgram = require('node:dgram')
const { fork } = require('node:child_process')
const minimist = require('minimist')
const { MongoClient } = require('mongodb')
const syslog = require('../collectors/syslog')
const rtcp = require('../collectors/rtcp')
const RtcpSimulator = require('../collectors/rtcp/simulator')
const { startJavaServer } = require('../lib/mongo/java-server')
const { accountedFor } = require('../lib/master/counters')
const { killLoop } = require('../test/helpers/kill-loop')

const args = minimist(process.argv.slice(2), {
  string: ['only', 'sender'],
  default: { seconds: 60, rate: 10000, 'kill-every': 2000, stall: 10000, calls: 200, only: 'syslog,syslog-kill,syslog-stall,rtcp,rtcp-kill' }
})
const DRAIN_LIMIT_MS = 180000
const SOURCES = 64
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const SCENARIOS = {
  syslog: { collector: syslog, traffic: 'syslog' },
  'syslog-kill': { collector: syslog, traffic: 'syslog', kill: true },
  'syslog-stall': { collector: syslog, traffic: 'syslog', stall: true },
  rtcp: { collector: rtcp, traffic: 'rtcp' },
  'rtcp-kill': { collector: rtcp, traffic: 'rtcp', kill: true }
}

function syslogLine (i) {
  return `<14>1 2026-11-23T10:00:00.000Z host${i % 7} app - - - msg ${i}`
}

// The sender process: `total` datagrams at `rate`/s in 10 ms ticks, then
// reports what it sent (and, for RTCP, what the database must hold).
async function runSender ([traffic, port, rate, total]) {
  port = Number(port)
  rate = Number(rate)
  total = Number(total)
  // RTCP endpoints each have their own address and port, and the collector
  // hashes flows on them: each call side sends from one of SOURCES sockets,
  // so the flows spread over the workers as they would from real phones.
  const simulator = traffic === 'rtcp' ? new RtcpSimulator({ streams: Number(args.calls) }) : null
  const sockets = Array.from({ length: simulator ? SOURCES : 1 }, () => dgram.createSocket('udp4'))
  const make = simulator ? () => simulator.next() : syslogLine
  const socketFor = simulator ? () => sockets[simulator.cursor % SOURCES] : () => sockets[0]
  const perTick = Math.max(1, Math.round(rate / 100))
  const started = Date.now()
  for (let i = 0; i < total;) {
    const tickEnd = started + Math.ceil((i + 1) / perTick) * 10
    for (let k = 0; k < perTick && i < total; k++, i++) {
      const socket = socketFor()
      await new Promise((resolve, reject) => socket.send(make(i), port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
    }
    const wait = tickEnd - Date.now()
    if (wait > 0) await sleep(wait)
  }
  const ms = Date.now() - started
  for (const socket of sockets) socket.close()
  process.send({ sent: total, ms, expected: simulator ? simulator.expected() : null }, () => process.exit(0))
}

function send (traffic, port, total) {
  const child = fork(__filename, ['--sender', traffic, String(port), String(args.rate), String(total), '--calls', String(args.calls)])
  return new Promise((resolve, reject) => {
    child.once('message', resolve)
    child.once('exit', (code) => code !== 0 && reject(new Error(`the sender exited with ${code}`)))
  })
}

async function database () {
  if (process.env.MONGODB_URI) return { uri: process.env.MONGODB_URI, server: null }
  const server = await startJavaServer({ port: 0 })
  return { uri: server.uri, server }
}

async function runScenario (name, scenario, mongo, client) {
  const dbName = `chaos_${name.replace(/-/g, '_')}_${Date.now().toString(36)}`
  const config = new scenario.collector.Config(['--port', '0', '-i', '2', '--database', dbName, '--log-level', 'error']).getConfig()
  const collector = new scenario.collector.Collector({ ...config, workerOptions: { mongoUri: mongo.uri } })
  await collector.start()
  const total = Math.round(args.rate * args.seconds)
  const started = Date.now()
  const kills = scenario.kill ? killLoop(collector, args['kill-every']) : null
  const stall = scenario.stall ? stallDatabase(mongo.server, args.seconds * 1000 / 3, args.stall) : null
  const trace = process.env.BENCH_DEBUG ? setInterval(() => traceLine(collector, started), 500) : null
  const sender = await send(scenario.traffic, collector.address().port, total)
  const killed = kills ? await kills.stop() : 0
  if (stall) await stall
  const deadline = Date.now() + DRAIN_LIMIT_MS
  while (Date.now() < deadline) {
    const s = collector.summary()
    if (s.received + s.dropped.kernel === sender.sent && accountedFor(s)) break
    await sleep(100)
  }
  const settledMs = Date.now() - started
  clearInterval(trace)
  await collector.stop()
  const s = collector.summary()
  const db = client.db(dbName)
  const check = scenario.traffic === 'syslog' ? await checkSyslog(db) : await checkRtcp(db, sender.expected)
  await db.dropDatabase()
  const dropped = Object.fromEntries(Object.entries(s.dropped).filter(([k, v]) => k !== 'total' && v > 0))
  return {
    scenario: name,
    sent: sender.sent,
    sendRate: Math.round(sender.sent * 1000 / sender.ms),
    received: s.received,
    processed: s.processed,
    stored: check.stored,
    duplicated: check.duplicated,
    unaccounted: sender.sent - check.stored - s.dropped.total,
    dropped,
    droppedTotal: s.dropped.total,
    killed,
    respawns: s.restarts.workers,
    ...(check.wrongSides === undefined ? {} : { wrongSides: check.wrongSides }),
    countersOff: check.countersOff,
    storedPerSecond: Math.round(check.stored * 1000 / settledMs),
    settledMs
  }
}

// BENCH_DEBUG=1: the collector's state twice a second, on stderr.
async function traceLine (collector, started) {
  const s = await collector.stats()
  const workers = s.workers.map((w) => `${w.slot}:${w.state[0]} inFlight ${w.inFlight} processed ${w.processed}`).join(' | ')
  console.error(`${((Date.now() - started) / 1000).toFixed(1)} s  received ${s.received} processed ${s.processed} dropped ${s.dropped.total}  ${workers}`)
}

function stallDatabase (server, afterMs, forMs) {
  return (async () => {
    await sleep(afterMs)
    server.pause()
    await sleep(forMs)
    server.resume()
  })()
}

// Every line stored once: distinct message numbers, and the per-minute
// counters (incremented by the same workers) agree with them.
async function checkSyslog (db) {
  const docs = await db.collection('syslog').find({}, { projection: { message: 1 } }).toArray()
  const distinct = new Set(docs.map((d) => d.message))
  const counted = (await db.collection('counters').find().toArray()).reduce((sum, c) => sum + c.daily, 0)
  return { stored: distinct.size, duplicated: docs.length - distinct.size, countersOff: counted - distinct.size }
}

// One stream per call, each side's highestPacketNum and packet count as
// sent; stored = the reports the streams count.
async function checkRtcp (db, expected) {
  const docs = await db.collection('streams').find().toArray()
  const pairs = new Set(docs.map((d) => [d.from.ID, d.to.ID].sort().join('|')))
  const bySide = new Map()
  for (const d of docs) for (const side of [d.from, d.to]) bySide.set(side.ID, side)
  const wrongSides = expected.filter((e) => {
    const side = bySide.get(e.fromID)
    return !side || side.highestPacketNum !== e.highestPacketNum || side.packets !== e.reports
  }).length
  const stored = docs.reduce((sum, d) => sum + d.metadata.packets, 0)
  const counted = (await db.collection('counters').find().toArray()).reduce((sum, c) => sum + c.daily, 0)
  return { stored, duplicated: docs.length - pairs.size, wrongSides, countersOff: counted - stored }
}

function printTable (rows) {
  const columns = ['scenario', 'sent', 'sendRate', 'received', 'stored', 'duplicated', 'unaccounted', 'droppedTotal', 'killed', 'wrongSides', 'countersOff', 'storedPerSecond']
  const cells = rows.map((r) => columns.map((c) => (r[c] === undefined ? '-' : String(r[c]))))
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)))
  const line = (values) => values.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ')
  console.log(line(columns))
  for (const row of cells) console.log(line(row))
  for (const r of rows) if (r.droppedTotal > 0) console.log(`${r.scenario} dropped by reason: ${JSON.stringify(r.dropped)}`)
}

async function main () {
  const names = args.only.split(',')
  for (const name of names) if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name}; known: ${Object.keys(SCENARIOS).join(', ')}`)
  const mongo = await database()
  const client = await new MongoClient(mongo.uri).connect()
  const rows = []
  try {
    for (const name of names) {
      if (SCENARIOS[name].stall && !mongo.server) {
        console.log(`${name}: skipped (MONGODB_URI is set; only the embedded server can be stopped here)`)
        continue
      }
      console.error(`chaos: ${name} (${args.rate}/s for ${args.seconds} s)…`)
      rows.push(await runScenario(name, SCENARIOS[name], mongo, client))
    }
  } finally {
    await client.close()
    if (mongo.server) await mongo.server.stop()
  }
  printTable(rows)
  console.log(JSON.stringify({ benchmark: 'chaos', rate: args.rate, seconds: args.seconds, killEveryMs: args['kill-every'], stallMs: args.stall, results: rows }))
  const broken = rows.filter((r) => r.duplicated !== 0 || r.unaccounted !== 0 || r.wrongSides > 0 || r.countersOff !== 0)
  if (broken.length > 0) {
    console.log(`NOT EXACT: ${broken.map((r) => r.scenario).join(', ')}`)
    process.exitCode = 1
  }
}

if (args.sender !== undefined) {
  runSender([args.sender, ...args._]).catch((err) => { console.error(err); process.exit(1) })
} else {
  main().catch((err) => { console.error(err); process.exit(1) })
}
