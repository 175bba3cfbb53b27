'use strict'
// The built-in NetFlow collector against nfdump's nfcapd, fed the same
// export in the same invocation. The export: --flows seeded TCP/UDP flows
// (IPv4 and IPv6, test/helpers/netflow-pcap.js) over 5 minutes, split over
// --exporters pcaps, each exported by softflowd (Debian) as NetFlow v5, v9
// and IPFIX (-a: times from the pcap; v5 carries the IPv4 flows only), the
// exact datagrams captured. Every flow has a source/destination pair of its
// own (makeFlows draws sources at random), so the collector's per-minute
// totals are about a document per flow: its worst case. A sender process
// replays one version's datagrams, each exporter's from its own loopback
// address (127.0.0.11, .12, ...: the collector keeps templates and sends
// each exporter to one worker by it), interleaved, at --rates datagrams/s
// for --seconds each (a step longer than the export plays it again from the
// start: flows repeat, their per-minute documents are updated rather than
// created, and the exporters' sequence numbers jump back), to:
//   collector  `collector run netflow -i 2` (a child process, the disk
//              buffer on as the CLI has it) into a fresh database of the
//              embedded Java MongoDB-compatible server (memory backend)
//              this benchmark starts, named to it by MONGODB_URI
//   nfcapd     `nfcapd -B 4000000 -b 127.0.0.1 -p PORT -w DIR`
// taking turns (the order swapped every step and round).
// Per run: flows sent (the export's records, counted by softflowd and by
// our decoder, which must agree), flows stored (collector: documents in
// `flows` once every datagram is accounted for and the buffer is empty;
// nfcapd: `nfdump -R DIR -I`, beside the count nfcapd prints at exit),
// loss = 1 − stored / sent, and
//   storedPerSecond = stored / (done − first send)
// where done is, for the collector, the time of its first stats snapshot
// (written every second) with everything accounted for and the buffer
// empty (a flow is done once its per-minute totals are stored too), and for
// nfcapd the moment its CPU time last moved (polled every 50 ms); lagMs is
// done − last send. CPU per flow sent, over the run: the receiving
// processes' (the collector's whole process tree, master and workers;
// nfcapd) as the sum of their threads' time on CPU (schedstat, ns), with
// utime + stime of /proc/<pid>/stat beside it in the JSON (10 ms ticks, of
// which nfcapd spends a few on a step); the database's apart, from its
// /proc/<pid>/stat (the JVM ends compiler threads). Peak RSS (VmHWM) from
// the run's start, the database's apart.
// A table, the collector/nfcapd ratios per step, then one JSON line.
// Usage: node benchmarks/netflow-e2e.js [--flows 50000] [--exporters 4]
//   [--versions 5,9,10] [--rates 20,100,200] [--seconds 10] [--rounds 1]
//   [--warmup 10] (seconds of an uncounted collector run at the first rate)
// Needs softflowd, nfcapd and nfdump on PATH (Debian packages).
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const dgram = require('node:dgram')
const { spawn, fork, execFileSync } = require('node:child_process')
const minimist = require('minimist')
const { MongoClient } = require('mongodb')
const { startJavaServer, DEFAULT_JVM_ARGS } = require('../lib/mongo/java-server')
const { accountedFor } = require('../lib/master/counters')
const { decodeNetflow, createMemoryTemplateStore } = require('../collectors/netflow/netflow-decoder')
const { makeFlows, writeFlowPcap } = require('../test/helpers/netflow-pcap')
const { missingPeers, softflowdExport } = require('../test/helpers/netflow-peers')
const { freePort } = require('../test/helpers/ports')
const { runCollector } = require('../test/fixtures/foreground-run')
const { readStats } = require('../app/stats-file')
const { workerStats } = require('../lib/shared/worker-stats')
const { PeakRss, peakRssOf, cpuSecondsOf, mib } = require('./peak-rss')

