'use strict'
// End-to-end rate of the syslog collector into MongoDB with today's parser
// against the frozen previous one, in one invocation. Each run: the syslog
// collector (UDP, 2 workers, defaults otherwise) on a fresh database of the
// embedded Java MongoDB-compatible server, fed --messages datagrams at
// --rate/s by a sender in another process (realistic RFC 5424 lines, most
// with structured data, some with a BOM or UTF-8 text, and about a fifth
// RFC 3164; the same seeded corpus for every run). The two sides differ in
// the worker module only:
//   new       collectors/syslog/index.js (collectors/syslog/parser.js)
//   baseline  benchmarks/baseline/syslog-worker-baseline.js (the same
//             definition, its decode on benchmarks/baseline/syslog-parser.js)
// They alternate for --rounds rounds, the order swapped every round
// (baseline,new / new,baseline / ...), after one uncounted warm-up run
// (--warmup messages; it warms the JVM, which lives through the invocation).
//
// Per run: sent, received, stored (distinct sequence numbers found in the
// database), duplicated, dropped by reason (collector.summary().dropped,
// including kernel), unaccounted = sent − stored − dropped (must be 0), and
//   storedPerSecond = stored / (last acknowledgement − first send)
// where the last acknowledgement is the moment (polled every 5 ms) the
// collector's summary shows every datagram sent received (or dropped by the
// kernel) and every one accounted for (processed, which for this worker means
// acknowledged after its insert, failed or dropped). lagMs is that moment
// minus the last send: about a flush interval when the collector keeps up,
// more when it queues. Also per run: the workers' and the database's CPU time
// per message (from /proc: where the time goes), the master's CPU time over
// the window, and the mean BSON size of a stored document.
// A table per run, the median of each side, then one JSON line.
// Usage: node benchmarks/syslog-e2e.js [--messages 200000] [--rate 40000]
//   [--rounds 2] [--warmup 100000]
// MONGODB_URI uses that server instead of the embedded one.
const fs = require('node:fs')
const path = require('node:path')
const dgram = require('node:dgram')
const { fork } = require('node:child_process')
const minimist = require('minimist')
const { MongoClient, BSON } = require('mongodb')
const syslog = require('../collectors/syslog')
const { writeCorpus, readCorpus } = require('./syslog-corpus')
const { startJavaServer } = require('../lib/mongo/java-server')
const { accountedFor } = require('../lib/master/counters')

const args = minimist(process.argv.slice(2), {
  string: ['sender'],
  default: { messages: 200000, rate: 40000, rounds: 2, warmup: 100000 }
})
const WORKERS = 2
const POLL_MS = 5
const QUIET_MS = 3000 // nothing moved for this long once the sender is done: settled short
const DRAIN_LIMIT_MS = 120000
const CLK_TCK = 100
// The embedded server's defaults (serial GC, small stacks) with its heap
// fixed from the start: grown on demand, the heap (and the JIT) made the
// database's CPU per message fall run after run, by half over four runs.
const JVM_ARGS = ['-XX:+UseSerialGC', '-Xss512k', `-Xms${process.env.E2E_JAVA_HEAP || '2g'}`]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const VARIANTS = {
  baseline: path.join(__dirname, 'baseline', 'syslog-worker-baseline.js'),
  new: path.join(__dirname, '..', 'collectors', 'syslog', 'index.js')
}

// ---------------------------------------------------------------- corpus

// ---------------------------------------------------------------- sender

// Reads the corpus, says ready, and on 'go' sends it to the port at `rate`
// per second, paced on a 1 ms timer (sleeping between bursts, so as not to
// hold a core), over one connected socket. Reports when every send completed.
function runSender ([port, rate, total, file]) {
  port = Number(port)
  rate = Number(rate)
  total = Number(total)
  const corpus = readCorpus(String(file), total)
  const bytes = corpus.reduce((sum, b) => sum + b.length, 0)
  const socket = dgram.createSocket('udp4')
  let sent = 0
  let done = 0
  let errors = 0
  let firstSendAt = 0
  let lastSendAt = 0
  let t0 = 0
  const finish = () => {
    socket.close()
    const cpu = process.cpuUsage()
    process.send({ sent, errors, bytes, firstSendAt, lastSendAt, cpuMs: Math.round((cpu.user + cpu.system) / 1000) }, () => process.exit(0))
  }
  const completed = (err) => {
    if (err) errors++
    if (++done === total) finish()
  }
  socket.on('error', () => { errors++ })
  const tick = () => {
    const due = Math.min(total, Math.floor(Number(process.hrtime.bigint() - t0) / 1e6 * rate / 1000) + 1)
    while (sent < due) socket.send(corpus[sent++], completed)
    if (sent === total) lastSendAt = Date.now()
    else setTimeout(tick, 1)
  }
  socket.connect(port, '127.0.0.1', () => {
    process.once('message', () => {
      firstSendAt = Date.now()
      t0 = process.hrtime.bigint()
      tick()
    })
    process.send({ ready: true, bytes })
  })
}

