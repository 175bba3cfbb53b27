'use strict'
// Delivery under faults, checked message by message in the database: the
// ready collectors (2 workers, defaults otherwise) on the embedded
// MongoDB-compatible server, fed by a sender in another process, each
// scenario beside a run without faults in the same invocation:
//   syslog          numbered RFC 5424 lines over UDP, no fault
//   syslog-kill     the same, a worker SIGKILLed every --kill-every ms
//   syslog-stall    the same, the database SIGSTOPped for --stall ms from a
//                   third of the run, the disk buffer off (UDP past
//                   maxInFlight is dropped and counted as queueFull; nothing
//                   may vanish uncounted)
//   syslog-stall-buffer  the same stall with the disk buffer on
//   syslog-stall-60 the database SIGSTOPped for --long-stall ms (60 s) from a
//                   third of the run, the disk buffer on, default bounds:
//                   nothing may be dropped
//   syslog-run      `collector run syslog` in a child process as an operator
//                   runs it (buffer on), no fault: the master's memory
//                   without this harness in its process
//   syslog-master-kill  `collector run syslog` in a child process, buffer on;
//                   the database SIGSTOPped from a third of the run; once the
//                   master received everything it is SIGKILLed (its pid only),
//                   the database resumed and the collector started again on
//                   the same buffer directory: every line stored, once
//   rtcp            RTCP reports of --calls calls, no fault
//   rtcp-kill       the same, a worker SIGKILLed every --kill-every ms
//   rtcp-master-kill  as syslog-master-kill, with `collector run rtcp`: every
//                   stream side's packet count as sent, once (on the
//                   embedded server a first delivery's upsert is not
//                   guarded, and one the stalled server applies after the
//                   replay can still count twice: docs/storage.md)
// The disk buffer is on unless a scenario says off (the CLI's default for
// collectors that store), each run in a temporary --buffer-dir.
// Printed per scenario: sent, received, stored (distinct), duplicated,
// unaccounted (sent − stored − dropped: must be 0), dropped by reason,
// workers killed, throughput (stored per second from the first send to
// the last acknowledgement), the buffer's peak bytes, and the peak RSS
// (the kernel's VmHWM, reset at each scenario's start) of every process:
// the master (in the in-process scenarios this process, harness included:
// rssStartMiB is the harness before the collector started), each worker
// slot (the largest of its successive processes) and the database server
// (a Java process, not the collector's). Beside them, measured in the same
// run: three idle bare Node processes and three that load the collector's
// modules (the master's and the worker's). A table, then one JSON line.
// Usage: node benchmarks/chaos.js [--seconds 60] [--rate 10000]
//   [--kill-every 2000] [--stall 10000] [--long-stall 60000] [--calls 1000]
//   [--only syslog,rtcp-kill,...] (default: syslog, syslog-kill,
//   syslog-stall, rtcp, rtcp-kill)
// MONGODB_URI uses that server instead (the stall scenarios are then skipped).
const fs = require('node:fs')
const os = require('node:os')
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
const { runCollector } = require('../test/fixtures/foreground-run')
const { PeakRss, idleBaselines, mib } = require('./peak-rss')

