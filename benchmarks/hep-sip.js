'use strict'
// HEP SIP stored per second and CPU per packet: this tree's hep collector
// (every SIP message stored in sip_messages, the call in calls, copies
// detected) against another tree's (--base DIR: e.g. a checkout of the
// commit before, which stored the call only), in one invocation, the
// variants alternating over --rounds rounds after a warm-up round of each
// (not counted). The packets: --calls calls of 5 SIP messages each
// (benchmarks/hep-sip-corpus.js: INVITE with SDP, 180, 200 with SDP, ACK,
// BYE, as SIPp sends them, HEP3 encoded by hep-js), sent from another
// process at --rate packets/s to 2 workers on one embedded
// MongoDB-compatible server.
//   storedPerSec   processed / (last acknowledgement − first send)
//   lossFree       every packet processed, none dropped
//   masterUs, workersUs, serverUs  CPU per packet of the master (this
//                  process), of its workers and of the database server
// Prints a line per run, the medians and the ratios (this tree / base),
// then one JSON line.
// With --backends instead of --base, this tree against itself on the two
// backends of the embedded Java server: in memory (--db-memory, what the
// other benchmarks use) and on disk (its H2 file, what a collector without
// MONGODB_URI or --db-memory gets), a server each.
// Usage: node benchmarks/hep-sip.js --base /path/to/other/tree [--calls 4000]
//   [--rate 5000] [--rounds 3]
//        node benchmarks/hep-sip.js --backends [--calls 4000] [--rate 5000] [--rounds 3]
const os = require('node:os')
const path = require('node:path')
const fs = require('node:fs')
const { fork } = require('node:child_process')
const { sendPaced } = require('./paced-sender')
const { PER_CALL, hepSipPackets } = require('./hep-sip-corpus')
const minimist = require('minimist')
const { startJavaServer } = require('../lib/mongo/java-server')
const { accountedFor } = require('../lib/master/counters')

const args = minimist(process.argv.slice(2), { default: { calls: 4000, rate: 5000, rounds: 3 } })
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

if (require.main === module) {
  if (process.argv[2] === '--sender') sender()
  else main().catch((err) => { console.error(err); process.exit(1) })
}

function sender () {
  process.once('message', ({ port, calls, rate }) => {
    sendPaced(hepSipPackets(calls, Math.floor(Date.now() / 1000)), port, rate)
  })
}

// utime + stime of a process in µs (Linux /proc), 0 when it is gone.
function cpuOf (pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 1e6 / 100
  } catch {
    return 0
  }
}