const args = minimist(process.argv.slice(2), {
  string: ['versions', 'rates', 'sender'],
  default: { flows: 50000, exporters: 4, versions: '5,9,10', rates: '20,100,200', seconds: 10, rounds: 1, warmup: 10 }
})
const WORKERS = 2
const EXPORTER_BASE = 11 // exporter e sends from 127.0.0.(11 + e)
const MAX_FLOWS_PER_EXPORTER = 64000 // makeFlows numbers source ports 1024 + i
const DRAIN_LIMIT_MS = 900000
const QUIET_MS = 10000 // the collector: nothing moved this long with the sender done, settled short
const NFCAPD_QUIET_MS = 1000
const VERSION_NAMES = { 5: 'v5', 9: 'v9', 10: 'IPFIX' }
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const round1 = (x) => Math.round(x * 10) / 10

// ---------------------------------------------------------------- the export

/**
 * softflowd's export of the flows, per version: the datagrams of every
 * exporter interleaved (one from each in turn), each with its exporter and
 * its flow records, written to a file the sender reads
 * ([exporter u8][length u16][datagram]...).
 */
async function buildExports (dir, versions) {
  const exporters = Number(args.exporters)
  const perExporter = Math.ceil(Number(args.flows) / exporters)
  const spanMs = 300000
  const start = Date.now() - spanMs - 60000
  const streams = Object.fromEntries(versions.map((v) => [v, []]))
  for (let e = 0; e < exporters; e++) {
    const pcap = path.join(dir, `exporter-${e}.pcap`)
    await writeFlowPcap(pcap, makeFlows({ seed: 37 + e, count: perExporter, start, spanMs }))
    for (const version of versions) streams[version].push(await exportOf(pcap, version, perExporter))
    fs.rmSync(pcap)
  }
  const exports = {}
  for (const version of versions) {
    const datagrams = interleave(streams[version])
    const file = path.join(dir, `export-v${version}.bin`)
    fs.writeFileSync(file, Buffer.concat(datagrams.flatMap(({ exporter, data }) => {
      const head = Buffer.alloc(3)
      head[0] = exporter
      head.writeUInt16BE(data.length, 1)
      return [head, data]
    })))
    const flows = datagrams.map((d) => d.flows)
    exports[version] = { file, flows, datagrams: flows.length, total: flows.reduce((a, b) => a + b, 0) }
  }
  return exports
}

// One exporter's datagrams of one version, each with its flow count (our
// decoder's, which must add up to what softflowd says it exported).
async function exportOf (pcap, version, perExporter) {
  const exported = await softflowdExport(pcap, ['-v', String(version), '-a', '-m', String(2 * perExporter)])
  if (exported.datagrams.length !== exported.packets) throw new Error(`softflowd v${version} sent ${exported.packets} datagrams, ${exported.datagrams.length} arrived`)
  const templates = createMemoryTemplateStore()
  const datagrams = exported.datagrams.map((data) => {
    const got = decodeNetflow(data, { templates, exporter: 'bench', now: Date.now() })
    if (!Array.isArray(got.records)) throw new Error(`softflowd v${version}: a datagram did not decode (${got.reason})`)
    return { data, flows: got.records.length }
  })
  const decoded = datagrams.reduce((sum, d) => sum + d.flows, 0)
  if (decoded !== exported.flows) throw new Error(`softflowd v${version} exported ${exported.flows} flows, its datagrams hold ${decoded}`)
  return datagrams
}

function interleave (perExporter) {
  const out = []
  const longest = Math.max(...perExporter.map((list) => list.length))
  for (let i = 0; i < longest; i++) {
    perExporter.forEach((list, exporter) => { if (i < list.length) out.push({ exporter, ...list[i] }) })
  }
  return out
}

/** Flows in the first `sent` datagrams of the export played in a loop. */
function flowsSent (exp, sent) {
  const whole = Math.floor(sent / exp.datagrams)
  let flows = whole * exp.total
  for (let i = 0; i < sent - whole * exp.datagrams; i++) flows += exp.flows[i]
  return flows
}