function startSender (port, total, corpusFile) {
  const child = fork(__filename, ['--sender', String(port), String(args.rate), String(total), corpusFile])
  let onReady
  const ready = new Promise((resolve) => { onReady = resolve })
  const report = new Promise((resolve, reject) => {
    child.on('message', (m) => (m.ready ? onReady(m) : resolve(m)))
    child.once('exit', (code) => code !== 0 && reject(new Error(`the sender exited with ${code}`)))
  })
  return { ready, report, go: () => child.send('go') }
}

// ---------------------------------------------------------------- one run

/** utime + stime of a process, ms (null once it is gone). */
function procCpuMs (pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 1000 / CLK_TCK
  } catch {
    return null
  }
}

function cpuSnapshot (collector, mongo) {
  const workers = collector.pool.current.filter(Boolean).map((h) => procCpuMs(h.pid))
  const master = process.cpuUsage()
  return {
    workers: workers.reduce((a, b) => a + (b || 0), 0),
    master: (master.user + master.system) / 1000,
    db: mongo.server ? procCpuMs(mongo.server.pid) : null
  }
}

async function runOnce (variant, total, mongo, client, corpusFile) {
  const dbName = `e2e_${variant}_${Date.now().toString(36)}`
  const argv = ['--port', '0', '-i', String(WORKERS), '--database', dbName, '--log-level', 'error', '--workername', VARIANTS[variant]]
  const config = new syslog.Config(argv).getConfig()
  const collector = new syslog.Collector({ ...config, workerOptions: { mongoUri: mongo.uri } })
  await collector.start()
  const sender = startSender(collector.address().port, total, corpusFile)
  await sender.ready
  const workerPids = collector.pool.current.filter(Boolean).map((h) => h.pid)
  const cpu0 = cpuSnapshot(collector, mongo)
  let report = null
  sender.report.then((r) => { report = r }, () => {})
  sender.go()
  const started = Date.now()
  let settledAt = 0
  let short = false
  let last = ''
  let lastChangeAt = started
  for (;;) {
    const s = collector.summary()
    const now = Date.now()
    if (s.received + s.dropped.kernel === total && accountedFor(s)) {
      settledAt = now
      break
    }
    const state = `${s.received}/${s.processed}/${s.failed}/${s.dropped.total}`
    if (state !== last) {
      last = state
      lastChangeAt = now
    }
    // Datagrams the collector never saw and the kernel did not count: settle
    // at the last movement once nothing has moved for QUIET_MS.
    if (report && accountedFor(s) && now - lastChangeAt > QUIET_MS) {
      settledAt = lastChangeAt
      short = true
      break
    }
    if (now - started > DRAIN_LIMIT_MS) throw new Error(`${variant}: not settled after ${DRAIN_LIMIT_MS} ms: ${JSON.stringify(s)}`)
    await sleep(POLL_MS)
  }
  const cpu1 = cpuSnapshot(collector, mongo)
  const sent = await sender.report
  const respawned = collector.pool.current.filter(Boolean).some((h, i) => h.pid !== workerPids[i])
  await collector.stop()
  const s = collector.summary()
  const db = client.db(dbName)
  const check = await checkStored(db, total)
  await db.dropDatabase()
  const elapsedMs = settledAt - sent.firstSendAt
  const dropped = Object.fromEntries(Object.entries(s.dropped).filter(([k, v]) => k !== 'total' && v > 0))
  const workerCpuMs = respawned ? null : cpu1.workers - cpu0.workers
  return {
    variant,
    sent: sent.sent,
    sendErrors: sent.errors,
    sendRate: Math.round(sent.sent * 1000 / Math.max(1, sent.lastSendAt - sent.firstSendAt)),
    received: s.received,
    processed: s.processed,
    stored: check.stored,
    duplicated: check.duplicated,
    droppedTotal: s.dropped.total,
    dropped,
    unaccounted: sent.sent - check.stored - s.dropped.total,
    formats: check.formats,
    docBytes: check.docBytes,
    settledShort: short,
    elapsedMs,
    lagMs: settledAt - sent.lastSendAt,
    storedPerSecond: Math.round(check.stored * 1000 / elapsedMs),
    workerCpuUsPerMsg: workerCpuMs === null ? null : Math.round(workerCpuMs * 1000 / Math.max(1, s.processed) * 10) / 10,
    masterCpuMs: Math.round(cpu1.master - cpu0.master),
    dbCpuMs: cpu0.db === null || cpu1.db === null ? null : Math.round(cpu1.db - cpu0.db),
    dbCpuUsPerMsg: cpu0.db === null || cpu1.db === null ? null : Math.round((cpu1.db - cpu0.db) * 1000 / Math.max(1, s.processed) * 10) / 10,
    senderCpuMs: sent.cpuMs
  }
}

