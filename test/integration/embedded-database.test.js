'use strict'

// The embedded database keeps what it was given: mongo-java-server with its
// H2 backend in --db-path (default ~/.collector-cluster/db), the memory
// backend only with --db-memory; a real mongod (a stand-in here,
// test/fixtures/fake-mongod.js) in --db-path/mongod, the same commands
// running it. Checked as an operator meets it: the server itself,
// `collector db run` in the foreground, `collector db start|status|stop`
// under a real PM2 daemon (temporary PM2_HOME), each stopped and started
// again before the data is read.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { MongoClient } = require('mongodb')
const { startJavaServer } = require('../../lib/mongo/java-server')
const { startEmbeddedServer } = require('../../lib/mongo/embedded-server')
const { freePort } = require('../helpers/ports')
const { runCli: cli } = require('../helpers/cli')
const { pm2Home } = require('../helpers/pm2-home')
const { installFakeMongod } = require('../helpers/fake-mongod')
const { removeDir } = require('../helpers/temp-dir')
const { waitFor } = require('../helpers/wait-for')

const CLI = path.join(__dirname, '..', '..', 'bin', 'collector.js')
// The Java server, whatever this machine has (a mongod, the network).
const JAVA = { ...process.env, COLLECTOR_DB_SERVER: 'java' }

function tempDir (t, prefix = 'collector-db-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  t.after(() => removeDir(dir))
  return dir
}

async function withClient (uri, fn) {
  const client = await new MongoClient(uri, { serverSelectionTimeoutMS: 10000 }).connect()
  try {
    return await fn(client.db('persist'))
  } finally {
    await client.close()
  }
}

const writeDocs = (uri, n) => withClient(uri, (db) => db.collection('items').insertMany(Array.from({ length: n }, (_, i) => ({ i }))))
const countDocs = (uri) => withClient(uri, (db) => db.collection('items').countDocuments())

/** Runs the CLI to completion: `{ code, stdout, stderr }`. */

/** `collector db run ...` in the foreground; resolves with its URI once it printed it. */
async function dbRun (t, args, env = JAVA) {
  const child = spawn(process.execPath, [CLI, 'db', 'run', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => child.kill('SIGKILL'))
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const exited = new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
  const uri = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d
      const match = stdout.match(/^(mongodb:\/\/\S+)\n/)
      if (match) resolve(match[1])
    })
    exited.then((r) => reject(new Error(`collector db run exited (${r.code}) before it printed its URI: ${r.stderr}`)))
  })
  return { child, uri, exited, stderr: () => stderr }
}

test('on disk: what the Java server stored is there after it stopped and started again on the same --db-path', { timeout: 120000 }, async (t) => {
  const dbPath = tempDir(t)
  const first = await startJavaServer({ port: 0, dbPath })
  t.after(() => first.stop())
  assert.equal(first.dbPath, dbPath)
  await writeDocs(first.uri, 500)
  await first.stop()
  assert.ok(fs.statSync(path.join(dbPath, 'collector.mv.db')).size > 0, 'the data file is in --db-path')

  const second = await startJavaServer({ port: 0, dbPath })
  t.after(() => second.stop())
  assert.equal(await countDocs(second.uri), 500)
})

// A writer inserting acknowledged batches while the server is stopped: every
// batch it was told is stored is there after a restart. The stop ran in the
// signal's daemon thread and raced the JVM's exit once netty's threads had
// ended: 1 stop in 4 to 15 lost the writes since the last commit (a QA
// probe; hundreds of documents). A round needs writes in flight at the stop.
test('on disk: a stop while a client writes keeps every write it acknowledged, round after round', { timeout: 180000 }, async (t) => {
  const dbPath = tempDir(t)
  const rounds = 12
  let acknowledged = 0
  for (let round = 0; round < rounds; round++) {
    const server = await startJavaServer({ port: 0, dbPath })
    t.after(() => server.stop())
    const client = await new MongoClient(server.uri, { serverSelectionTimeoutMS: 2000, retryWrites: false }).connect()
    const items = client.db('persist').collection('acked')
    let writing = true
    const writer = (async () => {
      for (let batch = 0; writing; batch++) {
        try {
          await items.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: `${round}-${batch}-${i}`, pad: 'x'.repeat(200) })))
        } catch {
          return // the server went away: what it acknowledged before counts
        }
        acknowledged += 30
      }
    })()
    await new Promise((resolve) => setTimeout(resolve, 400 + 100 * round))
    await server.stop()
    writing = false
    await writer
    await client.close().catch(() => {})
  }
  const last = await startJavaServer({ port: 0, dbPath })
  t.after(() => last.stop())
  const stored = await withClient(last.uri, (db) => db.collection('acked').countDocuments())
  assert.ok(acknowledged > rounds * 300, `writes were in flight at each stop (${acknowledged})`)
  assert.equal(stored, acknowledged, 'every acknowledged write survives its server\'s stop')
})

