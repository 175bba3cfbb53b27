'use strict'
// The HEP collector against HOMER 5's capture node, Kamailio's `sipcapture`
// module (`hep_capture_on`) writing each SIP message as a row of a
// PostgreSQL table, fed the same pre-encoded HEP SIP stream
// (benchmarks/hep-sip-corpus.js: calls of INVITE, 180, 200, ACK, BYE, 100
// calls in flight; the same bytes to both) by the paced sender
// (benchmarks/paced-sender.js, another process, 10 ms ticks) at each of
// --rates packets/s for --seconds, sides taking turns (the order turned
// every round), each side started afresh for each run. Everything is set up
// here from temporary directories and torn down at the end or on an error:
//   PostgreSQL 15  a private cluster (initdb as the postgres user, trust
//                  on 127.0.0.1 only, a private port and socket directory),
//                  synchronous_commit off (fsync on; --synchronous-commit
//                  on for PostgreSQL's default): the embedded MongoDB
//                  server of our side keeps its data in memory, and a commit
//                  that waits for the disk would measure the disk, not
//                  sipcapture; a `sip_capture` table of the columns
//                  sipcapture 5.6 inserts, indexed as HOMER 5's schema
//                  indexes it (date, callid, callid_aleg, ruri_user,
//                  from_user, to_user, pid_user, auth_user; id the key)
//   Kamailio 5.6   `sipcapture` with `db_url` to that cluster, `capture_on`
//                  and `hep_capture_on` 1, `sip_capture("sip_capture")` in
//                  the request and reply routes, --kamailio-children UDP
//                  children (each its own database connection; inserts are
//                  synchronous, so more children than cores hide the
//                  round trip), the UDP receive buffer up to 4 MiB
//                  (`maxbuffer`, as ours asks for 8 and gets rmem_max)
//   collector      `collector run hep` of this checkout (--workers workers,
//                  defaults otherwise: the disk buffer on, every SIP
//                  message in sip_messages and the call in calls) on the
//                  embedded mongo-java-server (memory backend) started here
// Per run: stored = rows in sip_capture (SELECT count(*)) or documents in
// sip_messages, polled every 250 ms until it reaches what was sent or stops
// moving for 5 s after the last send; loss-free when stored = sent;
// stored/s = stored / (last change − first send); CPU per stored packet =
// utime + stime of every process of the side (Kamailio's and PostgreSQL's
// trees, less the backend this benchmark counts through; the collector's
// master and workers and the Java server), and each part apart; the
// kernel's drops at the receiving socket (/proc/net/udp); the storage per
// call (PostgreSQL: pg_total_relation_size, indexes and TOAST included;
// ours: the documents' BSON as the server reports it and the index keys
// as `collector status` estimates them: the embedded server keeps no real
// index to measure).
// A side's loss-free rate in a round is the highest rate it stored without
// loss before its first loss (the climb stops there); its kept-up rate the
// highest before its first run that lost or stored its last packet more
// than 1 s after the last send (lag): our disk buffer stores a burst it
// cannot keep up with later, loss-free, so the kept-up rate is what a side
// sustains. CPU per packet is compared at the highest rate both kept up
// with in that round (the same work at the same rate). Prints a line per
// run, per round, the medians and the ratios (ours / sipcapture's; target:
// kept-up rate ≥ 5, CPU ≤ 1), then
// one JSON line. Linux, root (PostgreSQL runs as the postgres user).
// Usage: node benchmarks/hep-vs-sipcapture.js [--rates 2000,5000,...,40000]
//   [--seconds 4] [--rounds 3] [--workers 2] [--kamailio-children 8]
//   [--synchronous-commit off] [--sides collector,sipcapture]
//   [--flags='--workers-node-args=--max-semi-space-size=16'] (more flags of
//   the collector's; give them with `=`)
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const readline = require('node:readline')
const { spawn, spawnSync, fork } = require('node:child_process')
const minimist = require('minimist')
const { MongoClient } = require('mongodb')
const { startJavaServer } = require('../lib/mongo/java-server')
const { readStats } = require('../app/stats-file')
const { measureCollection } = require('../workers/storage/capacity')
const { freePort } = require('../test/helpers/ports')
const { sendPaced } = require('./paced-sender')
const { PER_CALL, hepSipPackets } = require('./hep-sip-corpus')
const { TreeSampler } = require('./proc-tree')