// ---------------------------------------------------------------- the sender

// A child process: reads the export, binds one socket per exporter address,
// says ready; on 'go' sends `total` datagrams (the export in a loop) at
// `rate`/s, paced on a 1 ms timer, and reports.
function runSender ([file, port, rate, total]) {
  const data = fs.readFileSync(file)
  const datagrams = []
  for (let at = 0; at < data.length; at += 3 + data.readUInt16BE(at + 1)) {
    datagrams.push({ exporter: data[at], data: data.subarray(at + 3, at + 3 + data.readUInt16BE(at + 1)) })
  }
  const exporters = Math.max(...datagrams.map((d) => d.exporter)) + 1
  const sockets = Array.from({ length: exporters }, () => dgram.createSocket('udp4'))
  const report = { sent: 0, errors: 0, firstSendAt: 0, lastSendAt: 0 }
  let completed = 0
  const onSent = (err) => {
    if (err) report.errors++
    if (++completed === Number(total)) {
      for (const socket of sockets) socket.close()
      const cpu = process.cpuUsage()
      process.send({ ...report, cpuMs: Math.round((cpu.user + cpu.system) / 1000) }, () => process.exit(0))
    }
  }
  const send = (t0) => {
    const due = Math.min(Number(total), Math.floor(Number(process.hrtime.bigint() - t0) / 1e9 * Number(rate)) + 1)
    for (; report.sent < due; report.sent++) {
      const { exporter, data } = datagrams[report.sent % datagrams.length]
      sockets[exporter].send(data, Number(port), '127.0.0.1', onSent)
    }
    if (report.sent < Number(total)) setTimeout(send, 1, t0)
    else report.lastSendAt = Date.now()
  }
  Promise.all(sockets.map((socket, e) => new Promise((resolve) => socket.bind(0, `127.0.0.${EXPORTER_BASE + e}`, resolve)))).then(() => {
    process.once('message', () => {
      report.firstSendAt = Date.now()
      send(process.hrtime.bigint())
    })
    process.send({ ready: true })
  })
}

function startSender (file, port, rate, total) {
  const child = fork(__filename, ['--sender', file, String(port), String(rate), String(total)])
  const ready = new Promise((resolve) => child.once('message', resolve))
  const report = ready.then(() => new Promise((resolve, reject) => {
    child.once('message', resolve)
    child.once('exit', (code) => code !== 0 && reject(new Error(`the sender exited with ${code}`)))
  }))
  return { ready, report, go: () => child.send('go') }
}

// ---------------------------------------------------------------- measuring

/** `root` and every process descended from it, from /proc. */
function processTree (root) {
  const children = new Map()
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (!children.has(ppid)) children.set(ppid, [])
      children.get(ppid).push(Number(entry))
    } catch {} // gone meanwhile
  }
  const tree = [root]
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) || []))
  return tree
}

// CPU seconds of `pids` two ways: utime + stime (/proc/<pid>/stat, in
// 10 ms ticks: nfcapd spends a few ticks on a whole step) and the time on
// CPU of each of their threads (/proc/<pid>/task/*/schedstat, ns; a thread
// that ends takes its time with it, none of these processes ends threads).
function cpuOf (pids) {
  let ns = 0
  for (const pid of pids) {
    try {
      for (const task of fs.readdirSync(`/proc/${pid}/task`)) ns += Number(fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0])
    } catch {} // gone meanwhile
  }
  return { ticks: pids.reduce((sum, pid) => sum + cpuSecondsOf(pid), 0), threads: ns / 1e9 }
}

// ---------------------------------------------------------------- receivers

