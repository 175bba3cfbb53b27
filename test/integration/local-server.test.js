'use strict'

// Without MONGODB_URI a collector looks at the local MongoDB port
// (127.0.0.1:27017; here an ephemeral one through `port`/`mongoPort`). It
// says in one line what answers there, uses it only when collector-cluster
// started it (the embedded database `collector db start` or another
// collector runs), and otherwise starts its own embedded server on another
// port rather than write into another program's server (issue 37, item 7).

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const { resolveMongo } = require('../../lib/mongo/resolve-mongo')
const { startEmbeddedServer } = require('../../lib/mongo/embedded-server')
const { recordServer, findStartedServer } = require('../../lib/mongo/started-servers')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { createWireProxy } = require('../helpers/wire-proxy')
const { captureLogger } = require('../helpers/capture-logger')
const { udpSocket, sendPaced } = require('../helpers/lb')
const { waitFor } = require('../helpers/wait-for')
const { freePort } = require('../helpers/ports')
const { runCli } = require('../helpers/cli')
const { pm2Home } = require('../helpers/pm2-home')
const { removeDir } = require('../helpers/temp-dir')

const NEEDS_JAVA = process.env.MONGODB_URI ? 'the test server must be the Java one (MONGODB_URI is set)' : false
// The embedded servers started here, a collector's too, are the Java
// server, whatever this machine has (a mongod, the network).
process.env.COLLECTOR_DB_SERVER = 'java'
// What a MongoDB 7.0 that another program runs says of itself.
const OTHER_MONGOD_BUILD = { version: '7.0.14', gitVersion: 'ce59cfc6a3c5e5c067dca0d30697edd68d4f5188', modules: [], versionArray: [7, 0, 14, 0], ok: 1 }
const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify', 'create', 'createIndexes', 'drop', 'dropDatabase', 'bulkWrite'])

/**
 * Another program's MongoDB: a real server (the test's Java server, which
 * no launcher of ours started) that says it is MongoDB 7.0.14. Records
 * every command it is sent.
 */
async function otherProgramsMongod (t) {
  const { uri } = await getTestMongo()
  const target = new URL(uri)
  const seen = []
  const proxy = await createWireProxy({
    targetHost: target.hostname,
    targetPort: Number(target.port),
    answer: (name) => {
      seen.push(name)
      return name === 'buildInfo' ? OTHER_MONGOD_BUILD : undefined
    }
  })
  t.after(() => proxy.close())
  return { ...proxy, seen, uri }
}

function lines (records) {
  return records.map((r) => `${r.level} ${r.msg}`)
}

test('the embedded server collector-cluster started, answering on the port, is used and named in one line', { skip: NEEDS_JAVA, timeout: 120000 }, async (t) => {
  const ours = await startEmbeddedServer({ port: 0 })
  t.after(() => ours.stop())
  const { logger, records } = captureLogger()
  assert.deepEqual(await resolveMongo({ env: {}, port: ours.port, logger }), { uri: ours.uri, server: null })
  const said = lines(records)
  assert.equal(said.length, 1, said.join('\n'))
  assert.match(said[0], new RegExp(`^info using the embedded database collector-cluster started at mongodb://127\\.0\\.0\\.1:${ours.port} \\(java, pid ${ours.pid}, in memory\\): MongoDB-compatible server reporting MongoDB 6\\.0\\.0, standalone; skipped: MONGODB_URI \\(not set\\)$`))
})