const args = minimist(process.argv.slice(2), {
  string: ['rates', 'sides', 'synchronous-commit', 'flags'],
  default: { rates: '2000,5000,10000,15000,20000,30000,40000', seconds: 4, rounds: 3, workers: 2, 'kamailio-children': 8, sides: 'collector,sipcapture', 'synchronous-commit': 'off', flags: '' }
})
const PG_BIN = '/usr/lib/postgresql/15/bin'
const KAMAILIO_MODULES = ['/usr/lib/x86_64-linux-gnu/kamailio/modules', '/usr/lib/aarch64-linux-gnu/kamailio/modules', '/usr/lib/kamailio/modules'].find((dir) => fs.existsSync(dir))
const SAMPLE_MS = 250
const QUIET_MS = 5000
const WARM_UP_SECONDS = 2
// Loss-free and kept up: everything stored within this of the last send. Our
// side's disk buffer takes a burst it cannot store as fast as it comes and
// stores it later, loss-free; Kamailio has its socket's buffer only. Kept
// up is the rate a side sustains, and the one the target is judged on.
const KEPT_UP_MS = 1000
// Step s of a round (0: the warm-up, then each rate) sends calls numbered from
// s × 1,000,000 captured from second T0 + 10 s: the same bytes to both sides
// for one step, and no step repeating another's (the hep collector stores
// copies of one capture once).
const T0 = 1795000000
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const round2 = (x) => Math.round(x * 100) / 100

// What to undo, last first: at the end, on an error, on SIGINT/SIGTERM. Once
// a signal came, nothing new starts (the run under way fails at its next
// start and cleans up again).
const cleanups = []
let stopping = false
async function cleanUp () {
  while (cleanups.length) await cleanups.pop()().catch((err) => console.error(`cleanup: ${err.message}`))
}

function notStopping () {
  if (stopping) throw new Error('stopping: a signal came')
}

// ---------------------------------------------------------------- processes

// A command run as the postgres user when we are root (initdb and postgres refuse root).
function asPostgres (command, argv) {
  return process.getuid() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...argv]] : [command, argv]
}

function startDetached (command, argv, options = {}) {
  notStopping()
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...options })
  let output = ''
  for (const stream of [child.stdout, child.stderr]) stream.setEncoding('utf8').on('data', (chunk) => { output = (output + chunk).slice(-20000) })
  return { child, output: () => output }
}

// SIGTERM to the process group, SIGKILL after `ms`; resolves when the leader is gone.
function stopGroup (child, ms = 10000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const kill = (signal) => { try { process.kill(-child.pid, signal) } catch {} }
    const timer = setTimeout(() => kill('SIGKILL'), ms)
    child.once('exit', () => {
      clearTimeout(timer)
      kill('SIGKILL') // any straggler of the group
      resolve()
    })
    kill('SIGTERM')
  })
}