// The collector as an operator runs it; `settle` waits until every datagram
// sent is accounted for with nothing in flight or on disk: done is the time
// of the first stats snapshot (written every second) that says so, since a
// flow's per-minute totals may land well after the flow.
async function collectorReceiver (mongo, client) {
  const dbName = `netflow_e2e_${Date.now().toString(36)}`
  const cleanups = []
  const run = await runCollector({ after: (fn) => cleanups.push(fn) }, 'netflow', { flags: ['-i', String(WORKERS), '--database', dbName, '--log-level', 'error'], env: { MONGODB_URI: mongo.uri } })
  const pids = processTree(run.pid)
  const flows = client.db(dbName).collection('flows')
  const rss = new PeakRss({ master: run.pid, db: mongo.server.pid }) // peaks from here on
  let workers = []
  return {
    port: run.port,
    pids,
    dbPid: mongo.server.pid,
    peaks () {
      rss.sampleWorkers(workers)
      const { nodeMiB, dbMiB } = rss.result()
      return { rssMiB: nodeMiB, dbRssMiB: dbMiB }
    },
    async settle (sender, datagrams) {
      let stored = 0
      let lastFlowAt = sender.startedAt
      let movedAt = Date.now()
      let last = ''
      for (;;) {
        const [snapshot, count] = await Promise.all([readStats(run.name, run.dir), flows.estimatedDocumentCount()])
        const s = snapshot && snapshot.stats
        const now = Date.now()
        if (s) workers = s.workers
        if (count !== stored) [stored, lastFlowAt] = [count, now]
        const state = s ? `${count}/${s.received}/${s.processed}/${s.dropped.total}/${s.buffered}` : ''
        if (state !== last) [last, movedAt] = [state, now]
        const drained = s && accountedFor(s) && !s.buffered && (!s.buffer || s.buffer.messages === 0)
        const settled = { doneAt: drained && snapshot.timestamp, lastFlowAt, stats: s }
        if (drained && sender.done && s.received + s.dropped.kernel >= datagrams) return settled
        if (drained && sender.done && now - movedAt > QUIET_MS) return { ...settled, short: true }
        if (now - sender.startedAt > DRAIN_LIMIT_MS) throw new Error(`the collector did not drain in ${DRAIN_LIMIT_MS} ms: ${JSON.stringify(s)}`)
        await sleep(100)
      }
    },
    async stop () {
      process.kill(run.pid, 'SIGINT')
      const exit = await run.exited
      if (exit.code !== 0) throw new Error(`the collector exited with ${exit.code}: ${exit.stderr.slice(-500)}`)
      const db = client.db(dbName)
      const stored = await flows.countDocuments({})
      const [minutes] = await db.collection('flow_minutes').aggregate([{ $group: { _id: null, flows: { $sum: '$flows' } } }]).toArray()
      await db.dropDatabase()
      for (const fn of cleanups.reverse()) await fn()
      return { stored, minuteFlows: minutes ? minutes.flows : 0 }
    }
  }
}