test('on disk: a second server on a --db-path in use, or one that cannot be created, fails at once saying why', { timeout: 120000 }, async (t) => {
  const dbPath = tempDir(t)
  const owner = await startJavaServer({ port: 0, dbPath })
  t.after(() => owner.stop())
  await assert.rejects(startJavaServer({ port: 0, dbPath, startTimeoutMs: 30000 }), /exited before it was ready.*The file is locked/)

  const file = path.join(dbPath, 'a-file')
  fs.writeFileSync(file, 'x')
  await assert.rejects(startJavaServer({ port: 0, dbPath: path.join(file, 'db') }), {
    message: `cannot create the database directory ${path.join(file, 'db')}: ${file} exists and is not a directory`
  })
})

test('collector db run: on disk by default (kept across a restart), --db-memory keeps nothing; SIGINT exits 0', { timeout: 120000 }, async (t) => {
  const dbPath = tempDir(t)
  const port = await freePort()
  const first = await dbRun(t, ['--port', String(port), '--db-path', dbPath])
  assert.equal(first.uri, `mongodb://127.0.0.1:${port}`)
  await writeDocs(first.uri, 100)
  first.child.kill('SIGINT')
  const done = await first.exited
  assert.equal(done.code, 0, done.stderr)
  assert.match(done.stderr, new RegExp(`data in ${dbPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 'the log says where the data lives')

  const second = await dbRun(t, ['--port', String(port), '--db-path', dbPath])
  assert.equal(await countDocs(second.uri), 100, 'kept across the restart')
  second.child.kill('SIGTERM')
  assert.equal((await second.exited).code, 0)

  const memory = await dbRun(t, ['--port', '0', '--db-memory'])
  await writeDocs(memory.uri, 10)
  memory.child.kill('SIGINT')
  const gone = await memory.exited
  assert.match(gone.stderr, /in memory: its data is gone when it stops/)
  const again = await dbRun(t, ['--port', '0', '--db-memory'])
  assert.equal(await countDocs(again.uri), 0)
  again.child.kill('SIGINT')
  await again.exited
})

test('collector db start|status|stop under PM2: one shared server, a second start refused, data kept across stop and start', { timeout: 180000 }, async (t) => {
  const home = pm2Home(t)
  const dir = path.dirname(home)
  const env = { ...JAVA, PM2_HOME: home, COLLECTOR_STATS_DIR: path.join(dir, 'stats') }
  const dbPath = path.join(dir, 'data')
  const port = String(await freePort())
  const uri = `mongodb://127.0.0.1:${port}`

  const started = await cli(env, 'db', 'start', '--port', port, '--db-path', dbPath)
  assert.equal(started.code, 0, started.stderr)
  assert.match(started.stdout, new RegExp(`^started the database under PM2 \\(pid \\d+\\): the Java server \\(mongo-java-server\\), on disk in ${dbPath}; skipped: a mongod, found or fetched \\(COLLECTOR_DB_SERVER=java\\); see`))
  await writeDocs(uri, 42)

  const twice = await cli(env, 'db', 'start', '--port', port, '--db-path', dbPath)
  assert.equal(twice.code, 1)
  assert.match(twice.stderr, /^collector: the database is already running under PM2 \(pid \d+\)/)

  const status = await cli(env, 'db', 'status')
  assert.equal(status.code, 0, status.stdout + status.stderr)
  assert.match(status.stdout, new RegExp(`collector-db {2}online {2}pid \\d+ {2}${uri} {2}answers ping\nserver {2}the Java server \\(mongo-java-server\\), pid \\d+\ndata {2}on disk in ${dbPath}\n`))

  // The port is start's: status and stop act on the database started, and say so (QA: the docs showed `status [--port]`).
  const withPort = await cli(env, 'db', 'status', '--port', port)
  assert.equal(withPort.code, 2, withPort.stdout + withPort.stderr)
  assert.match(withPort.stderr, new RegExp(`^collector: unexpected argument\\(s\\): --port ${port}; collector db status takes no options: it acts on the one database \`collector db start\` runs under PM2, at the port and path it was started with\nusage: collector db status\n`))
  assert.match((await cli(env, 'db', '--help')).stdout, /^usage: collector db run\|start \[--port 27017\] .*\| collector db stop\|status\n/)
  const stopped = await cli(env, 'db', 'stop')
  assert.equal(stopped.code, 0, stopped.stderr)
  const after = await cli(env, 'db', 'status')
  assert.equal(after.code, 1)
  assert.match(after.stdout, new RegExp(`^collector-db {2}stopped {2}pid - {2}${uri} {2}does not answer\ndata {2}on disk in ${dbPath}\n.*\n\\(\`collector db start\` starts it again with the flags it had\\)\n$`))
  const ls = await cli(env, 'ls', '--json')
  assert.deepEqual(JSON.parse(ls.stdout), [], 'the database app is never listed as a collector')
  const twiceStopped = await cli(env, 'db', 'stop')
  assert.deepEqual([twiceStopped.code, twiceStopped.stderr], [1, 'collector: the database under PM2 is already stopped (`collector db start` starts it again with the flags it had)\n'])

  // Started again with no flags, it is where it was (QA: a plain `db start` after `db stop` began an empty database in the default path).
  const restarted = await cli(env, 'db', 'start')
  assert.equal(restarted.code, 0, restarted.stderr)
  assert.match(restarted.stdout, new RegExp(`^started the database under PM2 again with its flags \\(--port ${port} --db-path ${dbPath}\\) \\(pid \\d+\\): the Java server \\(mongo-java-server\\), on disk in ${dbPath};`))
  assert.equal(await countDocs(uri), 42, 'kept across db stop and db start')
  const kept = await cli(env, 'db', 'stop')
  assert.equal(kept.code, 0)
  assert.equal(kept.stdout, 'stopped the database (its data is kept)\n')
  // In memory, stop said its data was kept.
  assert.equal((await cli(env, 'db', 'start', '--port', port, '--db-memory')).code, 0)
  assert.equal((await cli(env, 'db', 'stop')).stdout, 'stopped the database (it was in memory: its data is gone)\n')
})

test('collector db start on a port in use: exit 1 at once with the reason, no PM2 app left', { timeout: 120000 }, async (t) => {
  const home = pm2Home(t)
  const dir = path.dirname(home)
  const env = { ...JAVA, PM2_HOME: home }
  const busy = net.createServer()
  await new Promise((resolve) => busy.listen(0, '127.0.0.1', resolve))
  t.after(() => busy.close())
  const port = busy.address().port
  const begun = Date.now()
  const result = await cli(env, 'db', 'start', '--port', String(port), '--db-path', path.join(dir, 'data'))
  assert.equal(result.code, 1, result.stdout)
  assert.match(result.stderr, new RegExp(`^collector: .*cannot listen on 127\\.0\\.0\\.1:${port}: Address already in use\\n$`))
  assert.ok(Date.now() - begun < 30000, 'well before PM2\'s listen timeout')
  const status = await cli(env, 'db', 'status')
  assert.equal(status.code, 1)
  assert.match(status.stdout, /not running under PM2/)
})

// PM2 restarts a database that died; a restart that fails on a cause that
// passes (here its port, held as it restarts) is tried again, not left
// down for good with every collector holding its data (app/exit-codes.js).
/**
 * A database under PM2 whose server was SIGKILLed, its port then held so
 * that PM2's restarts fail, until `failures` of them did:
 * `{ env, port, failed(), release() }`, failed() counting them so far.
 */
async function restartingOnHeldPort (t, failures) {
  const home = pm2Home(t)
  const env = { ...JAVA, PM2_HOME: home }
  const port = await freePort()
  const started = await cli(env, 'db', 'start', '--port', String(port), '--db-memory')
  assert.equal(started.code, 0, started.stderr)
  const javaPid = Number(/the Java server \(mongo-java-server\), pid (\d+)/.exec((await cli(env, 'db', 'status')).stdout)[1])
  process.kill(javaPid, 'SIGKILL')
  let holder = null
  await waitFor(() => new Promise((resolve) => {
    const server = net.createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => { holder = server; resolve(true) })
  }), { what: 'the port to be free', interval: 5 })
  t.after(() => holder && holder.close())
  const log = path.join(home, 'logs', 'collector-db-error.log')
  const failed = () => fs.existsSync(log) ? (fs.readFileSync(log, 'utf8').match(/Address already in use/g) || []).length : 0
  await waitFor(() => failed() >= failures, { timeout: 60000, what: `${failures} restarts that failed on the held port` })
  const release = () => new Promise((resolve) => holder.close(resolve)).then(() => { holder = null })
  return { env, port, failed, release }
}

test('collector db start: the server killed, its port held while PM2 restarts it; it comes back once the port is free', { timeout: 180000 }, async (t) => {
  const { env, port, release } = await restartingOnHeldPort(t, 2)
  await release()
  const status = await waitFor(async () => {
    const r = await cli(env, 'db', 'status')
    return /online {2}pid \d+ {2}\S+ {2}answers ping/.test(r.stdout) && r
  }, { timeout: 60000, what: 'the database online again' })
  assert.equal(status.code, 0)
  await writeDocs(`mongodb://127.0.0.1:${port}`, 3)
  assert.equal(await countDocs(`mongodb://127.0.0.1:${port}`), 3, 'it takes writes again')
})

test('collector db stop stops a database PM2 keeps restarting (its port held): it said "already stopped" and left it trying (QA)', { timeout: 180000 }, async (t) => {
  const { env, failed } = await restartingOnHeldPort(t, 1)
  const stopped = await cli(env, 'db', 'stop')
  assert.deepEqual([stopped.code, stopped.stdout], [0, 'stopped the database (it was in memory: its data is gone)\n'], stopped.stderr)
  const failures = failed()
  await new Promise((resolve) => setTimeout(resolve, 3000))
  assert.equal(failed(), failures, 'PM2 tries it no more')
  assert.match((await cli(env, 'db', 'status')).stdout, /^collector-db {2}stopped /)
})

test('the embedded database keeps its data private: a --db-path it creates is 0700, and bound beyond loopback it warns that it has no authentication', { timeout: 120000 }, async (t) => {
  const dbPath = path.join(tempDir(t), 'created', 'db')
  const lines = []
  const logger = { level: 'info', trace () {}, debug () {}, info () {}, warn: (fields, msg) => lines.push(msg), error () {}, fatal () {}, child () { return this } }
  const local = await startEmbeddedServer({ port: 0, dbPath, logger, env: JAVA })
  t.after(() => local.stop())
  assert.equal(fs.statSync(dbPath).mode & 0o777, 0o700)
  assert.equal(fs.statSync(path.dirname(dbPath)).mode & 0o777, 0o700)
  await local.stop()
  assert.deepEqual(lines, [], 'on 127.0.0.1: no warning')
  const exposed = await startEmbeddedServer({ host: '0.0.0.0', port: 0, logger, env: JAVA })
  t.after(() => exposed.stop())
  assert.equal(lines.length, 1)
  assert.match(lines[0], /^the embedded database listens on 0\.0\.0\.0, without authentication or TLS: anyone who reaches port \d+ can read and change/)
})

test('with a mongod, the same commands: collector db run and db start|status|stop run it, its data in --db-path/mongod, kept across a restart', { timeout: 180000 }, async (t) => {
  const home = pm2Home(t)
  const dir = path.dirname(home)
  const bin = path.join(dir, 'bin')
  const mongod = installFakeMongod(bin)
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}`, PM2_HOME: home, COLLECTOR_STATS_DIR: path.join(dir, 'stats') }
  delete env.COLLECTOR_DB_SERVER
  const dbPath = path.join(dir, 'data')
  const port = String(await freePort())
  const uri = `mongodb://127.0.0.1:${port}`

  const foreground = await dbRun(t, ['--port', port, '--db-path', dbPath], env)
  assert.equal(foreground.uri, uri)
  await writeDocs(uri, 7)
  foreground.child.kill('SIGINT')
  const ran = await foreground.exited
  assert.equal(ran.code, 0, ran.stderr)
  assert.match(ran.stderr, new RegExp(`^started the embedded database: mongod 8\\.2\\.6 at ${uri}, data in ${dbPath}/mongod \\(on PATH: ${mongod}\\)$`, 'm'))
  assert.match(ran.stderr, /^SIGINT: stopping the mongod server$/m)

  const started = await cli(env, 'db', 'start', '--port', port, '--db-path', dbPath)
  assert.equal(started.code, 0, started.stderr)
  assert.equal(started.stdout, `started the database under PM2 (pid ${started.stdout.match(/pid (\d+)/)[1]}): mongod 8.2.6, on disk in ${dbPath}/mongod (on PATH: ${mongod}); see \`collector db status\`\n`)
  assert.equal(await countDocs(uri), 7, 'what db run stored, read by the server db start runs')
  const status = await cli(env, 'db', 'status')
  assert.equal(status.code, 0, status.stdout + status.stderr)
  assert.match(status.stdout, new RegExp(`^collector-db {2}online {2}pid \\d+ {2}${uri} {2}answers ping\nserver {2}mongod 8\\.2\\.6, pid \\d+\ndata {2}on disk in ${dbPath}/mongod\n`))
  assert.equal((await cli(env, 'db', 'stop')).code, 0)
  assert.equal((await cli(env, 'db', 'status')).code, 1)
  assert.deepEqual(fs.readdirSync(dbPath), ['mongod'], 'nothing of the Java server\'s beside it')
})