// The kernel's drop count of the UDP socket bound to 127.0.0.1:port (/proc/net/udp), 0 if none.
function udpDrops (port) {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`
  let drops = 0
  for (const line of fs.readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/)
    if (f[1] === local) drops += Number(f[12])
  }
  return drops
}

// ---------------------------------------------------------------- PostgreSQL

const TEXT_COLUMNS = ['method', 'reply_reason', 'ruri', 'ruri_user', 'ruri_domain', 'from_user', 'from_domain', 'from_tag', 'to_user', 'to_domain', 'to_tag',
  'pid_user', 'contact_user', 'auth_user', 'callid', 'callid_aleg', 'via_1', 'via_1_branch', 'cseq', 'diversion', 'reason', 'content_type', 'auth', 'user_agent',
  'source_ip', 'destination_ip', 'contact_ip', 'originator_ip', 'correlation_id', 'rtp_stat', 'node', 'custom_field1', 'custom_field2', 'custom_field3']
const INT_COLUMNS = ['source_port', 'destination_port', 'contact_port', 'originator_port', 'proto', 'family', 'type']
const INDEXED = ['date', 'callid', 'callid_aleg', 'ruri_user', 'from_user', 'to_user', 'pid_user', 'auth_user']

// The table sipcapture writes (the columns of its 5.6 insert), ours.
function schemaSql () {
  const columns = ['id bigserial PRIMARY KEY', 'date timestamp NOT NULL DEFAULT now()', 'micro_ts bigint NOT NULL DEFAULT 0',
    ...TEXT_COLUMNS.map((c) => `${c} text NOT NULL DEFAULT ''`), ...INT_COLUMNS.map((c) => `${c} integer NOT NULL DEFAULT 0`), 'msg text NOT NULL']
  return [`CREATE TABLE sip_capture (${columns.join(', ')})`, ...INDEXED.map((c) => `CREATE INDEX sip_capture_${c}_idx ON sip_capture (${c})`)].join('; ')
}

function psqlArgs (port, database) {
  return ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-U', 'postgres', '-h', '127.0.0.1', '-p', String(port), '-d', database]
}

function psql (port, database, sql) {
  const out = spawnSync('psql', [...psqlArgs(port, database), '-c', sql], { encoding: 'utf8' })
  if (out.status !== 0) throw new Error(`psql: ${sql.slice(0, 80)}: ${out.stderr}`)
  return out.stdout.trim()
}

// One psql kept open: its queries cost one known backend, left out of PostgreSQL's CPU.
async function monitorConnection (port) {
  const child = spawn('psql', psqlArgs(port, 'homer'), { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const waiting = []
  readline.createInterface({ input: child.stdout }).on('line', (line) => waiting.length && waiting.shift()(line))
  const query = (sql) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`psql monitor: no answer to ${sql}: ${stderr}`)), 60000)
    waiting.push((line) => { clearTimeout(timer); resolve(line) })
    child.stdin.write(`${sql};\n`)
  })
  const exec = (sql) => query(`${sql}; SELECT 'ok'`) // a statement that prints no row of its own
  const backendPid = Number(await query('SELECT pg_backend_pid()'))
  return { query, exec, backendPid, close: () => { child.stdin.end(); return stopGroup(child, 5000).catch(() => {}) } }
}

async function startPostgres (dir) {
  const data = path.join(dir, 'pgdata')
  const sockets = path.join(dir, 'pgsock')
  fs.mkdirSync(sockets)
  spawnSync('chown', ['-R', 'postgres:postgres', dir])
  const init = spawnSync(...asPostgres(path.join(PG_BIN, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']), { encoding: 'utf8' })
  if (init.status !== 0) throw new Error(`initdb: ${init.stderr}`)
  const port = await freePort()
  const settings = ['listen_addresses=127.0.0.1', `unix_socket_directories=${sockets}`, `synchronous_commit=${args['synchronous-commit']}`, 'max_connections=200', 'shared_buffers=256MB', 'log_min_messages=warning']
  const server = startDetached(...asPostgres(path.join(PG_BIN, 'postgres'), ['-D', data, '-p', String(port), ...settings.flatMap((s) => ['-c', s])]))
  cleanups.push(() => stopGroup(server.child, 30000))
  for (let waited = 0; spawnSync('pg_isready', ['-q', '-h', '127.0.0.1', '-p', String(port)]).status !== 0; waited += 200) {
    if (server.child.exitCode !== null || waited > 30000) throw new Error(`postgres did not start: ${server.output()}`)
    await sleep(200)
  }
  const pid = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
  psql(port, 'postgres', 'CREATE DATABASE homer')
  psql(port, 'homer', schemaSql())
  const monitor = await monitorConnection(port)
  cleanups.push(() => monitor.close())
  const version = psql(port, 'homer', 'SHOW server_version')
  return { port, pid, monitor, version, output: server.output }
}

// ---------------------------------------------------------------- the sides

function kamailioConfig ({ port, pgPort, children }) {
  return [
    '#!KAMAILIO',
    'debug=1', 'log_stderror=yes', `children=${children}`, 'disable_tcp=yes', 'dns=no', 'rev_dns=no', 'auto_aliases=no', 'maxbuffer=4194304',
    `listen=udp:127.0.0.1:${port}`, `mpath="${KAMAILIO_MODULES}/"`,
    'loadmodule "db_postgres.so"', 'loadmodule "sipcapture.so"',
    `modparam("sipcapture", "db_url", "postgres://postgres@127.0.0.1:${pgPort}/homer")`,
    'modparam("sipcapture", "capture_on", 1)',
    'modparam("sipcapture", "hep_capture_on", 1)',
    'modparam("sipcapture", "capture_node", "bench")',
    'request_route {', '  sip_capture("sip_capture");', '  drop;', '}',
    'onreply_route {', '  sip_capture("sip_capture");', '  drop;', '}', ''
  ].join('\n')
}

// Ready when every UDP child holds its database connection.
async function startKamailio (dir, pg) {
  const port = await freePort()
  const children = Number(args['kamailio-children'])
  await pg.monitor.exec('TRUNCATE sip_capture RESTART IDENTITY')
  await pg.monitor.exec('CHECKPOINT')
  const config = path.join(dir, 'kamailio.cfg')
  fs.writeFileSync(config, kamailioConfig({ port, pgPort: pg.port, children }))
  const kamailio = startDetached('kamailio', ['-f', config, '-DD', '-E', '-m', '256', '-M', '16', '-P', path.join(dir, 'kamailio.pid'), '-w', dir])
  cleanups.push(() => stopGroup(kamailio.child))
  const connected = 'SELECT count(*) FROM pg_stat_activity WHERE datname = \'homer\' AND pid <> pg_backend_pid()'
  for (let waited = 0; Number(await pg.monitor.query(connected)) < children; waited += 200) {
    if (kamailio.child.exitCode !== null || waited > 30000) throw new Error(`kamailio did not start: ${kamailio.output()}`)
    await sleep(200)
  }
  return {
    port,
    roots: { receiver: kamailio.child.pid, database: pg.pid },
    except: [pg.monitor.backendPid],
    count: async () => Number(await pg.monitor.query('SELECT count(*) FROM sip_capture')),
    storage: async (messages) => storageOfTable(pg, messages),
    stop: () => stopGroup(kamailio.child),
    output: kamailio.output
  }
}

// Bytes per call of 5 messages: per message stored × 5 (a lossy run stores parts of calls).
async function storageOfTable (pg, messages) {
  const calls = messages / PER_CALL
  const [total, table, indexes] = (await pg.monitor.query("SELECT pg_total_relation_size('sip_capture') || ',' || pg_table_size('sip_capture') || ',' || pg_indexes_size('sip_capture')")).split(',').map(Number)
  return { bytesPerCall: Math.round(total / calls), tableBytesPerCall: Math.round(table / calls), indexBytesPerCall: Math.round(indexes / calls), estimated: false }
}

async function startCollector (dir, ctx) {
  const port = await freePort()
  const name = `hvs${process.pid}x${port}`
  const database = `hvs_${port}_${Date.now().toString(36)}`
  const flags = ['run', 'hep', '--port', String(port), '--name', name, '-i', String(args.workers), '--database', database, '--log-level', 'error', ...args.flags.split(' ').filter(Boolean)]
  const env = { ...process.env, MONGODB_URI: ctx.server.uri, COLLECTOR_STATS_DIR: dir, COLLECTOR_BUFFER_DIR: path.join(dir, 'buffer') }
  const collector = startDetached(process.execPath, [path.join(__dirname, '..', 'bin', 'collector.js'), ...flags], { env })
  cleanups.push(() => stopGroup(collector.child, 60000))
  for (let waited = 0; ; waited += 100) {
    const snap = await readStats(name, dir)
    if (snap && snap.state === 'running') break
    if (collector.child.exitCode !== null || waited > 60000) throw new Error(`the collector did not start: ${collector.output().slice(-500)}`)
    await sleep(100)
  }
  const db = ctx.client.db(database)
  return {
    port,
    roots: { receiver: collector.child.pid, database: ctx.server.pid },
    except: [],
    count: () => db.collection('sip_messages').estimatedDocumentCount(),
    storage: async (messages) => storageOfCollections(db, messages),
    dropped: async () => {
      const snap = await readStats(name, dir)
      const dropped = snap && snap.stats && snap.stats.dropped
      return dropped ? Object.fromEntries(Object.entries(dropped).filter(([reason, n]) => reason !== 'total' && n > 0)) : null
    },
    stop: async () => {
      await stopGroup(collector.child, 60000)
      await db.dropDatabase().catch(() => {})
    },
    output: collector.output
  }
}

async function storageOfCollections (db, messages) {
  const calls = messages / PER_CALL
  const sip = await measureCollection(db, { collection: 'sip_messages', field: 'receivedAt' })
  const callDocs = await measureCollection(db, { collection: 'calls', field: 'lastReceivedAt' })
  const data = sip.dataBytes + callDocs.dataBytes
  const index = sip.indexBytes + callDocs.indexBytes
  return { bytesPerCall: Math.round((data + index) / calls), tableBytesPerCall: Math.round(data / calls), indexBytesPerCall: Math.round(index / calls), messagesBsonPerCall: Math.round(sip.dataBytes / calls), callBsonPerCall: Math.round(callDocs.dataBytes / calls), estimated: sip.estimated }
}

// ---------------------------------------------------------------- sender

function sender () {
  process.once('message', ({ port, calls, rate, step }) => sendPaced(hepSipPackets(calls, T0 + step * 10, step * 1e6), port, rate))
}

// Forks the sender; resolves once it is ready to send (the packets made), with its done report's promise.
async function send (port, calls, rate, step) {
  notStopping()
  const child = fork(__filename, ['--sender'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  cleanups.push(async () => { child.kill('SIGKILL') })
  const messages = []
  let notify = () => {}
  child.on('message', (m) => { messages.push(m); notify() })
  const next = (key) => new Promise((resolve, reject) => {
    const check = () => {
      const m = messages.find((x) => x[key])
      if (m) resolve(m)
      else if (child.exitCode !== null) reject(new Error(`the sender exited with ${child.exitCode}`))
    }
    notify = check
    child.once('exit', check)
    check()
  })
  child.send({ port, calls, rate, step })
  await next('ready')
  return { done: next('done') }
}

// ---------------------------------------------------------------- one run

// One rate through a running side: what it stored of what was sent, and at what cost.
async function runOnce (side, started, rate, seconds, step) {
  const calls = Math.round(rate * seconds / PER_CALL)
  const sent = calls * PER_CALL
  const before = await started.count()
  const drops0 = udpDrops(started.port)
  const sender = await send(started.port, calls, rate, step)
  const trees = { receiver: new TreeSampler(started.roots.receiver), database: new TreeSampler(started.roots.database) }
  const { count, doneAt, report } = await untilStored(started, before + sent, sender.done, trees)
  const stored = count - before
  const cpu = { receiver: trees.receiver.cpu(started.except), database: trees.database.cpu(started.except) }
  const perPacket = (seconds) => round2(seconds * 1e6 / Math.max(1, stored))
  if (stored === 0) throw new Error(`${side} stored nothing: ${started.output().slice(-2000)}`)
  return {
    side,
    rate,
    sent,
    stored,
    lossFree: stored === sent,
    keptUp: stored === sent && doneAt - report.started - seconds * 1000 <= KEPT_UP_MS,
    storedPerSec: Math.round(stored / ((doneAt - report.started) / 1000)),
    // the last packet stored this long after the last was sent (the sender's 100 ms tail included)
    lagMs: Math.max(0, doneAt - report.started - seconds * 1000),
    usPerPacket: perPacket(cpu.receiver + cpu.database),
    receiverUs: perPacket(cpu.receiver),
    databaseUs: perPacket(cpu.database),
    kernelDrops: udpDrops(started.port) - drops0,
    dropped: started.dropped ? await started.dropped() : undefined
  }
}

// Polls the stored count until it reaches `total`, or stops moving for
// QUIET_MS once the sender is done; the time of the last change is done.
async function untilStored (started, total, donePromise, trees) {
  let report = null
  donePromise.then((r) => { report = r })
  let stored = -1
  let changedAt = Date.now()
  for (;;) {
    await sleep(SAMPLE_MS)
    for (const tree of Object.values(trees)) tree.sample()
    const now = Date.now()
    const count = await started.count()
    if (count !== stored) {
      stored = count
      changedAt = now
    }
    if (report && (stored >= total || now - changedAt > QUIET_MS)) return { count: stored, doneAt: changedAt, report }
  }
}

// ---------------------------------------------------------------- rounds

// One round: both sides started (fresh, for the round) and warmed up at the
// first rate (not counted: our processes' JIT), then each climbs the rates,
// taking turns, until its first loss; its storage per call at the end.
async function runRound (round, sides, rates, ctx) {
  const order = round % 2 === 0 ? sides : [...sides].reverse()
  const running = {}
  const runs = []
  try {
    for (const side of order) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `hvs-${side}-`))
      cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }))
      running[side] = side === 'sipcapture' ? await startKamailio(dir, ctx.pg) : await startCollector(dir, ctx)
      await runOnce(side, running[side], rates[0], WARM_UP_SECONDS, 0)
    }
    const climbing = new Set(order)
    for (const [i, rate] of rates.entries()) {
      for (const side of order.filter((s) => climbing.has(s))) {
        const r = await runOnce(side, running[side], rate, args.seconds, i + 1)
        runs.push({ round, ...r })
        printRun(round, r)
        if (!r.lossFree) climbing.delete(side)
      }
      if (climbing.size === 0) break
    }
    for (const side of order) ctx.storage[side].push(await running[side].storage(await running[side].count()))
  } finally {
    for (const side of order) if (running[side]) await running[side].stop()
  }
  return runs
}

function printRun (round, r) {
  const cells = [`round ${round}`, r.side.padEnd(10), String(r.rate).padStart(6), String(r.sent).padStart(7), String(r.stored).padStart(7), (r.lossFree ? 'yes' : 'NO').padStart(5), String(r.lagMs).padStart(6),
    String(r.storedPerSec).padStart(8), String(r.usPerPacket).padStart(8), String(r.receiverUs).padStart(8), String(r.databaseUs).padStart(8), String(r.kernelDrops).padStart(6)]
  console.log(`${cells.join('  ')}${r.dropped ? `  ${JSON.stringify(r.dropped)}` : ''}`)
}

// Per round and side: the loss-free rate (the highest before the first
// loss), the kept-up rate (the highest before the first run lossy or
// lagging), CPU there, and CPU at the highest rate both kept up with.
function summarize (runs, sides, rounds) {
  const perRound = []
  for (let round = 0; round < rounds; round++) {
    const entry = { round }
    for (const side of sides) {
      const mine = runs.filter((r) => r.round === round && r.side === side)
      const highestBefore = (fails) => {
        const first = mine.findIndex(fails)
        const clean = first < 0 ? mine : mine.slice(0, first)
        return { best: clean[clean.length - 1] || null, failedAt: first < 0 ? null : mine[first].rate }
      }
      const lossFree = highestBefore((r) => !r.lossFree)
      const keptUp = highestBefore((r) => !r.keptUp)
      entry[side] = {
        lossFreeRate: lossFree.best ? lossFree.best.rate : 0,
        lostAt: lossFree.failedAt,
        keptUpRate: keptUp.best ? keptUp.best.rate : 0,
        fellBehindAt: keptUp.failedAt,
        usPerPacket: keptUp.best ? keptUp.best.usPerPacket : null
      }
    }
    if (sides.length === 2) {
      entry.commonRate = Math.min(...sides.map((s) => entry[s].keptUpRate))
      for (const side of sides) {
        const at = runs.find((r) => r.round === round && r.side === side && r.rate === entry.commonRate)
        entry[side].usPerPacketAtCommon = at ? at.usPerPacket : null
      }
    }
    perRound.push(entry)
  }
  return perRound
}

function median (values) {
  const sorted = values.filter((v) => v !== null && v !== undefined).sort((a, b) => a - b)
  if (sorted.length === 0) return null
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

function report (runs, sides, rounds, ctx) {
  const perRound = summarize(runs, sides, rounds)
  for (const e of perRound) {
    const said = (s) => `${s} kept up to ${e[s].keptUpRate}/s${e[s].fellBehindAt ? ` (not at ${e[s].fellBehindAt})` : ''}, loss-free to ${e[s].lossFreeRate}/s${e[s].lostAt ? ` (lost at ${e[s].lostAt})` : ' (no loss at any rate)'}`
    console.log(`round ${e.round}: ${sides.map(said).join('; ')}${e.commonRate ? `; CPU at ${e.commonRate}/s: ${sides.map((s) => `${s} ${e[s].usPerPacketAtCommon} µs/packet`).join(', ')}` : ''}`)
  }
  const summary = {}
  const of = (side, field) => median(perRound.map((e) => e[side][field]))
  for (const side of sides) summary[side] = { keptUpRate: of(side, 'keptUpRate'), lossFreeRate: of(side, 'lossFreeRate'), usPerPacketAtCommon: of(side, 'usPerPacketAtCommon') }
  if (summary.collector && summary.sipcapture) {
    const ratio = (field) => round2(median(perRound.map((e) => e.collector[field] / e.sipcapture[field])))
    summary.keptUpRatio = ratio('keptUpRate')
    summary.lossFreeRatio = ratio('lossFreeRate')
    summary.cpuPerPacketRatio = ratio('usPerPacketAtCommon')
    summary.targetMet = summary.keptUpRatio >= 5 && summary.cpuPerPacketRatio <= 1
    console.log(`median over ${rounds} rounds: kept up to ${summary.collector.keptUpRate}/s (collector) vs ${summary.sipcapture.keptUpRate}/s (sipcapture), ratio ${summary.keptUpRatio} (target ≥ 5); loss-free ${summary.collector.lossFreeRate} vs ${summary.sipcapture.lossFreeRate}/s, ratio ${summary.lossFreeRatio}; CPU per packet at the rate both kept up with ${summary.collector.usPerPacketAtCommon} vs ${summary.sipcapture.usPerPacketAtCommon} µs, ratio ${summary.cpuPerPacketRatio} (target ≤ 1)`)
  }
  for (const side of sides) {
    summary[side].storage = ctx.storage[side]
    console.log(`storage per call, ${side}, each round's: ${ctx.storage[side].map((x) => `${x.bytesPerCall} B (data ${x.tableBytesPerCall} + indexes ${x.indexBytesPerCall}${x.estimated ? ', estimated' : ''})`).join('; ')}`)
  }
  return { perRound, summary }
}

