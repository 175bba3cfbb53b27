'use strict'
// The syslog collector against syslog-ng's `mongodb()` destination, both
// writing into one embedded Java MongoDB-compatible server (memory backend,
// heap fixed from the start) this benchmark starts, fed the same realistic
// corpus (benchmarks/syslog-corpus.js: RFC 5424 and 3164 lines of ~277
// bytes) over UDP at each --rates for its --seconds, sides taking turns (the
// order turned every round). Sides:
//   collector  `node bin/collector.js run syslog -i --workers` from this
//              checkout (the CLI as an operator runs it: the disk buffer on)
//   baseline   the same from another checkout (--baseline DIR, e.g. an
//              unpacked `git archive main`), for before/after in one run
//   syslog-ng  `syslog-ng -F` from --syslog-ng ROOT, the root of an unpacked
//              copy (`apt-get download syslog-ng-core syslog-ng-mod-mongodb`
//              and the libraries it lacks, then `dpkg -x` each into ROOT):
//              the Debian packages conflict with rsyslog, which the TLS
//              tests use, so nothing is installed; /usr/sbin/syslog-ng when
//              installed. A `network(transport(udp))` source whose lines
//              an RFC 5424 parser reads when they start `<PRI>1 `, the
//              RFC 3164 one otherwise (`network()` alone reads 5424 lines
//              as 3164: PROGRAM "1"), and a `mongodb()` destination with its
//              default value-pairs (structured data as `_SDATA`). It
//              stores the messages only; the collector also keeps
//              per-minute counters per host and severity.
// Per run, each side started afresh into a database of its own: idle RSS
// (every process of the side, --idle seconds after it is ready); then the
// sender (another process, paced on a 1 ms timer) and, until the count in
// the database reaches what was sent or stops moving for 10 s after the
// last send:
//   stored/s = stored / (done − first send), loss = 1 − stored / sent
//   CPU s per 100k messages stored: the side's processes (utime + stime,
//     every process of its tree), and the database's (per message stored,
//     so that a side that keeps up with less is not made to look cheaper)
//   peak RSS: the sum over the side's processes of each one's VmHWM
//     (reset when sending starts), sampled every 250 ms
//   dropped (the collector's, in the JSON): what it counted dropped, by reason
// A table per rate with the collector/syslog-ng ratios, then one JSON line.
// Usage: node benchmarks/syslog-vs-syslog-ng.js [--rates 10000,40000]
//   [--seconds 20,10] [--rounds 2] [--workers auto] [--idle 5]
//   [--syslog-ng /tmp/sng] [--baseline /tmp/main] [--flags='--memory-budget 2m']
//   [--baseline-flags='-i 1'] (the baseline's flags, by default --flags; with
//   --baseline . two settings of this checkout compare in one run; give
//   flags with `=`: a value that starts with `-` is otherwise read as a flag)
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const dgram = require('node:dgram')
const { spawn, fork, spawnSync } = require('node:child_process')
const minimist = require('minimist')
const { MongoClient } = require('mongodb')
const { startJavaServer } = require('../lib/mongo/java-server')
const { readStats } = require('../app/stats-file')
const { writeCorpus, readCorpus } = require('./syslog-corpus')
const { freePort } = require('../test/helpers/ports')
const { procStat, TreeSampler, rssMiB } = require('./proc-tree')

const args = minimist(process.argv.slice(2), {
  string: ['rates', 'seconds', 'syslog-ng', 'baseline', 'flags', 'baseline-flags', 'sender', 'sides'],
  default: { rates: '10000,40000', seconds: '20,10', rounds: 2, workers: 'auto', idle: 5, flags: '', 'baseline-flags': null }
})
const JVM_ARGS = ['-XX:+UseSerialGC', '-Xss512k', `-Xms${process.env.E2E_JAVA_HEAP || '2g'}`]
const SAMPLE_MS = 250
const QUIET_MS = 10000 // a collector draining its disk buffer may store nothing for seconds (flushes of 1,000s of counters)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const round1 = (x) => Math.round(x * 10) / 10