async function runOnce (variant, root, { uri, pid: serverPid }, round) {
  const hep = require(path.join(root, 'collectors', 'hep'))
  const bufferDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-sip-bench-'))
  const config = new hep.Config(['--port', '0', '-i', '2', '--database', `bench_sip_${variant}_${round}_${Date.now()}`, '--buffer-dir', bufferDir]).getConfig()
  const collector = new hep.Collector({ ...config, workerOptions: { mongoUri: uri } })
  await collector.start()
  const sent = args.calls * PER_CALL
  const child = fork(__filename, ['--sender'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const messages = []
  child.on('message', (m) => messages.push(m))
  child.send({ port: collector.address().port, calls: args.calls, rate: args.rate })
  while (!messages.some((m) => m.ready)) await sleep(20)
  const pids = (await collector.stats()).workers.map((w) => w.pid)
  const workersBefore = pids.reduce((n, pid) => n + cpuOf(pid), 0)
  const serverBefore = cpuOf(serverPid)
  const cpuBefore = process.cpuUsage()
  while (!messages.some((m) => m.done)) await sleep(50)
  const deadline = Date.now() + 180000
  let s = collector.summary()
  while (Date.now() < deadline && !(s.received + s.dropped.kernel >= sent && accountedFor(s))) {
    await sleep(20)
    s = collector.summary()
  }
  const finished = Date.now()
  const cpu = process.cpuUsage(cpuBefore)
  const workersCpu = pids.reduce((n, pid) => n + cpuOf(pid), 0) - workersBefore
  const serverCpu = cpuOf(serverPid) - serverBefore
  const started = messages.find((m) => m.done).started
  await collector.stop()
  fs.rmSync(bufferDir, { recursive: true, force: true })
  s = collector.summary()
  return {
    variant,
    round,
    sent,
    processed: s.processed,
    dropped: s.dropped.total,
    lossFree: s.processed === sent,
    storedPerSec: Math.round(s.processed / ((finished - started) / 1000)),
    masterUs: Math.round((cpu.user + cpu.system) / sent * 100) / 100,
    workersUs: Math.round(workersCpu / sent * 100) / 100,
    serverUs: Math.round(serverCpu / sent * 100) / 100,
    droppedBy: s.dropped
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

// The two variants: [name, tree, server] each; the servers started here.
async function variants () {
  const here = path.join(__dirname, '..')
  if (args.backends) {
    const dbPath = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-sip-disk-'))
    const memory = await startJavaServer({ port: 0 })
    const disk = await startJavaServer({ port: 0, dbPath })
    return { list: [['disk', here, disk], ['memory', here, memory]], stop: async () => { await memory.stop(); await disk.stop(); fs.rmSync(dbPath, { recursive: true, force: true }) } }
  }
  if (!args.base) throw new Error('give --base DIR: the tree to compare with (e.g. a checkout of the commit before), or --backends')
  const server = await startJavaServer({ port: 0 })
  return { list: [['branch', here, server], ['base', path.resolve(args.base), server]], stop: () => server.stop() }
}

async function main () {
  const { list, stop } = await variants()
  const names = list.map(([name]) => name)
  const results = []
  try {
    for (let round = -1; round < args.rounds; round++) {
      for (const [variant, root, server] of round % 2 ? [...list].reverse() : list) {
        const r = await runOnce(variant, root, server, round)
        if (round >= 0) results.push(r)
        console.log(`${round < 0 ? 'warm-up' : `round ${round}`} ${variant.padEnd(6)} sent ${r.sent} processed ${r.processed} dropped ${r.dropped} stored/s ${r.storedPerSec} µs/packet master ${r.masterUs} workers ${r.workersUs} database ${r.serverUs}${r.dropped ? ` ${JSON.stringify(r.droppedBy)}` : ''}`)
      }
    }
  } finally {
    await stop()
  }
  const of = (variant, field) => median(results.filter((r) => r.variant === variant).map((r) => r[field]))
  const [branch, base] = names
  const summary = Object.fromEntries(names.map((v) => [v, { storedPerSec: of(v, 'storedPerSec'), masterUs: of(v, 'masterUs'), workersUs: of(v, 'workersUs'), serverUs: of(v, 'serverUs'), lossFree: results.filter((r) => r.variant === v).every((r) => r.lossFree) }]))
  const ratio = (field) => Math.round(summary[branch][field] / summary[base][field] * 100) / 100
  summary.storedRatio = ratio('storedPerSec')
  summary.workersCpuRatio = ratio('workersUs')
  summary.masterCpuRatio = ratio('masterUs')
  summary.serverCpuRatio = ratio('serverUs')
  console.log(`median: ${branch} ${summary[branch].storedPerSec}/s vs ${base} ${summary[base].storedPerSec}/s (ratio ${summary.storedRatio}); CPU per packet: workers ${summary[branch].workersUs} vs ${summary[base].workersUs} µs (ratio ${summary.workersCpuRatio}), master ${summary[branch].masterUs} vs ${summary[base].masterUs} µs (ratio ${summary.masterCpuRatio}), database ${summary[branch].serverUs} vs ${summary[base].serverUs} µs (ratio ${summary.serverCpuRatio})`)
  console.log(JSON.stringify({ bench: 'hep-sip', node: process.version, args: { calls: args.calls, rate: args.rate, rounds: args.rounds, backends: Boolean(args.backends) }, results, summary }))
}