const args = minimist(process.argv.slice(2), {
  string: ['only', 'sender'],
  default: { seconds: 60, rate: 10000, 'kill-every': 2000, stall: 10000, 'long-stall': 60000, calls: 200, only: 'syslog,syslog-kill,syslog-stall,rtcp,rtcp-kill' }
})
const DRAIN_LIMIT_MS = 180000
const SOURCES = 64
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const SCENARIOS = {
  syslog: { collector: syslog, traffic: 'syslog' },
  'syslog-run': { collector: syslog, traffic: 'syslog', foreground: true },
  'syslog-kill': { collector: syslog, traffic: 'syslog', kill: true },
  'syslog-stall': { collector: syslog, traffic: 'syslog', stall: 'stall', buffer: false },
  'syslog-stall-buffer': { collector: syslog, traffic: 'syslog', stall: 'stall' },
  'syslog-stall-60': { collector: syslog, traffic: 'syslog', stall: 'long-stall', noDrops: true },
  'syslog-master-kill': { collector: syslog, traffic: 'syslog', stall: 'until-killed', masterKill: true, noDrops: true },
  rtcp: { collector: rtcp, traffic: 'rtcp' },
  'rtcp-kill': { collector: rtcp, traffic: 'rtcp', kill: true },
  'rtcp-master-kill': { collector: rtcp, traffic: 'rtcp', stall: 'until-killed', masterKill: true, noDrops: true }
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

const dbNameOf = (name) => `chaos_${name.replace(/-/g, '_')}_${Date.now().toString(36)}`

async function runScenario (name, scenario, mongo, client) {
  const dbName = dbNameOf(name)
  const bufferDir = scenario.buffer === false ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'chaos-buffer-'))
  const bufferFlags = bufferDir ? ['--buffer-dir', bufferDir] : ['--no-buffer']
  const config = new scenario.collector.Config(['--port', '0', '-i', '2', '--database', dbName, '--log-level', 'error', ...bufferFlags]).getConfig()
  const collector = new scenario.collector.Collector({ ...config, workerOptions: { mongoUri: mongo.uri } })
  await collector.start()
  const total = Math.round(args.rate * args.seconds)
  const started = Date.now()
  // The master runs in this process: its RSS is ours (what earlier
  // scenarios left in the heap included: rssStartMiB).
  const rssStart = process.memoryUsage().rss
  const rss = new PeakRss({ master: process.pid, db: mongo.server && mongo.server.pid })
  const peaks = { bufferBytes: 0 }
  const sampler = setInterval(() => {
    rss.sampleWorkers(collector.pool.snapshot().workers)
    const buffer = collector.summary().buffer
    if (buffer) peaks.bufferBytes = Math.max(peaks.bufferBytes, buffer.bytes)
  }, 100)
  const kills = scenario.kill ? killLoop(collector, args['kill-every']) : null
  const stall = scenario.stall ? stallDatabase(mongo.server, args.seconds * 1000 / 3, args[scenario.stall]) : null
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
  clearInterval(sampler)
  rss.sampleWorkers(collector.pool.snapshot().workers)
  const memory = rss.result()
  await collector.stop()
  if (bufferDir) fs.rmSync(bufferDir, { recursive: true, force: true })
  const s = collector.summary()
  const db = client.db(dbName)
  const check = scenario.traffic === 'syslog' ? await checkSyslog(db, sender.sent) : await checkRtcp(db, sender.expected)
  await db.dropDatabase()
  return {
    ...deliveryRow(name, { buffer: bufferDir ? 'on' : 'off', sender, s, check, killed, settledMs }),
    respawns: s.restarts.workers,
    ...(check.wrongSides === undefined ? {} : { wrongSides: check.wrongSides }),
    ...memory,
    masterInHarness: true,
    rssStartMiB: mib(rssStart),
    bufferPeakBytes: bufferDir ? peaks.bufferBytes : undefined,
    bufferPeakMiB: bufferDir ? mib(peaks.bufferBytes) : undefined
  }
}

// One scenario's delivery figures: what was sent, received, stored once,
// and what is unaccounted (sent − stored − dropped: must be 0).
function deliveryRow (name, { buffer, sender, s, check, killed, settledMs }) {
  return {
    scenario: name,
    buffer,
    sent: sender.sent,
    sendRate: Math.round(sender.sent * 1000 / sender.ms),
    received: s.received,
    processed: s.processed,
    stored: check.stored,
    duplicated: check.duplicated,
    unaccounted: sender.sent - check.stored - s.dropped.total,
    dropped: Object.fromEntries(Object.entries(s.dropped).filter(([k, v]) => k !== 'total' && v > 0)),
    droppedTotal: s.dropped.total,
    killed,
    countersOff: check.countersOff,
    storedPerSecond: Math.round(check.stored * 1000 / settledMs),
    settledMs
  }
}

// syslog-run: `collector run syslog` as an operator starts it (a child
// process, buffer on), no fault: the master's peak without this harness.
async function runForeground (name, scenario, mongo, client) {
  const dbName = dbNameOf(name)
  const bufferDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chaos-buffer-'))
  const cleanups = []
  const t = { after: (fn) => cleanups.push(fn) } // what runCollector expects of a test
  try {
    const run = await runCollector(t, 'syslog', { flags: ['-i', '2', '--database', dbName, '--log-level', 'error', '--buffer-dir', bufferDir], env: { MONGODB_URI: mongo.uri } })
    const rss = new PeakRss({ master: run.pid, db: mongo.server && mongo.server.pid })
    const peaks = { bufferBytes: 0 }
    let last = null
    const sample = async () => {
      const s = await run.stats()
      if (s) rss.sampleWorkers(s.workers)
      if (s && s.buffer) peaks.bufferBytes = Math.max(peaks.bufferBytes, s.buffer.bytes)
      if (s) last = s
    }
    const sampler = setInterval(sample, 100)
    const total = Math.round(args.rate * args.seconds)
    const started = Date.now()
    const sender = await send(scenario.traffic, run.port, total)
    const s = await waitUntil(async () => { await sample(); return last && last.received + last.dropped.kernel === sender.sent && accountedFor(last) && last }, 'every line to be stored')
    const settledMs = Date.now() - started
    clearInterval(sampler)
    await sample()
    process.kill(run.pid, 'SIGINT')
    const exit = await run.exited
    if (exit.code !== 0) throw new Error(`the collector exited with ${exit.code}: ${exit.stderr.slice(-500)}`)
    const db = client.db(dbName)
    const check = await checkSyslog(db, sender.sent)
    await db.dropDatabase()
    return {
      ...deliveryRow(name, { buffer: 'on', sender, s, check, killed: 0, settledMs }),
      ...rss.result(),
      bufferPeakBytes: peaks.bufferBytes,
      bufferPeakMiB: mib(peaks.bufferBytes)
    }
  } finally {
    for (const fn of cleanups.reverse()) await fn()
    fs.rmSync(bufferDir, { recursive: true, force: true })
  }
}