// ---------------------------------------------------------------- sides

async function startCollector (root, extra, port, mongoUri, database, dir) {
  const name = `vsng${process.pid}x${port}`
  const flags = ['run', 'syslog', '--port', String(port), '--name', name, '-i', String(args.workers), '--database', database, '--log-level', 'error', ...extra.split(' ').filter(Boolean)]
  const env = { ...process.env, MONGODB_URI: mongoUri, COLLECTOR_STATS_DIR: dir, COLLECTOR_BUFFER_DIR: path.join(dir, 'buffer') }
  const child = spawn(process.execPath, [path.join(root, 'bin', 'collector.js'), ...flags], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  for (let waited = 0; ; waited += 100) {
    const snap = await readStats(name, dir).catch(() => null)
    if (snap && snap.state === 'running') break
    if (child.exitCode !== null || waited > 60000) throw new Error(`the collector did not start: ${stderr.slice(-500)}`)
    await sleep(100)
  }
  return { child, stop: () => stopChild(child, 'SIGTERM'), dropped: () => droppedOf(name, dir) }
}

// What the collector dropped, by reason (its stats file, written every second), or null.
async function droppedOf (name, dir) {
  await sleep(1500)
  const snap = await readStats(name, dir).catch(() => null)
  const dropped = snap && snap.stats && snap.stats.dropped
  return dropped ? Object.fromEntries(Object.entries(dropped).filter(([reason, n]) => reason !== 'total' && n > 0)) : null
}

function syslogNgConfig (port, mongoUri, database) {
  const server = new URL(mongoUri)
  const uri = `mongodb://${server.host}/${database}`
  return `@version: 3.38
options { stats-freq(0); };
source s_net { network(transport("udp") port(${port}) so-rcvbuf(8388608) log-iw-size(100000) flags(no-parse)); };
destination d_mongo { mongodb(uri("${uri}") collection("syslog")); };
log {
  source(s_net);
  if { filter { message("^<[0-9]{1,3}>1 " type(pcre)); }; parser { syslog-parser(flags(syslog-protocol)); }; }
  else { parser { syslog-parser(); }; };
  destination(d_mongo);
};
`
}

async function startSyslogNg (root, port, mongoUri, database, dir) {
  const conf = path.join(dir, 'syslog-ng.conf')
  fs.writeFileSync(conf, syslogNgConfig(port, mongoUri, database))
  const installed = root === '/'
  const binary = path.join(root, 'usr', 'sbin', 'syslog-ng')
  const env = installed ? process.env : unpackedEnv(root)
  const modules = installed ? [] : [`--module-path=${path.join(root, 'usr', 'lib', 'syslog-ng', '3.38')}`]
  const ctl = path.join(dir, 'ctl')
  const child = spawn(binary, ['-F', '-f', conf, ...modules, '-R', path.join(dir, 'persist'), '-p', path.join(dir, 'pid'), '-c', ctl], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  for (let waited = 0; !fs.existsSync(ctl); waited += 100) {
    if (child.exitCode !== null || waited > 30000) throw new Error(`syslog-ng did not start: ${stderr.slice(-500)}`)
    await sleep(100)
  }
  return { child, stop: () => stopChild(child, 'SIGTERM') }
}

// The libraries of an unpacked copy: its own and those it brought.
function unpackedEnv (root) {
  return { ...process.env, LD_LIBRARY_PATH: ['x86_64-linux-gnu', 'syslog-ng'].map((dir) => path.join(root, 'usr', 'lib', dir)).join(':') }
}

function stopChild (child, signal) {
  if (child.exitCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000)
    child.once('exit', () => { clearTimeout(timer); resolve() })
    child.kill(signal)
  })
}

// ---------------------------------------------------------------- sender