// nfcapd into a temporary directory; `settle` waits until its CPU time has
// not moved for NFCAPD_QUIET_MS after the last send.
async function nfcapdReceiver () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netflow-e2e-nfcapd-'))
  const port = await freePort()
  const child = spawn('nfcapd', ['-B', '4000000', '-b', '127.0.0.1', '-p', String(port), '-w', dir], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const collect = (d) => { output += d }
  child.stdout.on('data', collect)
  child.stderr.on('data', collect)
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const deadline = Date.now() + 10000
  while (!/Startup/.test(output)) {
    if (Date.now() > deadline) throw new Error(`nfcapd did not start: ${output}`)
    await sleep(20)
  }
  return {
    port,
    pids: [child.pid],
    dbPid: null,
    peaks: () => ({ rssMiB: mib(peakRssOf(child.pid)), dbRssMiB: null }),
    async settle (sender) {
      let cpu = cpuSecondsOf(child.pid)
      let movedAt = Date.now()
      for (;;) {
        await sleep(50)
        const now = Date.now()
        const next = cpuSecondsOf(child.pid)
        if (next !== cpu) [cpu, movedAt] = [next, now]
        if (sender.done && now - Math.max(movedAt, sender.done.lastSendAt) > NFCAPD_QUIET_MS) return { doneAt: Math.max(movedAt, sender.done.lastSendAt) }
        if (now - sender.startedAt > DRAIN_LIMIT_MS) throw new Error('nfcapd did not settle')
      }
    },
    async stop () {
      child.kill('SIGTERM')
      await exited
      // nfcapd's own line counts the file it had open at exit only; nfdump reads them all
      const said = /Flows: (\d+), Packets: \d+, Bytes: \d+, Sequence Errors: (\d+), Bad Packets: (\d+)/.exec(output)
      const info = execFileSync('nfdump', ['-R', dir, '-I'], { encoding: 'utf8' })
      fs.rmSync(dir, { recursive: true, force: true })
      const stored = /^Flows: (\d+)$/m.exec(info)
      if (!said || !stored) throw new Error(`nfcapd did not say what it stored: ${output}${info}`)
      return { stored: Number(stored[1]), nfcapdSaid: Number(said[1]), sequenceErrors: Number(said[2]), badPackets: Number(said[3]) }
    }
  }
}

// ---------------------------------------------------------------- one run

async function runOnce (receiverName, version, rate, seconds, exp, mongo, client) {
  const receiver = receiverName === 'collector' ? await collectorReceiver(mongo, client) : await nfcapdReceiver()
  const total = Math.round(rate * seconds)
  const sender = startSender(exp.file, receiver.port, rate, total)
  await sender.ready
  const progress = { startedAt: Date.now(), done: null }
  sender.report.then((r) => { progress.done = r }, () => {})
  const cpu0 = cpuOf(receiver.pids)
  const db0 = receiver.dbPid ? cpuSecondsOf(receiver.dbPid) : 0
  sender.go()
  const settled = await receiver.settle(progress, total)
  const cpu1 = cpuOf(receiver.pids)
  const dbCpu = receiver.dbPid ? cpuSecondsOf(receiver.dbPid) - db0 : null
  const peaks = receiver.peaks()
  const sent = await sender.report
  const result = await receiver.stop()
  const flows = flowsSent(exp, sent.sent)
  const elapsedMs = settled.doneAt - sent.firstSendAt
  const dropped = settled.stats ? Object.fromEntries(Object.entries(settled.stats.dropped).filter(([k, v]) => k !== 'total' && v > 0)) : undefined
  return {
    version: VERSION_NAMES[version],
    rate,
    receiver: receiverName,
    sentDatagrams: sent.sent,
    sendErrors: sent.errors,
    sendRate: Math.round(sent.sent * 1000 / Math.max(1, sent.lastSendAt - sent.firstSendAt)),
    offeredFlowsPerSecond: Math.round(rate * exp.total / exp.datagrams),
    sentFlows: flows,
    stored: result.stored,
    lossPct: Math.round((1 - result.stored / flows) * 10000) / 100,
    storedPerSecond: Math.round(result.stored * 1000 / elapsedMs),
    lagMs: settled.doneAt - sent.lastSendAt,
    cpuUsPerFlow: round1((cpu1.threads - cpu0.threads) * 1e6 / flows),
    cpuTicksUsPerFlow: round1((cpu1.ticks - cpu0.ticks) * 1e6 / flows),
    dbCpuUsPerFlow: dbCpu === null ? null : round1(dbCpu * 1e6 / flows),
    ...peaks,
    ...(dropped
      ? { dropped, settledShort: Boolean(settled.short), lastFlowLagMs: settled.lastFlowAt - sent.lastSendAt, minuteFlows: result.minuteFlows, ...workerFigures(settled.stats.workers, flows) }
      : { nfcapdSaid: result.nfcapdSaid, sequenceErrors: result.sequenceErrors, badPackets: result.badPackets }),
    senderCpuMs: sent.cpuMs
  }
}