async function main () {
  if (!KAMAILIO_MODULES) throw new Error('no Kamailio modules directory: install kamailio and kamailio-postgres-modules')
  const rates = String(args.rates).split(',').map(Number)
  const sides = String(args.sides).split(',')
  const counts = { '--rates': rates, '--seconds': [args.seconds], '--rounds': [args.rounds], '--workers': [args.workers], '--kamailio-children': [args['kamailio-children']] }
  for (const [flag, values] of Object.entries(counts)) if (!values.every((v) => Number.isInteger(Number(v)) && Number(v) > 0)) throw new Error(`${flag} takes positive whole numbers, not ${values.join(',')}`)
  for (const side of sides) if (!['collector', 'sipcapture'].includes(side)) throw new Error(`--sides: collector and/or sipcapture, not ${side}`)
  const ctx = { storage: Object.fromEntries(sides.map((side) => [side, []])) }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hvs-'))
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }))
  if (sides.includes('sipcapture')) ctx.pg = await startPostgres(dir)
  ctx.server = await startJavaServer({ port: 0 })
  cleanups.push(() => ctx.server.stop())
  ctx.client = await new MongoClient(ctx.server.uri).connect()
  cleanups.push(() => ctx.client.close())
  console.log(`load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; ${os.cpus().length} cores`)
  console.log(['round  ', 'side'.padEnd(10), '  rate', '   sent', ' stored', 'clean', 'lag ms', 'stored/s', '  µs/pkt', ' recv µs', '   db µs', 'kdrops'].join('  '))
  const runs = []
  for (let round = 0; round < args.rounds; round++) runs.push(...await runRound(round, sides, rates, ctx))
  const { perRound, summary } = report(runs, sides, args.rounds, ctx)
  const versions = { node: process.version, kamailio: (/kamailio ([\d.]+)/.exec(spawnSync('kamailio', ['-v'], { encoding: 'utf8' }).stdout) || [])[1] || null, postgres: ctx.pg ? ctx.pg.version : null }
  console.log(JSON.stringify({ benchmark: 'hep-vs-sipcapture', versions, args: { rates, seconds: args.seconds, rounds: args.rounds, workers: args.workers, kamailioChildren: args['kamailio-children'], synchronousCommit: args['synchronous-commit'], flags: args.flags }, loadAfter: os.loadavg(), runs, perRound, summary }))
}

if (process.argv[2] === '--sender') sender()
else {
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      stopping = true
      cleanUp().finally(() => process.exit(130))
    })
  }
  main().then(cleanUp, async (err) => {
    console.error(err.stack || err.message)
    await cleanUp()
    process.exit(1)
  })
}