// Reads the corpus, says ready, and on 'go' sends `total` of it at `rate`/s.
function runSender ([port, rate, total, file]) {
  const corpus = readCorpus(file, Number(total))
  const socket = dgram.createSocket('udp4')
  let sent = 0
  let done = 0
  let firstSendAt = 0
  let lastSendAt = 0
  const completed = () => {
    if (++done < corpus.length) return
    socket.close()
    process.send({ sent, firstSendAt, lastSendAt }, () => process.exit(0))
  }
  socket.connect(Number(port), '127.0.0.1', () => {
    process.once('message', () => {
      firstSendAt = Date.now()
      const t0 = process.hrtime.bigint()
      const tick = () => {
        const due = Math.min(corpus.length, Math.floor(Number(process.hrtime.bigint() - t0) / 1e6 * Number(rate) / 1000) + 1)
        while (sent < due) socket.send(corpus[sent++], completed)
        if (sent === corpus.length) lastSendAt = Date.now()
        else setTimeout(tick, 1)
      }
      tick()
    })
    process.send({ ready: true })
  })
}

// Forks the sender; resolves with its report's promise once it is sending.
async function send (port, rate, total, file) {
  const child = fork(__filename, ['--sender', [port, rate, total, file].join(',')])
  const exited = new Promise((resolve, reject) => child.once('exit', (code) => code !== 0 && reject(new Error(`the sender exited with ${code}`))))
  await Promise.race([new Promise((resolve) => child.once('message', resolve)), exited])
  const report = Promise.race([new Promise((resolve) => child.once('message', resolve)), exited])
  child.send('go')
  return { report }
}

// ---------------------------------------------------------------- one run