test('collector db start\'s server, run by PM2, is ours to a collector that finds it on the port', { skip: NEEDS_JAVA, timeout: 180000 }, async (t) => {
  const home = pm2Home(t)
  const env = { ...process.env, PM2_HOME: home }
  delete env.MONGODB_URI
  const port = await freePort()
  const started = await runCli(env, 'db', 'start', '--port', String(port), '--db-memory')
  assert.equal(started.code, 0, started.stderr) // stopped with the PM2 daemon pm2Home's hook ends
  const syslog = require('../../collectors/syslog')
  const { logger, records } = captureLogger()
  const config = new syslog.Config(['--port', '0', '-i', '1', '--database', uniqueDbName('shared'), '--flush-interval', '50ms']).getConfig()
  const collector = new syslog.Collector({ ...config, mongoPort: port, logger })
  t.after(() => collector.stop())
  await collector.start()
  assert.equal(collector.dbServer, null, 'no server of its own')
  assert.equal(collector.options.workerOptions.mongoUri, `mongodb://127.0.0.1:${port}`)
  assert.match(lines(records).join('\n'), new RegExp(`^info using the embedded database collector-cluster started at mongodb://127\\.0\\.0\\.1:${port} \\(java, pid \\d+, in memory\\)`, 'm'))
})

test('another program\'s MongoDB on the port is named and refused: the embedded server starts on another port, nothing is written there', { skip: NEEDS_JAVA, timeout: 120000 }, async (t) => {
  const other = await otherProgramsMongod(t)
  const syslog = require('../../collectors/syslog')
  const database = uniqueDbName('notours')
  const { logger, records } = captureLogger()
  const config = new syslog.Config(['--port', '0', '-i', '1', '--database', database, '--flush-interval', '50ms', '--db-memory']).getConfig()
  const collector = new syslog.Collector({ ...config, mongoPort: other.port, logger })
  t.after(() => collector.stop())
  await collector.start()
  const said = lines(records)
  const refusal = said.filter((line) => line.includes(`127.0.0.1:${other.port}`))
  assert.equal(refusal.length, 1, said.join('\n'))
  assert.match(refusal[0], new RegExp(`^warn started the embedded database: .+ at mongodb://127\\.0\\.0\\.1:(?!${other.port}\\b)\\d+, in memory: its data is gone when it stops; skipped: MONGODB_URI \\(not set\\), 127\\.0\\.0\\.1:${other.port} \\(answers as MongoDB 7\\.0\\.14, standalone, a server collector-cluster did not start: nothing is written to it unless MONGODB_URI or --mongo-uri names it\\)`))
  assert.ok(collector.dbServer && collector.dbServer.port !== other.port, 'an embedded server of its own')

  const messages = Array.from({ length: 10 }, (_, i) => Buffer.from(`<13>Nov 27 03:00:00 host app: line ${i}`))
  await sendPaced(collector, await udpSocket(t), messages)
  await waitFor(() => collector.summary().processed === messages.length, { timeout: 30000, what: 'every line stored' })
  const embedded = await new MongoClient(collector.dbServer.uri).connect()
  t.after(() => embedded.close())
  assert.equal(await embedded.db(database).collection('syslog').countDocuments(), messages.length, 'stored in the embedded server')

  assert.deepEqual(other.seen.filter((name) => WRITES.has(name)), [], 'no write reached the other server')
  const direct = await new MongoClient(other.uri).connect()
  t.after(() => direct.close())
  const { databases } = await direct.db('admin').command({ listDatabases: 1, nameOnly: true })
  assert.ok(!databases.some((d) => d.name === database), 'the other server has no database of ours')
})

test('MONGODB_URI naming that server is the operator\'s choice: used, no probe', { skip: NEEDS_JAVA }, async (t) => {
  const other = await otherProgramsMongod(t)
  const { logger, records } = captureLogger()
  assert.deepEqual(await resolveMongo({ env: { MONGODB_URI: other.uri }, logger }), { uri: other.uri, server: null })
  assert.deepEqual(other.seen, [])
  assert.match(lines(records).join('\n'), /using MongoDB from MONGODB_URI/)
})