// Distinct `seq=` numbers in the stored documents (MSG of a parsed record,
// the whole text of a raw one), how many of each format were stored, and the
// mean BSON size of a stored document (over the first 2000).
async function checkStored (db, total) {
  const docs = await db.collection('syslog').find({}, { projection: { _id: 0, message: 1, format: 1 } }).toArray()
  const seen = new Uint8Array(total)
  let stored = 0
  let duplicated = 0
  const formats = {}
  for (const d of docs) {
    formats[d.format] = (formats[d.format] || 0) + 1
    const m = /seq=(\d+)/.exec(d.message || '')
    if (!m || Number(m[1]) >= total) continue
    const i = Number(m[1])
    if (seen[i]) duplicated++
    else {
      seen[i] = 1
      stored++
    }
  }
  const sample = await db.collection('syslog').find({}).limit(2000).toArray()
  const docBytes = sample.length === 0 ? null : Math.round(sample.reduce((sum, d) => sum + BSON.calculateObjectSize(d), 0) / sample.length)
  return { stored, duplicated, formats, docBytes }
}

// ---------------------------------------------------------------- report

const sign = (x) => (x === null ? '-' : `${x >= 0 ? '+' : ''}${x}`)

function median (values) {
  const v = values.filter((x) => x !== null && x !== undefined).sort((a, b) => a - b)
  if (v.length === 0) return null
  const mid = v.length >> 1
  return Math.round((v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2) * 10) / 10
}

const COLUMNS = ['round', 'variant', 'sent', 'sendRate', 'received', 'stored', 'duplicated', 'droppedTotal', 'unaccounted', 'elapsedMs', 'lagMs', 'storedPerSecond', 'workerCpuUsPerMsg', 'dbCpuUsPerMsg', 'masterCpuMs', 'docBytes']

