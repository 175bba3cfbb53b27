'use strict'
// What a page of `collector calls --serve` costs with a busy window: the
// embedded server (memory backend) holds `--streams` calls shaped like
// stored ones (test/helpers/stored-calls.js: 1 to 4 minutes each, both
// sides' quality, minute buckets and 10 s windows), every one with its last
// report within the view's hour. Two views run as child processes on the
// same data, taking turns, so both see the same machine: the full-window
// path each page load used to take (benchmarks/baseline/calls-view-full-window.js)
// and the bounded one (app/commands/calls-view.js: a page reads at most its
// limit of the most recent calls). Each round fires `--concurrency` page
// loads at once at one page, once the server is idle again. Prints the
// latency per page (median, max), each view's peak RSS, the server's, the
// ratio, and a JSON line.
//
//   node benchmarks/calls-view.js [--streams 100000] [--concurrency 10] [--rounds 2] [--heap 8g]
//
// Against MONGODB_URI when set (a database of its own, dropped after),
// else the embedded Java server in memory (`--heap`: its -Xmx; the JVM's
// default is a quarter of the machine's memory). A load answered other
// than 200 (the view's 500 when the server stops answering) counts as
// failed, its time not in the latencies.
const fs = require('node:fs')
const http = require('node:http')
const { fork } = require('node:child_process')
const minimist = require('minimist')
const { MongoClient } = require('mongodb')
const { startJavaServer, DEFAULT_JVM_ARGS } = require('../lib/mongo/java-server')
const { streamSchema } = require('../workers/storage/schemas')
const { storedCall } = require('../test/helpers/stored-calls')
const { prng } = require('../test/helpers/prng')

const args = minimist(process.argv.slice(2), { default: { streams: 100000, concurrency: 10, rounds: 2 } })
const WINDOW_MS = 3600000
const BATCH = 1000

// The child: one view on the benchmark's database, its port sent to the parent.
async function serve () {
  const { CallsViewServer } = require('../app/commands/calls-view')
  const { FullWindowViewServer } = require('./baseline/calls-view-full-window')
  const { TABLE } = require('../app/commands/calls')
  const client = await new MongoClient(args.uri).connect()
  const View = args.serve === 'full-window' ? FullWindowViewServer : CallsViewServer
  const view = new View(client.db(args.db).collection('streams'), { host: '127.0.0.1', port: 0, since: WINDOW_MS, worst: 10, table: TABLE })
  const { port } = await view.start()
  process.send({ port })
  process.once('disconnect', () => view.stop().then(() => client.close()).then(() => process.exit(0)))
}

async function fill (streams) {
  for (const [key, options] of streamSchema.indexes()) await streams.createIndex(key, options)
  const random = prng(36)
  const now = Date.now()
  for (let start = 0; start < args.streams; start += BATCH) {
    const docs = []
    for (let n = start; n < Math.min(start + BATCH, args.streams); n++) {
      const endTime = now - 5000 - Math.floor(random() * (WINDOW_MS - 300000))
      const loss = random() < 0.8 ? random() * 0.01 : random() * 0.1
      docs.push(storedCall({ n, endTime, durationS: 60 + Math.floor(random() * 180), loss, active: random() < 0.05 }))
    }
    await streams.insertMany(docs, { ordered: false })
  }
}

function startView (path, uri, db) {
  const child = fork(__filename, ['--serve', path, '--uri', uri, '--db', db], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  return new Promise((resolve, reject) => {
    child.once('message', ({ port }) => resolve({ path, child, port }))
    child.once('exit', (code) => reject(new Error(`the ${path} view exited ${code}`)))
  })
}

function load (port, route) {
  const started = process.hrtime.bigint()
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: route, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { body += chunk })
      res.on('end', () => resolve({ ok: res.statusCode === 200, ms: Number(process.hrtime.bigint() - started) / 1e6, body }))
    }).on('error', reject)
  })
}

// `concurrency` loads at once, the i-th of `route(i)`.
function round (view, route) {
  return Promise.all(Array.from({ length: args.concurrency }, (_, i) => load(view.port, route(i))))
}

function rssMb (pid, field) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  return Math.round(Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)[1]) / 1024)
}