test('a port taken by something that does not answer as MongoDB: said in the one line, the embedded server on another port', { timeout: 120000 }, async (t) => {
  const squatter = net.createServer((socket) => socket.destroy())
  await new Promise((resolve) => squatter.listen(0, '127.0.0.1', resolve))
  t.after(() => squatter.close())
  const { port } = squatter.address()
  const { logger, records } = captureLogger()
  const resolved = await resolveMongo({ env: { PATH: process.env.PATH, COLLECTOR_DB_SERVER: 'java' }, port, logger, probeTimeoutMs: 500 })
  t.after(() => resolved.server.stop())
  assert.notEqual(resolved.server.port, port)
  assert.match(lines(records).join('\n'), new RegExp(`^warn started the embedded database: the Java server \\(mongo-java-server\\) at ${resolved.uri}, in memory: its data is gone when it stops; skipped: MONGODB_URI \\(not set\\), 127\\.0\\.0\\.1:${port} \\(taken by something that does not answer as MongoDB\\), a mongod, found or fetched \\(COLLECTOR_DB_SERVER=java\\)$`, 'm'))
})

test('a server is ours only while its record names the pid it reports and the port it answers on', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'started-servers-'))
  t.after(() => removeDir(dir))
  const forget = recordServer({ pid: process.pid, host: '127.0.0.1', port: 40001, kind: 'java', dbPath: null }, { dir })
  assert.equal(findStartedServer({ pid: process.pid, port: 40001 }, { dir }).kind, 'java')
  assert.equal(findStartedServer({ pid: process.pid, port: 40002 }, { dir }), null, 'another port')
  assert.equal(findStartedServer({ pid: process.pid + 1, port: 40001 }, { dir }), null, 'another pid')
  assert.equal(findStartedServer({ pid: undefined, port: 40001 }, { dir }), null, 'a server that does not say its pid')
  forget()
  assert.equal(findStartedServer({ pid: process.pid, port: 40001 }, { dir }), null, 'forgotten when it stops')

  // A record left by a server killed outright (its pid gone) is removed
  // when the next server is recorded.
  const gone = 2 ** 22 + 1 // above pid_max's default: no such process
  fs.writeFileSync(path.join(dir, `${gone}.json`), JSON.stringify({ pid: gone, host: '127.0.0.1', port: 40003, kind: 'java', dbPath: null }))
  recordServer({ pid: process.pid, host: '127.0.0.1', port: 40001, kind: 'java', dbPath: null }, { dir })()
  assert.deepEqual(fs.readdirSync(dir), [])
})

// Two collectors started at the same moment on a free port with one data
// folder (an operator's `collector run syslog & collector run statsd &`):
// the second's server failed on the port or the folder's lock, then its
// ephemeral one on the lock, and the collector died (QA).
test('two collectors resolving at the same moment: one starts the embedded server, the other uses it', { skip: NEEDS_JAVA, timeout: 180000 }, async (t) => {
  const port = await freePort()
  const dbPath = fs.mkdtempSync(path.join(os.tmpdir(), 'race-db-'))
  t.after(() => removeDir(dbPath))
  const logs = [captureLogger(), captureLogger()]
  const env = { ...process.env }
  delete env.MONGODB_URI
  const results = await Promise.all(logs.map(({ logger }) => resolveMongo({ env, port, logger, dbPath })))
  for (const { server } of results) if (server) t.after(() => server.stop())
  const said = logs.map(({ records }) => lines(records).join('\n'))
  assert.deepEqual(results.map((r) => r.uri), [`mongodb://127.0.0.1:${port}`, `mongodb://127.0.0.1:${port}`], said.join('\n---\n'))
  assert.equal(results.filter((r) => r.server).length, 1, 'one server started')
  const joined = said[results.findIndex((r) => !r.server)]
  assert.match(joined, /using the embedded database collector-cluster started at mongodb:\/\/127\.0\.0\.1:\d+ (meanwhile )?\(java, pid \d+/, joined)
  const client = await new MongoClient(results[0].uri).connect()
  t.after(() => client.close())
  assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1)
})