function printTable (rows) {
  const cells = rows.map((r) => COLUMNS.map((c) => (r[c] === undefined || r[c] === null ? '-' : String(r[c]))))
  const widths = COLUMNS.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)))
  const line = (values) => values.map((v, i) => (i < 2 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ')
  console.log(line(COLUMNS))
  for (const row of cells) console.log(line(row))
}

function summarize (runs) {
  const sides = {}
  for (const variant of Object.keys(VARIANTS)) {
    const mine = runs.filter((r) => r.variant === variant)
    const rates = mine.map((r) => r.storedPerSecond)
    sides[variant] = {
      round: 'median',
      variant,
      sent: median(mine.map((r) => r.sent)),
      sendRate: median(mine.map((r) => r.sendRate)),
      received: median(mine.map((r) => r.received)),
      stored: median(mine.map((r) => r.stored)),
      duplicated: median(mine.map((r) => r.duplicated)),
      droppedTotal: median(mine.map((r) => r.droppedTotal)),
      unaccounted: median(mine.map((r) => r.unaccounted)),
      elapsedMs: median(mine.map((r) => r.elapsedMs)),
      lagMs: median(mine.map((r) => r.lagMs)),
      storedPerSecond: Math.round(median(rates)),
      workerCpuUsPerMsg: median(mine.map((r) => r.workerCpuUsPerMsg)),
      masterCpuMs: median(mine.map((r) => r.masterCpuMs)),
      dbCpuMs: median(mine.map((r) => r.dbCpuMs)),
      dbCpuUsPerMsg: median(mine.map((r) => r.dbCpuUsPerMsg)),
      docBytes: median(mine.map((r) => r.docBytes)),
      min: Math.min(...rates),
      max: Math.max(...rates)
    }
  }
  const a = sides.baseline
  const b = sides.new
  const pct = (x, y) => (x === null || y === null ? null : Math.round((y / x - 1) * 1000) / 10)
  // Noise: the spread of a side's own repeats. "Beyond noise" only when the
  // two sides' ranges do not overlap.
  const spread = Math.max((a.max - a.min) / a.storedPerSecond, (b.max - b.min) / b.storedPerSecond)
  let verdict = 'no difference beyond noise (the ranges of the two sides overlap)'
  if (b.max < a.min) verdict = 'NEW IS LOWER beyond noise (every new run below every baseline run)'
  else if (b.min > a.max) verdict = 'new is higher beyond noise (every new run above every baseline run)'
  return {
    sides,
    storedPerSecondDeltaPct: pct(a.storedPerSecond, b.storedPerSecond),
    workerCpuPerMsgDeltaPct: pct(a.workerCpuUsPerMsg, b.workerCpuUsPerMsg),
    dbCpuPerMsgDeltaPct: pct(a.dbCpuUsPerMsg, b.dbCpuUsPerMsg),
    docBytesDeltaPct: pct(a.docBytes, b.docBytes),
    noiseSpreadPct: Math.round(spread * 1000) / 10,
    verdict
  }
}

// ---------------------------------------------------------------- main

async function database () {
  if (process.env.MONGODB_URI) return { uri: process.env.MONGODB_URI, server: null }
  const server = await startJavaServer({ port: 0, jvmArgs: JVM_ARGS })
  return { uri: server.uri, server }
}

async function main () {
  const total = Number(args.messages)
  const rounds = Number(args.rounds)
  const warmup = Number(args.warmup)
  if (!(total > 0) || !(Number(args.rate) > 0) || !(rounds > 0)) throw new Error('--messages, --rate and --rounds must be positive')
  const mongo = await database()
  const client = await new MongoClient(mongo.uri).connect()
  const corpusFile = writeCorpus(Math.max(total, warmup), Date.now(), Number(args.rate))
  const runs = []
  try {
    if (warmup > 0) {
      console.error(`syslog-e2e: warm-up, ${warmup} messages (not counted)…`)
      await runOnce('new', warmup, mongo, client, corpusFile)
    }
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 ? ['baseline', 'new'] : ['new', 'baseline']
      for (const variant of order) {
        console.error(`syslog-e2e: round ${round} ${variant}, ${total} messages at ${args.rate}/s…`)
        const row = await runOnce(variant, total, mongo, client, corpusFile)
        runs.push({ round, ...row })
      }
    }
  } finally {
    fs.rmSync(corpusFile, { force: true })
    await client.close()
    if (mongo.server) await mongo.server.stop()
  }
  const summary = summarize(runs)
  console.log(`syslog collector end to end, ${WORKERS} workers, ${total} messages per run at ${args.rate}/s offered, ${rounds} round(s)`)
  printTable([...runs, summary.sides.baseline, summary.sides.new])
  for (const r of runs) {
    if (r.droppedTotal > 0) console.log(`round ${r.round} ${r.variant} dropped by reason: ${JSON.stringify(r.dropped)}`)
  }
  for (const r of runs) console.log(`round ${r.round} ${r.variant} stored by format: ${JSON.stringify(r.formats)}`)
  const lossy = runs.filter((r) => r.unaccounted !== 0 || r.duplicated !== 0)
  console.log(lossy.length === 0
    ? 'loss-free check: sent − stored − dropped = 0 and no duplicates in every run'
    : `loss-free check FAILED in: ${lossy.map((r) => `round ${r.round} ${r.variant} (unaccounted ${r.unaccounted}, duplicated ${r.duplicated})`).join(', ')}`)
  const saturated = runs.filter((r) => r.droppedTotal > 0 || r.lagMs > 1000)
  if (saturated.length > 0) console.log(`saturated (drops, or acknowledgements > 1 s behind the last send): ${saturated.map((r) => `round ${r.round} ${r.variant}`).join(', ')}`)
  console.log(`stored/s median: baseline ${summary.sides.baseline.storedPerSecond} (${summary.sides.baseline.min}-${summary.sides.baseline.max}), new ${summary.sides.new.storedPerSecond} (${summary.sides.new.min}-${summary.sides.new.max}): ${summary.storedPerSecondDeltaPct >= 0 ? '+' : ''}${summary.storedPerSecondDeltaPct}%; ` +
    `worker CPU per message ${sign(summary.workerCpuPerMsgDeltaPct)}%, database CPU per message ${sign(summary.dbCpuPerMsgDeltaPct)}%, stored document size ${sign(summary.docBytesDeltaPct)}%`)
  console.log(`verdict: ${summary.verdict}`)
  console.log(JSON.stringify({
    benchmark: 'syslog-e2e',
    messages: total,
    rate: Number(args.rate),
    rounds,
    workers: WORKERS,
    warmup,
    runs,
    median: { baseline: summary.sides.baseline, new: summary.sides.new },
    storedPerSecondDeltaPct: summary.storedPerSecondDeltaPct,
    workerCpuPerMsgDeltaPct: summary.workerCpuPerMsgDeltaPct,
    dbCpuPerMsgDeltaPct: summary.dbCpuPerMsgDeltaPct,
    docBytesDeltaPct: summary.docBytesDeltaPct,
    noiseSpreadPct: summary.noiseSpreadPct,
    verdict: summary.verdict,
    lossFree: lossy.length === 0
  }))
}

if (args.sender !== undefined) {
  runSender([args.sender, ...args._])
} else {
  main().catch((err) => { console.error(err); process.exit(1) })
}