// Waits until the server has stopped working off the previous round (its
// garbage collection too): under 10 % of a core over half a second, 60 s at most.
async function settle (pid) {
  if (!pid) return
  const cpu = () => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').slice(11, 13).reduce((sum, ticks) => sum + Number(ticks), 0)
  for (let waited = 0, before = cpu(); waited < 60000; waited += 500) {
    await new Promise((resolve) => setTimeout(resolve, 500))
    const now = cpu()
    if (now - before < 5) return
    before = now
  }
}

const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)]

async function main () {
  const jvmArgs = args.heap ? [...DEFAULT_JVM_ARGS, `-Xmx${args.heap}`] : DEFAULT_JVM_ARGS
  const server = process.env.MONGODB_URI ? null : await startJavaServer({ port: 0, jvmArgs })
  const uri = process.env.MONGODB_URI || server.uri
  const client = await new MongoClient(uri).connect()
  const db = `bench_calls_view_${process.pid}`
  const views = []
  try {
    const filling = Date.now()
    await fill(client.db(db).collection('streams'))
    console.log(`${args.streams} calls in the window, filled in ${((Date.now() - filling) / 1000).toFixed(1)} s; ${args.concurrency} concurrent page loads a round, ${args.rounds} rounds a page`)
    for (const path of ['full-window', 'bounded']) views.push(await startView(path, uri, db))
    const [fullWindow, bounded] = views
    const idle = Object.fromEntries(views.map((v) => [v.path, rssMb(v.child.pid, 'VmRSS')]))
    // The bounded view's pages: the first, the second of its ranking, the
    // older calls by its cursor, and as many cursors as loads (a read each:
    // loads of one page at once share their read).
    const first = await load(bounded.port, '/')
    if (!first.ok) throw new Error(`the bounded view's first page: ${first.body}`)
    const older = /<a id="older" href="\/\?before=(\d+)">/.exec(first.body)
    const pages = [[fullWindow, '/', () => '/'], [bounded, '/', () => '/'], [bounded, '/?page=2', () => '/?page=2']]
    if (older) pages.push([bounded, '/?before=<older>', () => `/?before=${older[1]}`], [bounded, '/?before=<one each>', (i) => `/?before=${Number(older[1]) - i * 1000}`])
    const loads = new Map(pages.map(([view, label]) => [`${view.path} ${label}`, []]))
    for (let r = 0; r < args.rounds; r++) {
      for (const [view, label, route] of pages) {
        await settle(server && server.pid)
        loads.get(`${view.path} ${label}`).push(...await round(view, route))
      }
    }
    const peak = Object.fromEntries(views.map((v) => [v.path, rssMb(v.child.pid, 'VmHWM')]))
    const serverRss = server ? rssMb(server.pid, 'VmRSS') : null
    const rows = [...loads].map(([page, results]) => {
      const ms = results.filter((result) => result.ok).map((result) => result.ms)
      return { page, loads: results.length, failed: results.length - ms.length, medianMs: ms.length ? Math.round(median(ms)) : null, maxMs: ms.length ? Math.round(Math.max(...ms)) : null }
    })
    console.log('view / page                      loads  failed  median ms  max ms')
    for (const row of rows) console.log(`${row.page.padEnd(32)} ${String(row.loads).padStart(5)}  ${String(row.failed).padStart(6)}  ${String(row.medianMs ?? '-').padStart(9)}  ${String(row.maxMs ?? '-').padStart(6)}`)
    console.log(`view RSS MB (idle → peak): full-window ${idle['full-window']} → ${peak['full-window']}, bounded ${idle.bounded} → ${peak.bounded}${serverRss === null ? '' : `; server ${serverRss}`}`)
    const ratio = rows[0].medianMs === null ? null : Number((rows[0].medianMs / rows[1].medianMs).toFixed(2))
    console.log(`full-window / bounded, median of the first page: ${ratio === null ? 'no full-window load answered' : ratio.toFixed(1)}`)
    console.log(JSON.stringify({ benchmark: 'calls-view', streams: args.streams, concurrency: args.concurrency, rounds: args.rounds, heap: args.heap || null, pages: rows, rssMb: { idle, peak, server: serverRss }, ratio }))
  } finally {
    for (const view of views) view.child.disconnect()
    await client.db(db).dropDatabase().catch(() => {})
    await client.close()
    if (server) await server.stop()
  }
}

if (args.serve) {
  serve().catch((err) => { console.error(err); process.exit(1) })
} else {
  main().catch((err) => { console.error(err); process.exitCode = 1 })
}