/*
 * syslog-master-kill, rtcp-master-kill: `collector run syslog` (or rtcp) as
 * an operator starts it (a child process, buffer on), the database stopped from a third of the run;
 * once the master has received every line, it alone is SIGKILLed (its
 * workers, left alone, flush what they can and exit; what they held is in
 * the buffer too), the database resumed and the collector started again on the same buffer
 * directory and name, which replays what the killed one left.
 */
async function runMasterKill (name, scenario, mongo, client) {
  const dbName = dbNameOf(name)
  const bufferDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chaos-buffer-'))
  const cleanups = []
  const t = { after: (fn) => cleanups.push(fn) } // what runCollector expects of a test
  const runName = `chaos${process.pid}${name.replace(/-/g, '')}` // one name for both runs: the RTCP packet counter is named after it
  const start = () => runCollector(t, scenario.traffic, { name: runName, flags: ['-i', '2', '--database', dbName, '--log-level', 'error', '--buffer-dir', bufferDir], env: { MONGODB_URI: mongo.uri } })
  try {
    const first = await start()
    const total = Math.round(args.rate * args.seconds)
    const started = Date.now()
    const peaks = { bufferBytes: 0 }
    const rss = new PeakRss({ master: first.pid, db: mongo.server.pid })
    const sample = async (run) => {
      rss.sampleMaster(run.pid)
      const s = await run.stats()
      if (s) rss.sampleWorkers(s.workers)
      if (s && s.buffer) peaks.bufferBytes = Math.max(peaks.bufferBytes, s.buffer.bytes)
      return s
    }
    const stalled = sleep(args.seconds * 1000 / 3).then(() => mongo.server.pause())
    const sender = await send(scenario.traffic, first.port, total)
    await stalled
    // Killed only once every message it did not store is on disk: a batch
    // is journaled when it is formed, and a master killed before that loses
    // the batch being filled (the buffer's contract, not the writers').
    const before = await waitUntil(async () => {
      const s = await sample(first)
      return s && s.received + s.dropped.kernel === sender.sent && s.processed + s.inFlight + s.buffered === s.received && s.buffer.messages === s.inFlight + s.buffered && s
    }, 'the master to receive every message and journal what it did not store')
    peaks.bufferBytes = Math.max(peaks.bufferBytes, segmentBytes(bufferDir))
    const masterGone = new Promise((resolve) => first.child.once('exit', resolve))
    process.kill(first.pid, 'SIGKILL') // the master only
    await masterGone // not first.exited: its workers keep the output pipes open
    const stalledMs = Date.now() - started - args.seconds * 1000 / 3
    mongo.server.resume()
    const second = await start()
    const after = await waitUntil(async () => { const s = await sample(second); return s && s.buffer.messages === 0 && s.inFlight === 0 && s.buffered === 0 && s }, 'the replay to be stored')
    await waitUntil(() => !groupAlive(first.pid), 'the killed master\'s workers to finish')
    process.kill(second.pid, 'SIGINT')
    const exit = await second.exited
    if (exit.code !== 0) throw new Error(`the second run exited with ${exit.code}: ${exit.stderr.slice(-500)}`)
    const settledMs = Date.now() - started
    const db = client.db(dbName)
    const check = scenario.traffic === 'syslog' ? await checkSyslog(db, sender.sent) : await checkRtcp(db, sender.expected)
    await db.dropDatabase()
    const droppedBy = {}
    for (const s of [before, after]) for (const [k, v] of Object.entries(s.dropped)) if (k !== 'total' && v > 0) droppedBy[k] = (droppedBy[k] || 0) + v
    const droppedTotal = before.dropped.total + after.dropped.total
    return {
      scenario: name,
      buffer: 'on',
      sent: sender.sent,
      sendRate: Math.round(sender.sent * 1000 / sender.ms),
      received: before.received,
      replayed: after.replayed,
      processed: after.processed,
      stored: check.stored,
      duplicated: check.duplicated,
      unaccounted: sender.sent - check.stored - droppedTotal,
      dropped: droppedBy,
      droppedTotal,
      killed: 'master',
      ...(check.wrongSides === undefined ? {} : { wrongSides: check.wrongSides }),
      countersOff: check.countersOff,
      storedPerSecond: Math.round(check.stored * 1000 / settledMs),
      settledMs,
      stalledMs,
      ...rss.result(),
      bufferPeakBytes: peaks.bufferBytes,
      bufferPeakMiB: mib(peaks.bufferBytes)
    }
  } finally {
    for (const fn of cleanups.reverse()) await fn()
    fs.rmSync(bufferDir, { recursive: true, force: true })
  }
}