async function runOnce (side, rate, seconds, ctx) {
  const total = rate * seconds
  const database = `vsng_${side}_${rate}_${Date.now().toString(36)}`
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vsng-'))
  const port = await freePort()
  const started = side === 'syslog-ng'
    ? await startSyslogNg(ctx.syslogNg, port, ctx.server.uri, database, dir)
    : side === 'baseline'
      ? await startCollector(path.resolve(ctx.baseline), args['baseline-flags'] === null ? String(args.flags) : String(args['baseline-flags']), port, ctx.server.uri, database, dir)
      : await startCollector(path.join(__dirname, '..'), String(args.flags), port, ctx.server.uri, database, dir)
  try {
    await sleep(args.idle * 1000)
    const idleMiB = rssMiB(started.child.pid)
    const collection = ctx.client.db(database).collection('syslog')
    const tree = new TreeSampler(started.child.pid)
    const db0 = procStat(ctx.server.pid).cpu
    const sender = await send(port, rate, total, ctx.corpusFile)
    const { stored, doneAt, report } = await untilStored(collection, total, sender.report, tree)
    const dbCpu = procStat(ctx.server.pid).cpu - db0
    const dropped = started.dropped ? await started.dropped() : null
    const elapsed = (doneAt - report.firstSendAt) / 1000
    return {
      side, rate, sent: report.sent, stored, loss: round1(100 * (1 - stored / report.sent)),
      storedPerSecond: Math.round(stored / elapsed), lagMs: Math.max(0, doneAt - report.lastSendAt),
      cpuPer100k: round1(tree.cpu() * 1e5 / Math.max(1, stored)), dbCpuPer100k: round1(dbCpu * 1e5 / Math.max(1, stored)),
      cpusPer100k: tree.cpus().map((cpu) => round1(cpu * 1e5 / Math.max(1, stored))),
      peakRssMiB: tree.peakMiB(), peaksMiB: tree.peaksMiB(), idleRssMiB: idleMiB, dropped
    }
  } finally {
    await started.stop()
    await ctx.client.db(database).dropDatabase().catch(() => {})
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

// Polls the stored count until it reaches `total`, or stops moving for
// QUIET_MS once the sender is done; the time of the last movement is done.
async function untilStored (collection, total, reportPromise, tree) {
  let report = null
  reportPromise.then((r) => { report = r })
  let stored = 0
  let changedAt = Date.now()
  for (;;) {
    await sleep(SAMPLE_MS)
    tree.sample()
    const now = Date.now()
    const count = await collection.estimatedDocumentCount()
    if (count !== stored) {
      stored = count
      changedAt = now
    }
    if (report && (stored >= total || now - changedAt > QUIET_MS)) return { stored, doneAt: changedAt, report }
  }
}

// ---------------------------------------------------------------- report

function median (values) {
  const sorted = values.filter((v) => v !== null).sort((a, b) => a - b)
  return sorted.length === 0 ? null : sorted[Math.floor((sorted.length - 1) / 2)]
}

const COLUMNS = ['storedPerSecond', 'loss', 'cpuPer100k', 'dbCpuPer100k', 'peakRssMiB', 'idleRssMiB', 'lagMs']

function printRate (rate, runs, sides) {
  console.log(`\n${rate}/s offered`)
  console.log(['side'.padEnd(10), 'stored/s', 'loss %', 'CPU s/100k', 'db CPU s/100k', 'peak RSS MiB', 'idle RSS MiB', 'lag ms'].join('  '))
  const medians = {}
  for (const r of runs) console.log([r.side.padEnd(10), ...COLUMNS.map((c) => String(r[c]).padStart(8))].join('  '))
  for (const side of sides) {
    const mine = runs.filter((r) => r.side === side)
    medians[side] = Object.fromEntries(COLUMNS.map((c) => [c, median(mine.map((r) => r[c]))]))
  }
  const ratios = {}
  for (const against of sides.includes('collector') ? sides.filter((s) => s !== 'collector') : []) {
    ratios[`collector/${against}`] = Object.fromEntries(COLUMNS.filter((c) => c !== 'loss').map((c) => [c, medians[against][c] ? Math.round(100 * medians.collector[c] / medians[against][c]) / 100 : null]))
    console.log(`collector / ${against} (medians): ${Object.entries(ratios[`collector/${against}`]).map(([c, v]) => `${c} ${v}`).join(', ')}`)
  }
  return { medians, ratios }
}

async function main () {
  const rates = String(args.rates).split(',').map(Number)
  const seconds = String(args.seconds).split(',').map(Number)
  const ctx = { syslogNg: args['syslog-ng'] || (fs.existsSync('/usr/sbin/syslog-ng') ? '/' : null), baseline: args.baseline || null }
  const sides = args.sides ? args.sides.split(',') : ['collector', ...(ctx.baseline ? ['baseline'] : []), ...(ctx.syslogNg ? ['syslog-ng'] : [])]
  if (!ctx.syslogNg) console.log('syslog-ng: not found (--syslog-ng ROOT of an unpacked copy, see the header); collector only')
  const most = Math.max(...rates.map((rate, i) => rate * (seconds[i] || seconds[0])))
  ctx.corpusFile = writeCorpus(most, Date.now(), rates[0])
  ctx.server = await startJavaServer({ port: 0, jvmArgs: JVM_ARGS })
  ctx.client = await new MongoClient(ctx.server.uri).connect()
  const results = {}
  try {
    for (let i = 0; i < rates.length; i++) {
      const runs = []
      for (let round = 0; round < args.rounds; round++) {
        const order = round % 2 === 0 ? sides : [...sides].reverse()
        for (const side of order) runs.push(await runOnce(side, rates[i], seconds[i] || seconds[0], ctx))
      }
      results[rates[i]] = { runs, ...printRate(rates[i], runs, sides) }
    }
    console.log(JSON.stringify({ benchmark: 'syslog-vs-syslog-ng', workers: args.workers, flags: args.flags, baseline: ctx.baseline, baselineFlags: args['baseline-flags'], syslogNg: spawnVersion(ctx.syslogNg), results }))
  } finally {
    await ctx.client.close()
    await ctx.server.stop()
    fs.rmSync(ctx.corpusFile, { force: true })
  }
}

function spawnVersion (root) {
  if (!root) return null
  const env = root === '/' ? process.env : unpackedEnv(root)
  const out = spawnSync(path.join(root, 'usr', 'sbin', 'syslog-ng'), ['--version'], { env, encoding: 'utf8' })
  return (/syslog-ng \d+ \(([\d.]+)\)/.exec(out.stdout || '') || [])[1] || null
}

if (args.sender) runSender(String(args.sender).split(','))
else {
  main().catch((err) => {
    console.error(err.stack || err.message)
    process.exit(1)
  })
}