// What each worker took (datagrams), and the database writes (operations)
// per flow and failed writes of all of them.
function workerFigures (workers, flows) {
  const sum = (field) => workers.reduce((total, w) => total + (workerStats(w.custom)[field] || 0), 0)
  return { workerDatagrams: workers.map((w) => w.processed), dbWritesPerFlow: Math.round(sum('dbWrites') / flows * 1000) / 1000, dbErrors: sum('dbErrors') }
}

// ---------------------------------------------------------------- report

const COLUMNS = [
  ['version', 'version'], ['rate', 'datagrams/s'], ['offeredFlowsPerSecond', 'flows/s offered'], ['receiver', 'receiver'],
  ['sentFlows', 'flows sent'], ['stored', 'stored'], ['storedPerSecond', 'stored flows/s'], ['lossPct', 'loss %'], ['lagMs', 'lag ms'],
  ['cpuUsPerFlow', 'CPU µs/flow'], ['dbCpuUsPerFlow', 'database CPU µs/flow'], ['rssMiB', 'peak RSS MiB'], ['dbRssMiB', 'database peak RSS MiB']
]

function printTable (rows, columns) {
  const cells = rows.map((r) => columns.map(([key]) => (r[key] === undefined || r[key] === null ? '-' : String(r[key]))))
  const widths = columns.map(([, title], i) => Math.max(title.length, ...cells.map((row) => row[i].length)))
  const line = (values) => values.map((v, i) => (typeof rows[0][columns[i][0]] === 'string' ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ')
  console.log(line(columns.map(([, title]) => title)))
  for (const row of cells) console.log(line(row))
}

function median (values) {
  const v = values.filter((x) => x !== null && x !== undefined).sort((a, b) => a - b)
  if (v.length === 0) return null
  return v.length % 2 ? v[v.length >> 1] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2
}

// Per version and rate: the collector's median over nfcapd's.
function ratios (runs) {
  const steps = [...new Set(runs.map((r) => `${r.version} ${r.rate}`))]
  return steps.map((step) => {
    const of = (receiver, key) => median(runs.filter((r) => `${r.version} ${r.rate}` === step && r.receiver === receiver).map((r) => r[key]))
    const ratio = (a, b) => (a === null || !b ? null : Math.round(a / b * 100) / 100)
    const collectorCpu = of('collector', 'cpuUsPerFlow')
    return {
      version: step.split(' ')[0],
      rate: Number(step.split(' ')[1]),
      storedPerSecond: ratio(of('collector', 'storedPerSecond'), of('nfcapd', 'storedPerSecond')),
      cpuPerFlow: ratio(collectorCpu, of('nfcapd', 'cpuUsPerFlow')),
      cpuWithDatabasePerFlow: ratio(collectorCpu + of('collector', 'dbCpuUsPerFlow'), of('nfcapd', 'cpuUsPerFlow')),
      rss: ratio(of('collector', 'rssMiB'), of('nfcapd', 'rssMiB'))
    }
  })
}

// ---------------------------------------------------------------- main

function checkArgs (versions, rates) {
  const problems = []
  if (!(Number(args.exporters) >= 1 && Number(args.exporters) <= 100)) problems.push(`--exporters ${args.exporters}: 1 to 100`)
  if (!(Number(args.flows) / Number(args.exporters) <= MAX_FLOWS_PER_EXPORTER)) problems.push(`--flows ${args.flows}: at most ${MAX_FLOWS_PER_EXPORTER} per exporter`)
  for (const v of versions) if (!VERSION_NAMES[v]) problems.push(`--versions: ${v} is not 5, 9 or 10`)
  for (const r of rates) if (!(r > 0)) problems.push(`--rates: ${r} is not a positive rate`)
  if (!(Number(args.seconds) > 0) || !(Number(args.rounds) >= 1)) problems.push('--seconds and --rounds must be positive')
  const missing = missingPeers()
  if (missing.length) problems.push(`needs ${missing.join(', ')} on PATH (Debian softflowd, nfdump)`)
  if (problems.length) throw new Error(problems.join('; '))
}

async function main () {
  const versions = String(args.versions).split(',').map(Number)
  const rates = String(args.rates).split(',').map(Number)
  checkArgs(versions, rates)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netflow-e2e-'))
  // The heap fixed from the start, as benchmarks/syslog-e2e.js has it: grown
  // on demand it made the database's CPU per message fall run after run.
  const server = await startJavaServer({ port: 0, jvmArgs: [...DEFAULT_JVM_ARGS, '-Xms2g'] })
  const mongo = { uri: server.uri, server }
  const client = await new MongoClient(server.uri).connect()
  const runs = []
  try {
    console.error(`netflow-e2e: exporting ${args.flows} flows from ${args.exporters} exporters with softflowd…`)
    const exports = await buildExports(dir, versions)
    for (const v of versions) console.error(`netflow-e2e: ${VERSION_NAMES[v]}: ${exports[v].datagrams} datagrams, ${exports[v].total} flows`)
    if (Number(args.warmup) > 0) {
      console.error(`netflow-e2e: warm-up, the collector ${args.warmup} s at ${rates[0]}/s (not counted)…`)
      await runOnce('collector', versions[0], rates[0], Number(args.warmup), exports[versions[0]], mongo, client)
    }
    let step = 0
    for (let round = 1; round <= Number(args.rounds); round++) {
      for (const version of versions) {
        for (const rate of rates) {
          const order = step++ % 2 ? ['nfcapd', 'collector'] : ['collector', 'nfcapd']
          for (const receiver of order) {
            console.error(`netflow-e2e: round ${round} ${VERSION_NAMES[version]} ${rate} datagrams/s × ${args.seconds} s → ${receiver}…`)
            runs.push({ round, ...await runOnce(receiver, version, rate, Number(args.seconds), exports[version], mongo, client) })
          }
        }
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
    await client.close()
    await server.stop()
  }
  report(runs, versions)
}

function report (runs, versions) {
  const nfdump = execFileSync('nfcapd', ['-V'], { encoding: 'utf8' }).trim()
  console.log(`NetFlow collector (${WORKERS} workers, embedded Java database) against nfcapd (${nfdump}), same export from ${args.exporters} exporters, ${args.seconds} s a step`)
  printTable(runs, [['round', 'round'], ...COLUMNS])
  const steps = ratios(runs)
  console.log('\ncollector / nfcapd (medians)')
  printTable(steps, [['version', 'version'], ['rate', 'datagrams/s'], ['storedPerSecond', 'stored flows/s'], ['cpuPerFlow', 'CPU/flow'], ['cpuWithDatabasePerFlow', 'CPU+database/flow'], ['rss', 'peak RSS']])
  for (const r of runs.filter((x) => x.dropped && Object.keys(x.dropped).length)) console.log(`round ${r.round} ${r.version} ${r.rate}/s collector dropped by reason: ${JSON.stringify(r.dropped)}`)
  const off = runs.filter((r) => r.receiver === 'collector' && r.minuteFlows !== r.stored)
  if (off.length) console.log(`per-minute totals short of the flows stored in: ${off.map((r) => `${r.version} ${r.rate}/s (${r.minuteFlows} of ${r.stored})`).join(', ')}`)
  console.log(JSON.stringify({
    benchmark: 'netflow-e2e',
    node: process.version,
    nfcapd: nfdump,
    args: { flows: Number(args.flows), exporters: Number(args.exporters), versions, rates: String(args.rates).split(',').map(Number), seconds: Number(args.seconds), rounds: Number(args.rounds), warmup: Number(args.warmup) },
    workers: WORKERS,
    runs,
    ratios: steps
  }))
}

if (args.sender !== undefined) {
  runSender([args.sender, ...args._])
} else {
  main().catch((err) => { console.error(err); process.exit(1) })
}