async function waitUntil (check, what) {
  const deadline = Date.now() + DRAIN_LIMIT_MS
  while (Date.now() < deadline) {
    const value = await check()
    if (process.env.BENCH_DEBUG) console.error(`${new Date().toISOString()} waiting for ${what}`)
    if (value) return value
    await sleep(250)
  }
  throw new Error(`timed out waiting for ${what}`)
}

function segmentBytes (dir) {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.ccj')).reduce((sum, f) => sum + fs.statSync(path.join(dir, f)).size, 0)
}

function groupAlive (pid) {
  try {
    process.kill(-pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
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
// counters (incremented by the same workers) agree with them. Streamed into
// a bitmap of the numbers sent: this process hosts the next scenario's
// master, whose peak RSS is measured.
async function checkSyslog (db, sent) {
  const seen = new Uint8Array(sent)
  let docs = 0
  let stored = 0
  for await (const d of db.collection('syslog').find({}, { projection: { _id: 0, message: 1 } })) {
    docs++
    const i = Number(d.message.slice(d.message.lastIndexOf(' ') + 1))
    if (seen[i] === 0) stored++
    seen[i] = 1
  }
  const counted = (await db.collection('counters').find().toArray()).reduce((sum, c) => sum + c.daily, 0)
  return { stored, duplicated: docs - stored, countersOff: counted - stored }
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

function printTable (rows, baseline) {
  const columns = ['scenario', 'buffer', 'sent', 'sendRate', 'received', 'stored', 'duplicated', 'unaccounted', 'droppedTotal', 'killed', 'wrongSides', 'countersOff', 'storedPerSecond', 'bufferPeakMiB', 'masterMiB', 'workersMiB', 'nodeMiB', 'dbMiB', 'masterCpuS', 'workersCpuS']
  const cell = (r, c) => r[c] === undefined ? '-' : Array.isArray(r[c]) ? r[c].join('+') : `${r[c]}${r.masterInHarness && (c === 'masterMiB' || c === 'nodeMiB') ? '*' : ''}`
  const cells = rows.map((r) => columns.map((c) => cell(r, c)))
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)))
  const line = (values) => values.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ')
  console.log(line(columns))
  for (const row of cells) console.log(line(row))
  for (const r of rows) if (r.droppedTotal > 0) console.log(`${r.scenario} dropped by reason: ${JSON.stringify(r.dropped)}`)
  console.log(`peak RSS in MiB; nodeMiB = master + workers. Three idle Node processes, same run: bare ${baseline.bareMiB}, loading the collector's modules ${baseline.loadedMiB}`)
  if (rows.some((r) => r.masterInHarness)) console.log('* the master runs in this process: the figure includes this harness (its client, what earlier scenarios left)')
  for (const r of rows) {
    if (!r.masterInHarness) console.log(`${r.scenario}: master + workers = ${(r.nodeMiB / baseline.bareMiB).toFixed(2)}× three bare, ${(r.nodeMiB / baseline.loadedMiB).toFixed(2)}× three loaded`)
  }
}

async function main () {
  const names = args.only.split(',')
  for (const name of names) if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name}; known: ${Object.keys(SCENARIOS).join(', ')}`)
  const mongo = await database()
  const client = await new MongoClient(mongo.uri).connect()
  const rows = []
  const baseline = await idleBaselines()
  try {
    for (const name of names) {
      if (SCENARIOS[name].stall && !mongo.server) {
        console.log(`${name}: skipped (MONGODB_URI is set; only the embedded server can be stopped here)`)
        continue
      }
      console.error(`chaos: ${name} (${args.rate}/s for ${args.seconds} s)…`)
      const run = SCENARIOS[name].masterKill ? runMasterKill : SCENARIOS[name].foreground ? runForeground : runScenario
      rows.push(await run(name, SCENARIOS[name], mongo, client))
    }
  } finally {
    await client.close()
    if (mongo.server) await mongo.server.stop()
  }
  printTable(rows, baseline)
  console.log(JSON.stringify({ benchmark: 'chaos', rate: args.rate, seconds: args.seconds, idleBaselineMiB: baseline, killEveryMs: args['kill-every'], stallMs: args.stall, longStallMs: args['long-stall'], results: rows }))
  const broken = rows.filter((r) => r.duplicated !== 0 || r.unaccounted !== 0 || r.wrongSides > 0 || r.countersOff !== 0 || (SCENARIOS[r.scenario].noDrops && r.droppedTotal > 0))
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
